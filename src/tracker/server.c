/*
 * server.c — the tracker: glue between its connections (conn.h), its job
 * state machine (job.h) and the owner's hooks (server.h).
 *
 * handle() walks the reports of the connection layer: an authenticated
 * connection becomes a job member, its frames and its loss become job
 * events; each event's actions are carried out at once (frames queued,
 * connections admitted, closed or refused, events and PRINT lines passed
 * to the owner).  Carrying out an action only queues bytes or closes a
 * descriptor: a write that fails is a report of the connection layer, seen
 * on a later turn of the same walk, so nothing runs re-entrantly.  Neither
 * part below calls up: the connection layer and the job only report.
 */
#include "tracker/server.h"

#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracker/conn.h"
#include "tracker/job.h"
#include "util/clock.h"

#define HANDSHAKE_DEFAULT_MS 10000

struct rally__tracker {
    struct rally__tracker_opts o;
    struct rally__secret secret;
    struct rally__conns *conns;
    struct rally__job *job;
    struct rally__conn_book *book; /* the newest address book, for ASSIGN */
};

static void emit(struct rally__tracker *t, const struct rally__tracker_event *ev)
{
    if (t->o.event != NULL)
        t->o.event(t->o.arg, ev);
}

/* Carries out the actions of the job's last step. */
static void apply(struct rally__tracker *t)
{
    const struct rally__job_act *a;
    size_t n = rally__job_actions(t->job, &a);
    for (size_t i = 0; i < n; i++) {
        struct rally__conn *c = a[i].m ? a[i].m->owner : NULL;
        switch (a[i].kind) {
        case RALLY__JOB_SEND:
            rally__conn_send(t->conns, c, a[i].type, a[i].body, a[i].nbytes,
                             a[i].with_book ? t->book : NULL, a[i].tail, a[i].tail_nbytes);
            break;
        case RALLY__JOB_BOOK: {
            struct rally__conn_book *b = rally__conn_book_new(a[i].body, a[i].nbytes);
            if (b == NULL) {
                struct rally__job_ev ev = {.kind = RALLY__JOB_EV_ABORT,
                                           .now_us = rally__now_us(),
                                           .code = RALLY_ENOMEM,
                                           .text = "the tracker ran out of memory for the "
                                                   "address book"};
                /* the rest of this step's actions are dropped: the job failed */
                rally__job_step(t->job, &ev);
                apply(t);
                return;
            }
            rally__conn_book_unref(t->book);
            t->book = b;
            break;
        }
        case RALLY__JOB_ADMIT: rally__conn_admit(c); break;
        case RALLY__JOB_CLOSE: rally__conn_close(c); break;
        case RALLY__JOB_REFUSE: rally__conn_linger(c, rally__now_ms()); break;
        case RALLY__JOB_EVENT: emit(t, &a[i].ev); break;
        case RALLY__JOB_PRINT:
            if (t->o.print)
                t->o.print(t->o.arg, a[i].ev.rank, a[i].ev.text);
            break;
        default: break;
        }
    }
}

static void step(struct rally__tracker *t, struct rally__job_ev *ev)
{
    ev->now_us = rally__now_us();
    rally__job_step(t->job, ev);
    apply(t);
}

static void say(struct rally__tracker *t, const char *text)
{
    struct rally__tracker_event ev = {.kind = RALLY__TEV_LOG,
                                      .rank = -1,
                                      .task_id = "",
                                      .text = text,
                                      .epoch = rally__job_epoch(t->job)};
    emit(t, &ev);
}

