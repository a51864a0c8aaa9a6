/*
 * policy.c — decides what rally-run does about each worker death, signal
 * and tracker verdict, and what it reports at the end (policy.h).
 */
#include "policy.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tracker/server.h"
#include "util/clock.h"

struct rank_state {
    int running;   /* a process holds the rank */
    int finalized; /* the tracker saw its SHUTDOWN */
    int failed;
    char why[512]; /* how it failed, "" when it did not */
    int deaths, restarts;
    int64_t fence_kill_at; /* the tracker fenced it: SIGKILL then (RALLY__NEVER: no) */
    char fenced[256];      /* why the tracker fenced it, "" when it did not */
    int fenced_own;        /* ... for its own connection closing (its exit, as the tracker saw it) */
    int fence_killed;      /* that SIGKILL went out */
    char slow[200];        /* rally__launch_policy_slow's why: its kill gives it up; "" none */
    int dropped;           /* given up for good: the job went on without it */
    int joining;           /* launched to join; the tracker has not assigned it yet */
    int outside;           /* it ended before the job took it in: never one of its ranks */
    int status;            /* rally-run's exit status when its failure is the verdict */
    char host[256];        /* where it runs: "" on this host (the lines name no host) */
    char cause[320];       /* its newest death's cause ("killed by signal 9"), for observers */
    int unstarted;         /* a joiner that could not be started: its slot goes back */
};

struct rally__launch_policy {
    int world, max_restarts; /* world: the slots in use (ranks launched) */
    int cap;                 /* ... and the room for them */
    int64_t grace_ms;
    int ndeaths, nrecoveries, nrestarts;
    int nrecovered, unrecovered; /* deaths followed by a recovery; deaths since the last */
    int job_restarts;            /* earlier attempts of the job (rally__launch_policy_carry) */
    int first;                   /* the first failed rank, -1 */
    int tracker_first;           /* the tracker failed before any rank did */
    int stop_sig;                /* the SIGINT/SIGTERM we got, 0 */
    char preempted[600];         /* stopped after the snapshot it names was committed, "" */
    int64_t kill_at;             /* SIGKILL to all then (RALLY__NEVER: no) */
    int elastic;                 /* a rank with no restart left is given up, not fatal */
    int world_now, ndropped;     /* the ranks now, and how many were given up */
    int world0;                  /* the ranks launched at the start */
    struct rank_state *rank;
};

int rally__launch_policy_new(struct rally__launch_policy **out, int world, int slots,
                             int max_restarts, int64_t grace_ms)
{
    struct rally__launch_policy *pol = calloc(1, sizeof *pol);
    if (slots < world)
        slots = world;
    if (pol == NULL || (pol->rank = calloc((size_t)slots, sizeof *pol->rank)) == NULL) {
        free(pol);
        return -1;
    }
    pol->cap = slots;
    pol->world = pol->world_now = pol->world0 = world;
    pol->max_restarts = max_restarts;
    pol->grace_ms = grace_ms;
    pol->first = -1;
    pol->kill_at = RALLY__NEVER;
    for (int i = 0; i < slots; i++) {
        pol->rank[i].fence_kill_at = RALLY__NEVER;
        pol->rank[i].status = 1;
    }
    *out = pol;
    return 0;
}

void rally__launch_policy_free(struct rally__launch_policy *pol)
{
    if (pol == NULL)
        return;
    free(pol->rank);
    free(pol);
}

void rally__launch_policy_elastic(struct rally__launch_policy *pol, int on)
{
    pol->elastic = on != 0;
}

int rally__launch_policy_add(struct rally__launch_policy *pol, int max_workers)
{
    int waiting = 0;
    for (int i = 0; i < pol->world; i++)
        waiting += pol->rank[i].joining;
    if (pol->world == pol->cap || pol->world_now + waiting >= max_workers || pol->stop_sig ||
        pol->first >= 0)
        return -1;
    int r = pol->world++;
    pol->rank[r].joining = 1;
    return r;
}

int rally__launch_policy_slots(const struct rally__launch_policy *pol)
{
    return pol->world;
}

int rally__launch_policy_joining(const struct rally__launch_policy *pol, int rank)
{
    return rank >= 0 && rank < pol->world && pol->rank[rank].joining;
}

