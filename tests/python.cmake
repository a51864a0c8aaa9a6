# Tests of the Python package (bindings/python), include()d from
# tests/CMakeLists.txt: pytest (Debian's python3-pytest and python3-numpy,
# installed by scripts/deps.sh) on bindings/python/tests, with this build's
# rally-run and libraries.  Every job in them is bounded in time and must
# leave no process behind.  Skipped under sanitizers (an instrumented
# library cannot be loaded into an uninstrumented interpreter).
if(RALLY_PYTHON AND NOT RALLY_SANITIZE)
  set(RALLY_PYTEST_DIR ${CMAKE_SOURCE_DIR}/bindings/python/tests)
  set(RALLY_PYTEST_ENV
      RALLY_TEST_BUILD=${CMAKE_BINARY_DIR}
      RALLY_TEST_RUN=$<TARGET_FILE:rally-run>
      RALLY_LIBRARY=$<TARGET_FILE:rally_shared>
      RALLY_MOCK_LIBRARY=$<TARGET_FILE:rally_mock_shared>
      RALLY_TEST_KMEANS=$<TARGET_FILE:rally-kmeans>
      RALLY_TEST_KMEANS_MOCK=$<TARGET_FILE:rally-kmeans-mock>
      RALLY_TEST_DATAGEN=$<TARGET_FILE:rally-datagen>
      RALLY_TEST_SNAPSHOT=$<TARGET_FILE:rally-snapshot>
      PYTHONDONTWRITEBYTECODE=1)
  # name | test file [-k expression]
  set(RALLY_PYTEST_CASES
      "local|test_local.py"
      "ops|test_jobs.py -k dtype_and_operator or ring or mismatch or exception or abort"
      "recover|test_jobs.py -k checkpoint_kinds or mock or kill9"
      "kmeans|test_kmeans.py"
      "xsum|test_xsum.py"
      "dask|test_dask.py"
      "torch|test_torch.py"
      "cursor|test_cursor.py"
      "canon|test_canon.py"
      "models|test_models.py")
  foreach(c ${RALLY_PYTEST_CASES})
    string(REPLACE "|" ";" parts "${c}")
    list(GET parts 0 name)
    list(GET parts 1 what)
    string(REGEX REPLACE " -k .*" "" file "${what}")
    set(sel "")
    if(what MATCHES " -k (.*)")
      set(sel -k "${CMAKE_MATCH_1}")
    endif()
    add_test(NAME python_${name}
             COMMAND ${CMAKE_COMMAND} -E env ${RALLY_PYTEST_ENV}
                     ${RALLY_PYTHON} -m pytest -q -p no:cacheprovider -rs
                     ${RALLY_PYTEST_DIR}/${file} ${sel})
    set_tests_properties(python_${name} PROPERTIES TIMEOUT 300 LABELS "python")
  endforeach()
  set_tests_properties(python_local PROPERTIES LABELS "python;quick")
  # seven torch jobs with DataLoader workers: three minutes on a loaded 2-core machine
  set_tests_properties(python_cursor PROPERTIES TIMEOUT 600)
  # rally.torch on a current torch 2.x too (scripts/deps.sh puts it into the
  # checkout's .venv from PyPI, pinned; Debian's is 1.13): the canonical form
  # of its tensors and optimizer state, and Adam, AdamW and RMSprop with a
  # scheduler killed -9 and ending with the failure-free weights (Adam also
  # with a lazy checkpoint, killed inside a step: eight torch jobs, more than
  # 10 minutes on 2 cores at a load of 30 to 160).  It fails, not skips, when
  # that torch is not there.
  set(RALLY_TORCH2_PYTHON ${CMAKE_SOURCE_DIR}/.venv/bin/python)
  add_test(NAME python_torch2
           COMMAND ${CMAKE_COMMAND} -E env ${RALLY_PYTEST_ENV}
                   sh -c "\"$0\" -c 'import torch, sys; v = torch.__version__; print(\"torch\", v); sys.exit(not v.startswith(\"2.\"))' && \"$0\" -m pytest -q -p no:cacheprovider -rs \"$1\"/test_canon.py \"$1\"/test_models.py -k 'torch or adam or rmsprop'"
                   ${RALLY_TORCH2_PYTHON} ${RALLY_PYTEST_DIR})
  set_tests_properties(python_torch2 PROPERTIES TIMEOUT 1200 LABELS "python")
  # The numpy MLP make bench times beside Gloo (bench/torch.sh): at N = 2
  # rally's weights equal Gloo's, with and without a death (the .venv's torch
  # for Gloo; about 20 s).
  add_test(NAME python_numpy_mlp
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/jobs/numpy_mlp_test.sh ${CMAKE_BINARY_DIR}
                   ${CMAKE_SOURCE_DIR} ${RALLY_TORCH2_PYTHON})
  set_tests_properties(python_numpy_mlp PROPERTIES TIMEOUT 600 LABELS "python")
  # rally.spark on a real Spark (pyspark from PyPI in the same .venv, Java
  # from Debian; scripts/deps.sh): local-cluster[2,1,1024], a worker and an
  # executor JVM killed -9, a second job in the same snapshot directory, too
  # few slots, rally-gbdt as an estimator, docs/spark.md's program: ten jobs
  # and a Spark's start, 2.5 minutes on 2 cores beside a CPU hog at a load of
  # 4, 12 at a load of 29; it fails, not skips, without pyspark.
  add_test(NAME python_spark
           COMMAND ${CMAKE_COMMAND} -E env ${RALLY_PYTEST_ENV}
                   ${RALLY_TORCH2_PYTHON} -m pytest -q -p no:cacheprovider -rs
                   ${RALLY_PYTEST_DIR}/test_spark.py)
  set_tests_properties(python_spark PROPERTIES TIMEOUT 1200 LABELS "python")
  # The build tree's copy (<build>/python) and an installed copy find their
  # libraries with no RALLY_LIBRARY.
  add_test(NAME python_install
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/jobs/python_install_test.sh ${CMAKE_BINARY_DIR}
                   ${CMAKE_SOURCE_DIR} ${RALLY_PYTHON} ${RALLY_PYTHON_MODULE_DIR})
  set_tests_properties(python_install PROPERTIES TIMEOUT 120 LABELS "python" RESOURCE_LOCK build_install)
  # pip install and pip wheel into fresh venvs, offline, then a job with a
  # kill -9 under the venv's rally-run (bindings/python/README.md, "pip").
  add_test(NAME python_pip
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/jobs/python_pip_test.sh ${CMAKE_BINARY_DIR}
                   ${CMAKE_SOURCE_DIR} ${RALLY_PYTHON} ${PROJECT_VERSION})
  set_tests_properties(python_pip PROPERTIES TIMEOUT 300 LABELS "python")
  # rally.ray on a real local Ray cluster (ray from PyPI in the same .venv;
  # scripts/deps.sh): a head and a second node, each its own `ray start` on
  # its own loopback address, 2 CPUs each; docs/ray.md's program, an actor
  # killed -9, a whole node killed -9 (shrink; resume on a replacement
  # node), too small a cluster.  About three minutes on 2 cores; it fails,
  # not skips, without ray.
  add_test(NAME python_ray
           COMMAND ${CMAKE_COMMAND} -E env ${RALLY_PYTEST_ENV}
                   ${CMAKE_SOURCE_DIR}/.venv/bin/python -m pytest -q -p no:cacheprovider -rs
                   ${RALLY_PYTEST_DIR}/test_ray.py)
  set_tests_properties(python_ray PROPERTIES TIMEOUT 600 LABELS "python")
endif()
