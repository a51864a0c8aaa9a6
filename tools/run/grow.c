/*
 * grow.c — where rally-run's workers run when hosts come and go (run/run.h):
 * a remote rank's end as the policy hears it (a restart whose host cannot be
 * reached goes to another with a slot free), the refill of a job that is to
 * have more workers than hold places (--launcher ssh with --max-workers),
 * and SIGUSR2's one more worker.
 */
#include <stdio.h>
#include <string.h>

#include "run/run.h"
#include "tracker/proto.h"
#include "util/clock.h"

/* Which ranks hold a place (r->held), for placing one. */
static void holding(struct run *r, int n)
{
    for (int i = 0; i < n; i++)
        r->held[i] = (unsigned char)rally__launch_policy_holds(r->pol, i);
}

/* A host other than rank i's, with a slot free and answering as far as we
 * know, for rank i whose host cannot be reached; -1 when none has one. */
static int host_free(struct run *r, int i)
{
    int n = rally__launch_policy_slots(r->pol), h = r->host_of[i];
    run_reread_hostfile(r); /* a spare host added to the file counts */
    holding(r, n);
    unsigned char was = r->down[h];
    r->down[h] = 1;
    int to = rally__launch_place_one(&r->hosts, r->host_of, r->held, n, r->down);
    r->down[h] = was;
    return to >= 0 && to != h && !r->down[to] ? to : -1;
}

/* Rank i's wrapper ended with wait status st: what its agent said (read to
 * the end of its pipes first), or its silence, goes to the policy as a
 * worker's exit, a lost connection or a failure to start (launch/remote.h).
 * A restart whose host cannot be reached goes to a host with a slot free:
 * the same rank, so the job recovers in place. */
void run_remote_exit(struct run *r, int i, int st, const struct rally__launch_view *v,
                        struct rally__launch_act *a)
{
    rally__launch_flush(&r->procs[i]);
    char why[640];
    int out = 0;
    int kind = rally__launch_outcome(&r->procs[i].seen, st, r->kind, r->hosts.h[r->host_of[i]].name,
                                     i, r->agent, r->argv[0], why, sizeof why, &out);
    int joiner = rally__launch_policy_joining(r->pol, i), h = r->host_of[i];
    int to = kind == RALLY__LAUNCH_AS_UNREACHABLE && !joiner ? host_free(r, i) : -1;
    if (kind == RALLY__LAUNCH_AS_STATUS) {
        rally__launch_policy_exit(r->pol, i, out, v, rally__now_ms(), a);
    } else if (kind == RALLY__LAUNCH_AS_LOST) {
        rally__launch_policy_lost(r->pol, i, v, rally__now_ms(), a);
    } else if (to >= 0 &&
               rally__launch_policy_elsewhere(r->pol, i, why, r->hosts.h[to].name, v, a)) {
        r->down[h] = 1; /* not tried again while another answers: no moving to and fro */
        r->host_of[i] = to;
        rally__launch_out_say(&r->out[1], "%s", a->say);
        a->say[0] = '\0';
        run_respawn(r, i);
    } else {
        rally__launch_policy_unstarted(r->pol, i, why, out, v, rally__now_ms(), a);
    }
    if (joiner && remote_grow(r) && !rally__launch_policy_holds(r->pol, i)) {
        /* refill tries again after --rejoin-ms; the first miss on a host is said */
        if (r->down[h])
            a->say[0] = '\0';
        else
            snprintf(a->say + strlen(a->say), sizeof a->say - strlen(a->say),
                     "; trying a host with a slot free again every %lld ms",
                     (long long)r->rejoin_ms);
        r->down[h] = 1;
    }
}

/* remote_grow: while fewer workers hold places than the job is to have and
 * no joiner is on its way, start as many as the first host with a slot free
 * has free slots (one that could not be reached last only when no other
 * has a slot), at most every --rejoin-ms: a host lost and back is taken in
 * whole, at one checkpoint.  r->pending is the first of them. */
