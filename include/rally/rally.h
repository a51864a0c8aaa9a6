/*
 * rally.h — the public API of rally: reliable allreduce and broadcast.
 *
 * A job is N worker processes started by `rally-run -n N prog args...`.  Each
 * calls rally_init(), then meets the others in collectives (allreduce,
 * broadcast, allgather), then rally_finalize().  Started without a launcher,
 * a program runs as rank 0 of 1 and every collective is a local no-op.
 *
 * Conventions, for every function below:
 *   - it returns RALLY_OK (0) or an error code; rally_errmsg(r) then holds a
 *     sentence saying what went wrong and what to do about it;
 *   - out-parameters are written only on success;
 *   - a collective blocks until this worker has its result; every rank must
 *     make the same collective calls in the same order with the same count,
 *     type, operator and root, or every rank gets RALLY_EMISMATCH naming both
 *     values (never a hang, never garbage);
 *   - a worker that dies is restarted and recovered (see checkpoints below);
 *     the survivors' calls simply take longer.  When recovery is impossible
 *     (restarts exhausted, a needed result lost everywhere) or ranks disagree,
 *     the call fails and the handle is spent: later collectives return
 *     RALLY_ESTATE.  Finalize still frees it.
 *   - a handle is used by one thread at a time; separate handles are
 *     independent (tests host several workers in one process).
 *
 * Determinism: for a given world size and configuration a reduction adds the
 * same operands in the same order on every run (docs/determinism.md says
 * exactly which order), so floating-point results are bit-identical run to
 * run.
 */
#ifndef RALLY_RALLY_H
#define RALLY_RALLY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RALLY_VERSION_MAJOR 0
#define RALLY_VERSION_MINOR 1
#define RALLY_VERSION_PATCH 0
#define RALLY_VERSION_STRING "0.1.0"

#if defined(__GNUC__)
#define RALLY_API __attribute__((visibility("default")))
#else
#define RALLY_API
#endif

typedef struct rally rally_t;

/* Status codes. */
enum {
    RALLY_OK = 0,
    RALLY_EINVAL = 1,    /* a bad argument */
    RALLY_ENOMEM = 2,    /* out of memory */
    RALLY_ESYS = 3,      /* an operating-system call failed */
    RALLY_ECONFIG = 4,   /* a bad or unknown rally_* setting */
    RALLY_EAUTH = 5,     /* a connection failed authentication */
    RALLY_EPROTO = 6,    /* a malformed or unexpected message */
    RALLY_ETIMEDOUT = 7, /* a deadline passed */
    RALLY_EPEER = 8,     /* another worker failed or the job was aborted */
    RALLY_EMISMATCH = 9, /* ranks disagree on a collective's arguments */
    RALLY_ESTATE = 10,   /* the handle cannot be used for this any more */
    RALLY_ERESIZED = 11  /* an elastic job went on with other workers: every rank went back
                            to the newest checkpoint; read the input again for the new
                            rally_rank and rally_world_size, then rally_load_checkpoint
                            (docs/recovery.md, "Elastic jobs").  The handle stays usable */
};

/* Element types. */
enum {
    RALLY_INT8 = 0,
    RALLY_UINT8 = 1,
    RALLY_INT16 = 2,
    RALLY_UINT16 = 3,
    RALLY_INT32 = 4,
    RALLY_UINT32 = 5,
    RALLY_INT64 = 6,
    RALLY_UINT64 = 7,
    RALLY_FLOAT = 8, /* IEEE 754 binary32 */
    RALLY_DOUBLE = 9 /* IEEE 754 binary64 */
};

/* Built-in reduction operators.  RALLY_BITOR takes integer types only.
 * RALLY_MAX/RALLY_MIN on floats: a NaN operand yields NaN.
 *
 * RALLY_SUM_EXACT is the sum as if in infinite precision, rounded once to
 * the nearest float or double (ties to even): the same bits for any world
 * size, order of ranks, algorithm, transport and backend, where RALLY_SUM
 * on floats is bit-identical only at one N (docs/determinism.md, "Sums
 * that do not depend on N").  A NaN, or +Inf with -Inf, gives the quiet NaN
 * 0x7ff8000000000000 (0x7fc00000; payloads are not kept); an infinity
 * gives itself; a finite sum beyond the format rounds to an infinity as
 * IEEE 754 says; the sum is -0 only when every operand is -0, and +0 when
 * the terms cancel.  It costs a second allreduce: a pre-pass of 4 bytes an
 * element, then 8 bytes for every 51 to 62 bits (by N) of the span of the
 * element's operands, from the highest bit any of them uses to the lowest.
 * On integer types it is RALLY_SUM, already exact (modulo 2^bits). */
