/*
 * job_start_test.c — the tracker's job state machine (src/tracker/job*.c), driven
 * synchronously through tests/unit/job_rig.h: events in, actions checked; no
 * sockets, threads or sleeps.  This file: start-up: registration, admission, readiness, what fails a job before it runs.
 *
 * Every transition of the job is a case in one of tests/unit/job_*_test.c;
 * tests/unit/tracker_test.c and tracker_recover_test.c keep only what needs
 * sockets and threads (the handshake, connections, a crash seen as a
 * hang-up, a recovery, heartbeats and a grow through real workers), and a
 * case they drive too is named in the comment over it.
 */
#include "job_rig.h"

/* --- start-up -------------------------------------------------------------- */

/* tracker_test: good_client_runs_whole_protocol */
static void whole_protocol_of_one_worker(void **state)
{
    (void)state;
    new_job(1, 10000);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_JOINING);
    open_m(0);
    reg(0, "0", 1);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_STARTING);
    struct rally__msg_assign g = assign_to(0);
    assert_int_equal(g.rank, 0);
    assert_int_equal(g.world, 1);
    assert_int_equal(g.incarnation, 1);
    assert_int_equal(g.epoch, 0); /* the job's first ASSIGN says 0 */
    assert_string_equal(g.peers[0].host, "10.0.0.0");
    assert_int_equal(g.peers[0].port, 4000);
    free(g.peers);
    assert_non_null(event(RALLY__TEV_ASSIGNED));
    assert_string_equal(m[0].what, "rank 0 (on 10.0.0.0)");
    frame(0, RALLY__T_READY, NULL, 0);
    assert_true(sent(0, RALLY__T_GO));
    assert_non_null(event(RALLY__TEV_GO));
    assert_null(event(RALLY__TEV_RECOVERED)); /* no failure: no recovery */
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    unsigned char b[64];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_print_put(&w, "hello tracker");
    frame(0, RALLY__T_PRINT, b, w.len);
    const struct rally__job_act *p = find(RALLY__JOB_PRINT, 0, 0);
    assert_non_null(p);
    assert_int_equal(p->ev.rank, 0);
    assert_string_equal(p->ev.text, "hello tracker");
    frame(0, RALLY__T_HEARTBEAT, NULL, 0);
    assert_int_equal(count_kind(RALLY__JOB_CLOSE), 0);
    frame(0, RALLY__T_SHUTDOWN, NULL, 0);
    assert_true(sent(0, RALLY__T_BYE));
    assert_non_null(event(RALLY__TEV_FINALIZED));
    assert_non_null(event(RALLY__TEV_DONE));
    assert_int_equal(rally__job_phase(j), RALLY__JOB_DONE);
}

