/*
 * store.c — the checkpoint store: the newest global model (a copy, or a
 * serialize callback for lazy checkpoints), the local-model sets and their
 * replication along the ring, a read interface that lends a version's
 * bytes, and the subscribers (api/engine.h): told when a version is
 * committed, given turns with an agreement of their own, and asked what a
 * fresh start adopts.
 *
 * A version is committed when its acknowledgement (op.c) completes: every
 * worker has stored it then.  The acknowledgement carries a 64-bit word
 * reduced by OR, the request bits of every worker (rally__robust_request),
 * so a request such as "snapshot this version" reaches every worker's hooks
 * at the same version with no extra round.
 *
 * The buffer rule: on this kind of machine a fresh page costs several times
 * a copy, so the store's buffers live across versions.  The global model is
 * copied in place into the buffer that held the previous version, each
 * local-model slot into the buffer that held it two versions ago (loc[] is
 * a double buffer); a buffer too small goes to a small pool of spares keyed
 * by capacity, from which (or, failing that, fresh: growth) the bigger one
 * comes.  A buffer lent to a borrower (rally__robust_lend: the snapshot
 * layer's writer) is neither written nor pooled: the store lets go of it
 * (held[]) and takes another, and it becomes a spare when the borrower
 * gives it back.
 */
#include <stdlib.h>
#include <string.h>

#include "robust/robust.h"
#include "util/copy.h"
#include "util/digest.h"
#include "util/wire.h"
#include "util/xor.h"

static int is_lent(const struct rally__robust *rb, const unsigned char *p)
{
    for (int i = 0; p != NULL && i < rb->st.nlent; i++)
        if (rb->st.lent[i] == p)
            return 1;
    return 0;
}

unsigned char *rally__robust_stake(struct rally__robust *rb, uint64_t nbytes, uint64_t *cap)
{
    int best = -1;
    for (int i = 0; i < rb->st.nspare; i++)
        if (rb->st.spare[i].cap >= nbytes &&
            (best < 0 || rb->st.spare[i].cap < rb->st.spare[best].cap))
            best = i;
    if (best >= 0) {
        unsigned char *p = rb->st.spare[best].p;
        *cap = rb->st.spare[best].cap;
        rb->st.spare[best] = rb->st.spare[--rb->st.nspare];
        return p;
    }
    if (nbytes > SIZE_MAX)
        return NULL;
    unsigned char *p = rally__malloc_warm((size_t)nbytes); /* written whole at once */
    if (p != NULL)
        *cap = nbytes;
    return p;
}

void rally__robust_sgive(struct rally__robust *rb, unsigned char *p, uint64_t cap)
{
    if (p == NULL)
        return;
    if (is_lent(rb, p) && rb->st.nheld < RALLY__STORE_LENT) { /* nheld <= nlent: it fits */
        rb->st.held[rb->st.nheld++] = (struct rally__sbuf){p, cap};
        return;
    }
    if (rb->st.nspare == RALLY__STORE_SPARES) { /* the pool keeps the biggest */
        int small = 0;
        for (int i = 1; i < rb->st.nspare; i++)
            if (rb->st.spare[i].cap < rb->st.spare[small].cap)
                small = i;
        if (rb->st.spare[small].cap >= cap) {
            free(p);
            return;
        }
        free(rb->st.spare[small].p);
        rb->st.spare[small] = rb->st.spare[--rb->st.nspare];
    }
    rb->st.spare[rb->st.nspare++] = (struct rally__sbuf){p, cap};
}

/* p is read by a borrower until unlend: the store neither writes nor
 * reuses it meanwhile. */
static int lend_buf(struct rally__robust *rb, const unsigned char *p)
{
    if (rb->st.nlent == RALLY__STORE_LENT)
        return rally__fail(rb->err, RALLY_EINVAL,
                           "the checkpoint store lends at most %d buffers at once; this is one "
                           "more",
                           RALLY__STORE_LENT);
    rb->st.lent[rb->st.nlent++] = p;
    return RALLY_OK;
}

