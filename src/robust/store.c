/*
 * store.c — the checkpoint store: the newest global model (a copy, or a
 * serialize callback for lazy checkpoints), the local-model sets and their
 * replication along the ring, a read interface for a version's bytes, and
 * the hooks told when a version is committed (and given a turn where they
 * may run operations: rally__robust_turn).
 *
 * A version is committed when its acknowledgement (op.c) completes: every
 * worker has stored it then.  The acknowledgement carries a 64-bit word
 * reduced by OR, the request bits of every worker (rally__robust_request),
 * so a request such as "snapshot this version" reaches every worker's hooks
 * at the same version with no extra round.
 */
#include <stdlib.h>
#include <string.h>

#include "robust/robust.h"
#include "util/wire.h"

static void set_clear(struct rally__localset *ls)
{
    for (int j = 0; j <= RALLY__MAX_REPLICA; j++)
        free(ls->data[j]);
    memset(ls, 0, sizeof *ls);
}

struct rally__localset *rally__robust_set_of(struct rally__robust *rb, uint64_t v)
{
    for (int i = 0; i < 2; i++)
        if (rb->loc[i].valid && rb->loc[i].version == v)
            return &rb->loc[i];
    return NULL;
}

struct rally__localset *rally__robust_set_spare(struct rally__robust *rb)
{
    struct rally__localset *keep = rally__robust_set_of(rb, rb->version);
    struct rally__localset *ls = keep == &rb->loc[0] ? &rb->loc[1] : &rb->loc[0];
    set_clear(ls);
    return ls;
}

unsigned char *rally__robust_dup(const void *p, uint64_t n)
{
    if (n > SIZE_MAX)
        return NULL;
    unsigned char *d = malloc(n ? (size_t)n : 1);
    if (d != NULL && n)
        memcpy(d, p, (size_t)n);
    return d;
}

int rally__robust_global_bytes(struct rally__robust *rb, uint64_t v, const unsigned char **p,
                               uint64_t *n, unsigned char **owned)
{
    if (v != rb->version || (rb->ckpt == NULL && rb->lazy == NULL))
        return rally__fail(rb->err, RALLY_ESTATE,
                           "checkpoint version %llu is not held here (the newest is %llu)",
                           (unsigned long long)v, (unsigned long long)rb->version);
    if (rb->lazy == NULL) {
        *p = rb->ckpt;
        *n = rb->ckpt_nbytes;
        *owned = NULL;
        return RALLY_OK;
    }
    uint64_t m = rb->lazy(rb->lazy_arg, NULL, 0);
    unsigned char *b = m == UINT64_MAX || m > SIZE_MAX ? NULL : malloc(m ? (size_t)m : 1);
    if (b == NULL || rb->lazy(rb->lazy_arg, b, m) != m) {
        free(b);
        return rally__fail(rb->err, RALLY_EINVAL,
                           "the lazy checkpoint's serialize callback failed for version %llu",
                           (unsigned long long)v);
    }
    *p = *owned = b;
    *n = m;
    return RALLY_OK;
}

/* A checkpoint's local models travel k hops along the ring, one hop per
 * shift: each worker passes on what it received the hop before.  The set is
 * valid once its own shifts are done; the barrier after them tells every
 * worker that all are. */
struct replicate {
    const void *local;
    uint64_t nbytes;
    struct rally__localset *ls;
};

