# Recovery without a global restart, on tests/progs/recover.c (a job with
# global and local models, broadcasts, sums and allgathervs at every
# version) and librally_mock's points; include()d from tests/CMakeLists.txt.
# Recovery: the same job without failures (librally) and with kill points
# (librally_mock); digests must match, death counts must be exact.
add_executable(recover progs/recover.c)
target_link_libraries(recover rally_static m)
target_include_directories(recover PRIVATE progs)
add_executable(recover_mock progs/recover.c)
target_link_libraries(recover_mock rally_mock_static m)
target_include_directories(recover_mock PRIVATE progs)
set(RECOVER_TEST ${CMAKE_CURRENT_SOURCE_DIR}/jobs/recover_test.sh $<TARGET_FILE:rally-run>
    $<TARGET_FILE:recover> $<TARGET_FILE:recover_mock>)
# name | N | deaths | kill points (N = 8: seq 0 max, 1-4 broadcasts, 5 sum,
# 6 allgatherv, checkpoint at 7).  Points that name the same group (the
# sixth field) die together: each waits at its point for the others
# (run_job.sh gives every job a rally_mock_sync directory to meet in).
set(RECOVER_CASES
  "model_recover|8|2|rally_mock=0,0,0,0 rally_mock=1,1,5,0"
  "die_same|8|5|rally_mock=0,0,0,0 rally_mock=1,1,5,0,op,same rally_mock=0,1,5,1,op,same rally_mock=4,1,5,0,op,same rally_mock=7,1,5,0,op,same"
  "die_hard|8|8|rally_mock=0,0,0,0 rally_mock=1,1,5,0,op,same rally_mock=0,1,5,1,op,same rally_mock=4,1,5,0,op,same rally_mock=7,1,5,0,op,same rally_mock=1,1,5,1 rally_mock=6,1,6,0 rally_mock=4,1,6,1"
  "twice_in_one_version|8|2|rally_mock=3,1,0,0 rally_mock=3,1,6,1"
  "during_recovery|8|2|rally_mock=2,1,5,0,op,g rally_mock=5,1,5,0,recovery,g"
  "inside_checkpoint|8|1|rally_mock=3,1,7,0,checkpoint"
  "inside_load|8|2|rally_mock=2,1,5,0 rally_mock=2,0,0,1,load"
  "three_groups|8|3|rally_mock=3,1,5,0,op,g rally_mock=3,1,0,1 rally_mock=6,1,5,0,recovery,g"
  "broadcast_death|4|1|rally_mock=2,1,2,0"
  "bootstrap_death|4|1|rally_mock=1,0,1,0"
  "ring|8|2|rally_mock=0,0,0,0 rally_mock=1,1,5,0 rally_ring_threshold_bytes=1024 rally_hd_threshold_bytes=0 rally_chunk_bytes=512"
  "hd|8|2|rally_mock=0,0,0,0 rally_mock=1,1,5,0 rally_ring_threshold_bytes=1024 rally_hd_threshold_bytes=1G rally_chunk_bytes=512"
  "hd_folded|6|2|rally_mock=0,0,0,0 rally_mock=1,1,5,0 rally_ring_threshold_bytes=1024 rally_hd_threshold_bytes=1G rally_chunk_bytes=512"
  # a death inside the sum, once the first part of the dying rank's result
  # is final (phase final): the survivors' buffers are part input, part
  # result, and the retry takes each final byte from a survivor that has
  # it and computes the others again (docs/recovery.md, "Retrying an
  # allreduce"); then a survivor dies serving that recovery (two final points
  # in one sum would need two deaths to coincide, which a final point cannot
  # make sure of: the first death's reset may stop the other first); at N = 2 (the sum is seq 3 there); on
  # halving-doubling, whose result is
  # written over the input only once whole
  "final_ring|8|1|rally_mock=1,1,5,0,final rally_ring_threshold_bytes=1024 rally_hd_threshold_bytes=0 rally_chunk_bytes=512"
  "final_ring_twice|8|2|rally_mock=4,1,5,0,final rally_mock=1,1,5,0,recovery rally_ring_threshold_bytes=1024 rally_hd_threshold_bytes=0 rally_chunk_bytes=512"
  "final_ring_n2|2|1|rally_mock=0,1,3,0,final rally_rd_threshold_bytes=0 rally_ring_threshold_bytes=1024 rally_hd_threshold_bytes=0 rally_chunk_bytes=512"
  "final_hd|8|1|rally_mock=1,1,5,0,final rally_ring_threshold_bytes=1024 rally_hd_threshold_bytes=1G rally_chunk_bytes=512"
  # the hierarchy (hosts of two ranks: leaders 0, 2, 4, 6): a leader dies in
  # the sum while the others are in it (its chain and the leaders' ring
  # break), a chain's last rank, two leaders together, and a leader once
  # its result is whole
  "hier_leader|8|1|rally_mock=2,1,5,0 rally_host_group=2 rally_ring_threshold_bytes=1024 rally_chunk_bytes=512"
  "hier_member|8|1|rally_mock=5,1,5,0 rally_host_group=2 rally_ring_threshold_bytes=1024 rally_chunk_bytes=512"
  "hier_two_leaders|8|2|rally_mock=0,1,5,0,op,g rally_mock=6,1,5,0,op,g rally_host_group=2 rally_ring_threshold_bytes=1024 rally_chunk_bytes=512"
  "hier_final|8|1|rally_mock=4,1,5,0,final rally_host_group=2 rally_ring_threshold_bytes=1024 rally_chunk_bytes=512"
  "prepare_skipped|4|1|rally_mock=1,1,6,0"
  "finalize_death|4|1|rally_mock=2,3,0,0"
  # local models (replicated to the next k ranks) and lazy checkpoints
  "local_recover|8|5|local rally_mock=0,0,0,0 rally_mock=1,1,5,0,op,same rally_mock=0,1,5,1,op,same rally_mock=4,1,5,0,op,same rally_mock=1,1,5,1"
  "local_k1_one|8|1|local rally_local_replica=1 rally_mock=3,1,5,0"
  "local_k2_adjacent|8|2|local rally_local_replica=2 rally_mock=3,1,5,0,op,adj rally_mock=4,1,5,0,op,adj"
  "local_k3_adjacent|8|3|local rally_local_replica=3 rally_mock=3,1,5,0,op,adj rally_mock=4,1,5,0,op,adj rally_mock=5,1,5,0,op,adj"
  "local_during_replication|8|1|local rally_mock=3,1,7,0"
  "local_inside_checkpoint|8|1|local rally_mock=5,1,7,0,checkpoint"
  "local_inside_load|8|2|local rally_mock=2,1,5,0 rally_mock=2,0,0,1,load"
  # k = 1: rank 1 dies, and rank 2, the one other holder of its model, dies
  # while serving rank 1's replacement its bootstrap calls, before that one
  # reached load_checkpoint: the replacement took its copies in rally_init
  "local_k1_holder_dies_after_restart|4|2|local rally_local_replica=1 rally_mock=1,2,5,0 rally_mock=2,2,5,0,recovery"
  # verified results (rally_verify_every) through recoveries: no false alarm
  "verify_recover|8|2|rally_verify_every=1 rally_mock=0,0,0,0 rally_mock=1,1,5,0"
  "verify_local_k3|8|2|local rally_verify_every=3 rally_mock=3,1,5,0 rally_mock=3,0,0,1,load"
  # ... a global model, every 3rd and every 2nd result verified, so which
  # ones depends on the count: a replacement served the checkpoint (the
  # job's count from the acknowledgement) and the results after it (each
  # counted), then killed again inside load
  "verify_k3_served|4|2|rally_verify_every=3 rally_mock=1,2,4,0 rally_mock=1,0,0,1,load"
  "verify_k2_served|4|1|rally_verify_every=2 rally_mock=2,2,5,0"
  # ... a replacement served the checkpoint it died in runs the
  # acknowledgement without the verified digest it cannot know
  "verify_inside_checkpoint|4|1|rally_verify_every=1 rally_mock=1,2,7,0,checkpoint"
  "lazy_in_broadcast|8|1|lazy rally_mock=2,1,2,0"
  "lazy_in_allreduce|8|1|lazy rally_mock=2,1,5,0"
  "lazy_die_same|8|4|lazy rally_mock=1,1,0,0 rally_mock=0,1,2,0,op,same rally_mock=4,1,2,0,op,same rally_mock=7,1,2,0,op,same"
  "lazy_die_hard|8|6|lazy rally_mock=1,1,0,0 rally_mock=0,1,2,0,op,same rally_mock=4,1,2,0,op,same rally_mock=7,1,2,0,op,same rally_mock=0,1,2,1 rally_mock=5,2,6,0"
  "lazy_inside_checkpoint|8|1|lazy rally_mock=6,1,7,0,checkpoint"
  "lazy_inside_load|8|2|lazy rally_mock=2,1,5,0 rally_mock=2,0,0,1,load"
  # Results kept in part (docs/recovery.md, "Results kept in part"): with
  # 131072 elements (RECOVER_SIZE, below) the MAX of seq 0 (512 KiB) and the
  # sum (1 MiB) are kept in pieces, each on rally_result_copies workers (2 by
  # default), and a restarted worker is served each piece from a survivor
  # that kept it.  On
  # the ring (rally_hd_threshold_bytes=0): one death; two apart; a death once
  # the sum is final here (the retry takes the final bytes from the caller's
  # buffer); two adjacent with three copies; the same over TCP at an odd N
  # (pieces of unequal sizes).  On halving-doubling (its default up to 8 MiB):
  # over shared memory one death and a death once the sum's first block is
  # final; over TCP at N = 7, where three ranks fold into their neighbours and
  # the algorithm runs out of place, keeping whole results.
  "part_one|4|1|rally_hd_threshold_bytes=0 rally_mock=1,1,5,0"
  "part_apart|8|2|rally_hd_threshold_bytes=0 rally_mock=3,1,5,0,op,apart rally_mock=5,1,5,0,op,apart"
  "part_final_ring|8|1|rally_hd_threshold_bytes=0 rally_mock=1,1,5,0,final"
  "part_copies3_adjacent|8|2|rally_hd_threshold_bytes=0 rally_result_copies=3 rally_mock=3,1,5,0,op,adj rally_mock=4,1,5,0,op,adj"
  "part_tcp_n7|7|1|rally_hd_threshold_bytes=0 rally_transport=tcp rally_mock=6,1,5,0"
  "part_hd_one|4|1|rally_mock=2,1,5,0"
  "part_hd_final|8|1|rally_mock=5,1,5,0,final"
  "part_hd_tcp_n7|7|1|rally_transport=tcp rally_mock=6,1,5,0"
  # N = 2 over shared memory reads the peer's buffers (coll/cma.c): a rank
  # dies inside the 1 MiB sum once its first chunk is final, while its peer
  # reads its memory or waits for its word, in halving-doubling's range and
  # the ring's, and the same on the rings (rally_cma=0)
  "part_cma_n2_final_hd|2|1|rally_mock=0,1,3,0,final"
  "part_cma_n2_final_ring|2|1|rally_hd_threshold_bytes=0 rally_mock=1,1,3,0,final"
  "part_cma_off_n2_final|2|1|rally_cma=0 rally_mock=1,1,3,0,final")
