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
 *
 *   rally-run -n N bench_recovery MODEL_BYTES ITERS kill=K,FILE
 *
 * (no rally_mock): recovery by the job's own clock.  Rank 1's first process
 * writes the time (CLOCK_MONOTONIC, one clock for every process of a host)
 * to FILE and sends itself SIGKILL where the mock would kill it; each
 * survivor stamps the end of its last call before the kill and of its
 * first after (the collective that needs every rank back at the failed
 * position); the restarted rank stamps its own steps.  Rank 0 prints
 * "JOBCLOCK <model_bytes> <kill_to_back> <stall> <start> <init> <load>
 * <copy> <catch_up> <load_minflt> <stall_minflt> <load_cpu>", times in seconds: the kill to every rank back
 * (the maximum over survivors of the first call's end), the survivors'
 * stall (last call's end to first call's end), then the restarted rank's
 * path: the kill to its main (death seen, restart decided, fork, exec,
 * dynamic linking), rally_init, rally_load_checkpoint (the checkpoint's
 * transfer), its copy into the program's model, and the rest to back (its
 * first call); then the minor page faults its load took, the most a
 * survivor took over its stall, and the CPU seconds (user and system) of
 * its load: on a shared machine the wall time is mostly the others' turns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "api/api.h"
#include "bench_common.h"
#include "rally/rally.h"
#include "robust/robust.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static long minflt(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

/* This process's CPU time, user and system, in seconds. */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The steps of the job's clock, MAX-reduced over ranks (0 where a rank has
 * none): every one a CLOCK_MONOTONIC stamp but the faults. */
enum { J_BEFORE, J_BACK, J_MAIN, J_INIT, J_LOAD, J_COPY, J_FLT, J_SFLT, J_CPU, J_N };

int main(int argc, char **argv)
{
    double j[J_N] = {0};
    j[J_MAIN] = bench_now_us();
    rally_t *r;
    if (rally_init(&r, &argc, &argv) != RALLY_OK || argc < 3) {
        fprintf(stderr, "bench_recovery: %s\n", argc < 3 ? "usage" : rally_errmsg(r));
        return 1;
    }
    j[J_INIT] = bench_now_us();
    size_t model_nbytes = strtoull(argv[1], NULL, 10);
    int iters = atoi(argv[2]), local = argc > 3 && strcmp(argv[3], "local") == 0;
    int kill_at = -1;
    const char *kill_file = NULL;
    if (argc > 3 && strncmp(argv[3], "kill=", 5) == 0) {
        char *end;
        kill_at = (int)strtol(argv[3] + 5, &end, 10);
        kill_file = *end == ',' ? end + 1 : NULL;
        if (kill_at < 1 || kill_at >= iters || kill_file == NULL || rally_world_size(r) < 2)
            return fprintf(stderr, "bench_recovery: kill=K,FILE with 0 < K < ITERS, N > 1\n"), 1;
    }
    int restarted = rally_attempt(r) > 0;
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
    long flt = minflt();
    double cpu = cpu_s();
    if (rally_load_checkpoint(r, &saved, &saved_n, local ? &saved_local : NULL,
                              local ? &saved_local_n : NULL, &version) != RALLY_OK)
        return 1;
    j[J_LOAD] = bench_now_us();
    j[J_FLT] = (double)(minflt() - flt);
    j[J_CPU] = cpu_s() - cpu;
    if (version > 0) { /* restarted: carry the times measured before */
        if (saved_n >= (size_t)iters * sizeof *t) /* it holds the times (checkpoint below) */
            memcpy(t, saved, (size_t)iters * sizeof *t);
        if (!local && saved_n == model_nbytes) { /* the loaded bytes are the model: no copy */
            free(model);
            model = saved;
            saved = NULL;
        } else if (!local) {
            memcpy(model, saved, saved_n < model_nbytes ? saved_n : model_nbytes);
        } else if (saved_local_n != model_nbytes || memcmp(saved_local, model, model_nbytes) != 0)
            return fprintf(stderr, "bench_recovery: rank %d got another local model back\n",
                           rally_rank(r)),
                   1;
        rally_free(saved);
        rally_free(saved_local);
    }
    j[J_COPY] = bench_now_us();
    double last = 0; /* the end of this rank's last call */
    for (int it = (int)version; it < iters; it++) {
        double t0 = bench_now_us();
        if (it == kill_at && rally_rank(r) == 1 && !restarted) {
            FILE *f = fopen(kill_file, "w");
            if (f == NULL || fprintf(f, "%.3f\n", bench_now_us()) < 0 || fclose(f) != 0)
                return perror(kill_file), 1;
            kill(getpid(), SIGKILL);
        }
        if (it == kill_at && rally_rank(r) != 1) {
            j[J_BEFORE] = last;
            j[J_SFLT] = (double)minflt();
        }
        /* the same times on every rank: they go into the checkpoint, whose
         * model every rank must pass alike (its digest is checked); a
         * restarted rank is served the survivors'.  Timed: the kill
         * (rally_mock=1,K,0,0) comes in this first collective */
        if (it > 0 &&
            rally_allreduce(r, &t[it - 1], 1, RALLY_DOUBLE, RALLY_MAX, NULL, NULL) != RALLY_OK)
            return 1;
        if (it == kill_at && (rally_rank(r) != 1 || restarted))
            j[J_BACK] = bench_now_us();
        if (it == kill_at && rally_rank(r) != 1)
            j[J_SFLT] = (double)minflt() - j[J_SFLT];
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
        last = bench_now_us();
        t[it] = (last - t0) / 1e6;
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
    if (kill_at > 0) {
        if (!restarted) /* the restarted rank's own path only */
            j[J_MAIN] = j[J_INIT] = j[J_LOAD] = j[J_COPY] = j[J_FLT] = j[J_CPU] = 0;
        if (rally_allreduce(r, j, J_N, RALLY_DOUBLE, RALLY_MAX, NULL, NULL) != RALLY_OK)
            return 1;
        double k = 0;
        FILE *f = rally_rank(r) == 0 ? fopen(kill_file, "r") : NULL;
        if (f != NULL && fscanf(f, "%lf", &k) == 1 && k > 0)
            printf("JOBCLOCK %zu %.3f %.3f %.3f %.3f %.3f %.3f %.3f %.0f %.0f %.3f\n",
                   model_nbytes,
                   (j[J_BACK] - k) / 1e6, (j[J_BACK] - j[J_BEFORE]) / 1e6, (j[J_MAIN] - k) / 1e6,
                   (j[J_INIT] - j[J_MAIN]) / 1e6, (j[J_LOAD] - j[J_INIT]) / 1e6,
                   (j[J_COPY] - j[J_LOAD]) / 1e6, (j[J_BACK] - j[J_COPY]) / 1e6, j[J_FLT],
                   j[J_SFLT], j[J_CPU]);
        else if (rally_rank(r) == 0)
            return fprintf(stderr, "bench_recovery: no kill time in %s\n", kill_file), 1;
        if (f != NULL)
            fclose(f);
    }
    return rally_finalize(r) == RALLY_OK ? 0 : 1;
}