static void unlend(struct rally__robust *rb, const unsigned char *p)
{
    for (int i = 0; i < rb->st.nlent; i++)
        if (rb->st.lent[i] == p) {
            rb->st.lent[i] = rb->st.lent[--rb->st.nlent];
            break;
        }
    if (is_lent(rb, p)) /* lent twice (a global and a local slot cannot be one buffer) */
        return;
    for (int i = 0; i < rb->st.nheld; i++)
        if (rb->st.held[i].p == p) {
            struct rally__sbuf b = rb->st.held[i];
            rb->st.held[i] = rb->st.held[--rb->st.nheld];
            rally__robust_sgive(rb, b.p, b.cap);
            return;
        }
}

/* *slot (capacity *cap) made able to take n bytes and not lent: in place
 * when it is, else a spare or a fresh buffer, the old one given back. */
static int fit(struct rally__robust *rb, unsigned char **slot, uint64_t *cap, uint64_t n)
{
    if (*slot != NULL && *cap >= n && !is_lent(rb, *slot))
        return RALLY_OK;
    uint64_t c = 0;
    unsigned char *q = rally__robust_stake(rb, n, &c);
    if (q == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory for a %llu-byte checkpoint buffer",
                           (unsigned long long)n);
    rally__robust_sgive(rb, *slot, *cap);
    *slot = q;
    *cap = c;
    return RALLY_OK;
}

/* Invalid and empty, its buffers kept for the next version. */
static void set_reset(struct rally__localset *ls)
{
    ls->valid = 0;
    ls->version = 0;
    memset(ls->nbytes, 0, sizeof ls->nbytes);
    memset(ls->owner, 0xff, sizeof ls->owner); /* -1: nobody's */
}

static void set_free(struct rally__robust *rb, struct rally__localset *ls)
{
    for (int j = 0; j <= RALLY__MAX_REPLICA; j++)
        rally__robust_sgive(rb, ls->data[j], ls->cap[j]);
    memset(ls, 0, sizeof *ls);
}

int rally__robust_set_fill(struct rally__robust *rb, struct rally__localset *ls, int j,
                           const void *p, uint64_t n)
{
    ls->nbytes[j] = 0;
    int rc = fit(rb, &ls->data[j], &ls->cap[j], n);
    if (rc != RALLY_OK)
        return rc;
    if (p != NULL && n > 0)
        memcpy(ls->data[j], p, (size_t)n);
    ls->nbytes[j] = n;
    ls->owner[j] = rally__robust_slot_rank(rb, rb->rank, j);
    return RALLY_OK;
}

struct rally__localset *rally__robust_set_of(struct rally__robust *rb, uint64_t v)
{
    for (int i = 0; i < 2; i++)
        if (rb->st.loc[i].valid && rb->st.loc[i].version == v)
            return &rb->st.loc[i];
    return NULL;
}

void rally__robust_set_drop(struct rally__robust *rb, uint64_t v)
{
    struct rally__localset *ls = rally__robust_set_of(rb, v);
    if (ls != NULL)
        ls->valid = 0;
}

struct rally__localset *rally__robust_set_spare(struct rally__robust *rb)
{
    /* the current version's set, else the newest valid one (a restarted
     * worker's copies, taken in rally_init before it loaded) */
    struct rally__localset *keep = rally__robust_set_of(rb, rally__robust_version(rb));
    for (int i = 0; keep == NULL && i < 2; i++) {
        const struct rally__localset *o = &rb->st.loc[1 - i];
        if (rb->st.loc[i].valid && (!o->valid || rb->st.loc[i].version > o->version))
            keep = &rb->st.loc[i];
    }
    struct rally__localset *ls = keep == &rb->st.loc[0] ? &rb->st.loc[1] : &rb->st.loc[0];
    set_reset(ls);
    return ls;
}

unsigned char *rally__robust_dup(const void *p, uint64_t n)
{
    if (n > SIZE_MAX)
        return NULL;
    unsigned char *d = rally__malloc_warm((size_t)n);
    if (d != NULL && n)
        memcpy(d, p, (size_t)n);
    return d;
}

/* The global model of version v (only the newest is held): stored, or
 * serialized now into a store buffer (*cap its capacity, else 0). */