foreach(c ${RECOVER_CASES})
  string(REPLACE "|" ";" parts "${c}")
  list(GET parts 0 name)
  list(GET parts 1 n)
  list(GET parts 2 deaths)
  list(GET parts 3 points)
  separate_arguments(points UNIX_COMMAND "${points}")
  add_test(NAME recover_${name} COMMAND ${RECOVER_TEST} ${n} ${deaths} ${points})
  set_tests_properties(recover_${name} PROPERTIES TIMEOUT 300)
  if(name MATCHES "^part_")
    set_tests_properties(recover_${name} PROPERTIES ENVIRONMENT "RECOVER_SIZE=131072")
  endif()
endforeach()
set_tests_properties(recover_model_recover recover_broadcast_death recover_local_k2_adjacent
                     recover_lazy_in_broadcast recover_during_recovery
                     recover_local_k1_holder_dies_after_restart recover_verify_local_k3
                     recover_part_one PROPERTIES LABELS "quick")
# Both keepers of a piece die together (ranks 3 and 4 keep piece 4): every
# worker stops with a clear error naming the call, the piece and its
# keepers, as k + 1 adjacent deaths lose a local model (below).
add_test(NAME recover_part_lost
         COMMAND ${CMAKE_COMMAND} -E env
                 "GREP=is lost in part (piece 4 of 8, kept by ranks 3, 4, all of which died"
                 ${RUN_JOB} nonzero 60 $<TARGET_FILE:rally-run> -n 8
                 $<TARGET_FILE:recover_mock> 131072 3 rally_hd_threshold_bytes=0
                 rally_mock=3,1,5,0,op,lost rally_mock=4,1,5,0,op,lost)