enum { RALLY_MAX = 0, RALLY_MIN = 1, RALLY_SUM = 2, RALLY_BITOR = 3, RALLY_SUM_EXACT = 4 };

/* Called before a reduction, only when its result is really computed here
 * (never when it is served from elsewhere, as a recovering worker's are).
 * It fills the buffer that the reduction then reduces. */
typedef void (*rally_prepare_fn)(void *arg);

/* A custom reducer: inout[i] = inout[i] (+) in[i] for i in [0, count), where
 * elements are opaque blocks of the registered size.  The operator must be
 * associative.  Buffers carry no alignment promise beyond 1: copy elements
 * out with memcpy if the type needs alignment. */
typedef void (*rally_reduce_fn)(void *inout, const void *in, size_t count, void *arg);

/* --- life cycle ----------------------------------------------------------- */

/* Joins the job.  Arguments of the form rally_key=value are consumed from
 * argv (and argc adjusted) and override RALLY_KEY environment variables; an
 * unknown rally_* key is RALLY_ECONFIG.  argc/argv may be NULL.  Blocks until
 * every worker of the job has joined (bounded by rally_connect_timeout_ms).
 * On failure *r is still set to a handle whose rally_errmsg() explains; pass
 * it to rally_finalize() to free it.  *r is NULL only when even that handle
 * could not be allocated (RALLY_ENOMEM). */
RALLY_API int rally_init(rally_t **r, int *argc, char ***argv);

/* Leaves the job and frees the handle (NULL is accepted).  Tells the tracker
 * this worker finished; a worker that exits without it counts as failed.
 * When it fails, rally_errmsg(r) still says why, as after any call, until
 * the next rally_finalize that fails (only that call: the rest of the handle
 * is gone). */
RALLY_API int rally_finalize(rally_t *r);

/* The last error's sentence; "" when there was none.  Never NULL; valid until
 * the next call on the handle.  rally_errmsg(NULL) describes an allocation
 * failure in rally_init. */
RALLY_API const char *rally_errmsg(const rally_t *r);

/* The name of a status code, e.g. "RALLY_EPEER". */
RALLY_API const char *rally_strstatus(int status);

RALLY_API int rally_rank(const rally_t *r);
RALLY_API int rally_world_size(const rally_t *r);

/* Writes this host's name, NUL-terminated, into name[0..cap).  RALLY_EINVAL if
 * it does not fit. */
RALLY_API int rally_processor_name(rally_t *r, char *name, size_t cap);

/* Prints msg on the launcher's standard output, prefixed by this rank (or on
 * this process's standard output when there is no launcher).  Not a
 * collective. */
RALLY_API int rally_tracker_print(rally_t *r, const char *msg);

/* The application's progress, for people watching the job: key = value at
 * this worker's current checkpoint version (rally_checkpoint_version, the
 * iteration), e.g. rally_report(r, "objective", 1234.5).  rally-run's
 * observers (its status page, metrics, events and --progress line) show
 * the newest value of each key.  Not a collective: any rank may call it at
 * any time, as often as it likes (values reduced by a collective are the
 * same everywhere, so rank 0 alone is enough).  Does not block on the
 * network: the report goes to the tracker at once, or is dropped when the
 * tracker's connection cannot take it now (the tracker reads all the time,
 * so that only happens when it is stalled).  key is copied; it is 1 to 64
 * bytes of A-Z a-z 0-9 _ . : -.  RALLY_EINVAL for a NULL, empty or longer
 * key, one with any other character, or a value that is not finite (NaN,
 * an infinity: the observers write JSON, which has neither).  Without a
 * launcher (rank 0 of 1 alone), under the MPI backend (librally_mpi) or
 * the classic dmlc tracker it checks its arguments and does nothing else.
 * Never spends the handle; works on a spent one too. */
RALLY_API int rally_report(rally_t *r, const char *key, double value);

/* The job's iterations in all (0: not known), for the observers' "i of n"
 * and the time left: the iteration is the checkpoint version of the
 * newest rally_report.  Like rally_report: not a collective, does not
 * block, a no-op without a launcher; no error but RALLY_EINVAL for a NULL
 * handle. */
RALLY_API int rally_report_total(rally_t *r, uint64_t iterations);

