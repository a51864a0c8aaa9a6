# Tests of durable snapshots (src/snapshot, tools/rally-snapshot);
# include()d from the top-level CMakeLists.txt.
#   snapshot_<part>_test  cmocka (tests/unit/snapshot_rig.h): format (the golden
#                      snapshot, damaged snapshots, manifests), write (the
#                      durable write's call order and fault points), jobdir
#                      (listing, latest, retention, the lock), bg (the
#                      background writer), reader (resume checks, the public
#                      reader), copy (the second tier) (labels "quick",
#                      "threads")
#   snapshot_tool      rally-snapshot end to end, over snapshots snapshot_mk
#                      writes (label "quick")
#   snapshot_kill9     kill -9 of a writer at seeded moments (below)
#   fuzz_manifest      the manifest parser under libFuzzer (tests/fuzz/fuzz.cmake)
set(RALLY_SNAP_TESTS_DIR ${CMAKE_CURRENT_LIST_DIR})
add_library(rally_test_snapshot_rig STATIC ${RALLY_SNAP_TESTS_DIR}/unit/snapshot_rig.c)
target_link_libraries(rally_test_snapshot_rig PUBLIC rally_static cmocka)
foreach(part format write jobdir bg reader copy)
  add_executable(snapshot_${part}_test ${RALLY_SNAP_TESTS_DIR}/unit/snapshot_${part}_test.c)
  target_link_libraries(snapshot_${part}_test rally_test_snapshot_rig)
  # Paths in fixed buffers are long enough here; GCC cannot see it (clang
  # has no such warning).
  if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
    target_compile_options(snapshot_${part}_test PRIVATE -Wno-format-truncation)
  endif()
  # the parts that read the golden snapshot are given its directory
  if(part MATCHES "^(format|reader)$")
    set(snapshot_golden_arg ${RALLY_SNAP_TESTS_DIR}/snapshot_golden)
  else()
    set(snapshot_golden_arg)
  endif()
  add_test(NAME snapshot_${part}_test COMMAND snapshot_${part}_test ${snapshot_golden_arg})
  set_tests_properties(snapshot_${part}_test PROPERTIES LABELS "quick;threads" TIMEOUT 120)
endforeach()

add_executable(snapshot_mk ${RALLY_SNAP_TESTS_DIR}/rigs/snapshot_mk.c)
target_link_libraries(snapshot_mk rally_static)
add_test(NAME snapshot_tool
         COMMAND sh ${RALLY_SNAP_TESTS_DIR}/jobs/snapshot_tool_test.sh $<TARGET_FILE:rally-snapshot>
                 $<TARGET_FILE:snapshot_mk> $<TARGET_FILE:rally-kmeans> $<TARGET_FILE:rally-datagen>
                 ${RALLY_SNAP_TESTS_DIR}/snapshot_golden)
set_tests_properties(snapshot_tool PROPERTIES LABELS "quick" TIMEOUT 120)

# kill -9 in the middle of a snapshot write, at seeded moments (SNAP_KILL_SEED
# overrides the seed): a torn snapshot never verifies, a committed one does.
if(DEFINED ENV{SNAP_KILL_SEED})
  set(SNAP_KILL_SEED $ENV{SNAP_KILL_SEED})
else()
  set(SNAP_KILL_SEED 20261130)
endif()
add_test(NAME snapshot_kill9
         COMMAND sh ${RALLY_SNAP_TESTS_DIR}/jobs/snapshot_kill_test.sh $<TARGET_FILE:rally-snapshot>
                 $<TARGET_FILE:snapshot_mk> ${SNAP_KILL_SEED} 12)
set_tests_properties(snapshot_kill9 PROPERTIES TIMEOUT 180)

# Durable snapshots of a real job (rally-run --snapshot-dir, rally-kmeans):
# the whole job killed and resumed bit-identically, the RFC's stale-snapshot
# scenario, the directory lock, worker deaths while snapshotting, resume checks.
set(RALLY_RESUME_CASES kill9 rfc lock death resume_checks write_error local usr1 auto seeded owner
    every_ms every_ms_rule preempt preempt_periodic final busy input request void tier_dir)
if(RALLY_S3)
  list(APPEND RALLY_RESUME_CASES tier_s3)
endif()
foreach(c ${RALLY_RESUME_CASES})
  add_test(NAME snapshot_resume_${c}
           COMMAND sh ${RALLY_SNAP_TESTS_DIR}/jobs/snapshot_resume_test.sh ${c} ${CMAKE_BINARY_DIR})
  set_tests_properties(snapshot_resume_${c} PROPERTIES TIMEOUT 300 LABELS "snapshot")
