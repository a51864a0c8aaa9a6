/*
 * engine.c — the MPI engine's ops table: the public API's calls run as MPI
 * collectives on a duplicate of MPI_COMM_WORLD (librally_mpi).
 *
 * rally_init initialises MPI unless the host program did (then this engine
 * leaves it initialised at finalize, as it found it); rank and world size
 * are MPI_COMM_WORLD's.  The engine's communicator returns errors instead of
 * aborting, and each becomes a rally status naming the MPI call.  There is
 * no recovery: MPI is not fault tolerant, so a process that dies ends the
 * job (mpirun stops the others).  Each call is one MPI collective, or two
 * where only some ranks know the result's size (broadcast_alloc,
 * allgatherv: sizes, then data); MPI counts are ints, so larger buffers go
 * in pieces.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_engine.h"

/* Handles alive in this process, and whether MPI was initialised by us. */
static int live;
static int owns_mpi;

/* --- life cycle --------------------------------------------------------------- */

static void engine_free(struct rally__engine *en)
{
    if (en == NULL)
        return;
    int up = 0, down = 1;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down)
        rally__mpi_ops_free(en); /* local calls; the communicator is collective */
    rally__mpi_store_free(&en->st);
    free(en->scratch);
    free(en->counts);
    free(en->displs);
    free(en->sizes);
    free(en->hosts);
    free(en);
}

static int init(const struct rally__config *cfg, const char *host, struct rally__err *e,
                struct rally__engine **out)
{
    if (cfg->tracker[0] != '\0')
        return rally__fail(e, RALLY_ECONFIG,
                           "rally_tracker is set (%s), but this program is linked with "
                           "librally_mpi, which runs under mpirun: start it with mpirun, or link "
                           "librally to run it under rally-run",
                           cfg->tracker);
    /* verified results ride the robust engine's links (src/robust/verify.c):
     * refused here rather than accepted and never done */
    if (cfg->verify_every > 0)
        return rally__fail(e, RALLY_ECONFIG,
                           "rally_verify_every=%lld: librally_mpi does not verify results (MPI's "
                           "collectives have no digests to compare); unset it, or link librally "
                           "to run under rally-run",
                           (long long)cfg->verify_every);
    int up = 0, down = 0, rc;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (down)
        return rally__fail(e, RALLY_ESTATE,
                           "MPI was finalized in this process and cannot start again: "
                           "librally_mpi initialises MPI once per process");
    if (!up) {
        int provided = 0;
        if ((rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided)) != MPI_SUCCESS)
            return rally__fail(e, RALLY_ESYS, "MPI_Init_thread failed (error %d)", rc);
        owns_mpi = 1;
    }
    struct rally__engine *en = calloc(1, sizeof *en);
    if (en == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory for the rally engine");
    en->err = e;
    en->cfg = cfg;
    en->comm = MPI_COMM_NULL;
    en->kernel[0] = en->kernel[1] = en->kernel[2] = MPI_OP_NULL;
    en->custom_comm = en->custom = MPI_OP_NULL;
    /* our own communicator: the host program's traffic and error handler
     * stay as they are */
    if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &en->comm)) != MPI_SUCCESS) {
        rally__mpi_fail(en, rc, "MPI_Comm_dup");
        goto fail;
    }
    if ((rc = MPI_Comm_set_errhandler(en->comm, MPI_ERRORS_RETURN)) != MPI_SUCCESS ||
        (rc = MPI_Comm_rank(en->comm, &en->rank)) != MPI_SUCCESS ||
        (rc = MPI_Comm_size(en->comm, &en->world)) != MPI_SUCCESS) {
        rally__mpi_fail(en, rc, "MPI_Comm_set_errhandler/rank/size");
        goto fail;
    }
    if (rally__mpi_ops_init(en) != RALLY_OK)
        goto fail;
    en->counts = malloc((size_t)en->world * sizeof *en->counts);
    en->displs = malloc((size_t)en->world * sizeof *en->displs);
    en->sizes = malloc((size_t)en->world * sizeof *en->sizes);
    en->hosts = malloc((size_t)en->world * MPI_MAX_PROCESSOR_NAME);
    if (en->counts == NULL || en->displs == NULL || en->sizes == NULL || en->hosts == NULL) {
        rally__fail(e, RALLY_ENOMEM, "out of memory for the rally engine");
        goto fail;
    }
    /* where every rank runs, for a snapshot's membership */
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    memset(name, 0, sizeof name);
    if ((rc = MPI_Get_processor_name(name, &len)) != MPI_SUCCESS ||
        (rc = MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, en->hosts,
                            MPI_MAX_PROCESSOR_NAME, MPI_CHAR, en->comm)) != MPI_SUCCESS) {
        rally__mpi_fail(en, rc, "MPI_Get_processor_name/MPI_Allgather (the ranks' hosts)");
        goto fail;
    }
    for (int r = 0; r < en->world; r++)
        en->hosts[(size_t)(r + 1) * MPI_MAX_PROCESSOR_NAME - 1] = '\0';
    live++;
    *out = en;
    return RALLY_OK;
