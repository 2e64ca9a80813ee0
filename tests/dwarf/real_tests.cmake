# Fixtures and tests for debug-file finding and split DWARF (helper "dwarf-files"), included
# from tests/dwarf/CMakeLists.txt. Every fixture is built from tests/dwarf/fixtures/real_*.
set(real_srcs fixtures/real_main.c fixtures/real_lib.c)
set(real_abs_srcs ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/real_main.c
                  ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/real_lib.c)
set(real_inc -I${CMAKE_CURRENT_SOURCE_DIR}/fixtures)
string(REPLACE ";" " " real_abs_srcs_str "${real_abs_srcs}")

# A debug file split off with objcopy; the stripped binary names it by .gnu_debuglink. The
# unstripped original stays as the reference for llvm-symbolizer.
stacksym_fixture(real_dbg SOURCES ${real_srcs} FLAGS ${real_inc} -O2 -g -Wl,--build-id
  POST_COMMANDS
    "objcopy --only-keep-debug real_dbg real_dbg.debug"
    "objcopy --strip-debug --add-gnu-debuglink=real_dbg.debug real_dbg real_dbg.stripped"
    "objcopy --strip-all --add-gnu-debuglink=real_dbg.debug real_dbg real_dbg.symless"
  OUTPUTS real_dbg.debug real_dbg.stripped real_dbg.symless)
# Same sources, different code: another build ID and another CRC (for rejection tests).
stacksym_fixture(real_other SOURCES ${real_srcs} FLAGS ${real_inc} -O2 -g -DREAL_VARIANT=7
  -Wl,--build-id
  POST_COMMANDS "objcopy --only-keep-debug real_other real_other.debug"
  OUTPUTS real_other.debug)

# dwz: two programs share types and inline functions; their debug files are processed into a
# common supplementary file named by a relative .gnu_debugaltlink (GNU forms) or by .debug_sup
# (--dwarf-5, DW_FORM_ref_sup4 / strp_sup).
foreach(style gnu d5)
  if(style STREQUAL "gnu")
    set(dwz_flag "")
  else()
    set(dwz_flag "--dwarf-5")
  endif()
  set(p real_dwz_${style})
  stacksym_fixture(${p}_a SOURCES ${real_srcs} FLAGS ${real_inc} -O2 -g -Wl,--build-id
    POST_COMMANDS
      "gcc ${real_inc} -O2 -g -DREAL_VARIANT=3 -Wl,--build-id -o ${p}_b ${real_abs_srcs_str}"
      "objcopy --only-keep-debug ${p}_a ${p}_a.debug"
      "objcopy --only-keep-debug ${p}_b ${p}_b.debug"
      "dwz ${dwz_flag} -m ${p}_common.debug -M ${p}_common.debug ${p}_a.debug ${p}_b.debug"
      "objcopy --strip-debug --add-gnu-debuglink=${p}_a.debug ${p}_a ${p}_a.stripped"
      "objcopy --strip-debug --add-gnu-debuglink=${p}_b.debug ${p}_b ${p}_b.stripped"
    OUTPUTS ${p}_b ${p}_a.debug ${p}_b.debug ${p}_common.debug ${p}_a.stripped ${p}_b.stripped)
endforeach()

# Split DWARF whose .dwo files are gone (a build tree cleaned after linking): the skeletons'
# line tables still answer, and an index build must cope with units that have no functions.
stacksym_fixture(real_split_nodwo SOURCES ${real_srcs} FLAGS ${real_inc} -O2 -g -gsplit-dwarf
                 -Wl,--build-id
  POST_COMMANDS "rm -f real_split_nodwo-*.dwo")

# Split DWARF, compiled unit by unit so DW_AT_dwo_name is relative to DW_AT_comp_dir.
foreach(v 4 5)
  set(p real_split${v})
  stacksym_fixture(${p} SOURCES ${real_srcs} FLAGS ${real_inc} -O2 -g -gdwarf-${v}
    POST_COMMANDS
      "gcc ${real_inc} -O2 -g -gdwarf-${v} -gsplit-dwarf -c -o ${p}_main.o ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/real_main.c"
      "gcc ${real_inc} -O2 -g -gdwarf-${v} -gsplit-dwarf -c -o ${p}_lib.o ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/real_lib.c"
      "gcc -o ${p}.split ${p}_main.o ${p}_lib.o"
    OUTPUTS ${p}.split ${p}_main.dwo ${p}_lib.dwo)
endforeach()

# .dwp packages; the .dwo files are deleted so the package is the only source. gcc DWARF 4 with
# binutils dwp (index version 2) and llvm-dwp; clang DWARF 5 with llvm-dwp (index version 5).
# (gcc 12's DWARF 5 .dwo files crash binutils dwp and hang llvm-dwp-14: see
# docs/dwarf-differences.md.)
stacksym_fixture(real_dwp_gnu4 SOURCES ${real_srcs} FLAGS ${real_inc} -O2 -g -gdwarf-4 -gsplit-dwarf
  POST_COMMANDS "dwp -e real_dwp_gnu4 -o real_dwp_gnu4.dwp" "rm -f real_dwp_gnu4-*.dwo"
  OUTPUTS real_dwp_gnu4.dwp)
stacksym_fixture(real_dwp_llvm4 SOURCES ${real_srcs} FLAGS ${real_inc} -O2 -g -gdwarf-4 -gsplit-dwarf
  POST_COMMANDS "llvm-dwp-14 -e real_dwp_llvm4 -o real_dwp_llvm4.dwp" "rm -f real_dwp_llvm4-*.dwo"
  OUTPUTS real_dwp_llvm4.dwp)
stacksym_fixture(real_dwp_clang5 SOURCES ${real_srcs} COMPILER clang
  FLAGS ${real_inc} -O2 -g -gdwarf-5 -gsplit-dwarf
  POST_COMMANDS "llvm-dwp-14 -e real_dwp_clang5 -o real_dwp_clang5.dwp" "rm -f real_dwp_clang5-*.dwo"
  OUTPUTS real_dwp_clang5.dwp)

# Its twin without -gsplit-dwarf (identical code): the llvm-symbolizer reference.
stacksym_fixture(real_clang5 SOURCES ${real_srcs} COMPILER clang FLAGS ${real_inc} -O2 -g -gdwarf-5)

set(real_fixture_targets fixture_real_dbg fixture_real_other fixture_real_dwz_gnu_a
  fixture_real_dwz_d5_a fixture_real_split4 fixture_real_split5 fixture_real_split_nodwo fixture_real_dwp_gnu4
  fixture_real_dwp_llvm4 fixture_real_dwp_clang5 fixture_real_clang5)

stacksym_gtest(dwarf_real_finder_test
  SOURCES real_finder_test.cc real_test_util.cc
  DEPENDS ${real_fixture_targets})
stacksym_gtest(dwarf_real_e2e_test
  SOURCES real_e2e_test.cc real_test_util.cc
  DEPENDS ${real_fixture_targets} stacksym_cli
  TIMEOUT 300)
target_compile_definitions(dwarf_real_e2e_test PRIVATE
  STACKSYM_CLI_PATH="$<TARGET_FILE:stacksym_cli>")
