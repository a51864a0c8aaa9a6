/*
 * robust.h — the robust engine's private header: recovery without a global
 * restart (rabit's model, rebuilt), shared by the files of src/robust only.
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
 * The files, one concern each:
 *   op.c          the op driver: run or recover each operation; checkpoint,
 *                 load, finalize and the checkpoint's acknowledgement; the
 *                 position (rb->pos)
 *   cache.c       the result cache and its buffer pool (rb->cache), and
 *                 which pieces of a big result a worker keeps (rally__part)
 *   store.c       the checkpoint store (its state rb->st, touched by no
 *                 other file): the global model, local-model sets and their
 *                 replication, the read interface (lend/release), the
 *                 subscribers: commits, turns and their agreement, a fresh
 *                 start's adoption
 *   membership.c  the tracker client, the mesh and links (rb->mem): join, wire,
 *                 reset, rejoin; a change of the workers (renumbering,
 *                 going back to the committed version, taking workers in);
 *                 rally's tracker kind
 *                 (rally__tracker_rally: reset, input, print, leave)
 *   membership_dmlc.c  the classic dmlc tracker's kind (rally__tracker_dmlc)
 *   recovery.c    agreement rounds and transfers
 *   reshard.c     local models as records after a change of the workers
 *                 (rb->rec, touched by no other file): every record to the
 *                 rank that owns its id now
 *   verify.c      verified results (rb->vfy): digests in the signatures' sidecars
 *   allreduce.c   the in-place allreduce: what it keeps as bytes become
 *                 final, the retry of what is not
 *   engine.c      the ops table of api/engine.h: the public calls as
 *                 operations; the engine's start and stop
 *   fail.c        at the bottom: a failure recovery cannot repair, told
 *                 to the tracker (rally__robust_fatal, rally__robust_lost)
 *
 * Each sub-struct of struct rally__robust is its file's alone; the others
 * ask that file's functions (or the inline readers below).  What stays
 * flat is what every file shares: the worker's identity (rank, world,
 * launch_rank), its settings and error (and whether the job failed for
 * good), the tracker client and the links.
 *
 * This layer sits on src/coll (links, algorithms) and src/tracker/client
 * (epochs); the collective layer knows nothing of it.  Outside src/robust
 * only engine.c's table is seen.
 */
#ifndef RALLY_ROBUST_ROBUST_H
#define RALLY_ROBUST_ROBUST_H

#include <stdint.h>

#include "api/engine.h" /* struct rally__subscriber, struct rally__adopt */
#include "coll/coll.h"
#include "mock/mock.h"
#include "tracker/client.h"
#include "tracker/proto.h" /* positions: RALLY__KEY_* */
#include "util/config.h"
#include "util/err.h"

struct rally__robust;
struct rally__op;
struct rally__dmlc; /* tracker/dmlc.h: the dmlc tracker's client */

/* The tracker a worker joined through: what membership does differently
 * for rally's own (membership.c) and the classic dmlc tracker
 * (membership_dmlc.c).  A worker alone has none. */
struct rally__tracker_kind {
    const char *name;
    /* the job lost a worker or a link: join the next epoch */
    int (*reset)(struct rally__robust *rb, int cause, uint64_t key);
    /* rally_set_input's check at the tracker; NULL: the tracker has none */
    int (*input)(struct rally__robust *rb, const char *scheme, const char *fingerprint);
    int (*print)(struct rally__robust *rb, const char *msg);
    /* a REPORT for observers, never blocking; NULL: the tracker has none */
    void (*report)(struct rally__robust *rb, const struct rally__msg_report *m);
    /* every worker is back in step after a recovery; NULL: nobody to tell */
    void (*in_step)(struct rally__robust *rb);
    /* finalize's goodbye, once nobody needs this worker */
    int (*leave)(struct rally__robust *rb);
    void (*free)(struct rally__robust *rb); /* NULL: nothing of its own */
};
extern const struct rally__tracker_kind rally__tracker_rally, rally__tracker_dmlc;

/* The collective kinds of this layer's own traffic (RALLY__K_*) are in
 * coll/coll.h, beside the others, so that every message can name them. */

/* rally__robust_recover() outcomes, beside the RALLY_* codes. */
enum { RALLY__SERVED = 1000, RALLY__EXECUTE = 1001 };

#define RALLY__NONE UINT64_MAX

/* The engine's own request bit (the snapshot layer's count up from bit 0,
 * snapjob/snapjob.h): a worker waits to join, so the version this commits is
 * where the job takes it in (docs/recovery.md, "Elastic jobs"). */
#define RALLY__REQ_GROW (UINT64_C(1) << 63)

