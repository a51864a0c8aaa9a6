/*
 * exact.c — exact sums in a job: the same bits at any world size.
 *
 *   exact [iters=T] [rows=R] [cols=C] [plain=B] [lag=MS]
 *
 * Each iteration t (a checkpoint version) sums R rows of C adversarial
 * values (heavy cancellation, 1e308 beside 1e-300, subnormals, any finite
 * double, infinities and NaN in a few columns), each rank adding the rows
 * of its contiguous block into a rally_xsum and rally_allreduce_xsum
 * combining them, as double and as float.  Every rank also sums all R rows
 * itself and checks the collective's bits against its own: a wrong bit
 * prints EXACT_BAD and fails.  The results chain into the model digest,
 * which so depends on the rows alone: the same for every N, algorithm,
 * transport and backend, with or without failures, across a shrink
 * (RALLY_ERESIZED: the block is taken again for the new N).
 *
 * Then RALLY_SUM_EXACT on B doubles and B/2 floats, one value an element
 * per rank: checked against this rank's exact sum of every rank's values
 * (they depend on N, so they stay out of the digest).
 *
 * lag=MS sleeps that long in each iteration (for a kill -9 from outside).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model.h"
#include "rally/rally.h"

static rally_t *R;

#define CALL(x)                                                                                   \
    do {                                                                                          \
        int rc_ = (x);                                                                            \
        if (rc_ == RALLY_ERESIZED)                                                                \
            goto resized;                                                                         \
        if (rc_ != RALLY_OK) {                                                                    \
            fprintf(stderr, "exact: %s failed: %s (%s)\n", #x, rally_errmsg(R),                   \
                    rally_strstatus(rc_));                                                        \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

/* Value (t, i, j): an adversarial kind by column. */
static double value(uint64_t t, uint64_t i, uint64_t j)
{
    uint64_t x = model_mix(t << 44 ^ i << 20 ^ j), y = model_mix(x);
    double u = (double)(x >> 11) * 0x1p-53, s = (y & 1) ? -1.0 : 1.0;
    switch (j % 6) {
    case 0:
        return s * u * 100;
    case 1:
        return (y & 2) ? s * 1e308 * u : s * 1e-300 * u;
    case 2:
        return s * (double)(y >> 12) * 0x1p-1074;
    case 3: {
        double d;
        memcpy(&d, &y, sizeof d);
        return isfinite(d) ? d : s;
    }
    case 4: /* cancels with the next row's value, up to a tiny rest */
        if (i % 2)
            return -value(t, i - 1, j) + ((y % 8 == 0) ? ldexp(1.0, -(int)(y % 900)) : 0.0);
        return s * ldexp(u + 1, (int)(y % 200) - 100);
    default: /* a few specials */
        if (j == 5 && i == 3)
            return INFINITY;
        if (j == 11 && i == 7)
            return NAN;
        if (j == 17 && (i == 1 || i == 4))
            return i == 1 ? INFINITY : -INFINITY;
        if (j == 23)
            return -0.0;
        return s * u;
    }
}

struct rows {
    rally_xsum_t *acc;
    uint64_t t, lo, hi, cols;
};

static void fill(void *arg)
{
    struct rows *w = arg;
    double row[4096];
    rally_xsum_clear(w->acc);
    for (uint64_t i = w->lo; i < w->hi; i++) {
        for (uint64_t j = 0; j < w->cols; j++)
            row[j] = value(w->t, i, j);
        rally_xsum_add(w->acc, 0, row, w->cols);
    }
}

static void check_bits(const void *got, const void *want, size_t n, const char *what,
                       uint64_t t)
{
    if (memcmp(got, want, n) != 0) {
        printf("EXACT_BAD rank %d iteration %" PRIu64 ": %s differs from this rank's own sum\n",
               rally_rank(R), t, what);
        exit(1);
    }
}

static double plain_value(uint64_t t, int rank, uint64_t j)
{
    return value(t ^ 0x5a5a, (uint64_t)rank, j);
}

