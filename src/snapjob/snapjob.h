/*
 * snapjob.h — durable snapshots of a job over any engine: the snapshot
 * layer's subscriber to checkpoints (snapjob.c), the second tier
 * (tier2.c), resuming (resume.c) and what it says (say.c, at the bottom).
 * Its own layer: above src/snapshot and the engine interface it drives
 * (api/engine.h), below src/api, which starts it.
 *
 * It sees the engine only through its ops (api/engine.h): commits with
 * agreed request bits, a turn in every checkpoint and in finalize with an
 * agreement of its own, lend/release of a committed version's bytes, and
 * a fresh start that adopts a resumed version.  Bytes go to disk through
 * src/snapshot, which knows no engine.  So librally and librally_mpi take
 * the same snapshots and resume them alike.
 */
#ifndef RALLY_SNAPJOB_SNAPJOB_H
#define RALLY_SNAPJOB_SNAPJOB_H

#include <limits.h>
#include <stdint.h>

#include "api/engine.h"
#include "snapshot/snapshot.h"
#include "util/config.h"
#include "util/err.h"

/* Request bits of the checkpoint acknowledgement (docs/recovery.md,
 * "Commits and request bits"): the engine ORs them and does not know them. */
#define RALLY__REQ_SNAPSHOT (UINT64_C(1) << 0)     /* snapshot the version this commits */
#define RALLY__REQ_SNAP_PENDING (UINT64_C(1) << 1) /* a snapshot's parts are still being written */
/* the second tier: a copy is outstanding; some rank is still copying its
 * files; some rank could not (the three say, with none of the last two,
 * that every rank's files are there) */
#define RALLY__REQ_COPY_OUT (UINT64_C(1) << 2)
#define RALLY__REQ_COPY_BUSY (UINT64_C(1) << 3)
#define RALLY__REQ_COPY_FAILED (UINT64_C(1) << 4)
/* ... or a rank lost its files of it: restarted while they were being
 * copied (the copy is void, the tier did not refuse it) */
#define RALLY__REQ_COPY_LOST (UINT64_C(1) << 5)
/* a newer reported snapshot waits for the copy outstanding: the commit
 * that settles it starts that one's copy, also on the ranks of a worker
 * restarted since, which knows then that it lost its files of it */
#define RALLY__REQ_COPY_NEXT (UINT64_C(1) << 6)

#define RALLY__SNAP_NONE UINT64_MAX
#define RALLY__SNAP_UNKNOWN (UINT64_MAX - 1) /* pending, version unknown: a restarted rank */

/* With rally_snapshot_copy, the second tier (tier2.c's alone; snapjob.c asks
 * rally__snapjob_copying): every rank copies its own files of the newest
 * reported snapshot, rank 0 commits the copy once the commit flags say all
 * are there (tier2.c). */
struct rally__snapjob_tier2 {
    struct rally__snap_copier *copier;
    char src[PATH_MAX];  /* rally_snapshot_dir, absolute: where the files are read */
    uint64_t copy_v;     /* the version being copied (agreed), NONE, or UNKNOWN */
    int copy_n;          /* ... this rank's files of it handed to the copier */
    /* rank 0: the copy's manifests (malloc'd), of version man_v[i]: of the
     * copy outstanding, and of the one waiting (made at its report) */
    char *man[2];
    size_t man_n[2];
    uint64_t man_v[2];
    int copy_said;       /* ... this rank said why it failed */
    uint64_t copy_void;  /* a copy the flags said failed, for rally_snapshot_required */
    uint64_t next_v;     /* a newer reported snapshot waiting to be copied, or NONE */
    struct rally__snap_file next_f[RALLY__SNAP_PARTS_MAX]; /* ... this rank's files of it */
    int next_n;
};

/* The run (resume.c's alone): named by the launcher, or owned by this job. */
struct rally__snapjob_run {
    int owner; /* no launcher named it: rank 0 holds the lock and cleans up */
    struct rally__snap_lock *lock;
    char jobdir[PATH_MAX];
    char copy_jobdir[PATH_MAX]; /* rally_snapshot_copy/job; "" none */
    char resume[PATH_MAX]; /* the snapshot to resume from, resolved; "" none */
};

struct rally__snapjob {
    struct rally__engine *en;
    const struct rally__config *cfg;
    struct rally__err *err;
    int rank, world;
    struct rally__snap_bg *bg;
    char job[RALLY__SNAP_JOB_MAX + 1];
    char run_id[RALLY__SNAP_UUID_LEN + 1];
    char run_started[RALLY__SNAP_TIME_LEN + 1];
    uint64_t pending;           /* the version whose parts are being written, or NONE */
    uint64_t last;              /* the newest version a snapshot was taken of, or NONE */
    int64_t last_ms;            /* rank 0: when the last one was taken (or the start) */
    int nparts;                 /* parts submitted and not yet collected from the writer */
    int failed;                 /* this rank's part of pending failed (or is lost) */
    int logged;                 /* ... and it said so */
    int skip;                   /* rally_snapshot_busy=skip */
    int checkpoints;            /* checkpoint turns this process took (0: none yet) */
    struct rally__snap_bg *cbg; /* rank 0: the committer (manifest, retention) */
    uint64_t committing;        /* ... the version it is committing, or NONE */
    uint64_t committing_nbytes; /* ... and its files' bytes, for observers */
    struct rally__snapjob_tier2 t2; /* tier2.c's alone */
    /* the training thread's stall: in the snapshot pending (take, and the
     * checkpoints' reports), and over the snapshots reported at checkpoints */
    int64_t stall_us, stall_sum_us, stall_max_us;
    int64_t report_us; /* the last report's agreement (waiting for the slowest rank) */
    int stalls;
    int resumed;       /* this process started from a snapshot */
    uint64_t files[4]; /* what it wrote: local size and sum, global size and sum */
    char why[RALLY__ERR_MSG_MAX];
    char *app_name, *app_config;
    char scheme[65]; /* rally_set_input: the partitioning scheme, "" none */
    int has_fp;      /* ... and this rank's input fingerprint */
    rally_owner_fn rec_owner; /* the local models are records (rally_set_local_records) */
    void *rec_arg;
    uint64_t fp;
    struct rally__snap_change *changes; /* an elastic job's worker changes (manifest) */
    size_t nchanges;
    int report_world; /* ... the ranks report has room for */
    uint64_t *report;                        /* the report's words: world slots (snapjob.c), kept */
    const void *lent[RALLY__SNAP_PARTS_MAX]; /* the engine's bytes the writer reads */
    int nlent;
    struct rally__snapjob_run rs; /* resume.c's alone */
};

