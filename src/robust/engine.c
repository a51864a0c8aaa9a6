/*
 * engine.c — the robust engine's ops table: each public call described as
 * an operation (its signature, how to run it on the links, how to install a
 * result that recovery served instead) for the op driver.
 *
 * Calls whose result only some ranks can size (broadcast_alloc, allgatherv)
 * run two collectives, sizes then data, as one operation: the cache keeps
 * the whole result, so a recovering worker is served both at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/engine.h"
#include "robust/robust.h"
#include "util/copy.h"
#include "util/wire.h"
#include "util/xor.h"

struct rally__engine {
    struct rally__robust rb;
};

/* Copies the result into a cache buffer. */
static int keep(struct rally__robust *rb, const void *src, uint64_t n, unsigned char **res,
                uint64_t *res_nbytes)
{
    unsigned char *b = rally__robust_buf(rb, n);
    if (b == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory caching a %llu-byte result",
                           (unsigned long long)n);
    if (n)
        memcpy(b, src, (size_t)n);
    *res = b;
    *res_nbytes = n;
    return RALLY_OK;
}

/* A range of the caller's buffer that an allreduce's attempt wrote its
 * final values over (bytes). */
struct span {
    size_t off, n;
};

/* An allreduce's own state: what it keeps, and what a failed attempt left
 * for the retry.  Set field by field (allreduce_op, run_allreduce), never
 * zeroed whole: a memset of it (rep stos) cost 10 ns of an 8-byte call. */
struct keeping {
    struct rally__robust *rb;
    unsigned char *kept;   /* its cache buffer */
    unsigned char *whole;  /* scratch for all of it: kept, or the engine's */
    struct rally__part pt; /* what kept holds of the result */
    struct rally__part_range keep[2]; /* the bytes of the result kept */
    int nkeep;
    uint64_t kn;      /* kept's bytes */
    int stream;       /* the copies bypass the CPU cache (a big part kept) */
    /* rally_result_scheme=xor: this worker's parity chunk in kept, and the
     * ranges of the result folded into it as they become final (off, n) */
    unsigned char *par;
    struct rally__part_range fold[RALLY__XOR_MAX - 1];
    int nfold;
    struct span *fin; /* where buf holds final values, not its input */
    int nfin, capfin;
    int overflow; /* more ranges than fin[] holds: the retry cannot know */
};

/* In-place calls whose whole result is one buffer of known size. */
struct inplace {
    void *buf;
    size_t nbytes;
    size_t count;
    const struct rally__reducer *rd;
    int root;
    const void *send;   /* allgather: this rank's block */
    struct keeping *ar; /* allreduce */
};

static int deliver_inplace(struct rally__robust *rb, struct rally__op *op, const unsigned char *res,
                           uint64_t n)
{
    struct inplace *c = op->ctx;
    if (n != c->nbytes)
        return rally__fail(rb->err, RALLY_EPROTO,
                           "recovery served %llu bytes for a call expecting %zu",
                           (unsigned long long)n, c->nbytes);
    if (n)
        rally__copy_result(c->buf, res, (size_t)n);
    return RALLY_OK;
}

/* The collective's final hook: buf[off, off + n) holds final values now,
 * and src the same bytes, still in the CPU cache: what this worker keeps
 * of them goes into its cache buffer (streamed, as nobody reads it soon,
 * but for a small whole result: k->stream), unless they sit there
 * already.  The ranges come in increasing
 * order within a segment, so neighbours merge; the ring makes at most
 * N + 1. */
