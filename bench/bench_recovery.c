/*
 * bench_recovery.c — how long a job stands still when a worker dies.
 *
 *   rally-run -n N bench_recovery MODEL_BYTES ITERS [local] rally_mock=1,K,0,0
 *
 * (linked with librally_mock).  Each iteration: the previous iteration's
 * time MAX-reduced (so every rank passes the same model), a 1 MiB float
 * allreduce, then a checkpoint of a MODEL_BYTES global model holding the
 * times so far.  Rank 1 dies on entering iteration K's first collective;
 * the launcher restarts it, it loads the checkpoint
 * from the survivors and the job goes on.  Per-iteration wall times are
 * MAX-reduced over ranks; the iteration with the failure minus the median of
 * the others is the time from the kill to the job back in step, printed by
 * rank 0 as "RECOVERY <model_bytes> <seconds> <median_iteration_seconds>
 * <transfer_seconds>", the last the reference: one ring shift of the model
 * between warm buffers over the job's links (median of 3, max over ranks,
 * taken at the first start, before any checkpoint), what moving the model
 * to a restarted worker cannot cost less than.  "local": the MODEL_BYTES
 * are each rank's local model instead (its own bytes), the times the
 * global one: a restarted worker takes its model back from the others'
 * copies (or parity) as well.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "bench_common.h"
#include "rally/rally.h"
#include "robust/robust.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    rally_t *r;
    if (rally_init(&r, &argc, &argv) != RALLY_OK || argc < 3) {
        fprintf(stderr, "bench_recovery: %s\n", argc < 3 ? "usage" : rally_errmsg(r));
        return 1;
    }
    size_t model_nbytes = strtoull(argv[1], NULL, 10);
    int iters = atoi(argv[2]), local = argc > 3 && strcmp(argv[3], "local") == 0;
    unsigned char *model = calloc(model_nbytes ? model_nbytes : 1, 1);
    float *v = calloc(1 << 18, sizeof *v);
    double *t = calloc((size_t)iters, sizeof *t);
    void *saved = NULL, *saved_local = NULL;
    uint64_t saved_n = 0, saved_local_n = 0, version = 0;
    if (local) /* this rank's own bytes */
        memset(model, 1 + rally_rank(r), model_nbytes);
    double xfer = 0;
    if (rally_checkpoint_version(r) == 0 && rally_attempt(r) == 0) {
        /* the reference, at the first start: every rank is here.  The robust
         * engine's handle begins with its struct rally__robust
         * (src/robust/engine.c): its links, for a transfer without it */
        struct rally__robust *rb = (struct rally__robust *)(void *)rally__api_engine(r);
        unsigned char *a = malloc(model_nbytes ? model_nbytes : 1);
        unsigned char *b = malloc(model_nbytes ? model_nbytes : 1);
        double x[4];
        memset(a, 1, model_nbytes);
        memset(b, 2, model_nbytes);
        for (int i = 0; i < 4; i++) {
            struct rally__sig sg = {RALLY__C_SHIFT, 0, 0, -1, (uint64_t)(1000 + i), 0};
            double t0 = bench_now_us();
            if (rally__ring_shift(&rb->comm, a, model_nbytes, b, model_nbytes, &sg) != RALLY_OK)
                return 1;
            x[i] = (bench_now_us() - t0) / 1e6;
        }
        if (rally__engine.plain_allreduce(rally__api_engine(r), x + 1, x + 1, 3, RALLY_DOUBLE,
                                          RALLY_MAX) != RALLY_OK) /* not a bootstrap op */
            return 1;
        qsort(x + 1, 3, sizeof *x, cmp);
        xfer = x[2];
        free(a);
        free(b);
    }
    if (rally_load_checkpoint(r, &saved, &saved_n, local ? &saved_local : NULL,
                              local ? &saved_local_n : NULL, &version) != RALLY_OK)
        return 1;
    if (version > 0) { /* restarted: carry the times measured before */
        if (!local)
            memcpy(model, saved, saved_n < model_nbytes ? saved_n : model_nbytes);
        else if (saved_local_n != model_nbytes || memcmp(saved_local, model, model_nbytes) != 0)
            return fprintf(stderr, "bench_recovery: rank %d got another local model back\n",
                           rally_rank(r)),
                   1;
        memcpy(t, saved, (size_t)iters * sizeof *t);
        rally_free(saved);
        rally_free(saved_local);
    }
    for (int it = (int)version; it < iters; it++) {
        double t0 = bench_now_us();
        /* the same times on every rank: they go into the checkpoint, whose
         * model every rank must pass alike (its digest is checked); a
         * restarted rank is served the survivors'.  Timed: the kill
         * (rally_mock=1,K,0,0) comes in this first collective */
        if (it > 0 &&
            rally_allreduce(r, &t[it - 1], 1, RALLY_DOUBLE, RALLY_MAX, NULL, NULL) != RALLY_OK)
            return 1;
        if (rally_allreduce(r, v, 1 << 18, RALLY_FLOAT, RALLY_SUM, NULL, NULL) != RALLY_OK)
            return 1;
        int rc;
        if (local) {
            rc = rally_checkpoint(r, t, (size_t)iters * sizeof *t, model, model_nbytes);
        } else {
            memcpy(model, t,
                   (size_t)iters * sizeof *t < model_nbytes ? (size_t)iters * sizeof *t : 0);
            rc = rally_checkpoint(r, model, model_nbytes, NULL, 0);
        }
        if (rc != RALLY_OK)
            return 1;
        t[it] = (bench_now_us() - t0) / 1e6;
    }
    rally_allreduce(r, t, (size_t)iters, RALLY_DOUBLE, RALLY_MAX, NULL, NULL);
    double worst = 0, *s = malloc((size_t)iters * sizeof *s);
    memcpy(s, t, (size_t)iters * sizeof *t);
    qsort(s, (size_t)iters, sizeof *s, cmp);
    for (int i = 0; i < iters; i++)
        worst = t[i] > worst ? t[i] : worst;
    if (rally_rank(r) == 0)
        printf("RECOVERY %zu %.3f %.4f %.4f\n", model_nbytes, worst - s[iters / 2], s[iters / 2],
               xfer);
    return rally_finalize(r) == RALLY_OK ? 0 : 1;
}
