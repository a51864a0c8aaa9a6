# Tests of examples/linear (rally-linear: L-BFGS and consensus ADMM);
# include()d from tests/CMakeLists.txt.  Each case is one tests/linear_test.sh
# run (its header says what each pins).  The scikit-learn reference needs
# Debian's python3-sklearn (scripts/deps.sh).
set(RALLY_LINEAR_CASES help sklearn sparse admm_sklearn mock_op mock_checkpoint mock_recovery
    mock_load kill9 admm_mock admm_mock_recovery admm_kill9 admm_k1_adjacent admm_k2_adjacent
    admm_k1_lost admm_k2_lost labels snap_resume admm_snap_resume)
foreach(c ${RALLY_LINEAR_CASES})
  add_test(NAME linear_${c}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/linear_test.sh ${c} ${CMAKE_BINARY_DIR})
  set_tests_properties(linear_${c} PROPERTIES TIMEOUT 300 LABELS "quick;linear")
endforeach()

# rally-linear --solver sgd and the data cursor: every sample once per epoch
# and one model across failures and world sizes (tests/sgd_test.sh's header).
foreach(c worlds kill9 shrink grow snapshot negative_control)
  add_test(NAME sgd_${c} COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/sgd_test.sh ${c} ${CMAKE_BINARY_DIR})
  set_tests_properties(sgd_${c} PROPERTIES TIMEOUT 300 LABELS "quick;linear")
endforeach()
