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
set(RABIT_RECOVER ${CMAKE_CURRENT_SOURCE_DIR}/jobs/rabit_recover_test.sh $<TARGET_FILE:rally-run>
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

# rabit's C++ API (include/rabit, header-only over the C API): our own
# programs written to it, linked to the shared libraries as -lrabit,
# -lrabit_mock and -lrabit_mpi link them.  The guide's examples check their
# own results; the recovery programs run at 10 workers under the kill
# points of rabit's own test makefile (its "die hard" list) under rally-run
# and under a dmlc tracker, and end with the failure-free run's digest.
add_executable(rabit_cxx_guide rabit/guide.cc)
set(RABIT_CXX rabit_cxx_guide rabit_cxx_recover rabit_cxx_recover_mock)
add_executable(rabit_cxx_recover rabit/recover.cc)
add_executable(rabit_cxx_recover_mock rabit/recover.cc)
target_link_libraries(rabit_cxx_guide rally_shared)
target_link_libraries(rabit_cxx_recover rally_shared)
target_link_libraries(rabit_cxx_recover_mock rally_mock_shared)
if(TARGET rally_mpi_shared)
  add_executable(rabit_cxx_recover_mpi rabit/recover.cc)
  target_link_libraries(rabit_cxx_recover_mpi rally_mpi_shared)
  list(APPEND RABIT_CXX rabit_cxx_recover_mpi)
endif()
foreach(t ${RABIT_CXX})
  # only what an installed rally gives: include/ (rally/ and rabit/)
  set_target_properties(${t} PROPERTIES INCLUDE_DIRECTORIES ${CMAKE_SOURCE_DIR}/include)
endforeach()
foreach(c basic broadcast lazy_allreduce reducer)
  add_test(NAME rabit_cxx_${c}
           COMMAND ${CMAKE_COMMAND} -E env "GREP=guide_ok ${c} rank 3 of 4 distributed 1"
                   ${RUN_JOB} 0 30 $<TARGET_FILE:rally-run> -n 4 $<TARGET_FILE:rabit_cxx_guide> ${c})
endforeach()
add_test(NAME rabit_cxx_stream
         COMMAND ${CMAKE_COMMAND} -E env "GREP=guide_ok stream rank 0 of 1 distributed 0"
                 ${RUN_JOB} 0 30 $<TARGET_FILE:rabit_cxx_guide> stream)
set_tests_properties(rabit_cxx_basic rabit_cxx_broadcast rabit_cxx_lazy_allreduce rabit_cxx_reducer
                     rabit_cxx_stream
                     PROPERTIES TIMEOUT 60 LABELS "quick;rabit")
set(RABIT_CXX_TEST ${CMAKE_CURRENT_SOURCE_DIR}/jobs/rabit_cxx_test.sh $<TARGET_FILE:rally-run>
    $<TARGET_FILE:rabit_cxx_recover> $<TARGET_FILE:rabit_cxx_recover_mock>)
set(RABIT_DIE_HARD mock=0,0,1,0 mock=1,1,1,0 mock=1,1,1,1 mock=0,1,1,0 mock=4,1,1,0 mock=9,1,1,0
    mock=8,1,2,0 mock=4,1,3,0)
foreach(launcher rally-run dmlc)
  foreach(mode model local lazy)
    add_test(NAME rabit_cxx_${launcher}_${mode}
             COMMAND ${RABIT_CXX_TEST} ${launcher} ${mode} ${RABIT_DIE_HARD})
    set_tests_properties(rabit_cxx_${launcher}_${mode} PROPERTIES TIMEOUT 300 LABELS "rabit")
  endforeach()
endforeach()
# Negative control: a restarted worker that throws away the local model it
# loaded ends with another digest, and the test says so.
add_test(NAME rabit_cxx_forget_detected
         COMMAND ${RABIT_CXX_TEST} rally-run local,forget mock=1,1,1,0)
set_tests_properties(rabit_cxx_forget_detected PROPERTIES TIMEOUT 300 LABELS "rabit"
                     PASS_REGULAR_EXPRESSION "digests differ")
# What rally adds with no change to the program: a durable snapshot, resumed.
add_test(NAME rabit_cxx_snapshot_resume COMMAND ${RABIT_CXX_TEST} snapshot model,local,lazy)
set_tests_properties(rabit_cxx_snapshot_resume PROPERTIES TIMEOUT 300 LABELS "rabit;snapshot")
if(TARGET rabit_cxx_recover_mpi)
  add_test(NAME rabit_cxx_mpi
           COMMAND ${RABIT_CXX_TEST} mpi model,local,lazy $<TARGET_FILE:rabit_cxx_recover_mpi>)
  set_tests_properties(rabit_cxx_mpi PROPERTIES TIMEOUT 300 LABELS "rabit;mpi"
                       ENVIRONMENT "LSAN_OPTIONS=detect_leaks=0")
endif()
