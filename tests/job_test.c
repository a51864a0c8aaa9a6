/*
 * job_test.c — the tracker's job state machine (src/tracker/job*.c), driven
 * synchronously: events in, actions checked; no sockets, threads or sleeps.
 *
 * Every transition of the job is a case here; tests/tracker_test.c keeps
 * only what needs sockets and threads (the handshake, connections, a
 * crash seen as a hang-up, a recovery, heartbeats and a grow through real
 * workers), and a case it drives too is named in the comment over it.  Also
 * the message encoders and decoders both sides share (src/tracker/msg.c)
 * and the words of a position.  Time is a number the test moves forward.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tracker/job.h"
#include "tracker/job_int.h" /* the arena, to see where an event's strings live */
#include "tracker/msg.h"
#include "tracker/proto.h"
#include "util/clock.h"

#define W_MAX 8

static struct rally__job *j;
static struct rally__job_member m[2 * W_MAX];
static int64_t now_ms;
static char log_[16384]; /* every EVENT text of the case, one per line: "[kind rank] text" */

static void record(void)
{
    const struct rally__job_act *a;
    size_t n = rally__job_actions(j, &a);
    for (size_t i = 0; i < n; i++) {
        if (a[i].kind != RALLY__JOB_EVENT)
            continue;
        size_t len = strlen(log_);
        snprintf(log_ + len, sizeof log_ - len, "[%d %d %u] %s\n", a[i].ev.kind, a[i].ev.rank,
                 a[i].ev.epoch, a[i].ev.text);
    }
}

static void run(struct rally__job_ev ev)
{
    ev.now_us = now_ms * 1000;
    rally__job_step(j, &ev);
    record();
}

static void new_job(int world, int64_t startup_ms)
{
    struct rally__err e = {0, ""};
    struct rally__job_opts o = {world, startup_ms};
    now_ms = 1000000;
    log_[0] = '\0';
    memset(m, 0, sizeof m);
    assert_int_equal(rally__job_new(&j, &o, now_ms * 1000, &e), RALLY_OK);
}

static int done_job(void **state)
{
    (void)state;
    rally__job_free(j);
    j = NULL;
    return 0;
}

/* Member i authenticates (it comes from 10.0.0.i). */
static void open_m(int i)
{
    memset(&m[i], 0, sizeof m[i]);
    m[i].owner = &m[i];
    snprintf(m[i].peer, sizeof m[i].peer, "10.0.0.%d", i);
    snprintf(m[i].what, sizeof m[i].what, "connection from 10.0.0.%d:5000", i);
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_OPEN, .m = &m[i]});
}

static void frame(int i, uint16_t type, const void *body, size_t n)
{
    run((struct rally__job_ev){
        .kind = RALLY__JOB_EV_FRAME, .m = &m[i], .type = type, .body = body, .nbytes = n});
}

static void reg(int i, const char *task, uint32_t world_hint)
{
    struct rally__msg_register r = {.want_rank = -1, .world_hint = world_hint};
    snprintf(r.task_id, sizeof r.task_id, "%s", task);
    r.listen_port = (uint16_t)(4000 + i);
    unsigned char b[1024];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_register_put(&w, &r);
    frame(i, RALLY__T_REGISTER, b, w.len);
}

static void lost(int i)
{
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_LOST, .m = &m[i], .text = "peer closed"});
}

static void rejoin(int i, uint32_t epoch, uint64_t pos, uint32_t version)
{
    unsigned char b[16];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_rejoin_put(&w, epoch, pos, version);
    frame(i, RALLY__T_REJOIN, b, w.len);
}

/* IN_STEP{epoch} from member i: the job got back in step after a recovery. */
static void in_step(int i, uint32_t epoch)
{
    unsigned char b[4];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_u32_put(&w, epoch);
    frame(i, RALLY__T_IN_STEP, b, w.len);
}

static void tick_at(int64_t ms)
{
    now_ms = ms;
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_TICK});
}

/* --- looking at the last step's actions ------------------------------------- */

static size_t nacts(const struct rally__job_act **a)
{
    return rally__job_actions(j, a);
}

/* The action of kind to member i (i < 0: to nobody), or NULL. */
static const struct rally__job_act *find(int kind, int i, uint16_t type)
{
    const struct rally__job_act *a;
    size_t n = nacts(&a);
    for (size_t k = 0; k < n; k++)
        if (a[k].kind == kind && (i < 0 ? a[k].m == NULL : a[k].m == &m[i]) &&
            (kind != RALLY__JOB_SEND || a[k].type == type))
            return &a[k];
    return NULL;
}

static int sent(int i, uint16_t type)
{
    return find(RALLY__JOB_SEND, i, type) != NULL;
}

static int count_kind(int kind)
{
    const struct rally__job_act *a;
    size_t n = nacts(&a), c = 0;
    for (size_t k = 0; k < n; k++)
        c += a[k].kind == kind;
    return (int)c;
}

/* The event of kind in the last step, or NULL. */
static const struct rally__tracker_event *event(int kind)
{
    const struct rally__job_act *a;
    size_t n = nacts(&a);
    for (size_t k = 0; k < n; k++)
        if (a[k].kind == RALLY__JOB_EVENT && a[k].ev.kind == kind)
            return &a[k].ev;
    return NULL;
}

/* The ABORT sent to i in the last step: its code, and its sentence in s. */
static int abort_to(int i, char *s, size_t cap)
{
    const struct rally__job_act *a = find(RALLY__JOB_SEND, i, RALLY__T_ABORT);
    assert_non_null(a);
    uint32_t code;
    assert_int_equal(rally__msg_fail_get(a->body, a->nbytes, &code, s, cap), 0);
    return (int)code;
}

/* The RESET sent to i in the last step: its epoch, and its reason in s. */
static uint32_t reset_to(int i, char *s, size_t cap)
{
    const struct rally__job_act *a = find(RALLY__JOB_SEND, i, RALLY__T_RESET);
    assert_non_null(a);
    uint32_t epoch;
    assert_int_equal(rally__msg_reset_get(a->body, a->nbytes, &epoch, s, cap), 0);
    return epoch;
}

