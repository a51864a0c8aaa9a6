/*
 * gbdt_cuts.c — rally-gbdt's cut points (examples/gbdt/sketch.c and, with
 * --reproducible, quantile.c) checked against the whole data on rank 0,
 * for tests/gbdt.cmake:
 *
 *   rally-run -n N gbdt_cuts ROWS MAX_BIN
 *
 * Row i of ROWS, on rank i * N / ROWS, has four features: f0 distinct
 * values (a hash), missing in every 7th row; f1 four values; f2 one
 * value; f3 many ties (0 in every other row, so that several quantiles
 * fall on it, else i % 97 squared).  Each rank computes the cuts from
 * its shard as rally-gbdt does (gb_sketch), then rank 0 checks them with
 * every value in hand:
 *
 *   sketch      increasing; the last a sentinel above the largest value;
 *               a feature of at most MAX_BIN distinct values has one bin
 *               per value (its cuts are its values but the smallest);
 *               f0's cut b has a rank within sketch.c's bound (ROWS /
 *               (16 MAX_BIN) + N) of b ROWS' / MAX_BIN (ROWS' the values
 *               present), and there are MAX_BIN bins; when every shard
 *               has at most 16 MAX_BIN values (kept whole), exactly
 *               ceil(b ROWS' / MAX_BIN) values are below it
 *   exact       --reproducible's cuts are v_(floor(b W / MAX_BIN)) of the
 *               sorted present values, each kept above the minimum and the
 *               cut before, then the sentinel: bit for bit
 *   bins        every row's bin is the first b with v < cut[b], MAX_BIN
 *               when missing
 *
 * It prints "gbdt_cuts: ok" on rank 0, or what failed, and exits 1.
 */
#include <stdlib.h>
#include <string.h>

#include "gbdt.h"

#define D 4

static uint64_t mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ULL;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dULL;
    return x ^ (x >> 33);
}

static float value(uint64_t i, uint32_t f)
{
    switch (f) {
    case 0:
        return i % 7 == 3 ? NAN : (float)((double)(mix(i) >> 11) / 9007199254740992.0 * 200 - 100);
    case 1:
        return (float)(i % 4) * 2.5f;
    case 2:
        return 1.0f;
    default:
        return i % 2 ? (float)((i % 97) * (i % 97)) : 0.0f;
    }
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static int bad;

static void check(int ok, const char *what, uint32_t f, long b)
{
    if (!ok && bad++ < 10)
        fprintf(stderr, "gbdt_cuts: feature %u, cut %ld: %s\n", f, b, what);
}

/* The sorted present values of feature f over every row; their count. */
static uint64_t column(uint64_t rows, uint32_t f, float *col)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < rows; i++)
        if (!isnan(value(i, f)))
            col[n++] = value(i, f);
    qsort(col, n, sizeof *col, cmp_float);
    return n;
}

/* Rank 0: the sketch's cuts of every feature against the whole data. */
static void check_sketch(const struct gb_job *j, uint64_t rows, uint32_t max_bin, float *col)
{
    for (uint32_t f = 0; f < D; f++) {
        const float *c = j->cuts + (size_t)f * max_bin;
        uint32_t nb = j->nbin[f];
        uint64_t n = column(rows, f, col), k = 0;
        for (uint64_t i = 0; i < n; i++)
            k += i == 0 || col[i] != col[i - 1];
        check(nb >= 1 && nb <= max_bin, "too many or no bins", f, nb);
        check(c[nb - 1] > col[n - 1], "the last cut is not above the largest value", f, nb - 1);
        for (uint32_t b = 1; b < nb; b++)
            check(c[b] > c[b - 1], "cuts not increasing", f, b);
        if (k <= max_bin) { /* one bin per distinct value */
            check(nb == k, "not one bin per distinct value", f, nb);
            for (uint64_t i = 1, b = 0; i < n; i++)
                if (col[i] != col[i - 1]) {
                    check(b < nb && c[b] == col[i], "not the next distinct value", f, (long)b);
                    b++;
                }
        } else if (f == 0) { /* distinct values: every cut near its quantile */
            check(nb == max_bin, "distinct values but fewer bins", f, nb);
            double slack = (double)rows / (GB_SKETCH_PER_BIN * max_bin) + j->world;
            int whole = 1; /* every shard's values summarised one by one */
            for (int r = 0; r < j->world; r++) {
                uint64_t m = 0;
                for (uint64_t i = rows * (uint64_t)r / (uint64_t)j->world;
                     i < rows * (uint64_t)(r + 1) / (uint64_t)j->world; i++)
                    m += !isnan(value(i, f));
                whole &= m <= GB_SKETCH_PER_BIN * max_bin;
            }
            for (uint32_t b = 0; b + 1 < nb; b++) {
                uint64_t below = 0;
                while (below < n && col[below] < c[b])
                    below++;
                double want = (double)(b + 1) * (double)n / max_bin;
                check(fabs((double)below - want) <= slack, "rank beyond the sketch's bound", f, b);
                check(!whole || below == ((uint64_t)(b + 1) * n + max_bin - 1) / max_bin,
                      "not the exact quantile of values kept whole", f, b);
            }
        }
    }
}