static void note_final(void *arg, size_t off, size_t n, const unsigned char *src)
{
    struct inplace *c = arg;
    struct keeping *k = c->ar;
    struct rally__robust *rb = k->rb;
    for (int i = 0; i < k->nkeep && src != k->kept + off; i++) {
        const struct rally__part_range *r = &k->keep[i];
        size_t lo = off > r->off ? off : (size_t)r->off,
               hi = off + n < r->off + r->n ? off + n : (size_t)(r->off + r->n);
        unsigned char *to = k->kept + r->at + (lo - r->off);
        if (lo < hi && k->stream)
            rally__copy_stream(to, src + (lo - off), hi - lo);
        else if (lo < hi)
            memcpy(to, src + (lo - off), hi - lo);
    }
    for (int i = 0; i < k->nfold; i++) { /* each byte once: the hook names it once */
        const struct rally__part_range *r = &k->fold[i];
        size_t lo = off > r->off ? off : (size_t)r->off,
               hi = off + n < r->off + r->n ? off + n : (size_t)(r->off + r->n);
        if (lo < hi)
            rally__xor_into(k->par + (lo - r->off), src + (lo - off), hi - lo);
    }
    if (k->nfin > 0 && k->fin[k->nfin - 1].off + k->fin[k->nfin - 1].n == off)
        k->fin[k->nfin - 1].n += n;
    else if (k->nfin < k->capfin)
        k->fin[k->nfin++] = (struct span){off, n};
    else
        k->overflow = 1;
    rally__robust_mock(rb, rally__robust_version(rb), rally__robust_user_seq(rb),
                       RALLY__MOCK_FINAL);
}

/* rally_result_scheme=xor: the parity chunk after this worker's piece (at
 * place me) starts at zero, and what folds into it is chunk
 * rally__xor_chunk_of(S, j, x) of each other member j's piece (util/xor.h).
 * Every worker holds the whole result in its buffer by the end, so the
 * parity needs no traffic: note_final folds each chunk in as it becomes
 * final, still in the CPU cache, one read of about a piece more. */
static void plan_parity(struct keeping *k, int me)
{
    int first, S, x;
    uint64_t len, cn = rally__part_parity(&k->pt, me, &first, &S, &x);
    k->par = k->kept + k->keep[k->nkeep - 1].at + k->keep[k->nkeep - 1].n;
    memset(k->par, 0, (size_t)cn);
    for (int j = 0; j < S; j++) {
        uint64_t off = rally__part_piece(&k->pt, first + j, &len);
        uint64_t c0 = (uint64_t)rally__xor_chunk_of(S, j, x) * cn;
        if (j != x && c0 < len)
            k->fold[k->nfold++] =
                (struct rally__part_range){off + c0, len - c0 < cn ? len - c0 : cn, 0};
    }
}

/* The bit of every byte of c->buf that holds a final value here. */
static void mark_final(const struct inplace *c, unsigned char *bits)
{
    struct keeping *k = c->ar;
    for (int i = 0; i < k->nfin; i++)
        for (size_t b = k->fin[i].off; b < k->fin[i].off + k->fin[i].n; b++)
            bits[b >> 3] |= (unsigned char)(1u << (b & 7));
}

/* An attempt after a recovery's agreement (every worker's attempt at this
 * position is one).  A failed attempt may have written final values over
 * parts of some workers' buffers (docs/recovery.md, "Retrying an
 * allreduce"): every byte that is final on some survivor is taken from
 * one (all hold the same bits), every other byte is computed again from
 * the inputs, which every worker still holds there.  Three collectives,
 * on every worker alike: the OR of the final bytes' bitmaps; the
 * allreduce again, out of place (buf is only read); and, when any byte
 * was final, a bytewise OR in which each worker gives its final bytes, 0
 * for the others' and the new result elsewhere. */
