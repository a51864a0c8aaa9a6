/*
 * robust.h — recovery without a global restart (rabit's model, rebuilt).
 *
 * Every public call is one *operation* at a *position*: a 64-bit key that
 * orders everything a worker does (docs/recovery.md):
 *
 *     bootstrap op b (before the first load_checkpoint)   (0 << 62) | b
 *     inside rally_load_checkpoint                         (1 << 62)
 *     op q of checkpoint version V                         (2 << 62) | V << 32 | q
 *         (q = 0: the checkpoint's acknowledgement; user collective s: q = s + 1)
 *     inside rally_finalize                                (3 << 62)
 *
 * Each worker caches the result of every operation since the previous
 * checkpoint (bootstrap results for the whole job).  In normal running no
 * agreement is needed: every worker makes the same calls, and the collective
 * layer's signatures catch any that differ.  When a worker dies the tracker
 * starts a new epoch: every survivor stops its collective, re-wires with the
 * restarted worker, and then all run *agreement rounds* — a small allreduce
 * of (lowest position, highest position, who needs the checkpoint, who has
 * the newest) — until everyone stands at the same position.  A worker behind
 * the others gets the checkpoint or the cached result it lacks, broadcast
 * over the tree from the lowest-ranked worker that has it, and returns that
 * result to its caller without computing it (prepare is not called).
 *
 * This layer sits on src/coll (links, algorithms) and src/tracker/client
 * (epochs); the collective layer knows nothing of it.
 */
#ifndef RALLY_ROBUST_ROBUST_H
#define RALLY_ROBUST_ROBUST_H

#include <stdint.h>

#include "coll/coll.h"
#include "mock/mock.h"
#include "tracker/client.h"
#include "tracker/proto.h" /* positions: RALLY__KEY_* */
#include "util/config.h"
#include "util/err.h"

struct rally__robust;
struct rally__op;

/* Runs the collective on the live links.  On success *res is a buffer from
 * rally__robust_buf() holding the call's whole result (*res_nbytes bytes),
 * which the cache keeps, and the caller's outputs are written. */
typedef int (*rally__op_run)(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                             uint64_t *res_nbytes);
/* Writes a result served by recovery into the caller's outputs. */
typedef int (*rally__op_deliver)(struct rally__robust *rb, struct rally__op *op,
                                 const unsigned char *res, uint64_t nbytes);

struct rally__op {
    struct rally__sig sig;
    rally_prepare_fn prepare;
    void *prepare_arg;
    rally__op_run run;
    rally__op_deliver deliver;
    void *ctx; /* the public call's arguments */
};

struct rally__entry {
    uint64_t key;
    struct rally__sig sig;
    unsigned char *data; /* from rally__robust_buf */
    uint64_t nbytes;
};

#define RALLY__MAX_REPLICA 7

/* Local models of one checkpoint version held by this worker: slot j is
 * rank (rank - j) mod world's model, j = 0 (its own) .. k. */
struct rally__localset {
    uint64_t version;
    int valid; /* replication of this version completed */
    unsigned char *data[RALLY__MAX_REPLICA + 1];
    uint64_t nbytes[RALLY__MAX_REPLICA + 1];
};

struct rally__robust {
    struct rally__err *err;
    const struct rally__config *cfg;
    int rank, world, distributed;
    struct rally__tclient tc;
    struct rally__comm comm;
    int listen_fd;
    int recovering; /* since an epoch began, until every worker is in step */
    int fatal;      /* the tracker aborted the job */
    int loaded;     /* load_checkpoint or checkpoint was called */
    uint64_t version;
    uint32_t q;    /* next op within the version (user seq + 1) */
    uint32_t boot; /* next bootstrap op */
    unsigned char *ckpt; /* the newest checkpoint's global model */
    uint64_t ckpt_nbytes;
    rally_serialize_fn lazy; /* or: serialize it only when asked */
    void *lazy_arg;
    int use_local;                  /* the job checkpoints local models */
    int k;                          /* replicas of each local model */
    struct rally__localset loc[2];  /* double buffer: the newest valid and the next */
    struct rally__entry *cache;
    int ncache, capcache;
    uint64_t cache_nbytes;
    unsigned char **pool; /* spare result buffers, reused */
    int npool;
    struct rally__mock mock;
};

/* Joins the job (or stays rank 0 of 1 without a tracker). */
int rally__robust_init(struct rally__robust *rb, const struct rally__config *cfg,
                       const char *host, struct rally__err *e);
void rally__robust_free(struct rally__robust *rb);

/* One public collective. */
int rally__robust_op(struct rally__robust *rb, struct rally__op *op);

int rally__robust_load(struct rally__robust *rb, void **global, uint64_t *global_nbytes,
                       void **local, uint64_t *local_nbytes, uint64_t *version);
/* global may be NULL with lazy set (then nothing is copied); local NULL: none. */
int rally__robust_checkpoint(struct rally__robust *rb, const void *global, uint64_t nbytes,
                             rally_serialize_fn lazy, void *lazy_arg, const void *local,
                             uint64_t local_nbytes);
/* The finalize agreement and SHUTDOWN. */
int rally__robust_finalize(struct rally__robust *rb);

/* rally_tracker_print: to the tracker, or stdout without one. */
int rally__robust_print(struct rally__robust *rb, const char *msg);

/* A buffer of at least nbytes for a result (from the pool when possible);
 * NULL when out of memory.  unbuf returns it to the pool. */
unsigned char *rally__robust_buf(struct rally__robust *rb, uint64_t nbytes);
void rally__robust_unbuf(struct rally__robust *rb, unsigned char *p);

#endif