int rally__launch_policy_holds(const struct rally__launch_policy *pol, int rank)
{
    return rank >= 0 && rank < pol->world && !pol->rank[rank].dropped &&
           !pol->rank[rank].outside;
}

static void clear(struct rally__launch_act *a)
{
    a->say[0] = a->cause[0] = a->abort[0] = '\0';
    a->forward = a->last = 0;
    a->restart = a->gone = -1;
}

static void start_grace(struct rally__launch_policy *pol, int64_t now)
{
    int64_t at = now + pol->grace_ms;
    if (at < pol->kill_at)
        pol->kill_at = at;
}

/* rank failed (its why and status are written): the first failure fails the job. */
static void fail(struct rally__launch_policy *pol, int rank, int64_t now,
                 struct rally__launch_act *a)
{
    pol->rank[rank].failed = 1;
    if (pol->first < 0 && !pol->stop_sig) {
        pol->first = rank;
        snprintf(a->abort, sizeof a->abort, "%s", pol->rank[rank].why);
        start_grace(pol, now);
    }
}

/* " on host h2", or "" for a rank on this host. */
static void on_host(const struct rank_state *k, char *out, size_t cap)
{
    out[0] = '\0';
    if (k->host[0])
        snprintf(out, cap, " on host %s", k->host);
}

/* "rank 3 was killed by signal 9", "rank 3 on host h2 exited with status 2". */
static void why_of(struct rally__launch_policy *pol, int rank, const char *cause)
{
    char on[280];
    on_host(&pol->rank[rank], on, sizeof on);
    snprintf(pol->rank[rank].why, sizeof pol->rank[rank].why, "rank %d%s %s%s", rank, on,
             strncmp(cause, "killed", 6) == 0 ? "was " : "", cause);
}

void rally__launch_policy_event(struct rally__launch_policy *pol,
                                const struct rally__launch_event *ev, int64_t now)
{
    int ok = ev->rank >= 0 && ev->rank < pol->world;
    if (ev->kind == RALLY__TEV_ASSIGNED && ok) {
        pol->rank[ev->rank].joining = 0;
    } else if (ev->kind == RALLY__TEV_FINALIZED && ok) {
        pol->rank[ev->rank].finalized = 1;
    } else if (ev->kind == RALLY__TEV_RANK_FAILED && ok && pol->rank[ev->rank].running) {
        struct rank_state *k = &pol->rank[ev->rank];
        snprintf(k->fenced, sizeof k->fenced, "%s", ev->text);
        k->fenced_own = ev->disconnected;
        k->fence_kill_at = now + (k->host[0] ? RALLY__LAUNCH_FENCE_GRACE_REMOTE_MS
                                              : RALLY__LAUNCH_FENCE_GRACE_MS);
    } else if (ev->kind == RALLY__TEV_RESIZED) {
        pol->world_now = ev->world;
    } else if (ev->kind == RALLY__TEV_RECOVERED) {
        pol->nrecoveries++;
        pol->nrecovered += pol->unrecovered;
        pol->unrecovered = 0;
    }
}

void rally__launch_policy_signal(struct rally__launch_policy *pol, int sig, int64_t now,
                                 struct rally__launch_act *a)
{
    clear(a);
    if (!pol->stop_sig) {
        pol->stop_sig = sig;
        snprintf(a->abort, sizeof a->abort, "rally-run was stopped by signal %d", sig);
        start_grace(pol, now);
    }
    a->forward = sig;
}

void rally__launch_policy_preempted(struct rally__launch_policy *pol, int sig, const char *snapshot,
                                    int64_t now, struct rally__launch_act *a)
{
    rally__launch_policy_signal(pol, sig, now, a);
    if (pol->stop_sig == sig && pol->preempted[0] == '\0')
        snprintf(pol->preempted, sizeof pol->preempted, "%.500s", snapshot);
}

/* rank died of cause while the job runs: restart it, or fail the job.
 * head is the sentence that says so ("rank 1 died (killed by signal 9)"),
 * why the failure when it is not restarted. */