/* One report of the connection layer, turned into job events. */
static void on_report(struct rally__tracker *t, const struct rally__conn_report *r)
{
    struct rally__job_member *m = r->c ? r->c->user : NULL;
    struct rally__job_ev ev = {.m = m};
    switch (r->kind) {
    case RALLY__CONN_LOG: say(t, r->text); return;
    case RALLY__CONN_AUTHED:
        m = calloc(1, sizeof *m);
        if (m == NULL) {
            say(t, "dropping a worker: out of memory");
            rally__conn_close(r->c);
            return;
        }
        r->c->user = m;
        m->owner = r->c;
        snprintf(m->peer, sizeof m->peer, "%s", r->c->peer);
        snprintf(m->what, sizeof m->what, "%s", r->c->name);
        r->c->name = m->what;
        ev.kind = RALLY__JOB_EV_OPEN;
        ev.m = m;
        break;
    case RALLY__CONN_FRAME:
        ev.kind = RALLY__JOB_EV_FRAME;
        ev.type = r->type;
        ev.body = r->body;
        ev.nbytes = r->nbytes;
        break;
    case RALLY__CONN_LOST: ev.kind = RALLY__JOB_EV_LOST; ev.text = r->text; break;
    case RALLY__CONN_BAD: ev.kind = RALLY__JOB_EV_DROP; ev.text = r->text; break;
    case RALLY__CONN_TIMERS: ev.kind = RALLY__JOB_EV_TICK; break;
    default: return;
    }
    if (ev.kind != RALLY__JOB_EV_TICK && ev.m == NULL)
        return; /* a connection the job never knew */
    step(t, &ev);
}

void rally__tracker_handle(struct rally__tracker *t, const struct pollfd *p, size_t n)
{
    struct rally__conn_report r;
    rally__conns_begin(t->conns, p, n, rally__now_ms(), rally__job_deadline(t->job));
    while (rally__conns_next(t->conns, &r))
        on_report(t, &r);
}

void rally__tracker_abort(struct rally__tracker *t, int code, const char *fmt, ...)
{
    char sentence[RALLY__ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sentence, sizeof sentence, fmt, ap);
    va_end(ap);
    struct rally__job_ev ev = {.kind = RALLY__JOB_EV_ABORT, .code = code, .text = sentence};
    step(t, &ev);
}

void rally__tracker_rank_died(struct rally__tracker *t, int rank, const char *cause)
{
    struct rally__job_ev ev = {.kind = RALLY__JOB_EV_DIED, .rank = rank, .text = cause};
    step(t, &ev);
}

void rally__tracker_rank_gone(struct rally__tracker *t, int rank, const char *cause)
{
    struct rally__job_ev ev = {.kind = RALLY__JOB_EV_GONE, .rank = rank, .text = cause};
    step(t, &ev);
}

void rally__tracker_set_min_world(struct rally__tracker *t, int min_world)
{
    rally__job_set_min_world(t->job, min_world);
}

int rally__tracker_set_max_world(struct rally__tracker *t, int max_world)
{
    return rally__job_set_max_world(t->job, max_world);
}

int rally__tracker_world(const struct rally__tracker *t)
{
    return rally__job_world(t->job);
}

int rally__tracker_rank_of(const struct rally__tracker *t, const char *task_id)
{
    return rally__job_rank_of(t->job, task_id);
}

const char *rally__tracker_task_of(const struct rally__tracker *t, int rank)
{
    return rally__job_task_of(t->job, rank);
}

size_t rally__tracker_npoll(const struct rally__tracker *t)
{
    return rally__conns_npoll(t->conns);
}

size_t rally__tracker_fill(struct rally__tracker *t, struct pollfd *p, size_t cap)
{
    return rally__conns_fill(t->conns, p, cap);
}

int64_t rally__tracker_deadline(const struct rally__tracker *t)
{
    int64_t a = rally__job_deadline(t->job), b = rally__conns_deadline(t->conns);
    return a < b ? a : b;
}

int rally__tracker_state(const struct rally__tracker *t, const char **sentence, int *rank)
{
    const char *s = rally__job_sentence(t->job, rank);
    if (sentence)
        *sentence = s;
    switch (rally__job_phase(t->job)) {
    case RALLY__JOB_DONE: return RALLY__TRACKER_DONE;
    case RALLY__JOB_FAILED: return RALLY__TRACKER_FAILED;
    default: return RALLY__TRACKER_RUNNING;
    }
}