static int retry_allreduce(struct rally__robust *rb, struct rally__op *op, struct inplace *c,
                           unsigned char **res)
{
    struct keeping *k = c->ar;
    size_t nb = c->nbytes, mb = (nb + 7) / 8;
    unsigned char *any = calloc(mb ? mb : 1, 1), *slot = NULL;
    struct rally__reducer orr;
    rally__reducer_builtin(&orr, RALLY_UINT8, RALLY_BITOR);
    struct rally__sig ms = {RALLY__K_RETRY, 0, 0, -1, mb, 0},
                      ds = {RALLY__K_RETRY, 1, 0, -1, nb, 0};
    int rc = RALLY_OK;
    if (any == NULL || (slot = rally__robust_buf(rb, nb)) == NULL) {
        rc = rally__fail(rb->err, RALLY_ENOMEM, "out of memory retrying a %zu-byte allreduce", nb);
        goto done;
    }
    if (k->overflow) { /* cannot happen with the algorithms we have: said, not guessed */
        rc = rally__fail(rb->err, RALLY_ESTATE,
                         "cannot retry an allreduce: its failed attempt wrote final values over "
                         "more than %d ranges of this rank's buffer",
                         k->capfin);
        rally__robust_fatal(rb, rc, rb->err->msg);
        goto done;
    }
    mark_final(c, any);
    if ((rc = rally__allreduce(&rb->comm, any, any, mb, &orr, &ms)) != RALLY_OK ||
        (rc = rally__allreduce(&rb->comm, c->buf, slot, c->count, c->rd, &op->sig)) != RALLY_OK)
        goto done;
    int some = 0;
    for (size_t i = 0; i < mb && !some; i++)
        some = any[i] != 0;
    if (some) { /* 0 where final anywhere, then this rank's final bytes (a subset) */
        for (size_t i = 0; i < mb; i++)
            for (unsigned b = 0; any[i] != 0 && b < 8; b++)
                if (any[i] >> b & 1)
                    slot[8 * i + b] = 0;
        for (int i = 0; i < k->nfin; i++)
            memcpy(slot + k->fin[i].off, c->buf + k->fin[i].off, k->fin[i].n);
        if ((rc = rally__allreduce(&rb->comm, slot, slot, nb, &orr, &ds)) != RALLY_OK)
            goto done;
    }
    rally__robust_arrived(rb, slot, nb);
    rally__copy_result(c->buf, slot, nb);
    *res = slot;
    slot = NULL;
    rally__robust_unbuf(rb, k->kept);
    k->kept = NULL;
    k->nfin = 0;
done:
    rally__robust_unbuf(rb, slot);
    free(any);
    return rc;
}

/* Whether buf[off, off + n) holds final values after a failed attempt
 * (recovery serves them: rb->partial).  A range the hook named lies in one
 * span, as spans merge neighbours; a span left out past capfin only hides
 * final bytes, never claims input ones. */
static int is_final(const void *arg, uint64_t off, uint64_t n)
{
    const struct keeping *k = arg;
    for (int i = 0; i < k->nfin; i++)
        if (k->fin[i].off <= off && off + n <= k->fin[i].off + k->fin[i].n)
            return 1;
    return 0;
}

/* The mock's flip of buf's middle byte, in what this worker keeps too. */
static void arrived(struct rally__robust *rb, struct inplace *c)
{
    struct keeping *k = c->ar;
    size_t mid = c->nbytes / 2;
    if (!rally__robust_arrived(rb, c->buf, c->nbytes))
        return;
    for (int i = 0; i < k->nkeep; i++)
        if (mid - k->keep[i].off < k->keep[i].n)
            k->kept[k->keep[i].at + mid - k->keep[i].off] ^= 1;
}

/* The allreduce runs in place in the caller's buffer and leaves a copy of
 * what this worker keeps of its result in a cache buffer, each piece
 * copied while it is in the CPU cache (rally__allreduce_keep): fault
 * tolerance adds one write of that part and no pass over cold memory.  A
 * big result is kept in pieces, each on rally_result_copies workers
 * (docs/recovery.md, "Results kept in part"); its partial sums go to the
 * engine's scratch then.  A failed attempt leaves buf part input, part
 * final values, and says which: the next attempt, after the recovery's
 * agreement, is retry_allreduce (docs/recovery.md, "What recovery costs
 * while nothing fails", "Retrying an allreduce"). */
