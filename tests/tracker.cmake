# Tests of the tracker (src/tracker) and the launchers (tools/rally-run,
# tools/rally-tracker); include()d from tests/CMakeLists.txt.
#   tracker_test       cmocka: the embedded tracker against fake and real
#   tracker_recover_test  clients, in one process (threads; tests/unit/tracker_rig.h):
#                      the handshake and connections; recovery, heartbeats,
#                      a grow and observers
#   conn_test          cmocka: the tracker against strangers (floods, huge
#                      headers) and a loop stalled between poll and handling
#   job_<part>_test    cmocka: the job state machine alone, synchronously (no
#                      sockets, threads or sleeps; tests/unit/job_rig.h), and the
#                      message codecs: start, recover, watch, elastic, report
#   launcher_<case>    tests/jobs/launcher_test.sh <case>: rally-run and
#                      rally-tracker as processes, each case under timeout(1)
set(RALLY_TRACKER_TESTS_DIR ${CMAKE_CURRENT_LIST_DIR})

add_library(rally_test_tracker_rig STATIC ${RALLY_TRACKER_TESTS_DIR}/unit/tracker_rig.c)
target_link_libraries(rally_test_tracker_rig PUBLIC rally_static cmocka Threads::Threads)
foreach(t tracker_test tracker_recover_test)
  add_executable(${t} ${RALLY_TRACKER_TESTS_DIR}/unit/${t}.c)
  target_link_libraries(${t} rally_test_tracker_rig)
  add_test(NAME ${t} COMMAND ${t})
  set_tests_properties(${t} PROPERTIES LABELS "quick;threads" TIMEOUT 120)
endforeach()

add_executable(conn_test ${RALLY_TRACKER_TESTS_DIR}/unit/conn_test.c)
target_link_libraries(conn_test rally_static cmocka Threads::Threads)
add_test(NAME conn_test COMMAND conn_test)
set_tests_properties(conn_test PROPERTIES LABELS "quick;threads" TIMEOUT 60)

add_library(rally_test_job_rig STATIC ${RALLY_TRACKER_TESTS_DIR}/unit/job_rig.c)
target_link_libraries(rally_test_job_rig PUBLIC rally_static cmocka)
foreach(part start recover watch elastic report)
  add_executable(job_${part}_test ${RALLY_TRACKER_TESTS_DIR}/unit/job_${part}_test.c)
  target_link_libraries(job_${part}_test rally_test_job_rig)
  add_test(NAME job_${part}_test COMMAND job_${part}_test)
  set_tests_properties(job_${part}_test PROPERTIES LABELS "quick" TIMEOUT 10)
endforeach()

# Stand-in workers: prog knows nothing of rally; tworker speaks the tracker
# protocol through the internal client (no collective layer needed).
add_executable(rally_test_prog ${RALLY_TRACKER_TESTS_DIR}/progs/prog.c)
add_executable(rally_test_tworker ${RALLY_TRACKER_TESTS_DIR}/progs/tworker.c)
target_link_libraries(rally_test_tworker rally_static)

foreach(case usage nonexistent exit_code kill9 sigterm output finalize tracker_tool
             tracker_restart tracker_gone restart exhausted heartbeat kill9_recovering
             stopped_before_beat heartbeat_interval stalled_output own_exit report
             version sighup lines wrapper_kill9 output_dir)
  add_test(NAME launcher_${case}
           COMMAND sh ${RALLY_TRACKER_TESTS_DIR}/jobs/launcher_test.sh ${case}
                   $<TARGET_FILE:rally-run> $<TARGET_FILE:rally_test_prog>
                   $<TARGET_FILE:rally_test_tworker> $<TARGET_FILE:rally-tracker>)
  set_tests_properties(launcher_${case} PROPERTIES LABELS "quick" TIMEOUT 60
                       ENVIRONMENT RALLY_EXPECT_VERSION=${PROJECT_VERSION})
endforeach()

# Strangers flood the tracker's port during a job and a worker dies: the
# restarted worker still joins (tests/jobs/tracker_flood_test.sh).
add_executable(rally_test_flood ${RALLY_TRACKER_TESTS_DIR}/progs/flood.c)
add_test(NAME tracker_flood
         COMMAND sh ${RALLY_TRACKER_TESTS_DIR}/jobs/tracker_flood_test.sh $<TARGET_FILE:rally-run>
                 $<TARGET_FILE:recover> $<TARGET_FILE:rally_test_flood>)
set_tests_properties(tracker_flood PROPERTIES TIMEOUT 240)

# The launcher stopped longer than the heartbeat timeout: nobody is fenced
# (tests/jobs/tracker_stall_test.sh).
add_test(NAME tracker_stall
         COMMAND sh ${RALLY_TRACKER_TESTS_DIR}/jobs/tracker_stall_test.sh $<TARGET_FILE:rally-run>
                 $<TARGET_FILE:recover>)
set_tests_properties(tracker_stall PROPERTIES TIMEOUT 240)
