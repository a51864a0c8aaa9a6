# Tests of examples/gbdt (rally-gbdt); include()d from tests/CMakeLists.txt.
# Each case is one tests/jobs/gbdt_test.sh run (its header says what each pins).
# The reference is Debian's python3-xgboost (scripts/deps.sh).
set(RALLY_GBDT_CASES help badinput xgboost missing mock_op mock_checkpoint mock_recovery mock_load
    mock_bootstrap mock_interval kill9 snap_resume)
foreach(c ${RALLY_GBDT_CASES})
  add_test(NAME gbdt_${c}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/jobs/gbdt_test.sh ${c} ${CMAKE_BINARY_DIR})
  set_tests_properties(gbdt_${c} PROPERTIES TIMEOUT 300 LABELS "quick;gbdt")
endforeach()

# rally-gbdt's cut points on their own (tests/progs/gbdt_cuts.c): the
# sketch's within its bound, --reproducible's exact, every row's bin, at
# N = 1 and N = 3 (merged summaries); and with shards of 112 rows, whose
# summaries keep every value (224 rows, 192 present: quantiles on whole
# values, where the sketch is exact).
set(RALLY_GBDT_DIR ${CMAKE_CURRENT_LIST_DIR}/../examples/gbdt)
add_executable(gbdt_cuts ${CMAKE_CURRENT_LIST_DIR}/progs/gbdt_cuts.c ${RALLY_GBDT_DIR}/sketch.c
               ${RALLY_GBDT_DIR}/quantile.c)
target_include_directories(gbdt_cuts PRIVATE ${RALLY_GBDT_DIR} ${RALLY_GBDT_DIR}/../common)
target_link_libraries(gbdt_cuts rally_static m)
foreach(n 1 3)
  add_test(NAME gbdt_cuts_n${n}
           COMMAND ${CMAKE_COMMAND} -E env "GREP=gbdt_cuts: ok"
                   ${RUN_JOB} 0 60 $<TARGET_FILE:rally-run> -n ${n} $<TARGET_FILE:gbdt_cuts> 20000 16)
  set_tests_properties(gbdt_cuts_n${n} PROPERTIES TIMEOUT 80 LABELS "quick;gbdt")
endforeach()
add_test(NAME gbdt_cuts_whole
         COMMAND ${CMAKE_COMMAND} -E env "GREP=gbdt_cuts: ok"
                 ${RUN_JOB} 0 60 $<TARGET_FILE:rally-run> -n 2 $<TARGET_FILE:gbdt_cuts> 224 16)
set_tests_properties(gbdt_cuts_whole PROPERTIES TIMEOUT 80 LABELS "quick;gbdt")
