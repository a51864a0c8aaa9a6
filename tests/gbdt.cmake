# Tests of examples/gbdt (rally-gbdt); include()d from tests/CMakeLists.txt.
# Each case is one tests/gbdt_test.sh run (its header says what each pins).
# The reference is Debian's python3-xgboost (scripts/deps.sh).
set(RALLY_GBDT_CASES help badinput xgboost missing mock_op mock_checkpoint mock_recovery mock_load
    mock_bootstrap mock_interval kill9 snap_resume)
foreach(c ${RALLY_GBDT_CASES})
  add_test(NAME gbdt_${c}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/gbdt_test.sh ${c} ${CMAKE_BINARY_DIR})
  set_tests_properties(gbdt_${c} PROPERTIES TIMEOUT 300 LABELS "quick;gbdt")
endforeach()