set_tests_properties(recover_part_lost PROPERTIES TIMEOUT 140)
# The restarted rank 1 is served version 1's sum (seq 5): its prepare runs
# only for the sum of version 2, which it computes.
set_tests_properties(recover_prepare_skipped PROPERTIES
                     ENVIRONMENT "EXPECT=[1] rank 1 prepare_calls=1")
# Every kill phase x {global, local models} x {snapshots off, on}, at N = 4
# over shared memory and N = 8 over TCP (tests/jobs/recover_matrix_test.sh).
foreach(m global local)
  foreach(s off on)
    foreach(c "4|shm" "8|tcp")
      string(REPLACE "|" ";" parts "${c}")
      list(GET parts 0 n)
      list(GET parts 1 t)
      add_test(NAME recover_matrix_${m}_snap_${s}_n${n}_${t}
               COMMAND ${CMAKE_COMMAND} -E env RALLY_TRANSPORT=${t}
                       ${CMAKE_CURRENT_SOURCE_DIR}/jobs/recover_matrix_test.sh $<TARGET_FILE:rally-run>
                       $<TARGET_FILE:recover> $<TARGET_FILE:recover_mock> ${n} ${m} ${s})
      set_tests_properties(recover_matrix_${m}_snap_${s}_n${n}_${t} PROPERTIES TIMEOUT 180)
      if(m STREQUAL "local" AND s STREQUAL "on" AND n EQUAL 4) # under the sanitizers too
        set_tests_properties(recover_matrix_${m}_snap_${s}_n${n}_${t} PROPERTIES LABELS "quick")
      endif()
    endforeach()
  endforeach()
