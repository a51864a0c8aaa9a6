/*
 * quantile.c — --reproducible's cut points: exact quantiles of each
 * feature's values over every shard, so the cuts are the same whatever the
 * partition (sketch.c's summaries depend on it).
 *
 * A float's bits, flipped so that unsigned order is the float order (-0 taken
 * as +0), make a 32-bit key.  The quantiles are found by radix selection, a
 * byte of the key a round: each rank counts its values by the next byte
 * within each prefix still wanted, one allreduce of uint64 SUM adds the
 * counts (exact, in any order), and every rank walks the same counts to the
 * byte each wanted rank falls in.  Four rounds give the keys themselves.
 *
 * With W present values of a feature, sorted v_0 <= .. <= v_(W-1), the cuts
 * are v_(floor(b W / max_bin)) for b = 1 .. max_bin - 1, each kept when it
 * is above the minimum v_0 and the cut before; then a sentinel above v_(W-1).
 * So bin 0 holds the values below v_(floor(W / max_bin)), and every bin but
 * the last about W / max_bin of them (ties never split).  Unlike sketch.c,
 * a feature of few distinct values keeps a value of its own bin only when it
 * has at least about W / max_bin rows.
 *
 * Features go in batches, so a round's counts and lookup tables stay small
 * (at most 256 prefixes of 256 counts per feature).
 */
#include <stdlib.h>
#include <string.h>

#include "gbdt.h"

#define Q_BATCH 16u              /* features a batch: at most 16 x 512 KiB of counts */
#define Q_WANT (GB_MAX_BIN + 1u) /* ranks wanted per feature: the cuts, the min, the max */

static uint32_t key_of(float v)
{
    uint32_t u;
    v = v == 0 ? 0.0f : v; /* -0 is +0 */
    memcpy(&u, &v, sizeof u);
    return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}

