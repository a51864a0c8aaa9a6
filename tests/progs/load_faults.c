/*
 * load_faults.c — what a restarted worker's load of the global model costs
 * the job, in page faults (tests/jobs/load_faults_test.sh).
 *
 *   rally-run -n N load_faults MODEL_BYTES ITERS KILL_ITER
 *
 * Each iteration: a small allreduce, then a checkpoint of a MODEL_BYTES
 * model whose bytes are a function of the version.  Rank 1's first process
 * sends itself SIGKILL on entering iteration KILL_ITER; its replacement
 * loads the checkpoint and checks every byte.  The minor page faults
 * (getrusage) of the survivors over their stall (from their last call
 * before the kill to the end of their first after) and of the replacement
 * over rally_load_checkpoint are MAX-reduced, and rank 0 prints
 * "FAULTS stall=<S> load=<L> pages=<model's pages>".  The replacement
 * reports "back" (rally_report) as it enters the call the survivors stand
 * in: the job is back in step no sooner.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "rally/rally.h"

static long minflt(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static void fill(unsigned char *m, size_t n, uint64_t v)
{
    for (size_t i = 0; i < n; i++)
        m[i] = (unsigned char)(i * 131 + v * 7 + (i >> 12));
}

int main(int argc, char **argv)
{
    rally_t *r;
    if (rally_init(&r, &argc, &argv) != RALLY_OK || argc < 4) {
        fprintf(stderr, "load_faults: %s\n", argc < 4 ? "usage" : rally_errmsg(r));
        return 1;
    }
    size_t n = strtoull(argv[1], NULL, 10);
    int iters = atoi(argv[2]), kill_at = atoi(argv[3]);
    int replaced = rally_attempt(r) > 0;
    unsigned char *model = malloc(n);
    void *got = NULL;
    uint64_t got_n = 0, version = 0;
    double f[2] = {0, 0}; /* the survivors' stall, the replacement's load */
    long before = minflt();
    if (model == NULL || rally_load_checkpoint(r, &got, &got_n, NULL, NULL, &version) != RALLY_OK)
        return 1;
    if (replaced)
        f[1] = (double)(minflt() - before);
    if (version > 0) {
        fill(model, n, version);
        if (got_n != n || memcmp(got, model, n) != 0)
            return fprintf(stderr, "load_faults: rank %d loaded other bytes\n", rally_rank(r)), 1;
        rally_free(got);
    }
    for (int it = (int)version; it < iters; it++) {
        if (it == kill_at && rally_rank(r) == 1 && !replaced)
            kill(getpid(), SIGKILL);
        int stall = it == kill_at && rally_rank(r) != 1;
        if (it == kill_at && replaced && rally_report(r, "back", it) != RALLY_OK)
            return 1;
        before = minflt();
        double x = it;
        if (rally_allreduce(r, &x, 1, RALLY_DOUBLE, RALLY_MAX, NULL, NULL) != RALLY_OK)
            return 1;
        if (stall)
            f[0] = (double)(minflt() - before);
        fill(model, n, (uint64_t)it + 1);
        if (rally_checkpoint(r, model, n, NULL, 0) != RALLY_OK)
            return 1;
    }
    free(model);
    if (rally_allreduce(r, f, 2, RALLY_DOUBLE, RALLY_MAX, NULL, NULL) != RALLY_OK)
        return 1;
    if (rally_rank(r) == 0)
        printf("FAULTS stall=%.0f load=%.0f pages=%ld\n", f[0], f[1],
               (long)(n / (size_t)sysconf(_SC_PAGESIZE)));
    return rally_finalize(r) == RALLY_OK ? 0 : 1;
}