static void died_as(struct rally__launch_policy *pol, int rank, const char *cause,
                    const char *head, const char *why, const struct rally__launch_view *v,
                    int64_t now, struct rally__launch_act *a)
{
    struct rank_state *k = &pol->rank[rank];
    pol->ndeaths++;
    pol->unrecovered++;
    k->deaths++;
    snprintf(k->cause, sizeof k->cause, "%s", cause);
    if (pol->elastic && v->recoverable && (k->restarts >= pol->max_restarts || k->slow[0])) {
        /* the tracker goes on without it, or fails the job below the minimum */
        const char *reason = k->slow[0]                ? "--give-up-slow"
                             : pol->max_restarts > 0 ? "its restarts are exhausted"
                                                     : "--max-restarts 0";
        k->dropped = 1;
        pol->ndropped++;
        pol->unrecovered--; /* not a death the job recovers from */
        snprintf(a->say, sizeof a->say, "%.400s; %s: giving it up", head, reason);
        snprintf(a->cause, sizeof a->cause, "%.200s; %s", cause, reason);
        a->gone = rank;
        return;
    }
    if (pol->max_restarts > 0 && v->recoverable) {
        if (k->restarts >= pol->max_restarts) {
            snprintf(k->why, sizeof k->why, "%.400s and its restarts are exhausted (%d of %d used)",
                     head, k->restarts, pol->max_restarts);
            k->status = 1;
            fail(pol, rank, now, a);
            return;
        }
        k->restarts++;
        pol->nrestarts++;
        a->last = !pol->elastic && k->restarts >= pol->max_restarts; /* elastic: given up */
        snprintf(a->say, sizeof a->say, "%.400s; restarting it%s%.150s (restart %d of %d)", head,
                 k->host[0] ? " on " : "", k->host, k->restarts, pol->max_restarts);
        snprintf(a->cause, sizeof a->cause, "%s", cause);
        a->restart = rank;
        return;
    }
    snprintf(k->why, sizeof k->why, "%.500s", why);
    fail(pol, rank, now, a);
}

static void died(struct rally__launch_policy *pol, int rank, const char *cause,
                 const struct rally__launch_view *v, int64_t now, struct rally__launch_act *a)
{
    char head[600], on[280];
    on_host(&pol->rank[rank], on, sizeof on);
    snprintf(head, sizeof head, "rank %d%s died (%s)", rank, on, cause);
    why_of(pol, rank, cause);
    char why[sizeof pol->rank[rank].why];
    memcpy(why, pol->rank[rank].why, sizeof why);
    died_as(pol, rank, cause, head, why, v, now, a);
}

/* Forgets a fence of the rank's process, once that process is gone. */
static void unfence(struct rank_state *k)
{
    k->fence_killed = 0;
    k->fenced[0] = '\0';
    k->fenced_own = 0;
}

/* A rank that is not restarted: its loss is counted as a death when it
 * failed the job (the tracker saw it first), not when it left after the job
 * had failed. */
static void gone(struct rally__launch_policy *pol, int rank, const char *cause,
                 const struct rally__launch_view *v)
{
    struct rank_state *k = &pol->rank[rank];
    if (v->state == RALLY__TRACKER_FAILED && v->failed_rank == rank && !pol->stop_sig &&
        !k->failed) {
        pol->ndeaths++;
        k->deaths++;
        snprintf(k->cause, sizeof k->cause, "%s", cause);
    }
    k->failed = 1;
}

