#!/usr/bin/env bash
# One step of the install tests (see CMakeLists.txt): install_test.sh STEP, with PREFIX, LIBDIR
# (CMAKE_INSTALL_LIBDIR, relative), BUILD_DIR, SOURCE_DIR and FIXTURE_DIR in the environment.
# Exit 0 pass, 77 skip, else fail.
set -euo pipefail
step=$1
work=$(mktemp -d "${BUILD_DIR}/install-test-${step}.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }
libdir="$PREFIX/$LIBDIR"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
fixture="$FIXTURE_DIR/capi_example_target"
libc=/lib/x86_64-linux-gnu/libc.so.6

# Addresses worth asking about in an ELF file: every function symbol's start, and a spread of
# addresses inside each (inline chains live in the middle of functions).
# (.dynsym when the file has no .symtab, as libc.so.6.) `sed -n 1,Np`, not head: head exits
# early, and under pipefail the writer's SIGPIPE would end the script without a message.
addresses_of() {
  local syms
  syms=$(nm --defined-only "$1" 2>/dev/null || true)
  [[ -n "$syms" ]] || syms=$(nm -D --defined-only "$1")
  awk '$2 ~ /^[tTwWi]$/ { print $1 }' <<<"$syms" | sort -u | sed -n "1,${2:-400}p" |
    while read -r a; do
      for d in 0 5 17 40; do printf '0x%x\n' $((16#$a + d)); done
    done
}

# CODE at every instruction of BINARY.
code_requests() {  # code_requests BINARY
  objdump -d --no-show-raw-insn "$1" | awk -v b="$1" '/^ +[0-9a-f]+:/ { sub(":", "", $1); print "CODE " b " 0x" $1 }'
}

# The clone fixture (GCC clone suffixes: .isra.0, .constprop.0, .part.0, .cold), built with
# g++ at OPT into $work/clone_fixture.OPT; prints its path.
build_clone_fixture() {  # build_clone_fixture OPT
  local bin="$work/clone_fixture.$1"
  g++ -g "-$1" -o "$bin" "$SOURCE_DIR/tests/install/clone_fixture.cc" || fail "cannot build the clone fixture at -$1"
  for suffix in isra constprop part cold; do
    nm "$bin" | grep -q "^[0-9a-f]* [tT] _Z.*\.$suffix" || fail "g++ -$1 made no .$suffix clone"
  done
  echo "$bin"
}
# Requests for it: CODE at every instruction, DATA at every function symbol (named by the
# symbol table, so with its suffix).
clone_requests() {  # clone_requests BINARY
  code_requests "$1"
  nm --defined-only "$1" | awk '$2 ~ /^[tT]$/ { print $1 }' | while read -r a; do printf 'DATA %s 0x%s\n' "$1" "$a"; done
}
# How many answers name a clone as LLVM does ("f(int) (.isra.0)"); none may say "[clone".
count_llvm_clones() {  # count_llvm_clones FILE
  ! grep -q '\[clone ' "$1" || fail "libiberty's [clone ...] in the drop-in's answers"
  grep -c ') (\.\(isra\|constprop\|part\|cold\)' "$1" || true
}

case "$step" in
tree)
  rm -rf "$PREFIX"
  cmake --install "$BUILD_DIR" --prefix "$PREFIX" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
  ;;

layout)
  for f in bin/stacksym include/stacksym/stacksym.h "$LIBDIR/pkgconfig/stacksym.pc" \
           "$LIBDIR/cmake/stacksym/stacksymConfig.cmake" "$LIBDIR/cmake/stacksym/stacksymConfigVersion.cmake" \
           share/man/man1/stacksym.1 "$LIBDIR/stacksym/libstacksym-http.so"; do
    [[ -f "$PREFIX/$f" ]] || fail "missing $f"
  done
  [[ -L "$PREFIX/libexec/stacksym/llvm-symbolizer" && -x "$PREFIX/libexec/stacksym/llvm-symbolizer" ]] ||
    fail "libexec/stacksym/llvm-symbolizer is not a working symlink"
  lib=$(ls "$libdir"/libstacksym.so.[0-9]* | head -n1)
  soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
  [[ "$soname" == libstacksym.so.0 ]] || fail "SONAME is '$soname'"
  [[ -e "$libdir/$soname" && -e "$libdir/libstacksym.so" ]] || fail "missing $soname or libstacksym.so link"
  # Exactly the functions the header declares are exported, nothing else.
  nm -D --defined-only "$lib" | awk '{ print $NF }' | sed 's/@.*//' | sort -u >"$work/exported"
  grep -o 'stacksym_[a-z_]*(' "$PREFIX/include/stacksym/stacksym.h" | tr -d '(' | sort -u >"$work/declared"
  if grep -v '^stacksym_' "$work/exported" | grep -v '^STACKSYM_0$' >"$work/foreign"; then
    head "$work/foreign" >&2; fail "libstacksym exports symbols outside stacksym_*"
  fi
  grep -v '^STACKSYM_0$' "$work/exported" | diff "$work/declared" - || fail "exported symbols differ from the header"
  printf '#include <stacksym/stacksym.h>\n' >"$work/c11.c"
  gcc -std=c11 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$PREFIX/include" "$work/c11.c" ||
    fail "header is not C11-clean"
  cp "$work/c11.c" "$work/cxx.cc"
  g++ -std=c++17 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$PREFIX/include" "$work/cxx.cc" ||
    fail "header does not compile as C++"
  [[ "$(pkg-config --modversion stacksym)" == "$("$PREFIX/bin/stacksym" --version | awk '{ print $2 }').0" ]] ||
    fail "pkg-config version differs from stacksym --version"
  # The .pc names the prefix it was installed under (no path relative to the .pc file).
  pc="$libdir/pkgconfig/stacksym.pc"
  for v in "prefix=$PREFIX" 'libdir=${prefix}/'"$LIBDIR" 'includedir=${prefix}/include' \
           'Cflags: -I${includedir}' 'Libs: -L${libdir} -lstacksym'; do
    grep -qxF "$v" "$pc" || { cat "$pc" >&2; fail "stacksym.pc has no line '$v'"; }
  done
  ! grep -q 'pcfiledir\|/\.\./' "$pc" || { cat "$pc" >&2; fail "stacksym.pc has relative paths"; }
  [[ "$(pkg-config --cflags --libs stacksym)" == "-I$PREFIX/include -L$libdir -lstacksym " ||
     "$(pkg-config --cflags --libs stacksym)" == "-I$PREFIX/include -L$libdir -lstacksym" ]] ||
    fail "pkg-config --cflags --libs stacksym: '$(pkg-config --cflags --libs stacksym)'"
  # The installed command loads its HTTP module from the installed tree, not the build's.
  LD_DEBUG=files timeout 20 "$PREFIX/bin/stacksym" serve --listen 256.0.0.1:1 >/dev/null 2>"$work/ld" || true
  loaded=$(sed -n 's/.*calling init: \(.*libstacksym-http\.so\)$/\1/p' "$work/ld" | head -n1)
  [[ -n "$loaded" && "$(realpath "$loaded")" == "$(realpath "$libdir/stacksym/libstacksym-http.so")" ]] ||
    { grep 'http\|stacksym:' "$work/ld" >&2; fail "the installed stacksym loaded '$loaded', not $libdir/stacksym/libstacksym-http.so"; }
  if command -v man >/dev/null; then  # (man-db is not in a minimal image)
    MANWIDTH=80 man -l "$PREFIX/share/man/man1/stacksym.1" 2>/dev/null | grep -q 'LLVM-SYMBOLIZER DROP-IN' ||
      fail "the man page does not render"
  fi
  ;;

c_example | cmake_package)
  if [[ $step == c_example ]]; then
    # pkg-config alone: no path into the source or build tree.
    cc -std=c11 -Wall -Wextra -Werror -o "$work/symbolize" "$SOURCE_DIR/examples/c/symbolize.c" \
      $(pkg-config --cflags --libs stacksym) -Wl,-rpath,"$(pkg-config --variable=libdir stacksym)"
  else
    mkdir "$work/consumer"
    cat >"$work/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.22)
