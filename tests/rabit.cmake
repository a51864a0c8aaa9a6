# Tests of rabit's C API (include/rally/rabit_c_api.h, src/api/rabit.c),
# include()d from tests/CMakeLists.txt: programs written to rabit's C API,
# linked with the shared libraries as a rabit user links -lrabit (or
# -lrabit_mock), run under rally-run.
foreach(lib rally rally_mock)
  foreach(prog basic model_recover)
    set(t rabit_${prog})
    if(lib STREQUAL rally_mock)
      set(t ${t}_mock)
    endif()
    add_executable(${t} rabit/${prog}.c)
    target_include_directories(${t} PRIVATE ${CMAKE_SOURCE_DIR}/include)
    target_link_libraries(${t} ${lib}_shared)
  endforeach()
endforeach()

foreach(n 1 3 4)
  add_test(NAME rabit_basic_n${n}
           COMMAND ${CMAKE_COMMAND} -E env "GREP=rabit_basic_ok rank 0 of ${n} checked 38"
                   ${RUN_JOB} 0 30 $<TARGET_FILE:rally-run> -n ${n} $<TARGET_FILE:rabit_basic>)
  set_tests_properties(rabit_basic_n${n} PROPERTIES TIMEOUT 80 LABELS "quick;rabit")
endforeach()
# rabit's argument spellings: a rabit_* setting rally cannot honour is named
# and ignored, rally's own settings still work.
add_test(NAME rabit_args
         COMMAND ${CMAKE_COMMAND} -E env "GREP=rabit_reduce_buffer=256MB has no rally equivalent"
                 ${RUN_JOB} 0 30 $<TARGET_FILE:rally-run> -n 2 $<TARGET_FILE:rabit_basic>
                 rabit_reduce_buffer=256MB rally_spin_us=0)
# ... once per job, not per rank and restart: rank 0's first start says it
# (rank 1 dies and is restarted).
add_test(NAME rabit_args_warned_once
         COMMAND sh -c "out=$(\"$0\" 0 60 \"$@\" 2>&1) || { echo \"$out\"; exit 1; }; \
                 echo \"$out\"; \
                 [ $(echo \"$out\" | grep -c 'rabit_reduce_buffer=256MB has no rally equivalent') -eq 1 ]"
                 ${RUN_JOB} $<TARGET_FILE:rally-run> -n 3 $<TARGET_FILE:rabit_model_recover_mock>
                 100 3 rabit_reduce_buffer=256MB mock=1,1,0,0)
set_tests_properties(rabit_args_warned_once PROPERTIES TIMEOUT 80 LABELS "quick;rabit")
# A bad data type ends the worker with rabit's kind of message, and the job.
add_test(NAME rabit_bad_dtype
         COMMAND ${CMAKE_COMMAND} -E env "GREP=rabit: RabitAllreduce: data type 10"
                 ${RUN_JOB} nonzero 30 $<TARGET_FILE:rally-run> -n 2 --max-restarts 0
                 $<TARGET_FILE:rabit_basic> baddtype)
# mock= without the mock library: RabitInit says so and fails.
add_test(NAME rabit_mock_needs_library
         COMMAND ${CMAKE_COMMAND} -E env "GREP=needs the failure-injection library"
                 ${RUN_JOB} nonzero 30 $<TARGET_FILE:rally-run> -n 2 --max-restarts 0
                 $<TARGET_FILE:rabit_model_recover> 100 2 mock=1,1,0,0)
set_tests_properties(rabit_args rabit_bad_dtype rabit_mock_needs_library PROPERTIES
                     TIMEOUT 80 LABELS "quick;rabit")

# rabit's checkpoint example with rabit's mock= kill points (the guide's
# example among them): the digest of the run without failures, exact deaths.
set(RABIT_RECOVER ${CMAKE_CURRENT_SOURCE_DIR}/rabit_recover_test.sh $<TARGET_FILE:rally-run>
    $<TARGET_FILE:rabit_model_recover> $<TARGET_FILE:rabit_model_recover_mock>)
# name | N | deaths | mode | kill points (seq: 0, 1 the allreduces, 2 the broadcast)
# mock= takes rally_mock's group field too (points naming the same group die
# together; run_job.sh gives the job its rally_mock_sync directory): "group"
# checks that it reaches librally_mock.  The other cases need no group: their
# deaths lie at different versions, each after the previous death's recovery.
set(RABIT_RECOVER_CASES
  "guide|10|3|plain|mock=0,0,1,0 mock=1,1,1,0 mock=1,1,1,1"
  "broadcast|4|1|plain|mock=2,2,2,0"
  "local|4|2|local|mock=1,1,0,0 mock=2,2,1,0"
  "lazy|4|2|lazy|mock=3,1,2,0 mock=0,2,0,0"
  "group|4|2|plain|mock=1,2,1,0,op,g mock=3,2,1,0,op,g")
foreach(c ${RABIT_RECOVER_CASES})
  string(REPLACE "|" ";" parts "${c}")
  list(GET parts 0 name)
  list(GET parts 1 n)
  list(GET parts 2 deaths)
  list(GET parts 3 mode)
  list(GET parts 4 points)
  separate_arguments(points UNIX_COMMAND "${points}")
  add_test(NAME rabit_recover_${name} COMMAND ${RABIT_RECOVER} ${n} ${deaths} ${mode} ${points})
  set_tests_properties(rabit_recover_${name} PROPERTIES TIMEOUT 300 LABELS "rabit")
endforeach()
