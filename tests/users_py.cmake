# The Python programs of examples/users/ (tests/jobs/users_test.py), include()d
# from tests/CMakeLists.txt: each killed -9 mid-job ends with the digest of a
# run without failures.  Not under sanitizers (an instrumented library
# cannot be loaded into an uninstrumented interpreter).
if(RALLY_PYTHON AND NOT RALLY_SANITIZE)
  foreach(c torch_adam numpy_dict adam_lazy_checkpoint sklearn_partial_fit reports_progress dask_with_a_dataframe)
    add_test(NAME users_${c}
             COMMAND ${CMAKE_COMMAND} -E env ${RALLY_PYTEST_ENV}
                     ${RALLY_PYTHON} -m pytest -q -p no:cacheprovider -rs
                     ${CMAKE_CURRENT_SOURCE_DIR}/jobs/users_test.py -k ${c})
    set_tests_properties(users_${c} PROPERTIES TIMEOUT 400 LABELS "python;users")
  endforeach()
endif()
