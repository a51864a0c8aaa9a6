# Tests of the C programs users write (examples/users: sgd_records,
# rabit_prog, mpi_prog); include()d from tests/CMakeLists.txt.  Each case
# is one tests/jobs/users_c_test.sh run: the failure-free digest, then a kill -9
# from outside in the middle of the job, ending with the same digest (its
# header says how each case makes sure the kill lands mid-job).  Every job
# in it is bounded in time and must leave no process behind.
foreach(c sgd rabit)
  add_test(NAME users_c_${c}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/jobs/users_c_test.sh ${c} ${CMAKE_BINARY_DIR})
  set_tests_properties(users_c_${c} PROPERTIES TIMEOUT 300 LABELS "users")
endforeach()
# The MPI program only where librally_mpi is built.
if(TARGET mpi_prog)
  add_test(NAME users_c_mpi
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/jobs/users_c_test.sh mpi ${CMAKE_BINARY_DIR})
  set_tests_properties(users_c_mpi PROPERTIES TIMEOUT 300 LABELS "users;mpi;snapshot")
endif()
