/*
 * policy.h — rally-run's restart policy: from tracker events, worker exits
 * and signals to one decision (restart rank r, fail the job, finish).
 *
 * A pure state machine: no processes, descriptors or clock reads (the
 * caller passes the time in), so tests drive it directly.  The tracker's
 * event hook only notes events here (rally__launch_policy_event decides
 * nothing: it marks a rank finalized or fenced and counts recoveries).  The
 * decisions come after each rally__tracker_handle, from the inputs the
 * launcher gathered, in this order: signals, reaped exits, the tracker's
 * state, then the kills that are due.  Each decision fills a struct
 * rally__launch_act, which the launcher carries out:
 *
 *   say       print "rally-run: <say>" on stderr
 *   abort     rally__tracker_abort(RALLY_EPEER, abort): the job failed
 *   forward   send that signal to every worker's group
 *   gone      rally__tracker_rank_gone(gone, cause): an elastic job goes on
 *             without that rank (no process holds it any more)
 *   restart   rally__tracker_rank_died(restart, cause) (what the tracker
 *             raises reaches the policy while the rank has no process, so a
 *             fence cannot hit its successor), flush the old pipes, start
 *             the rank again and report rally__launch_policy_spawned or
 *             _spawn_failed (whose act is carried out in turn)
 *
 * The rules (tools/rally-run.c's usage text is the user's version): a worker
 * killed by a signal while the job runs, recovery is possible and no rank
 * finalized is restarted with the same rank, up to max_restarts times per
 * rank (a crash; so is an exit that followed the tracker's fence of a live
 * worker, e.g. for heartbeat silence); a worker that exits on its own without
 * finalizing fails the job, whatever its status; any other death, the first
 * signal or a failed tracker fails the job and, grace_ms later, every worker
 * left gets SIGKILL.  A worker the tracker fenced while its process still
 * runs gets SIGKILL after RALLY__LAUNCH_FENCE_GRACE_MS (on another host:
 * RALLY__LAUNCH_FENCE_GRACE_REMOTE_MS, since the worker's own end reaches
 * us through its wrapper, which may take its time to exit, as mpirun does).
 *
 * The verdict's exit status: 0 when every rank finalized and exited 0;
 * RALLY__LAUNCH_EXIT_PREEMPTED when rally-run stopped on its signal after
 * the snapshot it asked for was committed (preemption: --resume latest
 * continues); 128 + S after rally-run's own signal S otherwise; the worker's own exit status when
 * the first failure was a worker that exited non-zero (1 for exit 0 without
 * rally_finalize); RALLY__LAUNCH_EXIT_ABORT when a rank stopped the job with
 * its own message (rally_abort, or an error it reported: the tracker's
 * "rank R failed: ..."); RALLY__LAUNCH_EXIT_CONFIG when the tracker failed
 * the job with RALLY_ECONFIG before any rank failed: a worker refused its
 * settings (an unknown RALLY_* variable, rally_mock without librally_mock:
 * reported before it joined), a resume was refused (the arguments or the
 * input differ), or a restarted rank read another input than the one
 * before it; no death is counted then, nothing restarts, and the line is
 * the tracker's sentence; 1 for every other failure.
 */
#ifndef RALLY_TOOLS_LAUNCH_POLICY_H
#define RALLY_TOOLS_LAUNCH_POLICY_H

#include <stdint.h>
#include <stdio.h>

#define RALLY__LAUNCH_FENCE_GRACE_MS 500 /* a fenced worker that still runs gets this long */
#define RALLY__LAUNCH_FENCE_GRACE_REMOTE_MS 3000 /* ... on another host (its wrapper) */
#define RALLY__LAUNCH_KILL_ALL (-2)      /* rally__launch_policy_due: every worker */
#define RALLY__LAUNCH_EXIT_ABORT 3       /* the verdict when a rank stopped the job (rally_abort) */
#define RALLY__LAUNCH_EXIT_CONFIG 4      /* ... when the job's settings or input were refused */
#define RALLY__LAUNCH_EXIT_PREEMPTED 5   /* ... when it stopped on a signal after a snapshot */

struct rally__launch_policy;

