/*
 * engine.h — the seam between the public API and the backend that runs its
 * calls: an ops table, chosen when the library is linked.
 *
 * src/api checks a call's arguments, keeps the reducer registry and the
 * spent-handle rule, and hands the call to the engine; the engine runs it
 * (with whatever recipe of collectives it needs) and reports failures
 * through the rally__err it was given at init.  The snapshot layer
 * (src/snapjob/snapjob.c) is the engine's subscriber: it sees checkpoints only
 * through the ops below (commits, turns, agree, lend/release, a fresh
 * start's adoption).  Each library links exactly one engine, which defines
 * the table rally__engine: librally and librally_mock link the robust
 * engine (src/robust), librally_mpi the MPI engine (src/mpi).  A backend
 * includes this header and nothing else from src/api.
 */
#ifndef RALLY_API_ENGINE_H
#define RALLY_API_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rally/rally.h"
#include "util/config.h"
#include "util/err.h"
#include "util/reduce.h" /* struct rally__reducer: the registry's entries */
#include "util/report.h" /* RALLY__REPORT_*: what the report op tells */

struct rally__engine; /* a backend's state, opaque to src/api */

/* --- subscribers: the snapshot layer (src/snapjob/snapjob.c), or any other ---
 *
 * An engine calls its subscribers' hooks at the same place on every rank,
 * also on a worker that replaces one that died (served what it missed). */

/* The turns (a subscriber's turn hook): at the start of every checkpoint,
 * before it stores its new version (what a commit began is settled in the
 * version it was begun in), and in finalize before the last barrier. */
enum { RALLY__TURN_CHECKPOINT = 1, RALLY__TURN_FINALIZE = 2 };

/* Local models a fresh start can adopt: this rank's own and the replicas
 * it holds, of its predecessors on the engine's placement ring
 * (RALLY__ADOPT_MAX covers every engine's replicas). */
#define RALLY__ADOPT_MAX 17

/* What a fresh start adopts as its committed version (a resumed
 * snapshot): the fresh hook fills it, the engine owns the buffers after. */
struct rally__adopt {
    int nlocal;       /* in: slots this rank holds, j = 0 .. nlocal-1 */
    int slot_rank[RALLY__ADOPT_MAX]; /* in: whose model slot j holds (slot 0: this rank) */
    uint64_t version; /* out: 0 starts afresh (nothing adopted) */
    void *global;     /* out, malloc'd, never NULL (also for 0 bytes) */
    uint64_t global_nbytes;
    int has_local;                 /* out: the job passes local models */
    void *local[RALLY__ADOPT_MAX]; /* out: slot j, rank slot_rank[j]'s, likewise */
    uint64_t local_nbytes[RALLY__ADOPT_MAX];
};

struct rally__subscriber {
    /* Checkpoint version v is committed (every rank has stored it), with
     * the request bits all ranks agreed for it.  Runs inside the
     * checkpoint (or load_checkpoint) call: it may lend v's bytes and must
     * not call collectives.  NULL: none. */
    void (*commit)(void *arg, uint64_t version, uint64_t flags);
    /* Its turn (RALLY__TURN_*): it may call agree (and no other
     * collective); a non-OK status fails the call that gave the turn.
     * NULL: none. */
    int (*turn)(void *arg, int when);
    /* load_checkpoint found the whole job starting afresh (no worker holds
     * a checkpoint): a version to adopt in *a, or a->version 0.
     * RALLY_ECONFIG (the job's settings are wrong, which no restart
     * repairs) fails the job.  NULL: none; one subscriber at most. */
    int (*fresh)(void *arg, struct rally__adopt *a);
    void *arg;
    /* The job went on with other workers (an elastic job): every rank went
     * back to committed version v, and this one is rank of world now;
     * whatever a commit began is void.  No collectives.  NULL: none. */
    void (*resized)(void *arg, uint64_t version, int rank, int world);
};

/* The tiers a snapshot is committed in, named after their settings:
 * rally_snapshot_dir, and the second tier rally_snapshot_copy. */
#define RALLY__TIER_DIR "dir"
#define RALLY__TIER_COPY "copy"

/* The subscribers an engine holds, with what every engine does with them
 * alike (inline: part of the interface, not a call up into src/api). */
#define RALLY__MAX_SUBSCRIBERS 4
struct rally__subscribers {
    struct rally__subscriber s[RALLY__MAX_SUBSCRIBERS];
    int n;
};