static int global_bytes(struct rally__robust *rb, uint64_t v, const unsigned char **p, uint64_t *n,
                        uint64_t *cap)
{
    *cap = 0;
    if (v != rally__robust_version(rb) || (rb->st.ckpt == NULL && rb->st.lazy == NULL))
        return rally__fail(rb->err, RALLY_ESTATE,
                           "checkpoint version %llu is not held here (the newest is %llu)",
                           (unsigned long long)v, (unsigned long long)rally__robust_version(rb));
    if (rb->st.lazy == NULL) {
        *p = rb->st.ckpt;
        *n = rb->st.ckpt_nbytes;
        return RALLY_OK;
    }
    uint64_t m = rb->st.lazy(rb->st.lazy_arg, NULL, 0), c = 0;
    unsigned char *b = m == UINT64_MAX || m > SIZE_MAX ? NULL : rally__robust_stake(rb, m, &c);
    if (b == NULL || rb->st.lazy(rb->st.lazy_arg, b, m) != m) {
        rally__robust_sgive(rb, b, c);
        return rally__fail(rb->err, RALLY_EINVAL,
                           "the lazy checkpoint's serialize callback failed for version %llu",
                           (unsigned long long)v);
    }
    *p = b;
    *n = m;
    *cap = c;
    return RALLY_OK;
}

/* rank's local model of version v, when this worker holds it (its own, or
 * a replica of one of its k predecessors on the placement ring). */
static int local_bytes(struct rally__robust *rb, uint64_t v, int rank, const unsigned char **p,
                       uint64_t *n)
{
    struct rally__localset *ls = rally__robust_set_of(rb, v);
    for (int j = 0; ls != NULL && j <= rb->k; j++)
        if (ls->owner[j] == rank && ls->data[j] != NULL) {
            *p = ls->data[j];
            *n = ls->nbytes[j];
            return RALLY_OK;
        }
    return rally__fail(rb->err, RALLY_ESTATE,
                       "rank %d's local model of checkpoint version %llu is not held here", rank,
                       (unsigned long long)v);
}

int rally__robust_lend(struct rally__robust *rb, uint64_t v, int rank, const unsigned char **p,
                       uint64_t *n)
{
    uint64_t cap = 0;
    int rc = rank < 0 ? global_bytes(rb, v, p, n, &cap) : local_bytes(rb, v, rank, p, n);
    if (rc != RALLY_OK)
        return rc;
    if (lend_buf(rb, *p) != RALLY_OK) {
        if (cap > 0)
            rally__robust_sgive(rb, (unsigned char *)*p, cap);
        return rb->err->code;
    }
    if (cap > 0) /* serialized for the borrower: the store holds it aside until it is back */
        rb->st.held[rb->st.nheld++] = (struct rally__sbuf){(unsigned char *)*p, cap};
    return RALLY_OK;
}

void rally__robust_release(struct rally__robust *rb, const unsigned char *p)
{
    unlend(rb, p);
}

/* A checkpoint's local models travel k hops along the placement ring
 * (util/place.h: to other hosts), one hop per shift: each worker passes on
 * what it received the hop before.  The set is
 * valid once its own shifts are done; the barrier after them tells every
 * worker that all are. */

