/*
 * tracker_recover_test.c — the embedded tracker (src/tracker/server.c)
 * against real workers (src/tracker/client.c), all in one process
 * (tests/unit/tracker_rig.h): a recovery, heartbeats, a grow and what observers
 * see (reports, a rank's counters).  The job's other transitions are pure
 * cases in tests/job_*_test.c.
 */
#include "tracker_rig.h"

/* --- recovery ------------------------------------------------------------- */

/* A blocking client call on its own thread. */
enum { OP_JOIN, OP_READY, OP_REJOIN };
struct op {
    pthread_t th;
    int kind;
    const char *task;
    struct rally__tclient *c;
    struct rally__err e;
    int rc;
};

/* docs/protocol.md: phase 2, version 3, q = 8 (user collective seq 7) */
#define POS_V3_S7 RALLY__KEY_OP(3, 8) /* version 3, user seq 7 */

static void *op_main(void *arg)
{
    struct op *o = arg;
    if (o->kind == OP_JOIN)
        o->rc = joinc(o->c, o->task, NULL, &o->e);
    else if (o->kind == OP_READY)
        o->rc = rally__tclient_ready(o->c, rally__deadline(WAIT_MS), &o->e);
    else
        o->rc = rally__tclient_rejoin(o->c, POS_V3_S7 - (o->c->rank == 0), 3,
                                      rally__deadline(WAIT_MS), &o->e);
    return NULL;
}

static void op_start(struct op *o, int kind, struct rally__tclient *c, const char *task)
{
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->c = c;
    o->task = task;
    assert_int_equal(pthread_create(&o->th, NULL, op_main, o), 0);
}

static int op_end(struct op *o)
{
    pthread_join(o->th, NULL);
    if (o->rc != RALLY_OK)
        print_message("op %d: %s\n", o->kind, o->e.msg);
    return o->rc;
}

/* n clients join (task ids "0".."n-1") and pass READY/GO together. */
static void job(struct rally__tclient *c, int n)
{
    static const char *ids[] = {"0", "1", "2", "3"};
    struct op o[4];
    for (int i = 0; i < n; i++)
        op_start(&o[i], OP_JOIN, &c[i], ids[i]);
    for (int i = 0; i < n; i++)
        assert_int_equal(op_end(&o[i]), RALLY_OK);
    for (int i = 0; i < n; i++)
        op_start(&o[i], OP_READY, &c[i], NULL);
    for (int i = 0; i < n; i++)
        assert_int_equal(op_end(&o[i]), RALLY_OK);
}

/* Polls c's alarm line until check says something; returns that. */
static int alarm_rc(struct rally__tclient *c, struct rally__err *e)
{
    int64_t deadline = rally__deadline(WAIT_MS);
    for (;;) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, rally__ms_left(deadline)) != 1)
            return RALLY_ETIMEDOUT;
        rally__err_clear(e);
        int rc = rally__tclient_check(c, e);
        if (rc != RALLY_OK)
            return rc;
    }
}

/* 1 when nothing arrives on c's alarm line within ms. */
static int quiet(struct rally__tclient *c, int ms)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    return poll(&p, 1, ms) == 0;
}