static float float_of(uint32_t k)
{
    uint32_t u = (k & 0x80000000u) ? k & 0x7fffffffu : ~k;
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* One feature's selection in progress. */
struct want {
    uint32_t n;            /* ranks wanted */
    uint64_t rank[Q_WANT]; /* in the prefix's values, ascending */
    uint16_t node[Q_WANT]; /* the prefix (this round's node) each falls in */
    uint32_t key[Q_WANT];  /* the bytes found so far */
    uint32_t nodes;        /* this round's prefixes */
    int16_t *child[3];     /* round r's node x byte -> round r + 1's node, or -1 */
    uint64_t *count;       /* this round's nodes x 256 (into the batch's buffer) */
};

/* Value v's node at round r (0 .. 3) of w, or -1 when its prefix is not wanted. */
static int node_at(const struct want *w, uint32_t k, int r)
{
    int nd = 0;
    for (int i = 0; i < r && nd >= 0; i++)
        nd = w->child[i][(size_t)nd * 256 + ((k >> (24 - 8 * i)) & 0xff)];
    return nd;
}

/* Round r's counts of the batch's features [f0, f0 + nf) on this shard. */
struct count_arg {
    const struct gb_job *j;
    struct want *w;
    uint32_t f0, nf;
    int r;
    uint64_t *buf;
    size_t len;
};

static void count_round(void *arg)
{
    const struct count_arg *c = arg;
    const struct gb_job *j = c->j;
    memset(c->buf, 0, c->len * sizeof *c->buf);
    const int shift = 24 - 8 * c->r;
    for (uint64_t i = 0; i < j->rows; i++) {
        const float *x = j->x + i * j->d + c->f0;
        for (uint32_t f = 0; f < c->nf; f++) {
            if (isnan(x[f]))
                continue;
            uint32_t k = key_of(x[f]);
            int nd = node_at(&c->w[f], k, c->r);
            if (nd >= 0)
                c->w[f].count[(size_t)nd * 256 + ((k >> shift) & 0xff)]++;
        }
    }
}

/* After round r's counts: each wanted rank to the byte it falls in, and the
 * next round's nodes (the distinct (node, byte) pairs, in key order).
 * Returns the next round's node count. */
static uint32_t descend(struct want *w, int r)
{
    uint32_t nodes = 0;
    int last_node = -1, last_byte = -1;
    for (uint32_t t = 0; t < w->n; t++) {
        const uint64_t *c = w->count + (size_t)w->node[t] * 256;
        uint64_t below = 0;
        int b = 0;
        while (b < 255 && below + c[b] <= w->rank[t]) /* the rank is below the node's total */
            below += c[b++];
        w->rank[t] -= below;
        w->key[t] = w->key[t] << 8 | (uint32_t)b;
        if (r == 3)
            continue;
        if (w->node[t] != last_node || b != last_byte) {
            w->child[r][(size_t)w->node[t] * 256 + (size_t)b] = (int16_t)nodes++;
            last_node = w->node[t];
            last_byte = b;
        }
        w->node[t] = (uint16_t)w->child[r][(size_t)w->node[t] * 256 + (size_t)b];
    }
    return nodes;
}

/* The wanted ranks of a feature with W present values (round 0's counts). */
static void want_ranks(struct want *w, uint64_t W, uint32_t max_bin)
{
    w->n = 0;
    if (W == 0)
        return;
    w->rank[w->n++] = 0;
    for (uint32_t b = 1; b < max_bin; b++)
        w->rank[w->n++] = (uint64_t)b * W / max_bin;
    w->rank[w->n++] = W - 1;
    memset(w->node, 0, sizeof w->node);
    memset(w->key, 0, sizeof w->key);
}

/* The cuts of one feature from its selected keys. */
static void cuts_of(const struct want *w, uint32_t max_bin, float *cuts, uint32_t *nbin)
{
    if (w->n == 0) { /* never present: one bin, every row missing */
        cuts[0] = 1.0f;
        *nbin = 1;
        return;
    }
    float lo = float_of(w->key[0]), hi = float_of(w->key[w->n - 1]);
    uint32_t nc = 0;
    for (uint32_t t = 1; t + 1 < w->n && nc + 1 < max_bin; t++) {
        float v = float_of(w->key[t]);
        if (v > lo && (nc == 0 || v > cuts[nc - 1]))
            cuts[nc++] = v;
    }
    cuts[nc++] = gb_above(hi);
    *nbin = nc;
}

int gb_quantile_cuts(struct gb_job *j, uint32_t max_bin)
{
    struct want *w = calloc(Q_BATCH, sizeof *w);
    uint64_t *buf = malloc((size_t)Q_BATCH * Q_WANT * 256 * sizeof *buf);
    int status = GB_EXIT_RALLY, rc;
    if (w == NULL || buf == NULL)
        goto oom;
    for (uint32_t f = 0; f < Q_BATCH; f++)
        for (int r = 0; r < 3; r++)
            if ((w[f].child[r] = malloc((size_t)Q_WANT * 256 * sizeof *w[f].child[r])) == NULL)
                goto oom;
    for (uint32_t f0 = 0; f0 < j->d; f0 += Q_BATCH) {
        uint32_t nf = j->d - f0 < Q_BATCH ? j->d - f0 : Q_BATCH;
        for (uint32_t f = 0; f < nf; f++) {
            w[f].nodes = 1;
            w[f].n = 0;
        }
        for (int r = 0; r < 4; r++) {
            size_t len = 0;
            for (uint32_t f = 0; f < nf; f++) {
                w[f].count = buf + len;
                len += (size_t)w[f].nodes * 256;
                if (r < 3)
                    memset(w[f].child[r], 0xff, (size_t)w[f].nodes * 256 * sizeof(int16_t));
            }
            struct count_arg c = {j, w, f0, nf, r, buf, len};
            if (len > 0 && (rc = rally_allreduce(j->r, buf, len, RALLY_UINT64, RALLY_SUM,
                                                 count_round, &c)) != RALLY_OK) {
                status = gb_fail(j, "a quantile allreduce", rc);
                goto out;
            }
            for (uint32_t f = 0; f < nf; f++) {
                if (r == 0) {
                    uint64_t W = 0;
                    for (int b = 0; b < 256; b++)
                        W += w[f].count[b];
                    want_ranks(&w[f], W, max_bin);
                }
                w[f].nodes = w[f].n > 0 ? descend(&w[f], r) : 0;
            }
        }
        for (uint32_t f = 0; f < nf; f++)
            cuts_of(&w[f], max_bin, j->cuts + (size_t)(f0 + f) * max_bin, &j->nbin[f0 + f]);
    }
    status = GB_EXIT_OK;
    goto out;
oom:
    status = gb_oom();
out:
    if (w != NULL)
        for (uint32_t f = 0; f < Q_BATCH; f++)
            for (int r = 0; r < 3; r++)
                free(w[f].child[r]);
    free(w);
    free(buf);
    return status;
}