/* Rank 0: --reproducible's cuts, exactly. */
static void check_exact(const struct gb_job *j, uint64_t rows, uint32_t max_bin, float *col)
{
    for (uint32_t f = 0; f < D; f++) {
        const float *c = j->cuts + (size_t)f * max_bin;
        uint64_t n = column(rows, f, col);
        float want[GB_MAX_BIN + 1];
        uint32_t nw = 0;
        for (uint32_t b = 1; b < max_bin; b++) {
            float v = col[(uint64_t)b * n / max_bin];
            if (v > col[0] && (nw == 0 || v > want[nw - 1]))
                want[nw++] = v;
        }
        want[nw++] = gb_above(col[n - 1]);
        check(j->nbin[f] == nw, "another number of exact cuts", f, j->nbin[f]);
        for (uint32_t b = 0; b < nw && b < j->nbin[f]; b++)
            check(memcmp(&c[b], &want[b], sizeof c[b]) == 0, "not the exact quantile", f, b);
    }
}

/* Every rank: its rows' bins against the cuts. */
static void check_bins(const struct gb_job *j, uint64_t lo, uint32_t max_bin)
{
    for (uint64_t i = 0; i < j->rows; i++)
        for (uint32_t f = 0; f < D; f++) {
            float v = value(lo + i, f);
            const float *c = j->cuts + (size_t)f * max_bin;
            uint32_t b = 0;
            while (!isnan(v) && !(v < c[b]))
                b++;
            uint8_t want = isnan(v) ? (uint8_t)max_bin : (uint8_t)b;
            check(j->bins[i * D + f] == want && j->cols[(size_t)f * j->rows + i] == want,
                  "a row in the wrong bin", f, (long)(lo + i));
        }
}

int main(int argc, char **argv)
{
    rally_t *r;
    if (rally_init(&r, &argc, &argv) != RALLY_OK || argc < 3) {
        fprintf(stderr, "usage: gbdt_cuts ROWS MAX_BIN\n");
        return 1;
    }
    uint64_t rows = strtoull(argv[1], NULL, 10);
    uint32_t max_bin = (uint32_t)strtoul(argv[2], NULL, 10);
    float *col = malloc(rows * sizeof *col);
    for (int reproducible = 0; reproducible <= 1; reproducible++) {
        struct gb_job j = {.r = r, .rank = rally_rank(r), .world = rally_world_size(r), .d = D};
        uint64_t lo = rows * (uint64_t)j.rank / (uint64_t)j.world;
        j.rows = rows * (uint64_t)(j.rank + 1) / (uint64_t)j.world - lo;
        j.reproducible = reproducible;
        j.x = malloc((j.rows * D + 1) * sizeof *j.x);
        for (uint64_t i = 0; i < j.rows; i++)
            for (uint32_t f = 0; f < D; f++)
                j.x[i * D + f] = value(lo + i, f);
        if (col == NULL || j.x == NULL || gb_sketch(&j, max_bin) != GB_EXIT_OK)
            return 1;
        if (j.rank == 0)
            (reproducible ? check_exact : check_sketch)(&j, rows, max_bin, col);
        check_bins(&j, lo, max_bin);
        free(j.x);
        free(j.nbin);
        free(j.cuts);
        free(j.bins);
        free(j.cols);
    }
    free(col);
    uint64_t nbad = (uint64_t)bad;
    if (rally_allreduce(r, &nbad, 1, RALLY_UINT64, RALLY_SUM, NULL, NULL) != RALLY_OK)
        return 1;
    if (rally_rank(r) == 0 && nbad == 0)
        printf("gbdt_cuts: ok\n");
    rally_finalize(r);
    return nbad == 0 ? 0 : 1;
}
