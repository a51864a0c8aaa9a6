/*
 * ckpt.c — the MPI engine's checkpoints, kept in memory: version counting,
 * the global model (a copy or a lazy serializer), local models passed along
 * the ring, request bits and the commit hook.
 *
 * Versions count as in the robust engine: a job on MPI never restarts a
 * worker, so every start is fresh: load returns 0, or the version a
 * subscriber's fresh hook adopted (a resumed snapshot); each checkpoint
 * makes version + 1.  A checkpoint begins with the subscribers' turns and
 * ends with one MPI_Allreduce of three 64-bit words under BOR, the request
 * bits of every rank and the pair that compares their models' digests
 * (util/digest.h): when it returns, every rank has stored the version,
 * which is then committed and handed to the hooks with the agreed bits.
 * So the snapshot layer (src/snapjob/snapjob.c) sees the same calls on this
 * backend as on the robust one.  Local models travel rally_local_replica
 * hops along the ring, so this rank holds its own and its predecessors' as
 * the robust engine does, for the same read interface.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_engine.h"
#include "util/digest.h"

/* The store lets go of *buf when it is lent: the borrower frees it. */
static void let_go(struct rally__mpi_store *st, unsigned char **buf, size_t *cap)
{
    int lent = 0;
    for (int i = 0; *buf != NULL && i < st->nlent; i++)
        if (st->lent[i].p == *buf) {
            st->lent[i].detached = 1; /* every loan of it: the last release frees it */
            lent = 1;
        }
    if (lent) {
        *buf = NULL;
        *cap = 0;
    }
}

/* Makes room for n bytes in *buf (kept between checkpoints, unless lent). */
static int reserve(struct rally__engine *en, unsigned char **buf, size_t *cap, uint64_t n)
{
    let_go(&en->st, buf, cap);
    if (n > SIZE_MAX - 1)
        return rally__fail(en->err, RALLY_ENOMEM, "checkpoint: %llu bytes do not fit in memory",
                           (unsigned long long)n);
    if (*cap >= n && *buf != NULL)
        return RALLY_OK;
    unsigned char *b = realloc(*buf, n ? (size_t)n : 1);
    if (b == NULL)
        return rally__fail(en->err, RALLY_ENOMEM, "checkpoint: out of memory for %llu bytes",
                           (unsigned long long)n);
    *buf = b;
    *cap = n ? (size_t)n : 1;
    return RALLY_OK;
}

/* Ring successors that hold each local model. */
static int replicas(const struct rally__engine *en)
{
    int k = (int)en->cfg->local_replica;
    if (k > en->world - 1)
        k = en->world - 1;
    return k > RALLY__MPI_MAX_REPLICAS ? RALLY__MPI_MAX_REPLICAS : k;
}

static unsigned char *dup_bytes(const unsigned char *p, uint64_t n)
{
    unsigned char *d = n > SIZE_MAX - 1 ? NULL : malloc(n ? (size_t)n : 1);
    if (d != NULL && n)
        memcpy(d, p, (size_t)n);
    return d;
}

static int acknowledge(struct rally__engine *en, int digested);

/* The version a fresh hook gave (a's buffers, owned now) becomes the store's. */
static void adopt(struct rally__engine *en, struct rally__adopt *a)
{
    struct rally__mpi_store *st = &en->st;
    let_go(st, &st->global, &st->global_cap);
    free(st->global);
    st->global = a->global;
    st->global_nbytes = a->global_nbytes;
    st->global_cap = a->global_nbytes ? (size_t)a->global_nbytes : 1;
    st->has_global = 1;
    st->lazy = NULL;
    a->global = NULL;
    if (a->has_local) {
        st->use_local = 1;
        st->nlocal = a->nlocal;
        for (int j = 0; j < a->nlocal; j++) {
            let_go(st, &st->local[j], &st->local_cap[j]);
            free(st->local[j]);
            st->local[j] = a->local[j];
            st->local_nbytes[j] = a->local_nbytes[j];
            st->local_cap[j] = a->local_nbytes[j] ? (size_t)a->local_nbytes[j] : 1;
            a->local[j] = NULL;
        }
    }
    st->version = a->version;
}

