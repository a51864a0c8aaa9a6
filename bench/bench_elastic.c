/*
 * bench_elastic.c — how long an elastic job stands still when its workers
 * change (docs/recovery.md, "Elastic jobs").
 *
 *   rally-run -n N --min-workers N-1 --max-restarts 0 bench_elastic MODEL_BYTES ITERS \
 *       rally_mock=1,K,0,0                            (a loss: rank 1 dies in version K)
 *   rally-run -n N --max-workers N+1 bench_elastic MODEL_BYTES ITERS grow=K
 *                                                    (rank 0 asks rally-run for one more)
 *
 * (linked with librally_mock).  Each iteration is a 1 MiB float allreduce
 * and a checkpoint of a MODEL_BYTES global model.  On RALLY_ERESIZED the
 * program loads again, as a trainer does after reading its new shard
 * (there is no shard here: what it would cost to read one comes on top).
 * Rank 0 keeps the wall time of each iteration; the change, the reload and
 * the iteration done again fall in the iterations from the one the change
 * came in (a loss: inside it; a worker taken in: at its checkpoint) to the
 * one the reload returned, so the stall is their time minus as many
 * medians of the others.  Rank 0 (it stays rank
 * 0) prints "ELASTIC <kind> <world before> <world after> <model_bytes>
 * <stall_s> <median_iteration_s>".
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "rally/rally.h"

int main(int argc, char **argv)
{
    rally_t *r;
    if (rally_init(&r, &argc, &argv) != RALLY_OK || argc < 3) {
        fprintf(stderr, "bench_elastic: %s\n", argc < 3 ? "usage" : rally_errmsg(r));
        return 1;
    }
    size_t model_nbytes = strtoull(argv[1], NULL, 10);
    int iters = atoi(argv[2]);
    int grow_at = argc > 3 && strncmp(argv[3], "grow=", 5) == 0 ? atoi(argv[3] + 5) : -1;
    unsigned char *model = malloc(model_nbytes ? model_nbytes : 1);
    float *v = calloc(1 << 18, sizeof *v);
    double *t = calloc((size_t)iters + 1, sizeof *t);
    if (model == NULL || v == NULL || t == NULL)
        return 1;
    memset(model, 7, model_nbytes);
    int world0 = rally_world_size(r), changed_at = -1, back_at = -1, rc = RALLY_OK, asked = 0;
    double last = bench_now_us();
    for (;;) {
        void *saved = NULL;
        uint64_t saved_n = 0, version = 0;
        rc = rally_load_checkpoint(r, &saved, &saved_n, NULL, NULL, &version);
        rally_free(saved);
        if (changed_at >= 0 && back_at < 0)
            back_at = (int)version; /* the iteration the reload is counted in */
        for (int it = (int)version; rc == RALLY_OK && it < iters; it++) {
            if (it == grow_at && rally_rank(r) == 0 && !asked && rally_attempt(r) == 0) {
                kill(getppid(), SIGUSR2); /* rally-run: one more worker */
                asked = 1;
            }
            rc = rally_allreduce(r, v, 1 << 18, RALLY_FLOAT, RALLY_SUM, NULL, NULL);
            if (rc == RALLY_OK)
                rc = rally_checkpoint(r, model, model_nbytes, NULL, 0);
            if (rc == RALLY_ERESIZED && changed_at < 0)
                changed_at = it;
            double now = bench_now_us();
            t[it] += (now - last) / 1e6; /* an iteration done twice counts both */
            last = now;
        }
        if (rc != RALLY_ERESIZED)
            break;
    }
    if (rc != RALLY_OK) {
        fprintf(stderr, "bench_elastic: rank %d: %s\n", rally_rank(r), rally_errmsg(r));
        rally_finalize(r);
        return 1;
    }
    if (rally_rank(r) == 0 && changed_at >= 0 && rally_attempt(r) == 0) {
        double *o = malloc((size_t)iters * sizeof *o), stall = 0;
        int n = 0, last_in = back_at > changed_at ? back_at : changed_at;
        for (int i = 1; i < iters; i++) /* not the first: it holds the start */
            if (i < changed_at || i > last_in)
                o[n++] = t[i];
        qsort(o, (size_t)n, sizeof *o, bench_cmp_double);
        double med = n ? o[n / 2] : 0;
        for (int i = changed_at; i <= last_in; i++)
            stall += t[i] - med;
        printf("ELASTIC %s %d %d %zu %.4f %.4f\n", grow_at >= 0 ? "grow" : "shrink", world0,
               rally_world_size(r), model_nbytes, stall, med);
        free(o);
    }
    free(t);
    free(v);
    free(model);
    return rally_finalize(r) == RALLY_OK ? 0 : 1;
}