/* Which part of a result a worker keeps (docs/recovery.md, "Results kept
 * in part").  The result, whole bytes of count elements, splits into world
 * pieces as the ring splits it (piece p: elements [count p / world,
 * count (p + 1) / world)); the worker at place i of the placement ring
 * (rally__robust_place) keeps pieces i, i + 1, ..., i + copies - 1 (mod
 * world), packed in that order, so each piece lives on copies workers
 * that follow each other on that ring, on other hosts where the hosts
 * allow.  copies 0: the whole result.  With rally_result_scheme=xor
 * (xor_g, the XOR sets' size) copies is 1 and the worker keeps, after its
 * piece, its parity chunk of its set's pieces (util/xor.h: the set of its
 * place, piece j of the set its member j's "model"), so a piece lost with
 * its keeper is rebuilt from the set's others.  The functions below name a
 * worker by its place. */
struct rally__part {
    uint64_t whole, count;
    uint32_t world, copies;
    uint32_t xor_g; /* 0: copies alone */
};

/* Results smaller than this are kept whole: their copy costs little. */
#define RALLY__PART_MIN (256 * 1024)

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
    /* run's answer when *res holds part of the result (allreduce.c's
     * allreduce): which part, and where the whole result is (the caller's
     * buffer) for verification; part.copies 0: *res is all of it */
    struct rally__part part;
    const unsigned char *whole;
};

struct rally__entry {
    uint64_t key;
    struct rally__sig sig;
    unsigned char *data; /* from rally__robust_buf */
    uint64_t nbytes;     /* data's bytes: part.whole, or the pieces kept */
    struct rally__part part;
};

#define RALLY__MAX_REPLICA 7

/* Local models of one checkpoint version held by this worker: slot j is
 * the model of the rank j places before it on the placement ring
 * (rally__robust_slot_rank), j = 0 (its own) .. k; owner[j] names it, in
 * the world the set was built in (a change of the workers leaves sets of
 * the old world behind, reshard.c).  With rally_local_scheme=xor k is 0
 * and slot RALLY__XOR_SLOT holds this worker's parity instead (owner -1):
 * its set's models' lengths, 8 bytes each in the set's order, then its
 * parity chunk (util/xor.h). */
#define RALLY__XOR_SLOT 1
struct rally__localset {
    uint64_t version;
    int valid; /* replication of this version completed */
    int owner[RALLY__MAX_REPLICA + 1];
    unsigned char *data[RALLY__MAX_REPLICA + 1];
    uint64_t nbytes[RALLY__MAX_REPLICA + 1];
    uint64_t cap[RALLY__MAX_REPLICA + 1]; /* data[j]'s capacity: kept across versions */
};

/* The store's buffers are reused across versions (store.c, "the buffer
 * rule" in docs/recovery.md): a buffer is written in place when it is big
 * enough and not lent; spares wait in a small pool keyed by capacity; a
 * buffer lent to a borrower (rally__robust_lend) is never written nor
 * pooled until it is given back (rally__robust_release). */
#define RALLY__STORE_SPARES 4
#define RALLY__STORE_LENT 4
struct rally__sbuf {
    unsigned char *p;
    uint64_t cap;
};

/* The checkpoint store's state (store.c): no other file touches it; they
 * ask store.c's functions. */
struct rally__store {
    unsigned char *ckpt; /* the newest checkpoint's global model */
    uint64_t ckpt_nbytes;
    uint64_t ckpt_cap;    /* ckpt's capacity */
    uint64_t ckpt_digest; /* rally_digest64 of ckpt's bytes */
    uint64_t committed;   /* the newest version acknowledged */
    /* an elastic job (rally_elastic) keeps the committed version's model
     * while the next one is stored and not yet acknowledged, so that every
     * survivor of a membership change can go back to the same version: the
     * two buffers take turns, nothing is allocated in the steady state */
    unsigned char *prev;
    uint64_t prev_nbytes, prev_cap, prev_digest, prev_version; /* 0: none */
    struct rally__sbuf spare[RALLY__STORE_SPARES];             /* reusable buffers, any capacity */
    int nspare;
    const unsigned char *lent[RALLY__STORE_LENT]; /* read by a borrower */
    int nlent;
    struct rally__sbuf held[RALLY__STORE_LENT]; /* lent ones the store let go of */
    int nheld;
    rally_serialize_fn lazy; /* or: serialize it only when asked */
    void *lazy_arg;
    int use_local;                  /* the job checkpoints local models */
    struct rally__localset loc[2];  /* double buffer: the newest valid and the next */
    struct rally__sbuf xbuf;        /* an XOR parity's partial chunk in flight, reused */
    uint64_t request;               /* bits for the next acknowledgement */
    struct rally__subscribers subs; /* commits, turns, a fresh start (api/engine.h) */
};