endforeach()
# A restarted rank served a replication (the snapshot report after it is
# where it died) checks the local model it passes against its predecessor's.
add_test(NAME recover_local_diverged
         COMMAND sh -c "d=$(mktemp -d); GREP='rank 1 (restarted) passed a 16000-byte local model' \
                        \"$0\" nonzero 60 \"$1\" -n 4 --snapshot-dir \"$d\" --snapshot-every 3 \
                        \"$2\" 2000 6 diverge_local rally_mock=1,3,8,0; rc=$?; rm -rf \"$d\"; exit $rc"
                 ${RUN_JOB} $<TARGET_FILE:rally-run> $<TARGET_FILE:recover_mock>)
set_tests_properties(recover_local_diverged PROPERTIES TIMEOUT 120)
# The same matrix with every result verified (a restarted worker counts and
# digests what it is served as the survivors did).
add_test(NAME recover_matrix_local_snap_on_n4_verify
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/jobs/recover_matrix_test.sh $<TARGET_FILE:rally-run>
                 $<TARGET_FILE:recover> $<TARGET_FILE:recover_mock> 4 local on rally_verify_every=1)
set_tests_properties(recover_matrix_local_snap_on_n4_verify PROPERTIES TIMEOUT 180)
# Silent corruption: the mock flips one bit of rank 2's sum at version 1,
# seq 5.  Verified every call, or every 5th (the flipped one is the 15th
# call of the job), the job stops at the next call naming rank 2 and that
# call; not verified, only the checkpoint's digest catches it, later.
# Every 15th, 14th and 16th pin the count itself (over the whole job,
# bootstrap calls included): the flipped call is the 15th, no other.
foreach(c "1|rank 2's result of allreduce(count=2000, double, sum) (version 1, seq 5)"
          "5|rank 2's result of allreduce(count=2000, double, sum) (version 1, seq 5)"
          "15|rank 2's result of allreduce(count=2000, double, sum) (version 1, seq 5)"
          "14|checkpoint version 2: rank 2's global model differs from ranks 0, 1, 3's"
          "16|checkpoint version 2: rank 2's global model differs from ranks 0, 1, 3's"
          "0|rank 2's global model differs from ranks 0, 1, 3's: the ranks passed different global models")
  string(REPLACE "|" ";" parts "${c}")
  list(GET parts 0 k)
  list(GET parts 1 want)
  add_test(NAME verify_flip_k${k}
           COMMAND ${CMAKE_COMMAND} -E env "GREP=${want}" ${RUN_JOB} 3 60 $<TARGET_FILE:rally-run>
                   -n 4 $<TARGET_FILE:recover_mock> 2000 4 rally_verify_every=${k}
                   rally_mock=2,1,5,0,flip)
  set_tests_properties(verify_flip_k${k} PROPERTIES TIMEOUT 120 LABELS "quick")
endforeach()
# The same with the sum kept in pieces (131072 doubles on the ring): the
# digest is of the whole result in the caller's buffer, not of the pieces.
add_test(NAME verify_flip_part
         COMMAND ${CMAKE_COMMAND} -E env
                 "GREP=rank 2's result of allreduce(count=131072, double, sum) (version 1, seq 5)"
                 ${RUN_JOB} 3 60 $<TARGET_FILE:rally-run> -n 4 $<TARGET_FILE:recover_mock> 131072 4
                 rally_verify_every=1 rally_hd_threshold_bytes=0 rally_mock=2,1,5,0,flip)
set_tests_properties(verify_flip_part PROPERTIES TIMEOUT 120)
# The last verified result before a checkpoint (the allgatherv, no local
# models) is compared in the acknowledgement's payload: rank 2's flipped bit
# names rank 2 there.  (Unverified, this flip changes no digest at all.)
add_test(NAME verify_flip_before_checkpoint
         COMMAND ${CMAKE_COMMAND} -E env
                 "GREP=results of allgatherv (count 8) (version 1, seq 6) differ: rank 2's result differs from ranks 0, 1, 3's: ranks 0, 1, 3 digest"
                 ${RUN_JOB} 3 60 $<TARGET_FILE:rally-run> -n 4 $<TARGET_FILE:recover_mock> 2000 4
                 rally_verify_every=1 rally_mock=2,1,6,0,flip)
# Two ranks: each is the other's only neighbour, so neither is blamed alone.
add_test(NAME verify_flip_n2
         COMMAND ${CMAKE_COMMAND} -E env
                 "GREP=results of allreduce(count=2000, double, sum) (version 1, seq 3) differ (each is the other's only neighbour"
                 ${RUN_JOB} 3 60 $<TARGET_FILE:rally-run> -n 2 $<TARGET_FILE:recover_mock> 2000 4
                 rally_verify_every=1 rally_mock=1,1,3,0,flip)
