/*
 * job_watch_test.c — the tracker's job state machine (src/tracker/job*.c), driven
 * synchronously through tests/unit/job_rig.h: events in, actions checked; no
 * sockets, threads or sleeps.  This file: the progress watch: a rank that keeps the others waiting, and the recovery round.
 *
 * Every transition of the job is a case in one of tests/unit/job_*_test.c;
 * tests/unit/tracker_test.c and tracker_recover_test.c keep only what needs
 * sockets and threads (the handshake, connections, a crash seen as a
 * hang-up, a recovery, heartbeats and a grow through real workers), and a
 * case they drive too is named in the comment over it.
 */
#include "job_rig.h"

/* --- the progress watch ------------------------------------------------------ */

/* Ranks 0, 1, 3 wait in allreduce #12 of version 5 (op 13), rank 0 since a
 * second before t0; rank 2 stands in its own code before it, beating every
 * second without moving until the watch fires (rally-run's case). */
static int64_t rank_2_keeps_the_others_waiting(int fail, int restartable)
{
    new_job(4, 10000);
    rally__job_set_progress_timeout(j, 60000, fail);
    if (!restartable)
        rally__job_no_restart(j, 2);
    running(4);
    now_ms += 5000; /* the waiters' clock starts when they began to wait, after GO */
    int64_t t0 = now_ms;
    uint64_t k = RALLY__KEY_OP(5, 13);
    beat(0, k, 1, "allreduce", 1000);
    beat(1, k, 1, "allreduce", 0);
    beat(3, k, 1, "allreduce", 0);
    beat(2, k, 0, "", 40000);
    assert_int_equal(rally__job_deadline(j), t0 + 59000);
    for (int s = 1; s < 59; s++) {
        now_ms = t0 + 1000 * s;
        for (int i = 0; i < 4; i++)
            beat(i, k, i != 2, i != 2 ? "allreduce" : "", 99);
        tick_at(now_ms);
        assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
        assert_int_equal(count_kind(RALLY__JOB_SEND), 0);
    }
    tick_at(t0 + 58999);
    assert_int_equal(rally__job_epoch(j), 1);
    tick_at(t0 + 59000);
    return t0;
}

#define STUCK_2                                                                                    \
    "ranks 0, 1, 3 wait in allreduce #12 of version 5; rank 2 has not called it for 60 s"

/* The restart policy: rank 2 is named and fenced (the launcher kills and
 * restarts it), the others hear of it in the RESET. */
static void stuck_rank_is_named_and_fenced(void **state)
{
    (void)state;
    rank_2_keeps_the_others_waiting(0, 1);
    assert_non_null(find(RALLY__JOB_CLOSE, 2, 0));
    const struct rally__tracker_event *ev = event(RALLY__TEV_RANK_FAILED);
    assert_non_null(ev);
    assert_int_equal(ev->rank, 2);
    assert_int_equal(ev->disconnected, 0); /* fenced alive */
    assert_string_equal(ev->text, STUCK_2);
    char s[RALLY__REASON_MAX];
    assert_int_equal(reset_to(0, s, sizeof s), 2);
    assert_string_equal(s, STUCK_2);
    assert_int_equal(count_kind(RALLY__JOB_CLOSE), 1);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_ASSEMBLING);
}

/* The fail policy: the job fails with the same sentence. */
static void stuck_rank_fails_the_job(void **state)
{
    (void)state;
    rank_2_keeps_the_others_waiting(1, 1);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_int_equal(rally__job_code(j), RALLY_ETIMEDOUT);
    int rank;
    assert_string_equal(rally__job_sentence(j, &rank), STUCK_2);
    assert_int_equal(rank, -1); /* no death: the verdict is the sentence */
    char s[RALLY__ERR_MSG_MAX];
    assert_int_equal(abort_to(2, s, sizeof s), RALLY_ETIMEDOUT);
    assert_string_equal(s, STUCK_2);
}

/* The restart policy, but its owner would not restart rank 2 (its restarts
 * are exhausted): the job fails with the sentence, as the fail policy, and
 * nobody is fenced or counted failed. */
