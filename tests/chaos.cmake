# The combination matrix (tests/chaos/matrix.py, docs/chaos.md): every
# feature combined with every failure, each case judged against its
# failure-free run; include()d from tests/CMakeLists.txt.  In `make test`, a
# seeded pairwise sample (every pair of axis values that a runnable case can
# hold, held by one case at least; CHAOS_PAIRWISE_SEED overrides the seed),
# in three shards that run side by side.  A shard fails when a case hangs,
# ends with another digest, is refused unexpectedly, is not injected, or ends
# otherwise than the documentation says; every job is bounded (90 s) and its
# processes are killed and looked for at its end.  `make chaos` runs the
# whole product.
if(RALLY_PYTHON)
  if(DEFINED ENV{CHAOS_PAIRWISE_SEED})
    set(CHAOS_PAIRWISE_SEED $ENV{CHAOS_PAIRWISE_SEED})
  else()
    set(CHAOS_PAIRWISE_SEED 1)
  endif()
  foreach(i 1 2 3)
    add_test(NAME chaos_pairwise_${i}
             COMMAND ${RALLY_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/chaos/matrix.py
                     ${CMAKE_BINARY_DIR} --pairwise ${CHAOS_PAIRWISE_SEED} --shard ${i}/3)
    set_tests_properties(chaos_pairwise_${i} PROPERTIES TIMEOUT 900 LABELS "chaos")
  endforeach()
endif()