/* Frees memory that rally allocated for the caller (rally_broadcast_alloc,
 * rally_allgatherv). */
RALLY_API void rally_free(void *p);

/* Stops the whole job because of a failure only this rank can see (a bad
 * input line, say), instead of leaving the others to meet a mismatch or a
 * restart.  Every rank's pending and next call returns RALLY_EPEER with the
 * sentence "rank R failed: msg (rally_abort code C)"; the launcher restarts
 * nobody and prints that sentence as the job's cause.  code is the
 * application's own status (the one it will exit with, say); rally only
 * reports it.  Blocks until the tracker has failed the job (at most a few
 * seconds), then returns RALLY_OK; the handle is spent (later calls
 * RALLY_ESTATE naming the message; rally_finalize frees it).  Without a
 * launcher it only spends the handle.  The MPI backend (librally_mpi)
 * cannot interrupt the other ranks' MPI calls: it prints the sentence on
 * stderr and calls MPI_Abort(code, or 1 when code is 0), so the call does
 * not return and the job ends with that status.  msg NULL is RALLY_EINVAL. */
RALLY_API int rally_abort(rally_t *r, int code, const char *msg);

/* How many times this rank was started before this process: 0 on the
 * first start, 1 after its first restart, ... (the tracker's incarnation
 * minus one; rabit's DMLC_NUM_ATTEMPT).  Known from rally_init on, so a
 * program can tell before rally_load_checkpoint whether it is a
 * replacement.  Does not block; 0 without a launcher, on the MPI backend,
 * and for a NULL handle. */
RALLY_API int rally_attempt(const rally_t *r);

/* The one digest rally uses and documents: XXH3-64 (seed 0) of buf[0..n),
 * as xxHash's XXH3_64bits computes it.  Not cryptographic.  The same bytes
 * give the same value on every platform and in every rally version; use it
 * to compare models between runs (the examples' model_digest).  buf may be
 * NULL when n is 0.  Pure: no handle, never fails. */
RALLY_API uint64_t rally_digest64(const void *buf, size_t n);

/* --- collectives ---------------------------------------------------------- */

/* In place: buf holds count elements of dtype; on return every rank holds the
 * element-wise reduction over all ranks.  prepare (may be NULL) is called
 * with prepare_arg before the reduction when the result is computed here. */
RALLY_API int rally_allreduce(rally_t *r, void *buf, size_t count, int dtype, int op,
                    rally_prepare_fn prepare, void *prepare_arg);

/* Registers reducer id (0..255) for this handle.  Every rank must register the
 * same id with the same elem_nbytes; commutative = 0 makes the result the
 * left fold over ranks 0, 1, ..., N-1 (always reduced over the tree). */
RALLY_API int rally_register_reducer(rally_t *r, int id, size_t elem_nbytes, int commutative,
                           rally_reduce_fn fn, void *fn_arg);

/* As rally_allreduce, with a reducer registered under reducer_id. */
RALLY_API int rally_allreduce_custom(rally_t *r, void *buf, size_t count, int reducer_id,
                           rally_prepare_fn prepare, void *prepare_arg);

/* --- exact sums of many values: an accumulator per element ---------------
 *
 * A worker that sums many values of its own (a shard's rows into
 * centroids, gradients into bins) adds them into an exact accumulator
 * instead of a double, so its partial sum does not depend on the order or
 * the partition either; rally_allreduce_xsum then combines every rank's
 * accumulators and rounds once: the result is RALLY_SUM_EXACT of all the
 * values added on all ranks.  An element takes 561 bytes of address space
 * (the whole range of binary64 in fixed point), so an accumulator suits
 * sums of thousands of elements, not of an allreduce's 16 MiB; one of 4096
 * elements or more notes which digits its values used, and clears, carries
 * and reduces only those (values within a factor of 2^60 of each other use
 * at most six of the 70).  Not thread-safe: give each thread its own and
 * merge them. */
typedef struct rally_xsum rally_xsum_t;

/* count elements, all the empty sum (+0); NULL when out of memory. */
RALLY_API rally_xsum_t *rally_xsum_new(size_t count);
RALLY_API void rally_xsum_free(rally_xsum_t *s); /* NULL is accepted */
RALLY_API size_t rally_xsum_count(const rally_xsum_t *s);
/* Every element back to the empty sum; the memory is kept. */
RALLY_API void rally_xsum_clear(rally_xsum_t *s);
/* Adds v[k] into element first + k, k < n (a row into a slice).
 * RALLY_EINVAL when the slice passes the end. */