struct rally__robust {
    struct rally__err *err;
    const struct rally__config *cfg;
    const char *host; /* this worker's, for a membership of one */
    int rank, world, distributed;
    int launch_rank; /* the rank it was launched as (its task id), for the mock */
    int fatal;       /* the job failed for good: the tracker aborted it, or this worker
                        failed it (fail.c, rally__robust_fatal) */
    struct rally__tclient tc;
    struct rally__comm comm;
    /* this worker's place in the job (membership.c, membership_dmlc.c):
     * others read it through rally__robust_recovering/_resized */
    struct {
        const struct rally__tracker_kind *kind; /* NULL: alone */
        int listen_fd;
        int recovering;           /* since an epoch began, until every worker is in step */
        int resized;              /* the membership changed: every worker went back to its committed
                                     checkpoint, and load_checkpoint goes through an agreement */
        struct rally__dmlc *dmlc; /* the classic dmlc tracker's client (membership_dmlc.c) */
        int dmlc_port;            /* listen_fd's port, for the address book */
    } mem;
    /* where this worker stands (op.c's): others read it through
     * rally__robust_version/_user_seq and move it through _pos_* */
    struct {
        uint64_t version;
        uint32_t q;    /* next op within the version (user seq + 1) */
        uint32_t boot; /* next bootstrap op */
        int loaded;    /* load_checkpoint or checkpoint was called */
        /* the public collectives completed and their results' bytes, which
         * the heartbeats carry for observers (rally__robust_count) */
        uint64_t calls, nbytes;
        /* while an operation runs: 1 when this attempt follows a recovery's
         * agreement (every worker's attempt at this position does) */
        int retried;
    } pos;
    /* the straggler measure (op.c, docs/status.md "Who the others wait
     * for"): over the last rally_lateness_window public collectives, the
     * milliseconds this worker waited inside them and the milliseconds
     * they spanned (from the end of the call before), as the position's
     * stamps read them; the heartbeats carry the sums */
    struct {
        uint32_t wait_ms[RALLY__LATE_MAX], span_ms[RALLY__LATE_MAX]; /* a ring */
        int n, at;
        uint64_t wait_sum, span_sum;
        int64_t waited;   /* inside the current call's operations so far */
        int64_t end;      /* when the newest operation ended */
        int64_t last_end; /* when the call before ended; 0: none yet */
    } late;
    /* local models as records (rally_set_local_records): after a change they
     * move to their new owners at the load (reshard.c's alone) */
    struct {
        rally_owner_fn owner;
        void *arg;
        int pending;             /* the local sets are the old world's: move the records */
        int set_rank, set_world; /* ... the rank and world they were built for (0: none) */
    } rec;
    int k;                  /* placement-ring successors that hold a replica of each local model */
    /* the placement ring of this epoch (membership.c's topology; util/place.h):
     * order[i] is the rank at place i, pos[r] rank r's place; NULL: rank order */
    struct {
        int *order, *pos;
        int cap;
        int xor_g;     /* rally_local_scheme or rally_result_scheme xor: the XOR sets'
                          size in force (util/xor.h); 0: neither */
        int local_xor; /* local models kept as XOR parity over those sets */
    } place;
    struct rally__store st; /* the checkpoint store: store.c's alone */
    /* the result cache (cache.c's alone) */
    struct {
        struct rally__entry *v;
        int n, cap;
        uint64_t nbytes;
        struct rally__sbuf *pool; /* spare result buffers with their capacities, reused */
        int npool, pool_cap;
        struct rally__sbuf scratch; /* an allreduce's partial sums when it keeps part */
    } cache;
    /* an allreduce's ranges of final values (allreduce.c's alone), reused */
    struct {
        void *v;
        int cap;
    } spans;
    /* the allreduce this worker is in (allreduce.c sets it for its attempts,
     * op.c clears it when the operation ends): after a failed attempt, the
     * bytes of the caller's buffer that hold final values, from which
     * recovery.c serves pieces of the result that no worker that finished
     * it keeps (a host lost right after the call, with this worker still
     * in it: docs/recovery.md, "Results kept in part") */
    struct {
        const unsigned char *buf; /* NULL: none */
        uint64_t nbytes;
        int (*final)(const void *arg, uint64_t off, uint64_t n); /* all of [off, off + n) */
        const void *arg;
    } partial;
    struct rally__mock mock;
    /* verified results (verify.c) */
    struct {
        uint64_t ncalls;       /* user collectives with a result, job-wide */
        uint64_t digest;       /* of the newest verified result, | 1; 0: none */
        uint64_t key;          /* its position */
        struct rally__sig sig; /* its call */
        int links, bad;        /* this collective's links seen, and disagreeing */
        int peer;              /* the first that disagreed */
        uint64_t theirs;       /* its sidecar */
    } vfy;
};

