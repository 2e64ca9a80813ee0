#!/bin/sh
# Seeds for fuzz_serve_request: requests (valid, with options, with errors) and, prefixed
# with 'R', responses with frames, reasons and escapes. $1 is the build directory.
out="$1/fuzz/seeds-serve-request"
mkdir -p "$out" || exit 0
printf '{"modules":[{"build_id":"5d0a1f2e3c4b5a69788796a5b4c3d2e1f0011223","offsets":[4096,4660,0]}]}' > "$out/request" && echo "$out/request"
printf '{"modules":[{"build_id":"abcd","offsets":[1]},{"build_id":"ABCDEF","offsets":[]}],"demangle":false,"inlines":true}' > "$out/options" && echo "$out/options"
printf '{"modules":[{"build_id":"abc","offsets":[1e3, -1, 18446744073709551616]}],"x":null}' > "$out/bad" && echo "$out/bad"
printf 'R{"modules":[{"build_id":"abcd","message":"no binary","answers":[{"offset":16,"reason":"not_found"},{"offset":32,"frames":[{"function":"f\\u00e9","raw_function":"_Z1fv","file":"a.c","line":3,"column":7,"inlined":true},{"function":"g","file":"","line":0,"column":0,"inlined":false}]}]}]}' > "$out/response" && echo "$out/response"
exit 0
