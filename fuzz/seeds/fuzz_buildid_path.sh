#!/bin/sh
# Seeds for fuzz_buildid_path: the debuginfod API's paths, good and bad. $1 is the build
# directory.
out="$1/fuzz/seeds-buildid-path"
mkdir -p "$out" || exit 0
id=5d0a1f2e3c4b5a69788796a5b4c3d2e1f0011223
printf '/buildid/%s/debuginfo' "$id" > "$out/debuginfo" && echo "$out/debuginfo"
printf '/buildid/%s/executable' "$id" > "$out/executable" && echo "$out/executable"
printf '/buildid/%s/section/.debug_info' "$id" > "$out/section" && echo "$out/section"
printf '/buildid/%s/source/usr/include/stdio.h' "$id" > "$out/source" && echo "$out/source"
printf '/buildid/ABC/section/a/b' > "$out/bad" && echo "$out/bad"
exit 0