# A flip point fires once, though (version 0, seq 1) names a bootstrap call
# and the first loaded version's call alike, and one that fired is not
# named as never fired (the bootstrap sum it flips feeds nothing checked).
add_test(NAME mock_flip_fires_once
         COMMAND sh -c "out=$(\"$0\" 0 60 \"$1\" -n 4 \"$2\" 2000 2 rally_mock=2,0,1,0,flip) || { echo \"$out\"; exit 1; }; \
                        echo \"$out\"; [ $(echo \"$out\" | grep -c 'rally mock: flipping') -eq 1 ] && \
                        ! echo \"$out\" | grep -q 'never fired'"
                 ${RUN_JOB} $<TARGET_FILE:rally-run> $<TARGET_FILE:recover_mock>)
set_tests_properties(verify_flip_before_checkpoint verify_flip_n2 mock_flip_fires_once
                     PROPERTIES TIMEOUT 120 LABELS "quick")
# k + 1 adjacent deaths lose a local model: every worker gets a clear error.
foreach(k 1 2)
  math(EXPR n_die "${k} + 1")
  set(points "")
  foreach(i RANGE 1 ${n_die})
    math(EXPR r "${i} + 2")
    list(APPEND points rally_mock=${r},1,5,0,op,lost)
  endforeach()
  add_test(NAME recover_local_k${k}_lost
           COMMAND ${CMAKE_COMMAND} -E env "GREP=are lost" ${RUN_JOB} nonzero 60
                   $<TARGET_FILE:rally-run> -n 8 $<TARGET_FILE:recover_mock> 2000 3 local
                   rally_local_replica=${k} ${points})
  # A recovery that ends "cannot recover" recovered nothing: the summary must
  # not count its deaths as recovered, nor rally-run call the job back in step.
  set_tests_properties(recover_local_k${k}_lost PROPERTIES TIMEOUT 140
                       FAIL_REGULAR_EXPRESSION "recovered=[1-9]|job back in step")
  # The same with rank 2 slow on purpose before the broadcast of seq 4: rank 3
  # waits for it inside that broadcast while the other victims reach seq 5.
  # Deaths at the same point are simultaneous only if the victims wait for
  # each other; otherwise rank 3 serves its restarted neighbours their local
  # models, dies alone later, and the job wrongly survives: without groups
  # these cases fail every run, the plain ones above 8 runs in 20 beside two
  # CPU hogs.
  add_test(NAME recover_local_k${k}_lost_lagging
           COMMAND ${CMAKE_COMMAND} -E env "GREP=are lost" ${RUN_JOB} nonzero 60
                   $<TARGET_FILE:rally-run> -n 8 $<TARGET_FILE:recover_mock> 2000 3 local
                   rally_local_replica=${k} ${points} lag=2,1,4,2000)
  set_tests_properties(recover_local_k${k}_lost_lagging PROPERTIES TIMEOUT 140
                       FAIL_REGULAR_EXPRESSION "recovered=[1-9]|job back in step")
endforeach()
# A recovery-phase point waits for its group too: rank 7 lags before the
# broadcast of seq 4 and, with small socket buffers and a large model, holds
# rank 5 inside it; rank 5 must still be at seq 5 when rank 2 dies there.
add_test(NAME recover_during_recovery_lagging
         COMMAND ${RECOVER_TEST} 8 2 rally_sock_buf_bytes=64K lag=7,1,4,2000
                 rally_mock=2,1,5,0,op,g rally_mock=5,1,5,0,recovery,g)
set_tests_properties(recover_during_recovery_lagging PROPERTIES TIMEOUT 300
                     ENVIRONMENT "RECOVER_SIZE=200000")
# A rank stuck in its own code (it sleeps for ever before allreduce #0 of
# version 2, in its first incarnation only) while the others wait in that
# allreduce: rally-run names it after --progress-timeout-ms and, by
# --on-stuck, restarts it (the job finishes with the digest of a clean run)
# or fails the job with the sentence.  Then a recovery round that rank never
# comes back to (rank 1 dies at that allreduce while rank 2 sleeps).
add_test(NAME recover_stuck_rank_restarted COMMAND ${RECOVER_TEST} 4 1)
set_tests_properties(recover_stuck_rank_restarted PROPERTIES TIMEOUT 150 ENVIRONMENT
  "RUN_OPTS=--progress-timeout-ms 2000;MOCK_ARGS=lag=2,2,0,600000;EXPECT=ranks 0, 1, 3 wait in allreduce #0 of version 2\; rank 2 has not called it for 2 s")
add_test(NAME recover_stuck_rank_fails
         COMMAND ${CMAKE_COMMAND} -E env
                 "GREP=rally-run: job aborted: ranks 0, 1, 3 wait in allreduce #0 of version 2; rank 2 has not called it for 2 s"
                 ${RUN_JOB} 1 60 $<TARGET_FILE:rally-run> -n 4 --progress-timeout-ms 2000
                 --on-stuck fail $<TARGET_FILE:recover_mock> 2000 3 lag=2,2,0,600000)
