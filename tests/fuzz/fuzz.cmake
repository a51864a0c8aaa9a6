# Fuzzing the data readers (tests/fuzz/fuzz_data.c) and the tracker's
# message decoders and job state machine (tests/fuzz/fuzz_msg.c) with libFuzzer.
# The fuzzers need clang's -fsanitize=fuzzer whatever compiler builds the
# rest, so they are built by a custom command with clang over the data
# layer's sources; skipped (with a message) when no clang can link a
# fuzzer.  Tests fuzz_libsvm, fuzz_csv and fuzz_msg (label "fuzz") run each for
# RALLY_FUZZ_SECONDS (default 20) from a seed corpus made by run_fuzz.sh.
set(RALLY_FUZZ_SECONDS 20 CACHE STRING "seconds each fuzz test runs")
find_program(RALLY_FUZZ_CLANG NAMES clang clang-16 clang-15 clang-14)
set(fuzz_ok FALSE)
if(RALLY_FUZZ_CLANG)
  set(probe ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe.c)
  file(WRITE ${probe} "#include <stddef.h>\n#include <stdint.h>\n"
       "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n")
  execute_process(COMMAND ${RALLY_FUZZ_CLANG} -fsanitize=fuzzer,address ${probe}
                          -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe
                  RESULT_VARIABLE probe_rc OUTPUT_QUIET ERROR_QUIET)
  if(probe_rc EQUAL 0)
    set(fuzz_ok TRUE)
  endif()
endif()
if(NOT fuzz_ok)
  message(STATUS "fuzz: clang with -fsanitize=fuzzer not found; fuzz tests skipped")
  return()
endif()

set(fuzz_dir ${CMAKE_CURRENT_LIST_DIR})
set(fuzz_flags -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -Wno-unused-parameter
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
    -I${CMAKE_SOURCE_DIR}/include -I${CMAKE_SOURCE_DIR}/src)
set(fuzz_srcs ${fuzz_dir}/fuzz_data.c ${RALLY_DATA_SRC} ${CMAKE_SOURCE_DIR}/src/util/err.c)
set(fuzz_bins "")
foreach(fmt libsvm csv)
  if(fmt STREQUAL "csv")
    set(csv 1)
  else()
    set(csv 0)
  endif()
  set(bin ${CMAKE_CURRENT_BINARY_DIR}/fuzz_${fmt})
  add_custom_command(OUTPUT ${bin}
                     COMMAND ${RALLY_FUZZ_CLANG} ${fuzz_flags} -DFUZZ_CSV=${csv} ${fuzz_srcs} -o ${bin}
                     DEPENDS ${fuzz_srcs} ${CMAKE_SOURCE_DIR}/src/data/data.h
                             ${CMAKE_SOURCE_DIR}/include/rally/data.h
                     COMMENT "Building libFuzzer target fuzz_${fmt}" VERBATIM)
  list(APPEND fuzz_bins ${bin})
  add_test(NAME fuzz_${fmt}
           COMMAND sh ${fuzz_dir}/run_fuzz.sh ${bin} ${fmt} ${RALLY_FUZZ_SECONDS}
                   $<TARGET_FILE:rally-datagen>)
  math(EXPR fuzz_timeout "${RALLY_FUZZ_SECONDS} + 120")
  set_tests_properties(fuzz_${fmt} PROPERTIES LABELS "fuzz" TIMEOUT ${fuzz_timeout})
endforeach()

set(fuzz_msg_srcs ${fuzz_dir}/fuzz_msg.c ${CMAKE_SOURCE_DIR}/src/tracker/msg.c
    ${CMAKE_SOURCE_DIR}/src/tracker/job.c ${CMAKE_SOURCE_DIR}/src/tracker/job_core.c
    ${CMAKE_SOURCE_DIR}/src/tracker/job_frames.c
    ${CMAKE_SOURCE_DIR}/src/tracker/job_watch.c ${CMAKE_SOURCE_DIR}/src/tracker/job_members.c
    ${CMAKE_SOURCE_DIR}/src/tracker/proto.c
    ${CMAKE_SOURCE_DIR}/src/util/err.c)
set(bin ${CMAKE_CURRENT_BINARY_DIR}/fuzz_msg)
add_custom_command(OUTPUT ${bin}
                   COMMAND ${RALLY_FUZZ_CLANG} ${fuzz_flags} ${fuzz_msg_srcs} -o ${bin}
                   DEPENDS ${fuzz_msg_srcs} ${CMAKE_SOURCE_DIR}/src/tracker/msg.h
                           ${CMAKE_SOURCE_DIR}/src/tracker/job.h
                           ${CMAKE_SOURCE_DIR}/src/tracker/job_int.h
                           ${CMAKE_SOURCE_DIR}/src/tracker/proto.h
                   COMMENT "Building libFuzzer target fuzz_msg" VERBATIM)
list(APPEND fuzz_bins ${bin})
add_test(NAME fuzz_msg
         COMMAND sh ${fuzz_dir}/run_fuzz.sh ${bin} msg ${RALLY_FUZZ_SECONDS}
                 $<TARGET_FILE:rally-datagen>)
set_tests_properties(fuzz_msg PROPERTIES LABELS "fuzz" TIMEOUT ${fuzz_timeout})
add_custom_target(data_fuzzers ALL DEPENDS ${fuzz_bins})

# The snapshot manifest's parser (tests/fuzz/fuzz_manifest.c): test
# fuzz_manifest (label "fuzz") runs it for RALLY_FUZZ_SECONDS from a seed
# corpus of the golden manifest and a few broken copies of it
# (tests/fuzz/snapshot_fuzz.sh).
set(fuzz_manifest_srcs ${fuzz_dir}/fuzz_manifest.c ${CMAKE_SOURCE_DIR}/src/snapshot/manifest.c
    ${CMAKE_SOURCE_DIR}/src/util/err.c)
set(fuzz_manifest_bin ${CMAKE_CURRENT_BINARY_DIR}/fuzz_manifest)
add_custom_command(OUTPUT ${fuzz_manifest_bin}
                   COMMAND ${RALLY_FUZZ_CLANG} ${fuzz_flags} ${fuzz_manifest_srcs}
                           ${JANSSON_LDFLAGS} ${XXHASH_LDFLAGS} ${SODIUM_LDFLAGS} -o ${fuzz_manifest_bin}
                   DEPENDS ${fuzz_manifest_srcs} ${CMAKE_SOURCE_DIR}/src/snapshot/snapshot.h
                           ${CMAKE_SOURCE_DIR}/src/snapshot/internal.h
                   COMMENT "Building libFuzzer target fuzz_manifest" VERBATIM)
add_custom_target(manifest_fuzzer ALL DEPENDS ${fuzz_manifest_bin})
add_test(NAME fuzz_manifest
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/fuzz/snapshot_fuzz.sh ${fuzz_manifest_bin}
                 ${CMAKE_SOURCE_DIR}/tests/snapshot_golden/demo/snap-00000007/MANIFEST.json
                 ${RALLY_FUZZ_SECONDS})
math(EXPR fuzz_timeout "${RALLY_FUZZ_SECONDS} + 120")
set_tests_properties(fuzz_manifest PROPERTIES LABELS "fuzz" TIMEOUT ${fuzz_timeout})
