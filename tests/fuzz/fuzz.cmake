# fuzz.cmake - the fuzz targets of tests/fuzz/, included by tests/CMakeLists.txt.
#
# One source per target, fuzz_<name>.c, with its seed corpus in
# corpus/<name>/.  Two ways to build them:
#   - FAUCET_FUZZ=ON (clang, see the top-level CMakeLists.txt): libFuzzer
#     programs fuzz_<name>; each ctest test fuzzes for FAUCET_FUZZ_SECONDS
#     and fails on any crash, leak, sanitizer report or broken property.
#     New inputs go to the build directory, never into the source tree.
#   - otherwise: plain programs fuzz_replay_<name> (the target + replay.c)
#     whose ctest test runs the checked-in corpus once, in every build.

set(FAUCET_FUZZ_SECONDS 20 CACHE STRING "Seconds each libFuzzer ctest test fuzzes for")
set(FAUCET_FUZZ_MAX_LEN 4096 CACHE STRING "Largest input libFuzzer generates, in bytes")
# A fixed seed makes each CI run walk the same input sequence, so the gate
# cannot turn red by chance on an unrelated change; 0 = a random seed per
# run, for exploratory fuzzing (cmake -DFAUCET_FUZZ_SEED=0).
set(FAUCET_FUZZ_SEED 1 CACHE STRING "libFuzzer -seed (0 = random)")

set(FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
set(FUZZ_TARGETS value key export envelope backfill_plan backfill_expand config etcd_grpc)
if(EXISTS ${CMAKE_SOURCE_DIR}/src/stores/file.c)
  list(APPEND FUZZ_TARGETS file_store file_names)
endif()

# Targets that read JSON get a dictionary of its tokens.
set(FUZZ_DICT_value ${FUZZ_DIR}/json.dict)
set(FUZZ_DICT_export ${FUZZ_DIR}/json.dict)
set(FUZZ_DICT_file_store ${FUZZ_DIR}/json.dict)
# The backfill targets get the tokens of times, windows and placeholders.
set(FUZZ_DICT_backfill_plan ${FUZZ_DIR}/backfill_plan.dict)
set(FUZZ_DICT_backfill_expand ${FUZZ_DIR}/backfill_expand.dict)

if(FAUCET_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "FAUCET_FUZZ needs clang with libFuzzer (configure with CC=clang-14)")
  endif()
  add_custom_target(fuzz_targets)
endif()

foreach(t ${FUZZ_TARGETS})
  set(seeds ${FUZZ_DIR}/corpus/${t})
  if(FAUCET_FUZZ)
    set(exe fuzz_${t})
    add_executable(${exe} ${FUZZ_DIR}/fuzz_${t}.c ${FUZZ_EXTRA_SOURCES_${t}})
    target_link_options(${exe} PRIVATE -fsanitize=fuzzer)
    add_dependencies(fuzz_targets ${exe})
    set(work ${CMAKE_BINARY_DIR}/fuzz/${t})
    file(MAKE_DIRECTORY ${work}/corpus ${work}/artifacts)
    set(dict)
    if(FUZZ_DICT_${t})
      set(dict -dict=${FUZZ_DICT_${t}})
    endif()
    add_test(NAME ${exe} COMMAND ${exe}
      -max_total_time=${FAUCET_FUZZ_SECONDS} -max_len=${FAUCET_FUZZ_MAX_LEN}
      -seed=${FAUCET_FUZZ_SEED}
      -timeout=10 -print_final_stats=1 -artifact_prefix=${work}/artifacts/ ${dict}
      ${work}/corpus ${seeds})
    set_tests_properties(${exe} PROPERTIES LABELS fuzz
      TIMEOUT 300 ENVIRONMENT "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
  else()
    set(exe fuzz_replay_${t})
    add_executable(${exe} ${FUZZ_DIR}/fuzz_${t}.c ${FUZZ_DIR}/replay.c
                   ${FUZZ_EXTRA_SOURCES_${t}})
    add_test(NAME ${exe} COMMAND ${exe} ${seeds})
    set_tests_properties(${exe} PROPERTIES LABELS fuzz TIMEOUT 120)
  endif()
  target_include_directories(${exe} PRIVATE ${FUZZ_DIR} ${CMAKE_SOURCE_DIR}/src/util
                             ${CMAKE_SOURCE_DIR}/src/common
                             ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(${exe} PRIVATE faucet_static ${FUZZ_EXTRA_LIBS_${t}})
endforeach()
