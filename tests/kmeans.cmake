# Tests of examples/kmeans (rally-kmeans); include()d from tests/CMakeLists.txt.
# Each case is one tests/jobs/kmeans_test.sh run (its header says what each pins);
# every job in it is bounded in time and must leave no process behind.  The
# scikit-learn reference needs Debian's python3-sklearn (scripts/deps.sh).
set(RALLY_KMEANS_CASES help sklearn nagree mock_allreduce mock_checkpoint mock_init kill9
    input_changed malformed files)
foreach(c ${RALLY_KMEANS_CASES})
  add_test(NAME kmeans_${c}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/jobs/kmeans_test.sh ${c} ${CMAKE_BINARY_DIR})
  set_tests_properties(kmeans_${c} PROPERTIES TIMEOUT 300 LABELS "quick;kmeans")
endforeach()

# Errors found at a job's start are the job's error (tests/jobs/start_error_test.sh):
# the cause once, no epoch, no restart, deaths=0, exit status 4.
foreach(c typo mock_lib resume_args)
  add_test(NAME start_error_${c}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/jobs/start_error_test.sh ${c} ${CMAKE_BINARY_DIR})
  set_tests_properties(start_error_${c} PROPERTIES TIMEOUT 180 LABELS "quick;kmeans")
endforeach()

# Elastic jobs (rally-run --min-workers, tests/jobs/elastic_test.sh): a rank that
# cannot come back is given up and the others go on, renumbered.
foreach(c shrink kill9 restart_first during_recovery below_min auto_resume local_refused trainers in_finalize
          grow chaos
          records grow_records grow_early shrink_first snapshot)
  add_test(NAME elastic_${c}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/jobs/elastic_test.sh ${c} ${CMAKE_BINARY_DIR})
  set_tests_properties(elastic_${c} PROPERTIES TIMEOUT 300 LABELS "quick;kmeans;elastic")
endforeach()
