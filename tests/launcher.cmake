# Unit tests of the launcher's parts (tools/launch); include()d from
# tests/CMakeLists.txt.  The launcher as processes: tracker.cmake.
#   launch_policy_<part>_test  cmocka: rally-run's restart policy, synchronously
#                      (tests/unit/launch_policy_rig.h): restart (deaths, fences,
#                      signals, stuck ranks), end (verdicts), hosts (elastic
#                      jobs, ranks on other hosts)
add_library(rally_test_launch_policy_rig STATIC ${CMAKE_CURRENT_LIST_DIR}/unit/launch_policy_rig.c)
target_link_libraries(rally_test_launch_policy_rig PUBLIC rally_launch cmocka)
foreach(part restart end hosts)
  add_executable(launch_policy_${part}_test ${CMAKE_CURRENT_LIST_DIR}/unit/launch_policy_${part}_test.c)
  target_link_libraries(launch_policy_${part}_test rally_test_launch_policy_rig)
  add_test(NAME launch_policy_${part}_test COMMAND launch_policy_${part}_test)
  set_tests_properties(launch_policy_${part}_test PROPERTIES LABELS "quick" TIMEOUT 30)
endforeach()

# rally-run's stdout into a pipe whose reader stalls (tools/launch/out.h):
#   launch_output_slow_reader  a real job floods stdout while its reader
#                              sleeps past the heartbeat timeout: no fence, no
#                              restart, the failure-free digest, no line lost
#   launch_output_drop         a reader that drains only at the end: lines beyond
#                              the bound are dropped and counted, never waited for
add_executable(rally_test_chatty ${CMAKE_CURRENT_LIST_DIR}/progs/chatty.c)
target_link_libraries(rally_test_chatty rally_static)
foreach(case slow_reader drop)
  add_test(NAME launch_output_${case}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/jobs/launch_output_test.sh ${case}
                   $<TARGET_FILE:rally-run> $<TARGET_FILE:rally_test_prog>
                   $<TARGET_FILE:rally_test_chatty>)
  set_tests_properties(launch_output_${case} PROPERTIES LABELS "quick" TIMEOUT 120)
endforeach()

#   launch_hosts_test   cmocka: host lists and labels, hostfiles, Slurm's slots,
#                       placement, the domains a layout leaves uncovered, the
#                       wrappers' command lines, the agent's verdicts
add_executable(launch_hosts_test ${CMAKE_CURRENT_LIST_DIR}/unit/launch_hosts_test.c)
target_link_libraries(launch_hosts_test rally_launch cmocka)
add_test(NAME launch_hosts_test COMMAND launch_hosts_test)
set_tests_properties(launch_hosts_test PROPERTIES LABELS "quick" TIMEOUT 30)

#   launch_out_test     cmocka: rally-run's output queues over a stalled pipe
add_executable(launch_out_test ${CMAKE_CURRENT_LIST_DIR}/unit/launch_out_test.c)
target_link_libraries(launch_out_test rally_launch cmocka)
add_test(NAME launch_out_test COMMAND launch_out_test)
set_tests_properties(launch_out_test PROPERTIES LABELS "quick" TIMEOUT 30)

# rally-run's ssh and mpirun launchers for real (tests/jobs/launch_remote_test.sh
# says what each case pins): an sshd of the test's own on 127.0.0.2 and
# 127.0.0.3 (it must start: the case fails, never skips), rally-agent on the
# "hosts", k-means digests against the local run's, the failure lines.
foreach(case ssh_digest ssh_kill9 ssh_lost ssh_unreachable ssh_notfound ssh_exit ssh_kill_run
             ssh_secret ssh_signal ssh_python ssh_snapshot_env dry_run domains mpirun)
  add_test(NAME launch_remote_${case}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/jobs/launch_remote_test.sh ${case} ${CMAKE_BINARY_DIR})
  set_tests_properties(launch_remote_${case} PROPERTIES TIMEOUT 300 LABELS "remote")
endforeach()

# What rally-run makes of its environment on this host (tests/jobs/launch_env_test.sh
# says what each case pins): the snapshot settings as its flags, -x, the
# secret's directories of launchers killed by SIGKILL.
foreach(case snapshot_env export_local tmpdir_sweep torchrun not_on_path)
  add_test(NAME launch_env_${case}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/jobs/launch_env_test.sh ${case} ${CMAKE_BINARY_DIR})
  set_tests_properties(launch_env_${case} PROPERTIES TIMEOUT 180)
endforeach()

#   watch_test          cmocka: what an observer sees (tools/watch/watch.h): the
#                       status document, the metrics, the rank waited for, the
#                       events file, the progress line
add_executable(watch_test ${CMAKE_CURRENT_LIST_DIR}/unit/watch_test.c)
target_link_libraries(watch_test rally_watch cmocka)
add_test(NAME watch_test COMMAND watch_test)
set_tests_properties(watch_test PROPERTIES LABELS "quick" TIMEOUT 30)

#   http_test           cmocka: the status server (tools/watch/http.h) on loopback:
#                       the token, 200 idle connections, a stalled reader, the limit
add_executable(http_test ${CMAKE_CURRENT_LIST_DIR}/unit/http_test.c)
target_link_libraries(http_test rally_watch cmocka Threads::Threads)
add_test(NAME http_test COMMAND http_test)
set_tests_properties(http_test PROPERTIES LABELS "quick" TIMEOUT 60)

# rally-run's views of a running job as a person and a monitoring system see
# them (tests/jobs/status_test.py says what each case pins): --status, --events,
# `rally-run status`, the token off loopback (a network namespace of the
# test's own), --progress, Debian's prometheus scraping /metrics and Debian's
# chromium loading the page, each through a kill -9.
foreach(case job token progress prometheus page)
  add_test(NAME status_${case}
           COMMAND ${RALLY_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/jobs/status_test.py ${case} ${CMAKE_BINARY_DIR})
  set_tests_properties(status_${case} PROPERTIES TIMEOUT 300 LABELS "status")
endforeach()
set_tests_properties(status_job status_progress PROPERTIES LABELS "status;quick")
# What losing one host would take, said at the start, again after a growth,
# and shown (status_test.py's redundancy case; docs/launch.md, "Failure domains").
add_test(NAME status_redundancy
         COMMAND ${RALLY_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/jobs/status_test.py redundancy ${CMAKE_BINARY_DIR})
set_tests_properties(status_redundancy PROPERTIES TIMEOUT 300 LABELS "status")