void rally__launch_policy_exit(struct rally__launch_policy *pol, int rank, int st,
                               const struct rally__launch_view *v, int64_t now,
                               struct rally__launch_act *a)
{
    clear(a);
    struct rank_state *k = &pol->rank[rank];
    k->running = 0;
    k->fence_kill_at = RALLY__NEVER;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && k->finalized)
        return;
    if (k->joining) { /* it never was one of the job's ranks */
        k->joining = 0;
        k->outside = 1;
        if (WIFSIGNALED(st))
            snprintf(a->say, sizeof a->say,
                     "rank %d was killed by signal %d before the job took it in", rank,
                     WTERMSIG(st));
        else
            snprintf(a->say, sizeof a->say,
                     "rank %d exited with status %d before the job took it in", rank,
                     WEXITSTATUS(st));
        return;
    }
    char cause[320];
    int fence_kill = WIFSIGNALED(st) && k->fence_killed && WTERMSIG(st) == SIGKILL;
    if (fence_kill && k->slow[0])
        snprintf(cause, sizeof cause, "killed by signal 9: given up as slow: %s", k->slow);
    else if (fence_kill)
        snprintf(cause, sizeof cause, "killed by signal 9 after the tracker fenced it: %s",
                 k->fenced);
    else if (WIFSIGNALED(st))
        snprintf(cause, sizeof cause, "killed by signal %d", WTERMSIG(st));
    else if (WEXITSTATUS(st) != 0)
        snprintf(cause, sizeof cause, "exited with status %d", WEXITSTATUS(st));
    else
        snprintf(cause, sizeof cause, "exited 0 without rally_finalize");
    /* fenced for a cause of the tracker's own (not its own disconnect): say it */
    if (k->fenced[0] && !k->fenced_own && !fence_kill)
        snprintf(cause + strlen(cause), sizeof cause - strlen(cause),
                 " after the tracker fenced it: %s", k->fenced);
    /* A worker that exits on its own failed the job (its status is rally-run's),
     * unless the tracker had fenced it for something else than that very exit
     * (a heartbeat silence, a replacement, our report): then it only followed
     * the fence. */
    int own_exit = WIFEXITED(st) && (!k->fenced[0] || k->fenced_own);
    k->status = own_exit && WEXITSTATUS(st) != 0 ? WEXITSTATUS(st) : 1;
    unfence(k);
    if (k->finalized) {
        /* it finished its part: a bad exit fails the job, but is no death */
        k->failed = 1;
        snprintf(k->why, sizeof k->why, "rank %d %s after rally_finalize", rank, cause);
        return;
    }
    if (pol->first < 0 && !pol->stop_sig && v->state == RALLY__TRACKER_RUNNING && own_exit) {
        pol->ndeaths++;
        k->deaths++;
        snprintf(k->cause, sizeof k->cause, "%s", cause);
        why_of(pol, rank, cause);
        fail(pol, rank, now, a);
        return;
    }
    if (pol->first < 0 && !pol->stop_sig && v->state == RALLY__TRACKER_RUNNING) {
        died(pol, rank, cause, v, now, a);
        return;
    }
    gone(pol, rank, cause, v);
    why_of(pol, rank, cause);
}

void rally__launch_policy_lost(struct rally__launch_policy *pol, int rank,
                               const struct rally__launch_view *v, int64_t now,
                               struct rally__launch_act *a)
{
    clear(a);
    struct rank_state *k = &pol->rank[rank];
    k->running = 0;
    k->fence_kill_at = RALLY__NEVER;
    unfence(k);
    k->status = 1;
    const char *cause = "the connection to the host was lost";
    if (k->joining) {
        k->joining = 0;
        k->outside = 1;
        snprintf(a->say, sizeof a->say, "rank %d on host %s: %s before the job took it in", rank,
                 k->host, cause);
        return;
    }
    char head[600];
    snprintf(head, sizeof head, "rank %d on host %s died: %s", rank, k->host, cause);
    if (k->finalized) {
        k->failed = 1;
        snprintf(k->why, sizeof k->why, "%.400s after rally_finalize", head);
        return;
    }
    if (pol->first < 0 && !pol->stop_sig && v->state == RALLY__TRACKER_RUNNING) {
        died_as(pol, rank, cause, head, head, v, now, a);
        return;
    }
    gone(pol, rank, cause, v);
    snprintf(k->why, sizeof k->why, "%.500s", head);
}