fail:
    /* MPI stays initialised: the process should exit, and mpirun ends the job */
    engine_free(en);
    return e->code;
}

static int finalize(struct rally__engine *en)
{
    int rc = rally__mpi_turn(en, RALLY__TURN_FINALIZE); /* a snapshot's last report */
    if (rc != RALLY_OK)
        return rc;
    rally__mpi_ops_free(en);
    if (en->comm != MPI_COMM_NULL)
        rc = MPI_Comm_free(&en->comm); /* every rank is here: nobody needs us any more */
    if (rc != MPI_SUCCESS)
        return rally__mpi_fail(en, rc, "MPI_Comm_free");
    if (--live == 0 && owns_mpi) {
        owns_mpi = 0;
        if ((rc = MPI_Finalize()) != MPI_SUCCESS)
            return rally__fail(en->err, RALLY_EPEER, "MPI_Finalize failed (error %d)", rc);
    }
    return RALLY_OK;
}

static int rank(const struct rally__engine *en)
{
    return en->rank;
}

static int world(const struct rally__engine *en)
{
    return en->world;
}

static uint64_t version(const struct rally__engine *en)
{
    return en->st.version;
}

/* --- collectives -------------------------------------------------------------- */

/* In place over count elements of es bytes, at most INT_MAX at a time. */
static int reduce(struct rally__engine *en, void *buf, size_t count, size_t es, MPI_Datatype type,
                  MPI_Op op)
{
    unsigned char *p = buf;
    for (size_t done = 0; done < count;) {
        int n = count - done > INT_MAX ? INT_MAX : (int)(count - done);
        int rc = MPI_Allreduce(MPI_IN_PLACE, p + done * es, n, type, op, en->comm);
        if (rc != MPI_SUCCESS)
            return rally__mpi_fail(en, rc, "MPI_Allreduce");
        done += (size_t)n;
    }
    return RALLY_OK;
}

/* prepare runs here, exactly once: on MPI every result is computed. */
static int allreduce(struct rally__engine *en, void *buf, size_t count, int dtype, int op,
                     rally_prepare_fn prepare, void *prepare_arg)
{
    if (prepare != NULL)
        prepare(prepare_arg);
    return reduce(en, buf, count, rally__dtype_size(dtype), rally__mpi_dtype(dtype),
                  rally__mpi_op(en, dtype, op));
}

static int allreduce_custom(struct rally__engine *en, void *buf, size_t count, int reducer_id,
                            const struct rally__reducer *rd, rally_prepare_fn prepare,
                            void *prepare_arg)
{
    MPI_Datatype type;
    MPI_Op op;
    if (rally__mpi_custom(en, reducer_id, rd, &type, &op) != RALLY_OK)
        return en->err->code;
    if (prepare != NULL)
        prepare(prepare_arg);
    int rc = reduce(en, buf, count, rd->elem_nbytes, type, op);
    rally__mpi_custom_done();
    return rc;
}

static int broadcast(struct rally__engine *en, void *buf, size_t nbytes, int root)
{
    unsigned char *p = buf;
    for (size_t done = 0; done < nbytes;) {
        int n = nbytes - done > INT_MAX ? INT_MAX : (int)(nbytes - done);
        int rc = MPI_Bcast(p + done, n, MPI_BYTE, root, en->comm);
        if (rc != MPI_SUCCESS)
            return rally__mpi_fail(en, rc, "MPI_Bcast");
        done += (size_t)n;
    }
    return RALLY_OK;
}