RALLY_API int rally_xsum_add(rally_xsum_t *s, size_t first, const double *v, size_t n);
/* The same for floats (a float32 row as it is read; a float is exact as a
 * double, so this adds the same values, at two thirds of the work). */
RALLY_API int rally_xsum_add_float(rally_xsum_t *s, size_t first, const float *v, size_t n);
/* Adds v[k] into element index[k], k < n (into bins).  RALLY_EINVAL, and
 * nothing added, when an index is out of range. */
RALLY_API int rally_xsum_add_at(rally_xsum_t *s, const uint64_t *index, const double *v,
                                size_t n);
/* Adds every element of t into s's (the same count, else RALLY_EINVAL). */
RALLY_API int rally_xsum_merge(rally_xsum_t *s, rally_xsum_t *t);
/* This worker's sums alone, rounded as RALLY_SUM_EXACT rounds, into
 * out[0 .. count) of dtype RALLY_DOUBLE or RALLY_FLOAT. */
RALLY_API int rally_xsum_round(rally_xsum_t *s, int dtype, void *out);

/* A collective: out[0 .. count) (RALLY_DOUBLE or RALLY_FLOAT) receives
 * each element's exact sum over every rank's accumulator, rounded once.
 * Every rank passes the same count and dtype.  prepare (may be NULL) fills
 * s and is called only when the result is computed here, as for
 * rally_allreduce; s is left as it was filled. */
RALLY_API int rally_allreduce_xsum(rally_t *r, rally_xsum_t *s, int dtype, void *out,
                                   rally_prepare_fn prepare, void *prepare_arg);

/* In place: root's nbytes at buf reach every rank's buf. */
RALLY_API int rally_broadcast(rally_t *r, void *buf, size_t nbytes, int root);

/* Only the root knows the size: at the root *buf and *nbytes are the input and are
 * left as they are; elsewhere *buf receives a new allocation (free it with
 * rally_free; NULL when the size is 0) and *nbytes its size. */
RALLY_API int rally_broadcast_alloc(rally_t *r, void **buf, size_t *nbytes, int root);

/* Every rank contributes nbytes; recvbuf (world_size * nbytes) receives all
 * contributions in rank order.  sendbuf may point into recvbuf at this rank's
 * slot. */
RALLY_API int rally_allgather(rally_t *r, const void *sendbuf, size_t nbytes, void *recvbuf);

/* Ranks contribute different sizes.  *recvbuf receives a new allocation
 * (rally_free) with the contributions concatenated in rank order, and
 * nbytes_per_rank[0..world_size) each rank's size. */
RALLY_API int rally_allgatherv(rally_t *r, const void *sendbuf, size_t nbytes, void **recvbuf,
                     uint64_t *nbytes_per_rank);

/* --- checkpoints and recovery --------------------------------------------
 *
 * An iterative job calls rally_load_checkpoint() once at start and
 * rally_checkpoint() at the end of each iteration.  When a worker dies, the
 * launcher restarts it with the same rank; the survivors wait inside their
 * current call, hand it the newest checkpoint and every collective result
 * since, and the job goes on with results bit-identical to a run without
 * the failure (docs/recovery.md).  The restarted worker must make the same
 * calls as before (same data, same order): each call then returns the result
 * the job computed the first time, without calling its prepare callback.
 * A call that differs is RALLY_EMISMATCH naming both versions, and the job
 * stops.
 *
 * Collectives before the first rally_load_checkpoint (data statistics, say)
 * are recoverable too; their results are kept for the whole job.  Results
 * since the last checkpoint are kept in memory, bounded by
 * rally_cache_max_bytes.
 */

/* Names the application and its configuration (any string, e.g. its
 * parameters; "" is fine) for durable snapshots: a snapshot's manifest
 * keeps both, with the configuration's hash, and a job resumed from a
 * snapshot (rally_resume, rally-run --resume) is refused, naming both
 * values, when either differs (--force overrides).  Call it before
 * rally_load_checkpoint; it is a no-op when the job takes no snapshots. */
RALLY_API int rally_set_app(rally_t *r, const char *name, const char *config);