static int run_allreduce(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                         uint64_t *res_nbytes)
{
    struct inplace *c = op->ctx;
    struct keeping *k = c->ar;
    *res_nbytes = c->nbytes;
    if (rb->pos.retried)
        return retry_allreduce(rb, op, c, res);
    if (k->kept == NULL) {
        /* a small result (most calls) is kept whole: nothing to ask */
        int big = c->nbytes >= RALLY__PART_MIN;
        k->pt = (struct rally__part){c->nbytes, c->count, (uint32_t)rb->world, 0, 0};
        if (big)
            k->pt = rally__part_plan(rb, c->nbytes, c->count,
                                     rally__allreduce_in_place(&rb->comm, c->count, c->rd));
        int me = rally__robust_place(rb, rb->rank);
        k->nkeep = rally__part_ranges(&k->pt, me, k->keep);
        k->kn = k->pt.xor_g ? rally__part_nbytes(&k->pt, me)
                            : k->keep[k->nkeep - 1].at + k->keep[k->nkeep - 1].n;
        if ((k->kept = rally__robust_buf(rb, k->kn)) == NULL)
            return rally__fail(rb->err, RALLY_ENOMEM, "out of memory for a %zu-byte allreduce",
                               c->nbytes);
        k->nfold = 0;
        if (k->pt.xor_g)
            plan_parity(k, me);
        /* pieces stream (N >= 3: the copy would evict what the others
         * run on; N = 8, 1 MiB: +7 % over plain streamed, +14 % cached);
         * a whole result below rally__copy_result's threshold is copied
         * through the cache (N = 2, 1 MiB: +15 % against +24 %) */
        k->stream = big && (k->pt.copies != 0 || rally__copy_streams(k->kn));
    }
    k->whole = k->pt.copies ? rally__robust_scratch(rb, c->nbytes) : k->kept;
    if (k->whole == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory for a %zu-byte allreduce",
                           c->nbytes);
    if (k->fin == NULL) { /* the engine's array, grown once for the world */
        int cap = 2 * rb->world + 4;
        if (rb->spans.cap < cap) {
            void *v = realloc(rb->spans.v, (size_t)cap * sizeof *k->fin);
            if (v == NULL)
                return rally__fail(rb->err, RALLY_ENOMEM, "out of memory for a %zu-byte allreduce",
                                   c->nbytes);
            rb->spans.v = v;
            rb->spans.cap = cap;
        }
        k->fin = rb->spans.v;
        k->capfin = rb->spans.cap;
    }
    struct rally__final_hook h = {note_final, c};
    rb->partial.buf = c->buf;
    rb->partial.nbytes = c->nbytes;
    rb->partial.final = is_final;
    rb->partial.arg = k;
    int rc = rally__allreduce_keep(&rb->comm, c->buf, k->whole, c->count, c->rd, &op->sig, &h);
    if (rc == RALLY_OK && rb->mock.n > 0 && rb->mem.kind == &rally__tracker_rally &&
        rally__mock_cut(&rb->mock, rb->launch_rank, rally__robust_version(rb),
                        rally__robust_user_seq(rb), rally__robust_ndeath(rb)))
        rc = rally__robust_wait_reset(rb);
    if (rc != RALLY_OK)
        return rc; /* kept and fin stay for the retry */
    arrived(rb, c);
    *res = k->kept;
    *res_nbytes = k->kn;
    if (k->pt.copies) {
        op->part = k->pt;
        op->whole = c->buf;
    }
    k->kept = NULL;
    k->nfin = 0;
    return RALLY_OK;
}

static int allreduce_op(struct rally__robust *rb, void *buf, size_t count,
                        const struct rally__reducer *rd, struct rally__sig sig,
                        rally_prepare_fn prepare, void *arg)
{
    struct keeping k; /* field by field (struct keeping): run_allreduce sets the rest */
    k.rb = rb;
    k.kept = NULL;
    k.fin = NULL;
    k.nfin = k.capfin = k.overflow = 0;
    struct inplace c = {.buf = buf,
                        .nbytes = count * rd->elem_nbytes,
                        .count = count,
                        .rd = rd,
                        .root = -1,
                        .ar = &k};
    struct rally__op op = {.sig = sig,
                           .prepare = prepare,
                           .prepare_arg = arg,
                           .run = run_allreduce,
                           .deliver = deliver_inplace,
                           .ctx = &c};
    int rc = rally__robust_op(rb, &op);
    rally__robust_unbuf(rb, k.kept); /* a failed attempt's, served or given up since */
    return rc;
}

static int allreduce(struct rally__engine *en, void *buf, size_t count, int dtype, int op,
                     rally_prepare_fn prepare, void *prepare_arg)
{
    struct rally__reducer rd;
    rally__reducer_builtin(&rd, dtype, op);
    struct rally__sig sig = {RALLY__C_ALLREDUCE, (uint8_t)dtype, (uint8_t)op, -1, count, 0};
    return allreduce_op(&en->rb, buf, count, &rd, sig, prepare, prepare_arg);
}

static int allreduce_custom(struct rally__engine *en, void *buf, size_t count, int reducer_id,
                            const struct rally__reducer *rd, rally_prepare_fn prepare,
                            void *prepare_arg)
{
    struct rally__sig sig = {
        RALLY__C_ALLREDUCE_CUSTOM, (uint8_t)rd->elem_nbytes, (uint8_t)reducer_id, -1, count, 0};
    return allreduce_op(&en->rb, buf, count, rd, sig, prepare, prepare_arg);
}

