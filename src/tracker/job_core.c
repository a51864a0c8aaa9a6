/*
 * job_core.c — the bottom of the tracker's job state machine (job_int.h):
 * what its other files share and call down into, and nothing they offer:
 * recording actions in the arena, the members' list, the phases, the job's
 * failure, epochs and ASSIGN, a rank's failure and the RESIZED event, GO
 * and the return to step.  job.c dispatches events to the files above it.
 */
#include "tracker/job_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/frame.h"
#include "util/clock.h"

int rally__jb_live(const struct rally__job *j)
{
    return j->phase != RALLY__JOB_DONE && j->phase != RALLY__JOB_FAILED;
}

/* --- recording actions ----------------------------------------------------- */

/* Copies n bytes to the arena; their offset, or NONE when out of memory. */
size_t rally__jb_stash(struct rally__job *j, const void *p, size_t n)
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
    return rally__jb_stash(j, s, strlen(s) + 1);
}

struct rally__job_act *rally__jb_act(struct rally__job *j, int kind, struct rally__job_member *m)
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
    a->body_at = a->tail_at = a->text_at = a->task_at = a->key_at = a->detail_at = NONE;
    a->ev.rank = -1;
    return a;
}

struct rally__job_act *rally__jb_send_msg(struct rally__job *j, struct rally__job_member *m,
                                          uint16_t type, const void *body, size_t n)
{
    struct rally__job_act *a = rally__jb_act(j, RALLY__JOB_SEND, m);
    if (a != NULL) {
        a->type = type;
        a->nbytes = n;
        a->body_at = rally__jb_stash(j, body, n);
    }
    return a;
}

static void send_abort(struct rally__job *j, struct rally__job_member *m, int code,
                       const char *sentence)
{
    unsigned char b[4 + 4 + RALLY__ERR_MSG_MAX];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_fail_put(&w, (uint32_t)code, sentence);
    rally__jb_send_msg(j, m, RALLY__T_ABORT, b, w.len);
}

void rally__jb_emit_ev(struct rally__job *j, const struct rally__tracker_event *ev)
{
    struct rally__job_act *a = rally__jb_act(j, RALLY__JOB_EVENT, NULL);
    if (a == NULL)
        return;
    a->ev = *ev;
    a->task_at = stash_str(j, ev->task_id ? ev->task_id : "");
    a->text_at = stash_str(j, ev->text ? ev->text : "");
    if (ev->key != NULL)
        a->key_at = stash_str(j, ev->key);
    if (ev->detail != NULL)
        a->detail_at = stash_str(j, ev->detail);
    if (a->ev.epoch == 0)
        a->ev.epoch = j->epoch;
}

void rally__jb_emit(struct rally__job *j, int kind, int rank, const char *task, const char *text)
{
    struct rally__tracker_event ev = {.kind = kind, .rank = rank, .task_id = task, .text = text};
    rally__jb_emit_ev(j, &ev);
}

/* A formatted line for the owner: a LOG or a PROGRESS event. */
void rally__jb_say(struct rally__job *j, int kind, const char *fmt, ...)
{
    char line[RALLY__ERR_MSG_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    rally__jb_emit(j, kind, -1, NULL, line);
}

void rally__jb_appendf(char *s, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(s + *len, cap - *len, fmt, ap);
    va_end(ap);
    *len = k < 0 ? cap : *len + (size_t)k;
}

/* 1 when s is a canonical decimal in [0, world). */
int rally__jb_small_int(const char *s, int world, int *v)
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
    rally__jb_act(j, RALLY__JOB_CLOSE, m);
}

/* Rank r's newest incarnation registered from host: kept for observers when
 * the memory is there, never a failure. */
void rally__jb_keep_host(struct rally__job *j, int r, const char *host)
{
    char *h = strdup(host);
    if (h == NULL && j->rank_host[r] != NULL && strcmp(j->rank_host[r], host) == 0)
        return; /* the one it has is right */
    free(j->rank_host[r]);
    j->rank_host[r] = h;
}

/* --- phases ---------------------------------------------------------------- */

/* The one place the phase changes, with what each phase begins with:
 *
 *   JOINING -> STARTING      the world-th REGISTER: the first ASSIGN
 *   STARTING -> RUNNING      every rank READY: GO (the first one: went)
 *   any live -> ASSEMBLING   a failure: a new epoch, its deadline; the
 *                            recovery's clock starts with the first (it
 *                            stops when every rank is back in step after
 *                            a GO: rally__jb_in_step)
 *   ASSEMBLING -> STARTING   every rank back: the epoch's ASSIGN, the
 *                            wiring's own deadline
 *   RUNNING -> DONE          every rank finalized
 *   any live -> FAILED       the job's failure (fail_job)
 */