static void stuck_rank_with_no_restart_fails_the_job(void **state)
{
    (void)state;
    rank_2_keeps_the_others_waiting(0, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_int_equal(rally__job_code(j), RALLY_ETIMEDOUT);
    int rank;
    assert_string_equal(rally__job_sentence(j, &rank), STUCK_2);
    assert_int_equal(rank, -1);
    assert_null(event(RALLY__TEV_RANK_FAILED));
    assert_int_equal(rally__job_epoch(j), 1);
}

/* Every rank in its own code for an hour (a long iteration): nobody waits
 * for anybody, so nobody is named. */
static void no_alarm_while_every_rank_computes(void **state)
{
    (void)state;
    new_job(3, 10000);
    rally__job_set_progress_timeout(j, 60000, 0);
    running(3);
    int64_t t0 = now_ms;
    for (int i = 0; i < 3; i++)
        beat(i, RALLY__KEY_OP(2, 4), 0, "", 0);
    assert_int_equal(rally__job_deadline(j), RALLY__NEVER);
    for (int s = 1; s <= 60; s++) {
        now_ms = t0 + 60000 * s;
        for (int i = 0; i < 3; i++)
            beat(i, RALLY__KEY_OP(2, 4), 0, "", (uint64_t)(60000 * s));
        tick_at(now_ms);
    }
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    assert_int_equal(rally__job_epoch(j), 1);
    /* ... nor while every rank waits in the same collective */
    for (int i = 0; i < 3; i++)
        beat(i, RALLY__KEY_OP(2, 4), 1, "broadcast", 0);
    tick_at(now_ms + 3600000);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    assert_int_equal(rally__job_deadline(j), RALLY__NEVER);
}

/* A rank that is slow but moves is not stuck: each step it takes starts
 * its clock again, and once it calls the collective nobody waits. */
static void no_alarm_when_the_slow_rank_moves(void **state)
{
    (void)state;
    new_job(2, 10000);
    rally__job_set_progress_timeout(j, 60000, 0);
    running(2);
    int64_t t0 = now_ms;
    uint64_t k = RALLY__KEY_OP(1, 9);
    beat(0, k, 1, "allreduce", 0);
    beat(1, RALLY__KEY_OP(1, 7), 0, "", 0);
    assert_int_equal(rally__job_deadline(j), t0 + 60000);
    now_ms = t0 + 40000;
    beat(1, RALLY__KEY_OP(1, 8), 1, "broadcast", 0); /* it moved: its clock starts again */
    now_ms = t0 + 50000;
    beat(1, RALLY__KEY_OP(1, 9), 0, "", 0);
    assert_int_equal(rally__job_deadline(j), t0 + 110000);
    tick_at(t0 + 100000);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    now_ms = t0 + 109000;
    beat(1, k, 1, "allreduce", 0); /* it called it */
    tick_at(t0 + 200000);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    assert_int_equal(rally__job_epoch(j), 1);
    assert_int_equal(rally__job_deadline(j), RALLY__NEVER);
}

/* A recovery round in which a live survivor never arrives (it beats, so
 * the epoch's own deadline keeps waiting for it) ends the same way, once it
 * has stood still for the progress timeout since the round began. */
static void recovery_round_names_the_rank_that_never_comes(void **state)
{
    (void)state;
    new_job(3, 10000);
    rally__job_set_heartbeat_timeout(j, 5000);
    rally__job_set_progress_timeout(j, 60000, 0);
    running(3);
    beat(2, RALLY__KEY_OP(3, 5), 0, "", 0);
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_DIED, .rank = 1, .text = "killed"});
    int64_t t0 = now_ms;
    open_m(3);
    reg(3, "1", 0);
    rejoin(0, 2, RALLY__KEY_OP(3, 5), 3);
    for (int s = 1; s < 60; s++) {
        now_ms = t0 + 1000 * s;
        beat(0, RALLY__KEY_OP(3, 5), 1, "allreduce", 99);
        beat(2, RALLY__KEY_OP(3, 5), 0, "", 99);
        beat(3, RALLY__KEY_BOOT(0), 0, "", 99);
        tick_at(now_ms);
        assert_int_equal(rally__job_epoch(j), 2);
    }
    assert_int_equal(rally__job_phase(j), RALLY__JOB_ASSEMBLING);
    tick_at(t0 + 60000);
    const char *want = "ranks 0, 1 wait to recover; rank 2 has not rejoined for 60 s "
                       "(it is in its own code before call #4 of version 3)";
    assert_non_null(find(RALLY__JOB_CLOSE, 2, 0));
    assert_non_null(event(RALLY__TEV_RANK_FAILED));
    assert_string_equal(event(RALLY__TEV_RANK_FAILED)->text, want);
    assert_true(logged("epoch 3: ranks 0, 1 wait to recover; rank 2 has not rejoined"));
    assert_int_equal(rally__job_epoch(j), 3);
    /* rank 2 comes back; after GO, nobody is blamed for the time the
     * recovery took (rank 1 has said nothing since it registered) */
    rejoin(0, 3, RALLY__KEY_OP(3, 5), 3);
    open_m(4);
    reg(4, "2", 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_STARTING);
    frame(0, RALLY__T_READY, NULL, 0);
    frame(3, RALLY__T_READY, NULL, 0);
    frame(4, RALLY__T_READY, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    int64_t go = now_ms;
    tick_at(go + 1);
    tick_at(go + 4000);
    assert_int_equal(rally__job_epoch(j), 3);
}