int main(int argc, char **argv)
{
    if (rally_init(&R, &argc, &argv) != RALLY_OK) {
        fprintf(stderr, "exact: %s\n", rally_errmsg(R));
        return 1;
    }
    uint64_t iters = 6, nrows = 300, cols = 48, plain = 200;
    long lag = 0;
    for (int i = 1; i < argc; i++) {
        unsigned long long v;
        if (sscanf(argv[i], "iters=%llu", &v) == 1)
            iters = v;
        else if (sscanf(argv[i], "rows=%llu", &v) == 1)
            nrows = v;
        else if (sscanf(argv[i], "cols=%llu", &v) == 1 && v <= 4096)
            cols = v;
        else if (sscanf(argv[i], "plain=%llu", &v) == 1)
            plain = v;
        else if (sscanf(argv[i], "lag=%llu", &v) == 1)
            lag = (long)v;
        else {
            fprintf(stderr, "exact: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    printf("exact rank %d pid %ld\n", rally_rank(R), (long)getpid());
    fflush(stdout);
    rally_xsum_t *acc = rally_xsum_new(cols), *all = rally_xsum_new(cols);
    double *res = malloc(cols * sizeof *res), *want = malloc(cols * sizeof *want);
    float *resf = malloc(cols * sizeof *resf), *wantf = malloc(cols * sizeof *wantf);
    double *pd = malloc(plain * sizeof *pd), *pw = malloc(plain * sizeof *pw);
    float *pf = malloc(plain * sizeof *pf), *pfw = malloc(plain * sizeof *pfw);
    rally_xsum_t *pacc = rally_xsum_new(plain);
    if (!acc || !all || !res || !want || !resf || !wantf || !pd || !pw || !pf || !pfw || !pacc)
        return 1;
    uint64_t h = 0, version;
    int resizes = 0;
    if (0) {
    resized:
        resizes++;
    }
    {
        void *g = NULL;
        uint64_t gn = 0;
        CALL(rally_load_checkpoint(R, &g, &gn, NULL, NULL, &version));
        h = 0;
        if (version > 0 && gn == sizeof h)
            memcpy(&h, g, sizeof h);
        rally_free(g);
    }
    int N = rally_world_size(R), rank = rally_rank(R);
    for (uint64_t t = version; t < iters; t++) {
        struct rows w = {acc, t, nrows * (uint64_t)rank / (uint64_t)N,
                         nrows * (uint64_t)(rank + 1) / (uint64_t)N, cols};
        CALL(rally_allreduce_xsum(R, acc, RALLY_DOUBLE, res, fill, &w));
        CALL(rally_allreduce_xsum(R, acc, RALLY_FLOAT, resf, fill, &w));
        struct rows every = {all, t, 0, nrows, cols};
        fill(&every);
        rally_xsum_round(all, RALLY_DOUBLE, want);
        rally_xsum_round(all, RALLY_FLOAT, wantf);
        check_bits(res, want, cols * sizeof *res, "the double sum of the rows", t);
        check_bits(resf, wantf, cols * sizeof *resf, "the float sum of the rows", t);

        /* One value a rank: RALLY_SUM_EXACT itself. */
        rally_xsum_clear(pacc);
        for (int r = 0; r < N; r++)
            for (uint64_t j = 0; j < plain; j++) {
                double v = plain_value(t, r, j);
                if (r == rank) {
                    pd[j] = v;
                    pf[j] = (float)v;
                }
                rally_xsum_add(pacc, j, &v, 1);
            }
        rally_xsum_round(pacc, RALLY_DOUBLE, pw);
        CALL(rally_allreduce(R, pd, plain, RALLY_DOUBLE, RALLY_SUM_EXACT, NULL, NULL));
        check_bits(pd, pw, plain * sizeof *pd, "RALLY_SUM_EXACT of doubles", t);
        rally_xsum_clear(pacc);
        for (int r = 0; r < N; r++)
            for (uint64_t j = 0; j < plain / 2; j++) {
                double v = (float)plain_value(t, r, j);
                rally_xsum_add(pacc, j, &v, 1);
            }
        rally_xsum_round(pacc, RALLY_FLOAT, pfw);
        CALL(rally_allreduce(R, pf, plain / 2, RALLY_FLOAT, RALLY_SUM_EXACT, NULL, NULL));
        check_bits(pf, pfw, plain / 2 * sizeof *pf, "RALLY_SUM_EXACT of floats", t);

        uint64_t parts[3] = {h, rally_digest64(res, cols * sizeof *res),
                             rally_digest64(resf, cols * sizeof *resf)};
        h = rally_digest64(parts, sizeof parts);
        if (lag > 0) {
            struct timespec ts = {lag / 1000, (lag % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        CALL(rally_checkpoint(R, &h, sizeof h, NULL, 0));
        if (rank == 0) {
            printf("iteration %" PRIu64 " done\n", t);
            fflush(stdout);
        }
    }
    if (rank == 0)
        printf("result: model_digest=%016" PRIx64 " workers=%d resizes=%d\n", h, N, resizes);
    rally_xsum_free(acc);
    rally_xsum_free(all);
    rally_xsum_free(pacc);
    free(res);
    free(want);
    free(resf);
    free(wantf);
    free(pd);
    free(pw);
    free(pf);
    free(pfw);
    return rally_finalize(R) == RALLY_OK ? 0 : 1;
}
