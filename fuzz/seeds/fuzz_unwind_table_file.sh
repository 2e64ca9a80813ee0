#!/bin/sh
# Seeds for fuzz_unwind_table_file: persisted unwind tables of the unwind test fixtures
# (tests/unwind, built in build directory $1), written by that build's `stacksym cache build`.
out="$1/fuzz/seeds-unwind-table-file"
stacksym="$1/stacksym"
[ -x "$stacksym" ] || exit 0
rm -rf "$out" && mkdir -p "$out" || exit 0
for name in unwind_gcc_o2 unwind_clang_o0 unwind_gxx_o2 unwind_gcc_debug_frame; do
  f="$1/fixtures/$name"
  [ -f "$f" ] || continue
  "$stacksym" cache build --threads 1 --no-default-debug-dir --cache-dir "$out" "$f" \
    >/dev/null 2>&1 || true
done
for f in "$out"/*.unwtab; do
  [ -f "$f" ] && echo "$f"
done
exit 0
