/*
 * job_frames.c — the tracker's job logic (job_int.h): rank assignment, and
 * what each frame a member sends does to the job.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracker/job_int.h"

/* --- rank assignment ------------------------------------------------------- */

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
        rally__jb_fail_job(j, RALLY_ENOMEM, -1, "the tracker ran out of memory assigning ranks");
        goto cleanup;
    }
    int k = 0;
    for (struct rally__job_member *m = j->head; m && k < world; m = m->next)
        if (m->state == M_REG)
            reg[k++] = m;
    /* Task ids are distinct when non-empty (REGISTER checks), so world
     * distinct integers in [0, world) are a permutation. */
    for (int i = 0; i < world && numeric; i++)
        numeric = rally__jb_small_int(reg[i]->task_id, world, &v);
    if (numeric)
        for (int i = 0; i < world; i++) {
            rally__jb_small_int(reg[i]->task_id, world, &v);
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
        rally__jb_keep_host(j, r, m->host);
        if (j->rank_task[r] == NULL) {
            rally__jb_fail_job(j, RALLY_ENOMEM, -1,
                               "the tracker ran out of memory assigning ranks");
            goto cleanup;
        }
    }
    rally__jb_send_assign(j);
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
    int joined = r < 0 ? rally__jb_join(j, m) : -1;
    if (joined == 0)
        return;
    if (joined == -2) {
        rally__jb_reject(j, m, RALLY_ESTATE,
                         j->went ? "the job is finishing: it takes no worker in"
                                 : "the job has not started: it takes workers in once it runs");
        return;
    }
    if (r < 0) {
        rally__jb_reject(
            j, m, RALLY_ESTATE,
            task[0] ? "the job already has all %d workers and none has task id '%s'"
                    : "the job already has all %d workers%s (a restarted worker needs its task id)",
            j->world, task);
        return;
    }
    if (want >= 0 && want != r) {
        rally__jb_reject(j, m, RALLY_ECONFIG, "task id '%s' is rank %d, not rank %d", task, r,
                         want);
        return;
    }
    if (j->rank_final[r]) {
        rally__jb_reject(j, m, RALLY_ESTATE, "rank %d (task id '%s') already finalized", r, task);
        return;
    }
    if (!rally__job_recoverable(j)) {
        if (j->no_recovery || !j->went)
            rally__jb_reject(j, m, RALLY_ESTATE, "the job already has all %d workers", j->world);
        else
            rally__jb_reject(j, m, RALLY_ESTATE, "the job is finishing: rank %d cannot rejoin it",
                             r);
        return;
    }
    if (j->by_rank[r] != NULL) { /* the old incarnation is stale: fence it first */
        char cause[96];
        snprintf(cause, sizeof cause, "rank %d replaced by a new incarnation", r);
        rally__jb_rank_failed(j, r, cause, NULL, 0);
    }
    if (!rally__jb_live(j)) {
        rally__jb_reject(j, m, j->code, "%s", j->sentence);
        return;
    }
    j->incarnation[r]++;
    rally__jb_keep_host(j, r, m->host);
    m->rank = r;
    m->state = M_REG;
    m->arrival = ++j->arrivals;
    m->last_rx = j->now;
    m->pos_since = j->now;
    j->nregistered++;
    j->by_rank[r] = m;
    rally__jb_act(j, RALLY__JOB_ADMIT, m);
    snprintf(m->what, sizeof m->what, "rank %d (on %s)", r, m->peer);
    rally__jb_say(j, RALLY__TEV_PROGRESS, "rank %d registered again (incarnation %u) for epoch %u",
                  r, j->incarnation[r], j->epoch);
    rally__jb_maybe_assign(j);
}

