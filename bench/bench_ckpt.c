/*
 * bench_ckpt.c — what a checkpoint costs, beside what it cannot cost less
 * than.
 *
 *   rally-run -n N bench_ckpt MODEL_BYTES REPS [local] [rally_local_replica=k]
 *                                  [rally_local_scheme=xor]
 *
 * Times rally_checkpoint of a MODEL_BYTES global model (a copy into memory
 * plus the acknowledgement) against rally_lazy_checkpoint (no copy), and
 * with "local" a MODEL_BYTES local model per rank replicated to k ring
 * successors (global model empty).  In the same run, the reference: for a
 * global model a memcpy of MODEL_BYTES between two warm buffers on each
 * rank, then the 24-byte agreement every checkpoint ends with (the plain
 * collective: on an oversubscribed machine the slowest rank's copy is what
 * every rank waits for, as in a checkpoint); with local models k ring
 * shifts of MODEL_BYTES between warm buffers over the job's own links (the
 * collective layer under the engine, as the replication uses it), the
 * transfers replication cannot avoid.  Every rep, timed or not, starts
 * after a barrier.  With rally_local_scheme=xor the reference is the
 * parity's own transfers: G - 1 ring shifts of a chunk of MODEL_BYTES /
 * (G - 1).  Median over REPS, max over ranks; rank 0 prints
 *   "CKPT <bytes> <k> <checkpoint_us> <lazy_us> <ref_us> <held_bytes>"
 * (lazy_us is 0 with local; k is "xorG" with parity; held_bytes: the most
 * any rank's store keeps for the newest version's local models, its slots
 * and the parity's scratch buffer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "bench_common.h"
#include "rally/rally.h"
#include "robust/robust.h"
#include "util/xor.h"

static uint64_t nbytes;

static uint64_t serialize(void *arg, void *buf, uint64_t cap)
{
    if (cap >= nbytes && buf != NULL)
        memcpy(buf, arg, nbytes);
    return nbytes;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The plain collective: no checkpoint position is used up. */
static void barrier(rally_t *r)
{
    double x = 0;
    rally__engine.plain_allreduce(rally__api_engine(r), &x, &x, 1, RALLY_DOUBLE, RALLY_SUM);
}

/* Max over ranks (the plain collective: nothing cached, no checkpoint
 * needed to drop it), then the median. */
static double median(rally_t *r, double *t, int reps)
{
    rally__engine.plain_allreduce(rally__api_engine(r), t, t, (size_t)reps, RALLY_DOUBLE,
                                  RALLY_MAX);
    qsort(t, (size_t)reps, sizeof *t, cmp);
    return t[reps / 2];
}

int main(int argc, char **argv)
{
    rally_t *r;
    if (rally_init(&r, &argc, &argv) != RALLY_OK || argc < 3) {
        fprintf(stderr, "bench_ckpt: %s\n", argc < 3 ? "usage" : rally_errmsg(r));
        return 1;
    }
    nbytes = strtoull(argv[1], NULL, 10);
    int reps = atoi(argv[2]), local = argc > 3 && strcmp(argv[3], "local") == 0;
    unsigned char *model = malloc(nbytes ? nbytes : 1);
    memset(model, 7, nbytes);
    double *t = calloc((size_t)reps, sizeof *t), full, lazy = 0;
    uint64_t v;
    void *g = NULL, *l = NULL;
    uint64_t gn, ln;
    rally_load_checkpoint(r, &g, &gn, local ? &l : NULL, local ? &ln : NULL, &v);
    for (int i = -1; i < reps; i++) {
        barrier(r);
        double t0 = bench_now_us();
        int rc = local ? rally_checkpoint(r, NULL, 0, model, nbytes)
                       : rally_checkpoint(r, model, nbytes, NULL, 0);
        if (rc != RALLY_OK)
            return 1;
        if (i >= 0)
            t[i] = bench_now_us() - t0;
    }
    full = median(r, t, reps);
    if (!local) {
        for (int i = -1; i < reps; i++) {
            barrier(r);
            double t0 = bench_now_us();
            if (rally_lazy_checkpoint(r, serialize, model) != RALLY_OK)
                return 1;
            if (i >= 0)
                t[i] = bench_now_us() - t0;
        }
        lazy = median(r, t, reps);
    }
    /* the reference, between warm buffers: touched once before timing */
    unsigned char *a = malloc(nbytes ? nbytes : 1), *b = malloc(nbytes ? nbytes : 1);
    memset(a, 3, nbytes);
    memset(b, 4, nbytes);
    /* the robust engine's handle begins with its struct rally__robust
     * (src/robust/engine.c): its links, for transfers without the engine */
    struct rally__robust *rb = (struct rally__robust *)(void *)rally__api_engine(r);
    int nk = local ? rb->k : 0, xg = local ? rb->place.xor_g : 0;
    uint64_t ref_n = nbytes;
    if (xg > 0) { /* the parity's hops of a chunk */
        nk = xg - 1;
        ref_n = rally__xor_chunk_nbytes(nbytes, xg);
    }
    for (int i = -1; i < reps; i++) {
        barrier(r);
        double t0 = bench_now_us();
        if (!local) {
            uint64_t ack[3] = {0, 0, 0};
            memcpy(b, a, nbytes);
            if (rally__engine.plain_allreduce(rally__api_engine(r), ack, ack, 3, RALLY_UINT64,
                                              RALLY_BITOR) != RALLY_OK)
                return 1;
        }
        for (int j = 0; j < nk; j++) {
            struct rally__sig s = {RALLY__C_SHIFT, 0, 0, -1, (uint64_t)(1000 + j), 0};
            if (rally__ring_shift(&rb->comm, j % 2 ? b : a, ref_n, j % 2 ? a : b, ref_n, &s) !=
                RALLY_OK)
                return 1;
        }
        if (i >= 0)
            t[i] = bench_now_us() - t0;
    }
    double ref = median(r, t, reps);
    char k[16] = "-";
    if (local)
        snprintf(k, sizeof k, xg > 0 ? "xor%d" : "%d", xg > 0 ? xg : nk);
    /* what the store keeps for the newest version's local models */
    const struct rally__localset *ls = rally__robust_set_of(rb, rally__robust_version(rb));
    uint64_t held = 0;
    for (int j = 0; ls != NULL && j <= RALLY__MAX_REPLICA; j++)
        held += ls->nbytes[j];
    held += rb->st.xbuf.cap;
    rally__engine.plain_allreduce(rally__api_engine(r), &held, &held, 1, RALLY_UINT64, RALLY_MAX);
    if (rally_rank(r) == 0)
        printf("CKPT %llu %s %.1f %.1f %.1f %llu\n", (unsigned long long)nbytes, k, full, lazy, ref,
               (unsigned long long)held);
    free(a);
    free(b);
    return rally_finalize(r) == RALLY_OK ? 0 : 1;
}
