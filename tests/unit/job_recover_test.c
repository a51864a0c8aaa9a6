/*
 * job_recover_test.c — the tracker's job state machine (src/tracker/job*.c), driven
 * synchronously through tests/unit/job_rig.h: events in, actions checked; no
 * sockets, threads or sleeps.  This file: recovery: a rank lost and taken back in place, its inputs, its deadlines.
 *
 * Every transition of the job is a case in one of tests/unit/job_*_test.c;
 * tests/unit/tracker_test.c and tracker_recover_test.c keep only what needs
 * sockets and threads (the handshake, connections, a crash seen as a
 * hang-up, a recovery, heartbeats and a grow through real workers), and a
 * case they drive too is named in the comment over it.
 */
#include "job_rig.h"

/* --- recovery -------------------------------------------------------------- */

/* tracker_test: recover_rank_drops_after_go */
static void recover_rank_drops_after_go(void **state)
{
    (void)state;
    new_job(3, 10000);
    running(3);
    assert_int_equal(rally__job_recoverable(j), 1);
    lost(1);
    assert_non_null(find(RALLY__JOB_CLOSE, 1, 0));
    const struct rally__tracker_event *ev = event(RALLY__TEV_RANK_FAILED);
    assert_non_null(ev);
    assert_int_equal(ev->rank, 1);
    assert_int_equal(ev->epoch, 2);
    assert_string_equal(ev->task_id, "1");
    assert_string_equal(ev->text, "rank 1 disconnected without finalizing");
    assert_int_equal(ev->disconnected, 1); /* its own exit: the launcher's rule needs it */
    char s[RALLY__REASON_MAX];
    for (int i = 0; i < 3; i += 2) {
        assert_int_equal(reset_to(i, s, sizeof s), 2);
        assert_string_equal(s, "rank 1 disconnected without finalizing");
    }
    assert_int_equal(rally__job_phase(j), RALLY__JOB_ASSEMBLING);
    assert_int_equal(rally__job_epoch(j), 2);
    now_ms += 1500;
    rejoin(0, 2, RALLY__KEY_OP(3, 7), 3);
    rejoin(2, 2, RALLY__KEY_OP(3, 8), 3);
    rejoin(2, 2, RALLY__KEY_OP(3, 8), 3); /* a repeat changes nothing */
    assert_int_equal(count_kind(RALLY__JOB_SEND), 0);
    open_m(3); /* the restarted rank 1 */
    reg(3, "1", 0);
    assert_true(logged("rank 1 registered again (incarnation 2) for epoch 2"));
    assert_int_equal(rally__job_phase(j), RALLY__JOB_STARTING);
    for (int i = 0; i < 4; i++) {
        if (i == 1)
            continue;
        struct rally__msg_assign g = assign_to(i);
        assert_int_equal(g.epoch, 2);
        assert_int_equal(g.rank, i == 3 ? 1 : i);
        assert_int_equal(g.incarnation, i == 3 ? 2 : 1);
        assert_int_equal(g.peers[1].incarnation, 2);
        assert_int_equal(g.peers[0].incarnation, 1);
        free(g.peers);
    }
    const struct rally__tracker_event *as = event(RALLY__TEV_ASSIGNED); /* the newcomer only */
    assert_non_null(as);
    assert_int_equal(as->rank, 1);
    assert_int_equal(count_kind(RALLY__JOB_EVENT), 3); /* PROGRESS x2, ASSIGNED */
    now_ms += 500;
    frame(0, RALLY__T_READY, NULL, 0);
    frame(2, RALLY__T_READY, NULL, 0);
    frame(3, RALLY__T_READY, NULL, 0);
    assert_true(sent(0, RALLY__T_GO) && sent(2, RALLY__T_GO) && sent(3, RALLY__T_GO));
    /* GO is not the end: the restarted rank still catches up to version 3, seq 7 */
    assert_null(event(RALLY__TEV_RECOVERED));
    now_ms += 700;
    in_step(0, 2);
    in_step(2, 1); /* an older epoch's: ignored */
    in_step(3, 2);
    assert_null(event(RALLY__TEV_RECOVERED)); /* rank 2 is not back yet */
    now_ms += 100;
    in_step(2, 2);
    ev = event(RALLY__TEV_RECOVERED);
    assert_non_null(ev);
    assert_true(ev->has_position);
    assert_int_equal(ev->position, RALLY__KEY_OP(3, 8));
    assert_int_equal(ev->version, 3);
    assert_true(ev->seconds > 2.79 && ev->seconds < 2.81); /* from the loss to the last IN_STEP */
    assert_string_equal(ev->text, "epoch 2: job back in step 2.80 s after the failure; furthest "
                                  "survivor: version 3, seq 7 (rank 2, checkpoint version 3)");
    in_step(0, 2); /* a repeat: said once */
    assert_null(event(RALLY__TEV_RECOVERED));
    for (int i = 0; i < 4; i++)
        if (i != 1)
            frame(i, RALLY__T_SHUTDOWN, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_DONE);
}

