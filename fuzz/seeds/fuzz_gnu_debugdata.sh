#!/bin/sh
# Seeds for fuzz_gnu_debugdata: the .gnu_debugdata (xz) of a MiniDebugInfo copy of a test
# fixture (tests/symbolize, built in build directory $1), made as Fedora makes it, and a small
# xz stream of text. One raw section per file — the target's input.
out="$1/fuzz/seeds-gnu-debugdata"
mkdir -p "$out" || exit 0
command -v xz >/dev/null 2>&1 || exit 0
here=$(dirname "$0")
f="$1/fixtures/distro_prog"
if [ -f "$f" ]; then
  t=$(mktemp -d)
  if sh "$here/../../tests/symbolize/make_minidebuginfo.sh" "$f" "$t/mini" >/dev/null 2>&1 &&
    objcopy --dump-section .gnu_debugdata="$out/distro_prog.xz" "$t/mini" /dev/null 2>/dev/null; then
    echo "$out/distro_prog.xz"
  fi
  rm -rf "$t"
fi
printf 'MiniDebugInfo seed\n' | xz >"$out/text.xz" && echo "$out/text.xz"
exit 0
