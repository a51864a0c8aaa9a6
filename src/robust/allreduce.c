/*
 * allreduce.c — the robust engine's in-place allreduce (engine.c's table
 * calls it): one operation whose collective writes the result over the
 * caller's buffer, keeps this worker's part of it for recovery as the
 * bytes become final (note_final: copies, or XOR parity), and after a
 * failed attempt retries only what is not final yet, or serves the final
 * bytes it holds to a worker that needs them (docs/recovery.md, "Results
 * kept in part").  Below engine.c: it calls the op driver, never the table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "robust/robust.h"
#include "util/copy.h"
#include "util/xor.h"

/* A range of the caller's buffer that an allreduce's attempt wrote its
 * final values over (bytes). */
struct span {
    size_t off, n;
};

/* An allreduce's own state: what it keeps, and what a failed attempt left
 * for the retry.  Set field by field (rally__robust_allreduce, run_allreduce), never
 * zeroed whole: a memset of it (rep stos) cost 10 ns of an 8-byte call. */
struct rally__keeping {
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


int rally__robust_deliver_inplace(struct rally__robust *rb, struct rally__op *op,
                                   const unsigned char *res, uint64_t n)
{
    struct rally__inplace *c = op->ctx;
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
    struct rally__inplace *c = arg;
    struct rally__keeping *k = c->ar;
    struct rally__robust *rb = k->rb;
    uint64_t mv = 0;
    for (int i = 0; i < k->nkeep && src != k->kept + off; i++) {
        const struct rally__part_range *r = &k->keep[i];
        size_t lo = off > r->off ? off : (size_t)r->off,
               hi = off + n < r->off + r->n ? off + n : (size_t)(r->off + r->n);
        unsigned char *to = k->kept + r->at + (lo - r->off);
        if (lo < hi && k->stream)
            rally__copy_stream(to, src + (lo - off), hi - lo);
        else if (lo < hi)
            memcpy(to, src + (lo - off), hi - lo);
        mv += lo < hi ? hi - lo : 0;
    }
    for (int i = 0; i < k->nfold; i++) { /* each byte once: the hook names it once */
        const struct rally__part_range *r = &k->fold[i];
        size_t lo = off > r->off ? off : (size_t)r->off,
               hi = off + n < r->off + r->n ? off + n : (size_t)(r->off + r->n);
        if (lo < hi)
            rally__xor_into(k->par + (lo - r->off), src + (lo - off), hi - lo);
        mv += lo < hi ? hi - lo : 0;
    }
    rally__moved(mv);
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
static void plan_parity(struct rally__keeping *k, int me)
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
static void mark_final(const struct rally__inplace *c, unsigned char *bits)
{
    struct rally__keeping *k = c->ar;
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
static int retry_allreduce(struct rally__robust *rb, struct rally__op *op, struct rally__inplace *c,
                           unsigned char **res)
{
    struct rally__keeping *k = c->ar;
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
    const struct rally__keeping *k = arg;
    for (int i = 0; i < k->nfin; i++)
        if (k->fin[i].off <= off && off + n <= k->fin[i].off + k->fin[i].n)
            return 1;
    return 0;
}

/* The mock's flip of buf's middle byte, in what this worker keeps too. */
static void arrived(struct rally__robust *rb, struct rally__inplace *c)
{
    struct rally__keeping *k = c->ar;
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
    struct rally__inplace *c = op->ctx;
    struct rally__keeping *k = c->ar;
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

int rally__robust_allreduce(struct rally__robust *rb, void *buf, size_t count,
                            const struct rally__reducer *rd, struct rally__sig sig,
                            rally_prepare_fn prepare, void *arg)
{
    struct rally__keeping k; /* field by field (struct rally__keeping): run_allreduce sets
                                the rest */
    k.rb = rb;
    k.kept = NULL;
    k.fin = NULL;
    k.nfin = k.capfin = k.overflow = 0;
    struct rally__inplace c = {.buf = buf,
                        .nbytes = count * rd->elem_nbytes,
                        .count = count,
                        .rd = rd,
                        .root = -1,
                        .ar = &k};
    struct rally__op op = {.sig = sig,
                           .prepare = prepare,
                           .prepare_arg = arg,
                           .run = run_allreduce,
                           .deliver = rally__robust_deliver_inplace,
                           .ctx = &c};
    int rc = rally__robust_op(rb, &op);
    rally__robust_unbuf(rb, k.kept); /* a failed attempt's, served or given up since */
    return rc;
}