/* --- snapjob.c -------------------------------------------------------------- */

/* Subscribes the snapshot layer to en when rally_snapshot_dir or
 * rally_resume is set (*out NULL otherwise).  prog names the job when
 * rally_snapshot_job does not.  Collective when no launcher named the run
 * (resume.c).  Errors go to e. */
int rally__snapjob_start(struct rally__engine *en, const struct rally__config *cfg,
                         const char *prog, struct rally__err *e, struct rally__snapjob **out);
/* Stops the writers and gives back what they borrowed: before the engine
 * is freed (NULL is fine). */
void rally__snapjob_free(struct rally__snapjob *sj);
/* The application's name and configuration string, for the manifest and
 * the resume check. */
int rally__snapjob_set_app(struct rally__snapjob *sj, const char *name, const char *config);
/* The input's partitioning scheme and this rank's fingerprint (checked),
 * likewise. */
void rally__snapjob_set_input(struct rally__snapjob *sj, const char *scheme, uint64_t fp);
/* rally_set_local_records: the manifests say so, and a resume at another
 * world size moves the records to their owners. */
void rally__snapjob_set_records(struct rally__snapjob *sj, rally_owner_fn owner, void *arg);

/* --- say.c: what the snapshot job tells (every file calls it) ------------- */

/* A line on stderr behind the rank ("rally: rank R: snapshot: ..."). */
void rally__snapjob_say(const struct rally__snapjob *sj, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Rank 0 tells observers (the engine's report op) what became of the
 * snapshot of version v in tier (RALLY__TIER_*): committed (ok 1; nbytes,
 * where: its path) or void (ok 0; where: why). */
void rally__snapjob_tell(struct rally__snapjob *sj, const char *tier, int ok, uint64_t v,
                         uint64_t nbytes, const char *where);

/* --- tier2.c: the second tier (called from snapjob.c) ---------------------- */

/* Whether the job copies to a second tier (rally_snapshot_copy). */
static inline int rally__snapjob_copying(const struct rally__snapjob *sj)
{
    return sj->t2.copier != NULL;
}
/* Its state before anything (no copy outstanding or waiting), its copier
 * started (0, or the status with sj->err), and both gone. */
void rally__snapjob_tier2_init(struct rally__snapjob *sj);
int rally__snapjob_tier2_open(struct rally__snapjob *sj);
void rally__snapjob_tier2_free(struct rally__snapjob *sj);
/* Rank 0: the copy's manifest of version (m), kept until every rank's
 * files are there. */
int rally__snapjob_copy_manifest(struct rally__snapjob *sj, const struct rally__snap_manifest *m,
                                 uint64_t version, struct rally__err *e);
/* The agreed copy bits of a commit (its flags), or of finalize's word. */
void rally__snapjob_copy_agreed(struct rally__snapjob *sj, uint64_t flags);
/* The snapshot of version v was reported: this rank's files go to its copier. */
void rally__snapjob_copy_start(struct rally__snapjob *sj, uint64_t v);
/* This rank's copy bits for the next commit's request. */
uint64_t rally__snapjob_copy_bits(struct rally__snapjob *sj);
/* What the copier said, said; a failed copy with rally_snapshot_required. */
int rally__snapjob_copies(struct rally__snapjob *sj);
/* Finalize: every copier drained, the last copy settled by agreement. */
int rally__snapjob_copy_last(struct rally__snapjob *sj);
/* The job went on with other workers: the copy outstanding and the one
 * waiting were the old world's, void on every rank alike. */
void rally__snapjob_copy_resized(struct rally__snapjob *sj, uint64_t v, int world);

/* --- resume.c --------------------------------------------------------------- */

/* The run's name, lock and the snapshot to resume from: given by the
 * launcher, or (no rally_run_id) chosen by rank 0 and broadcast. */
int rally__snapjob_run(struct rally__snapjob *sj);
/* The engine's fresh hook: the resumed version, read and verified. */
int rally__snapjob_fresh(void *arg, struct rally__adopt *a);
/* Whether this job resumes from a snapshot. */
static inline int rally__snapjob_resuming(const struct rally__snapjob *sj)
{
    return sj->rs.resume[0] != '\0';
}
/* Gives up the job directory's lock, if this worker holds it. */
void rally__snapjob_run_free(struct rally__snapjob *sj);
/* The job finalized successfully: a run this job owns removes its
 * snapshots unless kept (rally_keep_snapshots, rally_snapshot_final). */
void rally__snapjob_done(struct rally__snapjob *sj);

#endif
