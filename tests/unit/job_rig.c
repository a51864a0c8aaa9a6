/*
 * job_rig.c — the rig of the job state machine's tests (job_rig.h).
 */
#include "job_rig.h"

struct rally__job *j;
struct rally__job_member m[2 * W_MAX];
int64_t now_ms;
char log_[16384]; /* every EVENT text of the case, one per line: "[kind rank] text" */

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

void run(struct rally__job_ev ev)
{
    ev.now_us = now_ms * 1000;
    rally__job_step(j, &ev);
    record();
}

void new_job(int world, int64_t startup_ms)
{
    struct rally__err e = {0, ""};
    struct rally__job_opts o = {world, startup_ms};
    now_ms = 1000000;
    log_[0] = '\0';
    memset(m, 0, sizeof m);
    assert_int_equal(rally__job_new(&j, &o, now_ms * 1000, &e), RALLY_OK);
}

int done_job(void **state)
{
    (void)state;
    rally__job_free(j);
    j = NULL;
    return 0;
}

/* Member i authenticates (it comes from 10.0.0.i). */
void open_m(int i)
{
    memset(&m[i], 0, sizeof m[i]);
    m[i].owner = &m[i];
    snprintf(m[i].peer, sizeof m[i].peer, "10.0.0.%d", i);
    snprintf(m[i].what, sizeof m[i].what, "connection from 10.0.0.%d:5000", i);
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_OPEN, .m = &m[i]});
}

void frame(int i, uint16_t type, const void *body, size_t n)
{
    run((struct rally__job_ev){
        .kind = RALLY__JOB_EV_FRAME, .m = &m[i], .type = type, .body = body, .nbytes = n});
}

void reg(int i, const char *task, uint32_t world_hint)
{
    struct rally__msg_register r = {.want_rank = -1, .world_hint = world_hint};
    snprintf(r.task_id, sizeof r.task_id, "%s", task);
    r.listen_port = (uint16_t)(4000 + i);
    unsigned char b[1024];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_register_put(&w, &r);
    frame(i, RALLY__T_REGISTER, b, w.len);
}

void lost(int i)
{
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_LOST, .m = &m[i], .text = "peer closed"});
}

void rejoin(int i, uint32_t epoch, uint64_t pos, uint32_t version)
{
    unsigned char b[16];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_rejoin_put(&w, epoch, pos, version);
    frame(i, RALLY__T_REJOIN, b, w.len);
}

/* IN_STEP{epoch} from member i: the job got back in step after a recovery. */
void in_step(int i, uint32_t epoch)
{
    unsigned char b[4];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_u32_put(&w, epoch);
    frame(i, RALLY__T_IN_STEP, b, w.len);
}

void tick_at(int64_t ms)
{
    now_ms = ms;
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_TICK});
}

/* --- looking at the last step's actions ------------------------------------- */

size_t nacts(const struct rally__job_act **a)
{
    return rally__job_actions(j, a);
}

/* The action of kind to member i (i < 0: to nobody), or NULL. */
const struct rally__job_act *find(int kind, int i, uint16_t type)
{
    const struct rally__job_act *a;
    size_t n = nacts(&a);
    for (size_t k = 0; k < n; k++)
        if (a[k].kind == kind && (i < 0 ? a[k].m == NULL : a[k].m == &m[i]) &&
            (kind != RALLY__JOB_SEND || a[k].type == type))
            return &a[k];
    return NULL;
}

int sent(int i, uint16_t type)
{
    return find(RALLY__JOB_SEND, i, type) != NULL;
}

int count_kind(int kind)
{
    const struct rally__job_act *a;
    size_t n = nacts(&a), c = 0;
    for (size_t k = 0; k < n; k++)
        c += a[k].kind == kind;
    return (int)c;
}

/* The event of kind in the last step, or NULL. */
const struct rally__tracker_event *event(int kind)
{
    const struct rally__job_act *a;
    size_t n = nacts(&a);
    for (size_t k = 0; k < n; k++)
        if (a[k].kind == RALLY__JOB_EVENT && a[k].ev.kind == kind)
            return &a[k].ev;
    return NULL;
}

/* The ABORT sent to i in the last step: its code, and its sentence in s. */
int abort_to(int i, char *s, size_t cap)
{
    const struct rally__job_act *a = find(RALLY__JOB_SEND, i, RALLY__T_ABORT);
    assert_non_null(a);
    uint32_t code;
    assert_int_equal(rally__msg_fail_get(a->body, a->nbytes, &code, s, cap), 0);
    return (int)code;
}

/* The RESET sent to i in the last step: its epoch, and its reason in s. */
uint32_t reset_to(int i, char *s, size_t cap)
{
    const struct rally__job_act *a = find(RALLY__JOB_SEND, i, RALLY__T_RESET);
    assert_non_null(a);
    uint32_t epoch;
    assert_int_equal(rally__msg_reset_get(a->body, a->nbytes, &epoch, s, cap), 0);
    return epoch;
}

/* Decodes the ASSIGN sent to i in the last step (head + BOOK + tail). */
struct rally__msg_assign assign_to(int i)
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

int logged(const char *s)
{
    return strstr(log_, s) != NULL;
}

/* world members 0..world-1 open and register with task ids "0".."world-1";
 * the last REGISTER brings the ASSIGNs. */
void join_all(int world)
{
    for (int i = 0; i < world; i++) {
        char task[16];
        snprintf(task, sizeof task, "%d", i);
        open_m(i);
        reg(i, task, 0);
        assert_non_null(find(RALLY__JOB_ADMIT, i, 0));
    }
}

void ready_all(int world)
{
    for (int i = 0; i < world; i++)
        frame(i, RALLY__T_READY, NULL, 0);
}

void running(int world)
{
    join_all(world);
    ready_all(world);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
}

void input(int i, const char *scheme, uint64_t fp)
{
    unsigned char b[128];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_input_put(&w, scheme, fp);
    frame(i, RALLY__T_INPUT, b, w.len);
}

/* Member i's heartbeat: where it stands, and for how long already. */
void beat(int i, uint64_t pos, int waiting, const char *what, uint64_t for_ms)
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