set_tests_properties(recover_stuck_rank_fails PROPERTIES TIMEOUT 80)
# The restart policy with no restart left for the stuck rank (its one
# restart went to a death at version 0; its replacement, started from
# scratch, sleeps the same): the job fails with the sentence, as --on-stuck
# fail, and the rank is neither fenced nor counted as a death.
add_test(NAME recover_stuck_rank_no_restart_left
         COMMAND ${CMAKE_COMMAND} -E env
                 "GREP=rally-run: job aborted: ranks 0, 1, 3 wait in allreduce #0 of version 2; rank 2 has not called it for 2 s"
                 ${RUN_JOB} 1 60 $<TARGET_FILE:rally-run> -n 4 --max-restarts 1 --progress-timeout-ms 2000
                 $<TARGET_FILE:recover_mock> 2000 3 lag=2,2,0,600000 rally_mock=2,0,0,0)
set_tests_properties(recover_stuck_rank_no_restart_left PROPERTIES TIMEOUT 80
                     FAIL_REGULAR_EXPRESSION "fenced it;summary: deaths=[02-9]")
add_test(NAME recover_stuck_in_recovery_round COMMAND ${RECOVER_TEST} 4 2 rally_mock=1,2,0,0)
set_tests_properties(recover_stuck_in_recovery_round PROPERTIES TIMEOUT 150 ENVIRONMENT
  "RUN_OPTS=--progress-timeout-ms 3000;MOCK_ARGS=lag=2,2,0,600000;EXPECT=ranks 0, 1, 3 wait to recover\; rank 2 has not rejoined for 3 s (it is in its own code before call #0 of version 2)")
# The workers' deadlines and the tracker's agree: with rally_timeout_ms and
# rally_connect_timeout_ms short (2 s + 4 s: the waiting ranks give up on a
# recovery round after 6 s), rally-run sets the progress watch to half that,
# so the stuck rank 2 is named and restarted (the waiting ranks' timeout in
# the allreduce re-wires the job; the round then waits for rank 2) before
# the waiting ranks give up.  They gave up first before: "rank 0 exited with
# status 1", the stuck rank never named.  An explicit --progress-timeout-ms
# at or above that bound is refused.
add_test(NAME recover_stuck_rank_short_timeout COMMAND ${RECOVER_TEST} 4 1)
set_tests_properties(recover_stuck_rank_short_timeout PROPERTIES TIMEOUT 150 ENVIRONMENT
  "MOCK_ARGS=lag=2,2,0,600000 rally_timeout_ms=2000 rally_connect_timeout_ms=4000;EXPECT=rank 2 has not rejoined for 3 s (it is in its own code before call #0 of version 2)")
add_test(NAME recover_stuck_deadlines_disagree
         COMMAND ${CMAKE_COMMAND} -E env
                 "GREP=--progress-timeout-ms 600000 is at or above the workers' own bound on a recovery round (rally_connect_timeout_ms, the default 60000 ms, + rally_timeout_ms=5000)"
                 ${RUN_JOB} 2 30 $<TARGET_FILE:rally-run> -n 2 --progress-timeout-ms 600000
                 $<TARGET_FILE:recover> 2000 1 rally_timeout_ms=5000)
set_tests_properties(recover_stuck_deadlines_disagree PROPERTIES TIMEOUT 40)
# A group that cannot meet does not hang the job: rank 2 dies earlier, so its
# first incarnation never reaches the group's point; rank 1 waits there for
# rally_connect_timeout_ms, says it gave up, and dies alone.
add_test(NAME recover_group_gave_up
         COMMAND ${CMAKE_COMMAND} -E env "GREP=rank 1 gave up at version 1 seq 2" GAVE_UP_OK=1
                 ${RUN_JOB} 0 60 $<TARGET_FILE:rally-run> -n 4 $<TARGET_FILE:recover_mock> 500 3
                 rally_connect_timeout_ms=8000 rally_mock=2,1,0,0 rally_mock=1,1,2,0,op,never
                 rally_mock=2,1,2,0,op,never)
set_tests_properties(recover_group_gave_up PROPERTIES TIMEOUT 140)
# Groups are checked before anything runs: one point per rank, two ranks or
# more, and a directory to meet in; librally ignores rally_mock_sync.
add_test(NAME mock_group_alone COMMAND ${CMAKE_COMMAND} -E env --unset=RALLY_MOCK_SYNC
         $<TARGET_FILE:recover_mock> 100 1
         rally_mock=0,1,5,0,op,g rally_mock=1,1,5,0,op,g)
set_tests_properties(mock_group_alone PROPERTIES LABELS "quick"
                     PASS_REGULAR_EXPRESSION "points in a group die together and need rally_mock_sync")
add_test(NAME mock_group_of_one COMMAND $<TARGET_FILE:recover_mock> 100 1
         rally_mock_sync=. rally_mock=0,1,5,0,op,g rally_mock=1,1,5,0,op,h)
set_tests_properties(mock_group_of_one PROPERTIES LABELS "quick"
                     PASS_REGULAR_EXPRESSION "group g has one point")
add_test(NAME mock_group_rank_twice COMMAND $<TARGET_FILE:recover_mock> 100 1
         rally_mock_sync=. rally_mock=0,1,5,0,op,g rally_mock=0,1,6,0,op,g)