static void recover_rank_drops_after_go(void **state_)
{
    start(3, 10000, 0);
    struct rally__tclient c[3];
    struct rally__err e = {0, ""};
    job(c, 3);
    assert_int_equal(c[0].epoch, 0); /* the job's first ASSIGN */
    rally__tclient_close(&c[1]);     /* rank 1 "crashes" */
    for (int i = 0; i < 3; i += 2) {
        assert_int_equal(alarm_rc(&c[i], &e), RALLY__ERESET);
        assert_string_equal(e.msg, "the tracker ordered recovery (epoch 2): rank 1 "
                                   "disconnected without finalizing");
        assert_int_equal(c[i].reset_epoch, 2);
    }
    assert_true(logged(fx.log, "[7 1 1] rank 1 disconnected without finalizing"));
    assert_int_equal(state(NULL), RALLY__TRACKER_RUNNING);
    struct op o[3];
    op_start(&o[0], OP_REJOIN, &c[0], NULL);
    op_start(&o[2], OP_REJOIN, &c[2], NULL);
    rally__sleep_ms(50);
    op_start(&o[1], OP_JOIN, &c[1], "1"); /* the restarted rank 1 */
    for (int i = 0; i < 3; i++)
        assert_int_equal(op_end(&o[i]), RALLY_OK);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(c[i].rank, i);
        assert_int_equal(c[i].epoch, 2);
        assert_int_equal(c[i].peers[1].incarnation, 2);
        assert_int_equal(c[i].peers[0].incarnation, 1);
    }
    assert_int_equal(c[1].incarnation, 2);
    assert_int_equal(c[0].incarnation, 1);
    for (int i = 0; i < 3; i++)
        op_start(&o[i], OP_READY, &c[i], NULL);
    for (int i = 0; i < 3; i++)
        assert_int_equal(op_end(&o[i]), RALLY_OK);
    /* GO went out (the event with it), but the job is back in step only
     * when every rank says so */
    pthread_mutex_lock(&fx.mu);
    assert_null(strstr(fx.log, "back in step"));
    pthread_mutex_unlock(&fx.mu);
    for (int i = 0; i < 3; i++)
        rally__tclient_in_step(&c[i]);
    /* rank 2 stands at version 3 seq 7, rank 0 one step behind */
    assert_true(logged(fx.log, "] epoch 2: job back in step "));
    assert_true(logged(fx.log, "s after the failure; furthest survivor: version 3, seq 7 (rank 2, "
                               "checkpoint version 3)"));
    for (int i = 0; i < 3; i++)
        assert_int_equal(rally__tclient_shutdown(&c[i], rally__deadline(WAIT_MS), &e), RALLY_OK);
    assert_int_equal(state(NULL), RALLY__TRACKER_DONE);
    for (int i = 0; i < 3; i++)
        rally__tclient_close(&c[i]);
    stop();
}

static void recover_heartbeat_silence_fails_the_rank(void **state_)
{
    start(2, 10000, 0);
    pthread_mutex_lock(&fx.mu);
    rally__tracker_set_heartbeat_timeout(fx.t, 1000);
    pthread_mutex_unlock(&fx.mu);
    struct rally__tclient c[2];
    struct rally__err e = {0, ""};
    job(c, 2);
    /* watched from their ASSIGN on, as the library's workers beat from then */
    assert_int_equal(rally__tclient_heartbeat_start(&c[0], 50, &e), RALLY_OK);
    assert_int_equal(rally__tclient_heartbeat_start(&c[1], 50, &e), RALLY_OK);
    rally__sleep_ms(1500); /* beats keep both alive */
    assert_int_equal(state(NULL), RALLY__TRACKER_RUNNING);
    assert_true(quiet(&c[0], 0));
    int64_t t0 = rally__now_ms();
    rally__tclient_heartbeat_stop(&c[1]); /* rank 1 hangs */
    assert_int_equal(alarm_rc(&c[0], &e), RALLY__ERESET);
    assert_true(rally__now_ms() - t0 >= 300);
    assert_non_null(strstr(e.msg, "rank 1 sent no heartbeat for "));
    assert_true(logged(fx.log, "[7 1 1] rank 1 sent no heartbeat for "));
    assert_int_equal(alarm_rc(&c[1], &e), RALLY_EPEER);
    rally__tclient_close(&c[0]);
    rally__tclient_close(&c[1]);
    stop();
}

static void recover_launcher_reports_death(void **state_)
{
    start(2, 10000, 0);
    struct rally__tclient c[2];
    struct rally__err e = {0, ""};
    job(c, 2);
    pthread_mutex_lock(&fx.mu);
    assert_int_equal(rally__tracker_recoverable(fx.t), 1);
    rally__tracker_rank_died(fx.t, 1, "killed by signal 9");
    assert_int_equal(rally__tracker_epoch(fx.t), 2);
    rally__tracker_rank_died(fx.t, 1, "killed by signal 9"); /* known: nothing more */
    assert_int_equal(rally__tracker_epoch(fx.t), 2);
    pthread_mutex_unlock(&fx.mu);
    assert_true(logged(fx.log, "[7 1 1] the launcher reported rank 1 dead: killed by signal 9"));
    assert_int_equal(alarm_rc(&c[1], &e), RALLY_EPEER);
    assert_int_equal(alarm_rc(&c[0], &e), RALLY__ERESET);
    rally__tclient_close(&c[0]);
    rally__tclient_close(&c[1]);
    stop();
}

/* The heartbeat thread and the caller share the socket: no frame may tear. */
/* Growth through real sockets: a worker with a new task id waits; GROW
 * reaches every rank ahead of an INPUT_OK (the worker waiting for that
 * takes it for its next checkpoint, it is no protocol error) and on the
 * alarm line; one GROW_READY takes the waiting worker in as rank 2 of 3,
 * and every rank's rejoin is renumbered. */