/* The root's buffer is only read, the others' only written: run in place. */
static int run_broadcast(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                         uint64_t *res_nbytes)
{
    struct inplace *c = op->ctx;
    int rc = rally__broadcast(&rb->comm, c->buf, c->nbytes, c->root, &op->sig);
    if (rc != RALLY_OK)
        return rc;
    rally__robust_arrived(rb, c->buf, c->nbytes);
    return keep(rb, c->buf, c->nbytes, res, res_nbytes);
}

static int broadcast(struct rally__engine *en, void *buf, size_t nbytes, int root)
{
    struct inplace c = {.buf = buf, .nbytes = nbytes, .count = nbytes, .root = root};
    struct rally__op op = {.sig = {RALLY__C_BROADCAST, 0, 0, root, nbytes, 0},
                           .run = run_broadcast,
                           .deliver = deliver_inplace,
                           .ctx = &c};
    return rally__robust_op(&en->rb, &op);
}

/* Calls whose result size only some ranks know. */
struct sized {
    const void *in; /* root's data / this rank's block */
    size_t in_nbytes;
    int root;
    unsigned char *out; /* malloc'd result for the caller */
    uint64_t out_nbytes;
    uint64_t *sizes; /* allgatherv: world entries */
};

static int run_broadcast_alloc(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                               uint64_t *res_nbytes)
{
    struct sized *c = op->ctx;
    unsigned char sz[8];
    rally__put_u64(sz, rb->rank == c->root ? (uint64_t)c->in_nbytes : 0);
    /* the verified digest rides on the first step only: once per link */
    struct rally__sig s1 = {RALLY__C_BROADCAST_SIZE, 0, 0, c->root, 0, op->sig.sidecar};
    int rc = rally__broadcast(&rb->comm, sz, sizeof sz, c->root, &s1);
    if (rc != RALLY_OK)
        return rc;
    uint64_t n = rally__get_u64(sz);
    unsigned char *b = rally__robust_buf(rb, n);
    if (b == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "broadcast_alloc: cannot allocate %llu bytes",
                           (unsigned long long)n);
    if (rb->rank == c->root && n)
        memcpy(b, c->in, (size_t)n);
    struct rally__sig s2 = {RALLY__C_BROADCAST_DATA, 0, 0, c->root, n, 0};
    if ((rc = rally__broadcast(&rb->comm, b, (size_t)n, c->root, &s2)) != RALLY_OK) {
        rally__robust_unbuf(rb, b);
        return rc;
    }
    *res = b;
    *res_nbytes = n;
    return op->deliver(rb, op, b, n);
}

static int deliver_alloc(struct rally__robust *rb, struct rally__op *op, const unsigned char *res,
                         uint64_t n)
{
    struct sized *c = op->ctx;
    if (rb->rank == c->root)
        return RALLY_OK;
    if (n > SIZE_MAX || (c->out = malloc(n ? (size_t)n : 1)) == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "cannot allocate %llu bytes",
                           (unsigned long long)n);
    if (n)
        memcpy(c->out, res, (size_t)n);
    c->out_nbytes = n;
    return RALLY_OK;
}

static int broadcast_alloc(struct rally__engine *en, void **buf, size_t *nbytes, int root)
{
    struct rally__robust *rb = &en->rb;
    struct sized c = {
        rb->rank == root ? *buf : NULL, rb->rank == root ? *nbytes : 0, root, NULL, 0, NULL};
    struct rally__op op = {.sig = {RALLY__C_BROADCAST_SIZE, 0, 0, root, 0, 0},
                           .run = run_broadcast_alloc,
                           .deliver = deliver_alloc,
                           .ctx = &c};
    int rc = rally__robust_op(rb, &op);
    if (rc == RALLY_OK && rb->rank != root) {
        *buf = c.out_nbytes ? c.out : NULL;
        if (c.out_nbytes == 0)
            free(c.out);
        *nbytes = (size_t)c.out_nbytes;
    } else if (rc != RALLY_OK) {
        free(c.out);
    }
    return rc;
}