/* A barrier; its result is cached like any other. */
int rally__robust_run_barrier(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                              uint64_t *n)
{
    unsigned char *b = rally__robust_buf(rb, 8);
    if (b == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory");
    rally__put_u64(b, 1);
    struct rally__reducer rd;
    rally__reducer_builtin(&rd, RALLY_UINT64, RALLY_SUM);
    int rc = rally__allreduce(&rb->comm, b, b, 1, &rd, &op->sig);
    if (rc != RALLY_OK) {
        rally__robust_unbuf(rb, b);
        return rc;
    }
    *res = b;
    *n = 8;
    return RALLY_OK;
}

static int run_replicate(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                         uint64_t *n)
{
    struct rally__replicate *c = op->ctx;
    struct rally__localset *ls = c->ls = rally__robust_set_spare(rb);
    ls->version = rally__robust_version(rb) + 1;
    int rc = rally__robust_set_fill(rb, ls, 0, c->local, c->nbytes);
    if (rc == RALLY_OK)
        rc = rb->place.local_xor ? rally__robust_set_parity(rb, ls, RALLY__C_SHIFT, 0)
                                 : rally__robust_set_spread(rb, ls, RALLY__C_SHIFT, 0);
    if (rc != RALLY_OK)
        return rc;
    ls->valid = 1;
    return rally__robust_run_barrier(rb, op, res, n);
}

int rally__robust_set_spread(struct rally__robust *rb, struct rally__localset *ls, uint8_t kind,
                             uint8_t tag)
{
    int to = rb->comm.topo.place_next, from = rb->comm.topo.place_prev;
    for (int j = 1; j <= rb->k; j++) {
        unsigned char out[8], in[8];
        rally__put_u64(out, ls->nbytes[j - 1]);
        struct rally__sig s1 = {kind, tag, 0, -1, (uint64_t)(2 * j), 0};
        int rc = rally__shift(&rb->comm, to, from, out, 8, in, 8, &s1);
        if (rc != RALLY_OK)
            return rc;
        uint64_t m = rally__get_u64(in);
        if (m > SIZE_MAX || rally__robust_set_fill(rb, ls, j, NULL, m) != RALLY_OK)
            return rally__fail(rb->err, RALLY_ENOMEM, "out of memory for a %llu-byte local model",
                               (unsigned long long)m);
        struct rally__sig s2 = {kind, tag, 0, -1, (uint64_t)(2 * j + 1), 0};
        rc = rally__shift(&rb->comm, to, from, ls->data[j - 1], (size_t)ls->nbytes[j - 1],
                          ls->data[j], (size_t)m, &s2);
        if (rc != RALLY_OK)
            return rc;
    }
    return RALLY_OK;
}

void rally__robust_xor_set(const struct rally__robust *rb, int r, int *first, int *size,
                           int *index, int *member)
{
    int p = rally__robust_place(rb, r);
    rally__xor_set(rb->world, rb->place.xor_g, p, first, size, index);
    *member = p - *first;
}

/* SCR's XOR along the set's ring (util/xor.h): first the set's lengths go
 * round (each passes on what came in), then S - 1 hops of a chunk: the
 * partial parity that member m starts for member m - 1 picks up, at each
 * member it passes, that member's chunk for m - 1, and arrives there
 * complete.  Every member sends and receives S - 1 chunks, L bytes in all,
 * into the parity slot and one scratch buffer kept across checkpoints. */
int rally__robust_set_parity(struct rally__robust *rb, struct rally__localset *ls, uint8_t kind,
                             uint8_t tag)
{
    int first, S, index, i;
    rally__robust_xor_set(rb, rb->rank, &first, &S, &index, &i);
    int to = rally__robust_at(rb, first + (i + 1) % S);
    int from = rally__robust_at(rb, first + (i + S - 1) % S);
    uint64_t len[RALLY__XOR_MAX], L = 0;
    len[i] = ls->nbytes[0];
    for (int s = 1; s < S; s++) {
        unsigned char out[8], in[8];
        rally__put_u64(out, len[(i - s + 1 + S) % S]);
        struct rally__sig sig = {kind, tag, 0, -1, (uint64_t)(2 * s), 0};
        int rc = rally__shift(&rb->comm, to, from, out, 8, in, 8, &sig);
        if (rc != RALLY_OK)
            return rc;
        len[(i - s + S) % S] = rally__get_u64(in);
    }
    for (int j = 0; j < S; j++)
        L = len[j] > L ? len[j] : L;
    uint64_t cn = rally__xor_chunk_nbytes(L, S), head = 8 * (uint64_t)S;
    /* the first hop sends this member's chunk for i - 1 from the model
     * itself when it lies wholly inside (no padding): a set of two then
     * needs no scratch */
    int c0 = rally__xor_chunk_of(S, i, (i + S - 1) % S);
    int direct = (uint64_t)c0 * cn + cn <= len[i];
    if (cn > SIZE_MAX / 2 || rally__robust_set_fill(rb, ls, RALLY__XOR_SLOT, NULL, head + cn) ||
        (cn > 0 && (S > 2 || !direct) && fit(rb, &rb->st.xbuf.p, &rb->st.xbuf.cap, cn)))
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory for a %llu-byte parity chunk",
                           (unsigned long long)cn);
    ls->owner[RALLY__XOR_SLOT] = -1;
    unsigned char *par = ls->data[RALLY__XOR_SLOT];
    for (int j = 0; j < S; j++)
        rally__put_u64(par + 8 * j, len[j]);
    const unsigned char *mine = ls->data[0];
    if (cn == 0) /* every model of the set is empty */
        return RALLY_OK;
    /* hop s lands in the parity slot or the scratch buffer, taking turns,
     * so that the last lands in the slot and none in what is being sent */
    const unsigned char *out = mine + (uint64_t)c0 * cn;
    if (!direct) {
        unsigned char *b0 = (S - 1) % 2 == 0 ? par + head : rb->st.xbuf.p;
        rally__xor_fold(b0, mine, len[i], c0, cn, 1);
        out = b0;
    }
    for (int s = 1; s < S; s++) {
        unsigned char *got = (S - 1 - s) % 2 == 0 ? par + head : rb->st.xbuf.p;
        struct rally__sig sig = {kind, tag, 0, -1, (uint64_t)(2 * s + 1), 0};
        int rc = rally__shift(&rb->comm, to, from, out, (size_t)cn, got, (size_t)cn, &sig);
        if (rc != RALLY_OK)
            return rc;
        /* the partial for member i - s - 1: this member's chunk for it,
         * unless it arrived home (s = S - 1) */
        if (s < S - 1)
            rally__xor_fold(got, mine, len[i], rally__xor_chunk_of(S, i, (i - s - 1 + 2 * S) % S),
                            cn, 0);
        out = got;
    }
    return RALLY_OK;
}