static int broadcast_alloc(struct rally__engine *en, void **buf, size_t *nbytes, int root)
{
    uint64_t n = en->rank == root ? (uint64_t)*nbytes : 0;
    int rc = MPI_Bcast(&n, 1, MPI_UINT64_T, root, en->comm);
    if (rc != MPI_SUCCESS)
        return rally__mpi_fail(en, rc, "MPI_Bcast (broadcast_alloc's size)");
    if (en->rank == root)
        return broadcast(en, *buf, (size_t)n, root);
    unsigned char *p = n > SIZE_MAX - 1 ? NULL : malloc(n ? (size_t)n : 1);
    if (p == NULL) /* the others go on: this rank's failure ends the job */
        return rally__fail(en->err, RALLY_ENOMEM, "broadcast_alloc: cannot allocate %llu bytes",
                           (unsigned long long)n);
    if (broadcast(en, p, (size_t)n, root) != RALLY_OK) {
        free(p);
        return en->err->code;
    }
    if (n == 0) {
        free(p);
        p = NULL;
    }
    *buf = p;
    *nbytes = (size_t)n;
    return RALLY_OK;
}

/* Blocks of len[i] bytes at off[i] of buf, rank i's block from rank i: one
 * MPI_Allgatherv where MPI can count the bytes, else a broadcast per rank. */
static int gather(struct rally__engine *en, unsigned char *buf, const uint64_t *len, uint64_t total)
{
    if (total <= INT_MAX) {
        uint64_t pos = 0;
        for (int i = 0; i < en->world; i++) {
            en->counts[i] = (int)len[i];
            en->displs[i] = (int)pos;
            pos += len[i];
        }
        int rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, en->counts, en->displs,
                                MPI_BYTE, en->comm);
        return rc == MPI_SUCCESS ? RALLY_OK : rally__mpi_fail(en, rc, "MPI_Allgatherv");
    }
    uint64_t pos = 0;
    for (int i = 0; i < en->world; i++) {
        if (broadcast(en, buf + pos, (size_t)len[i], i) != RALLY_OK)
            return en->err->code;
        pos += len[i];
    }
    return RALLY_OK;
}

static int allgather(struct rally__engine *en, const void *sendbuf, size_t nbytes, void *recvbuf)
{
    unsigned char *dst = recvbuf;
    if (nbytes)
        memmove(dst + (size_t)en->rank * nbytes, sendbuf, nbytes);
    if (nbytes <= INT_MAX) {
        int rc =
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, dst, (int)nbytes, MPI_BYTE, en->comm);
        return rc == MPI_SUCCESS ? RALLY_OK : rally__mpi_fail(en, rc, "MPI_Allgather");
    }
    for (int i = 0; i < en->world; i++)
        en->sizes[i] = nbytes;
    return gather(en, dst, en->sizes, (uint64_t)nbytes * (uint64_t)en->world);
}

static int allgatherv(struct rally__engine *en, const void *sendbuf, size_t nbytes, void **recvbuf,
                      uint64_t *nbytes_per_rank)
{
    uint64_t *len = en->sizes, total = 0, mine = 0;
    len[en->rank] = nbytes;
    int rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, len, 1, MPI_UINT64_T, en->comm);
    if (rc != MPI_SUCCESS)
        return rally__mpi_fail(en, rc, "MPI_Allgather (allgatherv's sizes)");
    for (int i = 0; i < en->world; i++) {
        if (len[i] > SIZE_MAX / 2 - total)
            return rally__fail(en->err, RALLY_EINVAL, "allgatherv: the sizes overflow");
        if (i < en->rank)
            mine += len[i];
        total += len[i];
    }
    unsigned char *b = malloc(total ? (size_t)total : 1);
    if (b == NULL)
        return rally__fail(en->err, RALLY_ENOMEM, "allgatherv: cannot allocate %llu bytes",
                           (unsigned long long)total);
    if (nbytes)
        memcpy(b + mine, sendbuf, nbytes);
    if (gather(en, b, len, total) != RALLY_OK) {
        free(b);
        return en->err->code;
    }
    memcpy(nbytes_per_rank, len, (size_t)en->world * sizeof *len);
    *recvbuf = b;
    return RALLY_OK;
}