/* The checkpoint version this worker stands in. */
static inline uint64_t rally__robust_version(const struct rally__robust *rb)
{
    return rb->pos.version;
}

/* This worker stands in version v now: served it, went back to it, or
 * adopted it from a snapshot (op.c's position, moved by the files below it). */
static inline void rally__robust_pos_at(struct rally__robust *rb, uint64_t v)
{
    rb->pos.version = v;
}

/* A membership change renumbered the workers: back to the first bootstrap
 * op, to load again. */
static inline void rally__robust_pos_restart(struct rally__robust *rb)
{
    rb->pos.boot = 0;
    rb->pos.q = 0;
    rb->pos.loaded = 0;
}

/* Rank r's place on the placement ring, and the rank at place i. */
static inline int rally__robust_place(const struct rally__robust *rb, int r)
{
    return rb->place.order != NULL ? rb->place.pos[r] : r;
}
static inline int rally__robust_at(const struct rally__robust *rb, int i)
{
    int N = rb->world;
    i = (i % N + N) % N;
    return rb->place.order != NULL ? rb->place.order[i] : i;
}

/* The rank whose local model slot j of holder's set holds: j places
 * before it on the placement ring. */
static inline int rally__robust_slot_rank(const struct rally__robust *rb, int holder, int j)
{
    return rally__robust_at(rb, rally__robust_place(rb, holder) - j);
}

/* The slot of holder's set that holds rank r's model (0 .. world-1; a
 * slot above k is not held). */
static inline int rally__robust_slot_of(const struct rally__robust *rb, int holder, int r)
{
    int N = rb->world;
    return (rally__robust_place(rb, holder) - rally__robust_place(rb, r) + N) % N;
}

/* The user-visible (version, seq) of a position, for the mock. */
static inline uint64_t rally__robust_user_seq(const struct rally__robust *rb)
{
    return rb->pos.loaded ? (uint64_t)rb->pos.q - 1 : rb->pos.boot;
}

/* Since an epoch began, until every worker is in step. */
static inline int rally__robust_recovering(const struct rally__robust *rb)
{
    return rb->mem.recovering;
}

/* The membership changed and load_checkpoint has not yet run. */
static inline int rally__robust_resized(const struct rally__robust *rb)
{
    return rb->mem.resized;
}

/* How many times this rank died before, for the mock. */
static inline uint32_t rally__robust_ndeath(const struct rally__robust *rb)
{
    return rb->tc.incarnation > 0 ? rb->tc.incarnation - 1 : 0;
}

/* Dies here if a kill point of the mock matches (librally_mock).  A point
 * names a worker by the rank it was launched as, which a membership change
 * does not renumber. */
static inline void rally__robust_mock(const struct rally__robust *rb, uint64_t version,
                                      uint64_t seq, int phase)
{
    if (rb->mock.n == 0) /* no points (every job but the mock's): not even a call */
        return;
    rally__mock_check(&rb->mock, rb->launch_rank, version, seq, rally__robust_ndeath(rb), phase);
}

/* --- fail.c: a failure recovery cannot repair (every file calls it) --- */

/* A failure recovery cannot repair: tells the tracker and waits briefly
 * for its ABORT.  RALLY__ELOST (tracker/proto.h) says it is a loss, which a
 * snapshot can mend; the worker's own calls fail with RALLY_EPEER. */
void rally__robust_fatal(struct rally__robust *rb, int code, const char *msg);
/* Something recovery needs is gone from every survivor (a copy, a piece, a
 * result): RALLY_EPEER with the sentence, and the job fails as a loss
 * (RALLY__ELOST, which --auto-resume mends). */
int rally__robust_lost(struct rally__robust *rb, const char *fmt, ...) RALLY__PRINTF(2, 3);

/* --- allreduce.c: the in-place allreduce (engine.c's table calls it) --- */

struct rally__keeping; /* an allreduce's own state, allreduce.c's alone */
/* In-place calls whose whole result is one buffer of known size (the
 * allreduce, broadcast, allgather): the op's ctx. */
struct rally__inplace {
    void *buf;
    size_t nbytes;
    size_t count;
    const struct rally__reducer *rd;
    int root;
    const void *send;   /* allgather: this rank's block */
    struct rally__keeping *ar; /* allreduce */
};

/* The allreduce of count elements of buf in place with rd: one operation
 * of signature sig; prepare(arg) fills buf first unless recovery serves the
 * result. */
int rally__robust_allreduce(struct rally__robust *rb, void *buf, size_t count,
                            const struct rally__reducer *rd, struct rally__sig sig,
                            rally_prepare_fn prepare, void *arg);
