/*
 * cache.c — the result cache: every operation's result since the previous
 * checkpoint (bootstrap results for the whole job), kept to serve a worker
 * that recovers, and the pool of result buffers it reuses.
 */
#include <stdlib.h>
#include <string.h>

#include "robust/robust.h"
#include "util/copy.h"
#include "util/xor.h"

#define BUF_HEAD 64 /* a result buffer's capacity lives just before it */
/* The pool keeps every buffer a checkpoint gives back, so a job with the
 * same calls between checkpoints allocates nothing after its first
 * interval, however many calls that is; at each checkpoint it is trimmed to
 * what that interval used (at least POOL_MIN), so a burst's buffers do not
 * stay for the rest of the job. */
#define POOL_MIN 64

static uint64_t buf_cap(const unsigned char *p)
{
    uint64_t c;
    memcpy(&c, p - BUF_HEAD, sizeof c);
    return c;
}

unsigned char *rally__robust_buf(struct rally__robust *rb, uint64_t nbytes)
{
    /* the smallest spare that fits, if it is not far larger: a small result
     * must not take the big buffer the next big allreduce will want.  The
     * capacities sit in the pool's own array and an exact fit ends the
     * search (none fits better), newest spare first: a job of many small
     * calls between checkpoints takes each buffer at the first look (a walk
     * over every spare's header, one cache line each, cost an 8-byte
     * allreduce a fifth of its time with 50 spares) */
    struct rally__sbuf *pool = rb->cache.pool;
    int best = -1;
    for (int i = rb->cache.npool - 1; i >= 0; i--) {
        uint64_t cap = pool[i].cap;
        if (cap >= nbytes && cap / 2 <= nbytes + 4096 && (best < 0 || cap < pool[best].cap)) {
            best = i;
            if (cap == nbytes)
                break;
        }
    }
    if (best >= 0) {
        unsigned char *p = pool[best].p;
        pool[best] = pool[--rb->cache.npool];
        return p;
    }
    if (nbytes > SIZE_MAX - BUF_HEAD)
        return NULL;
    unsigned char *p = rally__malloc_warm((size_t)nbytes + BUF_HEAD); /* a result fills it */
    if (p == NULL)
        return NULL;
    memcpy(p, &nbytes, sizeof nbytes);
    return p + BUF_HEAD;
}

void rally__robust_unbuf(struct rally__robust *rb, unsigned char *p)
{
    if (p == NULL)
        return;
    if (rb->cache.npool == rb->cache.pool_cap) {
        int cap = rb->cache.pool_cap ? 2 * rb->cache.pool_cap : POOL_MIN;
        struct rally__sbuf *np = realloc(rb->cache.pool, (size_t)cap * sizeof *np);
        if (np == NULL) {
            free(p - BUF_HEAD);
            return;
        }
        rb->cache.pool = np;
        rb->cache.pool_cap = cap;
    }
    rb->cache.pool[rb->cache.npool++] = (struct rally__sbuf){p, buf_cap(p)};
}

/* Frees spares beyond keep (those pooled first: the ones just given back
 * came last). */
static void pool_trim(struct rally__robust *rb, int keep)
{
    int excess = rb->cache.npool - (keep > POOL_MIN ? keep : POOL_MIN);
    if (excess <= 0)
        return;
    for (int i = 0; i < excess; i++)
        free(rb->cache.pool[i].p - BUF_HEAD);
    rb->cache.npool -= excess;
    memmove(rb->cache.pool, rb->cache.pool + excess,
            (size_t)rb->cache.npool * sizeof *rb->cache.pool);
}