/* Adds sub: RALLY_EINVAL (e's sentence) when full, or a second fresh hook. */
static inline int rally__subscribers_add(struct rally__subscribers *l,
                                         const struct rally__subscriber *sub, struct rally__err *e)
{
    int fresh = 0;
    for (int i = 0; i < l->n; i++)
        fresh |= l->s[i].fresh != NULL;
    if (l->n == RALLY__MAX_SUBSCRIBERS || (fresh && sub->fresh != NULL))
        return rally__fail(e, RALLY_EINVAL,
                           "a handle takes at most %d checkpoint subscribers, one of them with a "
                           "fresh-start hook; this is one more",
                           RALLY__MAX_SUBSCRIBERS);
    l->s[l->n++] = *sub;
    return RALLY_OK;
}

static inline void rally__subscribers_commit(const struct rally__subscribers *l, uint64_t v,
                                             uint64_t flags)
{
    for (int i = 0; i < l->n; i++)
        if (l->s[i].commit != NULL)
            l->s[i].commit(l->s[i].arg, v, flags);
}

static inline void rally__subscribers_resized(const struct rally__subscribers *l, uint64_t v,
                                              int rank, int world)
{
    for (int i = 0; i < l->n; i++)
        if (l->s[i].resized != NULL)
            l->s[i].resized(l->s[i].arg, v, rank, world);
}

/* Every turn, in order; the first non-OK status ends them. */
static inline int rally__subscribers_turn(const struct rally__subscribers *l, int when)
{
    for (int i = 0; i < l->n; i++) {
        int rc = l->s[i].turn ? l->s[i].turn(l->s[i].arg, when) : RALLY_OK;
        if (rc != RALLY_OK)
            return rc;
    }
    return RALLY_OK;
}

/* A fresh start: *a from the fresh hook (a->version 0 without one), nlocal
 * the slots this rank holds, slot_rank[j] whose model slot j holds.  The
 * caller adopts what it takes and then frees the rest with
 * rally__adopt_free. */
static inline int rally__subscribers_fresh(const struct rally__subscribers *l, int nlocal,
                                           const int *slot_rank, struct rally__adopt *a)
{
    memset(a, 0, sizeof *a);
    a->nlocal = nlocal;
    memcpy(a->slot_rank, slot_rank, (size_t)nlocal * sizeof *slot_rank);
    for (int i = 0; i < l->n; i++)
        if (l->s[i].fresh != NULL)
            return l->s[i].fresh(l->s[i].arg, a);
    return RALLY_OK;
}

/* What an adoption left behind (NULL where the engine took the buffer). */
static inline void rally__adopt_free(struct rally__adopt *a)
{
    free(a->global);
    for (int j = 0; j < RALLY__ADOPT_MAX; j++)
        free(a->local[j]);
}

struct rally__engine_ops {
    const char *name;
    /* Joins the job (or stays rank 0 of 1 alone).  Errors go to e, which
     * outlives the engine; on failure nothing is left to free. */
    int (*init)(const struct rally__config *cfg, const char *host, struct rally__err *e,
                struct rally__engine **out);
    void (*free)(struct rally__engine *en); /* NULL is fine */
    /* rally_init failed before init could run (a setting refused, e's
     * sentence): tell the launcher, where cfg (the settings that name it:
     * tracker, secret, task id, connect timeout) reaches one, so the job
     * fails once with that sentence.  Blocks briefly; NULL in a backend
     * without a launcher to tell. */
    void (*start_failed)(const struct rally__config *cfg, const char *host,
                         const struct rally__err *e);
    /* Leaves the job: the agreement that nobody needs this worker any more. */
    int (*finalize)(struct rally__engine *en);
    int (*rank)(const struct rally__engine *en);
    int (*world)(const struct rally__engine *en);
    uint64_t (*version)(const struct rally__engine *en);

    /* The collectives of include/rally/rally.h, arguments already checked. */
    int (*allreduce)(struct rally__engine *en, void *buf, size_t count, int dtype, int op,
                     rally_prepare_fn prepare, void *prepare_arg);
    int (*allreduce_custom)(struct rally__engine *en, void *buf, size_t count, int reducer_id,
                            const struct rally__reducer *rd, rally_prepare_fn prepare,
                            void *prepare_arg);
    int (*broadcast)(struct rally__engine *en, void *buf, size_t nbytes, int root);
    int (*broadcast_alloc)(struct rally__engine *en, void **buf, size_t *nbytes, int root);
    int (*allgather)(struct rally__engine *en, const void *sendbuf, size_t nbytes, void *recvbuf);
    int (*allgatherv)(struct rally__engine *en, const void *sendbuf, size_t nbytes, void **recvbuf,
                      uint64_t *nbytes_per_rank);

