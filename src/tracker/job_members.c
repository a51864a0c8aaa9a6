/*
 * job_members.c — the tracker's job logic (job_int.h) for an elastic job
 * whose workers change (docs/recovery.md, "Elastic jobs"): a rank given up
 * for good and the ranks above it moved down, a worker with a new task id
 * waiting and taken in at the end, and the tables' room (the RESIZED event
 * the owner hears once every rank of the new world is there is in
 * job_core.c: an ASSIGN sends it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracker/job_int.h"

/* Drops rank r from the job: the ranks above it move down one, so the
 * survivors keep their order (docs/recovery.md).  Every rank reads its
 * shard anew for the new world, so the input each names next counts. */
static void drop_rank(struct rally__job *j, int r)
{
    snprintf(j->lost_task, sizeof j->lost_task, "%s", j->rank_task[r] ? j->rank_task[r] : "");
    free(j->rank_task[r]);
    free(j->rank_host[r]);
    int above = j->world - r - 1;
    memmove(j->by_rank + r, j->by_rank + r + 1, (size_t)above * sizeof *j->by_rank);
    memmove(j->incarnation + r, j->incarnation + r + 1, (size_t)above * sizeof *j->incarnation);
    memmove(j->rank_task + r, j->rank_task + r + 1, (size_t)above * sizeof *j->rank_task);
    memmove(j->rank_host + r, j->rank_host + r + 1, (size_t)above * sizeof *j->rank_host);
    memmove(j->rank_final + r, j->rank_final + r + 1, (size_t)above);
    memmove(j->no_restart + r, j->no_restart + r + 1, (size_t)above);
    j->world--;
    j->by_rank[j->world] = NULL;
    j->rank_task[j->world] = NULL;
    j->rank_host[j->world] = NULL;
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

/* The owner gave up on rank r (its restarts are spent, its host is gone):
 * an elastic job goes on without it from the newest checkpoint, while at
 * least min_world ranks are left; any other job fails. */
void rally__jb_gone(struct rally__job *j, int r, const char *cause)
{
    if (r < 0 || r >= j->world || !rally__jb_live(j))
        return;
    char as[RALLY__TASK_MAX + 16] = "";
    int v;
    if (j->rank_task[r] && (!rally__jb_small_int(j->rank_task[r], RALLY__WORLD_MAX, &v) || v != r))
        snprintf(as, sizeof as, " (task id %s)", j->rank_task[r]);
    if (j->min_world == 0 || !rally__job_recoverable(j)) {
        rally__jb_fail_job(j, RALLY_EPEER, r, "rank %d%s lost for good: %s", r, as, cause);
        return;
    }
    if (j->world - 1 < j->min_world) {
        rally__jb_fail_job(
            j, RALLY_EPEER, r,
            "rank %d%s lost for good (%s): going on would leave %d worker%s, fewer than "
            "the minimum of %d",
            r, as, cause, j->world - 1, j->world == 2 ? "" : "s", j->min_world);
        return;
    }
    rally__jb_fence(j, r);
    char why[RALLY__ERR_MSG_MAX];
    snprintf(why, sizeof why, "rank %d%s lost for good (%s)", r, as, cause);
    drop_rank(j, r);
    rally__jb_new_epoch(j, why);
}

int rally__jb_join(struct rally__job *j, struct rally__job_member *m)
{
    if (!m->task_id[0] || j->world + j->njoining >= j->max_world)
        return -1;
    if (!rally__job_recoverable(j))
        return -2;
    for (struct rally__job_member *o = j->head; o; o = o->next)
        if (o != m && o->joining && strcmp(o->task_id, m->task_id) == 0)
            return -1;
    m->joining = 1;
    m->state = M_REG;
    m->arrival = ++j->arrivals;
    m->last_rx = j->now;
    m->pos_since = j->now;
    j->nregistered++;
    j->njoining++;
    rally__jb_act(j, RALLY__JOB_ADMIT, m);
    snprintf(m->what, sizeof m->what, "the worker with task id '%.40s' (on %.200s)", m->task_id,
             m->peer);
    rally__jb_say(j, RALLY__TEV_PROGRESS,
                  "the worker with task id '%s' waits to join: it is taken in at a checkpoint",
                  m->task_id);
    for (int r = 0; r < j->world; r++)
        if (j->by_rank[r] && j->by_rank[r]->assigned != 0)
            rally__jb_send_msg(j, j->by_rank[r], RALLY__T_GROW, NULL, 0);
    return 0;
}

void rally__jb_take_in(struct rally__job *j)
{
    int n = 0;
    for (struct rally__job_member *m = j->head; m && j->world < j->max_world; m = m->next) {
        if (!m->joining)
            continue;
        int r = j->world++;
        m->joining = 0;
        j->njoining--;
        m->rank = r;
        j->by_rank[r] = m;
        j->incarnation[r] = 1;
        j->rank_final[r] = 0;
        j->no_restart[r] = 0;
        rally__jb_keep_host(j, r, m->host);
        if ((j->rank_task[r] = strdup(m->task_id)) == NULL) {
            rally__jb_fail_job(j, RALLY_ENOMEM, -1,
                               "the tracker ran out of memory taking a worker in");
            return;
        }
        snprintf(m->what, sizeof m->what, "rank %d (on %s)", r, m->peer);
        n++;
    }
    char why[96];
    if (n > 0) {
        memset(j->input, 0, (size_t)j->world * sizeof *j->input); /* new shards */
        j->members++;
        j->lost_rank = -1;
        j->lost_task[0] = '\0';
        j->taken = n;
        snprintf(why, sizeof why, "taking in %d worker%s", n, n == 1 ? "" : "s");
    } else { /* it went away meanwhile: the workers wait for a RESET all the same */
        snprintf(why, sizeof why, "no worker waits to be taken in any more");
    }
    rally__jb_new_epoch(j, why);
}

int rally__job_set_max_world(struct rally__job *j, int max_world)
{
    if (max_world <= j->max_world)
        return RALLY_OK;
    size_t w = (size_t)max_world, old = (size_t)j->max_world;
    struct rally__job_member **b = realloc(j->by_rank, w * sizeof *b);
    if (b != NULL)
        j->by_rank = b;
    uint32_t *inc = b ? realloc(j->incarnation, w * sizeof *inc) : NULL;
    if (inc != NULL)
        j->incarnation = inc;
    char **task = inc ? realloc(j->rank_task, w * sizeof *task) : NULL;
    if (task != NULL)
        j->rank_task = task;
    char **host = task ? realloc(j->rank_host, w * sizeof *host) : NULL;
    if (host != NULL)
        j->rank_host = host;
    char *fin = host ? realloc(j->rank_final, w) : NULL;
    if (fin != NULL)
        j->rank_final = fin;
    char *nr = fin ? realloc(j->no_restart, w) : NULL;
    if (nr != NULL)
        j->no_restart = nr;
    struct rank_input *in = nr ? realloc(j->input, w * sizeof *in) : NULL;
    if (in == NULL)
        return RALLY_ENOMEM;
    j->input = in;
    memset(j->by_rank + old, 0, (w - old) * sizeof *b);
    memset(j->incarnation + old, 0, (w - old) * sizeof *inc);
    memset(j->rank_task + old, 0, (w - old) * sizeof *task);
    memset(j->rank_host + old, 0, (w - old) * sizeof *host);
    memset(j->rank_final + old, 0, w - old);
    memset(j->no_restart + old, 0, w - old);
    memset(j->input + old, 0, (w - old) * sizeof *in);
    j->max_world = max_world;
    return RALLY_OK;
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