/* The deliver of an in-place call: the result recovery served, into buf. */
int rally__robust_deliver_inplace(struct rally__robust *rb, struct rally__op *op,
                                  const unsigned char *res, uint64_t n);

/* --- op.c: the op driver --- */

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
/* The end of rally_init for a worker that replaces one that died: takes
 * back its local-model copies at once (a no-op for any other worker). */
int rally__robust_rejoined(struct rally__robust *rb);
/* A public collective completed, its result nbytes long (the engine's
 * count op): one more call and nbytes more for the heartbeats to carry. */
void rally__robust_count(struct rally__robust *rb, uint64_t nbytes);
/* The mock's ack and cut points: the call in hand is taken for cut short
 * by the tracker's next RESET, waited for on the alarm line, as when the
 * RESET came before the result was read (coll/run.c's wait); bounded by
 * rally_timeout_ms. */
int rally__robust_wait_reset(struct rally__robust *rb);

/* --- cache.c: the result cache and buffer pool --- */

/* A buffer of at least nbytes for a result (from the pool when possible);
 * NULL when out of memory.  unbuf returns it to the pool (NULL is fine). */
unsigned char *rally__robust_buf(struct rally__robust *rb, uint64_t nbytes);
void rally__robust_unbuf(struct rally__robust *rb, unsigned char *p);
const struct rally__entry *rally__robust_cache_find(const struct rally__robust *rb, uint64_t key);
/* Takes ownership of data (a rally__robust_buf), nbytes of the result
 * described by part (NULL: all of it). */
int rally__robust_cache_put(struct rally__robust *rb, uint64_t key, const struct rally__sig *sig,
                            unsigned char *data, uint64_t nbytes, const struct rally__part *part);
/* A buffer of nbytes for scratch, the engine's one, reused; NULL when out
 * of memory.  Its pages are populated when it grows. */
unsigned char *rally__robust_scratch(struct rally__robust *rb, uint64_t nbytes);
/* The part this worker keeps of a result of whole bytes, count elements:
 * pieces when rally_result_copies is below the world, the result is big
 * and the allreduce runs in place (the ring: the others write the whole
 * result into the cache buffer anyway, so keeping it costs nothing more),
 * else all of it. */
struct rally__part rally__part_plan(const struct rally__robust *rb, uint64_t whole, uint64_t count,
                                    int in_place);
/* Piece p's bytes of the result: its offset, and its length in *len. */
uint64_t rally__part_piece(const struct rally__part *pt, int p, uint64_t *len);
/* Whether the worker at place i keeps piece p, and where it sits in what
 * that worker keeps. */
int rally__part_holds(const struct rally__part *pt, int i, int p, uint64_t *at);
/* A range of the result a worker keeps: the result's bytes [off, off + n),
 * at offset at of what it keeps. */
struct rally__part_range {
    uint64_t off, n, at;
};
/* What the worker at place i keeps of the result, as at most two ranges
 * (its pieces, packed in order, wrap past the last piece at most once);
 * returns how many. */
int rally__part_ranges(const struct rally__part *pt, int i, struct rally__part_range r[2]);
/* The bytes the worker at place i keeps: its pieces, and its parity chunk
 * after them with xor_g. */
uint64_t rally__part_nbytes(const struct rally__part *pt, int i);
/* With xor_g: the XOR set of place i (its first place, size and its
 * member index *x) and its parity chunk's bytes (util/xor.h's cn for the
 * set's largest piece); 0 without. */
uint64_t rally__part_parity(const struct rally__part *pt, int i, int *first, int *size, int *x);
/* Drops cached op results of versions below v (bootstrap results stay). */
void rally__robust_cache_drop_below(struct rally__robust *rb, uint64_t v);
/* Drops every cached result, bootstrap results too (a membership change:
 * they belong to the old world). */
void rally__robust_cache_clear(struct rally__robust *rb);
void rally__robust_cache_free(struct rally__robust *rb);

/* --- store.c: the checkpoint store --- */

unsigned char *rally__robust_dup(const void *p, uint64_t n);
/* A store buffer of at least nbytes (a spare, or fresh: growth); its
 * capacity in *cap.  NULL when out of memory. */
unsigned char *rally__robust_stake(struct rally__robust *rb, uint64_t nbytes, uint64_t *cap);
/* Gives a store buffer back: pooled, kept aside while lent, or freed
 * (NULL is fine). */
void rally__robust_sgive(struct rally__robust *rb, unsigned char *p, uint64_t cap);
/* The valid local set of version v, or NULL. */
struct rally__localset *rally__robust_set_of(struct rally__robust *rb, uint64_t v);
/* A cleared set to fill: never the valid one of the current version. */
struct rally__localset *rally__robust_set_spare(struct rally__robust *rb);
/* Slot 0 of ls (this worker's model) goes k hops along the ring: slot j
 * gets the model of rank (rank - j) (collectives of kind and tag). */