static void on_register(struct rally__job *j, struct rally__job_member *m,
                        const unsigned char *body, size_t n)
{
    struct rally__msg_register g;
    if (rally__msg_register_get(body, n, &g) != 0) {
        rally__jb_drop(j, m, "%s: malformed REGISTER (%zu bytes)", m->what, n);
        return;
    }
    if (j->phase == RALLY__JOB_FAILED) {
        rally__jb_reject(j, m, j->code, "%s", j->sentence);
        return;
    }
    if (j->phase == RALLY__JOB_DONE) {
        rally__jb_reject(j, m, RALLY_ESTATE, "the job already has all %d workers", j->world);
        return;
    }
    if (g.world_hint != 0 && g.world_hint != (uint32_t)j->world) {
        rally__jb_reject(j, m, RALLY_ECONFIG, "the worker expects %u workers, this job has %d",
                         g.world_hint, j->world);
        return;
    }
    if (g.want_rank < -1 || g.want_rank >= j->world) {
        rally__jb_reject(j, m, RALLY_ECONFIG, "the worker asks for rank %d of a job of %d",
                         (int)g.want_rank, j->world);
        return;
    }
    snprintf(m->task_id, sizeof m->task_id, "%s", g.task_id);
    snprintf(m->host, sizeof m->host, "%s", g.listen_host[0] ? g.listen_host : m->peer);
    snprintf(m->domain, sizeof m->domain, "%s", g.domain);
    m->listen_port = g.listen_port;
    if (j->phase != RALLY__JOB_JOINING) {
        on_reregister(j, m, g.task_id, g.want_rank);
        return;
    }
    for (struct rally__job_member *o = j->head; g.task_id[0] && o; o = o->next) {
        if (o != m && o->state == M_REG && strcmp(o->task_id, g.task_id) == 0) {
            rally__jb_reject(j, m, RALLY_ECONFIG, "task id '%s' is already registered by %s",
                             g.task_id, o->peer);
            return;
        }
    }
    m->arrival = ++j->arrivals;
    m->state = M_REG;
    m->last_rx = j->now;
    m->pos_since = j->now;
    rally__jb_act(j, RALLY__JOB_ADMIT, m);
    if (++j->nregistered == j->world)
        assign(j);
}

static void on_ready(struct rally__job *j, struct rally__job_member *m, const unsigned char *body,
                     size_t n)
{
    if (rally__msg_empty_get(body, n) != 0 || m->rank < 0 || m->assigned == 0) {
        rally__jb_drop(j, m, "%s: unexpected READY (%s)", m->what,
                       n ? "with a body" : "before ASSIGN");
        return;
    }
    if (m->assigned != j->epoch || j->phase != RALLY__JOB_STARTING)
        return; /* for an epoch that has ended: a RESET is on its way to it */
    if (m->ready) {
        rally__jb_drop(j, m, "%s: unexpected READY (twice)", m->what);
        return;
    }
    m->ready = 1;
    if (++j->nready == j->world)
        rally__jb_go(j);
}

static void on_rejoin(struct rally__job *j, struct rally__job_member *m, const unsigned char *body,
                      size_t n)
{
    uint32_t epoch, version;
    uint64_t position;
    if (rally__msg_rejoin_get(body, n, &epoch, &position, &version) != 0) {
        rally__jb_drop(j, m, "%s: malformed REJOIN (%zu bytes)", m->what, n);
        return;
    }
    if (m->rank < 0 || m->assigned == 0 || epoch > j->epoch || epoch <= m->assigned) {
        rally__jb_drop(
            j, m, "%s: REJOIN for epoch %u, which it was never reset to (epoch %u, its ASSIGN %u)",
            m->what, epoch, j->epoch, m->assigned);
        return;
    }
    if (epoch < j->epoch || m->rejoined == epoch)
        return; /* a newer RESET is on its way to it, or a repeat */
    m->rejoined = epoch;
    m->position = position;
    m->version = version;
    rally__jb_maybe_assign(j);
}

/* Fails the job on m's own report (its words, msg), the sentence made of
 * fmt: the job keeps the words and the rank as fields, so that its owner
 * reads them rather than the sentence (a launcher leaves out the workers'
 * lines that repeat them). */
static void fail_reported(struct rally__job *j, int code, const struct rally__job_member *m,
                          const char *msg, const char *fmt, ...) RALLY__PRINTF(5, 6);
static void fail_reported(struct rally__job *j, int code, const struct rally__job_member *m,
                          const char *msg, const char *fmt, ...)
{
    if (!rally__jb_live(j))
        return; /* the first failure stands */
    char sentence[RALLY__ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sentence, sizeof sentence, fmt, ap);
    va_end(ap);
    snprintf(j->reported, sizeof j->reported, "%s", msg);
    j->reported_rank = m->rank;
    rally__jb_fail_job(j, code, -1, "%s", sentence);
}

static void on_link_failed(struct rally__job *j, struct rally__job_member *m,
                           const unsigned char *body, size_t n)
{
    char msg[RALLY__ERR_MSG_MAX];
    uint32_t epoch;
    if (rally__msg_link_failed_get(body, n, &epoch, msg, sizeof msg) != 0) {
        rally__jb_drop(j, m, "%s: malformed LINK_FAILED (%zu bytes)", m->what, n);
        return;
    }
    if (epoch == 0) /* the epoch of the job's first ASSIGN, as the worker knows it */
        epoch = 1;
    if (m->rank < 0 || epoch > j->epoch) {
        rally__jb_drop(j, m, "%s: LINK_FAILED for epoch %u (the tracker is in epoch %u%s)", m->what,
                       epoch, j->epoch, m->rank < 0 ? ", and it has no rank yet" : "");
        return;
    }
    if (epoch < j->epoch || j->phase == RALLY__JOB_ASSEMBLING || m->assigned != j->epoch ||
        !rally__jb_live(j)) {
        rally__jb_say(j, RALLY__TEV_LOG, "ignoring rank %d's report for epoch %u (now %u): %s",
                      m->rank, epoch, j->epoch, msg);
        return;
    }
    char cause[RALLY__ERR_MSG_MAX + 32];
    snprintf(cause, sizeof cause, "rank %d reported: %s", m->rank, msg);
    if (!rally__job_recoverable(j)) {
        fail_reported(j, RALLY_EPEER, m, msg, "%s", cause);
        return;
    }
    rally__jb_new_epoch(j, cause);
}