/* Every start is fresh: the subscriber with a fresh hook may give a
 * version to adopt. */
static int fresh(struct rally__engine *en)
{
    struct rally__adopt a;
    int slot_rank[RALLY__ADOPT_MAX], k = replicas(en);
    for (int j = 0; j <= k; j++) /* rank order: this engine places by rank */
        slot_rank[j] = (en->rank - j + en->world) % en->world;
    int rc = rally__subscribers_fresh(&en->st.subs, k + 1, slot_rank, &a);
    if (rc == RALLY_OK && a.version > 0)
        adopt(en, &a);
    rally__adopt_free(&a);
    return rc;
}

int rally__mpi_load(struct rally__engine *en, void **global, uint64_t *global_nbytes, void **local,
                    uint64_t *local_nbytes, uint64_t *version)
{
    struct rally__mpi_store *st = &en->st;
    if (st->loaded)
        return rally__fail(en->err, RALLY_ESTATE,
                           "rally_load_checkpoint must be called once, before the first "
                           "rally_checkpoint");
    st->loaded = 1;
    st->version = 0;
    *version = 0;
    int rc = fresh(en);
    if (rc != RALLY_OK || st->version == 0)
        return rc;
    /* adopted: every rank has stored it once the acknowledgement returns */
    if ((rc = acknowledge(en, 1)) != RALLY_OK)
        return rc;
    unsigned char *g = dup_bytes(st->global, st->global_nbytes), *l = NULL;
    if (st->use_local && local != NULL)
        l = dup_bytes(st->local[0], st->local_nbytes[0]);
    if (g == NULL || (st->use_local && local != NULL && l == NULL)) {
        free(g);
        return rally__fail(en->err, RALLY_ENOMEM, "out of memory loading a checkpoint");
    }
    *global = g;
    *global_nbytes = st->global_nbytes;
    if (local != NULL) {
        *local = l;
        *local_nbytes = st->use_local ? st->local_nbytes[0] : 0;
    }
    *version = st->version;
    return RALLY_OK;
}

/* Sends send_n bytes to next and receives recv_n from prev, in pieces MPI
 * can count; each side's pieces match the neighbour's, whatever the sizes. */
static int shift(struct rally__engine *en, const unsigned char *send, uint64_t send_n,
                 unsigned char *recv, uint64_t recv_n, int next, int prev)
{
    for (uint64_t done = 0; done < send_n || done < recv_n; done += INT_MAX) {
        MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        int rc = MPI_SUCCESS;
        if (done < send_n) {
            uint64_t s = send_n - done;
            rc = MPI_Isend(send + done, s > INT_MAX ? INT_MAX : (int)s, MPI_BYTE, next, 2, en->comm,
                           &req[0]);
        }
        if (rc == MPI_SUCCESS && done < recv_n) {
            uint64_t r = recv_n - done;
            rc = MPI_Irecv(recv + done, r > INT_MAX ? INT_MAX : (int)r, MPI_BYTE, prev, 2, en->comm,
                           &req[1]);
        }
        if (rc == MPI_SUCCESS)
            rc = MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS)
            return rally__mpi_fail(en, rc,
                                   "passing a local model to the next rank (MPI_Isend, "
                                   "MPI_Irecv, MPI_Waitall)");
    }
    return RALLY_OK;
}

/* local[0] = this rank's model; hop h brings local[h] from the predecessor,
 * which passes on what it got the hop before. */