/* Served: another worker finished the barrier, so every worker had
 * finished its shifts.  A restarted worker never did them: recovery
 * brought it the set its predecessor built (recovery.c,
 * rally__robust_recover), whose own model must be the one passed now. */
static int deliver_replicate(struct rally__robust *rb, struct rally__op *op,
                             const unsigned char *res, uint64_t n)
{
    struct rally__replicate *c = op->ctx;
    struct rally__localset *ls = rally__robust_set_of(rb, rally__robust_version(rb) + 1);
    if (ls == NULL)
        return rally__fail(rb->err, RALLY_EPROTO,
                           "local models: recovery served version %llu's replication but not "
                           "its local models",
                           (unsigned long long)rally__robust_version(rb) + 1);
    if (c->ls == NULL && (ls->nbytes[0] != c->nbytes ||
                          (c->nbytes > 0 && memcmp(ls->data[0], c->local, (size_t)c->nbytes)))) {
        rally__fail(rb->err, RALLY_EMISMATCH,
                    "checkpoint version %llu: rank %d (restarted) passed a %llu-byte local model "
                    "with digest %016llx to rally_checkpoint, but its predecessor passed %llu "
                    "bytes with digest %016llx (rally_digest64 of its bytes)",
                    (unsigned long long)rally__robust_version(rb), rb->rank,
                    (unsigned long long)c->nbytes,
                    (unsigned long long)rally_digest64(c->local, (size_t)c->nbytes),
                    (unsigned long long)ls->nbytes[0],
                    (unsigned long long)rally_digest64(ls->data[0], (size_t)ls->nbytes[0]));
        rally__robust_fatal(rb, RALLY_EMISMATCH, rb->err->msg);
        return RALLY_EMISMATCH;
    }
    return RALLY_OK;
}

void rally__robust_replicate_op(const struct rally__robust *rb, struct rally__replicate *c,
                                struct rally__op *op)
{
    *op = (struct rally__op){.sig = {RALLY__K_REPLICATE, 0, 0, -1, rally__robust_version(rb), 0},
                             .run = run_replicate,
                             .deliver = deliver_replicate,
                             .ctx = c};
}

/* The newest model and the kept older one change places (an elastic
 * job's double buffer: storing the next version, or going back). */
static void swap_prev(struct rally__store *st)
{
    struct rally__store t = *st;
    st->ckpt = t.prev;
    st->ckpt_cap = t.prev_cap;
    st->ckpt_nbytes = t.prev_nbytes;
    st->ckpt_digest = t.prev_digest;
    st->prev = t.ckpt;
    st->prev_cap = t.ckpt_cap;
    st->prev_nbytes = t.ckpt_nbytes;
    st->prev_digest = t.ckpt_digest;
}

/* The copy and its digest in one pass (util/digest.h): each piece is
 * hashed while it is still in the cache. */
