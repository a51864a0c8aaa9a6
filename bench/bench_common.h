/*
 * bench_common.h — the measurement method shared by every allreduce benchmark
 * in bench/ (rally, MPI, Gloo), so that all peers are timed the same way.
 *
 * Command line of every benchmark program:   prog BYTES:REPS [BYTES:REPS ...]
 * For each size: one correctness check, warm-up reps (bench_warmup()), then
 * REPS timed reps.  Each rep is: a 1-float allreduce (a barrier), then
 * bench_batch(BYTES) back-to-back allreduces of BYTES (float32 sum, in
 * place), timed together; the rep's time is their time over their number,
 * per call.  Per-rep times are reduced with MAX over ranks (the slowest rank
 * defines the rep), and rank 0 prints, per size, one machine-readable line:
 *
 *   RESULT <bytes> <reps> <median_us> <min_us> <max_us> [<faults_per_rep>]
 *
 * faults_per_rep (rally and MPI; bench_minflt()) is the most minor page
 * faults any rank took over the timed reps, divided by the calls: a call that
 * touches fresh pages (a temporary buffer mmap'ed afresh) shows about
 * bytes/page-size of them, a call on reused memory about none.
 *
 * Header-only, C and C++.
 */
#ifndef RALLY_BENCH_COMMON_H
#define RALLY_BENCH_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef struct {
    size_t bytes;
    int reps;
} bench_spec;

static inline double bench_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Calls per timed rep.  One small call alone measures mostly the barrier's
 * skew (ranks leave it up to a hop apart) and the clock; back-to-back calls
 * are what an iterative job makes and what outside harnesses time (OSU's
 * osu_allreduce: a loop of calls between two clock readings), so sizes up
 * to 4 KiB time 50 in a row. */
static inline int bench_batch(size_t bytes)
{
    return bytes <= 4096 ? 50 : 1;
}

/* Warm-up reps before the timed ones: a fifth of them, at least one. */
static inline int bench_warmup(int reps)
{
    return reps >= 10 ? reps / 5 : 1;
}

/* Parses argv[first..argc) as BYTES:REPS; returns the count or -1. */
static inline int bench_parse(int argc, char **argv, int first, bench_spec *out, int cap)
{
    int n = 0;
    for (int i = first; i < argc; i++) {
        char *end = NULL;
        unsigned long long b = strtoull(argv[i], &end, 10);
        if (!end || *end != ':' || n >= cap)
            return -1;
        long r = strtol(end + 1, &end, 10);
        if (*end != '\0' || b < 4 || b % 4 != 0 || r < 1)
            return -1;
        out[n].bytes = (size_t)b;
        out[n].reps = (int)r;
        n++;
    }
    return n;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Minor page faults this process has taken so far (first touches of pages). */
static inline double bench_minflt(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_minflt : 0.0;
}

/* Sorts t[0..n) and prints "<tag> <bytes> <reps> <median> <min> <max>", and
 * the faults per rep when faults >= 0. */
static inline void bench_report_as(const char *tag, size_t bytes, double *t, int n, double faults)
{
    qsort(t, (size_t)n, sizeof *t, bench_cmp_double);
    double med = (n % 2) ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    printf("%s %zu %d %.3f %.3f %.3f", tag, bytes, n, med, t[0], t[n - 1]);
    if (faults >= 0)
        printf(" %.1f", faults);
    printf("\n");
    fflush(stdout);
}

/* Sorts t[0..n) and prints the RESULT line. */
static inline void bench_report(size_t bytes, double *t, int n)
{
    bench_report_as("RESULT", bytes, t, n, -1);
}

/* Fills buf for the correctness check: element i of rank r is (r+1)+(i%7). */
static inline void bench_fill_check(float *buf, size_t count, int rank)
{
    for (size_t i = 0; i < count; i++)
        buf[i] = (float)(rank + 1) + (float)(i % 7);
}

/* After a sum over n ranks: n(n+1)/2 + n*(i%7), exact in float32.  Returns
 * the first wrong index or -1. */
static inline long bench_verify(const float *buf, size_t count, int n)
{
    for (size_t i = 0; i < count; i++) {
        float want = (float)(n * (n + 1) / 2) + (float)n * (float)(i % 7);
        if (buf[i] != want)
            return (long)i;
    }
    return -1;
}

#define BENCH_MAX_SPECS 64
#define BENCH_USAGE "usage: %s BYTES:REPS [BYTES:REPS ...]  (BYTES a multiple of 4)\n"

#endif