set_tests_properties(mock_group_rank_twice PROPERTIES LABELS "quick"
                     PASS_REGULAR_EXPRESSION "rank 0 has two points in group g")
# A kill point that never fired is named at the end of the job, once, by
# the rank it names (seq 99 does not exist in version 1); one that fired is
# not (rank 0's, whose replacement finishes with ndeath 1).
add_test(NAME mock_unfired_named
         COMMAND ${CMAKE_COMMAND} -E env
                 "GREP=rank 1: the kill point rally_mock=1,1,99,0,checkpoint never fired"
                 ${RUN_JOB} 0 60 $<TARGET_FILE:rally-run> -n 3 $<TARGET_FILE:recover_mock> 100 3
                 rally_mock=1,1,99,0,checkpoint rally_mock=0,1,0,0)
set_tests_properties(mock_unfired_named PROPERTIES LABELS "quick" TIMEOUT 80
                     FAIL_REGULAR_EXPRESSION "rally_mock=0,1,0,0,op never fired;never fired.*never fired")
add_test(NAME mock_sync_ignored COMMAND $<TARGET_FILE:recover> 100 1 rally_mock_sync=.)
set_tests_properties(mock_sync_ignored PROPERTIES LABELS "quick"
                     PASS_REGULAR_EXPRESSION "model_digest=")

# The checkpoint acknowledgement's request bits reach every rank's commit
# hook at the version requested, and nowhere else: alone (no tracker), in a
# job, and for a worker restarted after that version, which is served the
# acknowledgement from the others' cache (its first commit is version 3).
add_executable(flags_mock progs/flags.c)
target_link_libraries(flags_mock rally_mock_static)
add_test(NAME ckpt_flags_alone COMMAND ${RUN_JOB} 0 30 $<TARGET_FILE:flags_mock> 5 3 4)
add_test(NAME ckpt_flags COMMAND ${CMAKE_COMMAND} -E env "GREP=flags_ok rank=3 first=1"
                 ${RUN_JOB} 0 60 $<TARGET_FILE:rally-run> -n 4 $<TARGET_FILE:flags_mock> 5 3 4)
add_test(NAME ckpt_flags_served
         COMMAND ${CMAKE_COMMAND} -E env "GREP=flags_ok rank=1 first=3 flags=4"
                 ${RUN_JOB} 0 60 $<TARGET_FILE:rally-run> -n 4 $<TARGET_FILE:flags_mock> 5 3 4
                 rally_mock=1,3,1,0)
set_tests_properties(ckpt_flags_alone ckpt_flags ckpt_flags_served PROPERTIES TIMEOUT 80
                     LABELS "quick" FAIL_REGULAR_EXPRESSION "FLAGS_BAD")

# Negative control: the digest sees the reduction order (tree vs ring).
# Each job is bounded (a healthy one takes well under a second).
add_test(NAME recover_negative_control COMMAND sh -c
         "a=$(timeout -k 5 30 \"$0\" -n 4 \"$1\" 2000 3 | grep -o 'model_digest=[0-9a-f]*'); \
          b=$(timeout -k 5 30 \"$0\" -n 4 \"$1\" 2000 3 rally_ring_threshold_bytes=1024 rally_hd_threshold_bytes=0 | grep -o 'model_digest=[0-9a-f]*'); \
          echo \"tree $a, ring $b\"; [ -n \"$a\" ] && [ -n \"$b\" ] && [ \"$a\" != \"$b\" ]"
         $<TARGET_FILE:rally-run> $<TARGET_FILE:recover>)
set_tests_properties(recover_negative_control PROPERTIES TIMEOUT 120)
foreach(c kill9 sigstop diverge exhausted stalled busy)
  add_test(NAME fault_${c} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/jobs/fault_test.sh ${c}
           $<TARGET_FILE:rally-run> $<TARGET_FILE:recover> $<TARGET_FILE:recover_mock>)
  set_tests_properties(fault_${c} PROPERTIES TIMEOUT 300)
endforeach()
# Each transport alone (rally_transport): the tests above run with the
# default, auto, which carries every link of these one-host jobs over shared
# memory; these force TCP, and force shared memory (a link that cannot be
# set up then fails the job rather than falling back).  Results, digests and
# recoveries must be the same bits as everywhere else.
set(TRANSPORT_RECOVER_CASES model_recover die_same during_recovery three_groups
    inside_checkpoint ring broadcast_death finalize_death local_k2_adjacent lazy_die_same)
