/*
 * mpi_engine.h — the MPI engine's state, shared by its three files: the
 * ops table and collectives (engine.c), the mapping of rally's types,
 * operators, reducers and errors onto MPI (types.c), and the checkpoints
 * kept in memory (ckpt.c).
 *
 * The engine runs every call of include/rally/rally.h on its own duplicate
 * of MPI_COMM_WORLD, whose error handler returns MPI errors instead of
 * aborting; it keeps no results for recovery, since a process that dies
 * ends an MPI job.
 */
#ifndef RALLY_MPI_ENGINE_H
#define RALLY_MPI_ENGINE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "api/engine.h"

#define RALLY__MPI_NREDUCERS 256
#define RALLY__MPI_MAX_REPLICAS 16 /* ring successors that hold a local model */
#define RALLY__MPI_LENT 4          /* buffers lent at once (engine.h, lend) */

/* A custom reducer's element type: a contiguous block of elem_nbytes. */
struct rally__mpi_elem {
    size_t elem_nbytes; /* 0: none made yet */
    MPI_Datatype type;
};

/* The models of the newest checkpoint: the global one (a copy, or a lazy
 * serializer) and the local models this rank holds, its own first.  A
 * buffer lent (engine.h, lend) is never written: the store lets go of it
 * (detached) and the borrower's release frees it. */
struct rally__mpi_store {
    uint64_t version;
    int loaded;    /* load or a checkpoint ran: load may not run any more */
    int use_local; /* the job passes local models (always or never) */
    unsigned char *global;
    uint64_t global_nbytes;
    size_t global_cap;
    int has_global;
    rally_serialize_fn lazy;
    void *lazy_arg;
    int nlocal; /* local[j] is rank (rank - j) mod N's model, j < nlocal */
    unsigned char *local[RALLY__MPI_MAX_REPLICAS + 1];
    uint64_t local_nbytes[RALLY__MPI_MAX_REPLICAS + 1];
    size_t local_cap[RALLY__MPI_MAX_REPLICAS + 1];
    uint64_t request; /* bits for the next commit */
    struct rally__subscribers subs; /* commits, turns, a fresh start (api/engine.h) */
    struct {
        const unsigned char *p;
        int detached; /* the store let go of it (or never held it: a lazy model serialized) */
    } lent[RALLY__MPI_LENT];
    int nlent;
};

struct rally__engine {
    MPI_Comm comm; /* MPI_COMM_NULL once freed */
    int rank, world;
    struct rally__err *err;
    const struct rally__config *cfg;
    /* user-defined MPI operators (types.c) */
    MPI_Op kernel[3];           /* MAX, MIN, SUM with rally's kernels (types.c) */
    MPI_Op custom_comm, custom; /* custom reducers, commutative or not */
    struct rally__mpi_elem elems[RALLY__MPI_NREDUCERS];
    unsigned char *scratch; /* a non-commutative reducer's left operand */
    size_t scratch_cap;
    /* allgather(v) counts and displacements, world entries each */
    int *counts, *displs;
    uint64_t *sizes;
    char *hosts; /* world names of MPI_MAX_PROCESSOR_NAME bytes: where each rank runs */
    struct rally__mpi_store st;
};

/* --- types.c ---------------------------------------------------------------- */

/* Records the MPI error rc of the named call on the engine's rally__err as a
 * rally status and returns it. */
int rally__mpi_fail(struct rally__engine *en, int rc, const char *call);
/* Creates the engine's MPI operators. */
int rally__mpi_ops_init(struct rally__engine *en);
/* Frees the engine's operators and element types (MPI still running). */
void rally__mpi_ops_free(struct rally__engine *en);
/* The MPI datatype and operator of a built-in dtype x op. */
MPI_Datatype rally__mpi_dtype(int dtype);
MPI_Op rally__mpi_op(const struct rally__engine *en, int dtype, int op);
/* Chooses the element type and operator of a custom reducer and makes it
 * current for this thread's next reductions (the MPI callback has no
 * argument of its own). */
int rally__mpi_custom(struct rally__engine *en, int reducer_id, const struct rally__reducer *rd,
                      MPI_Datatype *type, MPI_Op *op);
/* The callback is done with the reducer. */
void rally__mpi_custom_done(void);

/* --- ckpt.c ----------------------------------------------------------------- */

int rally__mpi_load(struct rally__engine *en, void **global, uint64_t *global_nbytes, void **local,
                    uint64_t *local_nbytes, uint64_t *version);
int rally__mpi_checkpoint(struct rally__engine *en, const void *global, uint64_t global_nbytes,
                          rally_serialize_fn lazy, void *lazy_arg, const void *local,
                          uint64_t local_nbytes);
/* Gives every subscriber with a turn its turn (RALLY__TURN_*). */
int rally__mpi_turn(struct rally__engine *en, int when);
void rally__mpi_request(struct rally__engine *en, uint64_t bits);
int rally__mpi_subscribe(struct rally__engine *en, const struct rally__subscriber *s);
int rally__mpi_agree(struct rally__engine *en, uint64_t *words, size_t n);
int rally__mpi_lend(struct rally__engine *en, uint64_t version, int rank, const void **bytes,
                    uint64_t *nbytes);
void rally__mpi_release(struct rally__engine *en, const void *bytes);
void rally__mpi_store_free(struct rally__mpi_store *st);

#endif