int rally__robust_set_spread(struct rally__robust *rb, struct rally__localset *ls, uint8_t kind,
                             uint8_t tag);
/* With rally_local_scheme=xor, in place of set_spread: the lengths of the
 * models of this worker's XOR set and its parity chunk into slot
 * RALLY__XOR_SLOT of ls, along the set's ring (collectives of kind and
 * tag). */
int rally__robust_set_parity(struct rally__robust *rb, struct rally__localset *ls, uint8_t kind,
                             uint8_t tag);
/* This worker's XOR set (util/xor.h, rally__xor_set): its first place,
 * size and index, and this worker's member index in it. */
void rally__robust_xor_set(const struct rally__robust *rb, int r, int *first, int *size,
                           int *index, int *member);
/* The valid set of version v is no longer valid (a new one replaces it). */
void rally__robust_set_drop(struct rally__robust *rb, uint64_t v);
/* Stores the global model of the next version: a copy, or lazy. */
int rally__robust_store_global(struct rally__robust *rb, const void *global, uint64_t nbytes,
                               rally_serialize_fn lazy, void *lazy_arg);
/* Stores a global model served in load_checkpoint or adopted at a fresh start:
 * global is a rally__robust_stake buffer of capacity cap, owned now. */
void rally__robust_store_adopt(struct rally__robust *rb, unsigned char *global, uint64_t nbytes,
                               uint64_t cap);
/* Puts n bytes from p into slot j of ls, reusing its buffer when it fits
 * and is not lent (p NULL: the slot is sized only). */
int rally__robust_set_fill(struct rally__robust *rb, struct rally__localset *ls, int j,
                           const void *p, uint64_t n);
/* A barrier's run: 8 bytes summed, the result a rally__robust_buf (the
 * replication's end, finalize's). */
int rally__robust_run_barrier(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                              uint64_t *n);
/* The replication of this worker's local model for the next version along
 * the ring: op.c runs it as an operation at the current position, with
 * op->ctx = c (c->local, c->nbytes set). */
struct rally__replicate {
    const void *local;
    uint64_t nbytes;
    struct rally__localset *ls;
};
void rally__robust_replicate_op(const struct rally__robust *rb, struct rally__replicate *c,
                                struct rally__op *op);
/* The read interface (api/engine.h, lend): version v's global model (rank
 * -1; a lazy one serialized now) or rank's local model where this worker
 * holds it, lent until rally__robust_release. */
int rally__robust_lend(struct rally__robust *rb, uint64_t v, int rank, const unsigned char **p,
                       uint64_t *n);
void rally__robust_release(struct rally__robust *rb, const unsigned char *p);
/* Request bits for the next acknowledgement (kept until one completes). */
void rally__robust_request(struct rally__robust *rb, uint64_t bits);
/* Subscribes s to every commit from now on, its turns and a fresh start. */
int rally__robust_subscribe(struct rally__robust *rb, const struct rally__subscriber *s);
/* Gives every subscriber with a turn its turn (RALLY__TURN_*), in order;
 * the first non-OK status ends it. */
int rally__robust_turn(struct rally__robust *rb, int when);
/* A fresh start: the subscriber with a fresh hook may adopt a version into
 * the store (rb->version then; 0 when it gave none).  RALLY_ECONFIG from the
 * hook fails the job. */
int rally__robust_fresh(struct rally__robust *rb);
/* Whether the store holds a global model (copied or lazy), and the copied
 * one's bytes (NULL for a lazy one or none). */
int rally__robust_holds(const struct rally__robust *rb);
const unsigned char *rally__robust_global(const struct rally__robust *rb, uint64_t *nbytes);
/* 1 with its digest when the global model is a copy (a lazy one has none). */
int rally__robust_global_digest(const struct rally__robust *rb, uint64_t *digest);
/* The newest version acknowledged (what REJOIN tells the tracker). */
uint64_t rally__robust_committed(const struct rally__robust *rb);
/* Whether the job passes local models; set by the first checkpoint with
 * one, or by recovery (what the job agreed). */
int rally__robust_has_local(const struct rally__robust *rb);
void rally__robust_set_has_local(struct rally__robust *rb, int yes);
/* The request bits for the next acknowledgement, and spending them. */
uint64_t rally__robust_requests(const struct rally__robust *rb);
void rally__robust_requests_spent(struct rally__robust *rb);
/* Version v is committed with the agreed flags: tells the subscribers. */
void rally__robust_commit(struct rally__robust *rb, uint64_t v, uint64_t flags);
/* A membership change: back to the newest committed version (the one
 * stored and not acknowledged is dropped); RALLY_ESTATE when that version
 * is not held here (a lazy checkpoint, not elastic). */