static void enter(struct rally__job *j, enum rally__job_phase to)
{
    j->phase = to;
    switch (to) {
    case RALLY__JOB_STARTING:
        j->nready = 0;
        /* the wiring of a recovery gets the whole start-up timeout from its
         * book on, however long the survivors took to rejoin */
        if (j->went) {
            j->epoch_deadline = j->startup_ms > 0 ? j->now + j->startup_ms : RALLY__NEVER;
            j->round_began = j->now;
        }
        break;
    case RALLY__JOB_RUNNING:
        j->go_at = j->now;
        j->went = 1;
        j->recovering = 0;
        break;
    case RALLY__JOB_ASSEMBLING:
        if (!j->recovering && !j->catching_up) { /* a failure while catching up: the same one */
            j->recovering = 1;
            j->failed_at_us = j->now_us;
        }
        j->nready = 0;
        j->round_began = j->now;
        j->epoch_deadline = j->startup_ms > 0 ? j->now + j->startup_ms : RALLY__NEVER;
        break;
    case RALLY__JOB_DONE:
        rally__jb_emit(j, RALLY__TEV_DONE, -1, NULL, NULL);
        break;
    default:
        break;
    }
}

void rally__jb_done(struct rally__job *j)
{
    enter(j, RALLY__JOB_DONE);
    for (struct rally__job_member *m = j->head, *next; m; m = next) {
        next = m->next;
        if (!m->joining)
            continue;
        m->joining = 0;
        j->njoining--;
        send_abort(j, m, RALLY_ESTATE, "the job finished before it could take this worker in");
        unlink_member(j, m);
        rally__jb_act(j, RALLY__JOB_REFUSE, m);
    }
}

/* --- job failure ----------------------------------------------------------- */

static void vfail_job(struct rally__job *j, int code, int rank, const char *fmt, va_list ap)
{
    if (!rally__jb_live(j))
        return;
    enter(j, RALLY__JOB_FAILED);
    j->code = code;
    j->failed_rank = rank;
    vsnprintf(j->sentence, sizeof j->sentence, fmt, ap);
    for (struct rally__job_member *m = j->head; m; m = m->next)
        send_abort(j, m, code, j->sentence);
    rally__jb_emit(j, RALLY__TEV_FAILED, rank, NULL, j->sentence);
}

void rally__jb_fail_job(struct rally__job *j, int code, int rank, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail_job(j, code, rank, fmt, ap);
    va_end(ap);
}

/* --- epochs ---------------------------------------------------------------- */

int rally__job_recoverable(const struct rally__job *j)
{
    return rally__jb_live(j) && j->went && !j->no_recovery && j->nfinal == 0;
}

/* 1 when rank r counts as there for the current epoch's ASSIGN. */
int rally__jb_present(const struct rally__job *j, int r)
{
    const struct rally__job_member *m = j->by_rank[r];
    return m != NULL && (m->assigned == 0 || m->rejoined == j->epoch);
}

/* Builds the address book from by_rank (every rank present); 0 or -1. */
static int make_book(struct rally__job *j, size_t *nbytes)
{
    size_t n = 0;
    for (int r = 0; r < j->world; r++)
        n += rally__msg_book_entry_nbytes(j->by_rank[r]->host, j->by_rank[r]->domain);
    if (RALLY__ASSIGN_HEAD + n + RALLY__ASSIGN_TAIL > RALLY__FRAME_MAX) {
        rally__jb_fail_job(
            j, RALLY_EINVAL, -1,
            "the address book of %d workers needs %zu bytes, over the %u-byte frame limit",
            j->world, n, RALLY__FRAME_MAX);
        return -1;
    }
    if (n > j->book_cap) {
        unsigned char *b = realloc(j->book, n);
        if (b == NULL) {
            rally__jb_fail_job(j, RALLY_ENOMEM, -1,
                               "the tracker ran out of memory for the address book");
            return -1;
        }
        j->book = b;
        j->book_cap = n;
    }
    struct rally__wbuf w = {j->book, 0, n, 0};
    for (int r = 0; r < j->world; r++)
        rally__msg_book_entry(&w, j->by_rank[r]->host, (uint16_t)j->by_rank[r]->listen_port,
                              j->incarnation[r], j->by_rank[r]->domain);
    *nbytes = w.len;
    return 0;
}

