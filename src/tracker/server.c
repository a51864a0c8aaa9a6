/*
 * server.c — the tracker's event-driven core (see server.h for the loop).
 *
 * Each accepted socket is a struct conn that walks through three phases:
 * C_AUTH (frames go to the rally__auth_srv state machine in c->auth),
 * C_AUTHED (authenticated, REGISTER expected) and C_REG (registered; once
 * every one of `world` workers is registered, assign() gives out ranks and
 * the address book and c->rank is set).  A conn reads with its own
 * incremental reader c->in and writes through a queue of chunks (c->out_head)
 * that poll flushes when the socket takes more; a chunk either owns its
 * bytes or points into a shared address book (struct book, below).
 *
 * Misbehaving connections are dropped with a TEV_LOG line and the job goes
 * on.  Once a connection has registered, its loss is the job's loss until
 * the first GO: fail_job() records the sentence and queues ABORT to everyone
 * else.  After the first GO a lost worker is a rank failure instead
 * (rank_failed): the conn is fenced, t->epoch grows, RESET goes to every
 * worker that holds an ASSIGN, and the tracker waits in P_ASSEMBLING until
 * every rank is present (present(): rejoined this epoch, or registered again
 * and waiting for its first ASSIGN), then sends ASSIGN (P_STARTING), and GO
 * (P_RUNNING) once every rank is READY.  A protocol violation stays fatal.
 * Dropped conns are only marked (C_GONE, fd closed) while handle() walks the
 * pollfd slice, and freed by sweep() at its end, so slice index i+1 <->
 * conns[i] stays valid throughout.
 *
 * The address book lives in a reference-counted struct book that ASSIGN
 * chunks point into, so ASSIGN to N workers does not copy it N times and a
 * new epoch's book can replace the old one while old ASSIGNs still wait in
 * some queue.
 */
#include "tracker/server.h"

#include <errno.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/frame.h"
#include "net/sock.h"
#include "tracker/msg.h"
#include "tracker/proto.h"
#include "util/clock.h"
#include "util/wire.h"

#define FRAMES_PER_WAKE 64     /* fairness: frames read from one conn per handle() */
#define CLOSE_LINGER_MS 2000   /* time a refused conn gets to read its REFUSE/ABORT */
#define HANDSHAKE_DEFAULT_MS 10000

enum { C_AUTH, C_AUTHED, C_REG, C_GONE };
/* P_ASSEMBLING: after a failure, waiting for every rank to rejoin or register. */
enum { P_JOINING, P_STARTING, P_RUNNING, P_ASSEMBLING };

/* An address book: the tail of ASSIGN, shared by the chunks that send it. */
struct book {
    int refs;
    size_t nbytes;
    unsigned char b[];
};

struct chunk {
    struct chunk *next;
    const unsigned char *p;
    size_t n, off;
    struct book *book; /* holds a reference when p points into it */
    unsigned char own[];
};

struct conn {
    int fd;
    int phase;
    int closing;      /* send what is queued, then close; read nothing more */
    int64_t deadline; /* handshake+REGISTER, or the closing linger */
    char peer[RALLY__HOST_MAX];
    char what[RALLY__HOST_MAX + 48]; /* "connection from 1.2.3.4:5678" / "rank 3 (...)" */
    struct rally__auth_srv auth;
    struct rally__frame_in in;
    struct chunk *out_head, *out_tail;
    /* registration */
    char task_id[RALLY__TASK_MAX];
    char host[RALLY__HOST_MAX];
    int listen_port;
    uint64_t arrival;
    int rank; /* -1 until assigned */
    int ready, finalized;
    /* recovery */
    uint32_t assigned;     /* the epoch of the last ASSIGN it got, 0: none yet */
    uint32_t rejoined;     /* the epoch of its last accepted REJOIN, 0: none */
    uint64_t position;     /* from that REJOIN */
    uint32_t version;
    int heartbeats;        /* it sent a HEARTBEAT: silence now counts */
    int64_t last_rx;       /* when its last frame arrived */
};

struct rally__tracker {
    struct rally__tracker_opts o;
    struct rally__secret secret;
    int lfd, port;
    struct conn **conns;
    size_t nconns, cap, max_conns;
    struct conn **by_rank; /* world entries once assigned; NULL while a rank is down */
    int nregistered, nready, nfinal;
    int phase, state, code, failed_rank;
    char sentence[RALLY__ERR_MSG_MAX];
    int64_t startup_deadline, handshake_ms;
    struct book *book;
    uint64_t arrivals;
    /* recovery */
    int no_recovery;
    int64_t heartbeat_ms;   /* 0: off */
    int went;               /* the first GO went out */
    uint32_t epoch;         /* 1 from the start */
    uint32_t *incarnation;  /* world entries: the newest registration of each rank */
    char **rank_task;       /* world entries: each rank's task id, kept for re-registration */
    char *rank_final;       /* world entries: the rank sent SHUTDOWN */
    int recovering;         /* from a failure until the GO that ends it */
    int64_t failed_at_us;   /* the first failure of this recovery */
    int64_t epoch_deadline; /* the current epoch must reach GO by then */
};

/* --- small helpers --------------------------------------------------------- */

static void emit_ev(struct rally__tracker *t, struct rally__tracker_event *ev)
{
    if (t->o.event == NULL)
        return;
    if (ev->task_id == NULL)
        ev->task_id = "";
    if (ev->text == NULL)
        ev->text = "";
    if (ev->epoch == 0)
        ev->epoch = t->epoch;
    t->o.event(t->o.arg, ev);
}

static void emit(struct rally__tracker *t, int kind, int rank, const char *task, const char *text)
{
    struct rally__tracker_event ev = {.kind = kind, .rank = rank, .task_id = task, .text = text};
    emit_ev(t, &ev);
}