int rally__robust_store_back(struct rally__robust *rb);
/* The kept older model becomes a spare (after going back: it is stale),
 * warm for the transfer a membership change's load may need. */
void rally__robust_store_spare_prev(struct rally__robust *rb);
/* The subscribers hear that the job goes on with other workers. */
void rally__robust_store_resized(struct rally__robust *rb);
void rally__robust_store_free(struct rally__robust *rb);

/* --- membership.c: tracker client, mesh, links --- */

/* The collective layer of a rank the tracker has placed (rb->tc.rank, .world):
 * settings, topology and the report hook; the caller sets the alarm. */
void rally__robust_comm_setup(struct rally__robust *rb,
                              void (*report)(void *arg, int code, const char *msg),
                              struct rally__err *e);
/* Joins the job through rally's tracker (rb initialised by engine.c's
 * start(), its settings checked). */
int rally__robust_join(struct rally__robust *rb, struct rally__err *e);
/* Leaves the mesh and the tracker client (engine.c's stop()). */
void rally__robust_mem_free(struct rally__robust *rb);
/* A setting refused before this worker joined (init's own checks, or
 * rally_init's): tells rally-run's tracker (RALLY_ECONFIG, e's sentence), so
 * the job fails once, before this worker exits (tracker/client.h,
 * rally__tclient_fail_start). */
void rally__robust_start_failed(const struct rally__config *cfg, const char *host,
                                const struct rally__err *e);
/* Every worker stands at the same position: the recovery is over (its
 * tracker kind tells the tracker: IN_STEP). */
void rally__robust_in_step(struct rally__robust *rb);
/* load_checkpoint ran after a membership change: the change is behind. */
void rally__robust_resize_done(struct rally__robust *rb);
/* 1 for failures that a new epoch can repair. */
int rally__robust_repairable(const struct rally__robust *rb, int rc);
/* The job lost a worker (or a link): joins the tracker's next epoch.
 * RALLY_ERESIZED when that epoch has other members (an elastic job): this
 * worker has its new rank and world, and went back to its newest committed
 * checkpoint; the caller returns the status to the program. */
int rally__robust_reset(struct rally__robust *rb, int cause, uint64_t key);
/* rally_set_input, checked: tells rally-run's tracker the input this
 * incarnation read (scheme and fingerprint, already checked), so that a
 * replacement that read another one fails the job (job.c); nothing alone,
 * under the dmlc tracker (no such message) or with rally_input_check=0. */
int rally__robust_input(struct rally__robust *rb, const char *scheme, const char *fingerprint);
/* rally_tracker_print: to the tracker, or stdout without one. */
int rally__robust_print(struct rally__robust *rb, const char *msg);
/* For observers: a REPORT to rally's tracker (m's VALUE key checked), at
 * once or not at all (tracker/client.h, rally__tclient_send_report);
 * nothing alone or under the dmlc tracker (no such message). */
void rally__robust_report(struct rally__robust *rb, const struct rally__msg_report *m);
/* finalize's goodbye to the tracker (its kind's leave). */
int rally__robust_leave(struct rally__robust *rb);

/* The commit of a version whose flags carry RALLY__REQ_GROW: tells the
 * tracker, which takes the waiting workers in with a new epoch; joins it
 * at position key.  RALLY_ERESIZED when it took any in (reset's), RALLY_OK
 * when none was left to take. */
int rally__robust_grow(struct rally__robust *rb, uint64_t key);

/* The mesh from rb->tc's address book, and closing it (for membership_dmlc.c). */
int rally__robust_wire(struct rally__robust *rb);
void rally__robust_unwire(struct rally__robust *rb);

/* --- membership_dmlc.c: the same under the classic dmlc tracker --- */

/* Joins through the dmlc tracker (cfg->dmlc_tracker_uri is set, rally_tracker
 * is not); rb is initialised as engine.c's start() leaves it before joining.
 * Its kind is rally__tracker_dmlc: a reset closes every link and says
 * "recover", finalize sends "shutdown" instead of SHUTDOWN/BYE. */
int rally__robust_dmlc_init(struct rally__robust *rb, const char *host, struct rally__err *e);

/* --- verify.c: verified results (rally_verify_every) --- */

/* The collective layer's on_sidecar hook. */
void rally__robust_on_sidecar(void *arg, int peer, uint64_t mine, uint64_t theirs);
/* Before an operation runs: its signature carries the newest verified digest. */
void rally__robust_verify_begin(struct rally__robust *rb, struct rally__sig *sig);
/* After it ran: RALLY_EMISMATCH (fatal) when a neighbour's digest differed. */
int rally__robust_verify_check(struct rally__robust *rb);
/* A result (run or served) at position key: counted, every K-th digested. */
void rally__robust_verify_result(struct rally__robust *rb, const struct rally__op *op, uint64_t key,
                                 const unsigned char *res, uint64_t n);