/* Decodes the ASSIGN sent to i in the last step (head + BOOK + tail). */
static struct rally__msg_assign assign_to(int i)
{
    const struct rally__job_act *book = find(RALLY__JOB_BOOK, -1, 0);
    const struct rally__job_act *a = find(RALLY__JOB_SEND, i, RALLY__T_ASSIGN);
    assert_non_null(book);
    assert_non_null(a);
    assert_true(a->with_book);
    unsigned char *b = malloc(a->nbytes + book->nbytes + a->tail_nbytes);
    assert_non_null(b);
    memcpy(b, a->body, a->nbytes);
    memcpy(b + a->nbytes, book->body, book->nbytes);
    memcpy(b + a->nbytes + book->nbytes, a->tail, a->tail_nbytes);
    struct rally__msg_assign g;
    assert_int_equal(rally__msg_assign_get(b, a->nbytes + book->nbytes + a->tail_nbytes, &g), 0);
    free(b);
    return g;
}

static int logged(const char *s)
{
    return strstr(log_, s) != NULL;
}

/* world members 0..world-1 open and register with task ids "0".."world-1";
 * the last REGISTER brings the ASSIGNs. */
static void join_all(int world)
{
    for (int i = 0; i < world; i++) {
        char task[16];
        snprintf(task, sizeof task, "%d", i);
        open_m(i);
        reg(i, task, 0);
        assert_non_null(find(RALLY__JOB_ADMIT, i, 0));
    }
}

static void ready_all(int world)
{
    for (int i = 0; i < world; i++)
        frame(i, RALLY__T_READY, NULL, 0);
}

static void running(int world)
{
    join_all(world);
    ready_all(world);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
}

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

static void input(int i, const char *scheme, uint64_t fp)
{
    unsigned char b[128];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_input_put(&w, scheme, fp);
    frame(i, RALLY__T_INPUT, b, w.len);
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

/* --- the progress watch ------------------------------------------------------ */

/* Member i's heartbeat: where it stands, and for how long already. */
static void beat(int i, uint64_t pos, int waiting, const char *what, uint64_t for_ms)
{
    struct rally__msg_heartbeat h = {
        .has_position = 1, .position = pos, .waiting = waiting, .for_ms = for_ms};
    snprintf(h.what, sizeof h.what, "%s", what);
    unsigned char b[128];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_heartbeat_put(&w, &h);
    assert_false(w.bad);
    frame(i, RALLY__T_HEARTBEAT, b, w.len);
}

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

/* --- elastic membership ---------------------------------------------------- */

static void gone_ev(int rank, const char *why)
{
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_GONE, .rank = rank, .text = why});
}

/* A rank given up for good in an elastic job: its connection is closed, the
 * ranks above it move down one, every survivor is reset and, once all
 * rejoined, gets an ASSIGN of the smaller world counting one membership
 * change; the owner hears who went and from which version the job goes on. */
static void elastic_rank_given_up_shrinks_the_job(void **state)
{
    (void)state;
    new_job(4, 10000);
    rally__job_set_min_world(j, 3);
    running(4);
    run((struct rally__job_ev){
        .kind = RALLY__JOB_EV_DIED, .rank = 1, .text = "killed by signal 9"});
    assert_int_equal(rally__job_epoch(j), 2);
    for (int i = 0; i < 4; i++)
        if (i != 1)
            rejoin(i, 2, RALLY__KEY_OP(5, 3), 5);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_ASSEMBLING); /* rank 1 is missing */
    gone_ev(1, "its restarts are spent");
    assert_int_equal(rally__job_epoch(j), 3);
    assert_int_equal(rally__job_world(j), 3);
    char why[256];
    assert_int_equal(reset_to(3, why, sizeof why), 3);
    assert_string_equal(why, "rank 1 lost for good (its restarts are spent)");
    assert_int_equal(rally__job_rank_of(j, "3"), 2);
    assert_int_equal(rally__job_rank_of(j, "1"), -1);
    assert_string_equal(rally__job_task_of(j, 1), "2");
    assert_string_equal(m[3].what, "rank 2 (on 10.0.0.3)");
    rejoin(0, 3, RALLY__KEY_OP(5, 3), 5);
    rejoin(2, 3, RALLY__KEY_OP(5, 0), 4); /* it had not acknowledged version 5 */
    rejoin(3, 3, RALLY__KEY_OP(5, 3), 5);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_STARTING);
    struct rally__msg_assign g = assign_to(3);
    assert_int_equal(g.rank, 2);
    assert_int_equal(g.world, 3);
    assert_int_equal(g.epoch, 3);
    assert_int_equal(g.members, 1);
    assert_int_equal(g.flags, RALLY__ASSIGN_CHANGED);
    assert_string_equal(g.peers[1].host, "10.0.0.2"); /* the book in the new order */
    free(g.peers);
    const struct rally__tracker_event *ev = event(RALLY__TEV_RESIZED);
    assert_non_null(ev);
    assert_int_equal(ev->rank, 1);
    assert_string_equal(ev->task_id, "1");
    assert_int_equal(ev->world, 3);
    assert_int_equal(ev->version, 5);
    assert_string_equal(ev->text, "rank 1 lost for good: going on with 3 workers from version 5");
    assert_string_equal(ev->detail, "going on with 3 workers from version 5");
    ready_all(4);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    /* the renumbered rank dies and comes back by its task id, as rank 2 */
    lost(3);
    assert_int_equal(rally__job_epoch(j), 4);
    rejoin(0, 4, RALLY__KEY_OP(6, 1), 6);
    rejoin(2, 4, RALLY__KEY_OP(6, 1), 6);
    open_m(4);
    reg(4, "3", 0);
    assert_non_null(find(RALLY__JOB_ADMIT, 4, 0));
    g = assign_to(4);
    assert_int_equal(g.rank, 2);
    assert_int_equal(g.incarnation, 2);
    assert_int_equal(g.members, 1);
    assert_int_equal(g.flags, 0); /* the change was over at its GO */
    free(g.peers);
    assert_null(event(RALLY__TEV_RESIZED)); /* told once */
    /* each rank's input counts afresh after the change: a new shard */
    unsigned char b[128];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_input_put(&w, "rows:contiguous", 7);
    frame(0, RALLY__T_INPUT, b, w.len);
    assert_true(sent(0, RALLY__T_INPUT_OK));
}

/* After a shrink every rank reads a new shard, so the input each names next
 * counts afresh, whatever its predecessor at that rank said: rank 2,
 * restarted once (incarnation 2), becomes rank 1 when rank 1 is given up,
 * and neither it nor rank 3 (now 2) is taken for a rank that read another
 * input after its restart; a restart after the shrink is checked against
 * the new shard. */