static int replicate(struct rally__engine *en, const void *local, uint64_t nbytes)
{
    struct rally__mpi_store *st = &en->st;
    int k = replicas(en);
    if (reserve(en, &st->local[0], &st->local_cap[0], nbytes) != RALLY_OK)
        return en->err->code;
    if (nbytes)
        memcpy(st->local[0], local, (size_t)nbytes);
    st->local_nbytes[0] = nbytes;
    int next = (en->rank + 1) % en->world, prev = (en->rank - 1 + en->world) % en->world;
    for (int h = 1; h <= k; h++) {
        uint64_t n = st->local_nbytes[h - 1], in = 0;
        int rc = MPI_Sendrecv(&n, 1, MPI_UINT64_T, next, 1, &in, 1, MPI_UINT64_T, prev, 1, en->comm,
                              MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rally__mpi_fail(en, rc, "MPI_Sendrecv (a local model's size)");
        if (reserve(en, &st->local[h], &st->local_cap[h], in) != RALLY_OK ||
            shift(en, st->local[h - 1], n, st->local[h], in, next, prev) != RALLY_OK)
            return en->err->code;
        st->local_nbytes[h] = in;
    }
    st->nlocal = k + 1;
    return RALLY_OK;
}

/* The digests differ: every rank's pair, to name who passed which model. */
static int disagree(struct rally__engine *en, const uint64_t mine[2])
{
    uint64_t *pairs = malloc(2 * (size_t)en->world * sizeof *pairs);
    if (pairs == NULL)
        return rally__fail(en->err, RALLY_ENOMEM, "out of memory comparing checkpoint digests");
    int rc = MPI_Allgather(mine, 2, MPI_UINT64_T, pairs, 2, MPI_UINT64_T, en->comm);
    if (rc != MPI_SUCCESS)
        rc = rally__mpi_fail(en, rc, "MPI_Allgather (the checkpoint's digests)");
    else
        rc = rally__digest_fail(en->err, en->st.version, pairs, en->world);
    free(pairs);
    return rc;
}

int rally__mpi_checkpoint(struct rally__engine *en, const void *global, uint64_t global_nbytes,
                          rally_serialize_fn lazy, void *lazy_arg, const void *local,
                          uint64_t local_nbytes)
{
    struct rally__mpi_store *st = &en->st;
    if (st->version > 0 && (local != NULL) != st->use_local)
        return rally__fail(en->err, RALLY_EINVAL,
                           "checkpoint: a job passes a local model always or never (this call %s "
                           "one, earlier ones %s)",
                           local ? "passes" : "does not pass", st->use_local ? "did" : "did not");
    st->loaded = 1;
    if (local != NULL) {
        st->use_local = 1;
        if (replicate(en, local, local_nbytes) != RALLY_OK)
            return en->err->code;
    }
    int rc = rally__mpi_turn(en, RALLY__TURN_CHECKPOINT); /* a snapshot's report, say */
    if (rc != RALLY_OK)
        return rc;
    if (lazy == NULL) {
        if (reserve(en, &st->global, &st->global_cap, global_nbytes) != RALLY_OK)
            return en->err->code;
        if (global_nbytes)
            memcpy(st->global, global, (size_t)global_nbytes);
    } else {
        let_go(st, &st->global, &st->global_cap);
    }
    st->global_nbytes = lazy ? 0 : global_nbytes;
    st->has_global = 1;
    st->lazy = lazy;
    st->lazy_arg = lazy_arg;
    st->version++;
    return acknowledge(en, lazy == NULL);
}

/* The acknowledgement: every rank has stored the version, with everyone's
 * bits and the same model (util/digest.h; none for a lazy one). */
static int acknowledge(struct rally__engine *en, int digested)
{
    struct rally__mpi_store *st = &en->st;
    uint64_t w[3] = {st->request, 0, 0};
    rally__digest_pair(w + 1, digested,
                       digested ? rally_digest64(st->global, (size_t)st->global_nbytes) : 0);
    uint64_t mine[2] = {w[1], w[2]};
    int rc = MPI_Allreduce(MPI_IN_PLACE, w, 3, MPI_UINT64_T, MPI_BOR, en->comm);
    if (rc != MPI_SUCCESS)
        return rally__mpi_fail(en, rc, "MPI_Allreduce (the checkpoint's acknowledgement)");
    if (rally__digest_disagree(w + 1))
        return disagree(en, mine);
    uint64_t flags = w[0];
    st->request = 0;
    rally__subscribers_commit(&st->subs, st->version, flags);
    return RALLY_OK;
}

int rally__mpi_turn(struct rally__engine *en, int when)
{
    return rally__subscribers_turn(&en->st.subs, when);
}

void rally__mpi_request(struct rally__engine *en, uint64_t bits)
{
    en->st.request |= bits;
}

int rally__mpi_subscribe(struct rally__engine *en, const struct rally__subscriber *s)
{
    return rally__subscribers_add(&en->st.subs, s, en->err);
}

int rally__mpi_agree(struct rally__engine *en, uint64_t *words, size_t n)
{
    if (n > INT_MAX)
        return rally__fail(en->err, RALLY_EINVAL, "agree: %zu words are too many", n);
    int rc = MPI_Allreduce(MPI_IN_PLACE, words, (int)n, MPI_UINT64_T, MPI_BOR, en->comm);
    return rc == MPI_SUCCESS ? RALLY_OK
                             : rally__mpi_fail(en, rc, "MPI_Allreduce (a turn's agreement)");
}

/* The bytes of version v: *detached when they were serialized now. */
static int bytes_of(struct rally__engine *en, uint64_t v, int rank, const unsigned char **bytes,
                    uint64_t *nbytes, int *detached)
{
    struct rally__mpi_store *st = &en->st;
    *detached = 0;
    if (v != st->version || !st->has_global)
        return rally__fail(en->err, RALLY_ESTATE,
                           "checkpoint version %llu is not held here (the newest is %llu)",
                           (unsigned long long)v, (unsigned long long)st->version);
    if (rank >= 0) {
        int j = (en->rank - rank + en->world) % en->world;
        if (rank >= en->world || !st->use_local || j >= st->nlocal)
            return rally__fail(en->err, RALLY_ESTATE,
                               "rank %d's local model of version %llu is not held here", rank,
                               (unsigned long long)v);
        *bytes = st->local[j];
        *nbytes = st->local_nbytes[j];
        return RALLY_OK;
    }
    if (st->lazy == NULL) {
        *bytes = st->global;
        *nbytes = st->global_nbytes;
        return RALLY_OK;
    }
    uint64_t m = st->lazy(st->lazy_arg, NULL, 0);
    unsigned char *b = m == UINT64_MAX || m > SIZE_MAX - 1 ? NULL : malloc(m ? (size_t)m : 1);
    if (b == NULL || st->lazy(st->lazy_arg, b, m) != m) {
        free(b);
        return rally__fail(en->err, RALLY_EINVAL,
                           "the lazy checkpoint's serialize callback failed for version %llu",
                           (unsigned long long)v);
    }
    *bytes = b;
    *nbytes = m;
    *detached = 1;
    return RALLY_OK;
}

int rally__mpi_lend(struct rally__engine *en, uint64_t v, int rank, const void **bytes,
                    uint64_t *nbytes)
{
    struct rally__mpi_store *st = &en->st;
    const unsigned char *p = NULL;
    int detached = 0;
    if (st->nlent == RALLY__MPI_LENT)
        return rally__fail(en->err, RALLY_EINVAL,
                           "the checkpoint store lends at most %d buffers at once; this is one "
                           "more",
                           RALLY__MPI_LENT);
    int rc = bytes_of(en, v, rank, &p, nbytes, &detached);
    if (rc != RALLY_OK)
        return rc;
    st->lent[st->nlent].p = p;
    st->lent[st->nlent].detached = detached;
    st->nlent++;
    *bytes = p;
    return RALLY_OK;
}

void rally__mpi_release(struct rally__engine *en, const void *bytes)
{
    struct rally__mpi_store *st = &en->st;
    for (int i = 0; i < st->nlent; i++)
        if (st->lent[i].p == bytes) {
            int detached = st->lent[i].detached, still = 0;
            st->lent[i] = st->lent[--st->nlent];
            for (int j = 0; j < st->nlent; j++)
                still |= st->lent[j].p == bytes;
            if (detached && !still)
                free((void *)bytes);
            return;
        }
}

void rally__mpi_store_free(struct rally__mpi_store *st)
{
    while (st->nlent > 0) { /* a borrower that never gave back */
        const unsigned char *p = st->lent[0].p;
        int detached = 0;
        for (int i = 0; i < st->nlent;)
            if (st->lent[i].p == p) {
                detached |= st->lent[i].detached;
                st->lent[i] = st->lent[--st->nlent];
            } else {
                i++;
            }
        if (detached)
            free((void *)p);
    }
    free(st->global);
    st->global = NULL;
    for (int j = 0; j <= RALLY__MPI_MAX_REPLICAS; j++) {
        free(st->local[j]);
        st->local[j] = NULL;
    }
}
