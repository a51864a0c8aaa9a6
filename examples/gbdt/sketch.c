/*
 * sketch.c — the distributed quantile sketch: every feature's cut points,
 * the same on every rank, from one allgather of per-shard summaries (or,
 * --reproducible, quantile.c's exact ones); then each row's bins (row by
 * row, and feature by feature).
 *
 * Each rank sorts its present values of feature f (n of them) and keeps
 * S = GB_SKETCH_PER_BIN * max_bin of them: entry s (1..S) is the value at
 * sorted index e_s = ceil(s n / S) - 1 with weight e_s - e_(s-1), the number
 * of values it stands for (all of them <= it, none <= the entry before).
 * With n <= S every value is kept with weight 1 (exact).  The summaries are
 * allgathered (rank order) and every rank merges them identically: sort by
 * value, add up the weights of equal values, and cut at the weighted
 * quantiles b W / max_bin (b = 1 .. max_bin - 1): the cut is the smallest
 * summarised value with at least that much weight below it.
 *
 * Error bound: a summary moves each value up to its entry, past fewer than
 * ceil(n_r / S) others, so the rank of any value computed from the merged
 * summaries is off by less than sum_r ceil(n_r / S) <= N / S + W (N values
 * in all, W ranks): every cut's rank is within N / (16 max_bin) + W of its
 * target, a sixteenth of a bin.  A feature with at most max_bin distinct
 * values gets one bin per value (exact).  The last cut is a sentinel above
 * the largest value, so bin(v) = the first b with v < cut[b] always exists.
 */
#include <stdlib.h>
#include <string.h>

#include "gbdt.h"

struct entry {
    float v;
    uint32_t w;
};

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static int cmp_entry(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    return (x->v > y->v) - (x->v < y->v);
}

/* This rank's summary of every feature into sum[d][S] (weight 0 = unused). */
static int summarise(const struct gb_job *j, uint32_t S, struct entry *sum)
{
    float *col = malloc((j->rows + 1) * sizeof *col);
    if (col == NULL)
        return -1;
    for (uint32_t f = 0; f < j->d; f++) {
        uint64_t n = 0;
        for (uint64_t i = 0; i < j->rows; i++) {
            float v = j->x[i * j->d + f];
            if (!isnan(v))
                col[n++] = v;
        }
        qsort(col, n, sizeof *col, cmp_float);
        struct entry *e = sum + (size_t)f * S;
        memset(e, 0, S * sizeof *e);
        if (n <= S) {
            for (uint64_t i = 0; i < n; i++)
                e[i] = (struct entry){col[i], 1};
            continue;
        }
        int64_t prev = -1;
        for (uint32_t s = 1; s <= S; s++) {
            int64_t at = (int64_t)((s * n + S - 1) / S) - 1;
            e[s - 1] = (struct entry){col[at], (uint32_t)(at - prev)};
            prev = at;
        }
    }
    free(col);
    return 0;
}

float gb_above(float v)
{
    double s = (double)v + fabs((double)v) + 1.0;
    float f = (float)s;
    return (isinf(f) || !(f > v)) ? 3.4028234663852886e38f : f;
}