const struct rally__entry *rally__robust_cache_find(const struct rally__robust *rb, uint64_t key)
{
    int lo = 0, hi = rb->cache.n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (rb->cache.v[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < rb->cache.n && rb->cache.v[lo].key == key ? &rb->cache.v[lo] : NULL;
}

unsigned char *rally__robust_scratch(struct rally__robust *rb, uint64_t nbytes)
{
    struct rally__sbuf *s = &rb->cache.scratch;
    if (s->cap < nbytes) { /* warm: partial sums land anywhere in it, a few pages a call */
        if (nbytes > SIZE_MAX)
            return NULL;
        free(s->p);
        s->cap = 0;
        if ((s->p = rally__malloc_warm((size_t)nbytes)) == NULL)
            return NULL;
        s->cap = nbytes;
    }
    return s->p;
}

struct rally__part rally__part_plan(const struct rally__robust *rb, uint64_t whole, uint64_t count,
                                    int in_place)
{
    struct rally__part pt = {whole, count, (uint32_t)rb->world, 0, 0};
    int64_t k = rb->cfg->result_copies;
    int xor = rb->cfg->result_scheme == RALLY__LOCAL_XOR && rb->place.xor_g >= 2;
    if (!in_place || whole < RALLY__PART_MIN || count < (uint64_t)rb->world)
        return pt;
    if (xor) { /* its own piece and a parity chunk of its set's */
        pt.copies = 1;
        pt.xor_g = (uint32_t)rb->place.xor_g;
    } else if (k > 0 && k < rb->world) {
        pt.copies = (uint32_t)k;
    }
    return pt;
}

uint64_t rally__part_piece(const struct rally__part *pt, int p, uint64_t *len)
{
    size_t n;
    uint64_t off = rally__ring_segment((size_t)pt->count, (size_t)(pt->whole / pt->count),
                                       (int)pt->world, p, &n);
    *len = n;
    return off;
}

int rally__part_holds(const struct rally__part *pt, int i0, int p, uint64_t *at)
{
    if (pt->copies == 0) {
        uint64_t len;
        *at = rally__part_piece(pt, p, &len);
        return 1;
    }
    int w = (int)pt->world, j = ((p - i0) % w + w) % w; /* p = i0 + j */
    if (j >= (int)pt->copies)
        return 0;
    uint64_t sum = 0, len;
    for (int i = 0; i < j; i++) {
        rally__part_piece(pt, (i0 + i) % w, &len);
        sum += len;
    }
    *at = sum;
    return 1;
}

int rally__part_ranges(const struct rally__part *pt, int i0, struct rally__part_range r[2])
{
    if (pt->copies == 0) {
        r[0] = (struct rally__part_range){0, pt->whole, 0};
        return 1;
    }
    int n = 0, w = (int)pt->world;
    uint64_t at = 0;
    for (uint32_t j = 0; j < pt->copies; j++) {
        uint64_t len, off = rally__part_piece(pt, (i0 + (int)j) % w, &len);
        if (n > 0 && r[n - 1].off + r[n - 1].n == off)
            r[n - 1].n += len;
        else
            r[n++] = (struct rally__part_range){off, len, at};
        at += len;
    }
    return n;
}

uint64_t rally__part_parity(const struct rally__part *pt, int i, int *first, int *size, int *x)
{
    if (pt->xor_g == 0)
        return 0;
    int index;
    uint64_t L = 0, len;
    rally__xor_set((int)pt->world, (int)pt->xor_g, i, first, size, &index);
    for (int j = 0; j < *size; j++) {
        rally__part_piece(pt, *first + j, &len);
        L = len > L ? len : L;
    }
    *x = i - *first;
    return rally__xor_chunk_nbytes(L, *size);
}

uint64_t rally__part_nbytes(const struct rally__part *pt, int i0)
{
    struct rally__part_range r[2];
    int n = rally__part_ranges(pt, i0, r), first, size, x;
    return r[n - 1].at + r[n - 1].n + rally__part_parity(pt, i0, &first, &size, &x);
}

/* Keys only grow, so appending keeps the cache sorted. */
int rally__robust_cache_put(struct rally__robust *rb, uint64_t key, const struct rally__sig *sig,
                            unsigned char *data, uint64_t nbytes, const struct rally__part *part)
{
    if (!rb->distributed || (rb->cache.n > 0 && rb->cache.v[rb->cache.n - 1].key >= key)) {
        rally__robust_unbuf(rb, data); /* nobody to serve, or already there */
        return RALLY_OK;
    }
    if (rb->cache.nbytes + nbytes > (uint64_t)rb->cfg->cache_max_bytes) {
        char where[96];
        rally__position_str(key, where, sizeof where);
        rally__robust_unbuf(rb, data);
        return rally__fail(rb->err, RALLY_ENOMEM,
                           "the recovery cache would hold %llu bytes after %s; "
                           "rally_cache_max_bytes is %lld: checkpoint more often or raise it",
                           (unsigned long long)(rb->cache.nbytes + nbytes), where,
                           (long long)rb->cfg->cache_max_bytes);
    }
    if (rb->cache.n == rb->cache.cap) {
        int cap = rb->cache.cap ? 2 * rb->cache.cap : 64;
        struct rally__entry *c = realloc(rb->cache.v, (size_t)cap * sizeof *c);
        if (c == NULL) {
            rally__robust_unbuf(rb, data);
            return rally__fail(rb->err, RALLY_ENOMEM, "out of memory growing the result cache");
        }
        rb->cache.v = c;
        rb->cache.cap = cap;
    }
    struct rally__part whole = {nbytes, sig->count, (uint32_t)rb->world, 0, 0};
    rb->cache.v[rb->cache.n++] =
        (struct rally__entry){key, *sig, data, nbytes, part != NULL ? *part : whole};
    rb->cache.nbytes += nbytes;
    return RALLY_OK;
}

void rally__robust_cache_drop_below(struct rally__robust *rb, uint64_t v)
{
    int out = 0, dropped = 0;
    for (int i = 0; i < rb->cache.n; i++) {
        struct rally__entry *c = &rb->cache.v[i];
        if (c->key >= RALLY__KEY_OP(0, 0) && c->key < RALLY__KEY_OP(v, 0)) {
            rb->cache.nbytes -= c->nbytes;
            rally__robust_unbuf(rb, c->data);
            dropped++;
        } else {
            rb->cache.v[out++] = *c;
        }
    }
    rb->cache.n = out;
    pool_trim(rb, dropped);
}

void rally__robust_cache_clear(struct rally__robust *rb)
{
    for (int i = 0; i < rb->cache.n; i++)
        rally__robust_unbuf(rb, rb->cache.v[i].data);
    rb->cache.n = 0;
    rb->cache.nbytes = 0;
}

void rally__robust_cache_free(struct rally__robust *rb)
{
    for (int i = 0; i < rb->cache.n; i++)
        free(rb->cache.v[i].data - BUF_HEAD);
    free(rb->cache.v);
    for (int i = 0; i < rb->cache.npool; i++)
        free(rb->cache.pool[i].p - BUF_HEAD);
    free(rb->cache.pool);
    free(rb->cache.scratch.p);
    rb->cache.scratch = (struct rally__sbuf){NULL, 0};
    rb->cache.v = NULL;
    rb->cache.pool = NULL;
    rb->cache.n = rb->cache.cap = rb->cache.npool = rb->cache.pool_cap = 0;
    rb->cache.nbytes = 0;
}