static void recover_failure_during_assembly_starts_next_epoch(void **state)
{
    (void)state;
    new_job(3, 10000);
    running(3);
    lost(2);
    rejoin(0, 2, 0, 0);
    lost(1); /* rank 1 dies before it rejoined */
    assert_true(logged("epoch 3: rank 1 disconnected without finalizing"));
    char s[RALLY__REASON_MAX];
    assert_int_equal(reset_to(0, s, sizeof s), 3);
    assert_int_equal(rally__job_epoch(j), 3);
    rejoin(0, 2, 0, 0); /* stale: a newer RESET is on its way */
    assert_int_equal(count_kind(RALLY__JOB_CLOSE), 0);
    open_m(3);
    reg(3, "1", 0);
    open_m(4);
    reg(4, "2", 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_ASSEMBLING); /* rank 0 not yet back */
    rejoin(0, 3, 0, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_STARTING);
    struct rally__msg_assign g = assign_to(0);
    assert_int_equal(g.epoch, 3);
    assert_int_equal(g.peers[1].incarnation, 2);
    assert_int_equal(g.peers[2].incarnation, 2);
    free(g.peers);
    frame(0, RALLY__T_READY, NULL, 0);
    frame(3, RALLY__T_READY, NULL, 0);
    frame(4, RALLY__T_READY, NULL, 0);
    in_step(0, 3);
    in_step(3, 3);
    in_step(4, 3);
    assert_true(logged("epoch 3: job back in step"));
}

/* A recovery that fails after its GO ("cannot recover: the local models of
 * ranks 1 are lost") is no recovery: no RECOVERED, ever (the summary
 * counted it as recovered when GO was the end). */
static void recover_failed_after_go_is_not_recovered(void **state)
{
    (void)state;
    new_job(3, 10000);
    running(3);
    lost(1);
    rejoin(0, 2, RALLY__KEY_OP(3, 1), 3);
    rejoin(2, 2, RALLY__KEY_OP(3, 1), 3);
    open_m(3);
    reg(3, "1", 0);
    frame(0, RALLY__T_READY, NULL, 0);
    frame(2, RALLY__T_READY, NULL, 0);
    frame(3, RALLY__T_READY, NULL, 0);
    assert_true(sent(0, RALLY__T_GO));
    in_step(0, 2); /* one rank's word is not the job's */
    assert_null(event(RALLY__TEV_RECOVERED));
    unsigned char b[64 + RALLY__ERR_MSG_MAX];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_fail_put(&w, 3, "cannot recover: the local models of ranks 1 are lost");
    frame(2, RALLY__T_ERROR, b, w.len);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    in_step(3, 2);
    assert_null(event(RALLY__TEV_RECOVERED));
    assert_false(logged("job back in step"));
}

/* A failure after ASSIGN but before GO of a recovery starts the next epoch;
 * READY for the ended epoch is ignored. */
static void recover_failure_while_starting(void **state)
{
    (void)state;
    new_job(2, 10000);
    running(2);
    lost(1);
    rejoin(0, 2, 0, 0);
    open_m(2);
    reg(2, "1", 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_STARTING);
    unsigned char b[64];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_link_failed_put(&w, 2, "rank 1 refused");
    frame(0, RALLY__T_LINK_FAILED, b, w.len);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_ASSEMBLING);
    assert_int_equal(rally__job_epoch(j), 3);
    assert_true(sent(0, RALLY__T_RESET) && sent(2, RALLY__T_RESET));
    frame(2, RALLY__T_READY, NULL, 0); /* for epoch 2: ignored */
    assert_int_equal(count_kind(RALLY__JOB_CLOSE), 0);
    rejoin(0, 3, 0, 0);
    rejoin(2, 3, 0, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_STARTING);
}