project(consumer C)
find_package(stacksym 0.1 REQUIRED)
add_executable(symbolize "$SOURCE_DIR/examples/c/symbolize.c")
target_link_libraries(symbolize PRIVATE stacksym::stacksym)
CMAKE
    cmake -S "$work/consumer" -B "$work/consumer/build" -DCMAKE_PREFIX_PATH="$PREFIX" \
      -DCMAKE_BUILD_RPATH="$libdir" >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "configure"; }
    cmake --build "$work/consumer/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "build"; }
    cp "$work/consumer/build/symbolize" "$work/symbolize"
  fi
  for target in "$fixture" "$libc"; do
    mapfile -t addrs < <(addresses_of "$target" 150)
    (( ${#addrs[@]} > 20 )) || fail "too few addresses in $target"
    "$work/symbolize" "$target" "${addrs[@]}" >"$work/example.out"
    "$PREFIX/bin/stacksym" symbolize elf --file "$target" --output-style=llvm "${addrs[@]}" >"$work/cli.out"
    diff -u "$work/cli.out" "$work/example.out" >&2 || fail "C example differs from stacksym symbolize elf on $target"
    grep -q '^[^?].*:[1-9][0-9]*:[0-9]*$' "$work/example.out" || fail "no file:line answers for $target"
  done
  grep -q 'fixture::ReadAt(int const\*, int)' "$work/example.out" 2>/dev/null ||
    "$work/symbolize" "$fixture" $(addresses_of "$fixture" 400) | grep -q 'fixture::ReadAt(int const\*, int)' ||
    fail "C example did not name fixture::ReadAt"
  if "$work/symbolize" /nonexistent/file 0x10 2>"$work/err"; then fail "missing file accepted"; fi
  grep -q 'nonexistent' "$work/err" || fail "error message does not name the file: $(cat "$work/err")"
  ;;

dropin)
  dropin="$PREFIX/libexec/stacksym/llvm-symbolizer"
  command -v llvm-symbolizer >/dev/null || skip "llvm-symbolizer is not installed"
  compare() {  # compare NAME ARGS... (requests on stdin of both)
    local name=$1; shift
    llvm-symbolizer "$@" <"$work/requests" >"$work/llvm.out" 2>/dev/null || true
    [[ -s "$work/llvm.out" ]] || fail "$name: llvm-symbolizer printed nothing"
    "$dropin" "$@" <"$work/requests" >"$work/dropin.out" 2>/dev/null || fail "$name: drop-in exited with $?"
    diff -u "$work/llvm.out" "$work/dropin.out" >"$work/diff" || { head -n 60 "$work/diff" >&2; fail "$name differs from llvm-symbolizer"; }
  }
  # JSON: byte for byte, frames' Discriminator, StartAddress, StartFileName and StartLine too.
  compare_json() {
    local name=$1; shift
    llvm-symbolizer --output-style=JSON "$@" <"$work/requests" >"$work/llvm.out" 2>/dev/null || true
    [[ -s "$work/llvm.out" ]] || fail "$name: llvm-symbolizer printed nothing"
    "$dropin" --output-style=JSON "$@" <"$work/requests" >"$work/dropin.out" 2>/dev/null || fail "$name: drop-in exited with $?"
    cp "$work/dropin.out" "$work/dropin.json"
    diff -u "$work/llvm.out" "$work/dropin.out" >"$work/diff" || { head -n 60 "$work/diff" >&2; fail "$name differs from llvm-symbolizer"; }
  }
  # CODE answers are llvm-symbolizer 14's; DATA answers in the text styles and FRAME answers
  # are 16's (DATA has one more line, the declaration), so they are compared with it in step
  # dropin_llvm16, and DATA here only as JSON (the same in 14 and 16). FRAME at an address
  # without code is "??" in both.
  addresses_of "$fixture" 400 | sed "s|^|CODE \"$fixture\" |" >"$work/requests"
  printf 'FRAME "%s" 0x10\n%s 0x1\nnot a request\nCODE "/nonexistent" 0x10\n' "$fixture" "$fixture" >>"$work/requests"
  cp "$work/requests" "$work/code_requests"
  nm --defined-only "$fixture" | awk '$2 ~ /^[dDbBrR]$/ { print $1 }' | sed -n 1,50p |
    while read -r a; do printf 'DATA "%s" 0x%x\nDATA %s:x86_64 0x%x\n' "$fixture" $((16#$a)) "$fixture" $((16#$a + 3)); done >"$work/data_requests"
  printf 'DATA "/nonexistent" 0x10\n' >>"$work/data_requests"
  compare "default"
  compare "--no-inlines" --no-inlines
  compare "--inlining=false --demangle=false" --inlining=false -demangle=false
  compare "--functions=none --output-style=GNU" --functions=none --output-style=GNU
  compare "--functions=short" --functions=short
  grep -qx 'ReadAt' "$work/dropin.out" || fail "--functions=short: no short name ReadAt"
  compare "--print-address --basenames" --print-address --basenames --default-arch=x86_64
  LLVM_SYMBOLIZER_OPTS="--no-demangle --no-inlines" compare "LLVM_SYMBOLIZER_OPTS"
  cat "$work/code_requests" "$work/data_requests" >"$work/requests"
  compare_json "JSON"
  grep -q '"Symbol":\[{"Column":[1-9][0-9]*,"Discriminator":[0-9]*,"FileName":"/' "$work/dropin.json" ||
    fail "JSON: no frame with a file and column"
  grep -q '"StartFileName":"/[^"]*","StartLine":[1-9]' "$work/dropin.json" ||
    fail "JSON: no frame with a start file and line"
  grep -q '"Data":{"Name":"[^"]' "$work/dropin.json" || fail "JSON: no named DATA answer"
  compare_json "JSON --no-inlines --basenames" --no-inlines --basenames
  compare_json "JSON --functions=none --no-demangle" --functions=none --no-demangle
  compare_json "JSON --functions=short" --functions=short
  # --obj with hex, decimal and octal addresses, and addresses as arguments.
  # (llvm-symbolizer 14 rejects --use-symbol-table, which the drop-in accepts for older callers.)
  addr=$(addresses_of "$fixture" 400 | sed -n 30p)
  printf '%s\n%d\n0%o\n' "$addr" "$addr" "$addr" >"$work/requests"
  compare "--obj" --obj="$fixture" --relative-address
  : >"$work/requests"
  compare "-e with arguments" -e "$fixture" "$addr" 0x1
  compare_json "JSON -e with arguments" -e "$fixture" "$addr" 0x1 "not a request"
  # The other layouts (--pretty-print, --verbose, source lines, pretty JSON), --adjust-vma and
  # grouped short options, on a fixture with inline chains built here (its source is where
  # its DWARF says, so the source lines print), a line that does not parse and a missing
  # module (DATA and FRAME in these layouts: step dropin_llvm16).
  # (Compiled from its directory: its DWARF names it relative to the compilation directory, as
  # a build tree does, so --relativenames has a directory to leave out.)
  inline_bin="$work/inline_fixture"
  (cd "$SOURCE_DIR/tests/install" && g++ -g -O2 -o "$inline_bin" inline_fixture.cc) ||
    fail "cannot build the inline fixture"
  code_requests "$inline_bin" >"$work/requests"
  printf 'not a request\nCODE "/nonexistent" 0x10\n' >>"$work/requests"
  compare "--pretty-print" --pretty-print
  inlined_by=$(grep -c '^ (inlined by) [^ ]* at /' "$work/dropin.out" || true)
  compare "-p -a" -p -a
  compare "-pai GNU" -pai --output-style=GNU
  compare "-p --functions=none --no-inlines" -p --functions=none --no-inlines
  compare "--verbose" --verbose
  grep -q '^  Function start address: 0x' "$work/dropin.out" || fail "--verbose: no start address"
  compare "--verbose -p GNU --basenames" --verbose -p --output-style=GNU --basenames
  compare "--print-source-context-lines=3" --print-source-context-lines=3
  marked=$(grep -c '^ *[0-9]* >: ' "$work/dropin.out" || true)
  compare "--print-source-context-lines=4 -p GNU" --print-source-context-lines=4 -p --output-style=GNU
  compare "--print-source-context-lines=-1" --print-source-context-lines=-1
  compare_json "JSON --print-source-context-lines=5" --print-source-context-lines=5
  grep -q '"Source":"[0-9]* *: ' "$work/dropin.json" || fail "JSON: no Source"
  compare_json "JSON -p" -p
  compare_json "JSON -pa --verbose --adjust-vma=1" -pa --verbose --adjust-vma=1
  compare "--adjust-vma=0x10 -a" --adjust-vma=0x10 -a
  compare "--adjust-vma 4096 -pa --no-inlines" --adjust-vma 4096 -pa --no-inlines
  compare "--relativenames" --relativenames
  grep -q '^inline_fixture.cc:[1-9]' "$work/dropin.out" || fail "--relativenames: no relative path"
  compare "--basenames --relativenames -p" --basenames --relativenames -p
  compare_json "JSON --relativenames --basenames" --relativenames --basenames
  echo "== layouts: $(wc -l <"$work/requests") requests identical to llvm-symbolizer-14 ($inlined_by inlined-by lines, $marked marked source lines)"
  (( inlined_by >= 5 && marked >= 20 )) || fail "layouts: too few inlined frames or source lines"
  addr=$(addresses_of "$inline_bin" 400 | sed -n 10p)
  : >"$work/requests"
  compare "-Cfpie FILE" -Cfpie "$inline_bin" "$addr"
  compare "-pe FILE -s" -pe "$inline_bin" -s "$addr"
  compare "-peFILE --verbose" "-pe$inline_bin" --verbose "$addr"
  compare_json "JSON -p with arguments" -p -e "$inline_bin" "$addr" 0x1 "not a request"
  for bad in --adjust-vma=-5 --adjust-vma=zz --print-source-context-lines=1x -pq; do
    if "$dropin" "$bad" -e "$inline_bin" "$addr" >/dev/null 2>"$work/err"; then fail "$bad accepted"; fi
    [[ -s "$work/err" ]] || fail "$bad: no message"
  done
  # --fallback-debug-path: the inline fixture's DWARF moved to a .gnu_debuglink file under
  # DIR/<the binary's absolute directory>/, where only that flag finds it.
  linked="$work/linked/inline_fixture"
  fallback="$work/fallback"
  mkdir -p "$(dirname "$linked")" "$fallback$work/linked"
  objcopy --only-keep-debug "$inline_bin" "$fallback$work/linked/inline.debug" &&
    objcopy --strip-debug --add-gnu-debuglink="$fallback$work/linked/inline.debug" "$inline_bin" "$linked" ||
    fail "cannot split the inline fixture's debug info"
  code_requests "$linked" >"$work/requests"
  compare "--fallback-debug-path" --fallback-debug-path="$fallback"
  grep -q 'inline_fixture.cc:[1-9]' "$work/dropin.out" || fail "--fallback-debug-path: no line found"
  compare_json "JSON -p --fallback-debug-path" -p --fallback-debug-path "$fallback"
  compare "without --fallback-debug-path"
  ! grep -q 'inline_fixture.cc:[1-9]' "$work/dropin.out" || fail "the debuglink file was found without the flag"
  echo "== --fallback-debug-path: $(wc -l <"$work/requests") requests identical to llvm-symbolizer-14, with and without it"
  # libc's CODE answers are compared with 16 (step dropin_llvm16): 14 puts the compilation
  # directory before DWARF 5's directory 0 as well ("./csu/./csu/version.c").
  # GCC clone suffixes as LLVM's demangler prints them, at -O2 and -O3 (14 and 16 agree: step
  # dropin_llvm16 compares with 16). DATA only as JSON here (above).
  for opt in O2 O3; do
    bin=$(build_clone_fixture $opt)
    code_requests "$bin" >"$work/requests"
    compare "clones -$opt"
    clones=$(count_llvm_clones "$work/dropin.out")
    compare "clones -$opt --no-inlines --output-style=GNU" --no-inlines --output-style=GNU
    clone_requests "$bin" >"$work/requests"
    compare_json "clones -$opt JSON"
    (( clones >= 10 )) || fail "clones -$opt: only $clones answers name a clone"
    echo "== clones -$opt: $(wc -l <"$work/requests") requests identical to llvm-symbolizer-14 ($clones CODE answers name a clone)"
  done
  ;;

dropin_llvm16)
  # DATA and FRAME answers against llvm-symbolizer 16 (LLVM 15+ print the declaration's
  # file:line for DATA), byte for byte in every output style, on fixtures compiled here and on
  # libc (libc6-dbg).
  # The drop-in runs with --x-llvm16-decl-file, which drops a DW_AT_decl_file written as
  # DW_FORM_implicit_const as LLVM 16 does; without it, those lines (and only those) name the
  # file instead of "??:?", which is checked too.
  dropin="$PREFIX/libexec/stacksym/llvm-symbolizer"
  llvm16=$(command -v llvm-symbolizer-16) ||
    skip "llvm-symbolizer-16 is not installed (Debian package llvm-16; scripts/setup.sh installs it)"
  compare16() {  # compare16 NAME ARGS... (requests in $work/requests)
    local name=$1; shift
    "$llvm16" "$@" <"$work/requests" >"$work/llvm.out" 2>/dev/null || true
    [[ -s "$work/llvm.out" ]] || fail "$name: llvm-symbolizer-16 printed nothing"
    "$dropin" --x-llvm16-decl-file "$@" <"$work/requests" >"$work/dropin.out" 2>/dev/null ||
      fail "$name: drop-in exited with $?"
    diff -u "$work/llvm.out" "$work/dropin.out" >"$work/diff" ||
      { head -n 60 "$work/diff" >&2; fail "$name differs from llvm-symbolizer-16"; }
  }
  # Lines where the default answer differs from LLVM 16's: printed as "quirk|default".
  improved() {
    "$dropin" <"$work/requests" >"$work/default.out" 2>/dev/null || fail "drop-in exited with $?"
    paste -d'|' "$work/quirk.out" "$work/default.out" | awk -F'|' '$1 != $2'
  }
  # At, inside and just past every data symbol, plus addresses no variable holds.
  data_requests() {  # data_requests BINARY [SYMBOL-FILE]
    nm -S --defined-only "${2:-$1}" | awk 'NF == 4 && $3 ~ /^[dDbBrRvV]$/ { print $1, $2 }' |
      while read -r a s; do
        a=$((16#$a)); s=$((16#$s))
        for x in $a $((a + s / 2)) $((a + s - 1)) $((a + s)); do printf 'DATA %s 0x%x\n' "$1" $x; done
      done
  }
  # FRAME along the code: every 3rd byte of .text.
  frame_requests() {  # frame_requests BINARY
    readelf -SW "$1" | sed 's/\[ */[/' | awk '$2 == ".text" { print $4, $6 }' |
      while read -r a s; do
        for ((x = 16#$a; x < 16#$a + 16#$s; x += 3)); do printf 'FRAME %s 0x%x\n' "$1" $x; done
      done
  }
  # libc's CODE answers, with its separate debug file (libc6-dbg), in every style. 14 and 16
  # differ here in every path: 16 no longer puts the compilation directory before DWARF 5's
  # directory 0 ("./stdlib/abort.c", where 14 printed "./stdlib/./stdlib/abort.c", in FileName
  # and StartFileName alike); the drop-in, and every command, join paths as 16 does.
  addresses_of "$libc" 300 | sed "s|^|CODE \"$libc\" |" >"$work/requests"
  compare16 "libc CODE"
  grep -q '^\./csu/version\.c:' "$work/dropin.out" || fail "libc CODE: no ./csu/version.c line"
  compare16 "libc CODE -p --verbose" -p --verbose
  compare16 "libc CODE --relativenames" --relativenames
  compare16 "libc CODE JSON --relativenames" --output-style=JSON --relativenames
  compare16 "libc CODE JSON" --output-style=JSON
  grep -q '"StartLine":[1-9]' "$work/dropin.out" || fail "libc JSON: no start line"
  compare16 "libc CODE JSON --no-inlines --basenames" --output-style=JSON --no-inlines --basenames
  compare16 "libc CODE --functions=short --no-inlines" --functions=short --no-inlines
  echo "== libc: $(wc -l <"$work/requests") CODE requests identical to llvm-symbolizer-16"
  # JSON CODE with inline chains and discriminators at every instruction of fixtures built
  # with g++ -O2 (DWARF 5 and 4) and clang++ -O2 -fdebug-info-for-profiling (absolute
  # compilation directories: 14 and 16 print the same CODE answers there).
  inline_src="$SOURCE_DIR/tests/install/inline_fixture.cc"
  inline_builds=("g++ -gdwarf-5 -O2" "g++ -gdwarf-4 -O2")
  command -v clang++ >/dev/null && inline_builds+=("clang++ -gdwarf-5 -O2 -fdebug-info-for-profiling")
  i=0
  for b in "${inline_builds[@]}"; do
    bin="$work/inline_fixture.$i"; i=$((i + 1))
    $b -g -o "$bin" "$inline_src" || fail "cannot build the inline fixture with $b"
    code_requests "$bin" >"$work/requests"
    compare16 "$b CODE JSON" --output-style=JSON
    compare16 "$b CODE JSON --no-inlines --basenames" --output-style=JSON --no-inlines --basenames
    compare16 "$b CODE JSON --functions=short" --output-style=JSON --functions=short
    compare16 "$b CODE JSON --relativenames" --output-style=JSON --relativenames
    compare16 "$b CODE JSON" --output-style=JSON
    discriminators=$(grep -o '"Discriminator":[1-9][0-9]*' "$work/dropin.out" | wc -l)
    starts=$(grep -o '"StartLine":[1-9][0-9]*' "$work/dropin.out" | wc -l)
    inlined=$(grep -c '"FunctionName":"add' "$work/dropin.out" || true)
    echo "== $b: $(wc -l <"$work/requests") JSON CODE requests identical to llvm-symbolizer-16 ($discriminators discriminators, $starts start lines, $inlined in add)"
    (( discriminators >= 10 && starts >= 50 && inlined >= 3 )) || fail "$b: too few discriminators, start lines or inlined frames"
  done

  # GCC clone suffixes (CODE and DATA, every style): 16 prints them as 14 does.
  for opt in O2 O3; do
    bin=$(build_clone_fixture $opt)
    clone_requests "$bin" >"$work/requests"
    compare16 "clones -$opt"
    clones=$(count_llvm_clones "$work/dropin.out")
    compare16 "clones -$opt GNU --no-inlines" --output-style=GNU --no-inlines
    compare16 "clones -$opt JSON" --output-style=JSON
    (( clones >= 15 )) || fail "clones -$opt: only $clones answers name a clone"
    echo "== clones -$opt: $(wc -l <"$work/requests") requests identical to llvm-symbolizer-16 ($clones name a clone)"
  done

  src="$SOURCE_DIR/tests/install/data_fixture.cc"
  builds=("g++ -gdwarf-5 -O1" "g++ -gdwarf-4 -O1")
  command -v clang++ >/dev/null && builds+=("clang++ -gdwarf-5 -O1")
  i=0
  for b in "${builds[@]}" "g++ -O0" "g++ -O2"; do
    bin="$work/data_fixture.$i"; i=$((i + 1))
    $b -g -fno-pie -no-pie -o "$bin" "$src" || fail "cannot build the fixture with $b"
    frame_requests "$bin" >"$work/requests"
    compare16 "$b FRAME"
    locals=$(grep -c '^[-0-9?]* [0-9?]* [0-9?]*$' "$work/dropin.out" || true)
    frames=$(grep -c '^-[0-9]* [0-9]* ??$' "$work/dropin.out" || true)
    compare16 "$b FRAME JSON" --output-style=JSON
    compare16 "$b FRAME -pa --adjust-vma=2" -pa --adjust-vma=2
    compare16 "$b FRAME JSON -p" --output-style=JSON -p
    echo "== $b: $(wc -l <"$work/requests") FRAME requests identical to llvm-symbolizer-16 ($locals locals, $frames with a frame offset)"
    (( locals >= 20 )) || fail "$b: only $locals locals"
    # gcc's locals in memory are DW_OP_fbreg; clang -O1 keeps them in registers or as rsp+N.
    [[ $b == clang* ]] || (( frames >= 10 )) || fail "$b: only $frames locals with a frame offset"
    [[ $b == *-O[02] ]] && continue
    { data_requests "$bin"
      for x in 0 $((16#$(nm "$bin" | awk '$3 == "main" { print $1 }'))) 0xffffffffff; do
        printf 'DATA %s 0x%x\n' "$bin" $x
      done
      printf 'DATA "%s" 0x%x\n' "$bin" $((16#$(nm "$bin" | awk '$3 == "g_int" { print $1 }') + 1))
      printf 'DATA "/nonexistent" 0x10\n'; } >"$work/requests"
    compare16 "$b"
    cp "$work/dropin.out" "$work/quirk.out"
    answered=$(grep -c 'data_fixture.cc:[1-9]' "$work/dropin.out" || true)
    compare16 "$b GNU" --output-style=GNU
    compare16 "$b JSON" --output-style=JSON
    compare16 "$b --print-address --basenames --no-demangle" --print-address --basenames --no-demangle
    compare16 "$b -pa GNU --adjust-vma=1" -pa --output-style=GNU --adjust-vma=1
    compare16 "$b JSON -p" --output-style=JSON -p
    improved >"$work/improved"
    # Every difference: LLVM 16's "??:?" against the declaration's file:line.
    if awk -F'|' '$1 != "??:?" || $2 !~ /data_fixture\.cc:[1-9][0-9]*$/' "$work/improved" | grep -q .; then
      head -n 20 "$work/improved" >&2; fail "$b: default answers differ from LLVM 16's beyond implicit_const files"
    fi
    extra=$(wc -l <"$work/improved")
    echo "== $b: $(wc -l <"$work/requests") requests identical to llvm-symbolizer-16; $answered with a declaration line, $extra more by default"
    case "$b" in
      "g++ -gdwarf-5 -O1") (( extra >= 5 )) || fail "$b: expected implicit_const files named by default (got $extra)" ;;
      *)
        (( answered >= 10 )) || fail "$b: only $answered declarations answered"
        (( extra == 0 )) || fail "$b: default answers differ from LLVM 16's"
        # Inside a global (not at its start) as at its start.
        big_line=$(grep -n '^char g_big' "$src" | cut -d: -f1)
        [[ $(grep -A2 -x 'g_big' "$work/quirk.out" | grep -c "data_fixture.cc:$big_line\$") -ge 3 ]] ||
          fail "$b: g_big not answered at, inside and at the end of it"
        ;;
    esac
  done
  # Modules named by build ID (BUILDID:hex, --build-id; FILE:path too), as LLVM 16 finds
  # them: <debug dir>/.build-id/xx/rest.debug, here a separate debug file made with objcopy
  # --only-keep-debug (the code is not in it: symbols and DWARF are). Also a build ID no
  # directory has (an error at every request), and lines that do not parse (bad hex, both
  # prefixes, a prefix twice).
  bin="$work/inline_fixture.0"
  id=$(readelf -n "$bin" | awk '/Build ID/ { print $3 }')
  mkdir -p "$work/dbg/.build-id/${id:0:2}"
  objcopy --only-keep-debug "$bin" "$work/dbg/.build-id/${id:0:2}/${id:2}.debug"
  { code_requests "$bin" | sed "s|^CODE $bin |CODE BUILDID:$id |"
    nm --defined-only "$bin" | awk '$2 ~ /^[dDbBrR]$/ { print $1 }' |
      while read -r a; do printf 'DATA BUILDID:"%s" 0x%x\n' "$id" $((16#$a)); done
    frame_requests "$bin" | sed -n '1~25p' | sed "s|^FRAME $bin |FRAME BUILDID:${id^^} |"
    printf 'CODE FILE:%s 0x%x\n' "$bin" $((16#$(nm "$bin" | awk '$3 == "main" { print $1 }')))
    printf 'BUILDID:00ff 0x10\nDATA BUILDID:0abc 0x10\nBUILDID:f 0x1\nBUILDID:zz 0x1\nBUILDID: 0x1\n'
    printf 'FILE:BUILDID:00 0x1\nBUILDID:BUILDID:00 0x1\nFILE:FILE:%s 0x1\n' "$bin"; } >"$work/requests"
  compare16 "BUILDID" --debug-file-directory="$work/dbg"
  by_id=$(grep -c '^add$' "$work/dropin.out" || true)
  compare16 "BUILDID -pa GNU" --debug-file-directory="$work/dbg" -pa --output-style=GNU
  compare16 "BUILDID JSON" --debug-file-directory="$work/dbg" --output-style=JSON
  grep -q "\"ModuleName\":\"${id^^}\",\"Symbol\":\[{\"Column\":[1-9]" "$work/dropin.out" ||
    fail "BUILDID JSON: no answer named by the build ID"
  : >"$work/requests"
  compare16 "--build-id" --debug-file-directory="$work/dbg" --build-id="$id" -a 0x1 "FILE:$bin 0x1" \
    "$(code_requests "$bin" | sed -n 20p | awk '{ print $3 }')"
  compare16 "--build-id JSON" --debug-file-directory="$work/dbg" --build-id "$id" --output-style=JSON 0x1 "$bin 0x1"
  for bad in "--build-id=zz" "--build-id=$id --obj=$bin"; do
    if "$dropin" $bad 0x1 >/dev/null 2>"$work/err"; then fail "$bad accepted"; fi
    [[ -s "$work/err" ]] || fail "$bad: no message"
  done
  echo "== build IDs: answers identical to llvm-symbolizer-16 ($by_id frames of add found by build ID)"
  (( by_id >= 3 )) || fail "BUILDID: too few inlined frames of add"

  # libc: the data symbols of its debug file (start and middle), and every 8th byte of .data,
  # .bss and .data.rel.ro.
  build_id=$(readelf -n "$libc" | awk '/Build ID/ { print $3 }')
  debug="/usr/lib/debug/.build-id/${build_id:0:2}/${build_id:2}.debug"
  [[ -f "$debug" ]] || skip "libc6-dbg is not installed ($debug)"
  data_requests "$libc" "$debug" >"$work/requests"
  readelf -SW "$libc" | sed 's/\[ */[/' |
    awk '$2 == ".data" || $2 == ".bss" || $2 == ".data.rel.ro" { print $4, $6 }' |
    while read -r a s; do
      for ((x = 16#$a; x < 16#$a + 16#$s; x += 8)); do printf 'DATA %s 0x%x\n' "$libc" $x; done
    done >>"$work/requests"
  compare16 "libc"
  answered=$(grep -c '^\./.*:[1-9][0-9]*$' "$work/dropin.out" || true)
  (( answered >= 500 )) || fail "libc: only $answered declarations answered"
  compare16 "libc GNU" --output-style=GNU
  # The same by build ID, in the default debug directory (/usr/lib/debug): its debug file is
  # the module then, as in llvm-symbolizer 16.
  sed -i "s|^DATA $libc |DATA BUILDID:$build_id |" "$work/requests"
  compare16 "libc BUILDID"
  echo "== libc: $(wc -l <"$work/requests") DATA requests identical to llvm-symbolizer-16 ($answered with a declaration line)"
  addresses_of "$libc" 600 | sed "s|^|FRAME $libc |" >"$work/requests"
  compare16 "libc FRAME"
  frames=$(grep -c '^[-0-9?]* [0-9?]* [0-9?]*$' "$work/dropin.out" || true)
  compare16 "libc FRAME JSON" --output-style=JSON
  (( frames >= 1000 )) || fail "libc: only $frames locals"
  echo "== libc: $(wc -l <"$work/requests") FRAME requests identical to llvm-symbolizer-16 ($frames locals)"
  ;;

dropin_split)
  # DATA and FRAME where the DWARF is in split objects (.dwo, .dwp) or moved by dwz into a
  # supplementary file. llvm-symbolizer 14 and 16 answer FRAME there with "??" and DATA without
  # the declarations they cannot reach (split units; dwz's DW_FORM_GNU_ref_alt / ref_sup4), so
  # the drop-in's answers on each such build are compared with llvm-symbolizer-16's on its twin
  # built without -gsplit-dwarf or before dwz (the same code at the same addresses, checked),
  # and every global's declaration line with the source.
  dropin="$PREFIX/libexec/stacksym/llvm-symbolizer"
  llvm16=$(command -v llvm-symbolizer-16) ||
    skip "llvm-symbolizer-16 is not installed (Debian package llvm-16; scripts/setup.sh installs it)"
  src="$SOURCE_DIR/tests/install/data_fixture.cc"
  same_code() {  # same_code A B: identical .text, .data, .rodata and symbol addresses
    local sec
    for sec in .text .data .rodata; do
      cmp -s <(objcopy -O binary --only-section=$sec "$1" /dev/stdout) \
             <(objcopy -O binary --only-section=$sec "$2" /dev/stdout) || fail "$1 and $2 differ in $sec"
    done
    diff <(nm "$1") <(nm "$2") >/dev/null || fail "$1 and $2 have different symbols"
  }
  data_requests() {  # data_requests BINARY: at, inside and at the end of every data symbol
    nm -S --defined-only "$1" | awk 'NF == 4 && $3 ~ /^[dDbBrRvV]$/ { print $1, $2 }' |
      while read -r a s; do
        a=$((16#$a)); s=$((16#$s))
        for x in $a $((a + s / 2)) $((a + s - 1)) $((a + s)); do printf 'DATA %s 0x%x\n' "$1" $x; done
      done
  }
  frame_requests() {  # frame_requests BINARY: every 3rd byte of .text
    readelf -SW "$1" | sed 's/\[ */[/' | awk '$2 == ".text" { print $4, $6 }' |
      while read -r a s; do
        for ((x = 16#$a; x < 16#$a + 16#$s; x += 3)); do printf 'FRAME %s 0x%x\n' "$1" $x; done
      done
  }
  # compare_twin NAME TWIN BINARY ARGS...: llvm-symbolizer-16 on TWIN's requests against the
  # drop-in on the same requests to BINARY ($work/requests names TWIN).
  compare_twin() {
    local name=$1 twin=$2 bin=$3; shift 3
    "$llvm16" "$@" <"$work/requests" >"$work/llvm.out" 2>/dev/null || true
    [[ -s "$work/llvm.out" ]] || fail "$name: llvm-symbolizer-16 printed nothing"
    sed "s|^\([A-Z]*\) $twin |\1 $bin |" "$work/requests" >"$work/requests.bin"
    "$dropin" --x-llvm16-decl-file "$@" <"$work/requests.bin" >"$work/dropin.out" 2>/dev/null ||
      fail "$name: drop-in exited with $?"
    sed -i "s|\"ModuleName\":\"$bin\"|\"ModuleName\":\"$twin\"|" "$work/dropin.out"
    diff -u "$work/llvm.out" "$work/dropin.out" >"$work/diff" ||
      { head -n 60 "$work/diff" >&2; fail "$name differs from llvm-symbolizer-16 on $twin"; }
  }
  # Every global of the fixture whose declaration line LLVM 16 can name (its file is not
  # DW_FORM_implicit_const, which it drops): the drop-in names it on BINARY too.
  check_source_lines() {  # check_source_lines NAME BINARY
    local var line n=0
    for var in g_int s_table g_big g_matrix g_ptr g_pair g_empty g_counter; do
      line=$(grep -n "^[^/]*[ *]$var\b" "$src" | head -n1 | cut -d: -f1)
      addr=$(nm "$2" | awk -v v="$var" '$3 ~ ("^(_ZL)?[0-9]*" v "$") || $3 == v { print $1 }' | head -n1)
      [[ -n "$line" && -n "$addr" ]] || fail "$1: $var not in the source or the symbol table"
      got=$(printf 'DATA %s 0x%s\n' "$2" "$addr" | "$dropin" | sed -n 3p)
      [[ "$got" == */data_fixture.cc:$line ]] || fail "$1: $var answered '$got', declared at line $line"
      n=$((n + 1))
    done
    echo "$n"
  }
  total=0
  run_twin() {  # run_twin NAME TWIN BINARY [data]: DATA and FRAME (or DATA only), every style
    local name=$1 twin=$2 bin=$3 only=${4:-}
    same_code "$twin" "$bin"
    data_requests "$twin" >"$work/requests"
    compare_twin "$name DATA" "$twin" "$bin"
    answered=$(grep -c 'data_fixture.cc:[1-9]' "$work/dropin.out" || true)
    # Without --x-llvm16-decl-file (implicit_const files named): as on the twin too.
    "$dropin" <"$work/requests" >"$work/twin.out" 2>/dev/null || fail "$name: drop-in exited with $?"
    "$dropin" <"$work/requests.bin" >"$work/dropin.out" 2>/dev/null || fail "$name: drop-in exited with $?"
    diff -u "$work/twin.out" "$work/dropin.out" >"$work/diff" ||
      { head -n 60 "$work/diff" >&2; fail "$name: default DATA answers differ from the twin's"; }
    named=$(grep -c 'data_fixture.cc:[1-9]' "$work/dropin.out" || true)
    (( named >= 30 )) || fail "$name: only $named default DATA answers name a declaration"
    compare_twin "$name DATA JSON" "$twin" "$bin" --output-style=JSON
    n=$(wc -l <"$work/requests")
    lines=$(check_source_lines "$name" "$bin")
    if [[ $only == data ]]; then
      total=$((total + 2 * n))
      echo "== $name: $n DATA requests as llvm-symbolizer-16 on the twin ($answered declarations; $named by default, as on the twin; $lines globals' lines as in the source)"
      return
    fi
    frame_requests "$twin" >"$work/requests"
    compare_twin "$name FRAME" "$twin" "$bin"
    locals=$(grep -c '^[-0-9?]* [0-9?]* [0-9?]*$' "$work/dropin.out" || true)
    # Spill's parameter `a`: its frame offset is the second entry of a location list
    # (.debug_loclists.dwo, or DWARF 4's .debug_loc.dwo with DW_LLE_GNU_* entries).
    listed=$(grep -A3 -x Spill "$work/dropin.out" | grep -A2 -x a | grep -c '^-[0-9][0-9]* 8 ??$' || true)
    compare_twin "$name FRAME JSON" "$twin" "$bin" --output-style=JSON
    (( locals >= 20 )) || fail "$name: only $locals locals"
    [[ $name != g++*-O[12]* ]] || (( listed >= 1 )) || fail "$name: no frame offset from a location list"
    total=$((total + 2 * n + 2 * $(wc -l <"$work/requests")))
    echo "== $name: $n DATA and $(wc -l <"$work/requests") FRAME requests as llvm-symbolizer-16 on the twin ($answered declarations; $named by default, as on the twin; $locals locals, $listed of Spill's a with a frame offset; $lines globals' lines as in the source)"
  }
  # check_dwp NAME BINARY: with its package moved away and renamed, --dwp names it. CODE
  # answers (names and inline chains only the split units hold), in the LLVM and JSON
  # layouts, as llvm-symbolizer 14 and 16 give them; and with a --dwp that does not exist,
  # as they give them without the package.
  check_dwp() {
    local name=$1 bin=$2 tool style pkg
    mkdir -p elsewhere && mv "$bin.dwp" elsewhere/package
    readelf -SW "$bin" | sed 's/\[ */[/' | awk '$2 == ".text" { print $4, $6 }' |
      while read -r a s; do
        for ((x = 16#$a; x < 16#$a + 16#$s; x += 3)); do printf 'CODE %s 0x%x\n' "$bin" $x; done
      done >"$work/requests"
    for pkg in "$PWD/elsewhere/package" /nonexistent/package.dwp; do
      for style in LLVM JSON; do
        "$dropin" --dwp="$pkg" --output-style=$style <"$work/requests" >"$work/dropin.out" ||
          fail "$name --dwp: drop-in exited with $?"
        for tool in llvm-symbolizer "$llvm16"; do
          command -v "$tool" >/dev/null || continue
          "$tool" --dwp="$pkg" --output-style=$style <"$work/requests" >"$work/llvm.out" 2>/dev/null
          diff -u "$work/llvm.out" "$work/dropin.out" >"$work/diff" ||
            { head -n 40 "$work/diff" >&2; fail "$name --dwp=$pkg $style differs from $tool"; }
        done
      done
    done
    "$dropin" --dwp="$PWD/elsewhere/package" <"$work/requests" >"$work/with.out"
    "$dropin" <"$work/requests" >"$work/without.out"
    # (At -O0 nothing is inlined: the skeleton's lines and the symbol table say it all.)
    [[ $name == *-O0* ]] || ! cmp -s "$work/with.out" "$work/without.out" ||
      fail "$name: --dwp changed no answer"
    mv elsewhere/package "$bin.dwp"
    echo "== $name --dwp: $(wc -l <"$work/requests") CODE requests as llvm-symbolizer 14 and 16 (with the package moved and named, and with a missing one)"
  }
  builds=("g++ -gdwarf-5 -O1" "g++ -gdwarf-4 -O1" "g++ -gdwarf-5 -O2" "g++ -gdwarf-4 -O0")
  command -v clang++ >/dev/null && builds+=("clang++ -gdwarf-5 -O1")
  i=0
  for b in "${builds[@]}"; do
    i=$((i + 1))
    d="$work/split/$i"
    mkdir -p "$d" && cd "$d"
    $b -g -fno-pie -no-pie -o plain "$src" || fail "cannot build the fixture with $b"
    # Compiled and linked in one step: the skeleton names the .dwo (relative to this
    # directory, its DW_AT_comp_dir): split-data_fixture.dwo (gcc), data_fixture.dwo (clang).
    $b -g -gsplit-dwarf -fno-pie -no-pie -o split "$src" || fail "cannot build the fixture with $b -gsplit-dwarf"
    ls ./*.dwo >/dev/null 2>&1 || fail "$b -gsplit-dwarf wrote no .dwo"
    run_twin "$b -gsplit-dwarf (.dwo)" "$d/plain" "$d/split"
    # A package in place of the .dwo files: binutils dwp reads gcc's DWARF 4, llvm-dwp clang's
    # DWARF 5 (gcc 12's DWARF 5 .dwo files crash binutils dwp: docs/dwarf-differences.md).
    packer=""
    [[ $b == "g++ -gdwarf-4"* ]] && packer="dwp"
    [[ $b == clang++* ]] && command -v llvm-dwp >/dev/null && packer="llvm-dwp"
    if [[ -n $packer ]]; then
      $packer -e split -o split.dwp || fail "$packer"
      rm -f ./*.dwo
      run_twin "$b -gsplit-dwarf ($packer .dwp)" "$d/plain" "$d/split"
      check_dwp "$b -gsplit-dwarf ($packer .dwp)" "$d/split"
    fi
  done
  # A missing, truncated or damaged .dwo: answers without its DWARF (or with what of it is
  # sane), never a crash or a hang.
  cd "$work/split/1"
  dwo=$(ls ./*.dwo)
  mv "$dwo" whole.dwo
  { data_requests "$PWD/split"; frame_requests "$PWD/split"; } >"$work/requests"
  "$dropin" <"$work/requests" >"$work/bad.out" 2>/dev/null || fail "missing .dwo: exit $?"
  ! grep -q 'data_fixture.cc:[1-9]' "$work/bad.out" || fail "missing .dwo: declarations answered from nowhere"
  grep -qx 'g_int' "$work/bad.out" || fail "missing .dwo: the symbol table no longer names g_int"
  head -c 300 whole.dwo >"$dwo"
  "$dropin" <"$work/requests" >"$work/bad.out" 2>/dev/null || fail "truncated .dwo: exit $?"
  size=$(stat -c %s whole.dwo)
  RANDOM=14
  for round in 1 2 3 4 5 6 7 8 9 10; do
    cp whole.dwo "$dwo"
    for ((k = 0; k < 40; k++)); do
      printf '\xff\x7f\x00\x83' | dd of="$dwo" bs=1 seek=$((64 + (RANDOM * 32768 + RANDOM) % (size - 68))) conv=notrunc status=none
    done
    timeout 60 "$dropin" <"$work/requests" >"$work/bad.out" 2>/dev/null || fail "damaged .dwo (round $round): exit $?"
  done
  echo "== missing, truncated and 10 damaged .dwo files: $(wc -l <"$work/requests") requests each answered"

  # dwz: two programs share a supplementary file (.gnu_debugaltlink, DW_FORM_GNU_ref_alt;
  # --dwarf-5: .debug_sup, DW_FORM_ref_sup4); types and declarations move there.
  mkdir -p "$work/split/dwz" && cd "$work/split/dwz"
  for style in gnu d5; do
    flag=""; [[ $style == d5 ]] && flag="--dwarf-5"
    g++ -g -O1 -fno-pie -no-pie -o "dwz_$style.plain" "$src" || fail "cannot build the dwz fixture"
    cp "dwz_$style.plain" "dwz_$style"
    g++ -g -O1 -DOTHER_PROGRAM -fno-pie -no-pie -o "dwz_$style.other" "$src" || fail "cannot build the dwz fixture"
    dwz $flag -m "dwz_$style.common" -M "dwz_$style.common" "dwz_$style" "dwz_$style.other" ||
      fail "dwz $flag"
    # Abbreviations with a reference into the supplementary file.
    refs=$(readelf --debug-dump=abbrev "dwz_$style" 2>/dev/null | grep -c 'DW_FORM_GNU_ref_alt\|DW_FORM_ref_sup4' || true)
    (( refs >= 5 )) || fail "dwz $flag: only $refs abbreviations refer into the supplementary file"
    # (DATA only: FRAME does not follow references into the supplementary file.)
    run_twin "dwz $flag ($refs abbreviations refer into the supplementary file)" "$PWD/dwz_$style.plain" "$PWD/dwz_$style" data
  done
  echo "== $total requests in all"
  ;;

asan | ubsan)
  dropin="$PREFIX/libexec/stacksym/llvm-symbolizer"
  real=$(command -v llvm-symbolizer) || skip "llvm-symbolizer is not installed"
  real=$(readlink -f "$real")
  if [[ $step == asan ]]; then
    program="$FIXTURE_DIR/sanitizer_asan"; cases="use-after-free global-overflow stack-overflow"
  else
    program="$FIXTURE_DIR/sanitizer_ubsan"; cases="signed-overflow"
  fi
  # The report up to its SUMMARY line, without what changes from run to run (pids, addresses).
  report() {  # report SYMBOLIZER CASE
    { ASAN_SYMBOLIZER_PATH=$1 UBSAN_SYMBOLIZER_PATH=$1 ASAN_OPTIONS=detect_leaks=0:symbolize=1 \
      UBSAN_OPTIONS=print_stacktrace=1:symbolize=1 "$program" "$2" 2>&1 >/dev/null || true; } |
      sed -n '1,/^SUMMARY/p' | sed -E 's/==[0-9]+==/==PID==/g; s/0x[0-9a-f]+/0xADDR/g'
  }
  for c in $cases; do
    report "$real" "$c" >"$work/llvm.$c"
    report "$dropin" "$c" >"$work/dropin.$c"
    grep -q 'sanitizer_fixture.cc:[0-9]*:[0-9]*' "$work/llvm.$c" || fail "$c: llvm-symbolizer gave no file:line (was it used?)"
    diff -u "$work/llvm.$c" "$work/dropin.$c" >&2 || fail "$c: report with the drop-in differs"
    echo "== $c: identical reports"; grep -E '#[0-9]+ |global variable' "$work/dropin.$c" | head -n 4
  done
  grep -q "global variable 'fixture::global_table'" "$work/dropin.global-overflow" 2>/dev/null || [[ $step == ubsan ]] ||
    fail "global description missing"
  ;;

deb)
  command -v dpkg-deb >/dev/null || skip "dpkg-deb is not installed"
  # Into the test's own directory, so that a package made by `make deb` stays.
  (cd "$BUILD_DIR" && cpack -G DEB -B "$work/package" >"$work/cpack.log" 2>&1) ||
    { tail -n 30 "$work/cpack.log"; fail "cpack"; }
  deb=$(ls "$work"/package/stacksym_*.deb)
  dpkg-deb -f "$deb" Package Version Depends
  dpkg-deb -x "$deb" "$work/root"
  "$work/root/usr/bin/stacksym" --version | grep -q '^stacksym ' || fail "stacksym --version from the package"
  [[ -L "$work/root/usr/libexec/stacksym/llvm-symbolizer" ]] || fail "drop-in link missing from the package"
  echo "y" | "$work/root/usr/libexec/stacksym/llvm-symbolizer" --version | grep -q stacksym || fail "drop-in --version"
  # Laid out as Debian lays out libraries: under /usr/lib/<multiarch triplet>, nothing in
  # /usr/lib itself.
  triplet=$(gcc -print-multiarch)
  [[ -n "$triplet" ]] || skip "gcc names no multiarch triplet"
  dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./||' >"$work/contents"
  for f in libstacksym.so.0 libstacksym.so stacksym/libstacksym-http.so pkgconfig/stacksym.pc \
           cmake/stacksym/stacksymConfig.cmake; do
    grep -qxF "usr/lib/$triplet/$f" "$work/contents" || { cat "$work/contents" >&2; fail "usr/lib/$triplet/$f is not in the package"; }
  done
  ! grep -E '^usr/lib/[^/]+$' "$work/contents" || fail "files directly in /usr/lib"
  # The agent's service: shipped, its options a conffile, and nothing that enables or starts it.
  grep -qxF "usr/lib/systemd/system/stacksym-agent.service" "$work/contents" || fail "no stacksym-agent.service"
  grep -qxF "etc/default/stacksym-agent" "$work/contents" || fail "no /etc/default/stacksym-agent"
  dpkg-deb -e "$deb" "$work/control"
  grep -qxF /etc/default/stacksym-agent "$work/control/conffiles" || fail "/etc/default/stacksym-agent is not a conffile"
  # (CPack's postinst runs ldconfig for the library; nothing may enable or start the service.)
  for script in preinst postinst prerm postrm; do
    [[ ! -e "$work/control/$script" ]] && continue
    ! grep -qE 'systemctl|deb-systemd|stacksym-agent' "$work/control/$script" ||
      fail "the package's $script enables or starts the agent: it must stay disabled until enabled"
  done
  grep -q '^ExecStart=/usr/bin/stacksym agent \$STACKSYM_AGENT_OPTS$' "$work/root/usr/lib/systemd/system/stacksym-agent.service" ||
    fail "the unit does not start the packaged command with the options file's flags"
  pc="$work/root/usr/lib/$triplet/pkgconfig/stacksym.pc"
  grep -qx 'prefix=/usr' "$pc" && grep -qxF 'libdir=${prefix}/lib/'"$triplet" "$pc" ||
    { cat "$pc" >&2; fail "the package's stacksym.pc does not name /usr/lib/$triplet"; }
  # The C example built through the package's .pc, its prefix moved to where it was unpacked.
  flags=$(PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --define-variable=prefix="$work/root/usr" --cflags --libs stacksym)
  cc -std=c11 -Wall -Werror -o "$work/symbolize" "$SOURCE_DIR/examples/c/symbolize.c" $flags \
    -Wl,-rpath,"$work/root/usr/lib/$triplet" || fail "cannot build the C example with: $flags"
  "$work/symbolize" "$libc" $(addresses_of "$libc" 5) | grep -q . || fail "the C example built against the package answered nothing"
  ;;
*)
  fail "unknown step $step"
  ;;
esac
echo "PASS: $step"