static int run_replicate(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                         uint64_t *n)
{
    struct replicate *c = op->ctx;
    struct rally__localset *ls = c->ls = rally__robust_set_spare(rb);
    ls->version = rb->version + 1;
    if ((ls->data[0] = rally__robust_dup(c->local, c->nbytes)) == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory copying a local model");
    ls->nbytes[0] = c->nbytes;
    for (int j = 1; j <= rb->k; j++) {
        unsigned char out[8], in[8];
        rally__put_u64(out, ls->nbytes[j - 1]);
        struct rally__sig s1 = {RALLY__C_SHIFT, 0, 0, -1, (uint64_t)(2 * j), 0};
        int rc = rally__ring_shift(&rb->comm, out, 8, in, 8, &s1);
        if (rc != RALLY_OK)
            return rc;
        uint64_t m = rally__get_u64(in);
        if (m > SIZE_MAX || (ls->data[j] = malloc(m ? (size_t)m : 1)) == NULL)
            return rally__fail(rb->err, RALLY_ENOMEM, "out of memory for a %llu-byte local model",
                               (unsigned long long)m);
        ls->nbytes[j] = m;
        struct rally__sig s2 = {RALLY__C_SHIFT, 0, 0, -1, (uint64_t)(2 * j + 1), 0};
        rc = rally__ring_shift(&rb->comm, ls->data[j - 1], (size_t)ls->nbytes[j - 1], ls->data[j],
                               (size_t)m, &s2);
        if (rc != RALLY_OK)
            return rc;
    }
    ls->valid = 1;
    return rally__robust_run_barrier(rb, op, res, n);
}

/* Served: another worker finished the barrier, so every worker, this one
 * included, had finished its shifts. */
static int deliver_replicate(struct rally__robust *rb, struct rally__op *op,
                             const unsigned char *res, uint64_t n)
{
    struct replicate *c = op->ctx;
    if (c->ls == NULL || !c->ls->valid)
        return rally__fail(rb->err, RALLY_EPROTO,
                           "local models: recovery served a replication this worker never did");
    return RALLY_OK;
}

int rally__robust_replicate(struct rally__robust *rb, const void *local, uint64_t nbytes)
{
    struct replicate c = {local, nbytes, NULL};
    struct rally__op op = {{RALLY__K_REPLICATE, 0, 0, -1, rb->version, 0}, NULL, NULL,
                           run_replicate, deliver_replicate, &c};
    return rally__robust_op(rb, &op);
}

int rally__robust_store_global(struct rally__robust *rb, const void *global, uint64_t nbytes,
                               rally_serialize_fn lazy, void *lazy_arg)
{
    unsigned char *copy = NULL;
    if (lazy == NULL && (copy = rally__robust_dup(global, nbytes)) == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "checkpoint: cannot copy a %llu-byte model",
                           (unsigned long long)nbytes);
    free(rb->ckpt);
    rb->ckpt = copy;
    rb->ckpt_nbytes = nbytes;
    rb->lazy = lazy;
    rb->lazy_arg = lazy_arg;
    return RALLY_OK;
}

void rally__robust_store_adopt(struct rally__robust *rb, unsigned char *global, uint64_t nbytes)
{
    free(rb->ckpt);
    rb->ckpt = global;
    rb->ckpt_nbytes = nbytes;
    rb->lazy = NULL;
}

int rally__robust_local_bytes(struct rally__robust *rb, uint64_t v, int rank,
                              const unsigned char **p, uint64_t *n)
{
    struct rally__localset *ls = rally__robust_set_of(rb, v);
    int j = (rb->rank - rank + rb->world) % rb->world;
    if (rank < 0 || rank >= rb->world || ls == NULL || j > rb->k || ls->data[j] == NULL)
        return rally__fail(rb->err, RALLY_ESTATE,
                           "rank %d's local model of checkpoint version %llu is not held here",
                           rank, (unsigned long long)v);
    *p = ls->data[j];
    *n = ls->nbytes[j];
    return RALLY_OK;
}

void rally__robust_request(struct rally__robust *rb, uint64_t bits)
{
    rb->request |= bits;
}

int rally__robust_subscribe(struct rally__robust *rb, rally__commit_fn fn, void *arg)
{
    return rally__robust_subscribe_turns(rb, fn, NULL, arg);
}

int rally__robust_subscribe_turns(struct rally__robust *rb, rally__commit_fn fn,
                                  rally__turn_fn turn, void *arg)
{
    if (rb->nhooks == RALLY__MAX_HOOKS)
        return rally__fail(rb->err, RALLY_EINVAL,
                           "a handle takes at most %d checkpoint hooks; this is one more",
                           RALLY__MAX_HOOKS);
    rb->hooks[rb->nhooks].fn = fn;
    rb->hooks[rb->nhooks].turn = turn;
    rb->hooks[rb->nhooks].arg = arg;
    rb->nhooks++;
    return RALLY_OK;
}

void rally__robust_commit(struct rally__robust *rb, uint64_t v, uint64_t flags)
{
    for (int i = 0; i < rb->nhooks; i++)
        rb->hooks[i].fn(rb->hooks[i].arg, v, flags);
}

int rally__robust_turn(struct rally__robust *rb, int when)
{
    for (int i = 0; i < rb->nhooks; i++) {
        int rc = rb->hooks[i].turn ? rb->hooks[i].turn(rb->hooks[i].arg, when) : RALLY_OK;
        if (rc != RALLY_OK)
            return rc;
    }
    return RALLY_OK;
}

void rally__robust_store_free(struct rally__robust *rb)
{
    free(rb->ckpt);
    rb->ckpt = NULL;
    set_clear(&rb->loc[0]);
    set_clear(&rb->loc[1]);
}