/* tracker_test: malformed_frames_are_dropped_and_job_goes_on */
static void bad_registers_are_dropped_and_job_goes_on(void **state)
{
    (void)state;
    new_job(2, 10000);
    unsigned char b[1024];
    struct rally__msg_register r = {.want_rank = -1};
    snprintf(r.task_id, sizeof r.task_id, "7");
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_register_put(&w, &r);
    open_m(2); /* truncated */
    frame(2, RALLY__T_REGISTER, b, w.len - 2);
    assert_non_null(find(RALLY__JOB_CLOSE, 2, 0));
    assert_true(logged("dropping connection from 10.0.0.2:5000: malformed REGISTER"));
    open_m(3); /* trailing bytes */
    frame(3, RALLY__T_REGISTER, b, w.len + 1);
    assert_non_null(find(RALLY__JOB_CLOSE, 3, 0));
    open_m(4); /* a string length past the end */
    unsigned char lie[8] = {0xff, 0xff, 0xff, 0x7f, 'a', 'b', 'c', 'd'};
    frame(4, RALLY__T_REGISTER, lie, sizeof lie);
    assert_non_null(find(RALLY__JOB_CLOSE, 4, 0));
    open_m(5); /* an unknown frame before REGISTER */
    frame(5, 99, NULL, 0);
    assert_non_null(find(RALLY__JOB_CLOSE, 5, 0));
    assert_true(logged("frame type 99 before REGISTER"));
    open_m(6); /* the wrong world: refused with an ABORT that says why */
    reg(6, "5", 9);
    assert_non_null(find(RALLY__JOB_REFUSE, 6, 0));
    char s[RALLY__ERR_MSG_MAX];
    assert_int_equal(abort_to(6, s, sizeof s), RALLY_ECONFIG);
    assert_string_equal(s, "the worker expects 9 workers, this job has 2");
    assert_true(logged("expects 9 workers, this job has 2"));
    open_m(7); /* a rank out of range */
    struct rally__msg_register x = {.want_rank = 5};
    w.len = 0;
    rally__msg_register_put(&w, &x);
    frame(7, RALLY__T_REGISTER, b, w.len);
    assert_non_null(find(RALLY__JOB_REFUSE, 7, 0));
    /* a stranger lost before it registered costs nothing but a line */
    open_m(8);
    lost(8);
    assert_non_null(find(RALLY__JOB_CLOSE, 8, 0));
    assert_true(logged("dropping peer closed"));
    /* none of that hurt the job */
    assert_int_equal(rally__job_phase(j), RALLY__JOB_JOINING);
    running(2);
    for (int i = 0; i < 2; i++)
        frame(i, RALLY__T_SHUTDOWN, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_DONE);
    /* and after the end, a late worker is refused */
    open_m(9);
    reg(9, "9", 0);
    assert_non_null(find(RALLY__JOB_REFUSE, 9, 0));
    assert_int_equal(abort_to(9, s, sizeof s), RALLY_ESTATE);
    assert_string_equal(s, "the job already has all 2 workers");
}

/* tracker_test: silent_client_does_not_stall_others (the job's part: a
 * member that missed its REGISTER deadline is dropped, the job goes on) */
static void member_without_register_is_dropped(void **state)
{
    (void)state;
    new_job(1, 10000);
    open_m(1);
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_DROP,
                               .m = &m[1],
                               .text = "connection from 10.0.0.1:5000: no handshake and REGISTER "
                                       "within 700 ms"});
    assert_non_null(find(RALLY__JOB_CLOSE, 1, 0));
    assert_true(logged("no handshake and REGISTER within 700 ms"));
    assert_int_equal(rally__job_phase(j), RALLY__JOB_JOINING);
    running(1);
}

/* A task id registered twice is refused; ranks follow numeric task ids */
static void duplicate_task_id_is_refused(void **state)
{
    (void)state;
    new_job(2, 10000);
    open_m(1);
    reg(1, "0", 2);
    open_m(2);
    reg(2, "0", 0);
    assert_non_null(find(RALLY__JOB_REFUSE, 2, 0));
    char s[RALLY__ERR_MSG_MAX];
    assert_int_equal(abort_to(2, s, sizeof s), RALLY_ECONFIG);
    assert_string_equal(s, "task id '0' is already registered by 10.0.0.1");
    open_m(0);
    reg(0, "1", 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_STARTING);
    struct rally__msg_assign g = assign_to(0); /* task id "1": rank 1, whoever came first */
    assert_int_equal(g.rank, 1);
    free(g.peers);
    g = assign_to(1);
    assert_int_equal(g.rank, 0);
    free(g.peers);
}

/* Ranks by (host, task id, arrival) when the task ids are not 0..world-1. */
static void ranks_by_host_without_numeric_task_ids(void **state)
{
    (void)state;
    new_job(3, 10000);
    open_m(2);
    reg(2, "b", 0);
    open_m(1);
    reg(1, "a", 0);
    open_m(0);
    reg(0, "", 0);
    for (int i = 0; i < 3; i++) {
        struct rally__msg_assign g = assign_to(i);
        assert_int_equal(g.rank, i); /* hosts 10.0.0.0 < .1 < .2 */
        free(g.peers);
    }
}

