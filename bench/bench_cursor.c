/*
 * bench_cursor.c — what the data cursor costs a step (rally_cursor_next:
 * rank 1 of 4's share of a global batch) against a plain index slice, what
 * DistributedSampler does: a shuffled table of every id built once an
 * epoch, the share copied out of it.
 *
 *   bench_cursor [BATCH:REPS ...]     (default 64, 1024, 65536)
 *
 * One process, no job; 10,000,000 samples.  REPS interleaved reps of each
 * per batch (the cursor's step; the slice's copy from the table).  Prints
 * per batch the medians, and once what the table costs:
 *
 *   CURSOR <batch> <share> <cursor_ns> <slice_ns> <cursor/slice> <cursor ns an id>
 *   TABLE <count> <build_ms> <bytes>
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "rally/data.h"

#define COUNT 10000000u
#define WORLD 4
#define RANK 1

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double med(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp);
    return t[n / 2];
}

/* xorshift64*: the table's shuffle (any fixed generator does). */
static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1du;
}

int main(int argc, char **argv)
{
    static const char *const dflt[] = {"64:20001", "1024:4001", "65536:201"};
    int nspec = argc > 1 ? argc - 1 : (int)(sizeof dflt / sizeof dflt[0]);
    double t0 = bench_now_us();
    uint64_t *table = malloc(COUNT * sizeof *table), seed = 88172645463325252u;
    if (table == NULL)
        return 1;
    for (uint64_t i = 0; i < COUNT; i++)
        table[i] = i;
    for (uint64_t i = COUNT - 1; i > 0; i--) { /* Fisher-Yates */
        uint64_t j = next_rand(&seed) % (i + 1), t = table[i];
        table[i] = table[j];
        table[j] = t;
    }
    double build_ms = (bench_now_us() - t0) / 1e3;
    volatile uint64_t sink = 0;
    for (int s = 0; s < nspec; s++) {
        unsigned long batch = 0;
        int reps = 0;
        if (sscanf(argc > 1 ? argv[s + 1] : dflt[s], "%lu:%d", &batch, &reps) != 2 || batch == 0 ||
            reps < 1)
            return 2;
        size_t cap = batch / WORLD + 1, n = 0;
        uint64_t *ids = malloc(cap * sizeof *ids);
        double *tc = malloc((size_t)reps * sizeof *tc), *ts = malloc((size_t)reps * sizeof *ts);
        rally_cursor_t *c;
        if (ids == NULL || tc == NULL || ts == NULL || rally_cursor_new(COUNT, batch, 1, &c) != 0)
            return 1;
        uint64_t pos = 0, lo = batch * RANK / WORLD, hi = batch * (RANK + 1) / WORLD;
        for (int r = 0; r < reps; r++) {
            for (int k = 0; k < 2; k++) { /* A B B A ... */
                double a = bench_now_us();
                if ((k ^ (r & 1)) == 0) {
                    rally_cursor_next(c, RANK, WORLD, ids, cap, &n);
                    tc[r] = bench_now_us() - a;
                } else {
                    if (pos + batch > COUNT)
                        pos = 0;
                    memcpy(ids, table + pos + lo, (hi - lo) * sizeof *ids);
                    pos += batch;
                    ts[r] = bench_now_us() - a;
                }
                sink += ids[0];
            }
        }
        double mc = med(tc, reps) * 1e3, msl = med(ts, reps) * 1e3;
        printf("CURSOR %lu %lu %.0f %.0f %.1f %.1f\n", batch, (unsigned long)(hi - lo), mc, msl,
               mc / msl, mc / (double)(hi - lo));
        rally_cursor_free(c);
        free(ids);
        free(tc);
        free(ts);
    }
    printf("TABLE %u %.0f %zu\n", COUNT, build_ms, COUNT * sizeof *table);
    free(table);
    return sink == 42 ? 3 : 0;
}
