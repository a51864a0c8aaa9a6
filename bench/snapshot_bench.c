/*
 * snapshot_bench.c — what a durable snapshot costs a job: the time each
 * rally_checkpoint takes (the stall), per iteration, with or without
 * snapshots, and the time rally_load_checkpoint takes (a resume).
 *
 *   rally-run -n N snapshot_bench MIB ITERS COMPUTE_MS [rally_...]
 *
 * Every rank checkpoints the same MIB-MiB global model once per iteration,
 * after COMPUTE_MS of sleep standing in for work (so the background writer
 * has the core).  Rank 0 prints one line:
 *   bench: load_ms=X ckpt_ms_median=Y ckpt_ms_max=Z iter_ms_median=W version=V loop_ms=L
 * (L: the whole loop) then "result: model_digest=HEX" (the model's XXH3: the
 * same with and without snapshots, failures and resumes); after
 * rally_finalize every rank prints its own peak RSS and CPU time (all its
 * threads, getrusage):
 *   bench: rank=R maxrss_kib=K cpu_ms=C
 * bench/snapshot.sh runs it with and without snapshots.
 *
 *   snapshot_bench --write DIR MIB [REPS FIRST]
 *
 * times the writer alone (rally__snap_write_part: the durable write the
 * background thread runs, checksums included) for a MIB-MiB model into
 * DIR, REPS times (default 3) as versions FIRST, FIRST + 1, ... (default 1),
 * and prints the best: "write: ms=X".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "rally/rally.h"
#include "snapshot/snapshot.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int write_only(const char *dir, size_t n, int reps, int first)
{
    unsigned char *b = malloc(n ? n : 1);
    if (b == NULL)
        return 1;
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(i * 131 + 7);
    double best = 1e300;
    for (int k = 0; k < reps; k++) {
        struct rally__snap_target t = {dir, "w", "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0",
                                       (uint64_t)(first + k), 1, NULL};
        struct rally__err e = {0, ""};
        struct rally__snap_file f;
        double a = now_ms();
        if (rally__snap_write_part(&t, -1, b, n, &e, &f) != RALLY_OK) {
            fprintf(stderr, "snapshot_bench: %s\n", e.msg);
            free(b);
            return 1;
        }
        double d = now_ms() - a;
        best = d < best ? d : best;
    }
    printf("write: ms=%.1f\n", best);
    free(b);
    return 0;
}

int main(int argc, char **argv)
{
    if ((argc == 4 || argc == 6) && strcmp(argv[1], "--write") == 0)
        return write_only(argv[2], (size_t)atol(argv[3]) << 20, argc == 6 ? atoi(argv[4]) : 3,
                          argc == 6 ? atoi(argv[5]) : 1);
    rally_t *r;
    if (rally_init(&r, &argc, &argv) != RALLY_OK) {
        fprintf(stderr, "snapshot_bench: %s\n", rally_errmsg(r));
        rally_finalize(r);
        return 1;
    }
    if (argc != 4) {
        fprintf(stderr, "usage: snapshot_bench MIB ITERS COMPUTE_MS\n");
        rally_finalize(r);
        return 2;
    }
    size_t n = (size_t)atol(argv[1]) << 20;
    int iters = atoi(argv[2]), compute = atoi(argv[3]);
    unsigned char *model = malloc(n ? n : 1);
    double *ck = calloc((size_t)iters + 1, sizeof *ck), *it = calloc((size_t)iters + 1, sizeof *it);
    void *saved = NULL;
    uint64_t saved_n = 0, version = 0;
    int rc = RALLY_ENOMEM;
    if (model == NULL || ck == NULL || it == NULL)
        goto out;
    rally_set_app(r, "snapshot_bench", argv[1]);
    double t0 = now_ms();
    if ((rc = rally_load_checkpoint(r, &saved, &saved_n, NULL, NULL, &version)) != RALLY_OK)
        goto out;
    double load_ms = now_ms() - t0;
    if (version > 0 && saved_n == n)
        memcpy(model, saved, n);
    else
        for (size_t i = 0; i < n; i++)
            model[i] = (unsigned char)(i * 131 + 7);
    int k = 0;
    double l0 = now_ms();
    for (int v = (int)version; v < iters; v++, k++) {
        double a = now_ms();
        struct timespec s = {compute / 1000, (long)(compute % 1000) * 1000000L};
        nanosleep(&s, NULL);
        for (size_t i = 0; i < n; i += 4096) /* the model changes every iteration */
            model[i]++;
        double b = now_ms();
        if ((rc = rally_checkpoint(r, model, n, NULL, 0)) != RALLY_OK)
            goto out;
        double c = now_ms();
        ck[k] = c - b;
        it[k] = c - a;
    }
    double loop_ms = now_ms() - l0;
    if (rally_rank(r) == 0)
        printf("result: model_digest=%016llx\n", (unsigned long long)rally__snap_xxh3(model, n));
    if (rally_rank(r) == 0 && k == 0)
        printf("bench: load_ms=%.1f version=%" PRIu64 "\n", load_ms, version);
    if (rally_rank(r) == 0 && k > 0) {
        double maxck = 0;
        for (int i = 0; i < k; i++)
            maxck = ck[i] > maxck ? ck[i] : maxck;
        qsort(ck, (size_t)k, sizeof *ck, cmp);
        qsort(it, (size_t)k, sizeof *it, cmp);
        printf("bench: load_ms=%.1f ckpt_ms_median=%.1f ckpt_ms_max=%.1f iter_ms_median=%.1f "
               "version=%" PRIu64 " loop_ms=%.1f\n",
               load_ms, ck[k / 2], maxck, it[k / 2], rally_checkpoint_version(r), loop_ms);
    }
    rc = RALLY_OK;
out:
    if (rc != RALLY_OK)
        fprintf(stderr, "snapshot_bench: %s\n", rally_errmsg(r));
    rally_free(saved);
    free(model);
    free(ck);
    free(it);
    int rank = rally_rank(r);
    if (rally_finalize(r) != RALLY_OK && rc == RALLY_OK)
        rc = RALLY_EPEER;
    struct rusage u;
    if (rc == RALLY_OK && getrusage(RUSAGE_SELF, &u) == 0) /* finalize's waits included */
        printf("bench: rank=%d maxrss_kib=%ld cpu_ms=%.0f\n", rank, u.ru_maxrss,
               (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
                   (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3);
    return rc == RALLY_OK ? 0 : 1;
}