/* tracker_test: worker_crash_aborts_the_others */
static void loss_before_go_fails_the_job(void **state)
{
    (void)state;
    new_job(2, 10000);
    join_all(2);
    lost(1);
    assert_non_null(find(RALLY__JOB_CLOSE, 1, 0));
    char s[RALLY__ERR_MSG_MAX];
    assert_int_equal(abort_to(0, s, sizeof s), RALLY_EPEER);
    assert_string_equal(s, "rank 1 disconnected without finalizing (did it crash?)");
    assert_false(sent(1, RALLY__T_ABORT)); /* closed: nothing more to it */
    assert_non_null(event(RALLY__TEV_FAILED));
    int rank;
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_string_equal(rally__job_sentence(j, &rank), s);
    assert_int_equal(rank, 1);
    assert_int_equal(rally__job_code(j), RALLY_EPEER);
    /* a worker that comes now hears why */
    open_m(2);
    reg(2, "1", 0);
    assert_int_equal(abort_to(2, s, sizeof s), RALLY_EPEER);
    assert_string_equal(s, "rank 1 disconnected without finalizing (did it crash?)");
}

/* A worker lost before every worker joined fails the job too. */
static void loss_while_joining_fails_the_job(void **state)
{
    (void)state;
    new_job(2, 10000);
    open_m(0);
    reg(0, "x", 0);
    open_m(1);
    lost(0);
    char s[RALLY__ERR_MSG_MAX];
    assert_int_equal(abort_to(1, s, sizeof s), RALLY_EPEER);
    assert_string_equal(s, "the worker with task id 'x' on 10.0.0.0 disconnected before every "
                           "worker joined");
}

static void error_reaches_the_others(void **state)
{
    (void)state;
    new_job(2, 10000);
    join_all(2);
    unsigned char b[256];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_fail_put(&w, RALLY_EMISMATCH, "count 3 here, 4 at rank 0");
    frame(1, RALLY__T_ERROR, b, w.len);
    char s[RALLY__ERR_MSG_MAX];
    assert_int_equal(abort_to(0, s, sizeof s), RALLY_EMISMATCH);
    /* a mismatch is found by a rank, not its failure */
    assert_string_equal(s, "rank 1 reported: count 3 here, 4 at rank 0");
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    /* the report's words and rank are fields an owner reads, not the
     * sentence's text to take apart */
    int rank = -2;
    assert_string_equal(rally__job_reported(j, &rank), "count 3 here, 4 at rank 0");
    assert_int_equal(rank, 1);
    /* a second failure changes nothing */
    lost(0);
    assert_null(event(RALLY__TEV_FAILED));
    assert_string_equal(rally__job_reported(j, NULL), "count 3 here, 4 at rank 0");
}

/* A worker's loss (ERROR RALLY__ELOST: recovery in memory lost what every
 * holder of it had) fails the job as RALLY_EPEER, and the owner hears that
 * it was a loss (rally-run --auto-resume); another error is none, and a
 * loss reported after the job failed changes nothing. */
static void loss_is_noted_for_the_owner(void **state)
{
    (void)state;
    const char *why = "cannot recover: the local models of ranks 1 are lost";
    unsigned char b[256];
    char s[RALLY__ERR_MSG_MAX];
    for (int k = 0; k < 3; k++) {
        new_job(2, 10000);
        join_all(2);
        struct rally__wbuf w = {b, 0, sizeof b, 0};
        if (k == 2) { /* the job failed first of something else */
            rally__msg_fail_put(&w, RALLY_EPEER, "rally_abort: enough");
            frame(0, RALLY__T_ERROR, b, w.len);
            w.len = 0;
        }
        rally__msg_fail_put(&w, k == 1 ? RALLY_EPEER : RALLY__ELOST, why);
        frame(1, RALLY__T_ERROR, b, w.len);
        if (k < 2) {
            assert_int_equal(abort_to(0, s, sizeof s), RALLY_EPEER);
            assert_string_equal(s, "rank 1 failed: cannot recover: the local models of ranks 1 "
                                   "are lost");
        }
        assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
        assert_int_equal(rally__job_code(j), RALLY_EPEER);
        assert_int_equal(rally__job_lost(j), k == 0);
        if (k < 2)
            done_job(NULL);
    }
}

/* A worker that refused its settings before every worker joined
 * (rally__tclient_fail_start: REGISTER, then ERROR) fails the job with its
 * status; a worker registering after that hears the same sentence, and the
 * log does not repeat it. */