static void on_print(struct rally__job *j, struct rally__job_member *m, const unsigned char *body,
                     size_t n)
{
    /* the message goes straight to the arena: no buffer of its own */
    size_t at = rally__jb_stash(j, NULL, RALLY__PRINT_MAX + 1);
    if (at == NONE) {
        rally__jb_drop(j, m, "%s: out of memory for a PRINT", m->what);
        return;
    }
    char *msg = (char *)j->arena + at;
    if (rally__msg_print_get(body, n, msg, RALLY__PRINT_MAX + 1) != 0) {
        j->arena_len = at;
        rally__jb_drop(j, m, "%s: malformed PRINT (%zu bytes)", m->what, n);
        return;
    }
    j->arena_len = at + strlen(msg) + 1;
    struct rally__job_act *a = rally__jb_act(j, RALLY__JOB_PRINT, m);
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
        rally__jb_drop(j, m, "%s: malformed ERROR (%zu bytes)", m->what, n);
        return;
    }
    /* a loss fails the job as RALLY_EPEER; its owner hears that it was one */
    if (code == RALLY__ELOST && rally__jb_live(j))
        j->lost = 1;
    if (code == 0 || code > RALLY_ESTATE)
        code = RALLY_EPEER;
    /* a mismatch is the job's, not the reporter's: its sentence names the
     * odd rank out (util/digest.c) */
    if (m->rank >= 0 && code == RALLY_EMISMATCH)
        fail_reported(j, (int)code, m, msg, "rank %d reported: %s", m->rank, msg);
    else if (m->rank >= 0)
        fail_reported(j, (int)code, m, msg, "rank %d failed: %s", m->rank, msg);
    else
        fail_reported(j, (int)code, m, msg, "the worker with task id '%s' failed: %s", m->task_id,
                      msg);
}

static void on_input(struct rally__job *j, struct rally__job_member *m, const unsigned char *body,
                     size_t n)
{
    char scheme[RALLY__SCHEME_MAX];
    uint64_t fp;
    if (rally__msg_input_get(body, n, scheme, sizeof scheme, &fp) != 0 || m->rank < 0) {
        rally__jb_drop(j, m, "%s: %s INPUT (%zu bytes)", m->what,
                       m->rank < 0 ? "unranked" : "malformed", n);
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
        if (rally__jb_live(j))
            rally__jb_send_msg(j, m, RALLY__T_INPUT_OK, NULL, 0);
        return;
    }
    rally__jb_fail_job(
        j, RALLY_ECONFIG, -1,
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
        rally__jb_drop(j, m, "%s: unexpected SHUTDOWN (%s)", m->what,
                       n              ? "with a body"
                       : m->finalized ? "twice"
                                      : "before ASSIGN");
        return;
    }
    if (j->recovering && rally__jb_live(j)) {
        rally__jb_fail_job(
            j, RALLY_EPEER, m->rank,
            "rank %d finalized while the job was recovering from a failure (epoch %u)", m->rank,
            j->epoch);
        return;
    }
    m->finalized = 1;
    j->rank_final[m->rank] = 1;
    rally__jb_send_msg(j, m, RALLY__T_BYE, NULL, 0);
    rally__jb_emit(j, RALLY__TEV_FINALIZED, m->rank, m->task_id, NULL);
    if (++j->nfinal == j->world && rally__jb_live(j))
        rally__jb_done(j);
}

/* The job committed a checkpoint whose flags ask to take the waiting
 * workers in: the first word of the epoch does it, later ones are late. */
static void on_grow_ready(struct rally__job *j, struct rally__job_member *m,
                          const unsigned char *body, size_t n)
{
    uint32_t epoch;
    if (rally__msg_u32_get(body, n, &epoch) != 0 || m->rank < 0) {
        rally__jb_drop(j, m, "%s: %s GROW_READY (%zu bytes)", m->what,
                       m->rank < 0 ? "unranked" : "malformed", n);
        return;
    }
    if (epoch == 0) /* the epoch of the job's first ASSIGN, as the worker knows it */
        epoch = 1;
    if (epoch == j->epoch && j->phase == RALLY__JOB_RUNNING)
        rally__jb_take_in(j);
}