/* A tracker event as recorded by its hook (only the kinds below matter). */
struct rally__launch_event {
    int kind;       /* RALLY__TEV_FINALIZED, _RANK_FAILED, _RECOVERED, _RESIZED, _ASSIGNED */
    int world;      /* RESIZED: the ranks now */
    int rank;       /* FINALIZED: the task id's rank; RANK_FAILED: the rank */
    char text[256]; /* RANK_FAILED: why the tracker fenced it */
    int disconnected; /* RANK_FAILED: the cause was its own connection closing */
};

/* The tracker as the policy sees it (rally__tracker_state, _recoverable). */
struct rally__launch_view {
    int state;            /* RALLY__TRACKER_RUNNING, _DONE, _FAILED */
    int failed_rank;      /* FAILED: the rank whose loss failed the job, else -1 */
    const char *sentence; /* FAILED: why */
    int recoverable;      /* a rank failing now would be recovered */
    int code;             /* FAILED: the tracker's status (rally__tracker_code) */
    /* FAILED on a worker's own report: its words ("" otherwise) and its
     * rank (-1: none, or a worker with no rank yet), rally__tracker_reported */
    const char *reported;
    int reported_rank;
};

/* What to do now; a field at its empty value ("", 0, -1) asks nothing. */
struct rally__launch_act {
    char say[640];
    int forward;
    int restart;
    int last;        /* restart: its last (rally__tracker_no_restart once it runs) */
    int gone;        /* rally__tracker_rank_gone(that rank's rank now, cause): given up */
    char cause[320];
    char abort[512];
};

/* world ranks launched, room for slots in all (>= world: ranks taken in
 * later, rally__launch_policy_add). */
int rally__launch_policy_new(struct rally__launch_policy **out, int world, int slots,
                             int max_restarts, int64_t grace_ms);
void rally__launch_policy_free(struct rally__launch_policy *pol);
/* An elastic job (rally-run --min-workers): a crash with no restart left
 * gives the rank up (act gone) instead of failing the job; the tracker
 * goes on without it or, below the minimum, fails the job. */
void rally__launch_policy_elastic(struct rally__launch_policy *pol, int on);
/* Growth (rally-run --max-workers): a rank more, launched to join at a
 * checkpoint; its number (its task id), or -1 when max_workers run or wait
 * already (or the slots are spent).  Until the tracker assigns it (event
 * ASSIGNED) it is joining: its exit is no death and fails nothing. */
int rally__launch_policy_add(struct rally__launch_policy *pol, int max_workers);
/* How many ranks were launched (the slots in use), whether rank r waits to
 * join, and whether it holds a place in the job: one of its ranks (running
 * or to be restarted) or joining, not given up, not a joiner that ended
 * before the job took it in.  A joiner that could not be started
 * (rally__launch_policy_unstarted) is no failure; when it was the last
 * launched, its slot is the next rally__launch_policy_add's. */
int rally__launch_policy_slots(const struct rally__launch_policy *pol);
int rally__launch_policy_joining(const struct rally__launch_policy *pol, int rank);
int rally__launch_policy_holds(const struct rally__launch_policy *pol, int rank);

void rally__launch_policy_event(struct rally__launch_policy *pol,
                                const struct rally__launch_event *ev, int64_t now);
/* The first SIGINT/SIGTERM fails the job; every one is forwarded. */
void rally__launch_policy_signal(struct rally__launch_policy *pol, int sig, int64_t now,
                                 struct rally__launch_act *a);
/* The same for a preemption signal sig once the snapshot asked for (the
 * path in snapshot) is committed: the verdict is then
 * RALLY__LAUNCH_EXIT_PREEMPTED, naming it. */
void rally__launch_policy_preempted(struct rally__launch_policy *pol, int sig, const char *snapshot,
                                    int64_t now, struct rally__launch_act *a);
/* rank's process ended with wait status st. */
void rally__launch_policy_exit(struct rally__launch_policy *pol, int rank, int st,
                               const struct rally__launch_view *v, int64_t now,
                               struct rally__launch_act *a);
/* rank runs on host (NULL or "": this host, and its lines name no host;
 * else "rank 2 on host h2 ..." and "restarting it on h2"). */
void rally__launch_policy_host(struct rally__launch_policy *pol, int rank, const char *host);
/* rank's host ran it and the connection to the host was lost before the
 * worker's own end was heard (tools/launch/remote.h): a death, restarted
 * like a crash ("rank 2 on host h2 died: the connection to the host was
 * lost"). */
