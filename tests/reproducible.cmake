# The trainers with --reproducible: one model at any N (tests/jobs/reproducible_test.sh
# says what each case pins); include()d at the end of tests/CMakeLists.txt, after
# the MPI binaries.  The references need Debian's python3-sklearn and python3-xgboost.
set(RALLY_REPRO_CASES kmeans_n kmeans_fail kmeans_sklearn kmeans_exact linear_n linear_fail linear_sklearn
    gbdt_n gbdt_fail gbdt_xgboost)
if(TARGET rally-kmeans-mpi)
  list(APPEND RALLY_REPRO_CASES kmeans_mpi linear_mpi gbdt_mpi)
endif()
foreach(c ${RALLY_REPRO_CASES})
  add_test(NAME reproducible_${c}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/jobs/reproducible_test.sh ${c} ${CMAKE_BINARY_DIR})
  string(REGEX REPLACE "_.*" "" trainer "${c}")
  set_tests_properties(reproducible_${c} PROPERTIES TIMEOUT 300 LABELS "quick;exact;${trainer}")
endforeach()
if(TARGET rally-kmeans-mpi)
  set_tests_properties(reproducible_kmeans_mpi reproducible_linear_mpi reproducible_gbdt_mpi PROPERTIES
                       LABELS "exact;mpi" ENVIRONMENT "LSAN_OPTIONS=detect_leaks=0")
endif()
