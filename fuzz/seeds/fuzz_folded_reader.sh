#!/bin/sh
# Seeds for fuzz_folded_reader: folded stacks with inline and kernel markers, spaces in C++
# names, CRLF line ends, repeated stacks. $1 is the build directory.
out="$1/fuzz/seeds-folded"
mkdir -p "$out" || exit 0
printf 'app;main;work;inline_helper_[i];ns::hot_leaf(int) 80\nother;0x7f0000001234 5\nworker;main;libfoo.so+0x2000;entry_SYSCALL_64_[k];do_syscall_64_[k] 15\n' > "$out/sample" && echo "$out/sample"
printf 'a;foo(int, char) const;bar 7\r\na;foo(int, char) const;bar 3\r\n\nb 1\n' > "$out/spaces" && echo "$out/spaces"
printf 'k;x_[k];y_[i];z_[k]_[i] 2\n;_[i] 1\n' > "$out/markers" && echo "$out/markers"
exit 0