static void recover_stale_incarnation_is_replaced(void **state)
{
    (void)state;
    new_job(2, 10000);
    running(2);
    open_m(2); /* rank 1 hangs; its launcher starts another one */
    reg(2, "1", 0);
    assert_non_null(find(RALLY__JOB_CLOSE, 1, 0)); /* fenced */
    assert_true(logged("[7 1 2] rank 1 replaced by a new incarnation"));
    assert_true(sent(0, RALLY__T_RESET));
    assert_false(sent(1, RALLY__T_RESET));
    assert_non_null(find(RALLY__JOB_ADMIT, 2, 0));
    rejoin(0, 2, 0, 0);
    struct rally__msg_assign g = assign_to(2);
    assert_int_equal(g.rank, 1);
    assert_int_equal(g.incarnation, 2);
    free(g.peers);
    g = assign_to(0);
    assert_int_equal(g.peers[1].incarnation, 2);
    free(g.peers);
}


/* Rank 1 dies and the job recovers (as recover_rank_drops_after_go); its
 * replacement is member 3. */
static void replace_rank_1(void)
{
    lost(1);
    rejoin(0, 2, RALLY__KEY_OP(2, 0), 2);
    rejoin(2, 2, RALLY__KEY_OP(2, 0), 2);
    open_m(3);
    reg(3, "1", 0);
    for (int i = 0; i < 4; i++)
        if (i != 1)
            frame(i, RALLY__T_READY, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
}

/* A replacement whose INPUT differs from its predecessor's fails the job
 * (RALLY_ECONFIG) with a sentence naming the rank and both inputs, to every
 * worker; one that read the same input goes on. */
static void restarted_rank_with_another_input_fails_the_job(void **state)
{
    (void)state;
    new_job(3, 10000);
    running(3);
    input(0, "range", 0x10);
    assert_true(sent(0, RALLY__T_INPUT_OK));
    input(1, "range", 0x11);
    input(1, "range", 0x12); /* the same incarnation again: its newest word counts */
    assert_true(sent(1, RALLY__T_INPUT_OK));
    input(2, "range", 0x13);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    replace_rank_1();
    input(3, "range", 0x12); /* the same rows: it may go on */
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    assert_int_equal(count_kind(RALLY__JOB_SEND), 1);
    assert_true(sent(3, RALLY__T_INPUT_OK));
    lost(3); /* and again, now with other rows */
    rejoin(0, 3, RALLY__KEY_OP(2, 0), 2);
    rejoin(2, 3, RALLY__KEY_OP(2, 0), 2);
    open_m(4);
    reg(4, "1", 0);
    for (int i = 0; i < 5; i++)
        if (i != 1 && i != 3)
            frame(i, RALLY__T_READY, NULL, 0);
    input(4, "range", 0xabcdef0123456789);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_false(sent(4, RALLY__T_INPUT_OK));
    assert_int_equal(rally__job_code(j), RALLY_ECONFIG);
    const char *want = "rank 1 read another input after its restart: incarnation 3 has "
                       "fingerprint abcdef0123456789 (scheme range), incarnation 1 had "
                       "0000000000000012 (scheme range), so the model would mix both; restore "
                       "the rank's input, or set rally_input_check=0 to go on with it";
    char s[RALLY__ERR_MSG_MAX];
    for (int i = 0; i < 5; i++) {
        if (i == 1 || i == 3)
            continue;
        assert_int_equal(abort_to(i, s, sizeof s), RALLY_ECONFIG);
        assert_string_equal(s, want);
    }
    const struct rally__tracker_event *ev = event(RALLY__TEV_FAILED);
    assert_non_null(ev);
    assert_string_equal(ev->text, want);
}

/* Another partitioning scheme is another input too; a rank whose first
 * incarnation never said sets it with its replacement; a malformed or
 * empty INPUT is a protocol slip. */
static void input_scheme_and_first_word(void **state)
{
    (void)state;
    new_job(3, 10000);
    running(3);
    input(0, "range", 0x10);
    input(2, "range", 0x13);
    replace_rank_1(); /* rank 1's first incarnation died before its INPUT */
    input(3, "range", 0x99);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    open_m(4); /* rank 2 replaced by a new incarnation that partitions otherwise */
    reg(4, "2", 0);
    rejoin(0, 3, 0, 0);
    rejoin(3, 3, 0, 0);
    for (int i = 0; i < 5; i++)
        if (i != 1 && i != 2)
            frame(i, RALLY__T_READY, NULL, 0);
    input(4, "hash", 0x13);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    char s[RALLY__ERR_MSG_MAX];
    abort_to(0, s, sizeof s);
    assert_non_null(strstr(s, "rank 2 read another input after its restart: incarnation 2 has "
                              "fingerprint 0000000000000013 (scheme hash), incarnation 1 had "
                              "0000000000000013 (scheme range)"));
    rally__job_free(j);

    new_job(2, 10000);
    running(2);
    input(0, "", 0x10);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_int_equal(rally__job_code(j), RALLY_EPROTO);
    abort_to(1, s, sizeof s);
    assert_string_equal(s, "rank 0 (on 10.0.0.0): malformed INPUT (12 bytes)");
}

/* Re-registration that cannot be taken in. */
static void reregistration_refusals(void **state)
{
    (void)state;
    new_job(2, 10000);
    join_all(2);
    open_m(2); /* before GO nothing is recoverable */
    reg(2, "1", 0);
    char s[RALLY__ERR_MSG_MAX];
    assert_int_equal(abort_to(2, s, sizeof s), RALLY_ESTATE);
    assert_string_equal(s, "the job already has all 2 workers");
    ready_all(2);
    open_m(3);
    reg(3, "zz", 0);
    assert_int_equal(abort_to(3, s, sizeof s), RALLY_ESTATE);
    assert_string_equal(s, "the job already has all 2 workers and none has task id 'zz'");
    frame(0, RALLY__T_SHUTDOWN, NULL, 0);
    open_m(4);
    reg(4, "0", 0);
    assert_int_equal(abort_to(4, s, sizeof s), RALLY_ESTATE);
    assert_string_equal(s, "rank 0 (task id '0') already finalized");
    open_m(5);
    reg(5, "1", 0);
    assert_int_equal(abort_to(5, s, sizeof s), RALLY_ESTATE);
    assert_string_equal(s, "the job is finishing: rank 1 cannot rejoin it");
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
}

/* tracker_test: recover_heartbeat_silence_fails_the_rank */
static void recover_heartbeat_silence_fails_the_rank(void **state)
{
    (void)state;
    new_job(2, 10000);
    rally__job_set_heartbeat_timeout(j, 400);
    running(2);
    int64_t t0 = now_ms;
    frame(1, RALLY__T_HEARTBEAT, NULL, 0);
    assert_int_equal(rally__job_deadline(j), t0 + 400);
    for (int k = 1; k <= 12; k++) { /* beats keep both alive */
        now_ms = t0 + 50 * k;
        frame(0, RALLY__T_HEARTBEAT, NULL, 0);
        frame(1, RALLY__T_HEARTBEAT, NULL, 0);
        tick_at(now_ms);
        assert_int_equal(count_kind(RALLY__JOB_SEND), 0);
    }
    int64_t last = now_ms;
    now_ms = last + 200;
    frame(0, RALLY__T_HEARTBEAT, NULL, 0);
    tick_at(last + 399);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    tick_at(last + 400);
    assert_non_null(find(RALLY__JOB_CLOSE, 1, 0));
    assert_non_null(event(RALLY__TEV_RANK_FAILED));
    assert_int_equal(event(RALLY__TEV_RANK_FAILED)->disconnected, 0); /* fenced alive */
    char s[RALLY__REASON_MAX];
    assert_int_equal(reset_to(0, s, sizeof s), 2);
    assert_string_equal(s, "rank 1 sent no heartbeat for 400 ms");
    assert_true(logged("[7 1 2] rank 1 sent no heartbeat for 400 ms"));
    /* a heartbeat with a body is a protocol slip */
    frame(0, RALLY__T_HEARTBEAT, "x", 1);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
}

/* Liveness holds from the ASSIGN on, not from a first heartbeat: a worker
 * that never beats (stopped before its first one) is failed after the
 * heartbeat timeout, both at the start and when it replaces a dead rank. */
static void silent_from_assign_fails_the_rank(void **state)
{
    (void)state;
    new_job(2, 60000);
    rally__job_set_heartbeat_timeout(j, 400);
    join_all(2);
    int64_t t0 = now_ms;
    assert_int_equal(rally__job_deadline(j), t0 + 400);
    ready_all(2);
    frame(1, RALLY__T_HEARTBEAT, NULL, 0);
    now_ms = t0 + 300;
    frame(1, RALLY__T_HEARTBEAT, NULL, 0);
    tick_at(t0 + 399);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    tick_at(t0 + 400); /* rank 0 never beat: fenced all the same */
    assert_non_null(find(RALLY__JOB_CLOSE, 0, 0));
    assert_true(logged("[7 0 2] rank 0 sent no heartbeat within 400 ms of its address book"));
    /* its replacement registers, gets the book, and stops before it beats */
    open_m(2);
    reg(2, "0", 0);
    rejoin(1, 2, 0, 0);
    struct rally__msg_assign g = assign_to(2);
    assert_int_equal(g.incarnation, 2);
    free(g.peers);
    int64_t t1 = now_ms;
    frame(1, RALLY__T_HEARTBEAT, NULL, 0);
    now_ms = t1 + 300;
    frame(1, RALLY__T_HEARTBEAT, NULL, 0);
    tick_at(t1 + 399);
    assert_int_equal(rally__job_epoch(j), 2);
    tick_at(t1 + 400);
    assert_non_null(find(RALLY__JOB_CLOSE, 2, 0));
    assert_int_equal(rally__job_epoch(j), 3);
    assert_true(logged("[7 0 3] rank 0 sent no heartbeat within 400 ms of its address book"));
}

/* Before the first GO a worker silent since its ASSIGN fails the job, with
 * that reason, instead of the job waiting out its start-up timeout. */
static void silent_before_go_fails_the_job_at_once(void **state)
{
    (void)state;
    new_job(2, 600000);
    rally__job_set_heartbeat_timeout(j, 400);
    join_all(2);
    int64_t t0 = now_ms;
    frame(1, RALLY__T_READY, NULL, 0);
    now_ms = t0 + 100;
    frame(1, RALLY__T_HEARTBEAT, NULL, 0);
    tick_at(t0 + 400);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_string_equal(rally__job_sentence(j, NULL),
                        "rank 0 sent no heartbeat within 400 ms of its address book");
}

/* The address book of a recovery goes out late in the epoch (survivors
 * were busy): the wiring gets the whole start-up timeout from there, not
 * what was left of it. */
static void recover_wiring_gets_its_own_deadline(void **state)
{
    (void)state;
    new_job(2, 1000);
    rally__job_set_heartbeat_timeout(j, 5000);
    running(2);
    frame(0, RALLY__T_HEARTBEAT, NULL, 0);
    int64_t t0 = now_ms;
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_DIED, .rank = 1, .text = "killed"});
    open_m(2);
    reg(2, "1", 0);
    now_ms = t0 + 900;
    rejoin(0, 2, 0, 0); /* the busy survivor, late: the book goes out */
    assert_int_equal(rally__job_phase(j), RALLY__JOB_STARTING);
    tick_at(t0 + 1000);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_STARTING);
    assert_int_equal(rally__job_deadline(j), t0 + 1900);
    frame(0, RALLY__T_READY, NULL, 0);
    frame(2, RALLY__T_READY, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
}

