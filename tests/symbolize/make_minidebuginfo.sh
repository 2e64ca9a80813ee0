#!/bin/sh
# make_minidebuginfo.sh IN OUT — a stripped copy of IN with MiniDebugInfo, made as Fedora's
# find-debuginfo makes it (gdb's manual, "MiniDebugInfo"): the function symbols that .dynsym
# lacks, in an ELF image holding just a .symtab, xz-compressed into .gnu_debugdata.
set -e
in=$1
out=$2
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
nm -D "$in" --format=posix --defined-only | awk '{ print $1 }' | sort >"$t/dynsyms"
nm "$in" --format=posix --defined-only |
  awk '{ if ($2 == "T" || $2 == "t" || $2 == "D") print $1 }' | sort >"$t/funcsyms"
comm -13 "$t/dynsyms" "$t/funcsyms" >"$t/keep_symbols"
objcopy --only-keep-debug "$in" "$t/debug"
objcopy -S --remove-section .gdb_index --remove-section .comment \
  --keep-symbols="$t/keep_symbols" "$t/debug" "$t/mini_debuginfo"
xz "$t/mini_debuginfo"
strip --strip-all -R .comment -o "$out" "$in"
objcopy --add-section .gnu_debugdata="$t/mini_debuginfo.xz" "$out"
