# Shared CMake helpers.

set_property(GLOBAL PROPERTY STACKSYM_MODULES "")
# Unity batches: each module's and each test binary's files compiled STACKSYM_UNITY_BATCH at a
# time, so that the headers they share are parsed once per batch (CI compiles everything twice on
# two cores). Files listed ALONE are compiled on their own: they define, in an anonymous
# namespace, a name another file of the batch defines too, or a class whose members use such
# types (gcc's -Wsubobject-linkage when the file is not the main one).
option(STACKSYM_UNITY "Compile modules and test binaries in unity batches" ON)
set(STACKSYM_UNITY_BATCH 8)
function(stacksym_unity target)
  if(STACKSYM_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON
                          UNITY_BUILD_BATCH_SIZE ${STACKSYM_UNITY_BATCH})
    foreach(file ${ARGN})
      set_source_files_properties(${file} TARGET_DIRECTORY ${target}
                                  PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endforeach()
  endif()
endfunction()

# stacksym_module(NAME SOURCES files... [ALONE files...] DEPS libs...) — one static library per
# src/<module>. All modules are collected into the `stacksym` interface library.
function(stacksym_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;ALONE;DEPS" ${ARGN})
  add_library(stacksym_${name} STATIC ${ARG_SOURCES})
  stacksym_unity(stacksym_${name} ${ARG_ALONE})
  # PIC: the modules are linked into libstacksym.so (the C API) as well as the executables.
  set_target_properties(stacksym_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_link_libraries(stacksym_${name} PUBLIC ${ARG_DEPS})
  set_property(GLOBAL APPEND PROPERTY STACKSYM_MODULES stacksym_${name})
endfunction()

# stacksym_gtest(NAME SOURCES... [ALONE files...] [LIBS libs...] [DEPENDS targets...]
#                [LABELS labels...] [SERIAL])
# A GoogleTest binary registered with ctest, one ctest entry per test case. SERIAL: its cases
# run alone (timing-sensitive tests, such as sampling a workload for a few seconds).
# The compile flags every test file gets; the precompiled header below is built with the same.
function(stacksym_test_compile_flags target)
  # The tests' own code is compiled for compile time, not speed (the library keeps its -O2, or
  # the sanitizers' -O1): a test file took 12 s at -O2 and 8 s at -O0; under ASan and UBSan
  # 12.6 s and 7.7 s. gcc keeps -O1, where its flow warnings (-Werror) still look.
  if(STACKSYM_SANITIZE OR STACKSYM_FUZZ)
    target_compile_options(${target} PRIVATE -O0)
  else()
    target_compile_options(${target} PRIVATE -O1)
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    # gcc 12's false positives inside libstdc++'s inlined string code (std::string operator+),
    # which the precompiled header brings out at -O1; the library's code keeps these warnings.
    target_compile_options(${target} PRIVATE -Wno-array-bounds -Wno-stringop-overflow
                                             -Wno-restrict -Wno-stringop-overread)
  endif()
  target_link_libraries(${target} PRIVATE stacksym GTest::gtest)
  target_compile_definitions(${target} PRIVATE
    STACKSYM_FIXTURE_DIR="${STACKSYM_FIXTURE_DIR}"
    STACKSYM_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
    STACKSYM_BINARY_DIR="${CMAKE_BINARY_DIR}")
  if(STACKSYM_SANITIZE)
    # Tests that judge timing, or sweep many addresses, relax or thin out under ASan (~10x slower).
    target_compile_definitions(${target} PRIVATE STACKSYM_SANITIZED_BUILD=1)
  endif()
endfunction()

# One precompiled header for every test file: <gtest/gtest.h> alone took 3 s of each test
# file's compile (gcc -O1 and clang with the sanitizers alike), about 6 CPU minutes per tree
# over the 130 test files, which CI pays twice.
function(stacksym_test_pch)
  if(TARGET stacksym_test_pch)
    return()
  endif()
  set(anchor ${CMAKE_BINARY_DIR}/stacksym_test_pch.cc)
  file(WRITE ${anchor} "// The precompiled header's own translation unit.\n")
  add_library(stacksym_test_pch OBJECT ${anchor})
  stacksym_test_compile_flags(stacksym_test_pch)
  target_precompile_headers(stacksym_test_pch PRIVATE
    <gtest/gtest.h> <algorithm> <cstdint> <cstdio> <cstring> <filesystem> <fstream> <map>
    <memory> <set> <sstream> <string> <thread> <vector>)
endfunction()

function(stacksym_gtest name)
  cmake_parse_arguments(ARG "SERIAL" "TIMEOUT" "SOURCES;ALONE;LIBS;DEPENDS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  stacksym_unity(${name} ${ARG_ALONE})
  stacksym_test_pch()
  stacksym_test_compile_flags(${name})
  target_precompile_headers(${name} REUSE_FROM stacksym_test_pch)
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest_main)
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  # Built as a list so that an empty LABELS cannot swallow the next key (it once made every
  # test carry the label "RUN_SERIAL" and no test run serially).
  set(props TIMEOUT ${ARG_TIMEOUT})
  if(ARG_LABELS)
    list(APPEND props LABELS "${ARG_LABELS}")
  endif()
  if(ARG_SERIAL)
    list(APPEND props RUN_SERIAL TRUE)
  endif()
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60 PROPERTIES ${props})
endfunction()

# stacksym_fixture(NAME SOURCES src... [COMPILER cc] [FLAGS flags...] [POST_COMMANDS ...])
# Compiles a test fixture binary into ${STACKSYM_FIXTURE_DIR}/NAME at build time (no binaries
# are committed). POST_COMMANDS run after linking inside the fixture directory, each given as
# one quoted shell string (for strip, objcopy, dwz ...). Creates target fixture_NAME and
# appends it to the global STACKSYM_FIXTURES list.
set_property(GLOBAL PROPERTY STACKSYM_FIXTURES "")
function(stacksym_fixture name)
  cmake_parse_arguments(ARG "" "COMPILER" "SOURCES;FLAGS;POST_COMMANDS;OUTPUTS" ${ARGN})
  if(NOT ARG_COMPILER)
    set(ARG_COMPILER gcc)
  endif()
  set(srcs "")
  foreach(s ${ARG_SOURCES})
    list(APPEND srcs ${CMAKE_CURRENT_SOURCE_DIR}/${s})
  endforeach()
  set(out ${STACKSYM_FIXTURE_DIR}/${name})
  set(post "")
  foreach(p ${ARG_POST_COMMANDS})
    list(APPEND post COMMAND sh -c "${p}")
  endforeach()
  set(extra_outputs "")
  foreach(o ${ARG_OUTPUTS})
    list(APPEND extra_outputs ${STACKSYM_FIXTURE_DIR}/${o})
  endforeach()
  add_custom_command(
    OUTPUT ${out} ${extra_outputs}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${STACKSYM_FIXTURE_DIR}
    COMMAND ${ARG_COMPILER} ${ARG_FLAGS} -o ${out} ${srcs}
    ${post}
    WORKING_DIRECTORY ${STACKSYM_FIXTURE_DIR}
    DEPENDS ${srcs}
    COMMENT "fixture ${name}"
    VERBATIM)
  add_custom_target(fixture_${name} DEPENDS ${out} ${extra_outputs})
  set_property(GLOBAL APPEND PROPERTY STACKSYM_FIXTURES fixture_${name})
endfunction()
