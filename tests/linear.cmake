# Tests of examples/linear (rally-linear: L-BFGS and consensus ADMM);
# include()d from tests/CMakeLists.txt.  Each case is one tests/jobs/linear_test.sh
# run (its header says what each pins).  The scikit-learn reference needs
# Debian's python3-sklearn (scripts/deps.sh).
set(RALLY_LINEAR_CASES help sklearn sparse admm_sklearn mock_op mock_checkpoint mock_recovery
    mock_load kill9 admm_mock admm_mock_recovery admm_kill9 admm_k1_adjacent admm_k2_adjacent
    admm_k1_lost admm_k2_lost labels snap_resume admm_snap_resume)
foreach(c ${RALLY_LINEAR_CASES})
  add_test(NAME linear_${c}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/jobs/linear_test.sh ${c} ${CMAKE_BINARY_DIR})
  set_tests_properties(linear_${c} PROPERTIES TIMEOUT 300 LABELS "quick;linear")
endforeach()

# rally-linear --solver sgd and the data cursor: every sample once per epoch
# and one model across failures and world sizes (tests/jobs/sgd_test.sh's header).
foreach(c worlds kill9 shrink grow snapshot negative_control)
  add_test(NAME sgd_${c} COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/jobs/sgd_test.sh ${c} ${CMAKE_BINARY_DIR})
  set_tests_properties(sgd_${c} PROPERTIES TIMEOUT 300 LABELS "quick;linear")
endforeach()

# --reproducible's lane (examples/linear/loss.c) against adding every term,
# and the values an evaluation puts into the accumulators, counted through
# -Wl,--wrap (tests/unit/linear_lane_test.c's header).
set(RALLY_LINEAR_DIR ${CMAKE_CURRENT_LIST_DIR}/../examples/linear)
add_executable(linear_lane_test unit/linear_lane_test.c ${RALLY_LINEAR_DIR}/loss.c
               ${RALLY_LINEAR_DIR}/lbfgs.c ${RALLY_LINEAR_DIR}/model.c
               ${RALLY_LINEAR_DIR}/../common/file.c)
target_include_directories(linear_lane_test PRIVATE ${RALLY_LINEAR_DIR} ${RALLY_LINEAR_DIR}/../common)
target_link_libraries(linear_lane_test rally_static cmocka m)
target_compile_options(linear_lane_test PRIVATE -ffp-contract=off) # as rally-linear
target_link_options(linear_lane_test PRIVATE -Wl,--wrap=rally_xsum_add,--wrap=rally_xsum_add_at)
add_test(NAME linear_lane_test COMMAND linear_lane_test)
set_tests_properties(linear_lane_test PROPERTIES TIMEOUT 60 LABELS "quick;linear")
