/*
 * job.c — the tracker's job logic as a pure state machine (job.h): ranks,
 * epochs, readiness, recovery and failure, decided from events alone.  This
 * file is its interface: it takes each event to the file that handles it,
 * the frames to job_frames.c, the clocks to job_watch.c, an elastic job's
 * changes of its workers to job_members.c; all of them call down into
 * job_core.c (job_int.h).
 *
 * The members the job knows sit on a list (head..tail, in the order they
 * authenticated); registered ones with a rank also sit in by_rank.  A step
 * appends actions to j->acts; strings and bodies go to one growing arena
 * whose offsets become pointers when the step ends, so neither is
 * allocated afresh in the steady state.  A failing allocation while
 * recording an action fails the job (j->oom), never the process.
 *
 * Recovery: after the first GO a lost worker is a rank failure
 * (rally__jb_rank_failed): its member is fenced (CLOSE), the epoch grows, RESET goes
 * to every worker that holds an ASSIGN, and the phase is ASSEMBLING until
 * every rank is present (rally__jb_present(): rejoined this epoch, or registered again
 * and waiting for its first ASSIGN); then ASSIGN (STARTING) and GO (RUNNING)
 * once every rank is READY.  A protocol violation stays fatal.
 *
 * Inputs: the first incarnation of a rank to send INPUT sets what the
 * rank's input is; a later incarnation whose INPUT differs read other data
 * than the results the survivors hold were computed from, so the job fails
 * (RALLY_ECONFIG) naming the rank and both inputs.
 */
#include "tracker/job_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"

/* The launcher saw rank's process end (RALLY__JOB_EV_DIED). */
static void died(struct rally__job *j, int rank, const char *cause)
{
    if (rank < 0 || rank >= j->world || j->by_rank[rank] == NULL || !rally__jb_live(j))
        return;
    char why[RALLY__ERR_MSG_MAX];
    snprintf(why, sizeof why, "the launcher reported rank %d dead: %s", rank, cause);
    if (j->by_rank[rank]->finalized) { /* finished its part; only the connection is left */
        rally__jb_fence(j, rank);
        return;
    }
    rally__jb_rank_failed(j, rank, why, NULL, 0);
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
    case RALLY__JOB_EV_FRAME:
        rally__jb_on_frame(j, ev->m, ev->type, ev->body, ev->nbytes);
        break;
    case RALLY__JOB_EV_LOST:
        rally__jb_lose(j, ev->m, "%s", ev->text ? ev->text : "");
        break;
    case RALLY__JOB_EV_DROP:
        rally__jb_drop(j, ev->m, "%s", ev->text ? ev->text : "");
        break;
    case RALLY__JOB_EV_DIED:
        died(j, ev->rank, ev->text ? ev->text : "");
        break;
    case RALLY__JOB_EV_GONE:
        rally__jb_gone(j, ev->rank, ev->text ? ev->text : "");
        break;
    case RALLY__JOB_EV_ABORT:
        rally__jb_fail_job(j, ev->code, -1, "%s", ev->text ? ev->text : "");
        break;
    case RALLY__JOB_EV_TICK:
        rally__jb_tick(j);
        break;
    default:
        break;
    }
    if (j->oom) {
        /* an action could not be recorded: what is recorded stands, and the
         * job cannot go on without the rest */
        j->oom = 0;
        rally__jb_fail_job(j, RALLY_ENOMEM, -1, "the tracker ran out of memory");
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
        if (a->key_at != NONE)
            a->ev.key = (const char *)resolve(j, a->key_at);
        if (a->detail_at != NONE)
            a->ev.detail = (const char *)resolve(j, a->detail_at);
        if (a->ev.text == NULL)
            a->ev.text = "";
        if (a->ev.task_id == NULL)
            a->ev.task_id = "";
        if (a->ev.key == NULL)
            a->ev.key = "";
        if (a->ev.detail == NULL)
            a->ev.detail = "";
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
    if (rally__jb_live(j) && j->phase != RALLY__JOB_RUNNING) {
        int64_t x = j->went ? j->epoch_deadline : j->startup_deadline;
        if (x < d)
            d = x;
    }
    for (const struct rally__job_member *m = j->head; m; m = m->next)
        if (rally__jb_watched(j, m) && m->last_rx + j->heartbeat_ms < d)
            d = m->last_rx + j->heartbeat_ms;
    int64_t p = rally__jb_progress_deadline(j);
    return p < d ? p : d;
}

enum rally__job_phase rally__job_phase(const struct rally__job *j)
{
    return j->phase;
}

int rally__job_rank_info(const struct rally__job *j, int rank, struct rally__tracker_rank *out)
{
    memset(out, 0, sizeof *out);
    if (rank < 0 || rank >= j->world)
        return RALLY_EINVAL;
    const struct rally__job_member *m = j->by_rank[rank];
    out->finalized = j->rank_final[rank] != 0;
    out->incarnation = j->incarnation[rank];
    snprintf(out->task_id, sizeof out->task_id, "%s", j->rank_task[rank] ? j->rank_task[rank] : "");
    snprintf(out->host, sizeof out->host, "%s", j->rank_host[rank] ? j->rank_host[rank] : "");
    if (m == NULL || m->state != M_REG)
        return RALLY_OK;
    out->present = 1;
    snprintf(out->host, sizeof out->host, "%s", m->host);
    snprintf(out->task_id, sizeof out->task_id, "%s", m->task_id);
    out->finalized |= m->finalized;
    out->heartbeats = m->heartbeats;
    out->last_rx_ms = m->last_rx;
    out->position = m->pos;
    out->waiting = m->pos_waiting;
    snprintf(out->what, sizeof out->what, "%s", m->pos_what);
    out->since_ms = m->pos_since;
    out->calls = m->calls;
    out->nbytes = m->nbytes;
    out->win = m->win;
    out->win_wait_ms = m->win_wait_ms;
    out->win_span_ms = m->win_span_ms;
    return RALLY_OK;
}

const char *rally__job_sentence(const struct rally__job *j, int *rank)
{
    if (rank)
        *rank = j->failed_rank;
    return j->sentence;
}

const char *rally__job_reported(const struct rally__job *j, int *rank)
{
    if (rank)
        *rank = j->reported_rank;
    return j->reported;
}

int rally__job_code(const struct rally__job *j)
{
    return j->code;
}

int rally__job_lost(const struct rally__job *j)
{
    return j->lost;
}

uint32_t rally__job_epoch(const struct rally__job *j)
{
    return j->epoch;
}

void rally__job_set_recovery(struct rally__job *j, int on)
{
    j->no_recovery = !on;
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

void rally__job_no_restart(struct rally__job *j, int rank)
{
    if (rank >= 0 && rank < j->world)
        j->no_restart[rank] = 1;
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
        (j->rank_host = calloc(w, sizeof *j->rank_host)) == NULL ||
        (j->rank_final = calloc(w, 1)) == NULL || (j->no_restart = calloc(w, 1)) == NULL ||
        (j->input = calloc(w, sizeof *j->input)) == NULL) {
        rally__fail(e, RALLY_ENOMEM, "out of memory creating the tracker");
        goto cleanup;
    }
    j->world = j->max_world = o->world;
    j->startup_ms = o->startup_timeout_ms;
    j->phase = RALLY__JOB_JOINING;
    j->failed_rank = -1;
    j->reported_rank = -1;
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
    for (int r = 0; j->rank_host && r < j->world; r++)
        free(j->rank_host[r]);
    free(j->rank_host);
    free(j->rank_final);
    free(j->no_restart);
    free(j->input);
    free(j->book);
    free(j->acts);
    free(j->arena);
    free(j);
}
