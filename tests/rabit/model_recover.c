/*
 * model_recover.c — rabit's checkpoint example, written to rabit's C API:
 * RabitLoadCheckPoint at start, then per iteration two allreduces (one with
 * a prepare function), a broadcast and RabitCheckPoint (or, with "lazy",
 * RabitLazyCheckPoint; with "local", a per-rank local model too).  Run with
 * rabit's mock=rank,version,seq,ndeath arguments against librally_mock, it
 * must end with the digest of a run without failures.
 *
 *   rally-run -n N rabit_model_recover SIZE ITERS [local|lazy] [mock=...]...
 *
 * Prints "pid R P" per incarnation, and on rank 0 "model_digest=HEX".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rally/rabit_c_api.h"

struct prep {
    double *buf;
    int n, rank, iter;
};

static void prepare(void *arg) /* this rank's contribution: order-sensitive sums */
{
    struct prep *p = arg;
    for (int i = 0; i < p->n; i++)
        p->buf[i] = 1.0 / (double)(p->rank + 3) + (double)((i * 31 + p->iter * 17) % 101) * 1e-3;
}

static uint64_t fnv(const void *b, size_t n)
{
    const unsigned char *p = b;
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3u;
    return h;
}

int main(int argc, char *argv[])
{
    if (argc < 3 || !RabitInit(argc, argv)) {
        fprintf(stderr, "usage: rabit_model_recover SIZE ITERS [local|lazy] [mock=...]\n");
        return 2;
    }
    int n = atoi(argv[1]), iters = atoi(argv[2]);
    int local = argc > 3 && strcmp(argv[3], "local") == 0;
    int lazy = argc > 3 && strcmp(argv[3], "lazy") == 0;
    int rank = RabitGetRank();
    char line[64];
    snprintf(line, sizeof line, "pid %d %ld", rank, (long)getpid());
    RabitTrackerPrint(line);
    /* the model: [iteration, n doubles]; the local model: [rank, iterations seen] */
    size_t nbytes = sizeof(double) * (size_t)(n + 1);
    double *model = calloc((size_t)n + 1, sizeof *model), *tmp = malloc(nbytes);
    double *buf = malloc(sizeof(double) * (size_t)n);
    int mine[2] = {rank, 0};
    char *g = NULL, *l = NULL;
    rbt_ulong glen = 0, llen = 0;
    int version = RabitLoadCheckPoint(&g, &glen, local ? &l : NULL, local ? &llen : NULL);
    if (version > 0) {
        if (glen != nbytes || (local && (llen != sizeof mine))) {
            fprintf(stderr, "rank %d: checkpoint of %lu bytes, want %zu\n", rank, glen, nbytes);
            return 1;
        }
        memcpy(model, g, nbytes);
        if (local)
            memcpy(mine, l, sizeof mine);
        if (local && (mine[0] != rank || mine[1] != version)) {
            fprintf(stderr, "rank %d: local model of rank %d after %d\n", rank, mine[0], mine[1]);
            return 1;
        }
    }
    for (int it = (int)model[0]; it < iters; it++) {
        struct prep p = {buf, n, rank, it};
        RabitAllreduce(buf, (size_t)n, 7 /* kDouble */, 2 /* kSum */, prepare, &p);
        double top[2] = {buf[it % n], -buf[(it * 7) % n]};
        RabitAllreduce(top, 2, RABIT_DOUBLE, RABIT_MAX, NULL, NULL);
        int root = it % RabitGetWorldSize();
        double noise = rank == root ? (double)(it + 1) * 1e-7 : 0;
        RabitBroadcast(&noise, sizeof noise, root);
        for (int i = 0; i < n; i++)
            model[1 + i] = model[1 + i] * 0.5 + buf[i] + top[0] * noise;
        model[0] = it + 1;
        mine[1] = it + 1;
        if (lazy) { /* the model stays as it is until the next checkpoint */
            memcpy(tmp, model, nbytes);
            RabitLazyCheckPoint((const char *)tmp, nbytes);
        } else {
            RabitCheckPoint((const char *)model, nbytes, local ? (const char *)mine : NULL,
                            local ? sizeof mine : 0);
        }
        if (RabitVersionNumber() != it + 1) {
            fprintf(stderr, "rank %d: version %d after iteration %d\n", rank,
                    RabitVersionNumber(), it);
            return 1;
        }
    }
    if (rank == 0) {
        snprintf(line, sizeof line, "model_digest=%016llx\n",
                 (unsigned long long)fnv(model, nbytes));
        RabitTrackerPrint(line);
    }
    free(model);
    free(tmp);
    free(buf);
    return RabitFinalize() ? 0 : 1;
}
