#!/usr/bin/env bash
# `make demo` builds what the demo runs, not the test suite:
#   demo_target_test.sh SOURCE_DIR BUILD_DIR
# Asks make which targets the demo's build command names (a dry run: nothing is built or
# installed), then ninja everything those targets depend on, recursively, and fails if a test,
# bench or fuzz target, a fixture or a test framework is among them, or if the `stacksym`
# command or its HTTP module is not. Exit 0 pass, 77 skip, else fail.
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }
[[ -f "$build/build.ninja" ]] || skip "$build is not a Ninja tree"
command -v make >/dev/null || skip "make is not installed"

dry=$(make -n --no-print-directory -C "$src" demo BUILD="$build" JOBS=2)
build_line=$(grep -E '^cmake --build ' <<<"$dry") || fail "make demo runs no cmake --build: $dry"
(( $(wc -l <<<"$build_line") == 1 )) || fail "make demo runs cmake --build more than once: $build_line"
targets=()
after_target=0
for word in $build_line; do
  case $word in
  --target) after_target=1 ;;
  --target=*) targets+=("${word#--target=}") ;;
  -*) after_target=0 ;;
  *) ((after_target)) && targets+=("$word") ;;
  esac
done
(( ${#targets[@]} )) || fail "make demo builds every target: $build_line"

# Paths relative to the build or source tree, whichever holds them; target names as they are.
inputs_of() {
  ninja -C "$build" -t inputs "$@" | sed -e "s|^$build/||" -e "s|^$src/||"
}
# What belongs to the test suite: anything under tests/, bench/, fuzz/ or fixtures/ (source or
# build tree), a target outside the stacksym_* libraries and programs, the test frameworks.
suite_inputs() {
  grep -E '^(tests|bench|fuzz|fixtures)/|^cmake_object_order_depends_target_|lib(gtest|gmock|benchmark)' |
    grep -v '^cmake_object_order_depends_target_stacksym_' || true
}

inputs_of "${targets[@]}" >"$build/demo_target_inputs.txt"
offending=$(suite_inputs <"$build/demo_target_inputs.txt")
[[ -z "$offending" ]] || fail "make demo (cmake --build --target ${targets[*]}) builds parts of the test suite:
$(head -n 20 <<<"$offending")"
# (ninja lists the inputs of the real build steps below the targets, not of phony ones: the
# command shows as its objects.)
for needed in 'cli/CMakeFiles/stacksym_cli\.dir/.*\.o' 'src/remote/CMakeFiles/stacksym_http\.dir/.*\.o'; do
  grep -qx "$needed" "$build/demo_target_inputs.txt" || fail "make demo does not build $needed"
done
# The classification must recognise the suite where it is (else an empty answer proves nothing).
in_all=$(inputs_of all | suite_inputs | wc -l)
(( in_all > 100 )) || fail "only $in_all test-suite inputs found in target all: the patterns are stale"
echo "make demo builds ${targets[*]}: $(wc -l <"$build/demo_target_inputs.txt") inputs, none of" \
  "the $in_all test, bench, fuzz or fixture inputs of target all"
