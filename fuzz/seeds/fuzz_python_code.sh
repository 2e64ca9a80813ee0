#!/bin/sh
# Seeds for fuzz_python_code: code objects of a python3.11 process as they lie in its memory
# (tests/interp/scripts/code_dump.py reads them with ctypes), in the target's input format.
# $1 is the build directory; seeds are written to $1/fuzz/seeds-python-code/.
out="$1/fuzz/seeds-python-code"
python=/usr/bin/python3.11
[ -x "$python" ] || exit 0
rm -rf "$out" && mkdir -p "$out" || exit 0
"$python" "$(dirname "$0")/../../tests/interp/scripts/code_dump.py" seeds "$out" 2>/dev/null || true
exit 0