/* Ring allgather of blocks of len[i] bytes laid out back to back in buf. */
static int gather(struct rally__robust *rb, unsigned char *buf, const uint64_t *len,
                  const struct rally__sig *sig)
{
    size_t *off = malloc(2 * (size_t)rb->world * sizeof *off);
    if (off == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "allgather: out of memory");
    size_t *l = off + rb->world, pos = 0;
    for (int i = 0; i < rb->world; i++) {
        off[i] = pos;
        l[i] = (size_t)len[i];
        pos += l[i];
    }
    int rc = rally__allgather(&rb->comm, buf, off, l, sig);
    free(off);
    return rc;
}

static int run_allgather(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                         uint64_t *res_nbytes)
{
    struct inplace *c = op->ctx;
    size_t each = c->nbytes / (size_t)rb->world;
    unsigned char *dst = c->buf;
    if (each)
        memmove(dst + (size_t)rb->rank * each, c->send, each);
    uint64_t *len = malloc((size_t)rb->world * sizeof *len);
    if (len == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "allgather: out of memory");
    for (int i = 0; i < rb->world; i++)
        len[i] = each;
    int rc = gather(rb, dst, len, &op->sig);
    free(len);
    if (rc != RALLY_OK)
        return rc;
    rally__robust_arrived(rb, c->buf, c->nbytes);
    return keep(rb, c->buf, c->nbytes, res, res_nbytes);
}

static int allgather(struct rally__engine *en, const void *sendbuf, size_t nbytes, void *recvbuf)
{
    struct rally__robust *rb = &en->rb;
    struct inplace c = {.buf = recvbuf,
                        .nbytes = nbytes * (size_t)rb->world,
                        .count = nbytes,
                        .root = -1,
                        .send = sendbuf};
    struct rally__op op = {.sig = {RALLY__C_ALLGATHER, 0, 0, -1, nbytes, 0},
                           .run = run_allgather,
                           .deliver = deliver_inplace,
                           .ctx = &c};
    return rally__robust_op(rb, &op);
}

/* The cached result of allgatherv: world u64 sizes, then the blocks. */
static int run_allgatherv(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                          uint64_t *res_nbytes)
{
    struct sized *c = op->ctx;
    int N = rb->world;
    uint64_t *len = calloc((size_t)N, sizeof *len);
    unsigned char *sizes = calloc((size_t)N, 8);
    unsigned char *b = NULL;
    int rc;
    if (len == NULL || sizes == NULL) {
        rc = rally__fail(rb->err, RALLY_ENOMEM, "allgatherv: out of memory");
        goto done;
    }
    rally__put_u64(sizes + (size_t)rb->rank * 8, c->in_nbytes);
    for (int i = 0; i < N; i++)
        len[i] = 8;
    /* the verified digest rides on the first step only: once per link */
    struct rally__sig s1 = {RALLY__C_ALLGATHERV_SIZES, 0, 0, -1, 8, op->sig.sidecar};
    if ((rc = gather(rb, sizes, len, &s1)) != RALLY_OK)
        goto done;
    uint64_t total = 0, mine = 0;
    for (int i = 0; i < N; i++) {
        len[i] = rally__get_u64(sizes + (size_t)i * 8);
        if (len[i] > SIZE_MAX / 2 - total) {
            rc = rally__fail(rb->err, RALLY_EPROTO, "allgatherv: sizes overflow");
            goto done;
        }
        if (i < rb->rank)
            mine += len[i];
        total += len[i];
    }
    uint64_t head = (uint64_t)N * 8;
    if ((b = rally__robust_buf(rb, head + total)) == NULL) {
        rc = rally__fail(rb->err, RALLY_ENOMEM, "allgatherv: cannot allocate %llu bytes",
                         (unsigned long long)total);
        goto done;
    }
    memcpy(b, sizes, (size_t)head);
    if (c->in_nbytes)
        memcpy(b + head + mine, c->in, c->in_nbytes);
    struct rally__sig s2 = {RALLY__C_ALLGATHERV_DATA, 0, 0, -1, total, 0};
    if ((rc = gather(rb, b + head, len, &s2)) != RALLY_OK)
        goto done;
    rally__robust_arrived(rb, b + head, (size_t)total);
    if ((rc = op->deliver(rb, op, b, head + total)) != RALLY_OK)
        goto done;
    *res = b;
    *res_nbytes = head + total;
    b = NULL;
done:
    rally__robust_unbuf(rb, b);
    free(sizes);
    free(len);
    return rc;
}

