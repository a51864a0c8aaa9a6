/*
 * slow.c — the rank the others wait for, named (docs/status.md, "Who the
 * others wait for"), and --give-up-slow.
 *
 * Once a second rally-run reads every rank's straggler window from the
 * tracker (the workers' heartbeats carry it) and measures each rank's
 * lateness (watch/late.h).  A rank at RALLY__LATE_NAMED or later is named
 * in one line, said again only when its lateness moved by
 * RALLY__LATE_AGAIN since, and once more when it falls below half the
 * mark ("no longer"): a clean run says nothing.  With --give-up-slow PCT:CALLS
 * (an elastic job only), a rank that stays at PCT or later while it
 * completes CALLS more calls is given up as a lost one is: the policy
 * kills it and gives it up (launch/policy.h, rally__launch_policy_slow),
 * and the tracker goes on without it while --min-workers are left.  On a
 * slow machine every rank of it is late, so all of them go.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "watch/late.h"
#include "run/run.h"
#include "util/clock.h"

#define LOOK_EVERY_MS 1000 /* heartbeats come a second apart */

struct run_slow {
    int n;                   /* slots */
    struct rally__tracker_rank *ti; /* per slot, this look: the tracker's */
    struct rally__late *in;  /* ... the window in it */
    double *late, *scratch;  /* ... its lateness, and late.h's scratch */
    double *said;            /* the lateness the line last said (NAN: none) */
    uint64_t *slow_from;     /* the calls it had completed when it reached PCT (0: below) */
    int *held;               /* --give-up-slow could not give it up: said once */
    const struct rally__launch_policy *pol; /* the attempt these are of */
    int64_t next;
};

void run_slow_free(struct run *r)
{
    struct run_slow *s = r->slow;
    if (s == NULL)
        return;
    free(s->ti);
    free(s->in);
    free(s->late);
    free(s->scratch);
    free(s->said);
    free(s->slow_from);
    free(s->held);
    free(s);
    r->slow = NULL;
}

static struct run_slow *state(struct run *r)
{
    struct run_slow *s = r->slow;
    if (s != NULL && s->pol == r->pol)
        return s;
    run_slow_free(r); /* a new attempt (--auto-resume): from scratch */
    int n = r->slots;
    if ((s = calloc(1, sizeof *s)) == NULL || (s->ti = calloc((size_t)n, sizeof *s->ti)) == NULL ||
        (s->in = calloc((size_t)n, sizeof *s->in)) == NULL ||
        (s->late = calloc((size_t)n, sizeof *s->late)) == NULL ||
        (s->scratch = calloc((size_t)n, sizeof *s->scratch)) == NULL ||
        (s->said = calloc((size_t)n, sizeof *s->said)) == NULL ||
        (s->slow_from = calloc((size_t)n, sizeof *s->slow_from)) == NULL ||
        (s->held = calloc((size_t)n, sizeof *s->held)) == NULL) {
        r->slow = s;
        run_slow_free(r);
        return NULL; /* out of memory: nobody is named */
    }
    for (int i = 0; i < n; i++)
        s->said[i] = NAN;
    s->n = n;
    s->pol = r->pol;
    r->slow = s;
    return s;
}

/* --give-up-slow: slot i (rank rank, info ti) is at PCT or later now. */
static void maybe_give_up(struct run *r, struct run_slow *s, int i, int rank,
                          const struct rally__tracker_rank *ti)
{
    if (s->slow_from[i] == 0)
        s->slow_from[i] = ti->calls > 0 ? ti->calls : 1;
    if (ti->calls < s->slow_from[i] + (uint64_t)r->give_up_calls)
        return;
    char why[200];
    snprintf(why, sizeof why,
             "it arrived %.0f %% after the median or later for %lld calls (--give-up-slow %.0f:%lld)",
             100 * s->late[i], (long long)r->give_up_calls, 100 * r->give_up_slow,
             (long long)r->give_up_calls);
    int world = rally__tracker_world(r->t);
    if (world - 1 < r->min_workers) {
        if (!s->held[i]++)
            rally__launch_out_say(&r->out[1],
                                  "rank %d stays slow, but the job cannot go on with fewer than "
                                  "%d workers (--min-workers): it is kept",
                                  rank, r->min_workers);
        return;
    }
    if (rally__launch_policy_slow(r->pol, i, why, rally__now_ms()))
        s->slow_from[i] = UINT64_MAX; /* once */
}

void run_slow_after(struct run *r)
{
    int64_t now = rally__now_ms();
    if (r->t == NULL || r->pol == NULL || rally__tracker_phase(r->t) != RALLY__TPHASE_RUNNING)
        return;
    struct run_slow *s = state(r);
    if (s == NULL || now < s->next)
        return;
    s->next = now + LOOK_EVERY_MS;
    int n = rally__launch_policy_slots(r->pol), world = rally__tracker_world(r->t);
    if (n > s->n)
        n = s->n;
    struct rally__tracker_rank *ti = s->ti;
    for (int i = 0; i < n; i++) {
        struct rally__launch_rank_counts pc;
        rally__launch_policy_rank(r->pol, i, &pc);
        int rank = elastic(r) ? run_rank_now(r, i) : i;
        s->in[i] = (struct rally__late){0, 0, 0};
        memset(&ti[i], 0, sizeof ti[i]);
        if (pc.dropped || pc.outside || !pc.running || rank < 0 || rank >= world ||
            rally__tracker_rank_info(r->t, rank, &ti[i]) != RALLY_OK || !ti[i].present ||
            ti[i].finalized)
            continue;
        s->in[i] = (struct rally__late){ti[i].win, ti[i].win_wait_ms, ti[i].win_span_ms};
    }
    rally__late_measure(s->in, n, s->late, s->scratch);
    for (int i = 0; i < n; i++) {
        double late = s->late[i];
        if (isnan(late))
            continue;
        int rank = elastic(r) ? run_rank_now(r, i) : i;
        if (late >= RALLY__LATE_NAMED &&
            (isnan(s->said[i]) || fabs(late - s->said[i]) >= RALLY__LATE_AGAIN)) {
            rally__launch_out_say(&r->out[1],
                                  "rank %d (host %s) arrives %.0f %% after the median over the "
                                  "last %u calls",
                                  rank, ti[i].host, 100 * late, ti[i].win);
            s->said[i] = late;
        } else if (!isnan(s->said[i]) && late < RALLY__LATE_NAMED / 2) {
            rally__launch_out_say(&r->out[1],
                                  "rank %d (host %s) no longer arrives late: %.0f %% after the "
                                  "median over the last %u calls",
                                  rank, ti[i].host, 100 * late, ti[i].win);
            s->said[i] = NAN;
        }
        if (r->give_up_slow > 0 && late >= r->give_up_slow)
            maybe_give_up(r, s, i, rank, &ti[i]);
        else if (s->slow_from[i] != UINT64_MAX)
            s->slow_from[i] = 0;
    }
}