/* A formatted line for the owner: a LOG or a PROGRESS event. */
static void say(struct rally__tracker *t, int kind, const char *fmt, ...) RALLY__PRINTF(3, 4);
static void say(struct rally__tracker *t, int kind, const char *fmt, ...)
{
    char line[RALLY__ERR_MSG_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    emit(t, kind, -1, NULL, line);
}

static struct chunk *chunk_new(size_t own)
{
    struct chunk *k = malloc(sizeof *k + own);
    if (k != NULL) {
        k->next = NULL;
        k->p = k->own;
        k->n = own;
        k->off = 0;
        k->book = NULL;
    }
    return k;
}

static void book_unref(struct book *b)
{
    if (b != NULL && --b->refs == 0)
        free(b);
}

static void chunk_free(struct chunk *k)
{
    book_unref(k->book);
    free(k);
}

static void push(struct conn *c, struct chunk *k)
{
    if (c->out_tail)
        c->out_tail->next = k;
    else
        c->out_head = k;
    c->out_tail = k;
}

static void drop(struct rally__tracker *t, struct conn *c, const char *fmt, ...) RALLY__PRINTF(3, 4);

/* Queues one frame: body (copied), then the book b (referenced; may be
 * NULL), then tail (copied). */
static void queue3(struct rally__tracker *t, struct conn *c, uint16_t type, const void *body,
                   size_t nbytes, struct book *b, const void *tail, size_t tail_nbytes)
{
    if (c->phase == C_GONE)
        return;
    size_t book_nbytes = b ? b->nbytes : 0;
    struct chunk *k = chunk_new(RALLY__FRAME_HDR + nbytes);
    struct chunk *x = b ? chunk_new(0) : NULL;
    struct chunk *y = tail_nbytes ? chunk_new(tail_nbytes) : NULL;
    if (k == NULL || (b && x == NULL) || (tail_nbytes && y == NULL)) {
        free(k);
        free(x);
        free(y);
        drop(t, c, "%s: out of memory queueing a frame", c->what);
        return;
    }
    rally__frame_hdr(k->own, type, nbytes + book_nbytes + tail_nbytes);
    if (nbytes)
        memcpy(k->own + RALLY__FRAME_HDR, body, nbytes);
    push(c, k);
    if (x) {
        x->p = b->b;
        x->n = b->nbytes;
        x->book = b;
        b->refs++;
        push(c, x);
    }
    if (y) {
        memcpy(y->own, tail, tail_nbytes);
        push(c, y);
    }
}

static void queue(struct rally__tracker *t, struct conn *c, uint16_t type, const void *body,
                  size_t nbytes)
{
    queue3(t, c, type, body, nbytes, NULL, NULL, 0);
}

/* Queues ABORT(code, sentence) to c. */
static void queue_abort(struct rally__tracker *t, struct conn *c, int code, const char *sentence)
{
    unsigned char b[4 + 4 + RALLY__ERR_MSG_MAX];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_fail_put(&w, (uint32_t)code, sentence);
    queue(t, c, RALLY__T_ABORT, b, w.len);
}

static void close_conn(struct conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->phase = C_GONE;
    while (c->out_head) {
        struct chunk *k = c->out_head;
        c->out_head = k->next;
        chunk_free(k);
    }
    c->out_tail = NULL;
    rally__frame_in_free(&c->in);
}

/* Gives up on c after queueing an ABORT that says why (a worker that sent a
 * bad REGISTER hears about it); the conn lingers until it is flushed. */
static void reject(struct rally__tracker *t, struct conn *c, int code, const char *fmt, ...)
    RALLY__PRINTF(4, 5);

static void appendf(char *s, size_t cap, size_t *len, const char *fmt, ...) RALLY__PRINTF(4, 5);
static void appendf(char *s, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(s + *len, cap - *len, fmt, ap);
    va_end(ap);
    *len = k < 0 ? cap : *len + (size_t)k;
}

/* --- job failure ----------------------------------------------------------- */

static void vfail_job(struct rally__tracker *t, int code, int rank, const char *fmt, va_list ap)
{
    if (t->state != RALLY__TRACKER_RUNNING)
        return;
    t->state = RALLY__TRACKER_FAILED;
    t->code = code;
    t->failed_rank = rank;
    vsnprintf(t->sentence, sizeof t->sentence, fmt, ap);
    for (size_t i = 0; i < t->nconns; i++) {
        struct conn *c = t->conns[i];
        if (c->phase == C_AUTHED || c->phase == C_REG)
            queue_abort(t, c, code, t->sentence);
    }
    emit(t, RALLY__TEV_FAILED, rank, NULL, t->sentence);
}

static void fail_job(struct rally__tracker *t, int code, int rank, const char *fmt, ...)
    RALLY__PRINTF(4, 5);
static void fail_job(struct rally__tracker *t, int code, int rank, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail_job(t, code, rank, fmt, ap);
    va_end(ap);
}

void rally__tracker_abort(struct rally__tracker *t, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail_job(t, code, -1, fmt, ap);
    va_end(ap);
}

/* --- epochs ---------------------------------------------------------------- */

int rally__tracker_recoverable(const struct rally__tracker *t)
{
    return t->state == RALLY__TRACKER_RUNNING && t->went && !t->no_recovery && t->nfinal == 0;
}

/* 1 when rank r counts as there for the current epoch's ASSIGN. */
static int present(const struct rally__tracker *t, int r)
{
    const struct conn *c = t->by_rank[r];
    return c != NULL && (c->assigned == 0 || c->rejoined == t->epoch);
}

/* Builds the address book from by_rank (every rank present). */
static struct book *make_book(struct rally__tracker *t)
{
    size_t nbook = 0;
    for (int r = 0; r < t->o.world; r++)
        nbook += rally__msg_book_entry_nbytes(t->by_rank[r]->host);
    if (12 + nbook + 4 > RALLY__FRAME_MAX) {
        fail_job(t, RALLY_EINVAL, -1,
                 "the address book of %d workers needs %zu bytes, over the %u-byte frame limit",
                 t->o.world, nbook, RALLY__FRAME_MAX);
        return NULL;
    }
    struct book *b = malloc(sizeof *b + nbook);
    if (b == NULL) {
        fail_job(t, RALLY_ENOMEM, -1, "the tracker ran out of memory for the address book");
        return NULL;
    }
    struct rally__wbuf w = {b->b, 0, nbook, 0};
    for (int r = 0; r < t->o.world; r++) {
        rally__msg_book_entry(&w, t->by_rank[r]->host, (uint16_t)t->by_rank[r]->listen_port,
                              t->incarnation[r]);
    }
    b->refs = 1;
    b->nbytes = w.len;
    return b;
}

/* Sends ASSIGN for the current epoch to every rank (all present). */
static void send_assign(struct rally__tracker *t)
{
    struct book *b = make_book(t);
    if (b == NULL)
        return;
    book_unref(t->book);
    t->book = b;
    t->phase = P_STARTING;
    t->nready = 0;
    /* On the wire the job's first ASSIGN says epoch 0 (proto.h): a worker
     * that gets a non-zero epoch knows it joined a running job. */
    unsigned char tail[RALLY__ASSIGN_TAIL];
    struct rally__wbuf tw = {tail, 0, sizeof tail, 0};
    rally__msg_assign_tail(&tw, t->went ? t->epoch : 0);
    for (int r = 0; r < t->o.world; r++) {
        struct conn *c = t->by_rank[r];
        int fresh = c->assigned == 0;
        c->assigned = t->epoch;
        c->ready = 0;
        unsigned char h[RALLY__ASSIGN_HEAD];
        struct rally__wbuf hw = {h, 0, sizeof h, 0};
        rally__msg_assign_head(&hw, r, (uint32_t)t->o.world, t->incarnation[r]);
        queue3(t, c, RALLY__T_ASSIGN, h, sizeof h, b, tail, sizeof tail);
        if (fresh)
            emit(t, RALLY__TEV_ASSIGNED, r, c->task_id, c->host);
    }
}

static void maybe_assign(struct rally__tracker *t)
{
    if (t->state != RALLY__TRACKER_RUNNING || t->phase != P_ASSEMBLING)
        return;
    for (int r = 0; r < t->o.world; r++)
        if (!present(t, r))
            return;
    say(t, RALLY__TEV_PROGRESS, "epoch %u: every rank is back; sending the address book", t->epoch);
    send_assign(t);
}

/* Starts the next epoch: RESET to every worker that holds an ASSIGN. */
static void new_epoch(struct rally__tracker *t, const char *cause)
{
    t->epoch++;
    if (!t->recovering) {
        t->recovering = 1;
        t->failed_at_us = rally__now_us();
    }
    t->phase = P_ASSEMBLING;
    t->nready = 0;
    t->epoch_deadline = rally__deadline(t->o.startup_timeout_ms);
    unsigned char b[4 + 4 + RALLY__REASON_MAX];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_reset_put(&w, t->epoch, cause);
    for (int r = 0; r < t->o.world; r++) {
        struct conn *c = t->by_rank[r];
        if (c == NULL)
            continue;
        c->ready = 0;
        if (c->assigned != 0)
            queue(t, c, RALLY__T_RESET, b, w.len);
    }
    say(t, RALLY__TEV_PROGRESS, "epoch %u: %s; every rank must rejoin", t->epoch, cause);
    maybe_assign(t);
}

/* Closes rank r's connection (its incarnation is over) and forgets it. */
static void fence(struct rally__tracker *t, int r)
{
    struct conn *c = t->by_rank[r];
    t->by_rank[r] = NULL;
    if (c != NULL) {
        if (c->phase == C_REG)
            t->nregistered--;
        close_conn(c);
    }
}

/* Rank r failed for cause (a sentence without a final period).  Recovery
 * when it applies; otherwise the job fails with fatal (the sentence the
 * non-recovering tracker always used, or cause). */
static void rank_failed(struct rally__tracker *t, int r, const char *cause, const char *fatal)
{
    if (t->state != RALLY__TRACKER_RUNNING)
        return;
    fence(t, r);
    if (!rally__tracker_recoverable(t)) {
        fail_job(t, RALLY_EPEER, r, "%s", fatal ? fatal : cause);
        return;
    }
    /* The event names the epoch the failure starts. */
    struct rally__tracker_event ev = {.kind = RALLY__TEV_RANK_FAILED,
                                      .rank = r,
                                      .task_id = t->rank_task[r],
                                      .text = cause,
                                      .epoch = t->epoch + 1};
    emit_ev(t, &ev);
    new_epoch(t, cause);
}

/* Closes c now.  A stranger's connection costs a log line; a registered
 * worker's fails the job (unless it finalized), or after the first GO is a
 * rank failure: lost = 1 when the peer went away (a crash, as far as we can
 * tell), 0 when we drop it for breaking the protocol, and why says how. */
static void vdrop(struct rally__tracker *t, struct conn *c, int lost, const char *fmt, va_list ap)
{
    if (c->phase == C_GONE)
        return;
    char why[RALLY__ERR_MSG_MAX];
    vsnprintf(why, sizeof why, fmt, ap);
    int registered = c->phase == C_REG && !c->finalized, rank = c->rank;
    char task[RALLY__TASK_MAX], host[RALLY__HOST_MAX];
    snprintf(task, sizeof task, "%s", c->task_id);
    snprintf(host, sizeof host, "%s", c->peer);
    if (c->phase != C_REG)
        say(t, RALLY__TEV_LOG, "dropping %s", why);
    if (rank >= 0 && t->by_rank[rank] == c)
        t->by_rank[rank] = NULL;
    if (c->phase == C_REG)
        t->nregistered--;
    close_conn(c);
    if (!registered)
        return;
    if (!lost) {
        fail_job(t, RALLY_EPROTO, -1, "%s", why);
    } else if (rank >= 0) {
        char cause[96], fatal[128];
        snprintf(cause, sizeof cause, "rank %d disconnected without finalizing", rank);
        snprintf(fatal, sizeof fatal, "%s (did it crash?)", cause);
        rank_failed(t, rank, cause, fatal);
    } else {
        fail_job(t, RALLY_EPEER, -1,
                 "the worker with task id '%s' on %s disconnected before every worker joined", task,
                 host);
    }
}

static void drop(struct rally__tracker *t, struct conn *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdrop(t, c, 0, fmt, ap);
    va_end(ap);
}

static void lose(struct rally__tracker *t, struct conn *c, const char *fmt, ...) RALLY__PRINTF(3, 4);
static void lose(struct rally__tracker *t, struct conn *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdrop(t, c, 1, fmt, ap);
    va_end(ap);
}

static void reject(struct rally__tracker *t, struct conn *c, int code, const char *fmt, ...)
{
    char why[RALLY__ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (c->phase == C_REG) { /* a registered worker's mistake is the job's */
        drop(t, c, "%s: %s", c->what, why);
        return;
    }
    say(t, RALLY__TEV_LOG, "refusing %s: %s", c->what, why);
    queue_abort(t, c, code, why);
    c->closing = 1;
    c->deadline = rally__now_ms() + CLOSE_LINGER_MS;
}

void rally__tracker_rank_died(struct rally__tracker *t, int rank, const char *cause)
{
    if (rank < 0 || rank >= t->o.world || t->by_rank[rank] == NULL ||
        t->state != RALLY__TRACKER_RUNNING)
        return;
    char why[RALLY__ERR_MSG_MAX];
    snprintf(why, sizeof why, "the launcher reported rank %d dead: %s", rank, cause);
    if (t->by_rank[rank]->finalized) { /* finished its part; only the connection is left */
        fence(t, rank);
        return;
    }
    rank_failed(t, rank, why, NULL);
}

/* Every rank is READY: GO, and the end of a recovery when one ran. */
static void go(struct rally__tracker *t)
{
    t->phase = P_RUNNING;
    for (int k = 0; k < t->o.world; k++)
        if (t->by_rank[k])
            queue(t, t->by_rank[k], RALLY__T_GO, NULL, 0);
    t->went = 1;
    emit(t, RALLY__TEV_GO, -1, NULL, NULL);
    if (!t->recovering)
        return;
    t->recovering = 0;
    struct rally__tracker_event ev = {.kind = RALLY__TEV_RECOVERED, .rank = -1};
    ev.seconds = (double)(rally__now_us() - t->failed_at_us) / 1e6;
    int best = -1;
    for (int r = 0; r < t->o.world; r++) {
        const struct conn *c = t->by_rank[r];
        if (c && c->rejoined == t->epoch && (best < 0 || c->position > ev.position)) {
            best = r;
            ev.position = c->position;
            ev.version = c->version;
        }
    }
    ev.has_position = best >= 0;
    char where[64], text[256];
    if (best >= 0) {
        rally__position_str(ev.position, where, sizeof where);
        snprintf(text, sizeof text,
                 "epoch %u: job back in step %.2f s after the failure; furthest survivor: %s "
                 "(rank %d, checkpoint version %u)",
                 t->epoch, ev.seconds, where, best, ev.version);
    } else {
        snprintf(text, sizeof text,
                 "epoch %u: job back in step %.2f s after the failure; no worker survived", t->epoch,
                 ev.seconds);
    }
    ev.text = text;
    emit_ev(t, &ev);
}

/* --- rank assignment ------------------------------------------------------- */

/* 1 when s is a canonical decimal in [0, world). */
static int small_int(const char *s, int world, int *v)
{
    if (s[0] < '0' || s[0] > '9' || (s[0] == '0' && s[1] != '\0') || strlen(s) > 9)
        return 0;
    long x = 0;
    for (const char *q = s; *q; q++) {
        if (*q < '0' || *q > '9')
            return 0;
        x = x * 10 + (*q - '0');
    }
    *v = (int)x;
    return x < world;
}

static int by_host_task_arrival(const void *a, const void *b)
{
    const struct conn *x = *(struct conn *const *)a, *y = *(struct conn *const *)b;
    int k = strcmp(x->host, y->host);
    if (k == 0)
        k = strcmp(x->task_id, y->task_id);
    if (k == 0)
        k = x->arrival < y->arrival ? -1 : x->arrival > y->arrival;
    return k;
}

/* The world-th registration: ranks, then ASSIGN (epoch 1) to all. */
static void assign(struct rally__tracker *t)
{
    int world = t->o.world, numeric = 1, v;
    struct conn **reg = calloc((size_t)world, sizeof *reg);
    if (reg == NULL) {
        fail_job(t, RALLY_ENOMEM, -1, "the tracker ran out of memory assigning ranks");
        goto cleanup;
    }
    int k = 0;
    for (size_t i = 0; i < t->nconns && k < world; i++)
        if (t->conns[i]->phase == C_REG)
            reg[k++] = t->conns[i];
    /* Task ids are distinct when non-empty (REGISTER checks), so world
     * distinct integers in [0, world) are a permutation. */
    for (int i = 0; i < world && numeric; i++)
        numeric = small_int(reg[i]->task_id, world, &v);
    if (numeric)
        for (int i = 0; i < world; i++) {
            small_int(reg[i]->task_id, world, &v);
            t->by_rank[v] = reg[i];
        }
    else {
        qsort(reg, (size_t)world, sizeof *reg, by_host_task_arrival);
        memcpy(t->by_rank, reg, (size_t)world * sizeof *reg);
    }
    for (int r = 0; r < world; r++) {
        struct conn *c = t->by_rank[r];
        c->rank = r;
        snprintf(c->what, sizeof c->what, "rank %d (on %s)", r, c->peer);
        t->incarnation[r] = 1;
        t->rank_task[r] = strdup(c->task_id);
        if (t->rank_task[r] == NULL) {
            fail_job(t, RALLY_ENOMEM, -1, "the tracker ran out of memory assigning ranks");
            goto cleanup;
        }
    }
    send_assign(t);
cleanup:
    free(reg);
}

/* --- frames ---------------------------------------------------------------- */

/* A REGISTER after the first ASSIGN: a restarted worker (same task id, same
 * rank, next incarnation), or a stranger to refuse. */
static void on_reregister(struct rally__tracker *t, struct conn *c, const char *task, int want)
{
    int r = -1;
    for (int k = 0; task[0] && k < t->o.world && r < 0; k++)
        if (t->rank_task[k] && strcmp(t->rank_task[k], task) == 0)
            r = k;
    if (r < 0) {
        reject(t, c, RALLY_ESTATE,
               task[0] ? "the job already has all %d workers and none has task id '%s'"
                       : "the job already has all %d workers%s (a restarted worker needs its task id)",
               t->o.world, task);
        return;
    }
    if (want >= 0 && want != r) {
        reject(t, c, RALLY_ECONFIG, "task id '%s' is rank %d, not rank %d", task, r, want);
        return;
    }
    if (t->rank_final[r]) {
        reject(t, c, RALLY_ESTATE, "rank %d (task id '%s') already finalized", r, task);
        return;
    }
    if (!rally__tracker_recoverable(t)) {
        if (t->no_recovery || !t->went)
            reject(t, c, RALLY_ESTATE, "the job already has all %d workers", t->o.world);
        else
            reject(t, c, RALLY_ESTATE, "the job is finishing: rank %d cannot rejoin it", r);
        return;
    }
    if (t->by_rank[r] != NULL) { /* the old incarnation is stale: fence it first */
        char cause[96];
        snprintf(cause, sizeof cause, "rank %d replaced by a new incarnation", r);
        rank_failed(t, r, cause, NULL);
    }
    if (t->state != RALLY__TRACKER_RUNNING) {
        reject(t, c, t->code, "%s", t->sentence);
        return;
    }
    t->incarnation[r]++;
    c->rank = r;
    c->phase = C_REG;
    c->deadline = RALLY__NEVER;
    c->arrival = ++t->arrivals;
    c->last_rx = rally__now_ms();
    t->nregistered++;
    t->by_rank[r] = c;
    snprintf(c->what, sizeof c->what, "rank %d (on %s)", r, c->peer);
    say(t, RALLY__TEV_PROGRESS, "rank %d registered again (incarnation %u) for epoch %u", r, t->incarnation[r],
             t->epoch);
    maybe_assign(t);
}

static void on_register(struct rally__tracker *t, struct conn *c, const unsigned char *body,
                        size_t n)
{
    struct rally__msg_register m;
    if (rally__msg_register_get(body, n, &m) != 0) {
        drop(t, c, "%s: malformed REGISTER (%zu bytes)", c->what, n);
        return;
    }
    const char *task = m.task_id, *host = m.listen_host;
    int32_t want = m.want_rank;
    uint32_t hint = m.world_hint;
    uint16_t port = m.listen_port;
    if (t->state == RALLY__TRACKER_FAILED) {
        reject(t, c, t->code, "%s", t->sentence);
        return;
    }
    if (t->state != RALLY__TRACKER_RUNNING) {
        reject(t, c, RALLY_ESTATE, "the job already has all %d workers", t->o.world);
        return;
    }
    if (hint != 0 && hint != (uint32_t)t->o.world) {
        reject(t, c, RALLY_ECONFIG, "the worker expects %u workers, this job has %d", hint,
               t->o.world);
        return;
    }
    if (want < -1 || want >= t->o.world) {
        reject(t, c, RALLY_ECONFIG, "the worker asks for rank %d of a job of %d", (int)want,
               t->o.world);
        return;
    }
    snprintf(c->task_id, sizeof c->task_id, "%s", task);
    snprintf(c->host, sizeof c->host, "%s", host[0] ? host : c->peer);
    c->listen_port = port;
    if (t->phase != P_JOINING) {
        on_reregister(t, c, task, want);
        return;
    }
    for (size_t i = 0; task[0] && i < t->nconns; i++) {
        struct conn *o = t->conns[i];
        if (o != c && o->phase == C_REG && strcmp(o->task_id, task) == 0) {
            reject(t, c, RALLY_ECONFIG, "task id '%s' is already registered by %s", task, o->peer);
            return;
        }
    }
    c->arrival = ++t->arrivals;
    c->phase = C_REG;
    c->deadline = RALLY__NEVER;
    c->last_rx = rally__now_ms();
    if (++t->nregistered == t->o.world)
        assign(t);
}

static void on_ready(struct rally__tracker *t, struct conn *c, size_t n)
{
    if (n != 0 || c->rank < 0 || c->assigned == 0) {
        drop(t, c, "%s: unexpected READY (%s)", c->what, n ? "with a body" : "before ASSIGN");
        return;
    }
    if (c->assigned != t->epoch || t->phase != P_STARTING)
        return; /* for an epoch that has ended: a RESET is on its way to it */
    if (c->ready) {
        drop(t, c, "%s: unexpected READY (twice)", c->what);
        return;
    }
    c->ready = 1;
    if (++t->nready == t->o.world && t->state == RALLY__TRACKER_RUNNING)
        go(t);
}

static void on_rejoin(struct rally__tracker *t, struct conn *c, const unsigned char *body,
                      size_t n)
{
    uint32_t epoch, version;
    uint64_t position;
    if (rally__msg_rejoin_get(body, n, &epoch, &position, &version) != 0) {
        drop(t, c, "%s: malformed REJOIN (%zu bytes)", c->what, n);
        return;
    }
    if (c->rank < 0 || c->assigned == 0 || epoch > t->epoch || epoch <= c->assigned) {
        drop(t, c, "%s: REJOIN for epoch %u, which it was never reset to (epoch %u, its ASSIGN %u)",
             c->what, epoch, t->epoch, c->assigned);
        return;
    }
    if (epoch < t->epoch || c->rejoined == epoch)
        return; /* a newer RESET is on its way to it, or a repeat */
    c->rejoined = epoch;
    c->position = position;
    c->version = version;
    maybe_assign(t);
}

static void on_link_failed(struct rally__tracker *t, struct conn *c, const unsigned char *body,
                           size_t n)
{
    char msg[RALLY__ERR_MSG_MAX];
    uint32_t epoch;
    if (rally__msg_link_failed_get(body, n, &epoch, msg, sizeof msg) != 0) {
        drop(t, c, "%s: malformed LINK_FAILED (%zu bytes)", c->what, n);
        return;
    }
    if (epoch == 0) /* the epoch of the job's first ASSIGN, as the worker knows it */
        epoch = 1;
    if (c->rank < 0 || epoch > t->epoch) {
        drop(t, c, "%s: LINK_FAILED for epoch %u (the tracker is in epoch %u%s)", c->what, epoch,
             t->epoch, c->rank < 0 ? ", and it has no rank yet" : "");
        return;
    }
    if (epoch < t->epoch || t->phase == P_ASSEMBLING || c->assigned != t->epoch ||
        t->state != RALLY__TRACKER_RUNNING) {
        say(t, RALLY__TEV_LOG, "ignoring rank %d's report for epoch %u (now %u): %s", c->rank, epoch, t->epoch,
              msg);
        return;
    }
    char cause[RALLY__ERR_MSG_MAX + 32];
    snprintf(cause, sizeof cause, "rank %d reported: %s", c->rank, msg);
    if (!rally__tracker_recoverable(t)) {
        fail_job(t, RALLY_EPEER, -1, "%s", cause);
        return;
    }
    new_epoch(t, cause);
}

static void on_frame(struct rally__tracker *t, struct conn *c, uint16_t type,
                     const unsigned char *body, size_t n)
{
    if (c->phase == C_AUTH) {
        struct rally__err e = {0, ""};
        unsigned char out[RALLY__AUTH_OUT_MAX];
        uint16_t ot;
        size_t on;
        int rc = rally__auth_srv_step(&c->auth, type, body, n, &ot, out, &on, &e);
        if (rc == 1 && c->auth.peer.role != RALLY__ROLE_WORKER) {
            rally__fail(&e, RALLY_EAUTH, "the tracker takes workers only (role %u)",
                        c->auth.peer.role);
            ot = RALLY__F_REFUSE;
            on = rally__auth_refusal(out, sizeof out, e.code, e.msg);
            rc = -1;
        }
        queue(t, c, ot, out, on);
        if (rc < 0) {
            say(t, RALLY__TEV_LOG, "refusing %s: %s", c->what, e.msg);
            c->closing = 1;
            c->deadline = rally__now_ms() + CLOSE_LINGER_MS;
        } else if (rc == 1) {
            c->phase = C_AUTHED;
        }
        return;
    }
    if (c->phase == C_AUTHED) {
        if (type == RALLY__T_REGISTER)
            on_register(t, c, body, n);
        else
            drop(t, c, "%s: frame type %u before REGISTER", c->what, type);
        return;
    }
    switch (type) {
    case RALLY__T_READY:
        on_ready(t, c, n);
        return;
    case RALLY__T_HEARTBEAT:
        if (rally__msg_empty_get(body, n) != 0)
            drop(t, c, "%s: a HEARTBEAT with a %zu-byte body", c->what, n);
        else
            c->heartbeats = 1;
        return;
    case RALLY__T_REJOIN:
        on_rejoin(t, c, body, n);
        return;
    case RALLY__T_LINK_FAILED:
        on_link_failed(t, c, body, n);
        return;
    case RALLY__T_PRINT: {
        char *msg = malloc(RALLY__PRINT_MAX + 1);
        if (msg == NULL) {
            drop(t, c, "%s: out of memory for a PRINT", c->what);
            return;
        }
        if (rally__msg_print_get(body, n, msg, RALLY__PRINT_MAX + 1) != 0)
            drop(t, c, "%s: malformed PRINT (%zu bytes)", c->what, n);
        else if (t->o.print)
            t->o.print(t->o.arg, c->rank, msg);
        free(msg);
        return;
    }
    case RALLY__T_ERROR: {
        char msg[RALLY__ERR_MSG_MAX];
        uint32_t code;
        if (rally__msg_fail_get(body, n, &code, msg, sizeof msg) != 0) {
            drop(t, c, "%s: malformed ERROR (%zu bytes)", c->what, n);
            return;
        }
        if (code == 0 || code > RALLY_ESTATE)
            code = RALLY_EPEER;
        if (c->rank >= 0)
            fail_job(t, (int)code, -1, "rank %d failed: %s", c->rank, msg);
        else
            fail_job(t, (int)code, -1, "the worker with task id '%s' failed: %s", c->task_id, msg);
        return;
    }
    case RALLY__T_SHUTDOWN:
        if (n != 0 || c->rank < 0 || c->assigned == 0 || c->finalized) {
            drop(t, c, "%s: unexpected SHUTDOWN (%s)", c->what,
                 n ? "with a body" : c->finalized ? "twice" : "before ASSIGN");
            return;
        }
        if (t->recovering && t->state == RALLY__TRACKER_RUNNING) {
            fail_job(t, RALLY_EPEER, c->rank,
                     "rank %d finalized while the job was recovering from a failure (epoch %u)",
                     c->rank, t->epoch);
            return;
        }
        c->finalized = 1;
        t->rank_final[c->rank] = 1;
        queue(t, c, RALLY__T_BYE, NULL, 0);
        emit(t, RALLY__TEV_FINALIZED, c->rank, c->task_id, NULL);
        if (++t->nfinal == t->o.world && t->state == RALLY__TRACKER_RUNNING) {
            t->state = RALLY__TRACKER_DONE;
            emit(t, RALLY__TEV_DONE, -1, NULL, NULL);
        }
        return;
    case RALLY__T_REGISTER:
        drop(t, c, "%s: REGISTER twice", c->what);
        return;
    default:
        drop(t, c, "%s: unexpected frame type %u", c->what, type);
        return;
    }
}

/* --- I/O ------------------------------------------------------------------- */

static void readable(struct rally__tracker *t, struct conn *c)
{
    for (int i = 0; i < FRAMES_PER_WAKE && c->phase != C_GONE && !c->closing; i++) {
        struct rally__err e = {0, ""};
        int k = rally__frame_in_feed(&c->in, c->fd, c->what, &e);
        if (k == 0)
            return;
        if (k < 0) {
            if (e.code == RALLY_EPEER && c->phase == C_AUTH)
                lose(t, c, "%s: closed during the handshake", c->what);
            else if (e.code == RALLY_EPEER)
                lose(t, c, "%s", e.msg);
            else
                drop(t, c, "%s", e.msg);
            return;
        }
        c->last_rx = rally__now_ms();
        on_frame(t, c, c->in.type, c->in.body, c->in.nbytes);
    }
}

static void writable(struct rally__tracker *t, struct conn *c)
{
    while (c->out_head && c->phase != C_GONE) {
        struct chunk *k = c->out_head;
        struct rally__err e = {0, ""};
        long m = rally__send_some(c->fd, k->p + k->off, k->n - k->off, c->what, &e);
        if (m < 0) {
            lose(t, c, "%s", e.msg);
            return;
        }
        if (m == 0)
            return;
        k->off += (size_t)m;
        if (k->off == k->n) {
            c->out_head = k->next;
            if (c->out_head == NULL)
                c->out_tail = NULL;
            chunk_free(k);
        }
    }
    if (c->closing && c->out_head == NULL)
        close_conn(c);
}

static int grow(struct rally__tracker *t)
{
    if (t->nconns < t->cap)
        return 0;
    size_t cap = t->cap ? 2 * t->cap : 16;
    struct conn **v = realloc(t->conns, cap * sizeof *v);
    if (v == NULL)
        return -1;
    t->conns = v;
    t->cap = cap;
    return 0;
}

static void accept_some(struct rally__tracker *t)
{
    for (int i = 0; i < FRAMES_PER_WAKE; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(t->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
                errno != ECONNABORTED)
                say(t, RALLY__TEV_LOG, "accept failed: %s", strerror(errno));
            return;
        }
        char host[RALLY__HOST_MAX];
        int port;
        rally__addr_str((struct sockaddr *)&ss, host, sizeof host, &port);
        struct conn *c = NULL;
        if (t->nconns >= t->max_conns || grow(t) != 0 || (c = calloc(1, sizeof *c)) == NULL) {
            say(t, RALLY__TEV_LOG, "refusing a connection from %s:%d: %zu connections are open", host, port,
                  t->nconns);
            close(fd);
            continue;
        }
        c->fd = fd;
        c->phase = C_AUTH;
        c->rank = -1;
        c->deadline = rally__now_ms() + t->handshake_ms;
        snprintf(c->peer, sizeof c->peer, "%s", host);
        snprintf(c->what, sizeof c->what, "connection from %s:%d", host, port);
        struct rally__ident me = {RALLY__ROLE_WORKER, -1, 0};
        rally__auth_srv_init(&c->auth, &t->secret, &me);
        t->conns[t->nconns++] = c;
    }
}

/* Frees the conns marked C_GONE, keeping the others in order. */
static void sweep(struct rally__tracker *t)
{
    size_t k = 0;
    for (size_t i = 0; i < t->nconns; i++) {
        if (t->conns[i]->phase == C_GONE)
            free(t->conns[i]);
        else
            t->conns[k++] = t->conns[i];
    }
    t->nconns = k;
}

/* Lists the ranks not READY, or the task ids 0..world-1 that did not
 * register (meaningful when rally-run numbers them so: listed only when every
 * joined id is such a number). */
static void missing_list(struct rally__tracker *t, char *s, size_t cap, int ready)
{
    size_t len = 0;
    int shown = 0, v;
    char *seen = calloc((size_t)t->o.world, 1);
    s[0] = '\0';
    if (seen == NULL)
        return;
    for (size_t i = 0; i < t->nconns; i++) {
        struct conn *c = t->conns[i];
        if (c->phase != C_REG || (ready && !c->ready))
            continue;
        if (ready)
            seen[c->rank] = 1;
        else if (small_int(c->task_id, t->o.world, &v))
            seen[v] = 1;
        else
            goto cleanup;
    }
    if (!ready)
        appendf(s, cap, &len, "; missing task ids: ");
    for (int r = 0; r < t->o.world; r++) {
        if (seen[r])
            continue;
        if (shown++ == 16) {
            appendf(s, cap, &len, ", ...");
            break;
        }
        appendf(s, cap, &len, "%s%d", shown > 1 ? ", " : "", r);
    }
cleanup:
    free(seen);
}

/* The ranks missing from the epoch being assembled (or not READY in it). */
static void epoch_missing(struct rally__tracker *t, char *s, size_t cap)
{
    size_t len = 0;
    int shown = 0;
    s[0] = '\0';
    for (int r = 0; r < t->o.world; r++) {
        int ok = t->phase == P_ASSEMBLING ? present(t, r) : t->by_rank[r] && t->by_rank[r]->ready;
        if (ok)
            continue;
        if (shown++ == 16) {
            appendf(s, cap, &len, ", ...");
            break;
        }
        appendf(s, cap, &len, "%s%d", shown > 1 ? ", " : "", r);
    }
}

/* 1 when every rank missing from the epoch is a live worker that keeps
 * sending heartbeats: a survivor busy computing notices the RESET only at
 * its next collective, which may be long after the epoch's deadline.  Only
 * ranks with no live worker (a restart that never came) time an epoch out. */
static int missing_are_busy(const struct rally__tracker *t, int64_t now)
{
    if (t->heartbeat_ms <= 0)
        return 0;
    for (int r = 0; r < t->o.world; r++) {
        const struct conn *c = t->by_rank[r];
        int ok = t->phase == P_ASSEMBLING ? present(t, r) : c != NULL && c->ready;
        if (ok)
            continue;
        if (c == NULL || !c->heartbeats || now - c->last_rx >= t->heartbeat_ms)
            return 0;
    }
    return 1;
}

static void timers(struct rally__tracker *t)
{
    int64_t now = rally__now_ms();
    for (size_t i = 0; i < t->nconns; i++) {
        struct conn *c = t->conns[i];
        if (c->phase == C_GONE)
            continue;
        if (now >= c->deadline) {
            if (c->closing)
                close_conn(c);
            else
                drop(t, c, "%s: no handshake and REGISTER within %lld ms", c->what,
                     (long long)t->handshake_ms);
        } else if (t->heartbeat_ms > 0 && c->phase == C_REG && c->heartbeats && !c->finalized &&
                   c->rank >= 0 && t->by_rank[c->rank] == c &&
                   now - c->last_rx >= t->heartbeat_ms && t->state == RALLY__TRACKER_RUNNING) {
            char cause[96];
            snprintf(cause, sizeof cause, "rank %d sent no heartbeat for %lld ms", c->rank,
                     (long long)(now - c->last_rx));
            rank_failed(t, c->rank, cause, NULL);
        }
    }
    if (t->state != RALLY__TRACKER_RUNNING || t->phase == P_RUNNING)
        return;
    char miss[256];
    if (t->went) {
        if (now < t->epoch_deadline)
            return;
        if (missing_are_busy(t, now)) { /* survivors still computing: look again soon */
            t->epoch_deadline = now + 1000;
            return;
        }
        epoch_missing(t, miss, sizeof miss);
        fail_job(t, RALLY_ETIMEDOUT, -1, "epoch %u: rank(s) %s did not %s within %lld ms",
                 t->epoch, miss, t->phase == P_ASSEMBLING ? "rejoin" : "become ready",
                 (long long)t->o.startup_timeout_ms);
        return;
    }
    if (now < t->startup_deadline)
        return;
    if (t->phase == P_JOINING) {
        missing_list(t, miss, sizeof miss, 0);
        fail_job(t, RALLY_ETIMEDOUT, -1, "only %d of %d workers joined within %lld ms%s",
                 t->nregistered, t->o.world, (long long)t->o.startup_timeout_ms, miss);
    } else {
        missing_list(t, miss, sizeof miss, 1);
        fail_job(t, RALLY_ETIMEDOUT, -1, "rank(s) %s did not become ready within %lld ms", miss,
                 (long long)t->o.startup_timeout_ms);
    }
}

/* --- the loop interface ---------------------------------------------------- */

size_t rally__tracker_npoll(const struct rally__tracker *t)
{
    return 1 + t->nconns;
}

size_t rally__tracker_fill(struct rally__tracker *t, struct pollfd *p, size_t cap)
{
    size_t n = 0;
    if (n < cap)
        p[n++] = (struct pollfd){.fd = t->lfd, .events = POLLIN};
    for (size_t i = 0; i < t->nconns && n < cap; i++) {
        struct conn *c = t->conns[i];
        short ev = (short)((c->closing ? 0 : POLLIN) | (c->out_head ? POLLOUT : 0));
        p[n++] = (struct pollfd){.fd = c->fd, .events = ev};
    }
    return n;
}

void rally__tracker_handle(struct rally__tracker *t, const struct pollfd *p, size_t n)
{
    for (size_t i = 1; i < n && i - 1 < t->nconns; i++) {
        struct conn *c = t->conns[i - 1];
        if (c->phase == C_GONE || p[i].fd != c->fd || p[i].revents == 0)
            continue;
        if (p[i].revents & POLLOUT)
            writable(t, c);
        if (c->phase != C_GONE && !c->closing && (p[i].revents & (POLLIN | POLLHUP | POLLERR)))
            readable(t, c);
        else if (c->phase != C_GONE && c->closing && (p[i].revents & (POLLHUP | POLLERR)))
            close_conn(c);
    }
    timers(t);
    /* Frames queued above (GO, RESET, ABORT, ...) go out now if the sockets take them. */
    for (size_t i = 0; i < t->nconns; i++)
        if (t->conns[i]->out_head)
            writable(t, t->conns[i]);
    sweep(t);
    if (n > 0 && (p[0].revents & POLLIN))
        accept_some(t);
}

int64_t rally__tracker_deadline(const struct rally__tracker *t)
{
    int64_t d = RALLY__NEVER;
    if (t->state == RALLY__TRACKER_RUNNING && t->phase != P_RUNNING) {
        int64_t x = t->went ? t->epoch_deadline : t->startup_deadline;
        if (x < d)
            d = x;
    }
    for (size_t i = 0; i < t->nconns; i++) {
        const struct conn *c = t->conns[i];
        if (c->deadline < d)
            d = c->deadline;
        if (t->heartbeat_ms > 0 && c->phase == C_REG && c->heartbeats && !c->finalized &&
            c->last_rx + t->heartbeat_ms < d)
            d = c->last_rx + t->heartbeat_ms;
    }
    return d;
}

int rally__tracker_state(const struct rally__tracker *t, const char **sentence, int *rank)
{
    if (sentence)
        *sentence = t->sentence;
    if (rank)
        *rank = t->failed_rank;
    return t->state;
}

int rally__tracker_flushed(const struct rally__tracker *t)
{
    for (size_t i = 0; i < t->nconns; i++)
        if (t->conns[i]->out_head)
            return 0;
    return 1;
}

int rally__tracker_port(const struct rally__tracker *t)
{
    return t->port;
}

void rally__tracker_set_recovery(struct rally__tracker *t, int on)
{
    t->no_recovery = !on;
}

void rally__tracker_set_heartbeat_timeout(struct rally__tracker *t, int64_t timeout_ms)
{
    t->heartbeat_ms = timeout_ms > 0 ? timeout_ms : 0;
}

uint32_t rally__tracker_epoch(const struct rally__tracker *t)
{
    return t->epoch;
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
    size_t w = (size_t)o->world;
    t = calloc(1, sizeof *t);
    if (t == NULL || (t->by_rank = calloc(w, sizeof *t->by_rank)) == NULL ||
        (t->incarnation = calloc(w, sizeof *t->incarnation)) == NULL ||
        (t->rank_task = calloc(w, sizeof *t->rank_task)) == NULL ||
        (t->rank_final = calloc(w, 1)) == NULL) {
        rally__fail(e, RALLY_ENOMEM, "out of memory creating the tracker");
        goto cleanup;
    }
    t->o = *o;
    t->o.host = NULL; /* not kept */
    t->secret = *o->secret;
    t->lfd = -1;
    t->failed_rank = -1;
    t->epoch = 1;
    t->max_conns = 2 * (size_t)o->world + 128;
    t->handshake_ms = o->handshake_timeout_ms > 0 ? o->handshake_timeout_ms : HANDSHAKE_DEFAULT_MS;
    t->startup_deadline = rally__deadline(o->startup_timeout_ms);
    t->epoch_deadline = RALLY__NEVER;
    int backlog = o->world < 128 ? 128 : o->world > 4096 ? 4096 : o->world;
    if (rally__tcp_listen(o->host ? o->host : "", o->port, backlog, &t->lfd, &t->port, e) !=
        RALLY_OK)
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
    for (size_t i = 0; i < t->nconns; i++) {
        close_conn(t->conns[i]);
        free(t->conns[i]);
    }
    if (t->lfd >= 0)
        close(t->lfd);
    free(t->conns);
    free(t->by_rank);
    free(t->incarnation);
    for (int r = 0; t->rank_task && r < t->o.world; r++)
        free(t->rank_task[r]);
    free(t->rank_task);
    free(t->rank_final);
    book_unref(t->book);
    sodium_memzero(&t->secret, sizeof t->secret);
    free(t);
}