/* --- checkpoints, prints, benchmarks ---------------------------------------------- */

static int checkpoint(struct rally__engine *en, const void *global, uint64_t global_nbytes,
                      const void *local, uint64_t local_nbytes)
{
    return rally__mpi_checkpoint(en, global, global_nbytes, NULL, NULL, local, local_nbytes);
}

static int lazy_checkpoint(struct rally__engine *en, rally_serialize_fn serialize, void *arg)
{
    return rally__mpi_checkpoint(en, NULL, 0, serialize, arg, NULL, 0);
}

/* On this rank's standard output (mpirun gathers them), each line behind
 * "[rank] " as rally-run prints them. */
static int tracker_print(struct rally__engine *en, const char *msg)
{
    const char *p = msg;
    do {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        printf("[%d] %.*s\n", en->rank, n, p);
        p = nl ? nl + 1 : NULL;
    } while (p != NULL && *p != '\0');
    fflush(stdout);
    return RALLY_OK;
}

/* Counts and reports are for rally-run's observers (its status page,
 * metrics, events); mpirun has none: nothing to tell. */
static void count(struct rally__engine *en, uint64_t nbytes)
{
}

static void report(struct rally__engine *en, int kind, const char *key, double value,
                   uint64_t version, uint64_t nbytes, const char *text)
{
}

/* MPI has no way to make the other ranks' pending calls return: the
 * nearest honest equivalent of rally_abort is MPI_Abort, which ends every
 * process of the job with code (mpirun reports it).  The sentence goes to
 * stderr first, behind the rank as tracker_print does, so the cause is
 * printed once, by the rank that saw it.  Does not return. */
static int abort_job(struct rally__engine *en, int code, const char *sentence)
{
    fflush(stdout);
    fprintf(stderr, "[%d] rally: rank %d failed: %s; MPI_Abort(%d)\n", en->rank, en->rank, sentence,
            code != 0 ? code : 1);
    fflush(stderr);
    MPI_Abort(en->comm != MPI_COMM_NULL ? en->comm : MPI_COMM_WORLD, code != 0 ? code : 1);
    return rally__fail(en->err, RALLY_EPEER, "rank %d failed: %s", en->rank, sentence);
}

/* MPI restarts nobody. */
static int attempt(const struct rally__engine *en)
{
    return 0;
}

static int has_local(const struct rally__engine *en)
{
    return en->st.use_local;
}

static const char *host(const struct rally__engine *en, int rank)
{
    return en->hosts + (size_t)rank * MPI_MAX_PROCESSOR_NAME;
}

static int plain_allreduce(struct rally__engine *en, const void *in, void *out, size_t count,
                           int dtype, int op)
{
    if (count > INT_MAX)
        return rally__fail(en->err, RALLY_EINVAL,
                           "plain allreduce: %zu elements are too many "
                           "for one MPI call",
                           count);
    int rc = MPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, (int)count, rally__mpi_dtype(dtype),
                           rally__mpi_op(en, dtype, op), en->comm);
    return rc == MPI_SUCCESS ? RALLY_OK : rally__mpi_fail(en, rc, "MPI_Allreduce");
}

const struct rally__engine_ops rally__engine = {
    .name = "mpi",
    .init = init,
    .free = engine_free,
    .finalize = finalize,
    .rank = rank,
    .world = world,
    .version = version,
    .allreduce = allreduce,
    .allreduce_custom = allreduce_custom,
    .broadcast = broadcast,
    .broadcast_alloc = broadcast_alloc,
    .allgather = allgather,
    .allgatherv = allgatherv,
    .load = rally__mpi_load,
    .checkpoint = checkpoint,
    .lazy_checkpoint = lazy_checkpoint,
    .request = rally__mpi_request,
    .subscribe = rally__mpi_subscribe,
    .agree = rally__mpi_agree,
    .lend = rally__mpi_lend,
    .release = rally__mpi_release,
    .has_local = has_local,
    .host = host,
    .tracker_print = tracker_print,
    .count = count,
    .report = report,
    .abort_job = abort_job,
    .attempt = attempt,
    .plain_allreduce = plain_allreduce,
};
