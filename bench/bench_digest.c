/*
 * bench_digest.c — what the checkpoint's model digest costs against the
 * copy the checkpoint makes anyway (issue 10, item 7).
 *
 *   bench_digest [BYTES:REPS ...]     (default 4K..256M)
 *
 * One process, no job.  For each size, REPS interleaved reps of: the
 * store's copy as it is made (malloc + memcpy of a fresh buffer, then free:
 * rally__robust_dup), a copy into a buffer reused between reps (memcpy
 * alone), and rally_digest64 (XXH3-64) over the caller's bytes, which the
 * acknowledgement adds.  Prints per size the medians:
 *
 *   DIGEST <bytes> <dup_us> <memcpy_us> <digest_us> <digest/dup> <GB/s of the digest>
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "rally/rally.h"

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

int main(int argc, char **argv)
{
    static const char *const dflt[] = {"4096:2001",   "65536:1001",  "1048576:301",
                                       "16777216:41", "67108864:15", "268435456:7"};
    int nspec = argc > 1 ? argc - 1 : (int)(sizeof dflt / sizeof dflt[0]);
    volatile uint64_t sink = 0;
    for (int s = 0; s < nspec; s++) {
        size_t n;
        int reps;
        if (sscanf(argc > 1 ? argv[s + 1] : dflt[s], "%zu:%d", &n, &reps) != 2 || reps < 1) {
            fprintf(stderr, "bench_digest: say BYTES:REPS\n");
            return 1;
        }
        unsigned char *src = malloc(n), *reuse = malloc(n);
        double *td = malloc(3 * (size_t)reps * sizeof *td), *tm = td + reps, *th = tm + reps;
        if (src == NULL || reuse == NULL || td == NULL) {
            fprintf(stderr, "bench_digest: out of memory for %zu bytes\n", n);
            return 1;
        }
        for (size_t i = 0; i < n; i++)
            src[i] = (unsigned char)(i * 2654435761u >> 13);
        memcpy(reuse, src, n);
        for (int i = -1; i < reps; i++) { /* rep -1 warms up */
            double t0 = bench_now_us();
            unsigned char *d = malloc(n);
            memcpy(d, src, n);
            sink += d[n - 1];
            free(d);
            double t1 = bench_now_us();
            memcpy(reuse, src, n);
            sink += reuse[n / 2];
            double t2 = bench_now_us();
            sink += rally_digest64(src, n);
            double t3 = bench_now_us();
            if (i >= 0) {
                td[i] = t1 - t0;
                tm[i] = t2 - t1;
                th[i] = t3 - t2;
            }
        }
        double dup = med(td, reps), cpy = med(tm, reps), dig = med(th, reps);
        printf("DIGEST %zu %.2f %.2f %.2f %.2f %.1f\n", n, dup, cpy, dig, dig / dup,
               dig > 0 ? (double)n / dig / 1e3 : 0.0);
        fflush(stdout);
        free(src);
        free(reuse);
        free(td);
    }
    return sink == 42 ? 2 : 0;
}