    /* Checkpoints: global may be NULL with nbytes 0, local NULL for none. */
    int (*load)(struct rally__engine *en, void **global, uint64_t *global_nbytes, void **local,
                uint64_t *local_nbytes, uint64_t *version);
    int (*checkpoint)(struct rally__engine *en, const void *global, uint64_t global_nbytes,
                      const void *local, uint64_t local_nbytes);
    int (*lazy_checkpoint)(struct rally__engine *en, rally_serialize_fn serialize, void *arg);
    /* Request bits for the next checkpoint's commit (OR-ed over ranks); a
     * subscriber receives them at every commit from now on. */
    void (*request)(struct rally__engine *en, uint64_t bits);
    int (*subscribe)(struct rally__engine *en, const struct rally__subscriber *s);
    /* In a turn only: n words OR-ed over every rank, in place; an
     * operation like any other (the robust engine caches it and serves it
     * to a worker that replaces one that died). */
    int (*agree)(struct rally__engine *en, uint64_t *words, size_t n);
    /* The read interface: the committed bytes of checkpoint version v,
     * rank -1 the global model (a lazy one serialized now), rank r r's
     * local model where this worker holds a copy.  They stay valid and
     * unchanged, however many checkpoints follow, until release. */
    int (*lend)(struct rally__engine *en, uint64_t version, int rank, const void **bytes,
                uint64_t *nbytes);
    void (*release)(struct rally__engine *en, const void *bytes);
    /* 1 when the job passes local models (known from its first checkpoint,
     * or an adopted version). */
    int (*has_local)(const struct rally__engine *en);
    /* The host rank r runs on, as the job's membership names it. */
    const char *(*host)(const struct rally__engine *en, int rank);

    /* rally_set_input (already checked): the launcher is told the input
     * this incarnation read, so that a replacement that read another one
     * fails the job; NULL in a backend without a launcher to tell. */
    int (*set_input)(struct rally__engine *en, const char *scheme, const char *fingerprint);

    /* rally_set_local_records (already checked); NULL in a backend whose
     * workers never change. */
    int (*local_records)(struct rally__engine *en, rally_owner_fn owner, void *arg);

    int (*tracker_print)(struct rally__engine *en, const char *msg);
    /* For observers only: a public collective completed (src/api counts
     * each call once, an exact sum too, and nothing of its own), its
     * result nbytes long (an allgather's whole receive buffer, allgatherv's
     * blocks).  The robust engine keeps the running totals for its
     * heartbeats; MPI ignores it.  Cheap, never blocks. */
    void (*count)(struct rally__engine *en, uint64_t nbytes);
    /* For observers only (rally_report, rally_report_total, a snapshot's
     * fate, said by rank 0): kind RALLY__REPORT_* (util/report.h) with key, value,
     * version, nbytes and text, as tracker/proto.h's REPORT frame carries
     * them (key and text are copied; a VALUE's key already checked, text
     * cut at 1023 bytes).  Never blocks on the network and never fails:
     * what cannot go at once is dropped.  A backend without a launcher to
     * tell (MPI), or a worker alone, does nothing. */
    void (*report)(struct rally__engine *en, int kind, const char *key, double value,
                   uint64_t version, uint64_t nbytes, const char *text);
    /* rally_abort: fails the whole job with sentence (every rank's calls
     * then return RALLY_EPEER "rank R failed: sentence"); returns once the
     * job is failed, with en's error set to that sentence (RALLY_EPEER).  A
     * backend that cannot return (MPI_Abort) documents it. */
    int (*abort_job)(struct rally__engine *en, int code, const char *sentence);
    /* rally_attempt: starts of this rank before this process (0: first). */
    int (*attempt)(const struct rally__engine *en);
    /* For benchmarks: the allreduce without fault tolerance (no cache, no
     * copies), out of place when in != out; NULL in a backend without. */
    int (*plain_allreduce)(struct rally__engine *en, const void *in, void *out, size_t count,
                           int dtype, int op);
};

/* The engine this library was linked with. */
extern const struct rally__engine_ops rally__engine;

#endif