/* A rank is back in step after the epoch's recovery (every worker reached
 * the same position): the recovery is over once every rank says so.  One
 * for another epoch, or after the job failed, is late. */
static void on_in_step(struct rally__job *j, struct rally__job_member *m,
                       const unsigned char *body, size_t n)
{
    uint32_t epoch;
    if (rally__msg_u32_get(body, n, &epoch) != 0 || m->rank < 0) {
        rally__jb_drop(j, m, "%s: %s IN_STEP (%zu bytes)", m->what,
                       m->rank < 0 ? "unranked" : "malformed", n);
        return;
    }
    if (epoch == j->epoch && j->phase == RALLY__JOB_RUNNING && j->catching_up)
        rally__jb_in_step(j, m);
}

/* A heartbeat: the worker lives, and says where it stands. */
static void on_heartbeat(struct rally__job *j, struct rally__job_member *m,
                         const unsigned char *body, size_t n)
{
    struct rally__msg_heartbeat h;
    if (rally__msg_heartbeat_get(body, n, &h) != 0) {
        rally__jb_drop(j, m, "%s: a HEARTBEAT with a malformed %zu-byte body", m->what, n);
        return;
    }
    m->heartbeats = 1;
    if (h.has_position) { /* the newest counts (a restarted worker counts from 0 again) */
        m->calls = h.calls;
        m->nbytes = h.nbytes;
        m->win = h.win;
        m->win_wait_ms = h.win_wait_ms;
        m->win_span_ms = h.win_span_ms;
    }
    if (!h.has_position || (h.position == m->pos && h.waiting == m->pos_waiting))
        return; /* it stands where it stood: since stays */
    m->pos = h.position;
    m->pos_waiting = h.waiting;
    snprintf(m->pos_what, sizeof m->pos_what, "%s", h.what);
    int64_t ago = h.for_ms > (uint64_t)INT32_MAX ? INT32_MAX : (int64_t)h.for_ms;
    m->pos_since = j->now - ago;
}

/* A REPORT (rally_report, a snapshot's fate): for the owner's observers
 * only, the job does nothing with it.  From a worker without a rank (one
 * waiting to be taken in cannot have called anything) it is a slip. */
static void on_report(struct rally__job *j, struct rally__job_member *m, const unsigned char *body,
                      size_t n)
{
    struct rally__msg_report g;
    if (rally__msg_report_get(body, n, &g) != 0 || m->rank < 0) {
        rally__jb_drop(j, m, "%s: %s REPORT (%zu bytes)", m->what,
                       m->rank < 0 ? "unranked" : "malformed", n);
        return;
    }
    struct rally__tracker_event ev = {.kind = RALLY__TEV_REPORT,
                                      .rank = m->rank,
                                      .task_id = m->task_id,
                                      .text = g.text,
                                      .version =
                                          g.version > UINT32_MAX ? UINT32_MAX : (uint32_t)g.version,
                                      .report = g.kind,
                                      .key = g.key,
                                      .value = g.value,
                                      .nbytes = g.nbytes};
    rally__jb_emit_ev(j, &ev);
}

void rally__jb_on_frame(struct rally__job *j, struct rally__job_member *m, uint16_t type,
                        const unsigned char *body, size_t n)
{
    if (m->state == M_NONE)
        return;
    m->last_rx = j->now;
    if (m->state == M_AUTHED) {
        if (type == RALLY__T_REGISTER)
            on_register(j, m, body, n);
        else
            rally__jb_drop(j, m, "%s: frame type %u before REGISTER", m->what, type);
        return;
    }
    switch (type) {
    case RALLY__T_READY:
        on_ready(j, m, body, n);
        return;
    case RALLY__T_HEARTBEAT:
        on_heartbeat(j, m, body, n);
        return;
    case RALLY__T_REJOIN:
        on_rejoin(j, m, body, n);
        return;
    case RALLY__T_LINK_FAILED:
        on_link_failed(j, m, body, n);
        return;
    case RALLY__T_PRINT:
        on_print(j, m, body, n);
        return;
    case RALLY__T_ERROR:
        on_error(j, m, body, n);
        return;
    case RALLY__T_INPUT:
        on_input(j, m, body, n);
        return;
    case RALLY__T_SHUTDOWN:
        on_shutdown(j, m, body, n);
        return;
    case RALLY__T_GROW_READY:
        on_grow_ready(j, m, body, n);
        return;
    case RALLY__T_REPORT:
        on_report(j, m, body, n);
        return;
    case RALLY__T_IN_STEP:
        on_in_step(j, m, body, n);
        return;
    case RALLY__T_REGISTER:
        rally__jb_drop(j, m, "%s: REGISTER twice", m->what);
        return;
    default:
        rally__jb_drop(j, m, "%s: unexpected frame type %u", m->what, type);
        return;
    }
}
