/*
 * job.c — the tracker's job logic as a pure state machine (job.h): ranks,
 * epochs, readiness, recovery and failure, decided from events alone.
 *
 * The members the job knows sit on a list (head..tail, in the order they
 * authenticated); registered ones with a rank also sit in by_rank.  A step
 * appends actions to j->acts; strings and bodies go to one growing arena
 * whose offsets become pointers when the step ends, so neither is
 * allocated afresh in the steady state.  A failing allocation while
 * recording an action fails the job (j->oom), never the process.
 *
 * Recovery: after the first GO a lost worker is a rank failure
 * (rank_failed): its member is fenced (CLOSE), the epoch grows, RESET goes
 * to every worker that holds an ASSIGN, and the phase is ASSEMBLING until
 * every rank is present (present(): rejoined this epoch, or registered again
 * and waiting for its first ASSIGN); then ASSIGN (STARTING) and GO (RUNNING)
 * once every rank is READY.  A protocol violation stays fatal.
 *
 * Inputs: the first incarnation of a rank to send INPUT sets what the
 * rank's input is; a later incarnation whose INPUT differs read other data
 * than the results the survivors hold were computed from, so the job fails
 * (RALLY_ECONFIG) naming the rank and both inputs.
 */
#include "tracker/job.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/frame.h"
#include "util/clock.h"

enum { M_NONE, M_AUTHED, M_REG };

/* What a rank's INPUT said, and which incarnation said it (0: none yet). */
struct rank_input {
    char scheme[RALLY__SCHEME_MAX];
    uint64_t fingerprint;
    uint32_t incarnation;
};

struct rally__job {
    int world;
    int64_t startup_ms;
    enum rally__job_phase phase;
    struct rally__job_member *head, *tail;
    struct rally__job_member **by_rank; /* NULL while a rank is down */
    int nregistered, nready, nfinal;
    int code, failed_rank;
    char sentence[RALLY__ERR_MSG_MAX];
    int64_t startup_deadline; /* ms */
    uint64_t arrivals;
    unsigned char *book;
    size_t book_cap;
    /* recovery */
    int no_recovery;
    int64_t heartbeat_ms;   /* 0: off */
    int64_t progress_ms;    /* the progress watch: 0 off */
    int progress_fail;      /* a stuck rank fails the job (else it is fenced) */
    int64_t round_began;    /* ms: the current recovery round (RESET, then the book) began */
    int64_t go_at;          /* ms: the last GO (nobody waited for anybody before it) */
    int went;               /* the first GO went out */
    uint32_t epoch;         /* 1 from the start */
    uint32_t *incarnation;  /* world entries: the newest registration of each rank */
    char **rank_task;       /* world entries: each rank's task id, kept for re-registration */
    char *rank_final;       /* world entries: the rank sent SHUTDOWN */
    struct rank_input *input; /* world entries: the input each rank's first INPUT named */
    int recovering;         /* from a failure until the GO that ends it */
    /* elastic membership (docs/recovery.md, "Elastic jobs") */
    int min_world;          /* 0: the world is fixed; else a rank lost for good is dropped
                               while at least this many are left */
    uint32_t members;       /* membership changes so far (every ASSIGN says it) */
    uint32_t members_said;  /* the change the last TEV_RESIZED told */
    uint32_t assign_flags;  /* RALLY__ASSIGN_*, decided with it */
    int lost_rank;          /* the rank the last change dropped */
    char lost_task[RALLY__TASK_MAX]; /* ... and its task id */
    int64_t failed_at_us;   /* the first failure of this recovery */
    int64_t epoch_deadline; /* ms: the current epoch must reach GO by then */
    /* the step running */
    int64_t now_us, now;
    struct rally__job_act *acts;
    size_t nacts, acts_cap;
    unsigned char *arena;
    size_t arena_len, arena_cap;
    int oom;
};

#define NONE ((size_t)-1)

static int live(const struct rally__job *j)
{
    return j->phase != RALLY__JOB_DONE && j->phase != RALLY__JOB_FAILED;
}

/* --- recording actions ----------------------------------------------------- */

/* Copies n bytes to the arena; their offset, or NONE when out of memory. */
static size_t stash(struct rally__job *j, const void *p, size_t n)
{
    if (j->arena_cap - j->arena_len < n) {
        size_t cap = j->arena_cap ? j->arena_cap : 4096;
        while (cap - j->arena_len < n)
            cap *= 2;
        unsigned char *a = realloc(j->arena, cap);
        if (a == NULL) {
            j->oom = 1;
            return NONE;
        }
        j->arena = a;
        j->arena_cap = cap;
    }
    size_t at = j->arena_len;
    if (p != NULL && n)
        memcpy(j->arena + at, p, n);
    j->arena_len += n;
    return at;
}

static size_t stash_str(struct rally__job *j, const char *s)
{
    return stash(j, s, strlen(s) + 1);
}

static struct rally__job_act *act(struct rally__job *j, int kind, struct rally__job_member *m)
{
    if (j->nacts == j->acts_cap) {
        size_t cap = j->acts_cap ? 2 * j->acts_cap : 64;
        struct rally__job_act *a = realloc(j->acts, cap * sizeof *a);
        if (a == NULL) {
            j->oom = 1;
            return NULL;
        }
        j->acts = a;
        j->acts_cap = cap;
    }
    struct rally__job_act *a = &j->acts[j->nacts++];
    memset(a, 0, sizeof *a);
    a->kind = kind;
    a->m = m;
    a->body_at = a->tail_at = a->text_at = a->task_at = NONE;
    a->ev.rank = -1;
    return a;
}

static struct rally__job_act *send_msg(struct rally__job *j, struct rally__job_member *m,
                                       uint16_t type, const void *body, size_t n)
{
    struct rally__job_act *a = act(j, RALLY__JOB_SEND, m);
    if (a != NULL) {
        a->type = type;
        a->nbytes = n;
        a->body_at = stash(j, body, n);
    }
    return a;
}

static void send_abort(struct rally__job *j, struct rally__job_member *m, int code,
                       const char *sentence)
{
    unsigned char b[4 + 4 + RALLY__ERR_MSG_MAX];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_fail_put(&w, (uint32_t)code, sentence);
    send_msg(j, m, RALLY__T_ABORT, b, w.len);
}

static void emit_ev(struct rally__job *j, const struct rally__tracker_event *ev)
{
    struct rally__job_act *a = act(j, RALLY__JOB_EVENT, NULL);
    if (a == NULL)
        return;
    a->ev = *ev;
    a->task_at = stash_str(j, ev->task_id ? ev->task_id : "");
    a->text_at = stash_str(j, ev->text ? ev->text : "");
    if (a->ev.epoch == 0)
        a->ev.epoch = j->epoch;
}

static void emit(struct rally__job *j, int kind, int rank, const char *task, const char *text)
{
    struct rally__tracker_event ev = {.kind = kind, .rank = rank, .task_id = task, .text = text};
    emit_ev(j, &ev);
}