/* The fail policy in a recovery round: the sentence names the epoch. */
static void recovery_round_fails_the_job(void **state)
{
    (void)state;
    new_job(2, 10000);
    rally__job_set_heartbeat_timeout(j, 5000);
    rally__job_set_progress_timeout(j, 3000, 1);
    running(2);
    beat(1, RALLY__KEY_BOOT(2), 0, "", 0);
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_DIED, .rank = 0, .text = "killed"});
    int64_t t0 = now_ms;
    open_m(2);
    reg(2, "0", 0);
    now_ms = t0 + 2000;
    beat(1, RALLY__KEY_BOOT(2), 0, "", 2000);
    tick_at(t0 + 3000);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_string_equal(rally__job_sentence(j, NULL),
                        "epoch 2: rank 0 waits to recover; rank 1 has not rejoined for 3 s (it "
                        "is in its own code before call #2 before rally_load_checkpoint)");
}

static void recover_link_failed_resets_without_fencing(void **state)
{
    (void)state;
    new_job(2, 10000);
    running(2);
    unsigned char b[256];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_link_failed_put(&w, 0, "rank 1 stalled for 1000 ms"); /* epoch 0: the first */
    frame(0, RALLY__T_LINK_FAILED, b, w.len);
    char s[RALLY__REASON_MAX];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(reset_to(i, s, sizeof s), 2);
        assert_string_equal(s, "rank 0 reported: rank 1 stalled for 1000 ms");
    }
    assert_int_equal(count_kind(RALLY__JOB_CLOSE), 0);
    assert_null(event(RALLY__TEV_RANK_FAILED));
    rejoin(0, 2, 0, 0);
    rejoin(1, 2, 0, 0);
    for (int i = 0; i < 2; i++) {
        struct rally__msg_assign g = assign_to(i);
        assert_int_equal(g.epoch, 2);
        assert_int_equal(g.incarnation, 1); /* nobody was fenced */
        assert_int_equal(g.peers[1 - i].incarnation, 1);
        free(g.peers);
    }
    ready_all(2);
    in_step(0, 2);
    in_step(1, 2);
    assert_non_null(event(RALLY__TEV_RECOVERED));
    /* a report about an epoch that is over changes nothing */
    w.len = 0;
    rally__msg_link_failed_put(&w, 1, "old news");
    frame(1, RALLY__T_LINK_FAILED, b, w.len);
    assert_true(logged("ignoring rank 1's report for epoch 1 (now 2): old news"));
    assert_int_equal(count_kind(RALLY__JOB_SEND), 0);
    /* one about an epoch to come is a protocol slip */
    w.len = 0;
    rally__msg_link_failed_put(&w, 7, "future");
    frame(1, RALLY__T_LINK_FAILED, b, w.len);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
}

/* tracker_test: recover_launcher_reports_death */
static void recover_launcher_reports_death(void **state)
{
    (void)state;
    new_job(2, 10000);
    running(2);
    run((struct rally__job_ev){
        .kind = RALLY__JOB_EV_DIED, .rank = 1, .text = "killed by signal 9"});
    assert_int_equal(rally__job_epoch(j), 2);
    assert_non_null(find(RALLY__JOB_CLOSE, 1, 0));
    assert_true(sent(0, RALLY__T_RESET));
    assert_true(logged("[7 1 2] the launcher reported rank 1 dead: killed by signal 9"));
    run((struct rally__job_ev){
        .kind = RALLY__JOB_EV_DIED, .rank = 1, .text = "killed by signal 9"});
    assert_int_equal(rally__job_epoch(j), 2); /* known: nothing more */
    const struct rally__job_act *a;
    assert_int_equal(nacts(&a), 0);
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_DIED, .rank = 9, .text = "?"});
    assert_int_equal(nacts(&a), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(stuck_rank_is_named_and_fenced, done_job),
        cmocka_unit_test_teardown(stuck_rank_fails_the_job, done_job),
        cmocka_unit_test_teardown(stuck_rank_with_no_restart_fails_the_job, done_job),
        cmocka_unit_test_teardown(no_alarm_while_every_rank_computes, done_job),
        cmocka_unit_test_teardown(no_alarm_when_the_slow_rank_moves, done_job),
        cmocka_unit_test_teardown(recovery_round_names_the_rank_that_never_comes, done_job),
        cmocka_unit_test_teardown(recovery_round_fails_the_job, done_job),
        cmocka_unit_test_teardown(recover_link_failed_resets_without_fencing, done_job),
        cmocka_unit_test_teardown(recover_launcher_reports_death, done_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