/* Feature f's cuts from every rank's summary (all[r][d][S]). */
static void merge(const struct entry *all, int world, uint32_t d, uint32_t S, uint32_t f,
                  uint32_t max_bin, struct entry *tmp, double *wsum, float *cuts, uint32_t *nbin)
{
    size_t n = 0;
    for (int r = 0; r < world; r++) {
        const struct entry *e = all + ((size_t)r * d + f) * S;
        for (uint32_t s = 0; s < S; s++)
            if (e[s].w > 0)
                tmp[n++] = e[s];
    }
    if (n == 0) { /* never present: one bin, every row missing */
        cuts[0] = 1.0f;
        *nbin = 1;
        return;
    }
    qsort(tmp, n, sizeof *tmp, cmp_entry);
    /* distinct values with their weights, in place; total weight W */
    size_t k = 0;
    double W = 0;
    for (size_t i = 0; i < n; i++) {
        if (k > 0 && tmp[k - 1].v == tmp[i].v) {
            wsum[k - 1] += tmp[i].w;
        } else {
            tmp[k] = tmp[i];
            wsum[k++] = tmp[i].w;
        }
        W += tmp[i].w;
    }
    uint32_t nc = 0;
    if (k <= max_bin) { /* one bin per distinct value */
        for (size_t i = 1; i < k; i++)
            cuts[nc++] = tmp[i].v;
    } else {
        double below = 0;
        size_t i = 0;
        for (uint32_t b = 1; b < max_bin; b++) {
            double t = (double)b * W / max_bin;
            while (i < k && below < t)
                below += wsum[i++];
            if (i >= k)
                break;
            if (nc == 0 || tmp[i].v > cuts[nc - 1])
                cuts[nc++] = tmp[i].v;
        }
    }
    cuts[nc++] = gb_above(tmp[k - 1].v);
    *nbin = nc;
}

/* The bin of v among cuts[0..n): the first b with v < cuts[b]. */
static uint8_t bin_of(const float *cuts, uint32_t n, float v)
{
    uint32_t lo = 0, hi = n - 1; /* v < cuts[n - 1] always (the sentinel) */
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (v < cuts[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return (uint8_t)lo;
}

/* Every feature's cuts from the per-shard summaries (one allgather). */
static int sketch_cuts(struct gb_job *j, uint32_t max_bin)
{
    uint32_t S = GB_SKETCH_PER_BIN * max_bin;
    size_t per = (size_t)j->d * S;
    struct entry *mine = malloc(per * sizeof *mine);
    struct entry *all = malloc(per * (size_t)j->world * sizeof *all);
    struct entry *tmp = malloc((size_t)S * (size_t)j->world * sizeof *tmp);
    double *wsum = malloc((size_t)S * (size_t)j->world * sizeof *wsum);
    int status = GB_EXIT_RALLY, rc;
    if (mine == NULL || all == NULL || tmp == NULL || wsum == NULL || summarise(j, S, mine) != 0) {
        status = gb_oom();
        goto out;
    }
    if ((rc = rally_allgather(j->r, mine, per * sizeof *mine, all)) != RALLY_OK) {
        status = gb_fail(j, "the sketch allgather", rc);
        goto out;
    }
    for (uint32_t f = 0; f < j->d; f++)
        merge(all, j->world, j->d, S, f, max_bin, tmp, wsum, j->cuts + (size_t)f * max_bin,
              &j->nbin[f]);
    status = GB_EXIT_OK;
out:
    free(mine);
    free(all);
    free(tmp);
    free(wsum);
    return status;
}

int gb_sketch(struct gb_job *j, uint32_t max_bin)
{
    j->nbin = malloc((size_t)j->d * sizeof *j->nbin);
    j->cuts = malloc((size_t)j->d * max_bin * sizeof *j->cuts);
    j->bins = malloc(j->rows * j->d + 1);
    j->cols = malloc(j->rows * j->d + 1);
    if (j->nbin == NULL || j->cuts == NULL || j->bins == NULL || j->cols == NULL)
        return gb_oom();
    int status = j->reproducible ? gb_quantile_cuts(j, max_bin) : sketch_cuts(j, max_bin);
    if (status != GB_EXIT_OK)
        return status;
    for (uint64_t i = 0; i < j->rows; i++)
        for (uint32_t f = 0; f < j->d; f++) {
            float v = j->x[i * j->d + f];
            uint8_t b =
                isnan(v) ? (uint8_t)max_bin : bin_of(j->cuts + (size_t)f * max_bin, j->nbin[f], v);
            j->bins[i * j->d + f] = b;
            j->cols[(size_t)f * j->rows + i] = b;
        }
    return GB_EXIT_OK;
}