/* A formatted line for the owner: a LOG or a PROGRESS event. */
static void say(struct rally__job *j, int kind, const char *fmt, ...) RALLY__PRINTF(3, 4);
static void say(struct rally__job *j, int kind, const char *fmt, ...)
{
    char line[RALLY__ERR_MSG_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    emit(j, kind, -1, NULL, line);
}

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

/* --- members --------------------------------------------------------------- */

static void unlink_member(struct rally__job *j, struct rally__job_member *m)
{
    if (m->prev)
        m->prev->next = m->next;
    else
        j->head = m->next;
    if (m->next)
        m->next->prev = m->prev;
    else
        j->tail = m->prev;
    m->prev = m->next = NULL;
    if (m->rank >= 0 && j->by_rank[m->rank] == m)
        j->by_rank[m->rank] = NULL;
    if (m->state == M_REG)
        j->nregistered--;
    m->state = M_NONE;
}

/* Forgets m and tells the owner to close its connection now. */
static void close_member(struct rally__job *j, struct rally__job_member *m)
{
    if (m->state == M_NONE)
        return;
    unlink_member(j, m);
    act(j, RALLY__JOB_CLOSE, m);
}

/* --- job failure ----------------------------------------------------------- */

static void vfail_job(struct rally__job *j, int code, int rank, const char *fmt, va_list ap)
{
    if (!live(j))
        return;
    j->phase = RALLY__JOB_FAILED;
    j->code = code;
    j->failed_rank = rank;
    vsnprintf(j->sentence, sizeof j->sentence, fmt, ap);
    for (struct rally__job_member *m = j->head; m; m = m->next)
        send_abort(j, m, code, j->sentence);
    emit(j, RALLY__TEV_FAILED, rank, NULL, j->sentence);
}

static void fail_job(struct rally__job *j, int code, int rank, const char *fmt, ...)
    RALLY__PRINTF(4, 5);
static void fail_job(struct rally__job *j, int code, int rank, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail_job(j, code, rank, fmt, ap);
    va_end(ap);
}

/* --- epochs ---------------------------------------------------------------- */

int rally__job_recoverable(const struct rally__job *j)
{
    return live(j) && j->went && !j->no_recovery && j->nfinal == 0;
}

/* 1 when rank r counts as there for the current epoch's ASSIGN. */
static int present(const struct rally__job *j, int r)
{
    const struct rally__job_member *m = j->by_rank[r];
    return m != NULL && (m->assigned == 0 || m->rejoined == j->epoch);
}

/* Builds the address book from by_rank (every rank present); 0 or -1. */
static int make_book(struct rally__job *j, size_t *nbytes)
{
    size_t n = 0;
    for (int r = 0; r < j->world; r++)
        n += rally__msg_book_entry_nbytes(j->by_rank[r]->host);
    if (RALLY__ASSIGN_HEAD + n + RALLY__ASSIGN_TAIL > RALLY__FRAME_MAX) {
        fail_job(j, RALLY_EINVAL, -1,
                 "the address book of %d workers needs %zu bytes, over the %u-byte frame limit",
                 j->world, n, RALLY__FRAME_MAX);
        return -1;
    }
    if (n > j->book_cap) {
        unsigned char *b = realloc(j->book, n);
        if (b == NULL) {
            fail_job(j, RALLY_ENOMEM, -1, "the tracker ran out of memory for the address book");
            return -1;
        }
        j->book = b;
        j->book_cap = n;
    }
    struct rally__wbuf w = {j->book, 0, n, 0};
    for (int r = 0; r < j->world; r++)
        rally__msg_book_entry(&w, j->by_rank[r]->host, (uint16_t)j->by_rank[r]->listen_port,
                              j->incarnation[r]);
    *nbytes = w.len;
    return 0;
}

/* The membership changed and every rank is present: the owner hears how
 * many go on and from which version, the newest committed one a survivor
 * named in its REJOIN (the workers go back to the same one).  A survivor
 * that stood in finalize had every result: then the others finish as they
 * are (RALLY__ASSIGN_FINISHING), nothing is computed again. */
static void resized(struct rally__job *j)
{
    j->members_said = j->members;
    struct rally__tracker_event ev = {
        .kind = RALLY__TEV_RESIZED, .rank = j->lost_rank, .task_id = j->lost_task};
    j->assign_flags = 0;
    for (int r = 0; r < j->world; r++) {
        const struct rally__job_member *m = j->by_rank[r];
        if (m->rejoined == j->epoch && (!ev.has_position || m->version > ev.version)) {
            ev.has_position = 1;
            ev.version = m->version;
        }
        if (m->rejoined == j->epoch && m->position == RALLY__KEY_FINAL)
            j->assign_flags |= RALLY__ASSIGN_FINISHING;
    }
    ev.world = j->world;
    char text[160];
    if (j->assign_flags & RALLY__ASSIGN_FINISHING)
        snprintf(text, sizeof text,
                 "rank %d lost for good: the other %d workers finish (one was in finalize)",
                 j->lost_rank, j->world);
    else
        snprintf(text, sizeof text,
                 "rank %d lost for good: going on with %d workers from version %u", j->lost_rank,
                 j->world, ev.version);
    ev.text = text;
    emit_ev(j, &ev);
}

/* Sends ASSIGN for the current epoch to every rank (all present). */
static void send_assign(struct rally__job *j)
{
    size_t nbook;
    if (make_book(j, &nbook) != 0)
        return;
    struct rally__job_act *a = act(j, RALLY__JOB_BOOK, NULL);
    if (a == NULL)
        return;
    a->body = j->book;
    a->nbytes = nbook;
    j->phase = RALLY__JOB_STARTING;
    j->nready = 0;
    /* the wiring of a recovery gets the whole start-up timeout from its book
     * on, however long the survivors took to rejoin */
    if (j->went) {
        j->epoch_deadline = j->startup_ms > 0 ? j->now + j->startup_ms : RALLY__NEVER;
        j->round_began = j->now;
    }
    /* On the wire the job's first ASSIGN says epoch 0 (proto.h): a worker
     * that gets a non-zero epoch knows it joined a running job. */
    unsigned char tail[RALLY__ASSIGN_TAIL];
    struct rally__wbuf tw = {tail, 0, sizeof tail, 0};
    if (j->members != j->members_said)
        resized(j);
    rally__msg_assign_tail(&tw, j->went ? j->epoch : 0, j->members, j->assign_flags);
    for (int r = 0; r < j->world; r++) {
        struct rally__job_member *m = j->by_rank[r];
        int fresh = m->assigned == 0;
        if (fresh)
            m->last_rx = j->now; /* its liveness is watched from here (watched()) */
        m->assigned = j->epoch;
        m->ready = 0;
        unsigned char h[RALLY__ASSIGN_HEAD];
        struct rally__wbuf hw = {h, 0, sizeof h, 0};
        rally__msg_assign_head(&hw, r, (uint32_t)j->world, j->incarnation[r]);
        if ((a = send_msg(j, m, RALLY__T_ASSIGN, h, hw.len)) != NULL) {
            a->with_book = 1;
            a->tail_nbytes = tw.len;
            a->tail_at = stash(j, tail, tw.len);
        }
        if (fresh)
            emit(j, RALLY__TEV_ASSIGNED, r, m->task_id, m->host);
    }
}

static void maybe_assign(struct rally__job *j)
{
    if (j->phase != RALLY__JOB_ASSEMBLING)
        return;
    for (int r = 0; r < j->world; r++)
        if (!present(j, r))
            return;
    say(j, RALLY__TEV_PROGRESS, "epoch %u: every rank is back; sending the address book",
        j->epoch);
    send_assign(j);
}

/* Starts the next epoch: RESET to every worker that holds an ASSIGN. */
static void new_epoch(struct rally__job *j, const char *cause)
{
    j->epoch++;
    if (!j->recovering) {
        j->recovering = 1;
        j->failed_at_us = j->now_us;
    }
    j->phase = RALLY__JOB_ASSEMBLING;
    j->nready = 0;
    j->round_began = j->now;
    j->epoch_deadline = j->startup_ms > 0 ? j->now + j->startup_ms : RALLY__NEVER;
    unsigned char b[4 + 4 + RALLY__REASON_MAX];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_reset_put(&w, j->epoch, cause);
    for (int r = 0; r < j->world; r++) {
        struct rally__job_member *m = j->by_rank[r];
        if (m == NULL)
            continue;
        m->ready = 0;
        if (m->assigned != 0)
            send_msg(j, m, RALLY__T_RESET, b, w.len);
    }
    say(j, RALLY__TEV_PROGRESS, "epoch %u: %s; every rank must rejoin", j->epoch, cause);
    maybe_assign(j);
}

/* Closes rank r's connection (its incarnation is over) and forgets it. */
static void fence(struct rally__job *j, int r)
{
    struct rally__job_member *m = j->by_rank[r];
    j->by_rank[r] = NULL;
    if (m != NULL)
        close_member(j, m);
}

/* Rank r failed for cause (a sentence without a final period).  Recovery
 * when it applies; otherwise the job fails with fatal (the sentence the
 * non-recovering tracker always used, or cause). */
static void rank_failed(struct rally__job *j, int r, const char *cause, const char *fatal,
                        int disconnected)
{
    if (!live(j))
        return;
    fence(j, r);
    if (!rally__job_recoverable(j)) {
        fail_job(j, RALLY_EPEER, r, "%s", fatal ? fatal : cause);
        return;
    }
    /* The event names the epoch the failure starts. */
    struct rally__tracker_event ev = {.kind = RALLY__TEV_RANK_FAILED,
                                      .rank = r,
                                      .task_id = j->rank_task[r],
                                      .text = cause,
                                      .epoch = j->epoch + 1,
                                      .disconnected = disconnected};
    emit_ev(j, &ev);
    new_epoch(j, cause);
}

/* Closes m now.  A stranger's connection costs a log line; a registered
 * worker's fails the job (unless it finalized), or after the first GO is a
 * rank failure: lost = 1 when the peer went away (a crash, as far as we can
 * tell), 0 when it is dropped for breaking the protocol, and why says how. */
static void vdrop(struct rally__job *j, struct rally__job_member *m, int lost, const char *fmt,
                  va_list ap)
{
    if (m->state == M_NONE)
        return;
    char why[RALLY__ERR_MSG_MAX];
    vsnprintf(why, sizeof why, fmt, ap);
    int registered = m->state == M_REG && !m->finalized, rank = m->rank;
    char task[RALLY__TASK_MAX], host[RALLY__HOST_MAX];
    snprintf(task, sizeof task, "%s", m->task_id);
    snprintf(host, sizeof host, "%s", m->peer);
    if (m->state != M_REG)
        say(j, RALLY__TEV_LOG, "dropping %s", why);
    close_member(j, m);
    if (!registered)
        return;
    if (!lost) {
        fail_job(j, RALLY_EPROTO, -1, "%s", why);
    } else if (rank >= 0) {
        char cause[96], fatal[128];
        snprintf(cause, sizeof cause, "rank %d disconnected without finalizing", rank);
        snprintf(fatal, sizeof fatal, "%s (did it crash?)", cause);
        rank_failed(j, rank, cause, fatal, 1);
    } else {
        fail_job(j, RALLY_EPEER, -1,
                 "the worker with task id '%s' on %s disconnected before every worker joined", task,
                 host);
    }
}

static void drop(struct rally__job *j, struct rally__job_member *m, const char *fmt, ...)
    RALLY__PRINTF(3, 4);
static void drop(struct rally__job *j, struct rally__job_member *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdrop(j, m, 0, fmt, ap);
    va_end(ap);
}

static void lose(struct rally__job *j, struct rally__job_member *m, const char *fmt, ...)
    RALLY__PRINTF(3, 4);
static void lose(struct rally__job *j, struct rally__job_member *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdrop(j, m, 1, fmt, ap);
    va_end(ap);
}

/* Gives up on m after an ABORT that says why (a worker that sent a bad
 * REGISTER hears about it); the owner closes it once that is sent. */
static void reject(struct rally__job *j, struct rally__job_member *m, int code, const char *fmt,
                   ...) RALLY__PRINTF(4, 5);
static void reject(struct rally__job *j, struct rally__job_member *m, int code, const char *fmt,
                   ...)
{
    char why[RALLY__ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (m->state == M_REG) { /* a registered worker's mistake is the job's */
        drop(j, m, "%s: %s", m->what, why);
        return;
    }
    if (j->phase != RALLY__JOB_FAILED || strcmp(why, j->sentence) != 0) /* said once */
        say(j, RALLY__TEV_LOG, "refusing %s: %s", m->what, why);
    send_abort(j, m, code, why);
    unlink_member(j, m);
    act(j, RALLY__JOB_REFUSE, m);
}

/* Drops rank r from the job: the ranks above it move down one, so the
 * survivors keep their order (docs/recovery.md).  Every rank reads its
 * shard anew for the new world, so the input each names next counts. */
static void drop_rank(struct rally__job *j, int r)
{
    snprintf(j->lost_task, sizeof j->lost_task, "%s", j->rank_task[r] ? j->rank_task[r] : "");
    free(j->rank_task[r]);
    int above = j->world - r - 1;
    memmove(j->by_rank + r, j->by_rank + r + 1, (size_t)above * sizeof *j->by_rank);
    memmove(j->incarnation + r, j->incarnation + r + 1, (size_t)above * sizeof *j->incarnation);
    memmove(j->rank_task + r, j->rank_task + r + 1, (size_t)above * sizeof *j->rank_task);
    memmove(j->rank_final + r, j->rank_final + r + 1, (size_t)above);
    j->world--;
    j->by_rank[j->world] = NULL;
    j->rank_task[j->world] = NULL;
    memset(j->input, 0, (size_t)j->world * sizeof *j->input);
    for (int k = r; k < j->world; k++) {
        struct rally__job_member *m = j->by_rank[k];
        if (m == NULL)
            continue;
        m->rank = k;
        snprintf(m->what, sizeof m->what, "rank %d (on %s)", k, m->peer);
    }
    j->members++;
    j->lost_rank = r;
}

static int small_int(const char *s, int world, int *v);

/* The owner gave up on rank r (its restarts are spent, its host is gone):
 * an elastic job goes on without it from the newest checkpoint, while at
 * least min_world ranks are left; any other job fails. */
static void gone(struct rally__job *j, int r, const char *cause)
{
    if (r < 0 || r >= j->world || !live(j))
        return;
    char as[RALLY__TASK_MAX + 16] = "";
    int v;
    if (j->rank_task[r] && (!small_int(j->rank_task[r], RALLY__WORLD_MAX, &v) || v != r))
        snprintf(as, sizeof as, " (task id %s)", j->rank_task[r]);
    if (j->min_world == 0 || !rally__job_recoverable(j)) {
        fail_job(j, RALLY_EPEER, r, "rank %d%s lost for good: %s", r, as, cause);
        return;
    }
    if (j->world - 1 < j->min_world) {
        fail_job(j, RALLY_EPEER, r,
                 "rank %d%s lost for good (%s): going on would leave %d worker%s, fewer than "
                 "the minimum of %d",
                 r, as, cause, j->world - 1, j->world == 2 ? "" : "s", j->min_world);
        return;
    }
    fence(j, r);
    char why[RALLY__ERR_MSG_MAX];
    snprintf(why, sizeof why, "rank %d%s lost for good (%s)", r, as, cause);
    drop_rank(j, r);
    new_epoch(j, why);
}

static void died(struct rally__job *j, int rank, const char *cause)
{
    if (rank < 0 || rank >= j->world || j->by_rank[rank] == NULL || !live(j))
        return;
    char why[RALLY__ERR_MSG_MAX];
    snprintf(why, sizeof why, "the launcher reported rank %d dead: %s", rank, cause);
    if (j->by_rank[rank]->finalized) { /* finished its part; only the connection is left */
        fence(j, rank);
        return;
    }
    rank_failed(j, rank, why, NULL, 0);
}

/* Every rank is READY: GO, and the end of a recovery when one ran. */
static void go(struct rally__job *j)
{
    j->phase = RALLY__JOB_RUNNING;
    j->go_at = j->now;
    for (int k = 0; k < j->world; k++)
        if (j->by_rank[k])
            send_msg(j, j->by_rank[k], RALLY__T_GO, NULL, 0);
    j->went = 1;
    emit(j, RALLY__TEV_GO, -1, NULL, NULL);
    if (!j->recovering)
        return;
    j->recovering = 0;
    struct rally__tracker_event ev = {.kind = RALLY__TEV_RECOVERED, .rank = -1};
    ev.seconds = (double)(j->now_us - j->failed_at_us) / 1e6;
    int best = -1;
    for (int r = 0; r < j->world; r++) {
        const struct rally__job_member *m = j->by_rank[r];
        if (m && m->rejoined == j->epoch && (best < 0 || m->position > ev.position)) {
            best = r;
            ev.position = m->position;
            ev.version = m->version;
        }
    }
    ev.has_position = best >= 0;
    char where[64], text[256];
    if (best >= 0) {
        rally__position_str(ev.position, where, sizeof where);
        snprintf(text, sizeof text,
                 "epoch %u: job back in step %.2f s after the failure; furthest survivor: %s "
                 "(rank %d, checkpoint version %u)",
                 j->epoch, ev.seconds, where, best, ev.version);
    } else {
        snprintf(text, sizeof text,
                 "epoch %u: job back in step %.2f s after the failure; no worker survived",
                 j->epoch, ev.seconds);
    }
    ev.text = text;
    emit_ev(j, &ev);
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
    const struct rally__job_member *x = *(struct rally__job_member *const *)a;
    const struct rally__job_member *y = *(struct rally__job_member *const *)b;
    int k = strcmp(x->host, y->host);
    if (k == 0)
        k = strcmp(x->task_id, y->task_id);
    if (k == 0)
        k = x->arrival < y->arrival ? -1 : x->arrival > y->arrival;
    return k;
}

/* The world-th registration: ranks, then ASSIGN (epoch 1) to all. */
static void assign(struct rally__job *j)
{
    int world = j->world, numeric = 1, v;
    struct rally__job_member **reg = calloc((size_t)world, sizeof *reg);
    if (reg == NULL) {
        fail_job(j, RALLY_ENOMEM, -1, "the tracker ran out of memory assigning ranks");
        goto cleanup;
    }
    int k = 0;
    for (struct rally__job_member *m = j->head; m && k < world; m = m->next)
        if (m->state == M_REG)
            reg[k++] = m;
    /* Task ids are distinct when non-empty (REGISTER checks), so world
     * distinct integers in [0, world) are a permutation. */
    for (int i = 0; i < world && numeric; i++)
        numeric = small_int(reg[i]->task_id, world, &v);
    if (numeric)
        for (int i = 0; i < world; i++) {
            small_int(reg[i]->task_id, world, &v);
            j->by_rank[v] = reg[i];
        }
    else {
        qsort(reg, (size_t)world, sizeof *reg, by_host_task_arrival);
        memcpy(j->by_rank, reg, (size_t)world * sizeof *reg);
    }
    for (int r = 0; r < world; r++) {
        struct rally__job_member *m = j->by_rank[r];
        m->rank = r;
        snprintf(m->what, sizeof m->what, "rank %d (on %s)", r, m->peer);
        j->incarnation[r] = 1;
        j->rank_task[r] = strdup(m->task_id);
        if (j->rank_task[r] == NULL) {
            fail_job(j, RALLY_ENOMEM, -1, "the tracker ran out of memory assigning ranks");
            goto cleanup;
        }
    }
    send_assign(j);
cleanup:
    free(reg);
}

/* --- frames ---------------------------------------------------------------- */

/* A REGISTER after the first ASSIGN: a restarted worker (same task id, same
 * rank, next incarnation), or a stranger to refuse. */
static void on_reregister(struct rally__job *j, struct rally__job_member *m, const char *task,
                          int want)
{
    int r = -1;
    for (int k = 0; task[0] && k < j->world && r < 0; k++)
        if (j->rank_task[k] && strcmp(j->rank_task[k], task) == 0)
            r = k;
    if (r < 0) {
        reject(j, m, RALLY_ESTATE,
               task[0] ? "the job already has all %d workers and none has task id '%s'"
                       : "the job already has all %d workers%s (a restarted worker needs its task id)",
               j->world, task);
        return;
    }
    if (want >= 0 && want != r) {
        reject(j, m, RALLY_ECONFIG, "task id '%s' is rank %d, not rank %d", task, r, want);
        return;
    }
    if (j->rank_final[r]) {
        reject(j, m, RALLY_ESTATE, "rank %d (task id '%s') already finalized", r, task);
        return;
    }
    if (!rally__job_recoverable(j)) {
        if (j->no_recovery || !j->went)
            reject(j, m, RALLY_ESTATE, "the job already has all %d workers", j->world);
        else
            reject(j, m, RALLY_ESTATE, "the job is finishing: rank %d cannot rejoin it", r);
        return;
    }
    if (j->by_rank[r] != NULL) { /* the old incarnation is stale: fence it first */
        char cause[96];
        snprintf(cause, sizeof cause, "rank %d replaced by a new incarnation", r);
        rank_failed(j, r, cause, NULL, 0);
    }
    if (!live(j)) {
        reject(j, m, j->code, "%s", j->sentence);
        return;
    }
    j->incarnation[r]++;
    m->rank = r;
    m->state = M_REG;
    m->arrival = ++j->arrivals;
    m->last_rx = j->now;
    m->pos_since = j->now;
    j->nregistered++;
    j->by_rank[r] = m;
    act(j, RALLY__JOB_ADMIT, m);
    snprintf(m->what, sizeof m->what, "rank %d (on %s)", r, m->peer);
    say(j, RALLY__TEV_PROGRESS, "rank %d registered again (incarnation %u) for epoch %u", r,
        j->incarnation[r], j->epoch);
    maybe_assign(j);
}

static void on_register(struct rally__job *j, struct rally__job_member *m,
                        const unsigned char *body, size_t n)
{
    struct rally__msg_register g;
    if (rally__msg_register_get(body, n, &g) != 0) {
        drop(j, m, "%s: malformed REGISTER (%zu bytes)", m->what, n);
        return;
    }
    if (j->phase == RALLY__JOB_FAILED) {
        reject(j, m, j->code, "%s", j->sentence);
        return;
    }
    if (j->phase == RALLY__JOB_DONE) {
        reject(j, m, RALLY_ESTATE, "the job already has all %d workers", j->world);
        return;
    }
    if (g.world_hint != 0 && g.world_hint != (uint32_t)j->world) {
        reject(j, m, RALLY_ECONFIG, "the worker expects %u workers, this job has %d",
               g.world_hint, j->world);
        return;
    }
    if (g.want_rank < -1 || g.want_rank >= j->world) {
        reject(j, m, RALLY_ECONFIG, "the worker asks for rank %d of a job of %d",
               (int)g.want_rank, j->world);
        return;
    }
    snprintf(m->task_id, sizeof m->task_id, "%s", g.task_id);
    snprintf(m->host, sizeof m->host, "%s", g.listen_host[0] ? g.listen_host : m->peer);
    m->listen_port = g.listen_port;
    if (j->phase != RALLY__JOB_JOINING) {
        on_reregister(j, m, g.task_id, g.want_rank);
        return;
    }
    for (struct rally__job_member *o = j->head; g.task_id[0] && o; o = o->next) {
        if (o != m && o->state == M_REG && strcmp(o->task_id, g.task_id) == 0) {
            reject(j, m, RALLY_ECONFIG, "task id '%s' is already registered by %s", g.task_id,
                   o->peer);
            return;
        }
    }
    m->arrival = ++j->arrivals;
    m->state = M_REG;
    m->last_rx = j->now;
    m->pos_since = j->now;
    act(j, RALLY__JOB_ADMIT, m);
    if (++j->nregistered == j->world)
        assign(j);
}

static void on_ready(struct rally__job *j, struct rally__job_member *m, const unsigned char *body,
                     size_t n)
{
    if (rally__msg_empty_get(body, n) != 0 || m->rank < 0 || m->assigned == 0) {
        drop(j, m, "%s: unexpected READY (%s)", m->what, n ? "with a body" : "before ASSIGN");
        return;
    }
    if (m->assigned != j->epoch || j->phase != RALLY__JOB_STARTING)
        return; /* for an epoch that has ended: a RESET is on its way to it */
    if (m->ready) {
        drop(j, m, "%s: unexpected READY (twice)", m->what);
        return;
    }
    m->ready = 1;
    if (++j->nready == j->world)
        go(j);
}

static void on_rejoin(struct rally__job *j, struct rally__job_member *m,
                      const unsigned char *body, size_t n)
{
    uint32_t epoch, version;
    uint64_t position;
    if (rally__msg_rejoin_get(body, n, &epoch, &position, &version) != 0) {
        drop(j, m, "%s: malformed REJOIN (%zu bytes)", m->what, n);
        return;
    }
    if (m->rank < 0 || m->assigned == 0 || epoch > j->epoch || epoch <= m->assigned) {
        drop(j, m,
             "%s: REJOIN for epoch %u, which it was never reset to (epoch %u, its ASSIGN %u)",
             m->what, epoch, j->epoch, m->assigned);
        return;
    }
    if (epoch < j->epoch || m->rejoined == epoch)
        return; /* a newer RESET is on its way to it, or a repeat */
    m->rejoined = epoch;
    m->position = position;
    m->version = version;
    maybe_assign(j);
}

static void on_link_failed(struct rally__job *j, struct rally__job_member *m,
                           const unsigned char *body, size_t n)
{
    char msg[RALLY__ERR_MSG_MAX];
    uint32_t epoch;
    if (rally__msg_link_failed_get(body, n, &epoch, msg, sizeof msg) != 0) {
        drop(j, m, "%s: malformed LINK_FAILED (%zu bytes)", m->what, n);
        return;
    }
    if (epoch == 0) /* the epoch of the job's first ASSIGN, as the worker knows it */
        epoch = 1;
    if (m->rank < 0 || epoch > j->epoch) {
        drop(j, m, "%s: LINK_FAILED for epoch %u (the tracker is in epoch %u%s)", m->what, epoch,
             j->epoch, m->rank < 0 ? ", and it has no rank yet" : "");
        return;
    }
    if (epoch < j->epoch || j->phase == RALLY__JOB_ASSEMBLING || m->assigned != j->epoch ||
        !live(j)) {
        say(j, RALLY__TEV_LOG, "ignoring rank %d's report for epoch %u (now %u): %s", m->rank,
            epoch, j->epoch, msg);
        return;
    }
    char cause[RALLY__ERR_MSG_MAX + 32];
    snprintf(cause, sizeof cause, "rank %d reported: %s", m->rank, msg);
    if (!rally__job_recoverable(j)) {
        fail_job(j, RALLY_EPEER, -1, "%s", cause);
        return;
    }
    new_epoch(j, cause);
}

static void on_print(struct rally__job *j, struct rally__job_member *m, const unsigned char *body,
                     size_t n)
{
    /* the message goes straight to the arena: no buffer of its own */
    size_t at = stash(j, NULL, RALLY__PRINT_MAX + 1);
    if (at == NONE) {
        drop(j, m, "%s: out of memory for a PRINT", m->what);
        return;
    }
    char *msg = (char *)j->arena + at;
    if (rally__msg_print_get(body, n, msg, RALLY__PRINT_MAX + 1) != 0) {
        j->arena_len = at;
        drop(j, m, "%s: malformed PRINT (%zu bytes)", m->what, n);
        return;
    }
    j->arena_len = at + strlen(msg) + 1;
    struct rally__job_act *a = act(j, RALLY__JOB_PRINT, m);
    if (a == NULL)
        return;
    a->ev.rank = m->rank;
    a->text_at = at;
}

static void on_error(struct rally__job *j, struct rally__job_member *m, const unsigned char *body,
                     size_t n)
{
    char msg[RALLY__ERR_MSG_MAX];
    uint32_t code;
    if (rally__msg_fail_get(body, n, &code, msg, sizeof msg) != 0) {
        drop(j, m, "%s: malformed ERROR (%zu bytes)", m->what, n);
        return;
    }
    if (code == 0 || code > RALLY_ESTATE)
        code = RALLY_EPEER;
    if (m->rank >= 0)
        fail_job(j, (int)code, -1, "rank %d failed: %s", m->rank, msg);
    else
        fail_job(j, (int)code, -1, "the worker with task id '%s' failed: %s", m->task_id, msg);
}

static void on_input(struct rally__job *j, struct rally__job_member *m, const unsigned char *body,
                     size_t n)
{
    char scheme[RALLY__SCHEME_MAX];
    uint64_t fp;
    if (rally__msg_input_get(body, n, scheme, sizeof scheme, &fp) != 0 || m->rank < 0) {
        drop(j, m, "%s: %s INPUT (%zu bytes)", m->what, m->rank < 0 ? "unranked" : "malformed",
             n);
        return;
    }
    struct rank_input *in = &j->input[m->rank];
    uint32_t inc = j->incarnation[m->rank];
    if (in->incarnation == 0 || in->incarnation == inc) { /* the first word on it counts */
        memcpy(in->scheme, scheme, sizeof scheme);
        in->fingerprint = fp;
        in->incarnation = inc;
    }
    if (strcmp(in->scheme, scheme) == 0 && in->fingerprint == fp) {
        if (live(j))
            send_msg(j, m, RALLY__T_INPUT_OK, NULL, 0);
        return;
    }
    fail_job(j, RALLY_ECONFIG, -1,
             "rank %d read another input after its restart: incarnation %u has fingerprint "
             "%016llx (scheme %s), incarnation %u had %016llx (scheme %s), so the model would "
             "mix both; restore the rank's input, or set rally_input_check=0 to go on with it",
             m->rank, inc, (unsigned long long)fp, scheme, in->incarnation,
             (unsigned long long)in->fingerprint, in->scheme);
}

static void on_shutdown(struct rally__job *j, struct rally__job_member *m,
                        const unsigned char *body, size_t n)
{
    if (rally__msg_empty_get(body, n) != 0 || m->rank < 0 || m->assigned == 0 || m->finalized) {
        drop(j, m, "%s: unexpected SHUTDOWN (%s)", m->what,
             n ? "with a body" : m->finalized ? "twice" : "before ASSIGN");
        return;
    }
    if (j->recovering && live(j)) {
        fail_job(j, RALLY_EPEER, m->rank,
                 "rank %d finalized while the job was recovering from a failure (epoch %u)",
                 m->rank, j->epoch);
        return;
    }
    m->finalized = 1;
    j->rank_final[m->rank] = 1;
    send_msg(j, m, RALLY__T_BYE, NULL, 0);
    emit(j, RALLY__TEV_FINALIZED, m->rank, m->task_id, NULL);
    if (++j->nfinal == j->world && live(j)) {
        j->phase = RALLY__JOB_DONE;
        emit(j, RALLY__TEV_DONE, -1, NULL, NULL);
    }
}

/* A heartbeat: the worker lives, and says where it stands. */
static void on_heartbeat(struct rally__job *j, struct rally__job_member *m,
                         const unsigned char *body, size_t n)
{
    struct rally__msg_heartbeat h;
    if (rally__msg_heartbeat_get(body, n, &h) != 0) {
        drop(j, m, "%s: a HEARTBEAT with a malformed %zu-byte body", m->what, n);
        return;
    }
    m->heartbeats = 1;
    if (!h.has_position || (h.position == m->pos && h.waiting == m->pos_waiting))
        return; /* it stands where it stood: since stays */
    m->pos = h.position;
    m->pos_waiting = h.waiting;
    snprintf(m->pos_what, sizeof m->pos_what, "%s", h.what);
    int64_t ago = h.for_ms > (uint64_t)INT32_MAX ? INT32_MAX : (int64_t)h.for_ms;
    m->pos_since = j->now - ago;
}

static void on_frame(struct rally__job *j, struct rally__job_member *m, uint16_t type,
                     const unsigned char *body, size_t n)
{
    if (m->state == M_NONE)
        return;
    m->last_rx = j->now;
    if (m->state == M_AUTHED) {
        if (type == RALLY__T_REGISTER)
            on_register(j, m, body, n);
        else
            drop(j, m, "%s: frame type %u before REGISTER", m->what, type);
        return;
    }
    switch (type) {
    case RALLY__T_READY: on_ready(j, m, body, n); return;
    case RALLY__T_HEARTBEAT: on_heartbeat(j, m, body, n); return;
    case RALLY__T_REJOIN: on_rejoin(j, m, body, n); return;
    case RALLY__T_LINK_FAILED: on_link_failed(j, m, body, n); return;
    case RALLY__T_PRINT: on_print(j, m, body, n); return;
    case RALLY__T_ERROR: on_error(j, m, body, n); return;
    case RALLY__T_INPUT: on_input(j, m, body, n); return;
    case RALLY__T_SHUTDOWN: on_shutdown(j, m, body, n); return;
    case RALLY__T_REGISTER: drop(j, m, "%s: REGISTER twice", m->what); return;
    default: drop(j, m, "%s: unexpected frame type %u", m->what, type); return;
    }
}

/* --- time ------------------------------------------------------------------ */

/* Appends "0, 1, 3" for the ranks r with (mark[r] != 0) == want, the
 * first 16 of them. */
static void list_ranks(const char *mark, int want, int world, char *s, size_t cap, size_t *len)
{
    int shown = 0;
    for (int r = 0; r < world; r++) {
        if ((mark[r] != 0) != want)
            continue;
        if (shown++ == 16) {
            appendf(s, cap, len, ", ...");
            break;
        }
        appendf(s, cap, len, "%s%d", shown > 1 ? ", " : "", r);
    }
}

/* Lists the ranks not READY, or the task ids 0..world-1 that did not
 * register (meaningful when rally-run numbers them so: listed only when every
 * joined id is such a number). */
static void missing_list(struct rally__job *j, char *s, size_t cap, int ready)
{
    size_t len = 0;
    int v;
    char *seen = calloc((size_t)j->world, 1);
    s[0] = '\0';
    if (seen == NULL)
        return;
    for (struct rally__job_member *m = j->head; m; m = m->next) {
        if (m->state != M_REG || (ready && !m->ready))
            continue;
        if (ready)
            seen[m->rank] = 1;
        else if (small_int(m->task_id, j->world, &v))
            seen[v] = 1;
        else
            goto cleanup;
    }
    if (!ready)
        appendf(s, cap, &len, "; missing task ids: ");
    list_ranks(seen, 0, j->world, s, cap, &len);
cleanup:
    free(seen);
}

/* 1 when rank r is where the epoch being assembled or started needs it. */
static int in_step(const struct rally__job *j, int r)
{
    const struct rally__job_member *m = j->by_rank[r];
    return j->phase == RALLY__JOB_ASSEMBLING ? present(j, r) : m != NULL && m->ready;
}

/* The ranks missing from the epoch being assembled (or not READY in it). */
static void epoch_missing(struct rally__job *j, char *s, size_t cap)
{
    size_t len = 0;
    char *in = calloc((size_t)j->world, 1);
    s[0] = '\0';
    if (in == NULL)
        return;
    for (int r = 0; r < j->world; r++)
        in[r] = (char)in_step(j, r);
    list_ranks(in, 0, j->world, s, cap, &len);
    free(in);
}

/* 1 when m's silence is a failure once it lasts heartbeat_ms: from its
 * first ASSIGN on (a worker beats from then, wiring included), or from an
 * earlier heartbeat.  Before its ASSIGN a worker only waits for the others. */
static int watched(const struct rally__job *j, const struct rally__job_member *m)
{
    return j->heartbeat_ms > 0 && m->state == M_REG && (m->heartbeats || m->assigned != 0) &&
           !m->finalized;
}

/* 1 when every rank missing from the epoch is a live worker that keeps
 * sending heartbeats: a survivor busy computing notices the RESET only at
 * its next collective, which may be long after the epoch's deadline.  Only
 * ranks with no live worker (a restart that never came) time an epoch out. */
static int missing_are_busy(const struct rally__job *j)
{
    if (j->heartbeat_ms <= 0)
        return 0;
    for (int r = 0; r < j->world; r++) {
        const struct rally__job_member *m = j->by_rank[r];
        if (in_step(j, r))
            continue;
        if (m == NULL || !watched(j, m) || j->now - m->last_rx >= j->heartbeat_ms)
            return 0;
    }
    return 1;
}

/* --- the progress watch ----------------------------------------------------- */

/* A rank is stuck when the others wait for it and it stands still
 * (docs/recovery.md, "Stuck ranks").  While the job runs: some ranks wait in
 * the lowest operation any rank waits in, K, and a rank that has not
 * entered K (it stands before K in its own code, or waits in an earlier
 * operation) has stood still for progress_ms since the first of them began
 * to wait (or since the last GO: before it, nobody could go on).  While a
 * recovery round assembles: a rank missing from it has stood still for
 * progress_ms since the round began.  A rank that is merely slow moves, and
 * a job whose ranks all compute waits for nobody. */

/* A rank whose position the watch looks at. */
static const struct rally__job_member *watched_rank(const struct rally__job *j, int r)
{
    const struct rally__job_member *m = j->by_rank[r];
    return m != NULL && m->state == M_REG && m->assigned != 0 && !m->finalized ? m : NULL;
}

/* 1 when m has not entered the operation at key. */
static int behind(const struct rally__job_member *m, uint64_t key)
{
    return m->pos < key || (m->pos == key && !m->pos_waiting);
}

/* The lowest operation a rank waits in while the job runs, and since when
 * the first waits there; 0 when nobody waits. */
static int waited_in(const struct rally__job *j, uint64_t *key, int64_t *since)
{
    int any = 0;
    for (int r = 0; r < j->world; r++) {
        const struct rally__job_member *m = watched_rank(j, r);
        if (m == NULL || !m->pos_waiting)
            continue;
        if (!any || m->pos < *key || (m->pos == *key && m->pos_since < *since)) {
            *key = m->pos;
            *since = m->pos_since;
        }
        any = 1;
    }
    return any;
}

/* When rank r will have kept the others waiting for progress_ms
 * (RALLY__NEVER: it does not keep them waiting). */
static int64_t stuck_at(const struct rally__job *j, int r, int waiting, uint64_t key,
                        int64_t since)
{
    const struct rally__job_member *m = watched_rank(j, r);
    if (m == NULL)
        return RALLY__NEVER;
    int64_t from;
    if (j->phase == RALLY__JOB_RUNNING) {
        if (!waiting || !behind(m, key))
            return RALLY__NEVER;
        from = since > j->go_at ? since : j->go_at;
    } else if (j->recovering && !in_step(j, r)) {
        from = j->round_began;
    } else {
        return RALLY__NEVER;
    }
    if (m->pos_since > from)
        from = m->pos_since;
    return from + j->progress_ms;
}

/* "allreduce #12 of version 5": the operation at key, in words. */
static void op_str(uint64_t key, const char *what, char *s, size_t cap)
{
    unsigned phase = (unsigned)(key >> 62);
    uint64_t low = key & ((UINT64_C(1) << 62) - 1);
    uint32_t q = (uint32_t)key;
    if (what[0] == '\0') /* in its own code: the call it has yet to make */
        what = "call";
    if (phase == 0)
        snprintf(s, cap, "%s #%llu before rally_load_checkpoint", what, (unsigned long long)low);
    else if (phase == 2 && q > 0)
        snprintf(s, cap, "%s #%u of version %u", what, q - 1, (unsigned)(low >> 32));
    else if (phase == 2)
        snprintf(s, cap, "%s of version %u", what, (unsigned)(low >> 32));
    else
        snprintf(s, cap, "%s", phase == 1 ? "rally_load_checkpoint" : "rally_finalize");
}

/* "60 s" (whole seconds: the poll that finds it may come a little late),
 * "400 ms". */
static void secs_str(int64_t ms, char *s, size_t cap)
{
    if (ms >= 1000)
        snprintf(s, cap, "%lld s", (long long)(ms / 1000));
    else
        snprintf(s, cap, "%lld ms", (long long)ms);
}

/* Appends "rank 2" or "ranks 0, 1, 3" for the ranks with mark[r] set, and
 * says how many there were. */
static int ranks_str(const struct rally__job *j, const char *mark, char *s, size_t cap,
                     size_t *len)
{
    int n = 0;
    for (int r = 0; r < j->world; r++)
        n += mark[r] != 0;
    appendf(s, cap, len, "rank%s ", n == 1 ? "" : "s");
    list_ranks(mark, 1, j->world, s, cap, len);
    return n;
}

/* The earliest time a rank will be stuck (RALLY__NEVER: none). */
static int64_t progress_deadline(const struct rally__job *j)
{
    if (j->progress_ms <= 0 || !live(j) || !j->went)
        return RALLY__NEVER;
    uint64_t key = 0;
    int64_t since = 0, d = RALLY__NEVER;
    int waiting = j->phase == RALLY__JOB_RUNNING && waited_in(j, &key, &since);
    for (int r = 0; r < j->world; r++) {
        int64_t at = stuck_at(j, r, waiting, key, since);
        if (at < d)
            d = at;
    }
    return d;
}

/* Names the stuck ranks, then fences them or fails the job. */
static void check_progress(struct rally__job *j)
{
    if (progress_deadline(j) > j->now)
        return;
    uint64_t key = 0;
    int64_t since = 0, longest = 0;
    int running = j->phase == RALLY__JOB_RUNNING;
    int waiting = running && waited_in(j, &key, &since);
    char *stuck = calloc((size_t)j->world, 2), *waits = stuck + j->world;
    if (stuck == NULL) {
        j->oom = 1;
        return;
    }
    const struct rally__job_member *one = NULL;
    for (int r = 0; r < j->world; r++) {
        int64_t at = stuck_at(j, r, waiting, key, since);
        if (at <= j->now) {
            stuck[r] = 1;
            one = j->by_rank[r];
            if (j->now - (at - j->progress_ms) > longest)
                longest = j->now - (at - j->progress_ms);
        } else if (running ? watched_rank(j, r) != NULL && j->by_rank[r]->pos_waiting &&
                                 j->by_rank[r]->pos == key
                           : in_step(j, r)) {
            waits[r] = 1;
        }
    }
    char sentence[RALLY__ERR_MSG_MAX], where[160], secs[32];
    size_t len = 0;
    sentence[0] = '\0';
    secs_str(longest, secs, sizeof secs);
    int fail = j->progress_fail || !rally__job_recoverable(j);
    if (!running && fail) /* (a new epoch's line names the epoch itself) */
        appendf(sentence, sizeof sentence, &len, "epoch %u: ", j->epoch);
    int nw = ranks_str(j, waits, sentence, sizeof sentence, &len);
    if (running) {
        op_str(key, "", where, sizeof where);
        for (int r = 0; r < j->world; r++)
            if (waits[r]) {
                op_str(key, j->by_rank[r]->pos_what, where, sizeof where);
                break;
            }
        appendf(sentence, sizeof sentence, &len, " wait%s in %s; ", nw == 1 ? "s" : "", where);
    } else {
        appendf(sentence, sizeof sentence, &len, " wait%s to recover; ", nw == 1 ? "s" : "");
    }
    int ns = ranks_str(j, stuck, sentence, sizeof sentence, &len);
    if (running)
        appendf(sentence, sizeof sentence, &len, " %s not called it for %s",
                ns == 1 ? "has" : "have", secs);
    else
        appendf(sentence, sizeof sentence, &len, " %s not %s for %s", ns == 1 ? "has" : "have",
                j->phase == RALLY__JOB_ASSEMBLING ? "rejoined" : "become ready", secs);
    /* where it stands, when that is not simply its own code before the call */
    if (ns == 1 && (!running || one->pos_waiting)) {
        op_str(one->pos, one->pos_what, where, sizeof where);
        appendf(sentence, sizeof sentence, &len, " (it %s %s)",
                one->pos_waiting ? "waits in" : "is in its own code before", where);
    }
    if (fail) {
        fail_job(j, RALLY_ETIMEDOUT, -1, "%s", sentence);
    } else {
        for (int r = 0; r < j->world; r++) {
            if (!stuck[r])
                continue;
            fence(j, r);
            struct rally__tracker_event ev = {.kind = RALLY__TEV_RANK_FAILED,
                                              .rank = r,
                                              .task_id = j->rank_task[r],
                                              .text = sentence,
                                              .epoch = j->epoch + 1};
            emit_ev(j, &ev);
        }
        new_epoch(j, sentence);
    }
    free(stuck);
}

static void tick(struct rally__job *j)
{
    int64_t now = j->now;
    for (struct rally__job_member *m = j->head, *next; m && live(j); m = next) {
        next = m->next;
        if (watched(j, m) && m->rank >= 0 && j->by_rank[m->rank] == m &&
            now - m->last_rx >= j->heartbeat_ms) {
            char cause[96];
            if (m->heartbeats)
                snprintf(cause, sizeof cause, "rank %d sent no heartbeat for %lld ms", m->rank,
                         (long long)(now - m->last_rx));
            else
                snprintf(cause, sizeof cause,
                         "rank %d sent no heartbeat within %lld ms of its address book", m->rank,
                         (long long)(now - m->last_rx));
            rank_failed(j, m->rank, cause, NULL, 0);
            next = j->head; /* the list changed: look again (a failed rank is gone from it) */
        }
    }
    if (live(j))
        check_progress(j);
    if (!live(j) || j->phase == RALLY__JOB_RUNNING)
        return;
    char miss[256];
    if (j->went) {
        if (now < j->epoch_deadline)
            return;
        if (missing_are_busy(j)) { /* survivors still computing: look again soon */
            j->epoch_deadline = now + 1000;
            return;
        }
        epoch_missing(j, miss, sizeof miss);
        fail_job(j, RALLY_ETIMEDOUT, -1, "epoch %u: rank(s) %s did not %s within %lld ms",
                 j->epoch, miss, j->phase == RALLY__JOB_ASSEMBLING ? "rejoin" : "become ready",
                 (long long)j->startup_ms);
        return;
    }
    if (now < j->startup_deadline)
        return;
    if (j->phase == RALLY__JOB_JOINING) {
        missing_list(j, miss, sizeof miss, 0);
        fail_job(j, RALLY_ETIMEDOUT, -1, "only %d of %d workers joined within %lld ms%s",
                 j->nregistered, j->world, (long long)j->startup_ms, miss);
    } else {
        missing_list(j, miss, sizeof miss, 1);
        fail_job(j, RALLY_ETIMEDOUT, -1, "rank(s) %s did not become ready within %lld ms", miss,
                 (long long)j->startup_ms);
    }
}

/* --- the interface --------------------------------------------------------- */

static const unsigned char *resolve(const struct rally__job *j, size_t off)
{
    return off == NONE ? NULL : j->arena + off;
}

void rally__job_step(struct rally__job *j, const struct rally__job_ev *ev)
{
    j->nacts = 0;
    j->arena_len = 0;
    j->oom = 0;
    j->now_us = ev->now_us;
    j->now = ev->now_us / 1000;
    switch (ev->kind) {
    case RALLY__JOB_EV_OPEN:
        ev->m->state = M_AUTHED;
        ev->m->rank = -1;
        ev->m->prev = j->tail;
        ev->m->next = NULL;
        if (j->tail)
            j->tail->next = ev->m;
        else
            j->head = ev->m;
        j->tail = ev->m;
        break;
    case RALLY__JOB_EV_FRAME: on_frame(j, ev->m, ev->type, ev->body, ev->nbytes); break;
    case RALLY__JOB_EV_LOST: lose(j, ev->m, "%s", ev->text ? ev->text : ""); break;
    case RALLY__JOB_EV_DROP: drop(j, ev->m, "%s", ev->text ? ev->text : ""); break;
    case RALLY__JOB_EV_DIED: died(j, ev->rank, ev->text ? ev->text : ""); break;
    case RALLY__JOB_EV_GONE: gone(j, ev->rank, ev->text ? ev->text : ""); break;
    case RALLY__JOB_EV_ABORT:
        fail_job(j, ev->code, -1, "%s", ev->text ? ev->text : "");
        break;
    case RALLY__JOB_EV_TICK: tick(j); break;
    default: break;
    }
    if (j->oom) {
        /* an action could not be recorded: what is recorded stands, and the
         * job cannot go on without the rest */
        j->oom = 0;
        fail_job(j, RALLY_ENOMEM, -1, "the tracker ran out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < j->nacts; i++) {
        struct rally__job_act *a = &j->acts[k];
        *a = j->acts[i];
        if ((a->nbytes && a->body_at == NONE && a->kind == RALLY__JOB_SEND) ||
            (a->tail_nbytes && a->tail_at == NONE))
            continue; /* its bytes could not be kept (out of memory): the job failed */
        k++;
        if (a->body_at != NONE)
            a->body = resolve(j, a->body_at);
        if (a->tail_at != NONE)
            a->tail = resolve(j, a->tail_at);
        if (a->text_at != NONE)
            a->ev.text = (const char *)resolve(j, a->text_at);
        if (a->task_at != NONE)
            a->ev.task_id = (const char *)resolve(j, a->task_at);
        if (a->ev.text == NULL)
            a->ev.text = "";
        if (a->ev.task_id == NULL)
            a->ev.task_id = "";
    }
    j->nacts = k;
}

size_t rally__job_actions(const struct rally__job *j, const struct rally__job_act **acts)
{
    *acts = j->acts;
    return j->nacts;
}

int64_t rally__job_deadline(const struct rally__job *j)
{
    int64_t d = RALLY__NEVER;
    if (live(j) && j->phase != RALLY__JOB_RUNNING) {
        int64_t x = j->went ? j->epoch_deadline : j->startup_deadline;
        if (x < d)
            d = x;
    }
    for (const struct rally__job_member *m = j->head; m; m = m->next)
        if (watched(j, m) && m->last_rx + j->heartbeat_ms < d)
            d = m->last_rx + j->heartbeat_ms;
    int64_t p = progress_deadline(j);
    return p < d ? p : d;
}

enum rally__job_phase rally__job_phase(const struct rally__job *j)
{
    return j->phase;
}

const char *rally__job_sentence(const struct rally__job *j, int *rank)
{
    if (rank)
        *rank = j->failed_rank;
    return j->sentence;
}

int rally__job_code(const struct rally__job *j)
{
    return j->code;
}

uint32_t rally__job_epoch(const struct rally__job *j)
{
    return j->epoch;
}

void rally__job_set_recovery(struct rally__job *j, int on)
{
    j->no_recovery = !on;
}

void rally__job_set_min_world(struct rally__job *j, int min_world)
{
    j->min_world = min_world > 0 && min_world <= j->world ? min_world : 0;
}

int rally__job_world(const struct rally__job *j)
{
    return j->world;
}

const char *rally__job_task_of(const struct rally__job *j, int rank)
{
    return rank >= 0 && rank < j->world && j->rank_task && j->rank_task[rank] ? j->rank_task[rank]
                                                                              : "";
}

int rally__job_rank_of(const struct rally__job *j, const char *task_id)
{
    for (int r = 0; task_id[0] && r < j->world; r++)
        if (j->rank_task[r] && strcmp(j->rank_task[r], task_id) == 0)
            return r;
    return -1;
}

void rally__job_set_heartbeat_timeout(struct rally__job *j, int64_t timeout_ms)
{
    j->heartbeat_ms = timeout_ms > 0 ? timeout_ms : 0;
}

void rally__job_set_progress_timeout(struct rally__job *j, int64_t timeout_ms, int fail)
{
    j->progress_ms = timeout_ms > 0 ? timeout_ms : 0;
    j->progress_fail = fail != 0;
}

int rally__job_new(struct rally__job **out, const struct rally__job_opts *o, int64_t now_us,
                   struct rally__err *e)
{
    struct rally__job *j = NULL;
    if (o->world < 1 || o->world > RALLY__WORLD_MAX) {
        rally__fail(e, RALLY_EINVAL, "a job has 1 to %d workers, not %d", RALLY__WORLD_MAX,
                    o->world);
        goto cleanup;
    }
    size_t w = (size_t)o->world;
    j = calloc(1, sizeof *j);
    if (j == NULL || (j->by_rank = calloc(w, sizeof *j->by_rank)) == NULL ||
        (j->incarnation = calloc(w, sizeof *j->incarnation)) == NULL ||
        (j->rank_task = calloc(w, sizeof *j->rank_task)) == NULL ||
        (j->rank_final = calloc(w, 1)) == NULL ||
        (j->input = calloc(w, sizeof *j->input)) == NULL) {
        rally__fail(e, RALLY_ENOMEM, "out of memory creating the tracker");
        goto cleanup;
    }
    j->world = o->world;
    j->startup_ms = o->startup_timeout_ms;
    j->phase = RALLY__JOB_JOINING;
    j->failed_rank = -1;
    j->epoch = 1;
    j->startup_deadline =
        o->startup_timeout_ms > 0 ? now_us / 1000 + o->startup_timeout_ms : RALLY__NEVER;
    j->epoch_deadline = RALLY__NEVER;
    *out = j;
    return RALLY_OK;
cleanup:
    rally__job_free(j);
    return e->code;
}

void rally__job_free(struct rally__job *j)
{
    if (j == NULL)
        return;
    free(j->by_rank);
    free(j->incarnation);
    for (int r = 0; j->rank_task && r < j->world; r++)
        free(j->rank_task[r]);
    free(j->rank_task);
    free(j->rank_final);
    free(j->input);
    free(j->book);
    free(j->acts);
    free(j->arena);
    free(j);
}