int rally__robust_store_global(struct rally__robust *rb, const void *global, uint64_t nbytes,
                               rally_serialize_fn lazy, void *lazy_arg)
{
    struct rally__store *st = &rb->st;
    if (rb->cfg != NULL && rb->cfg->elastic && st->lazy == NULL && st->ckpt != NULL &&
        rally__robust_version(rb) == st->committed) {
        /* elastic: the committed model stays until this one is acknowledged */
        swap_prev(st);
        st->prev_version = rally__robust_version(rb);
    }
    if (lazy != NULL) {
        rally__robust_sgive(rb, rb->st.ckpt, rb->st.ckpt_cap); /* a spare for the next copy */
        rb->st.ckpt = NULL;
        rb->st.ckpt_cap = rb->st.ckpt_nbytes = rb->st.ckpt_digest = 0;
    } else {
        if (nbytes > SIZE_MAX || fit(rb, &rb->st.ckpt, &rb->st.ckpt_cap, nbytes) != RALLY_OK)
            return rally__fail(rb->err, RALLY_ENOMEM, "checkpoint: cannot copy a %llu-byte model",
                               (unsigned long long)nbytes);
        rb->st.ckpt_digest = rally__digest_copy(rb->st.ckpt, global, (size_t)nbytes);
        rb->st.ckpt_nbytes = nbytes;
    }
    rb->st.lazy = lazy;
    rb->st.lazy_arg = lazy_arg;
    return RALLY_OK;
}

void rally__robust_store_adopt(struct rally__robust *rb, unsigned char *global, uint64_t nbytes,
                               uint64_t cap)
{
    rally__robust_sgive(rb, rb->st.ckpt, rb->st.ckpt_cap);
    rb->st.prev_version = 0;
    rb->st.ckpt = global;
    rb->st.ckpt_nbytes = nbytes;
    rb->st.ckpt_cap = cap;
    rb->st.ckpt_digest = rally_digest64(global, (size_t)nbytes);
    rb->st.lazy = NULL;
}

void rally__robust_request(struct rally__robust *rb, uint64_t bits)
{
    rb->st.request |= bits;
}

int rally__robust_subscribe(struct rally__robust *rb, const struct rally__subscriber *s)
{
    return rally__subscribers_add(&rb->st.subs, s, rb->err);
}

void rally__robust_commit(struct rally__robust *rb, uint64_t v, uint64_t flags)
{
    rb->st.committed = v;
    rally__subscribers_commit(&rb->st.subs, v, flags);
}

int rally__robust_store_back(struct rally__robust *rb)
{
    struct rally__store *st = &rb->st;
    if (rally__robust_version(rb) == st->committed)
        return RALLY_OK;
    if (st->committed == 0) {
        /* version 1 stored, its acknowledgement cut short (a worker taken
         * in, or one lost, at the first checkpoint): back to no checkpoint,
         * which needs no copy; the load brings version 1 from a worker
         * that committed it, or starts afresh with all */
        rally__robust_sgive(rb, st->ckpt, st->ckpt_cap);
        st->ckpt = NULL;
        st->ckpt_cap = st->ckpt_nbytes = st->ckpt_digest = 0;
        st->lazy = NULL;
        rally__robust_pos_at(rb, 0);
        return RALLY_OK;
    }
    if (st->lazy != NULL || st->prev == NULL || st->prev_version != st->committed)
        return rally__fail(rb->err, RALLY_ESTATE, "cannot go back to checkpoint version %llu: %s",
                           (unsigned long long)st->committed,
                           st->lazy != NULL ? "a lazy checkpoint keeps no copy of it"
                                            : "this worker no longer holds it");
    swap_prev(st);
    st->prev_version = 0;
    rally__robust_pos_at(rb, st->committed);
    return RALLY_OK;
}

void rally__robust_store_spare_prev(struct rally__robust *rb)
{
    rally__robust_sgive(rb, rb->st.prev, rb->st.prev_cap);
    rb->st.prev = NULL;
    rb->st.prev_cap = rb->st.prev_version = 0;
}

void rally__robust_store_resized(struct rally__robust *rb)
{
    rally__subscribers_resized(&rb->st.subs, rally__robust_version(rb), rb->rank, rb->world);
}

