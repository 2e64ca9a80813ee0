#!/bin/sh
# Seeds for fuzz_pprof_reader: pprof files (gzip'ed and plain) made by the fuzz build's own
# stacksym binary from folded seeds. $1 is the build directory.
out="$1/fuzz/seeds-pprof"
mkdir -p "$out" || exit 0
printf 'app;main;work;inline_helper_[i];ns::hot_leaf(int) 80\nother;0x7f0000001234 5\nworker;main;libfoo.so+0x2000;entry_SYSCALL_64_[k];do_syscall_64_[k] 15\n' > "$out/sample.folded"
if [ -x "$1/stacksym" ] && "$1/stacksym" convert "$out/sample.folded" --to pprof -o "$out/sample.pb.gz" 2>/dev/null; then
  echo "$out/sample.pb.gz"
  gunzip -c "$out/sample.pb.gz" > "$out/sample.pb" 2>/dev/null && echo "$out/sample.pb"
fi
exit 0