/* Sends ASSIGN for the current epoch to every rank (all present). */
void rally__jb_send_assign(struct rally__job *j)
{
    size_t nbook;
    if (make_book(j, &nbook) != 0)
        return;
    struct rally__job_act *a = rally__jb_act(j, RALLY__JOB_BOOK, NULL);
    if (a == NULL)
        return;
    a->body = j->book;
    a->nbytes = nbook;
    enter(j, RALLY__JOB_STARTING);
    /* On the wire the job's first ASSIGN says epoch 0 (proto.h): a worker
     * that gets a non-zero epoch knows it joined a running job. */
    unsigned char tail[RALLY__ASSIGN_TAIL];
    struct rally__wbuf tw = {tail, 0, sizeof tail, 0};
    if (j->members != j->members_said)
        rally__jb_resized(j);
    rally__msg_assign_tail(&tw, j->went ? j->epoch : 0, j->members, j->assign_flags);
    for (int r = 0; r < j->world; r++) {
        struct rally__job_member *m = j->by_rank[r];
        int fresh = m->assigned == 0;
        if (fresh)
            m->last_rx = j->now; /* its liveness is watched from here (rally__jb_watched()) */
        m->assigned = j->epoch;
        m->ready = 0;
        unsigned char h[RALLY__ASSIGN_HEAD];
        struct rally__wbuf hw = {h, 0, sizeof h, 0};
        rally__msg_assign_head(&hw, r, (uint32_t)j->world, j->incarnation[r]);
        if ((a = rally__jb_send_msg(j, m, RALLY__T_ASSIGN, h, hw.len)) != NULL) {
            a->with_book = 1;
            a->tail_nbytes = tw.len;
            a->tail_at = rally__jb_stash(j, tail, tw.len);
        }
        if (fresh)
            rally__jb_emit(j, RALLY__TEV_ASSIGNED, r, m->task_id, m->host);
    }
}

void rally__jb_maybe_assign(struct rally__job *j)
{
    if (j->phase != RALLY__JOB_ASSEMBLING)
        return;
    for (int r = 0; r < j->world; r++)
        if (!rally__jb_present(j, r))
            return;
    rally__jb_say(j, RALLY__TEV_PROGRESS, "epoch %u: every rank is back; sending the address book",
                  j->epoch);
    rally__jb_send_assign(j);
}

/* Starts the next epoch: RESET to every worker that holds an ASSIGN. */
void rally__jb_new_epoch(struct rally__job *j, const char *cause)
{
    j->epoch++;
    enter(j, RALLY__JOB_ASSEMBLING);
    unsigned char b[4 + 4 + RALLY__REASON_MAX];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_reset_put(&w, j->epoch, cause);
    for (int r = 0; r < j->world; r++) {
        struct rally__job_member *m = j->by_rank[r];
        if (m == NULL)
            continue;
        m->ready = 0;
        if (m->assigned != 0)
            rally__jb_send_msg(j, m, RALLY__T_RESET, b, w.len);
    }
    rally__jb_say(j, RALLY__TEV_PROGRESS, "epoch %u: %s; every rank must rejoin", j->epoch, cause);
    rally__jb_maybe_assign(j);
}

/* Closes rank r's connection (its incarnation is over) and forgets it. */
void rally__jb_fence(struct rally__job *j, int r)
{
    struct rally__job_member *m = j->by_rank[r];
    j->by_rank[r] = NULL;
    if (m != NULL)
        close_member(j, m);
}

/* Rank r failed for cause (a sentence without a final period).  Recovery
 * when it applies; otherwise the job fails with fatal (the sentence the
 * non-recovering tracker always used, or cause). */
void rally__jb_rank_failed(struct rally__job *j, int r, const char *cause, const char *fatal,
                           int disconnected)
{
    if (!rally__jb_live(j))
        return;
    rally__jb_fence(j, r);
    if (!rally__job_recoverable(j)) {
        rally__jb_fail_job(j, RALLY_EPEER, r, "%s", fatal ? fatal : cause);
        return;
    }
    /* The event names the epoch the failure starts. */
    struct rally__tracker_event ev = {.kind = RALLY__TEV_RANK_FAILED,
                                      .rank = r,
                                      .task_id = j->rank_task[r],
                                      .text = cause,
                                      .epoch = j->epoch + 1,
                                      .disconnected = disconnected};
    rally__jb_emit_ev(j, &ev);
    rally__jb_new_epoch(j, cause);
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
    if (m->state != M_REG || m->joining)
        rally__jb_say(j, RALLY__TEV_LOG, "dropping %s", why);
    if (m->joining) { /* it never was a rank: the job goes on */
        m->joining = 0;
        j->njoining--;
        close_member(j, m);
        return;
    }
    close_member(j, m);
    if (!registered)
        return;
    if (!lost) {
        rally__jb_fail_job(j, RALLY_EPROTO, -1, "%s", why);
    } else if (rank >= 0) {
        char cause[96], fatal[128];
        snprintf(cause, sizeof cause, "rank %d disconnected without finalizing", rank);
        snprintf(fatal, sizeof fatal, "%s (did it crash?)", cause);
        rally__jb_rank_failed(j, rank, cause, fatal, 1);
    } else {
        rally__jb_fail_job(
            j, RALLY_EPEER, -1,
            "the worker with task id '%s' on %s disconnected before every worker joined", task,
            host);
    }
}

