/*
 * snaps.h — a run's durable snapshots as rally-run owns them
 * (docs/snapshot-format.md): the run's name and the job directory's lock,
 * the fresh-start check, --resume resolved and verified before any worker
 * starts, the clean-up after success, the snapshot --auto-resume restarts
 * from, and preemption's watch for the snapshot it asked for.  What the
 * workers are told (RALLY_SNAPSHOT_*, RALLY_RUN_*, RALLY_RESUME*) is read
 * from here; starting them and signalling rank 0 stay rally-run's.
 */
#ifndef RALLY_TOOLS_LAUNCH_SNAPS_H
#define RALLY_TOOLS_LAUNCH_SNAPS_H

#include <limits.h>
#include <stdint.h>

#include "snapshot/snapshot.h"

struct rally__launch_snaps {
    /* the options (rally-run's snapshot flags and their variables) */
    const char *dir;     /* --snapshot-dir; NULL: no snapshots */
    const char *copy;    /* --snapshot-copy: the second tier; NULL: none */
    const char *job_opt; /* --job; NULL: the program's name */
    const char *resume;  /* --resume latest|PATH; NULL: a fresh start */
    const char *busy;    /* --snapshot-busy */
    int64_t every, every_ms, keep;
    int keep_all, required, final, overwrite, force, local;
    /* the run, once named (rally__launch_snaps_setup) */
    char job[RALLY__SNAP_JOB_MAX + 1];
    char abs[PATH_MAX], jobdir[PATH_MAX + RALLY__SNAP_JOB_MAX + 2], resume_path[PATH_MAX];
    char copy_abs[PATH_MAX], copy_jobdir[PATH_MAX + RALLY__SNAP_JOB_MAX + 2]; /* "": none */
    char run_id[RALLY__SNAP_UUID_LEN + 1], run_started[RALLY__SNAP_TIME_LEN + 1];
    char every_s[24], every_ms_s[24], keep_s[24]; /* the numbers, for the workers */
    struct rally__snap_lock *lock;
    /* preemption (SIGTERM with --snapshot-dir) */
    int preempting;        /* rank 0 was asked: waiting for the commit */
    int64_t preempt_until; /* ... at most until then; 0: never asked */
    int64_t preempt_look;  /* the next look at the job directory */
    uint64_t preempt_top;  /* its newest snapshot directory's version when asked */
};

/* Before any worker starts: the run's UUID and start, the job's name
 * (--job, or argv's program: for a Python interpreter its script), and with
 * --snapshot-dir the lock, the fresh-start check, --resume resolved and
 * verified for world workers.  Says what is wrong on stderr; 0 or the exit
 * status.  dry_run: names only, no lock. */
int rally__launch_snaps_setup(struct rally__launch_snaps *s, char **argv, int world, int dry_run);
/* After the run (status its exit status): a successful one removes its
 * snapshots unless kept; otherwise the newest of this run is named. */
void rally__launch_snaps_cleanup(struct rally__launch_snaps *s, int status);
/* --auto-resume: this run's newest complete snapshot, else the one it
 * resumed from, verified, becomes resume_path; 1 when there is one (said,
 * with the attempt's number of max), else 0 (said why). */
int rally__launch_snaps_auto(struct rally__launch_snaps *s, int attempt, int max);
/* Preemption begins at now: the snapshot asked for is the first of this run
 * newer than every snapshot directory there now, due within grace_ms. */
void rally__launch_snaps_preempt(struct rally__launch_snaps *s, int64_t now, int64_t grace_ms);
/* While preempting, at now: 1 when the snapshot asked for is committed (its
 * path in path[cap]), -1 when the grace is over without it, 0 to look again
 * (at preempt_look at the earliest); preempting ends with 1 or -1. */
int rally__launch_snaps_preempted(struct rally__launch_snaps *s, int64_t now, char *path,
                                  size_t cap);
void rally__launch_snaps_free(struct rally__launch_snaps *s);

#endif