endforeach()

# What a snapshot costs a job (bench/snapshot_bench.c; bench/snapshot.sh,
# part of make bench, prints the table).  Built here, in the build
# directory's top, because snapshot_resume_busy runs it too.
add_executable(snapshot_bench ${RALLY_SNAP_TESTS_DIR}/../bench/snapshot_bench.c)
target_link_libraries(snapshot_bench rally_static)
add_executable(snapshot_bench_mock ${RALLY_SNAP_TESTS_DIR}/../bench/snapshot_bench.c)
target_link_libraries(snapshot_bench_mock rally_mock_static)

if(RALLY_S3)
  # The S3 store's classes of HTTP status, against a canned server on
  # 127.0.0.1 (no S3 needed): 5xx tried again, 4xx never, each its sentence.
  add_executable(s3_status_test ${RALLY_SNAP_TESTS_DIR}/unit/s3_status_test.c)
  target_link_libraries(s3_status_test rally_static cmocka Threads::Threads)
  add_test(NAME s3_status_test COMMAND s3_status_test)
  set_tests_properties(s3_status_test PROPERTIES LABELS "quick;snapshot" TIMEOUT 60)

  # Snapshots on an object store: a real S3 API (OpenStack Swift with s3api,
  # started on 127.0.0.1 by tests/rigs/swift_rig.sh), the torture cases of
  # snapshot_s3_test.c and rally-snapshot on s3:// URLs.
  add_executable(snapshot_s3_test ${RALLY_SNAP_TESTS_DIR}/unit/snapshot_s3_test.c)
  target_link_libraries(snapshot_s3_test rally_static cmocka)
  if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
    target_compile_options(snapshot_s3_test PRIVATE -Wno-format-truncation)
  endif()
  set(RALLY_S3_PY "")
  if(RALLY_PYTHON AND NOT RALLY_SANITIZE)
    set(RALLY_S3_PY ${RALLY_PYTHON} ${CMAKE_BINARY_DIR}/python)
  endif()
  add_test(NAME snapshot_s3
           COMMAND sh ${RALLY_SNAP_TESTS_DIR}/jobs/snapshot_s3_test.sh $<TARGET_FILE:snapshot_s3_test>
                   $<TARGET_FILE:rally-snapshot> $<TARGET_FILE:snapshot_mk> ${RALLY_S3_PY})
  set_tests_properties(snapshot_s3 PROPERTIES LABELS "snapshot;s3" TIMEOUT 360)
  add_test(NAME swift_rig COMMAND sh ${RALLY_SNAP_TESTS_DIR}/jobs/swift_rig_test.sh)
  set_tests_properties(swift_rig PROPERTIES LABELS "s3" TIMEOUT 240)
else()
  # Built without it: an s3:// root is refused with the option that builds
  # it, and librally needs neither libcurl nor expat.
  add_test(NAME snapshot_no_s3
           COMMAND sh ${RALLY_SNAP_TESTS_DIR}/jobs/snapshot_no_s3_test.sh $<TARGET_FILE:rally-snapshot>
                   $<TARGET_FILE:rally_shared>)
  set_tests_properties(snapshot_no_s3 PROPERTIES LABELS "quick;snapshot" TIMEOUT 60)
endif()

# The second tier against retention, deaths, a wrong tier and elastic jobs
# (tests/jobs/tier2_test.sh, over tests/progs/tier_hold.c, which holds one copy
# at a chosen version so that the rest of the job happens meanwhile).
add_executable(tier_hold ${RALLY_SNAP_TESTS_DIR}/progs/tier_hold.c)
target_link_libraries(tier_hold rally_static)
add_executable(tier_hold_mock ${RALLY_SNAP_TESTS_DIR}/progs/tier_hold.c)
target_link_libraries(tier_hold_mock rally_mock_static)
set(RALLY_TIER2_CASES retention lost verdict elastic required fresh)
if(RALLY_S3)
  list(APPEND RALLY_TIER2_CASES wrong_secret bad_bucket)
endif()
foreach(c ${RALLY_TIER2_CASES})
  add_test(NAME tier2_${c}
           COMMAND sh ${RALLY_SNAP_TESTS_DIR}/jobs/tier2_test.sh ${c} ${CMAKE_BINARY_DIR})
  set_tests_properties(tier2_${c} PROPERTIES TIMEOUT 300 LABELS "snapshot")
endforeach()
if(RALLY_S3)
  set_tests_properties(tier2_wrong_secret tier2_bad_bucket PROPERTIES LABELS "snapshot;s3")
endif()