/* Names how the job's input was partitioned (scheme: 1 to 64 bytes of
 * A-Z a-z 0-9 . _ : / -, the same on every rank, e.g. rally_data_partition)
 * and the fingerprint of the shard this rank read (16 lowercase hex digits,
 * e.g. rally_data_fingerprint) for durable snapshots: a manifest keeps the
 * scheme and every rank's fingerprint, and a job resumed from a snapshot is
 * refused, naming both values, when the scheme differs or (on as many
 * workers) this rank's fingerprint does (--force overrides).  Call it on
 * every rank before rally_load_checkpoint.  Under rally-run it also tells
 * the tracker, and blocks for its answer: a restarted rank whose scheme or
 * fingerprint differs from its first incarnation's fails the job, naming
 * both (rally_input_check=0 turns that off).  RALLY_EINVAL for a malformed
 * scheme or fingerprint; the job's failure is the tracker's code
 * (RALLY_ECONFIG). */
RALLY_API int rally_set_input(rally_t *r, const char *scheme, const char *fingerprint);

/* Declares the local model passed to rally_checkpoint a sequence of
 * records, each an 8-byte little-endian id, a 4-byte little-endian length
 * and that many bytes (a row's, a document's state), and owner(id, world,
 * arg) the rank of a job of `world` ranks that owns the record (the same
 * function on every rank, e.g. the rule rally_data_read shards rows by).
 * When an elastic job's workers change (docs/recovery.md, "Elastic jobs"),
 * rally moves every record to the rank that owns it in the new world, and
 * rally_load_checkpoint hands each rank its records in id order; every id
 * must be on exactly one rank (a record lost or twice fails the job, naming
 * it).  Without this a local model is opaque bytes, which a change of the
 * workers cannot divide.  Call it before the first rally_checkpoint, on
 * every rank alike. */
typedef int (*rally_owner_fn)(uint64_t id, int world, void *arg);
RALLY_API int rally_set_local_records(rally_t *r, rally_owner_fn owner, void *arg);

/* Reads the newest checkpoint.  Fresh start: *version = 0 and the outputs
 * are left untouched.  After a restart: *version >= 1, *global gets a new
 * allocation (free with rally_free) of *global_nbytes bytes holding what was
 * passed to the newest checkpoint, and, when the job uses local models,
 * *local likewise this rank's local model (local / local_nbytes may be NULL
 * when the job has none).  Call it once, before the first checkpoint.
 * Started from a snapshot (rally_resume), it returns the snapshot's version
 * and models, after every file was verified. */
RALLY_API int rally_load_checkpoint(rally_t *r, void **global, uint64_t *global_nbytes,
                                    void **local, uint64_t *local_nbytes, uint64_t *version);

/* Records global[0..global_nbytes) as checkpoint version+1 (copied; every
 * worker keeps it in memory) and drops the results cached since the
 * previous one.  Every rank must call it at the same point with the same
 * global model: the acknowledgement compares every rank's rally_digest64 of
 * it, and ranks that differ make every rank's call fail with
 * RALLY_EMISMATCH naming the ranks and both digests.  local (NULL, 0: none) is this rank's own model, e.g. the
 * topic assignments of its documents: it is copied to the next
 * rally_local_replica ranks on the ring (default 2), so it survives up to
 * that many simultaneous deaths of adjacent ranks; the previous version is
 * kept until the new one is everywhere.  Use local models always or never. */
RALLY_API int rally_checkpoint(rally_t *r, const void *global, uint64_t global_nbytes,
                               const void *local, uint64_t local_nbytes);

/* Writes the model into buf when cap is large enough, and returns its size
 * in bytes either way (UINT64_MAX: failure).  rally calls it with cap 0 to
 * learn the size, then with a buffer of that size. */
typedef uint64_t (*rally_serialize_fn)(void *arg, void *buf, uint64_t cap);

/* A checkpoint that copies nothing: it records serialize and arg, and calls
 * serialize only when a recovering worker needs the model.  So the model
 * must stay as it was from this call until the last collective before the
 * next checkpoint has returned: in
 *
 *     lazy_checkpoint; code1; allreduce; code2; broadcast; code3; lazy_checkpoint
 *
 * only code3 may change the model (a recovery may ask for it inside the
 * allreduce or the broadcast).  No local model.  The model is not
 * digested (that would serialize it): ranks' lazy models are not compared. */
RALLY_API int rally_lazy_checkpoint(rally_t *r, rally_serialize_fn serialize, void *arg);

/* How many checkpoints the job has taken (0 before the first). */
RALLY_API uint64_t rally_checkpoint_version(const rally_t *r);

#ifdef __cplusplus
}
#endif
#endif