void rally__jb_drop(struct rally__job *j, struct rally__job_member *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdrop(j, m, 0, fmt, ap);
    va_end(ap);
}

void rally__jb_lose(struct rally__job *j, struct rally__job_member *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdrop(j, m, 1, fmt, ap);
    va_end(ap);
}

/* Gives up on m after an ABORT that says why (a worker that sent a bad
 * REGISTER hears about it); the owner closes it once that is sent. */
void rally__jb_reject(struct rally__job *j, struct rally__job_member *m, int code, const char *fmt,
                      ...)
{
    char why[RALLY__ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (m->state == M_REG) { /* a registered worker's mistake is the job's */
        rally__jb_drop(j, m, "%s: %s", m->what, why);
        return;
    }
    if (j->phase != RALLY__JOB_FAILED || strcmp(why, j->sentence) != 0) /* said once */
        rally__jb_say(j, RALLY__TEV_LOG, "refusing %s: %s", m->what, why);
    send_abort(j, m, code, why);
    unlink_member(j, m);
    rally__jb_act(j, RALLY__JOB_REFUSE, m);
}

/* The membership changed and every rank is present: the owner hears how
 * many go on and from which version, the newest committed one a survivor
 * named in its REJOIN (the workers go back to the same one).  A survivor
 * that stood in finalize had every result: then the others finish as they
 * are (RALLY__ASSIGN_FINISHING), nothing is computed again. */
void rally__jb_resized(struct rally__job *j)
{
    j->members_said = j->members;
    struct rally__tracker_event ev = {
        .kind = RALLY__TEV_RESIZED, .rank = j->lost_rank, .task_id = j->lost_task};
    j->assign_flags = RALLY__ASSIGN_CHANGED;
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
    char text[160], then[96];
    if (j->lost_rank >= 0 && (j->assign_flags & RALLY__ASSIGN_FINISHING))
        snprintf(then, sizeof then, "the other %d workers finish (one was in finalize)", j->world);
    else
        snprintf(then, sizeof then, "going on with %d workers from version %u", j->world,
                 ev.version);
    if (j->lost_rank < 0) {
        snprintf(text, sizeof text, "taking in %d worker%s: %s", j->taken,
                 j->taken == 1 ? "" : "s", then);
    } else {
        snprintf(text, sizeof text, "rank %d lost for good: %s", j->lost_rank, then);
        ev.detail = then; /* for an owner that names the rank its own way */
    }
    ev.text = text;
    rally__jb_emit_ev(j, &ev);
}

/* Every rank is READY: GO; after a recovery, the job is back in step only
 * once every rank caught up with the furthest survivor (rally__jb_in_step). */
void rally__jb_go(struct rally__job *j)
{
    int recovered = j->recovering;
    enter(j, RALLY__JOB_RUNNING);
    j->assign_flags = 0; /* every worker has the change now */
    for (int k = 0; k < j->world; k++)
        if (j->by_rank[k]) {
            rally__jb_send_msg(j, j->by_rank[k], RALLY__T_GO, NULL, 0);
            if (j->njoining > 0) /* ask again: the last request may have been lost */
                rally__jb_send_msg(j, j->by_rank[k], RALLY__T_GROW, NULL, 0);
        }
    rally__jb_emit(j, RALLY__TEV_GO, -1, NULL, NULL);
    if (!recovered)
        return;
    /* the furthest survivor, the position every rank is to be back at */
    struct rally__tracker_event ev = {.kind = RALLY__TEV_RECOVERED, .rank = -1};
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
    j->back = ev;
    j->back_rank = best;
    j->catching_up = 1;
}

void rally__jb_in_step(struct rally__job *j, struct rally__job_member *m)
{
    m->in_step = j->epoch;
    for (int r = 0; r < j->world; r++)
        if (j->by_rank[r] != NULL && j->by_rank[r]->in_step != j->epoch)
            return;
    j->catching_up = 0;
    struct rally__tracker_event ev = j->back;
    int best = j->back_rank;
    ev.epoch = j->epoch;
    ev.seconds = (double)(j->now_us - j->failed_at_us) / 1e6;
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
    rally__jb_emit_ev(j, &ev);
}