void rally__launch_policy_lost(struct rally__launch_policy *pol, int rank,
                               const struct rally__launch_view *v, int64_t now,
                               struct rally__launch_act *a);
/* rank could not be started on its host (unreachable, the program missing):
 * the job fails with why and exit status status; no death is counted.  In
 * an elastic job a rank that could not be restarted (its host gone) is
 * given up instead (act gone).  A joiner's slot goes back once every
 * joiner launched after it could not be started either. */
void rally__launch_policy_unstarted(struct rally__launch_policy *pol, int rank, const char *why,
                                    int status, const struct rally__launch_view *v, int64_t now,
                                    struct rally__launch_act *a);
/* rank's restart could not reach its host (why says so) and host has a
 * slot free: 1 when it is to be started there, the same rank (the job
 * still recovers it in place: a say "WHY; restarting it on HOST (a slot
 * free)", its lines name host from now on), 0 when it is no restart, or
 * the job is not running or failed (then rally__launch_policy_unstarted). */
int rally__launch_policy_elsewhere(struct rally__launch_policy *pol, int rank, const char *why,
                                   const char *host, const struct rally__launch_view *v,
                                   struct rally__launch_act *a);
/* rank runs a new process (also when its exec failed: that exit follows). */
void rally__launch_policy_spawned(struct rally__launch_policy *pol, int rank);
/* Restarting rank failed with errno err. */
void rally__launch_policy_spawn_failed(struct rally__launch_policy *pol, int rank, int err,
                                       int64_t now, struct rally__launch_act *a);
/* The tracker's state after it handled its I/O. */
void rally__launch_policy_tracker(struct rally__launch_policy *pol,
                                  const struct rally__launch_view *v, int64_t now);

/* rally-run --give-up-slow: rank stays slow (why says how); in an elastic
 * job its process is killed now (rally__launch_policy_due) and, once it
 * has ended, given up as a rank with no restart left is (act gone: "rank 5
 * died (killed by signal 9: given up as slow: WHY); giving it up").  1 when
 * so, 0 when the job is not elastic, the rank runs no process or is given
 * up already. */
int rally__launch_policy_slow(struct rally__launch_policy *pol, int rank, const char *why,
                              int64_t now);
/* The earliest moment a kill may be due (RALLY__NEVER: none). */
int64_t rally__launch_policy_deadline(const struct rally__launch_policy *pol);
/* A kill due at now: a rank (SIGKILL its group), RALLY__LAUNCH_KILL_ALL, or
 * -1 when nothing is due.  Call until -1. */
int rally__launch_policy_due(struct rally__launch_policy *pol, int64_t now);

/* Writes the one line naming the outcome (none on success) to f and
 * returns the exit status (the rules above). */
int rally__launch_policy_verdict(const struct rally__launch_policy *pol,
                                 const struct rally__launch_view *v, FILE *f);
/* pol is the next attempt of the job whose last attempt was prev (rally-run
 * --auto-resume): its summary counts prev's deaths, recoveries and restarts
 * too, and one job restart more than prev's. */
void rally__launch_policy_carry(struct rally__launch_policy *pol,
                                const struct rally__launch_policy *prev);
/* Writes the summary line to f: the counts of every attempt of the job,
 * " job-restarts=K" when there were K > 0 before this one, and
 * " lost-for-good=R,... workers=N" when an elastic job went on without
 * ranks R (numbered as launched). */
void rally__launch_policy_summary(const struct rally__launch_policy *pol, FILE *f);

/* For observers (rally-run --status): the summary line's counts, and one
 * rank's (numbered as launched). */
struct rally__launch_counts {
    int deaths, recovered, epochs, restarts, job_restarts;
};
void rally__launch_policy_counts(const struct rally__launch_policy *pol,
                                 struct rally__launch_counts *c);
struct rally__launch_rank_counts {
    int deaths, restarts;
    int running;   /* a process holds the rank */
    int finalized; /* the tracker saw its SHUTDOWN */
    int dropped;   /* given up for good */
    int outside;   /* it ended before the job took it in */
    const char *cause; /* its newest death's cause, "" before any (the policy's storage) */
};
void rally__launch_policy_rank(const struct rally__launch_policy *pol, int rank,
                               struct rally__launch_rank_counts *c);

#endif