void rally__launch_policy_unstarted(struct rally__launch_policy *pol, int rank, const char *why,
                                    int status, const struct rally__launch_view *v, int64_t now,
                                    struct rally__launch_act *a)
{
    clear(a);
    struct rank_state *k = &pol->rank[rank];
    k->running = 0;
    k->fence_kill_at = RALLY__NEVER;
    unfence(k);
    if (k->joining) { /* nothing of it ran: its slot is the next one's */
        k->joining = 0;
        k->outside = k->unstarted = 1;
        /* joiners started at one try end in any order: the last slots go back */
        while (pol->world > 0 && pol->rank[pol->world - 1].unstarted)
            pol->rank[--pol->world] = (struct rank_state){.fence_kill_at = RALLY__NEVER,
                                                          .status = 1};
        snprintf(a->say, sizeof a->say, "%.500s: rank %d was not started", why, rank);
        return;
    }
    if (pol->elastic && k->restarts > 0 && v->recoverable && pol->first < 0 && !pol->stop_sig) {
        /* its host is gone for good (no restart can reach it): given up */
        k->dropped = 1;
        pol->ndropped++;
        pol->unrecovered--;
        snprintf(a->say, sizeof a->say, "%.500s: giving it up", why);
        snprintf(a->cause, sizeof a->cause, "%.300s", why);
        a->gone = rank;
        return;
    }
    snprintf(k->why, sizeof k->why, "%.500s", why);
    k->status = status;
    fail(pol, rank, now, a);
}

int rally__launch_policy_elsewhere(struct rally__launch_policy *pol, int rank, const char *why,
                                   const char *host, const struct rally__launch_view *v,
                                   struct rally__launch_act *a)
{
    clear(a);
    struct rank_state *k = &pol->rank[rank];
    if (k->joining || k->restarts == 0 || !v->recoverable || v->state != RALLY__TRACKER_RUNNING ||
        pol->first >= 0 || pol->stop_sig)
        return 0;
    snprintf(k->host, sizeof k->host, "%s", host);
    snprintf(a->say, sizeof a->say, "%.400s; restarting it on %.200s (a slot free)", why, host);
    return 1;
}

void rally__launch_policy_host(struct rally__launch_policy *pol, int rank, const char *host)
{
    snprintf(pol->rank[rank].host, sizeof pol->rank[rank].host, "%s", host ? host : "");
}

void rally__launch_policy_spawned(struct rally__launch_policy *pol, int rank)
{
    struct rank_state *k = &pol->rank[rank];
    k->running = 1;
    k->finalized = k->failed = 0;
    k->status = 1;
    k->why[0] = '\0';
}

void rally__launch_policy_spawn_failed(struct rally__launch_policy *pol, int rank, int err,
                                       int64_t now, struct rally__launch_act *a)
{
    clear(a);
    snprintf(pol->rank[rank].why, sizeof pol->rank[rank].why, "cannot restart rank %d: %s", rank,
             strerror(err));
    pol->rank[rank].status = 1;
    fail(pol, rank, now, a);
}

void rally__launch_policy_tracker(struct rally__launch_policy *pol,
                                  const struct rally__launch_view *v, int64_t now)
{
    if (v->state != RALLY__TRACKER_FAILED)
        return;
    if (pol->first < 0 && !pol->stop_sig)
        pol->tracker_first = 1;
    start_grace(pol, now);
}

int rally__launch_policy_slow(struct rally__launch_policy *pol, int rank, const char *why,
                              int64_t now)
{
    struct rank_state *k = &pol->rank[rank];
    if (!pol->elastic || !k->running || k->dropped || k->slow[0] || pol->first >= 0 ||
        pol->stop_sig)
        return 0;
    snprintf(k->slow, sizeof k->slow, "%s", why[0] ? why : "slow");
    k->fence_kill_at = now; /* due at once: the loop kills it this turn */
    return 1;
}

int64_t rally__launch_policy_deadline(const struct rally__launch_policy *pol)
{
    int64_t d = pol->kill_at;
    for (int i = 0; i < pol->world; i++)
        if (pol->rank[i].fence_kill_at < d)
            d = pol->rank[i].fence_kill_at;
    return d;
}

int rally__launch_policy_due(struct rally__launch_policy *pol, int64_t now)
{
    for (int i = 0; i < pol->world; i++) {
        struct rank_state *k = &pol->rank[i];
        if (k->running && now >= k->fence_kill_at) {
            k->fence_killed = 1;
            k->fence_kill_at = RALLY__NEVER;
            return i;
        }
    }
    if (now >= pol->kill_at) {
        pol->kill_at = RALLY__NEVER;
        return RALLY__LAUNCH_KILL_ALL;
    }
    return -1;
}