static void shrink_takes_new_inputs(void **state)
{
    (void)state;
    new_job(4, 10000);
    rally__job_set_min_world(j, 3);
    running(4);
    for (int i = 0; i < 4; i++)
        input(i, "range", 0x10 + (uint64_t)i);
    lost(2); /* rank 2 restarted in place: member 4, incarnation 2, the same rows */
    for (int i = 0; i < 4; i++)
        if (i != 2)
            rejoin(i, 2, RALLY__KEY_OP(3, 0), 3);
    open_m(4);
    reg(4, "2", 0);
    for (int i = 0; i < 5; i++)
        if (i != 2)
            frame(i, RALLY__T_READY, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    input(4, "range", 0x12);
    assert_true(sent(4, RALLY__T_INPUT_OK));
    run((struct rally__job_ev){
        .kind = RALLY__JOB_EV_DIED, .rank = 1, .text = "killed by signal 9"});
    int live[3] = {0, 4, 3}; /* members of ranks 0, 1, 2 after the shrink */
    for (int i = 0; i < 3; i++)
        rejoin(live[i], 3, RALLY__KEY_OP(5, 0), 5);
    gone_ev(1, "its restarts are spent");
    assert_int_equal(rally__job_world(j), 3);
    for (int i = 0; i < 3; i++)
        rejoin(live[i], 4, RALLY__KEY_OP(5, 0), 5);
    for (int i = 0; i < 3; i++)
        frame(live[i], RALLY__T_READY, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    for (int i = 0; i < 3; i++) {
        input(live[i], "range", 0x20 + (uint64_t)i);
        assert_true(sent(live[i], RALLY__T_INPUT_OK));
        assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    }
    /* rank 1 (member 4) restarted with rows other than its new shard's */
    lost(4);
    rejoin(0, 5, RALLY__KEY_OP(6, 0), 6);
    rejoin(3, 5, RALLY__KEY_OP(6, 0), 6);
    open_m(5);
    reg(5, "2", 0);
    for (int i = 0; i < 3; i++)
        frame(i == 1 ? 5 : live[i], RALLY__T_READY, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    input(5, "range", 0x12); /* its old shard of 4 workers */
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_non_null(strstr(rally__job_sentence(j, NULL),
                           "rank 1 read another input after its restart: incarnation 3 has "
                           "fingerprint 0000000000000012 (scheme range), incarnation 2 had "
                           "0000000000000021"));
}

/* Below the minimum, or in a job that is not elastic, giving a rank up
 * fails the job with a sentence that says so. */
static void elastic_below_the_minimum_fails_the_job(void **state)
{
    (void)state;
    new_job(3, 10000);
    rally__job_set_min_world(j, 3);
    running(3);
    lost(2);
    gone_ev(2, "its restarts are spent");
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    int r;
    assert_string_equal(rally__job_sentence(j, &r),
                        "rank 2 lost for good (its restarts are spent): going on would leave 2 "
                        "workers, fewer than the minimum of 3");
    assert_int_equal(r, 2);
    done_job(NULL);
    new_job(3, 10000);
    running(3);
    lost(0);
    gone_ev(0, "its restarts are spent");
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_string_equal(rally__job_sentence(j, NULL),
                        "rank 0 lost for good: its restarts are spent");
}

/* A rank lost while a survivor stands in finalize: the job had computed
 * everything, so the ASSIGN says the others finish as they are. */
static void elastic_loss_in_finalize_finishes(void **state)
{
    (void)state;
    new_job(3, 10000);
    rally__job_set_min_world(j, 2);
    running(3);
    lost(2);
    gone_ev(2, "gone");
    rejoin(0, 3, RALLY__KEY_FINAL, 9);
    rejoin(1, 3, RALLY__KEY_OP(9, 1), 9); /* still returning from its last call */
    struct rally__msg_assign g = assign_to(1);
    assert_int_equal(g.flags, RALLY__ASSIGN_FINISHING | RALLY__ASSIGN_CHANGED);
    assert_int_equal(g.world, 2);
    free(g.peers);
    assert_string_equal(event(RALLY__TEV_RESIZED)->text,
                        "rank 2 lost for good: the other 2 workers finish (one was in finalize)");
}

static void grow_ready(int i, uint32_t epoch)
{
    unsigned char b[4];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_u32_put(&w, epoch);
    frame(i, RALLY__T_GROW_READY, b, w.len);
}

/* Growth: a worker with a new task id waits; every rank hears GROW (again
 * at each GO while it waits); the first GROW_READY of the epoch takes it
 * in at the end of the ranks, later ones are late; it leaves or the job
 * ends without failing anything. */
static void elastic_worker_taken_in(void **state)
{
    (void)state;
    new_job(2, 10000);
    assert_int_equal(rally__job_set_max_world(j, 3), RALLY_OK);
    running(2);
    open_m(2);
    reg(2, "7", 0);
    assert_non_null(find(RALLY__JOB_ADMIT, 2, 0));
    assert_true(sent(0, RALLY__T_GROW));
    assert_true(sent(1, RALLY__T_GROW));
    assert_int_equal(rally__job_world(j), 2);
    assert_true(logged("the worker with task id '7' waits to join"));
    open_m(3); /* no room for a second one */
    reg(3, "8", 0);
    char s[256];
    assert_int_equal(abort_to(3, s, sizeof s), RALLY_ESTATE);
    assert_string_equal(s, "the job already has all 2 workers and none has task id '8'");
    grow_ready(1, 0); /* its first ASSIGN said epoch 0 */
    assert_int_equal(rally__job_epoch(j), 2);
    assert_int_equal(reset_to(0, s, sizeof s), 2);
    assert_string_equal(s, "taking in 1 worker");
    grow_ready(0, 1); /* late */
    assert_int_equal(rally__job_epoch(j), 2);
    rejoin(0, 2, RALLY__KEY_OP(4, 1), 4);
    rejoin(1, 2, RALLY__KEY_OP(4, 1), 4);
    struct rally__msg_assign g = assign_to(2);
    assert_int_equal(g.rank, 2);
    assert_int_equal(g.world, 3);
    assert_int_equal(g.incarnation, 1);
    assert_int_equal(g.members, 1);
    assert_int_equal(g.flags, RALLY__ASSIGN_CHANGED);
    free(g.peers);
    assert_string_equal(event(RALLY__TEV_RESIZED)->text,
                        "taking in 1 worker: going on with 3 workers from version 4");
    assert_string_equal(m[2].what, "rank 2 (on 10.0.0.2)");
    ready_all(3);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    assert_false(sent(0, RALLY__T_GROW)); /* nobody waits */
    done_job(NULL);

    /* one that leaves while it waits costs nothing; at the end one is refused */
    new_job(2, 10000);
    assert_int_equal(rally__job_set_max_world(j, 4), RALLY_OK);
    running(2);
    open_m(2);
    reg(2, "5", 0);
    lost(2);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    grow_ready(0, 1); /* nobody waits any more: a RESET all the same */
    assert_int_equal(reset_to(1, s, sizeof s), 2);
    assert_string_equal(s, "no worker waits to be taken in any more");
    rejoin(0, 2, RALLY__KEY_OP(2, 1), 2);
    rejoin(1, 2, RALLY__KEY_OP(2, 1), 2);
    struct rally__msg_assign g2 = assign_to(0);
    assert_int_equal(g2.members, 0);
    free(g2.peers);
    ready_all(2);
    open_m(3);
    reg(3, "6", 0);
    assert_true(sent(0, RALLY__T_GROW));
    frame(0, RALLY__T_SHUTDOWN, NULL, 0);
    frame(1, RALLY__T_SHUTDOWN, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_DONE);
    assert_int_equal(abort_to(3, s, sizeof s), RALLY_ESTATE);
    assert_string_equal(s, "the job finished before it could take this worker in");
    open_m(4);
    reg(4, "9", 0);
    assert_int_equal(abort_to(4, s, sizeof s), RALLY_ESTATE);
}

/* Two changes in a row: ranks keep their order, the count grows, and the
 * tracker's line names a renumbered rank's task id. */
static void elastic_two_changes(void **state)
{
    (void)state;
    new_job(4, 10000);
    rally__job_set_min_world(j, 2);
    running(4);
    lost(0);
    gone_ev(0, "gone");
    for (int i = 1; i < 4; i++)
        rejoin(i, 3, RALLY__KEY_OP(2, 1), 2);
    ready_all(4);
    lost(3); /* rank 2 now */
    char why[256];
    gone_ev(2, "gone");
    assert_int_equal(reset_to(1, why, sizeof why), 5);
    assert_string_equal(why, "rank 2 (task id 3) lost for good (gone)");
    rejoin(1, 5, RALLY__KEY_OP(3, 1), 3);
    rejoin(2, 5, RALLY__KEY_OP(3, 1), 3);
    struct rally__msg_assign g = assign_to(2);
    assert_int_equal(g.rank, 1);
    assert_int_equal(g.world, 2);
    assert_int_equal(g.members, 2);
    free(g.peers);
    assert_string_equal(event(RALLY__TEV_RESIZED)->task_id, "3");
}

/* A finalized rank's death only closes its connection. */
static void death_after_finalize_only_fences(void **state)
{
    (void)state;
    new_job(2, 10000);
    running(2);
    frame(1, RALLY__T_SHUTDOWN, NULL, 0);
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_DIED, .rank = 1, .text = "exited"});
    assert_non_null(find(RALLY__JOB_CLOSE, 1, 0));
    assert_int_equal(count_kind(RALLY__JOB_SEND), 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    frame(0, RALLY__T_SHUTDOWN, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_DONE);
}

static void recover_not_after_a_rank_finalized(void **state)
{
    (void)state;
    new_job(2, 10000);
    running(2);
    frame(0, RALLY__T_SHUTDOWN, NULL, 0);
    assert_int_equal(rally__job_recoverable(j), 0);
    lost(1);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_string_equal(rally__job_sentence(j, NULL),
                        "rank 1 disconnected without finalizing (did it crash?)");
}

/* A rank that finalizes while the job recovers fails it. */
static void finalize_while_recovering_is_fatal(void **state)
{
    (void)state;
    new_job(3, 10000);
    running(3);
    lost(2);
    frame(0, RALLY__T_SHUTDOWN, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_string_equal(rally__job_sentence(j, NULL),
                        "rank 0 finalized while the job was recovering from a failure (epoch 2)");
}

static void recover_off_keeps_failures_fatal(void **state)
{
    (void)state;
    new_job(2, 10000);
    rally__job_set_recovery(j, 0);
    running(2);
    assert_int_equal(rally__job_recoverable(j), 0);
    lost(1);
    char s[RALLY__ERR_MSG_MAX];
    assert_int_equal(abort_to(0, s, sizeof s), RALLY_EPEER);
    assert_string_equal(s, "rank 1 disconnected without finalizing (did it crash?)");
}

static void recover_malformed_rejoin_is_fatal(void **state)
{
    (void)state;
    new_job(2, 10000);
    running(2);
    unsigned char b[15] = {2};
    frame(0, RALLY__T_REJOIN, b, sizeof b); /* one byte short */
    char s[RALLY__ERR_MSG_MAX];
    assert_int_equal(abort_to(1, s, sizeof s), RALLY_EPROTO);
    assert_non_null(strstr(s, "malformed REJOIN (15 bytes)"));
    /* and a REJOIN for an epoch never reset to is one too */
    done_job(NULL);
    new_job(2, 10000);
    running(2);
    rejoin(0, 2, 0, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
}

/* The owner's abort: ABORT to every member, registered or not. */
static void owner_abort_reaches_everyone(void **state)
{
    (void)state;
    new_job(2, 10000);
    open_m(0);
    reg(0, "0", 0);
    open_m(1); /* authenticated, not registered */
    run((struct rally__job_ev){
        .kind = RALLY__JOB_EV_ABORT, .code = RALLY_EPEER, .text = "rank 1 exited with status 3"});
    char s[RALLY__ERR_MSG_MAX];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(abort_to(i, s, sizeof s), RALLY_EPEER);
        assert_string_equal(s, "rank 1 exited with status 3");
    }
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_int_equal(rally__job_deadline(j), RALLY__NEVER);
}

/* --- observers: reports and what the job knows of a rank ---------------------- */

/* Member i's REPORT, as the library encodes it. */
static void report(int i, const struct rally__msg_report *r)
{
    unsigned char b[RALLY__REPORT_MAX];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_report_put(&w, r);
    assert_false(w.bad);
    frame(i, RALLY__T_REPORT, b, w.len);
}

/* A REPORT body spelled out byte by byte, bypassing the encoder's checks:
 * value's bits, key and text as given, cut (a byte short) or with a byte
 * over when shape says so. */
enum { WHOLE, SHORT, TRAILING };
static size_t raw_report(unsigned char *b, size_t cap, int kind, uint64_t bits, const char *key,
                         const char *text, int shape)
{
    struct rally__wbuf w = {b, 0, cap, 0};
    rally__w_u8(&w, (uint8_t)kind);
    rally__w_u64(&w, 9);
    rally__w_u64(&w, bits);
    rally__w_u64(&w, 4096);
    rally__w_str(&w, key);
    rally__w_str(&w, text);
    if (shape == TRAILING)
        rally__w_u8(&w, 0);
    assert_false(w.bad);
    return shape == SHORT ? w.len - 1 : w.len;
}

/* 1.5's bits, and a NaN's and an infinity's (IEEE-754 binary64). */
#define BITS_1_5 UINT64_C(0x3ff8000000000000)
#define BITS_NAN UINT64_C(0x7ff8000000000000)
#define BITS_INF UINT64_C(0x7ff0000000000000)

static const struct report_case {
    const char *name;
    struct rally__msg_report r;
} REPORT_CASES[] = {
    {"value at the worker's version", {RALLY__REPORT_VALUE, 7, 1234.5, 0, "objective", ""}},
    {"value whose key uses every kind of character",
     {RALLY__REPORT_VALUE, 3, -0.25, 0, "Az09_.:-", ""}},
    {"value whose key is 64 bytes",
     {RALLY__REPORT_VALUE, 1, 1e300, 0,
      "k123456789012345678901234567890123456789012345678901234567890123", ""}},
    {"total iterations", {RALLY__REPORT_TOTAL, 0, 100, 0, "", ""}},
    {"snapshot committed",
     {RALLY__REPORT_SNAPSHOT, 12, 0, UINT64_C(5) << 32, "dir", "/snap/job/snap-00000012"}},
    {"snapshot void",
     {RALLY__REPORT_SNAPSHOT_VOID, 13, 0, 0, "dir",
      "rank 1 could not write its part (its log says why); the snapshot of version 13 is void"}},
    {"version beyond 32 bits is held at the most an event says",
     {RALLY__REPORT_VALUE, UINT64_C(1) << 40, 2, 0, "loss", ""}},
};

/* A REPORT reaches the owner with every field, the strings kept in the
 * step's arena; the job does nothing else with it. */
static void report_reaches_the_owner_with_every_field(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof REPORT_CASES / sizeof REPORT_CASES[0]; k++) {
        const struct report_case *c = &REPORT_CASES[k];
        print_message("case: %s\n", c->name);
        new_job(2, 10000);
        running(2);
        report(1, &c->r);
        const struct rally__tracker_event *ev = event(RALLY__TEV_REPORT);
        assert_non_null(ev);
        assert_int_equal(count_kind(RALLY__JOB_EVENT), 1);
        assert_int_equal(count_kind(RALLY__JOB_SEND) + count_kind(RALLY__JOB_CLOSE), 0);
        assert_int_equal(ev->rank, 1);
        assert_string_equal(ev->task_id, "1");
        assert_int_equal(ev->epoch, 1);
        assert_int_equal(ev->report, c->r.kind);
        assert_string_equal(ev->key, c->r.key);
        assert_true(ev->value == c->r.value);
        assert_int_equal(ev->version, c->r.version > UINT32_MAX ? UINT32_MAX : c->r.version);
        assert_int_equal(ev->nbytes, c->r.nbytes);
        assert_string_equal(ev->text, c->r.text);
        /* the strings are the step's, not the decoder's stack */
        const unsigned char *lo = j->arena, *hi = j->arena + j->arena_cap;
        assert_true((const unsigned char *)ev->key >= lo && (const unsigned char *)ev->key < hi);
        assert_true((const unsigned char *)ev->text >= lo && (const unsigned char *)ev->text < hi);
        assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
        done_job(NULL);
    }
    /* other events say key "" (never NULL) */
    new_job(1, 10000);
    running(1);
    frame(0, RALLY__T_SHUTDOWN, NULL, 0);
    assert_string_equal(event(RALLY__TEV_FINALIZED)->key, "");
}

static const struct bad_report_case {
    const char *name;
    int kind;
    uint64_t bits;
    const char *key;
    int shape;
} MALFORMED_REPORTS[] = {
    {"a byte short", RALLY__REPORT_VALUE, BITS_1_5, "loss", SHORT},
    {"a byte over", RALLY__REPORT_VALUE, BITS_1_5, "loss", TRAILING},
    {"kind 0", 0, BITS_1_5, "loss", WHOLE},
    {"kind 5", 5, BITS_1_5, "loss", WHOLE},
    {"a NaN", RALLY__REPORT_VALUE, BITS_NAN, "loss", WHOLE},
    {"an infinite total", RALLY__REPORT_TOTAL, BITS_INF, "", WHOLE},
    {"a snapshot's key over 64 bytes", RALLY__REPORT_SNAPSHOT, 0,
     "k1234567890123456789012345678901234567890123456789012345678901234", WHOLE},
};

/* A malformed REPORT is a protocol slip like any malformed frame: the
 * member is dropped, which fails the job (ABORT to the others); a fenced
 * member's is ignored. */
static void report_malformed_drops_the_member(void **state)
{
    (void)state;
    unsigned char b[2048];
    char s[RALLY__ERR_MSG_MAX];
    for (size_t k = 0; k < sizeof MALFORMED_REPORTS / sizeof MALFORMED_REPORTS[0]; k++) {
        const struct bad_report_case *c = &MALFORMED_REPORTS[k];
        print_message("case: %s\n", c->name);
        new_job(2, 10000);
        running(2);
        size_t n = raw_report(b, sizeof b, c->kind, c->bits, c->key, "", c->shape);
        struct rally__msg_report g;
        assert_int_equal(rally__msg_report_get(b, n, &g), -1);
        frame(1, RALLY__T_REPORT, b, n);
        assert_null(event(RALLY__TEV_REPORT));
        assert_non_null(find(RALLY__JOB_CLOSE, 1, 0));
        assert_int_equal(abort_to(0, s, sizeof s), RALLY_EPROTO);
        char want[64];
        snprintf(want, sizeof want, "rank 1 (on 10.0.0.1): malformed REPORT (%zu bytes)", n);
        assert_string_equal(s, want);
        done_job(NULL);
    }
    /* a text over 1023 bytes is malformed too (the encoder cuts it) */
    char big[1100];
    memset(big, 't', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    size_t n = raw_report(b, sizeof b, RALLY__REPORT_SNAPSHOT, 0, "dir", big, WHOLE);
    struct rally__msg_report g;
    assert_int_equal(rally__msg_report_get(b, n, &g), -1);
    /* a fenced member's frames are not the job's any more */
    new_job(3, 10000);
    running(3);
    lost(1);
    n = raw_report(b, sizeof b, RALLY__REPORT_VALUE, BITS_1_5, "loss", "", WHOLE);
    frame(1, RALLY__T_REPORT, b, n);
    assert_int_equal(count_kind(RALLY__JOB_EVENT) + count_kind(RALLY__JOB_CLOSE), 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_ASSEMBLING);
    /* an authenticated stranger's is a frame before REGISTER */
    open_m(5);
    frame(5, RALLY__T_REPORT, b, n);
    assert_non_null(find(RALLY__JOB_CLOSE, 5, 0));
    assert_true(logged("dropping connection from 10.0.0.5:5000: frame type 33 before REGISTER"));
}

/* A VALUE's key must be 1 to 64 bytes of [A-Za-z0-9_.:-] (rally_report
 * refuses any other, so no library sends one): the decoder refuses it and
 * the job drops the member.  Other kinds' keys may be "" (a TOTAL's). */
static void report_with_a_bad_key_is_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",      "two words",
        "a/b",   "\xc3\xa9", /* an e with an acute accent, in UTF-8 */
        "tab\t", "k1234567890123456789012345678901234567890123456789012345678901234", /* 65 bytes */
    };
    unsigned char b[256];
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        print_message("case: key \"%s\"\n", bad[k]);
        assert_false(rally__report_key_ok(bad[k]));
        new_job(2, 10000);
        running(2);
        size_t n = raw_report(b, sizeof b, RALLY__REPORT_VALUE, BITS_1_5, bad[k], "", WHOLE);
        struct rally__msg_report g;
        assert_int_equal(rally__msg_report_get(b, n, &g), -1);
        frame(0, RALLY__T_REPORT, b, n);
        assert_null(event(RALLY__TEV_REPORT));
        assert_non_null(find(RALLY__JOB_CLOSE, 0, 0));
        assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
        assert_int_equal(rally__job_code(j), RALLY_EPROTO);
        done_job(NULL);
    }
    assert_true(rally__report_key_ok("objective"));
    assert_true(rally__report_key_ok("x"));
    /* the encoder will not write a key it could not decode */
    struct rally__msg_report r = {.kind = RALLY__REPORT_SNAPSHOT};
    memset(r.key, 'k', sizeof r.key - 1);
    r.key[sizeof r.key - 1] = '\0';
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_report_put(&w, &r);
    assert_false(w.bad); /* 64 bytes: the most */
    new_job(1, 10000);
    running(1);
    size_t n = raw_report(b, sizeof b, RALLY__REPORT_TOTAL, BITS_1_5, "", "", WHOLE);
    frame(0, RALLY__T_REPORT, b, n);
    assert_non_null(event(RALLY__TEV_REPORT));
    assert_string_equal(event(RALLY__TEV_REPORT)->key, "");
}