int rally__robust_turn(struct rally__robust *rb, int when)
{
    int rc = rally__subscribers_turn(&rb->st.subs, when);
    /* A subscriber's own failure (rally_snapshot_required) fails the job:
     * the tracker hears its sentence, so the verdict names it rather than
     * the first rank to exit.  A peer's failure or a change of the workers
     * is the job's already. */
    if (rc != RALLY_OK && rc != RALLY_EPEER && rc != RALLY_ERESIZED && !rb->fatal)
        rally__robust_fatal(rb, rc, rb->err->msg);
    return rc;
}

/* A fresh start adopts version a->version (fresh hook, api/engine.h): the
 * store owns a's buffers now. */
static void adopt(struct rally__robust *rb, struct rally__adopt *a)
{
    rally__robust_store_adopt(rb, a->global, a->global_nbytes, a->global_nbytes);
    a->global = NULL;
    if (a->has_local) {
        struct rally__localset *ls = rally__robust_set_spare(rb);
        ls->version = a->version;
        for (int j = 0; j <= rb->k; j++) {
            rally__robust_sgive(rb, ls->data[j], ls->cap[j]);
            ls->data[j] = a->local[j];
            ls->nbytes[j] = ls->cap[j] = a->local_nbytes[j];
            ls->owner[j] = a->slot_rank[j];
            a->local[j] = NULL;
        }
        ls->valid = 1;
        rb->st.use_local = 1;
    }
    rally__robust_pos_at(rb, a->version);
}

/* After every borrower released what it borrowed. */
void rally__robust_store_free(struct rally__robust *rb)
{
    rb->st.nlent = 0;
    rally__robust_sgive(rb, rb->st.ckpt, rb->st.ckpt_cap);
    rb->st.ckpt = NULL;
    rb->st.ckpt_cap = 0;
    rally__robust_sgive(rb, rb->st.prev, rb->st.prev_cap);
    rb->st.prev = NULL;
    rb->st.prev_cap = 0;
    set_free(rb, &rb->st.loc[0]);
    set_free(rb, &rb->st.loc[1]);
    free(rb->st.xbuf.p);
    rb->st.xbuf = (struct rally__sbuf){NULL, 0};
    for (int i = 0; i < rb->st.nheld; i++)
        free(rb->st.held[i].p);
    for (int i = 0; i < rb->st.nspare; i++)
        free(rb->st.spare[i].p);
    rb->st.nheld = rb->st.nspare = 0;
}

int rally__robust_fresh(struct rally__robust *rb)
{
    struct rally__adopt a;
    int slot_rank[RALLY__ADOPT_MAX];
    for (int j = 0; j <= rb->k; j++)
        slot_rank[j] = rally__robust_slot_rank(rb, rb->rank, j);
    int rc = rally__subscribers_fresh(&rb->st.subs, rb->k + 1, slot_rank, &a);
    if (rc == RALLY_ECONFIG) /* the job's settings: no restart repairs them */
        rally__robust_fatal(rb, rc, rb->err->msg);
    if (rc == RALLY_OK && a.version > 0)
        adopt(rb, &a);
    rally__adopt_free(&a);
    return rc;
}

int rally__robust_holds(const struct rally__robust *rb)
{
    return rb->st.ckpt != NULL || rb->st.lazy != NULL;
}

const unsigned char *rally__robust_global(const struct rally__robust *rb, uint64_t *nbytes)
{
    *nbytes = rb->st.lazy == NULL ? rb->st.ckpt_nbytes : 0;
    return rb->st.lazy == NULL ? rb->st.ckpt : NULL;
}

int rally__robust_global_digest(const struct rally__robust *rb, uint64_t *digest)
{
    *digest = rb->st.ckpt_digest;
    return rb->st.lazy == NULL && rb->st.ckpt != NULL;
}

uint64_t rally__robust_committed(const struct rally__robust *rb)
{
    return rb->st.committed;
}

int rally__robust_has_local(const struct rally__robust *rb)
{
    return rb->st.use_local;
}

void rally__robust_set_has_local(struct rally__robust *rb, int yes)
{
    rb->st.use_local = yes != 0;
}

uint64_t rally__robust_requests(const struct rally__robust *rb)
{
    return rb->st.request;
}

void rally__robust_requests_spent(struct rally__robust *rb)
{
    rb->st.request = 0;
}