int rally__launch_policy_verdict(const struct rally__launch_policy *pol,
                                 const struct rally__launch_view *v, FILE *f)
{
    if (pol->stop_sig && pol->preempted[0]) {
        fprintf(f,
                "rally-run: preempted by signal %d (%s) after %s was committed: --resume latest "
                "continues from it\n",
                pol->stop_sig, strsignal(pol->stop_sig), pol->preempted);
        return RALLY__LAUNCH_EXIT_PREEMPTED;
    }
    if (pol->stop_sig) {
        fprintf(f, "rally-run: stopped by signal %d (%s)\n", pol->stop_sig,
                strsignal(pol->stop_sig));
        return 128 + pol->stop_sig;
    }
    int r = v->failed_rank;
    if (v->state == RALLY__TRACKER_FAILED && r >= 0 && r < pol->world && pol->rank[r].failed) {
        fprintf(f, "rally-run: %s\n", pol->rank[r].why);
        return pol->rank[r].status;
    }
    if (pol->tracker_first && v->code == RALLY_ECONFIG) {
        fprintf(f, "rally-run: %s\n", v->sentence);
        return RALLY__LAUNCH_EXIT_CONFIG;
    }
    if (pol->tracker_first && v->reported != NULL && v->reported[0] && v->reported_rank >= 0) {
        fprintf(f, "rally-run: %s\n", v->sentence);
        return RALLY__LAUNCH_EXIT_ABORT;
    }
    if (pol->tracker_first) {
        fprintf(f, "rally-run: job aborted: %s\n", v->sentence);
        return 1;
    }
    if (pol->first >= 0) {
        fprintf(f, "rally-run: %s\n", pol->rank[pol->first].why);
        return pol->rank[pol->first].status;
    }
    for (int i = 0; i < pol->world; i++)
        if (pol->rank[i].failed) {
            fprintf(f, "rally-run: %s\n", pol->rank[i].why);
            return pol->rank[i].status;
        }
    return 0;
}

void rally__launch_policy_carry(struct rally__launch_policy *pol,
                                const struct rally__launch_policy *prev)
{
    pol->ndeaths += prev->ndeaths;
    pol->nrecovered += prev->nrecovered;
    pol->nrecoveries += prev->nrecoveries;
    pol->nrestarts += prev->nrestarts;
    pol->job_restarts = prev->job_restarts + 1;
    for (int i = 0; i < pol->world && i < prev->world; i++)
        pol->rank[i].deaths += prev->rank[i].deaths;
}

void rally__launch_policy_summary(const struct rally__launch_policy *pol, FILE *f)
{
    fprintf(f, "rally-run: summary: deaths=%d recovered=%d epochs=%d restarts=%d per-rank-deaths=",
            pol->ndeaths, pol->nrecovered, pol->nrecoveries, pol->nrestarts);
    for (int i = 0; i < pol->world; i++)
        fprintf(f, "%s%d:%d", i ? "," : "", i, pol->rank[i].deaths);
    if (pol->job_restarts > 0)
        fprintf(f, " job-restarts=%d", pol->job_restarts);
    if (pol->ndropped > 0) {
        fprintf(f, " lost-for-good=");
        for (int i = 0, n = 0; i < pol->world; i++)
            if (pol->rank[i].dropped)
                fprintf(f, "%s%d", n++ ? "," : "", i);
    }
    if (pol->ndropped > 0 || pol->world_now != pol->world0)
        fprintf(f, " workers=%d", pol->world_now);
    fprintf(f, "\n");
}

void rally__launch_policy_counts(const struct rally__launch_policy *pol,
                                 struct rally__launch_counts *c)
{
    *c = (struct rally__launch_counts){pol->ndeaths, pol->nrecovered, pol->nrecoveries,
                                       pol->nrestarts, pol->job_restarts};
}

void rally__launch_policy_rank(const struct rally__launch_policy *pol, int rank,
                               struct rally__launch_rank_counts *c)
{
    const struct rank_state *x = &pol->rank[rank];
    *c = (struct rally__launch_rank_counts){x->deaths,  x->restarts, x->running, x->finalized,
                                            x->dropped, x->outside,  x->cause};
}