/* An epoch that does not come together in time fails the job, unless the
 * missing ranks are live survivors that keep beating (busy computing). */
static void recover_epoch_timeout(void **state)
{
    (void)state;
    new_job(2, 1000);
    rally__job_set_heartbeat_timeout(j, 5000);
    running(2);
    frame(0, RALLY__T_HEARTBEAT, NULL, 0);
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_DIED, .rank = 1, .text = "killed"});
    int64_t t0 = now_ms;
    open_m(2);
    reg(2, "1", 0);
    assert_int_equal(rally__job_deadline(j), t0 + 1000);
    tick_at(t0 + 1000); /* rank 0 has not rejoined but beats: look again in a second */
    assert_int_equal(rally__job_phase(j), RALLY__JOB_ASSEMBLING);
    assert_int_equal(rally__job_deadline(j), t0 + 2000);
    lost(0);
    assert_int_equal(rally__job_epoch(j), 3);
    tick_at(now_ms + 1000); /* nobody for rank 0 now */
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_string_equal(rally__job_sentence(j, NULL),
                        "epoch 3: rank(s) 0 did not rejoin within 1000 ms");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(restarted_rank_with_another_input_fails_the_job, done_job),
        cmocka_unit_test_teardown(input_scheme_and_first_word, done_job),
        cmocka_unit_test_teardown(recover_rank_drops_after_go, done_job),
        cmocka_unit_test_teardown(recover_failed_after_go_is_not_recovered, done_job),
        cmocka_unit_test_teardown(recover_failure_during_assembly_starts_next_epoch, done_job),
        cmocka_unit_test_teardown(recover_failure_while_starting, done_job),
        cmocka_unit_test_teardown(recover_stale_incarnation_is_replaced, done_job),
        cmocka_unit_test_teardown(reregistration_refusals, done_job),
        cmocka_unit_test_teardown(recover_heartbeat_silence_fails_the_rank, done_job),
        cmocka_unit_test_teardown(silent_from_assign_fails_the_rank, done_job),
        cmocka_unit_test_teardown(recover_wiring_gets_its_own_deadline, done_job),
        cmocka_unit_test_teardown(silent_before_go_fails_the_job_at_once, done_job),
        cmocka_unit_test_teardown(recover_epoch_timeout, done_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