/* Member i's heartbeat with the collectives' counters. */
static void beat_counted(int i, uint64_t pos, uint64_t for_ms, uint64_t calls, uint64_t nbytes)
{
    struct rally__msg_heartbeat h = {.has_position = 1,
                                     .position = pos,
                                     .waiting = 1,
                                     .for_ms = for_ms,
                                     .calls = calls,
                                     .nbytes = nbytes};
    snprintf(h.what, sizeof h.what, "allreduce");
    unsigned char b[RALLY__HEARTBEAT_MAX];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_heartbeat_put(&w, &h);
    assert_false(w.bad);
    assert_int_equal(w.len, RALLY__HEARTBEAT_MAX - (RALLY__WHAT_MAX - 1) + strlen("allreduce"));
    frame(i, RALLY__T_HEARTBEAT, b, w.len);
}

/* What the job tells observers of a rank: from the member that holds it
 * (where it stands, its counters, its last frame), else from its tables
 * (incarnation, task id, host, finalized); RALLY_EINVAL outside the world. */
static void rank_info_from_members_and_tables(void **state)
{
    (void)state;
    struct rally__tracker_rank ri;
    new_job(2, 10000);
    assert_int_equal(rally__job_rank_info(j, 2, &ri), RALLY_EINVAL);
    assert_int_equal(rally__job_rank_info(j, -1, &ri), RALLY_EINVAL);
    assert_int_equal(rally__job_rank_info(j, 1, &ri), RALLY_OK); /* nobody yet */
    assert_false(ri.present);
    assert_int_equal(ri.incarnation, 0);
    assert_string_equal(ri.host, "");
    assert_string_equal(ri.task_id, "");
    running(2);
    int64_t t_go = now_ms;
    assert_int_equal(rally__job_rank_info(j, 1, &ri), RALLY_OK);
    assert_true(ri.present);
    assert_false(ri.heartbeats);
    assert_int_equal(ri.last_rx_ms, t_go);
    assert_int_equal(ri.since_ms, t_go); /* in its own code since it registered */
    assert_int_equal(ri.calls, 0);
    now_ms += 2500;
    beat_counted(1, RALLY__KEY_OP(4, 3), 700, 12, 4096);
    assert_int_equal(rally__job_rank_info(j, 1, &ri), RALLY_OK);
    assert_true(ri.present);
    assert_false(ri.finalized);
    assert_string_equal(ri.host, "10.0.0.1");
    assert_string_equal(ri.task_id, "1");
    assert_int_equal(ri.incarnation, 1);
    assert_true(ri.heartbeats);
    assert_int_equal(ri.last_rx_ms, now_ms);
    assert_int_equal(ri.position, RALLY__KEY_OP(4, 3));
    assert_true(ri.waiting);
    assert_string_equal(ri.what, "allreduce");
    assert_int_equal(ri.since_ms, now_ms - 700);
    assert_int_equal(ri.calls, 12);
    assert_int_equal(ri.nbytes, 4096);
    now_ms += 1000; /* the same place, more counted: since stays, the counters move */
    beat_counted(1, RALLY__KEY_OP(4, 3), 1700, 13, 8192);
    assert_int_equal(rally__job_rank_info(j, 1, &ri), RALLY_OK);
    assert_int_equal(ri.since_ms, now_ms - 1000 - 700);
    assert_int_equal(ri.calls, 13);
    assert_int_equal(ri.nbytes, 8192);
    beat(1, RALLY__KEY_OP(4, 4), 0, "", 0); /* a body without counters reads as 0 */
    assert_int_equal(rally__job_rank_info(j, 1, &ri), RALLY_OK);
    assert_int_equal(ri.calls, 0);
    frame(1, RALLY__T_HEARTBEAT, NULL, 0); /* an empty one keeps them */
    assert_int_equal(rally__job_rank_info(j, 1, &ri), RALLY_OK);
    assert_int_equal(ri.position, RALLY__KEY_OP(4, 4));
    /* rank 1 dies: the tables remember it */
    beat_counted(1, RALLY__KEY_OP(4, 5), 0, 20, 1);
    lost(1);
    assert_int_equal(rally__job_rank_info(j, 1, &ri), RALLY_OK);
    assert_false(ri.present);
    assert_false(ri.heartbeats);
    assert_string_equal(ri.host, "10.0.0.1");
    assert_string_equal(ri.task_id, "1");
    assert_int_equal(ri.incarnation, 1);
    assert_int_equal(ri.last_rx_ms, 0);
    assert_int_equal(ri.calls, 0);
    /* its next incarnation, from another host */
    open_m(3);
    reg(3, "1", 0);
    assert_int_equal(rally__job_rank_info(j, 1, &ri), RALLY_OK);
    assert_true(ri.present);
    assert_int_equal(ri.incarnation, 2);
    assert_string_equal(ri.host, "10.0.0.3");
    assert_false(ri.heartbeats);
    rejoin(0, 2, RALLY__KEY_OP(4, 5), 4);
    frame(0, RALLY__T_READY, NULL, 0);
    frame(3, RALLY__T_READY, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    frame(0, RALLY__T_SHUTDOWN, NULL, 0);
    assert_int_equal(rally__job_rank_info(j, 0, &ri), RALLY_OK);
    assert_true(ri.present);
    assert_true(ri.finalized);
    /* a finalized rank whose process the launcher saw end: only its tables */
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_DIED, .rank = 0, .text = "exited"});
    assert_int_equal(rally__job_rank_info(j, 0, &ri), RALLY_OK);
    assert_false(ri.present);
    assert_true(ri.finalized);
    assert_string_equal(ri.host, "10.0.0.0");
}