static void grow_reaches_workers_and_takes_one_in(void **state_)
{
    start(2, 10000, 0);
    pthread_mutex_lock(&fx.mu);
    assert_int_equal(rally__tracker_set_max_world(fx.t, 3), RALLY_OK);
    pthread_mutex_unlock(&fx.mu);
    struct rally__tclient c[2];
    struct rally__err e = {0, ""};
    job(c, 2);
    struct async_join j;
    join_start(&j, "7");
    int64_t deadline = rally__deadline(WAIT_MS);
    for (;;) { /* until the tracker has it waiting: GROW is queued to both */
        pthread_mutex_lock(&fx.mu);
        int there = strstr(fx.log, "the worker with task id '7' waits to join") != NULL;
        pthread_mutex_unlock(&fx.mu);
        if (there)
            break;
        assert_true(rally__ms_left(deadline) > 0);
        usleep(1000);
    }
    /* GROW went out before this INPUT's answer */
    assert_int_equal(rally__tclient_input(&c[0], "range", 42, &e), RALLY_OK);
    assert_int_equal(c[0].grow_asked, 1);
    struct pollfd p = {.fd = c[1].fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, WAIT_MS), 1);
    assert_int_equal(rally__tclient_check(&c[1], &e), RALLY_OK);
    assert_int_equal(c[1].grow_asked, 1);
    assert_int_equal(rally__tclient_grow_ready(&c[0], &e), RALLY_OK);
    for (int i = 0; i < 2; i++)
        assert_int_equal(alarm_rc(&c[i], &e), RALLY__ERESET);
    struct op o[2];
    for (int i = 0; i < 2; i++)
        op_start(&o[i], OP_REJOIN, &c[i], NULL);
    for (int i = 0; i < 2; i++)
        assert_int_equal(op_end(&o[i]), RALLY_OK);
    assert_int_equal(join_end(&j), RALLY_OK);
    assert_int_equal(j.c.rank, 2);
    assert_int_equal(j.c.world, 3);
    assert_int_equal(j.c.assign_flags, RALLY__ASSIGN_CHANGED);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(c[i].world, 3);
        assert_int_equal(c[i].resized, 1);
        assert_int_equal(c[i].rank, i);
    }
    for (int i = 0; i < 2; i++)
        rally__tclient_close(&c[i]);
    rally__tclient_close(&j.c);
    stop();
}

static void heartbeat_thread_and_caller_send_together(void **state_)
{
    start(1, 10000, 0);
    pthread_mutex_lock(&fx.mu);
    rally__tracker_set_heartbeat_timeout(fx.t, 5000);
    pthread_mutex_unlock(&fx.mu);
    struct rally__tclient c;
    struct rally__err e = {0, ""};
    assert_int_equal(joinc(&c, "0", NULL, &e), RALLY_OK);
    assert_int_equal(rally__tclient_heartbeat_start(&c, 1, &e), RALLY_OK);
    assert_int_equal(rally__tclient_heartbeat_start(&c, 1, &e), RALLY_OK); /* harmless */
    assert_int_equal(rally__tclient_ready(&c, rally__deadline(WAIT_MS), &e), RALLY_OK);
    char msg[200];
    for (int i = 0; i < 3000; i++) {
        snprintf(msg, sizeof msg, "print %d %0*d", i, i % 150, 0);
        assert_int_equal(rally__tclient_print(&c, msg, &e), RALLY_OK);
    }
    rally__tclient_heartbeat_stop(&c);
    rally__tclient_heartbeat_stop(&c); /* harmless */
    assert_int_equal(rally__tclient_heartbeat_start(&c, 2, &e), RALLY_OK);
    rally__sleep_ms(20);
    assert_int_equal(rally__tclient_shutdown(&c, rally__deadline(WAIT_MS), &e), RALLY_OK);
    assert_int_equal(state(NULL), RALLY__TRACKER_DONE);
    pthread_mutex_lock(&fx.mu);
    assert_int_equal(fx.nprints, 3000);
    pthread_mutex_unlock(&fx.mu);
    rally__tclient_close(&c); /* stops the second thread */
    stop();
}

/* What observers see through a real worker: its REPORTs in the owner's
 * events (none answered, nothing else done), and, in rank_info, where it
 * stands and its counters from its heartbeats, with the job's phase. */
