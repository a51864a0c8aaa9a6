/*
 * bench_exact.c — what an exact sum costs: RALLY_SUM_EXACT against
 * RALLY_SUM of the same doubles, interleaved rep by rep (which goes first
 * alternating: A B B A), and an exact accumulator's additions against a
 * plain loop of += on the same values.
 *
 *   rally-run -n N bench_exact BYTES:REPS [BYTES:REPS ...]
 *
 * The doubles are normal deviates scaled by 2^k, k in [-20, 20], as
 * gradients are: their exponents differ, so the exact sum's digits span
 * more than one double.  Each rep: a barrier, the timed call, and an
 * untimed rally_checkpoint (the result cache dropped, as an iterative job
 * would).  Per-rep times are MAX-reduced over ranks; rank 0 prints
 *   "EXACT <bytes> <reps> <sum_us> <exact_us> <ratio> <ratio_lo> <ratio_hi> <wire_bytes>"
 * with medians of the times, the median, minimum and maximum of the
 * per-rep ratios exact / sum, and the bytes an exact rep sends into each
 * allreduce (the pre-pass's and the digits': a plain sum sends BYTES).
 * Then, on rank 0 alone,
 *   "XSUM_ADD <values> <plain_ns> <exact_ns> <ratio>"   rows into 64 elements
 *   "XSUM_BINS <values> <plain_ns> <exact_ns> <ratio>"  values into 4096 bins
 * in nanoseconds a value (medians of 5 interleaved reps).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "rally/rally.h"
#include "util/xsum.h"

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static double gauss(uint64_t i)
{
    double u = ((double)(mix(i) >> 11) + 0.5) * 0x1p-53, v = (double)(mix(~i) >> 11) * 0x1p-53;
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v) * ldexp(1.0, (int)(mix(i * 3) % 41) - 20);
}

static double median(double *p, int n)
{
    qsort(p, (size_t)n, sizeof *p, bench_cmp_double);
    return p[n / 2];
}

static volatile double sink;

static void local(void)
{
    enum { ROWS = 1 << 16, COLS = 64, BINS = 4096, NB = 1 << 22, REPS = 5 };
    double *v = malloc((size_t)ROWS * COLS * sizeof *v), *sum = calloc(BINS, sizeof *sum);
    uint64_t *bin = malloc(NB * sizeof *bin);
    rally_xsum_t *s = rally_xsum_new(BINS);
    for (size_t i = 0; i < (size_t)ROWS * COLS; i++)
        v[i] = gauss(i);
    for (size_t i = 0; i < NB; i++)
        bin[i] = mix(i ^ 77) % BINS;
    double ta[2][REPS], tb[2][REPS];
    for (int r = 0; r < REPS; r++)
        for (int k = 0; k < 2; k++) {
            int exact = (k + r) % 2;
            double t0 = bench_now_us();
            if (exact) {
                rally_xsum_clear(s);
                for (int i = 0; i < ROWS; i++)
                    rally_xsum_add(s, 0, v + (size_t)i * COLS, COLS);
            } else {
                memset(sum, 0, COLS * sizeof *sum);
                for (int i = 0; i < ROWS; i++)
                    for (int j = 0; j < COLS; j++)
                        sum[j] += v[(size_t)i * COLS + j];
                sink = sum[0];
            }
            ta[exact][r] = (bench_now_us() - t0) * 1e3 / ((double)ROWS * COLS);
            t0 = bench_now_us();
            if (exact) {
                rally_xsum_clear(s);
                rally_xsum_add_at(s, bin, v, NB);
            } else {
                memset(sum, 0, BINS * sizeof *sum);
                for (size_t i = 0; i < NB; i++)
                    sum[bin[i]] += v[i];
                sink = sum[1];
            }
            tb[exact][r] = (bench_now_us() - t0) * 1e3 / NB;
        }
    double pa = median(ta[0], REPS), ea = median(ta[1], REPS);
    double pb = median(tb[0], REPS), eb = median(tb[1], REPS);
    printf("XSUM_ADD %d %.3f %.3f %.2f\n", ROWS * COLS, pa, ea, ea / pa);
    printf("XSUM_BINS %d %.3f %.3f %.2f\n", NB, pb, eb, eb / pb);
    free(v);
    free(sum);
    free(bin);
    rally_xsum_free(s);
}

int main(int argc, char **argv)
{
    rally_t *r;
    if (rally_init(&r, &argc, &argv) != RALLY_OK) {
        fprintf(stderr, "bench_exact: %s\n", rally_errmsg(r));
        return 1;
    }
    bench_spec spec[BENCH_MAX_SPECS];
    int nspec = bench_parse(argc, argv, 1, spec, BENCH_MAX_SPECS);
    if (nspec <= 0) {
        fprintf(stderr, "usage: bench_exact BYTES:REPS ...\n");
        return 2;
    }
    int rank = rally_rank(r), world = rally_world_size(r);
    for (int s = 0; s < nspec; s++) {
        size_t count = spec[s].bytes / sizeof(double);
        int reps = spec[s].reps;
        double *in = malloc((count ? count : 1) * sizeof *in);
        double *buf = malloc((count ? count : 1) * sizeof *buf);
        double *t = calloc(2 * (size_t)reps, sizeof *t), token = 0;
        int16_t *mark = malloc((count ? count : 1) * 2 * sizeof *mark);
        for (size_t i = 0; i < count; i++)
            in[i] = gauss(i * 131 + (uint64_t)rank);
        /* The wire's size, from the pre-pass the exact sum will make. */
        for (size_t i = 0; i < count; i++)
            rally__xs_mark_double(in[i], mark + 2 * i);
        rally_allreduce(r, mark, 2 * count, RALLY_INT16, RALLY_MAX, NULL, NULL);
        size_t digits = 0;
        for (size_t i = 0; i < count; i++)
            digits += rally__xs_wire_limbs(mark + 2 * i, rally__xs_digit_bits(world));
        for (int i = -2; i < reps; i++)
            for (int k = 0; k < 2; k++) {
                int exact = (i & 1) ? 1 - k : k; /* A B, B A, ... */
                memcpy(buf, in, count * sizeof *buf);
                rally_allreduce(r, &token, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
                double t0 = bench_now_us();
                int rc = rally_allreduce(r, buf, count, RALLY_DOUBLE,
                                         exact ? RALLY_SUM_EXACT : RALLY_SUM, NULL, NULL);
                double t1 = bench_now_us();
                if (rc != RALLY_OK || rally_checkpoint(r, NULL, 0, NULL, 0) != RALLY_OK) {
                    fprintf(stderr, "bench_exact: %s\n", rally_errmsg(r));
                    return 1;
                }
                if (i >= 0)
                    t[2 * i + exact] = t1 - t0;
            }
        rally_allreduce(r, t, 2 * (size_t)reps, RALLY_DOUBLE, RALLY_MAX, NULL, NULL);
        double *p = malloc((size_t)reps * sizeof *p), med[2], ratio[3];
        for (int v = 0; v < 2; v++) {
            for (int i = 0; i < reps; i++)
                p[i] = t[2 * i + v];
            med[v] = median(p, reps);
        }
        for (int i = 0; i < reps; i++)
            p[i] = t[2 * i + 1] / t[2 * i];
        ratio[0] = median(p, reps);
        ratio[1] = p[0];
        ratio[2] = p[reps - 1];
        if (rank == 0)
            printf("EXACT %zu %d %.1f %.1f %.2f %.2f %.2f %zu\n", spec[s].bytes, reps, med[0],
                   med[1], ratio[0], ratio[1], ratio[2], count * 4 + digits * 8);
        fflush(stdout);
        free(p);
        free(in);
        free(buf);
        free(t);
        free(mark);
    }
    if (rank == 0)
        local();
    return rally_finalize(r) == RALLY_OK ? 0 : 1;
}