static int deliver_allgatherv(struct rally__robust *rb, struct rally__op *op,
                              const unsigned char *res, uint64_t n)
{
    struct sized *c = op->ctx;
    uint64_t head = (uint64_t)rb->world * 8, total = 0;
    if (n < head)
        return rally__fail(rb->err, RALLY_EPROTO, "allgatherv: a recovered result is too short");
    for (int i = 0; i < rb->world; i++) {
        c->sizes[i] = rally__get_u64(res + (size_t)i * 8);
        total += c->sizes[i];
    }
    if (total != n - head)
        return rally__fail(rb->err, RALLY_EPROTO, "allgatherv: a recovered result is inconsistent");
    if ((c->out = malloc(total ? (size_t)total : 1)) == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "allgatherv: cannot allocate %llu bytes",
                           (unsigned long long)total);
    if (total)
        memcpy(c->out, res + head, (size_t)total);
    c->out_nbytes = total;
    return RALLY_OK;
}

static int allgatherv(struct rally__engine *en, const void *sendbuf, size_t nbytes, void **recvbuf,
                      uint64_t *nbytes_per_rank)
{
    struct rally__robust *rb = &en->rb;
    uint64_t *sizes = malloc((size_t)rb->world * sizeof *sizes);
    if (sizes == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "allgatherv: out of memory");
    struct sized c = {sendbuf, nbytes, -1, NULL, 0, sizes};
    struct rally__op op = {.sig = {RALLY__C_ALLGATHERV_SIZES, 0, 0, -1, 8, 0},
                           .run = run_allgatherv,
                           .deliver = deliver_allgatherv,
                           .ctx = &c};
    int rc = rally__robust_op(rb, &op);
    if (rc == RALLY_OK) {
        memcpy(nbytes_per_rank, sizes, (size_t)rb->world * sizeof *sizes);
        *recvbuf = c.out;
    } else {
        free(c.out);
    }
    free(sizes);
    return rc;
}

/* --- checkpoints, life cycle ---------------------------------------------------- */

static int load(struct rally__engine *en, void **global, uint64_t *global_nbytes, void **local,
                uint64_t *local_nbytes, uint64_t *version)
{
    return rally__robust_load(&en->rb, global, global_nbytes, local, local_nbytes, version);
}

static int checkpoint(struct rally__engine *en, const void *global, uint64_t global_nbytes,
                      const void *local, uint64_t local_nbytes)
{
    static const unsigned char empty;
    return rally__robust_checkpoint(&en->rb, global ? global : &empty, global_nbytes, NULL, NULL,
                                    local, local_nbytes);
}

static int lazy_checkpoint(struct rally__engine *en, rally_serialize_fn serialize, void *arg)
{
    return rally__robust_checkpoint(&en->rb, NULL, 0, serialize, arg, NULL, 0);
}