const char *rally__tracker_reported(const struct rally__tracker *t, int *rank)
{
    return rally__job_reported(t->job, rank);
}

int rally__tracker_code(const struct rally__tracker *t)
{
    return rally__job_code(t->job);
}

int rally__tracker_lost(const struct rally__tracker *t)
{
    return rally__job_lost(t->job);
}

int rally__tracker_flushed(const struct rally__tracker *t)
{
    return rally__conns_flushed(t->conns);
}

int rally__tracker_port(const struct rally__tracker *t)
{
    return rally__conns_port(t->conns);
}

int rally__tracker_recoverable(const struct rally__tracker *t)
{
    return rally__job_recoverable(t->job);
}

void rally__tracker_set_recovery(struct rally__tracker *t, int on)
{
    rally__job_set_recovery(t->job, on);
}

void rally__tracker_set_heartbeat_timeout(struct rally__tracker *t, int64_t timeout_ms)
{
    rally__job_set_heartbeat_timeout(t->job, timeout_ms);
}

void rally__tracker_set_progress_timeout(struct rally__tracker *t, int64_t timeout_ms, int fail)
{
    rally__job_set_progress_timeout(t->job, timeout_ms, fail);
}

void rally__tracker_no_restart(struct rally__tracker *t, int rank)
{
    rally__job_no_restart(t->job, rank);
}

uint32_t rally__tracker_epoch(const struct rally__tracker *t)
{
    return rally__job_epoch(t->job);
}

/* The job's times are rally__now_ms's (step() passes rally__now_us), as
 * the struct promises. */
int rally__tracker_rank_info(const struct rally__tracker *t, int rank,
                             struct rally__tracker_rank *out)
{
    return rally__job_rank_info(t->job, rank, out);
}

int rally__tracker_phase(const struct rally__tracker *t)
{
    return (int)rally__job_phase(t->job); /* job.h's phases are numbered as server.h's */
}

int rally__tracker_new(struct rally__tracker **out, const struct rally__tracker_opts *o,
                       struct rally__err *e)
{
    struct rally__tracker *t = NULL;
    if (o->world < 1 || o->world > RALLY__WORLD_MAX) {
        rally__fail(e, RALLY_EINVAL, "a job has 1 to %d workers, not %d", RALLY__WORLD_MAX,
                    o->world);
        goto cleanup;
    }
    if (sodium_init() < 0) {
        rally__fail(e, RALLY_ESYS, "libsodium failed to initialise");
        goto cleanup;
    }
    t = calloc(1, sizeof *t);
    if (t == NULL) {
        rally__fail(e, RALLY_ENOMEM, "out of memory creating the tracker");
        goto cleanup;
    }
    t->o = *o;
    t->o.host = NULL; /* not kept */
    t->secret = *o->secret;
    struct rally__job_opts jo = {o->world, o->startup_timeout_ms};
    struct rally__conns_opts co = {
        .host = o->host,
        .port = o->port,
        .backlog = o->world < 128 ? 128 : o->world > 4096 ? 4096 : o->world,
        .max_strangers = (size_t)o->world + 128,
        .handshake_ms = o->handshake_timeout_ms > 0 ? o->handshake_timeout_ms
                                                    : HANDSHAKE_DEFAULT_MS,
        .role = RALLY__ROLE_WORKER,
        .secret = &t->secret,
    };
    if (rally__job_new(&t->job, &jo, rally__now_us(), e) != RALLY_OK ||
        rally__conns_new(&t->conns, &co, e) != RALLY_OK)
        goto cleanup;
    *out = t;
    return RALLY_OK;
cleanup:
    rally__tracker_free(t);
    return e->code;
}

void rally__tracker_free(struct rally__tracker *t)
{
    if (t == NULL)
        return;
    rally__conns_free(t->conns);
    rally__job_free(t->job);
    rally__conn_book_unref(t->book);
    sodium_memzero(&t->secret, sizeof t->secret);
    free(t);
}