/* --- the messages both sides share ----------------------------------------- */

/* The words a position is said in (tracker/proto.c), which every failure
 * message uses. */
static void position_words(void **state)
{
    (void)state;
    char s[64];
    rally__position_str(5, s, sizeof s);
    assert_string_equal(s, "bootstrap op 5");
    rally__position_str(UINT64_C(1) << 62, s, sizeof s);
    assert_string_equal(s, "in load_checkpoint");
    rally__position_str(RALLY__KEY_OP(3, 8), s, sizeof s); /* version 3, user seq 7 */
    assert_string_equal(s, "version 3, seq 7");
    rally__position_str((UINT64_C(2) << 62) | (UINT64_C(9) << 32), s, sizeof s);
    assert_string_equal(s, "version 9, checkpoint");
    rally__position_str(UINT64_C(3) << 62, s, sizeof s);
    assert_string_equal(s, "in finalize");
}

static void messages_round_trip(void **state)
{
    (void)state;
    unsigned char b[2048];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    struct rally__msg_register r = {.want_rank = 3, .world_hint = 8, .listen_port = 9000};
    snprintf(r.task_id, sizeof r.task_id, "task");
    snprintf(r.listen_host, sizeof r.listen_host, "h");
    snprintf(r.processor, sizeof r.processor, "node7");
    snprintf(r.domain, sizeof r.domain, "rack1");
    rally__msg_register_put(&w, &r);
    struct rally__msg_register g;
    assert_int_equal(rally__msg_register_get(b, w.len, &g), 0);
    assert_string_equal(g.task_id, "task");
    assert_int_equal(g.want_rank, 3);
    assert_int_equal(g.world_hint, 8);
    assert_int_equal(g.listen_port, 9000);
    assert_string_equal(g.listen_host, "h");
    assert_string_equal(g.processor, "node7");
    assert_string_equal(g.domain, "rack1");
    assert_int_equal(rally__msg_register_get(b, w.len - 1, &g), -1);

    w.len = 0; /* an ASSIGN of two */
    rally__msg_assign_head(&w, 1, 2, 5);
    rally__msg_book_entry(&w, "a", 1, 1, "");
    rally__msg_book_entry(&w, "bb", 2, 5, "rack2");
    rally__msg_assign_tail(&w, 4, 3, 1);
    assert_int_equal(w.len, 12 + rally__msg_book_entry_nbytes("a", "") +
                                rally__msg_book_entry_nbytes("bb", "rack2") + 12);
    struct rally__msg_assign a;
    assert_int_equal(rally__msg_assign_get(b, w.len, &a), 0);
    assert_int_equal(a.rank, 1);
    assert_int_equal(a.epoch, 4);
    assert_int_equal(a.members, 3);
    assert_int_equal(a.flags, 1);
    assert_string_equal(a.peers[1].host, "bb");
    assert_int_equal(a.peers[1].incarnation, 5);
    assert_string_equal(a.peers[0].domain, "");
    assert_string_equal(a.peers[1].domain, "rack2");
    free(a.peers);
    assert_int_equal(rally__msg_assign_get(b, w.len - 1, &a), -3);
    assert_null(a.peers);
    b[0] = 2; /* rank 2 of 2 */
    assert_int_equal(rally__msg_assign_get(b, w.len, &a), -1);

    char s[RALLY__ERR_MSG_MAX], big[RALLY__ERR_MSG_MAX + 100];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    w.len = 0; /* a sentence too long is cut to fit the reader */
    rally__msg_fail_put(&w, 7, big);
    uint32_t code;
    assert_int_equal(rally__msg_fail_get(b, w.len, &code, s, sizeof s), 0);
    assert_int_equal(code, 7);
    assert_int_equal(strlen(s), RALLY__ERR_MSG_MAX - 1);
    w.len = 0;
    rally__msg_reset_put(&w, 3, big);
    char reason[RALLY__REASON_MAX];
    assert_int_equal(rally__msg_reset_get(b, w.len, &code, reason, sizeof reason), 0);
    assert_int_equal(code, 3);
    assert_int_equal(strlen(reason), RALLY__REASON_MAX - 1);
    w.len = 0;
    rally__msg_rejoin_put(&w, 2, RALLY__KEY_FINAL, 9);
    uint32_t e2, v;
    uint64_t pos;
    assert_int_equal(rally__msg_rejoin_get(b, w.len, &e2, &pos, &v), 0);
    assert_int_equal(pos, RALLY__KEY_FINAL);
    assert_int_equal(v, 9);
    assert_int_equal(rally__msg_empty_get(b, 0), 0);
    assert_int_equal(rally__msg_empty_get(b, 1), -1);
    assert_string_equal(rally__msg_name(RALLY__T_LINK_FAILED), "LINK_FAILED");
    assert_string_equal(rally__msg_name(RALLY__T_REPORT), "REPORT");

    w.len = 0; /* a REPORT: every field back, the text cut to 1023 bytes */
    struct rally__msg_report rp = {RALLY__REPORT_SNAPSHOT, 42, 0.1, 123456789, "copy", ""};
    memset(rp.text, 'p', sizeof rp.text - 1);
    rally__msg_report_put(&w, &rp);
    assert_int_equal(w.len, 1 + 8 + 8 + 8 + 4 + 4 + 4 + 1023);
    assert_int_equal(b[0], RALLY__REPORT_SNAPSHOT);
    assert_int_equal(rally__get_u64(b + 9), UINT64_C(0x3fb999999999999a)); /* 0.1's bits */
    struct rally__msg_report rg;
    assert_int_equal(rally__msg_report_get(b, w.len, &rg), 0);
    assert_int_equal(rg.kind, RALLY__REPORT_SNAPSHOT);
    assert_int_equal(rg.version, 42);
    assert_true(rg.value == 0.1);
    assert_int_equal(rg.nbytes, 123456789);
    assert_string_equal(rg.key, "copy");
    assert_int_equal(strlen(rg.text), 1023);

    /* a HEARTBEAT from before the counters or the straggler window still
     * reads, as 0 */
    w.len = 0;
    struct rally__msg_heartbeat hb = {1, RALLY__KEY_OP(2, 1), 1, 5, "broadcast", 7, 8, 9, 10, 11};
    rally__msg_heartbeat_put(&w, &hb);
    struct rally__msg_heartbeat hg;
    assert_int_equal(rally__msg_heartbeat_get(b, w.len, &hg), 0);
    assert_int_equal(hg.calls, 7);
    assert_int_equal(hg.nbytes, 8);
    assert_int_equal(hg.win, 9);
    assert_int_equal(hg.win_wait_ms, 10);
    assert_int_equal(hg.win_span_ms, 11);
    assert_int_equal(rally__msg_heartbeat_get(b, w.len - 20, &hg), 0); /* no window */
    assert_int_equal(hg.calls, 7);
    assert_int_equal(hg.win, 0);
    assert_int_equal(hg.win_span_ms, 0);
    assert_int_equal(rally__msg_heartbeat_get(b, w.len - 36, &hg), 0);
    assert_int_equal(hg.calls, 0);
    assert_int_equal(hg.nbytes, 0);
    assert_string_equal(hg.what, "broadcast");
    assert_int_equal(rally__msg_heartbeat_get(b, w.len - 28, &hg), -1); /* half of them */
    assert_int_equal(rally__msg_heartbeat_get(b, w.len - 8, &hg), -1);
    assert_int_equal(rally__msg_heartbeat_get(b, w.len - 1, &hg), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(whole_protocol_of_one_worker, done_job),
        cmocka_unit_test_teardown(start_error_fails_the_job_once, done_job),
        cmocka_unit_test_teardown(restarted_rank_with_another_input_fails_the_job, done_job),
        cmocka_unit_test_teardown(shrink_takes_new_inputs, done_job),
        cmocka_unit_test_teardown(input_scheme_and_first_word, done_job),
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
        cmocka_unit_test_teardown(stuck_rank_is_named_and_fenced, done_job),
        cmocka_unit_test_teardown(stuck_rank_fails_the_job, done_job),
        cmocka_unit_test_teardown(stuck_rank_with_no_restart_fails_the_job, done_job),
        cmocka_unit_test_teardown(no_alarm_while_every_rank_computes, done_job),
        cmocka_unit_test_teardown(no_alarm_when_the_slow_rank_moves, done_job),
        cmocka_unit_test_teardown(recovery_round_names_the_rank_that_never_comes, done_job),
        cmocka_unit_test_teardown(recovery_round_fails_the_job, done_job),
        cmocka_unit_test_teardown(recover_link_failed_resets_without_fencing, done_job),
        cmocka_unit_test_teardown(recover_launcher_reports_death, done_job),
        cmocka_unit_test_teardown(death_after_finalize_only_fences, done_job),
        cmocka_unit_test_teardown(elastic_rank_given_up_shrinks_the_job, done_job),
        cmocka_unit_test_teardown(elastic_below_the_minimum_fails_the_job, done_job),
        cmocka_unit_test_teardown(elastic_two_changes, done_job),
        cmocka_unit_test_teardown(elastic_loss_in_finalize_finishes, done_job),
        cmocka_unit_test_teardown(elastic_worker_taken_in, done_job),
        cmocka_unit_test_teardown(recover_not_after_a_rank_finalized, done_job),
        cmocka_unit_test_teardown(finalize_while_recovering_is_fatal, done_job),
        cmocka_unit_test_teardown(recover_off_keeps_failures_fatal, done_job),
        cmocka_unit_test_teardown(recover_malformed_rejoin_is_fatal, done_job),
        cmocka_unit_test_teardown(owner_abort_reaches_everyone, done_job),
        cmocka_unit_test_teardown(report_reaches_the_owner_with_every_field, done_job),
        cmocka_unit_test_teardown(report_malformed_drops_the_member, done_job),
        cmocka_unit_test_teardown(report_with_a_bad_key_is_refused, done_job),
        cmocka_unit_test_teardown(rank_info_from_members_and_tables, done_job),
        cmocka_unit_test(position_words),
        cmocka_unit_test(messages_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