static int init(const struct rally__config *cfg, const char *host, struct rally__err *e,
                struct rally__engine **out)
{
    struct rally__engine *en = malloc(sizeof *en);
    if (en == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory for the rally engine");
    int rc = rally__robust_init(&en->rb, cfg, host, e);
    /* (an elastic job's points name workers as launched, perhaps more than now) */
    if (rc == RALLY_OK && !cfg->elastic &&
        rally__mock_check_world(&en->rb.mock, en->rb.world, e) != RALLY_OK)
        rally__robust_fatal(&en->rb, e->code, e->msg); /* the same on every rank: fail the job */
    if (e->code != RALLY_OK || rally__robust_rejoined(&en->rb) != RALLY_OK) {
        rally__robust_free(&en->rb);
        free(en);
        return e->code;
    }
    *out = en;
    return RALLY_OK;
}

static void engine_free(struct rally__engine *en)
{
    if (en == NULL)
        return;
    rally__robust_free(&en->rb);
    free(en);
}

static int finalize(struct rally__engine *en)
{
    return rally__robust_finalize(&en->rb);
}

static int rank(const struct rally__engine *en)
{
    return en->rb.rank;
}

static int world(const struct rally__engine *en)
{
    return en->rb.world;
}

static uint64_t version(const struct rally__engine *en)
{
    return rally__robust_version(&en->rb);
}

static void request(struct rally__engine *en, uint64_t bits)
{
    rally__robust_request(&en->rb, bits);
}

static int subscribe(struct rally__engine *en, const struct rally__subscriber *s)
{
    return rally__robust_subscribe(&en->rb, s);
}

static int agree(struct rally__engine *en, uint64_t *words, size_t n)
{
    return rally__robust_agree(&en->rb, words, n);
}

static int lend(struct rally__engine *en, uint64_t version, int rank, const void **bytes,
                uint64_t *nbytes)
{
    const unsigned char *p;
    int rc = rally__robust_lend(&en->rb, version, rank, &p, nbytes);
    if (rc == RALLY_OK)
        *bytes = p;
    return rc;
}

static void release(struct rally__engine *en, const void *bytes)
{
    rally__robust_release(&en->rb, bytes);
}

static int has_local(const struct rally__engine *en)
{
    return rally__robust_has_local(&en->rb);
}

static const char *host(const struct rally__engine *en, int rank)
{
    const struct rally__robust *rb = &en->rb;
    if (rb->tc.peers != NULL && rank >= 0 && rank < rb->world)
        return rb->tc.peers[rank].host;
    return rb->host && rb->host[0] ? rb->host : "localhost";
}

static int set_input(struct rally__engine *en, const char *scheme, const char *fingerprint)
{
    return rally__robust_input(&en->rb, scheme, fingerprint);
}

static int local_records(struct rally__engine *en, rally_owner_fn owner, void *arg)
{
    rally__robust_records_owner(&en->rb, owner, arg);
    return RALLY_OK;
}

static int tracker_print(struct rally__engine *en, const char *msg)
{
    return rally__robust_print(&en->rb, msg);
}

static void count(struct rally__engine *en, uint64_t nbytes)
{
    rally__robust_count(&en->rb, nbytes);
}

static void report(struct rally__engine *en, int kind, const char *key, double value,
                   uint64_t version, uint64_t nbytes, const char *text)
{
    struct rally__msg_report m = {
        .kind = kind, .version = version, .value = value, .nbytes = nbytes};
    snprintf(m.key, sizeof m.key, "%s", key ? key : "");
    snprintf(m.text, sizeof m.text, "%s", text ? text : "");
    rally__robust_report(&en->rb, &m);
}

/* The ERROR frame the tracker turns into the job's ABORT "rank R failed:
 * sentence"; this worker waits for that ABORT (a few seconds at most) so
 * the job is failed before the process can exit and be restarted. */
static int abort_job(struct rally__engine *en, int code, const char *sentence)
{
    struct rally__robust *rb = &en->rb;
    rally__err_clear(rb->err);
    rally__fail(rb->err, RALLY_EPEER, "rank %d failed: %s", rb->rank, sentence);
    rally__robust_fatal(rb, RALLY_EPEER, sentence);
    return RALLY_EPEER;
}

static int attempt(const struct rally__engine *en)
{
    return (int)rally__robust_ndeath(&en->rb);
}

static int plain_allreduce(struct rally__engine *en, const void *in, void *out, size_t count,
                           int dtype, int op)
{
    struct rally__reducer rd;
    rally__reducer_builtin(&rd, dtype, op);
    struct rally__sig sig = {RALLY__C_ALLREDUCE, (uint8_t)dtype, (uint8_t)op, -1, count, 0};
    return rally__allreduce(&en->rb.comm, in, out, count, &rd, &sig);
}

const struct rally__engine_ops rally__engine = {
    .name = "robust",
    .init = init,
    .free = engine_free,
    .start_failed = rally__robust_start_failed,
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
    .load = load,
    .checkpoint = checkpoint,
    .lazy_checkpoint = lazy_checkpoint,
    .request = request,
    .subscribe = subscribe,
    .agree = agree,
    .lend = lend,
    .release = release,
    .has_local = has_local,
    .host = host,
    .set_input = set_input,
    .local_records = local_records,
    .tracker_print = tracker_print,
    .count = count,
    .report = report,
    .abort_job = abort_job,
    .attempt = attempt,
    .plain_allreduce = plain_allreduce,
};