void run_refill(struct run *r, int64_t now)
{
    if (!remote_grow(r))
        return;
    int n = rally__launch_policy_slots(r->pol), held = 0;
    for (int i = r->pending; i >= 0 && i < n; i++)
        if (rally__launch_policy_joining(r->pol, i))
            return;
    for (int i = r->pending; i >= 0 && i < n; i++)
        if (rally__launch_policy_holds(r->pol, i))
            r->down[r->host_of[i]] = 0; /* taken in: its host is back */
    r->pending = -1;
    holding(r, n);
    for (int i = 0; i < n; i++)
        held += r->held[i];
    if (held >= r->want) {
        r->next_try = 0; /* nothing to try: no deadline (the loop must not spin) */
        return;
    }
    if (now < r->next_try)
        return;
    r->next_try = now + r->rejoin_ms;
    run_reread_hostfile(r);
    int h = rally__launch_place_one(&r->hosts, r->host_of, r->held, n, r->down);
    if (h < 0)
        return;
    int room = r->hosts.h[h].slots, started = 0;
    for (int i = 0; i < n; i++)
        room -= r->held[i] && r->host_of[i] == h;
    while (started < room && held + started < r->want) {
        int i = rally__launch_policy_add(r->pol, r->max_workers);
        if (i < 0)
            break;
        r->host_of[i] = h;
        rally__launch_policy_host(r->pol, i, r->hosts.h[h].name);
        rally__launch_flush(&r->procs[i]);
        int err = run_spawn(r, i);
        if (err != 0) {
            struct rally__launch_act a;
            struct rally__launch_view v;
            run_view(r, &v);
            char why[320];
            snprintf(why, sizeof why, "cannot start rank %d on host %s: %s", i,
                     r->hosts.h[h].name, strerror(err));
            rally__launch_policy_unstarted(r->pol, i, why, 1, &v, now, &a);
            run_carry_out(r, &a);
            break;
        }
        if (started++ == 0)
            r->pending = i;
    }
    if (started == 0 || r->down[h])
        return;
    if (started == 1)
        rally__launch_out_say(&r->out[1],
                              "started rank %d on host %s (a slot free); the job takes it in "
                              "at its next checkpoint",
                              r->pending, r->hosts.h[h].name);
    else
        rally__launch_out_say(&r->out[1],
                              "started ranks %d-%d on host %s (%d slots free); the job takes "
                              "them in at its next checkpoint",
                              r->pending, r->pending + started - 1, r->hosts.h[h].name, started);
}

/* SIGUSR2: one more worker, which the job takes in at its next checkpoint. */
void run_grow(struct run *r)
{
    if (remote_grow(r)) {
        if (r->want >= r->max_workers) {
            rally__launch_out_say(&r->out[1],
                                  "SIGUSR2: the job is to have %d workers already "
                                  "(--max-workers %d): none started",
                                  r->want, r->max_workers);
            return;
        }
        r->want++;
        r->next_try = 0;
        rally__launch_out_say(&r->out[1],
                              "SIGUSR2: the job is to have %d workers: starting one "
                              "on a host with a slot free",
                              r->want);
        return;
    }
    int i = r->max_workers > r->world ? rally__launch_policy_add(r->pol, r->max_workers) : -1;
    if (i < 0) {
        rally__launch_out_say(&r->out[1],
                              r->max_workers > r->world
                                  ? "SIGUSR2: the job has --max-workers %d workers (or they "
                                    "wait to join), or it is ending: none started"
                                  : "SIGUSR2: no --max-workers above -n (%d): none started",
                              r->max_workers);
        return;
    }
    int err = run_spawn(r, i);
    if (err != 0) {
        rally__launch_out_say(&r->out[1], "SIGUSR2: cannot start rank %d: %s", i, strerror(err));
        return;
    }
    rally__launch_out_say(
        &r->out[1], "SIGUSR2: started rank %d; the job takes it in at its next checkpoint", i);
}
