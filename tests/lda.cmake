# Tests of examples/lda (rally-lda); include()d from tests/CMakeLists.txt.
# Each case is one tests/jobs/lda_test.sh run (its header says what each pins).
# The scikit-learn reference needs Debian's python3-sklearn (scripts/deps.sh).
foreach(c help nsame chaos snapshot sklearn)
  add_test(NAME lda_${c} COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/jobs/lda_test.sh ${c} ${CMAKE_BINARY_DIR})
  set_tests_properties(lda_${c} PROPERTIES TIMEOUT 300 LABELS "quick;lda;elastic")
endforeach()