/* RALLY_EMISMATCH naming the ranks of each verified digest (the
 * acknowledgement's pairs of every rank). */
int rally__robust_verify_fail(struct rally__robust *rb, const uint64_t *pairs);
/* At a commit: the job's count (0 when this worker's stands), digest cleared. */
void rally__robust_verify_commit(struct rally__robust *rb, uint64_t ncalls);
/* What this worker's acknowledgement carries: its count of verified
 * calls and the newest verified digest (0: none). */
uint64_t rally__robust_verify_ncalls(const struct rally__robust *rb);
uint64_t rally__robust_verify_digest(const struct rally__robust *rb);
/* A membership change: the old world's count and digest are void. */
void rally__robust_verify_forget(struct rally__robust *rb);
/* A collective's result as it arrives (the mock's flip point, byte
 * nbytes / 2 of buf): 1 when it flipped, for a caller holding that byte in
 * a second buffer too. */
int rally__robust_arrived(struct rally__robust *rb, unsigned char *buf, size_t nbytes);

/* --- reshard.c: local models as records after a change of the workers --- */

/* Every worker of the new world, in load_checkpoint: the records of version
 * v's local models (the old world's sets, rank rb->rec.set_rank of
 * rb->rec.set_world) go to the ranks that own their ids now, and the new
 * set of v replaces the old one. */
int rally__robust_reshard(struct rally__robust *rb, uint64_t v);
/* rally_set_local_records' owner function (engine.c). */
void rally__robust_records_owner(struct rally__robust *rb, rally_owner_fn owner, void *arg);
/* Whether the job declared its local models as records. */
int rally__robust_records_declared(const struct rally__robust *rb);
/* Before a renumbering: the world the local sets were built in, kept until
 * they have moved (the first of several changes in a row counts). */
void rally__robust_records_world(struct rally__robust *rb);
/* After a change of the workers: the records move at the load when there
 * are local models; else, or when the job was finishing (moved 1: every
 * result is computed, nothing is to move), the next change starts from its
 * own world. */
void rally__robust_records_changed(struct rally__robust *rb, int moved);
/* Whether the records wait to move (the agreement carries it). */
int rally__robust_records_pending(const struct rally__robust *rb);

/* --- xfer.c: recovery's transfers --- */

/* A transfer's head from root: *sig and *nbytes there, how many workers
 * keep each piece of the result (*copies) and the XOR sets' size (*xor_g);
 * every worker gets them. */
int rally__robust_xfer_head(struct rally__robust *rb, int root, struct rally__sig *sig,
                            uint64_t *nbytes, uint32_t *copies, uint32_t *xor_g);
/* Its n bytes from root's data (or from every worker have names): *out
 * gets them where want; with cap, a store buffer of that capacity. */
int rally__robust_xfer_body(struct rally__robust *rb, int root, const unsigned char *data,
                            uint64_t n, int want, unsigned char **out, uint64_t *out_nbytes,
                            uint64_t *cap, const unsigned char *have);
/* The head, then the body. */
int rally__robust_xfer(struct rally__robust *rb, int root, struct rally__sig *sig,
                       const unsigned char *data, uint64_t nbytes, int want, unsigned char **out,
                       uint64_t *out_nbytes, uint64_t *cap);
/* The global model of version v from root and every worker holding it to
 * the workers in load_checkpoint. */
int rally__robust_xfer_model(struct rally__robust *rb, int root, uint64_t v,
                             struct rally__sig *sig, const unsigned char *data, uint64_t nbytes,
                             int want, unsigned char **out, uint64_t *out_nbytes, uint64_t *cap);

/* --- recovery.c: agreement rounds --- */

/* Agreement rounds at position key until every worker is there
 * (RALLY__EXECUTE), or this worker was served: its result in *res
 * (RALLY__SERVED).  In load_checkpoint (key LOAD) "served" means the
 * checkpoint arrived, or that there is none (*res NULL); the store holds
 * it then, and *res is the store's (rb->ckpt), not the caller's. */
int rally__robust_recover(struct rally__robust *rb, uint64_t key, const struct rally__sig *mine,
                          unsigned char **res, uint64_t *res_nbytes);
/* One round for a restarted worker at the end of rally_init: it takes the
 * local models it holds for the newest checkpoint (its own and its k
 * predecessors') from the survivors, who are in rally__robust_recover. */
int rally__robust_rejoin_locals(struct rally__robust *rb);

#endif