static void observers_see_reports_and_counters(void **state_)
{
    start(2, 10000, 0);
    struct rally__tclient c[2];
    struct rally__err e = {0, ""};
    struct rally__tracker_rank ri;
    pthread_mutex_lock(&fx.mu);
    assert_int_equal(rally__tracker_phase(fx.t), RALLY__TPHASE_JOINING);
    assert_int_equal(rally__tracker_rank_info(fx.t, 2, &ri), RALLY_EINVAL);
    pthread_mutex_unlock(&fx.mu);
    job(c, 2);
    pthread_mutex_lock(&fx.mu);
    assert_int_equal(rally__tracker_phase(fx.t), RALLY__TPHASE_RUNNING);
    pthread_mutex_unlock(&fx.mu);
    rally__tclient_position(&c[1], RALLY__KEY_OP(3, 5), 1, "allreduce");
    rally__tclient_counters(&c[1], 41, 1 << 20, 37, 120, 900);
    int64_t t0 = rally__now_ms();
    assert_int_equal(rally__tclient_heartbeat_start(&c[1], 20, &e), RALLY_OK);
    struct rally__msg_report r = {RALLY__REPORT_VALUE, 3, 0.5, 0, "objective", ""};
    rally__tclient_send_report(&c[1], &r);
    struct rally__msg_report s = {RALLY__REPORT_SNAPSHOT, 3, 0, 12345, "dir", "/s/snap-00000003"};
    rally__tclient_send_report(&c[0], &s);
    assert_true(logged(fx.log, "[11 1 1] report 1 key objective value 0.5 version 3 nbytes 0: \n"));
    assert_true(logged(fx.log, "[11 0 0] report 3 key dir value 0 version 3 nbytes 12345: "
                               "/s/snap-00000003\n"));
    int64_t deadline = rally__deadline(WAIT_MS);
    for (;;) { /* until a beat with the counters arrived */
        pthread_mutex_lock(&fx.mu);
        assert_int_equal(rally__tracker_rank_info(fx.t, 1, &ri), RALLY_OK);
        pthread_mutex_unlock(&fx.mu);
        if (ri.calls == 41 || rally__ms_left(deadline) == 0)
            break;
        rally__sleep_ms(10);
    }
    assert_true(ri.present);
    assert_false(ri.finalized);
    assert_string_equal(ri.host, "127.0.0.1");
    assert_string_equal(ri.task_id, "1");
    assert_int_equal(ri.incarnation, 1);
    assert_true(ri.heartbeats);
    assert_int_equal(ri.calls, 41);
    assert_int_equal(ri.nbytes, 1 << 20);
    assert_int_equal(ri.win, 37); /* the straggler window */
    assert_int_equal(ri.win_wait_ms, 120);
    assert_int_equal(ri.win_span_ms, 900);
    assert_int_equal(ri.position, RALLY__KEY_OP(3, 5));
    assert_true(ri.waiting);
    assert_string_equal(ri.what, "allreduce");
    /* times are rally__now_ms's, whoever reads them */
    int64_t now = rally__now_ms();
    assert_true(ri.last_rx_ms >= t0 && ri.last_rx_ms <= now);
    assert_true(ri.since_ms <= now && ri.since_ms >= t0 - 1000);
    assert_true(quiet(&c[1], 100)); /* a REPORT is never answered */
    rally__tclient_heartbeat_stop(&c[1]);
    for (int i = 0; i < 2; i++)
        assert_int_equal(rally__tclient_shutdown(&c[i], rally__deadline(WAIT_MS), &e), RALLY_OK);
    pthread_mutex_lock(&fx.mu);
    assert_int_equal(rally__tracker_phase(fx.t), RALLY__TPHASE_DONE);
    assert_int_equal(rally__tracker_rank_info(fx.t, 0, &ri), RALLY_OK);
    assert_true(ri.finalized);
    pthread_mutex_unlock(&fx.mu);
    for (int i = 0; i < 2; i++)
        rally__tclient_close(&c[i]);
    stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(grow_reaches_workers_and_takes_one_in),
        cmocka_unit_test(recover_rank_drops_after_go),
        cmocka_unit_test(recover_heartbeat_silence_fails_the_rank),
        cmocka_unit_test(recover_launcher_reports_death),
        cmocka_unit_test(heartbeat_thread_and_caller_send_together),
        cmocka_unit_test(observers_see_reports_and_counters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
