#!/usr/bin/env bash
# LLVM 16's own llvm-symbolizer tests against the real llvm-symbolizer-16 and against stacksym's
# drop-in (issue 41). Not part of `make test` or CI: it downloads Debian's llvm-toolchain-16
# source package (136 MB, cached) and installs llvm-16 and llvm-16-tools.
#
#   tests/conformance/run.sh STACKSYM_BINARY [OUT_DIR]      (make conformance)
#
# The tests are llvm/test/tools/llvm-symbolizer/ and the llvm/test/DebugInfo/ tests whose RUN
# lines call llvm-symbolizer, run with lit from the same source and Debian's LLVM 16 tools
# (FileCheck, yaml2obj, llvm-mc, ...). Twice: the tools directory is a directory of symlinks to
# /usr/lib/llvm-16/bin, where llvm-symbolizer is the real one the first time and stacksym the
# second. Results: OUT_DIR/summary.txt (also printed) and OUT_DIR/stacksym-only-failures.log.
set -euo pipefail

die() { echo "conformance: $*" >&2; exit 1; }
[[ $# -ge 1 ]] || die "usage: $0 STACKSYM_BINARY [OUT_DIR]"
STACKSYM=$(realpath "$1")
[[ -x $STACKSYM ]] || die "$1 is not an executable (cmake --build build --target stacksym_programs)"
OUT=$(realpath -m "${2:-build/conformance}")
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${STACKSYM_CONFORMANCE_CACHE:-$HOME/.cache/stacksym-conformance}
LLVM_BIN=/usr/lib/llvm-16/bin
JOBS=${JOBS:-2}

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || die "not root and no sudo: cannot run apt-get"
  SUDO=(sudo)
fi

# 1. Debian's LLVM 16 (llvm-symbolizer, llvm-mc, yaml2obj, ...) and its test tools (FileCheck,
#    not, count, split-file), python3 for lit.
need=()
for pkg in llvm-16 llvm-16-tools python3; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need+=("$pkg")
done
if [[ ${#need[@]} -gt 0 ]]; then
  echo "conformance: installing ${need[*]}"
  "${SUDO[@]}" apt-get install -y -q "${need[@]}"
fi
for tool in llvm-symbolizer FileCheck not count split-file yaml2obj llvm-mc; do
  [[ -x $LLVM_BIN/$tool ]] || die "$LLVM_BIN/$tool is missing after installing llvm-16 and llvm-16-tools"
done

# 2. The source package, downloaded once into $CACHE.
mkdir -p "$CACHE"
orig=$(ls "$CACHE"/llvm-toolchain-16_*.orig.tar.xz 2>/dev/null | head -n 1 || true)
if [[ -z $orig ]]; then
  if ! grep -rqsE '^(Types:.*deb-src|deb-src .*bookworm)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    src_list=/etc/apt/sources.list.d/stacksym-deb-src.sources
    echo "conformance: adding bookworm deb-src entries ($src_list)"
    "${SUDO[@]}" tee "$src_list" >/dev/null <<'SOURCES'
# Added by stacksym tests/conformance/run.sh: source packages (apt-get source) for bookworm.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
    "${SUDO[@]}" apt-get update -q
  fi
  echo "conformance: downloading llvm-toolchain-16's source package into $CACHE (136 MB)"
  (cd "$CACHE" && apt-get source --download-only llvm-toolchain-16) \
    || die "apt-get source --download-only llvm-toolchain-16 failed"
  orig=$(ls "$CACHE"/llvm-toolchain-16_*.orig.tar.xz 2>/dev/null | head -n 1 || true)
  [[ -n $orig ]] || die "no llvm-toolchain-16_*.orig.tar.xz in $CACHE after apt-get source"
fi

# 3. Only lit, the test configuration and the tests, extracted once next to the tarball.
version=$(basename "$orig" .orig.tar.xz)
SRC=$CACHE/$version-tests
if [[ ! -f $SRC/.complete ]]; then
  echo "conformance: extracting the llvm-symbolizer tests and lit from $(basename "$orig")"
  rm -rf "$SRC"
  mkdir -p "$SRC"
  nice -n 10 tar -xJf "$orig" -C "$SRC" --strip-components=1 --wildcards \
    '*/llvm/test/tools/llvm-symbolizer/*' '*/llvm/test/DebugInfo/*' '*/llvm/utils/lit/*' \
    '*/llvm/test/lit.cfg.py' '*/llvm/tools/llvm-symbolizer/*'
  touch "$SRC/.complete"
fi
LLVM=$SRC/llvm
cp "$HERE/lit.site.cfg.py" "$LLVM/test/lit.site.cfg.py"

# 4. The tests: the llvm-symbolizer directory, and the DebugInfo tests whose RUN lines call it.
rm -rf "$OUT"
mkdir -p "$OUT"
tests=("$LLVM/test/tools/llvm-symbolizer")
while IFS= read -r t; do tests+=("$t"); done < <(
  grep -rlE 'RUN:.*llvm-symbolizer' "$LLVM/test/DebugInfo" | grep -v '/Inputs/' | sort)
printf '%s\n' "${tests[@]#"$LLVM/test/"}" > "$OUT/selected.txt"

# 5. Two runs, each with its own tools directory and outputs.
run() {  # run NAME SYMBOLIZER
  local name=$1 symbolizer=$2 tools=$OUT/$1/bin
  mkdir -p "$tools" "$OUT/$name/obj"
  for t in "$LLVM_BIN"/*; do ln -s "$t" "$tools/$(basename "$t")"; done
  ln -sf "$symbolizer" "$tools/llvm-symbolizer"
  echo "conformance: running $(( ${#tests[@]} - 1 )) DebugInfo tests and the llvm-symbolizer directory with $name (llvm-symbolizer -> $symbolizer)"
  # lit exits 1 when a test fails; the results are in the JSON file.
  nice -n 10 python3 "$LLVM/utils/lit/lit.py" -j "$JOBS" --no-progress-bar -q \
    --param tools_dir="$tools" --param obj_root="$OUT/$name/obj" \
    -o "$OUT/$name/results.json" "${tests[@]}" > "$OUT/$name/lit.log" 2>&1 || true
  [[ -s $OUT/$name/results.json ]] || { cat "$OUT/$name/lit.log" >&2; die "lit gave no results for $name"; }
}
run llvm-symbolizer-16 "$LLVM_BIN/llvm-symbolizer"
run stacksym "$STACKSYM"

python3 "$HERE/compare.py" "$OUT/llvm-symbolizer-16/results.json" "$OUT/stacksym/results.json" \
  "$OUT/stacksym-only-failures.log" | tee "$OUT/summary.txt"