static void start_error_fails_the_job_once(void **state)
{
    (void)state;
    new_job(3, 10000);
    open_m(0);
    reg(0, "0", 0);
    unsigned char b[256];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_fail_put(&w, RALLY_ECONFIG, "RALLY_SNAPSHOT_EVRY is not a rally setting");
    frame(0, RALLY__T_ERROR, b, w.len);
    char s[RALLY__ERR_MSG_MAX];
    assert_int_equal(abort_to(0, s, sizeof s), RALLY_ECONFIG);
    assert_string_equal(s, "the worker with task id '0' failed: RALLY_SNAPSHOT_EVRY is not a "
                           "rally setting");
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_int_equal(rally__job_code(j), RALLY_ECONFIG);
    log_[0] = '\0';
    open_m(1);
    reg(1, "1", 0);
    assert_non_null(find(RALLY__JOB_REFUSE, 1, 0));
    assert_int_equal(abort_to(1, s, sizeof s), RALLY_ECONFIG);
    assert_string_equal(s, "the worker with task id '0' failed: RALLY_SNAPSHOT_EVRY is not a "
                           "rally setting");
    assert_false(logged("RALLY_SNAPSHOT_EVRY")); /* said once, by the failure itself */
}

static void startup_timeout_names_missing_workers(void **state)
{
    (void)state;
    new_job(3, 400);
    open_m(1);
    reg(1, "1", 0);
    assert_int_equal(rally__job_deadline(j), now_ms + 400);
    tick_at(now_ms + 399);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_JOINING);
    tick_at(now_ms + 1);
    char s[RALLY__ERR_MSG_MAX];
    assert_int_equal(abort_to(1, s, sizeof s), RALLY_ETIMEDOUT);
    assert_string_equal(s, "only 1 of 3 workers joined within 400 ms; missing task ids: 0, 2");
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
}

static void startup_timeout_names_unready_ranks(void **state)
{
    (void)state;
    new_job(2, 600);
    join_all(2);
    frame(0, RALLY__T_READY, NULL, 0);
    tick_at(now_ms + 600);
    char s[RALLY__ERR_MSG_MAX];
    assert_int_equal(abort_to(0, s, sizeof s), RALLY_ETIMEDOUT);
    assert_string_equal(s, "rank(s) 1 did not become ready within 600 ms");
}

/* Protocol slips of a registered worker are the job's failure. */
static void protocol_slips_are_fatal(void **state)
{
    (void)state;
    new_job(1, 10000);
    open_m(0);
    reg(0, "0", 0);
    frame(0, RALLY__T_READY, NULL, 0);
    frame(0, RALLY__T_READY, NULL, 0); /* READY after GO: for no epoch STARTING: ignored */
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    frame(0, RALLY__T_REGISTER, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_string_equal(rally__job_sentence(j, NULL), "rank 0 (on 10.0.0.0): REGISTER twice");
    assert_non_null(find(RALLY__JOB_CLOSE, 0, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(whole_protocol_of_one_worker, done_job),
        cmocka_unit_test_teardown(start_error_fails_the_job_once, done_job),
        cmocka_unit_test_teardown(bad_registers_are_dropped_and_job_goes_on, done_job),
        cmocka_unit_test_teardown(member_without_register_is_dropped, done_job),
        cmocka_unit_test_teardown(duplicate_task_id_is_refused, done_job),
        cmocka_unit_test_teardown(ranks_by_host_without_numeric_task_ids, done_job),
        cmocka_unit_test_teardown(loss_before_go_fails_the_job, done_job),
        cmocka_unit_test_teardown(loss_while_joining_fails_the_job, done_job),
        cmocka_unit_test_teardown(error_reaches_the_others, done_job),
        cmocka_unit_test_teardown(loss_is_noted_for_the_owner, done_job),
        cmocka_unit_test_teardown(startup_timeout_names_missing_workers, done_job),
        cmocka_unit_test_teardown(startup_timeout_names_unready_ranks, done_job),
        cmocka_unit_test_teardown(protocol_slips_are_fatal, done_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
