# One helper per kind of target, so every module, test, fuzzer and benchmark is declared alike.

function(hepd_apply_warnings target)
  target_compile_options(${target} PRIVATE ${HEPD_WARNINGS})
endfunction()

# hepd_module(name SOURCES a.cpp ... DEPS lib ...): static library hepd_<name> (alias hepd::<name>)
# whose headers are included as "<name>/file.hpp" from daemon/.
function(hepd_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(hepd_${name} STATIC ${ARG_SOURCES})
  add_library(hepd::${name} ALIAS hepd_${name})
  target_include_directories(hepd_${name} PUBLIC ${PROJECT_SOURCE_DIR}/daemon
                                                 ${PROJECT_BINARY_DIR}/generated)
  target_link_libraries(hepd_${name} PUBLIC ${ARG_DEPS})
  # generated/core/version.hpp is rewritten (when the commit changed) before anything compiles.
  add_dependencies(hepd_${name} hepd_version)
  hepd_apply_warnings(hepd_${name})
endfunction()

# hepd_test(name SOURCES ... LIBS ... [LABELS ...] [CATALOGUE]): a Catch2 executable registered with
# ctest, one ctest entry per executable (Catch2 reports the cases itself); CATALOGUE adds a second
# entry, name_catalogue, running only its [catalogue] cases.
function(hepd_test name)
  cmake_parse_arguments(ARG "CATALOGUE" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} hepd_catch_main)
  add_dependencies(${name} hepd_version)  # some include core/version.hpp
  target_compile_definitions(${name} PRIVATE HEPD_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  hepd_apply_warnings(${name})
  add_test(NAME ${name} COMMAND ${name} --order rand --rng-seed 1 --warn NoAssertions)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "${ARG_LABELS}")
  # The bad-input catalogue (tests/CATALOGUE.md) once more on its own: `ctest -R catalogue`.
  # Catch fails when no test case carries the tag, so a lost tag shows.
  if(ARG_CATALOGUE)
    add_test(NAME ${name}_catalogue COMMAND ${name} "[catalogue]")
    set_tests_properties(${name}_catalogue PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS catalogue)
  endif()
endfunction()

# hepd_fuzz(name SOURCE file LIBS ...): a libFuzzer target when HEPD_FUZZ is on; otherwise a
# replay executable that runs the seed and crash corpus under plain ctest.
function(hepd_fuzz name)
  cmake_parse_arguments(ARG "" "SOURCE" "LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCE})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS})
  hepd_apply_warnings(${name})
  set(corpus ${CMAKE_CURRENT_SOURCE_DIR}/corpus/${name})
  if(HEPD_FUZZ)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    add_test(NAME ${name}_replay COMMAND ${name} -runs=0 ${corpus})
  else()
    target_link_libraries(${name} PRIVATE hepd_fuzz_replay_main)
    add_test(NAME ${name}_replay COMMAND ${name} ${corpus})
  endif()
  set_tests_properties(${name}_replay PROPERTIES TIMEOUT 120 LABELS fuzz)
endfunction()

# hepd_bench(name SOURCES ... LIBS ...): a Google Benchmark executable; never a ctest test.
function(hepd_bench name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} benchmark::benchmark_main)
  hepd_apply_warnings(${name})
endfunction()

# hepd_runnable(var target): how a test script starts one of the project's programs: the program
# itself, or in a cross build a wrapper that starts it under CMAKE_CROSSCOMPILING_EMULATOR
# (qemu-user), since ctest adds the emulator only to the commands it starts itself.
function(hepd_runnable var target)
  if(CMAKE_CROSSCOMPILING_EMULATOR)
    list(JOIN CMAKE_CROSSCOMPILING_EMULATOR " " emulator)
    set(wrapper ${CMAKE_BINARY_DIR}/emulated/${target})
    file(GENERATE OUTPUT ${wrapper}
         CONTENT "#!/bin/sh\nexec ${emulator} \"$<TARGET_FILE:${target}>\" \"$@\"\n"
         FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                          WORLD_READ WORLD_EXECUTE)
    set(${var} ${wrapper} PARENT_SCOPE)
  else()
    set(${var} $<TARGET_FILE:${target}> PARENT_SCOPE)
  endif()
endfunction()