foreach(t tcp shm)
  set(env ${CMAKE_COMMAND} -E env RALLY_TRANSPORT=${t})
  foreach(n 2 3 4 8)
    coll_matrix_limit(${n} limit)
    math(EXPR ctest_limit "${limit} + 20")
    add_test(NAME coll_matrix_n${n}_${t}
             COMMAND ${env} ${RUN_JOB} 0 ${limit} $<TARGET_FILE:rally-run> -n ${n}
                     $<TARGET_FILE:coll_matrix> rally_ring_threshold_bytes=4096 rally_chunk_bytes=1024)
    set_tests_properties(coll_matrix_n${n}_${t} PROPERTIES TIMEOUT ${ctest_limit})
  endforeach()
  set_tests_properties(coll_matrix_n4_${t} PROPERTIES LABELS "quick")
  add_test(NAME coll_big_n4_${t}
           COMMAND ${env} ${RUN_JOB} 0 90 $<TARGET_FILE:rally-run> -n 4 $<TARGET_FILE:coll_matrix> big)
  set_tests_properties(coll_big_n4_${t} PROPERTIES TIMEOUT 110)
  foreach(c ${RECOVER_CASES})
    string(REPLACE "|" ";" parts "${c}")
    list(GET parts 0 name)
    if(NOT name IN_LIST TRANSPORT_RECOVER_CASES)
      continue()
    endif()
    list(GET parts 1 n)
    list(GET parts 2 deaths)
    list(GET parts 3 points)
    separate_arguments(points UNIX_COMMAND "${points}")
    add_test(NAME recover_${name}_${t} COMMAND ${env} ${RECOVER_TEST} ${n} ${deaths} ${points})
    set_tests_properties(recover_${name}_${t} PROPERTIES TIMEOUT 300)
  endforeach()
  foreach(c kill9 sigstop stalled diverge)
    add_test(NAME fault_${c}_${t} COMMAND ${env} ${CMAKE_CURRENT_SOURCE_DIR}/jobs/fault_test.sh ${c}
             $<TARGET_FILE:rally-run> $<TARGET_FILE:recover> $<TARGET_FILE:recover_mock>)
    set_tests_properties(fault_${c}_${t} PROPERTIES TIMEOUT 300)
  endforeach()
endforeach()
# The same job over TCP and over shared memory: the same model, bit for bit
# (tree and ring allreduce, broadcasts, allgatherv).
add_test(NAME transport_same_digest COMMAND sh -c
         "a=$(RALLY_TRANSPORT=tcp \"$0\" -n 5 \"$1\" 20000 3 rally_ring_threshold_bytes=4096 | grep -o 'model_digest=[0-9a-f]*'); \
          b=$(RALLY_TRANSPORT=shm \"$0\" -n 5 \"$1\" 20000 3 rally_ring_threshold_bytes=4096 | grep -o 'model_digest=[0-9a-f]*'); \
          echo \"tcp $a, shm $b\"; [ -n \"$a\" ] && [ \"$a\" = \"$b\" ]"
         $<TARGET_FILE:rally-run> $<TARGET_FILE:recover>)
set_tests_properties(transport_same_digest PROPERTIES TIMEOUT 120)
# ... and a job really runs over shared memory when it says so (its workers
# map the segments), and never under tcp (which shows the look can fail).
foreach(c "shm|shm" "auto|shm" "tcp|tcp")
  string(REPLACE "|" ";" parts "${c}")
  list(GET parts 0 t)
  list(GET parts 1 want)
  add_test(NAME shm_job_${t} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/jobs/shm_job_test.sh
           $<TARGET_FILE:rally-run> $<TARGET_FILE:recover> ${t} ${want})
  set_tests_properties(shm_job_${t} PROPERTIES TIMEOUT 140 LABELS "quick")
endforeach()
# Chaos: kill -9 at random moments from a fixed seed (CHAOS_SEED overrides).
if(DEFINED ENV{CHAOS_SEED})
  set(CHAOS_SEED $ENV{CHAOS_SEED})
else()
  set(CHAOS_SEED 20261129)
endif()
add_test(NAME chaos_kill9 COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/jobs/chaos_test.sh
         $<TARGET_FILE:rally-run> $<TARGET_FILE:recover> ${CHAOS_SEED} 5)
set_tests_properties(chaos_kill9 PROPERTIES TIMEOUT 300)
add_test(NAME chaos_kill9_local COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/jobs/chaos_test.sh
         $<TARGET_FILE:rally-run> $<TARGET_FILE:recover> ${CHAOS_SEED} 5 local)
set_tests_properties(chaos_kill9_local PROPERTIES TIMEOUT 300)
# A restarted worker's load of the global model, counted in page faults:
# the survivors do not receive the checkpoint they hold
add_executable(load_faults progs/load_faults.c)
target_link_libraries(load_faults rally_static)
add_test(NAME recover_load_faults COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/jobs/load_faults_test.sh
         $<TARGET_FILE:rally-run> $<TARGET_FILE:load_faults>)
set_tests_properties(recover_load_faults PROPERTIES TIMEOUT 120)
# ... and the recovery's clock stops only once the replacement is back
add_test(NAME recover_clock_order COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/jobs/load_faults_test.sh
         $<TARGET_FILE:rally-run> $<TARGET_FILE:load_faults> order)
set_tests_properties(recover_clock_order PROPERTIES TIMEOUT 120)
