/*
 * bench_allreduce.c — rally's allreduce benchmark (float32 sum, in place).
 *
 *   rally-run -n N bench_allreduce [--plain] BYTES:REPS [BYTES:REPS ...] [rally_key=value ...]
 *
 * The method (bench_common.h) is the one peer_mpi.c and peer_gloo.cc use:
 * per size a correctness check, warm-up reps, then timed reps, each behind a
 * 1-float allreduce as a barrier and, up to 4 KiB, of bench_batch() calls in
 * a row (the time per call); per-rep times are MAX-reduced over ranks
 * and rank 0 prints "RESULT <bytes> <reps> <median_us> <min_us> <max_us>
 * <faults_per_rep>" for the public (robust) call.
 *
 * --plain also times, interleaved rep by rep with the public call (which of
 * the two goes first alternates), the plain collective under it: the
 * engine's plain_allreduce in place (no copies, no recovery cache), reached
 * through the internal api/api.h as bench_robust does; rank 0 then prints a
 * "PLAIN ..." line of the same form.  Without --plain only the public API is
 * used.  Per size rank 0 also prints "MOVED <bytes> <public> <plain>": the
 * bytes its checked calls moved (copies and reductions in the collective
 * and the robust engine, rally__moved_nbytes) per byte of the call.  After
 * each rep of public calls an untimed rally_checkpoint drops the recovery
 * cache, as an iterative job would.
 */
#include <rally/rally.h>

#include "api/api.h"
#include "bench_common.h"
#include "util/copy.h"

static int fail(rally_t *r, int joined, const char *what, int rc)
{
    fprintf(stderr, "bench_allreduce: rank %d: %s: %s: %s\n", joined ? rally_rank(r) : -1, what,
            rally_strstatus(rc), rally_errmsg(r));
    rally_finalize(r);
    return 1;
}

/* The robust (public) call, or the plain collective in place. */
static int reduce(rally_t *r, struct rally__engine *plain, float *buf, size_t count)
{
    if (plain)
        return rally__engine.plain_allreduce(plain, buf, buf, count, RALLY_FLOAT, RALLY_SUM);
    return rally_allreduce(r, buf, count, RALLY_FLOAT, RALLY_SUM, NULL, NULL);
}

/* One correctness check of buf's pattern through the public call or the plain one. */
static int check(rally_t *r, struct rally__engine *plain, float *buf, size_t count, size_t bytes)
{
    bench_fill_check(buf, count, rally_rank(r));
    int rc = reduce(r, plain, buf, count);
    if (rc != RALLY_OK)
        return fail(r, 1, plain ? "plain allreduce" : "rally_allreduce", rc);
    long bad = bench_verify(buf, count, rally_world_size(r));
    if (bad >= 0) {
        fprintf(stderr, "bench_allreduce: rank %d: wrong %s sum at element %ld of %zu bytes\n",
                rally_rank(r), plain ? "plain" : "public", bad, bytes);
        rally_finalize(r);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    rally_t *r = NULL;
    int rc = rally_init(&r, &argc, &argv);
    if (rc != RALLY_OK)
        return fail(r, 0, "rally_init", rc);
    int with_plain = argc > 1 && strcmp(argv[1], "--plain") == 0;
    struct rally__engine *en = with_plain ? rally__api_engine(r) : NULL;
    if (with_plain && (en == NULL || rally__engine.plain_allreduce == NULL)) {
        fprintf(stderr, "bench_allreduce: --plain: this engine has no plain collective\n");
        rally_finalize(r);
        return 2;
    }
    bench_spec spec[BENCH_MAX_SPECS];
    int nspec = bench_parse(argc, argv, 1 + with_plain, spec, BENCH_MAX_SPECS);
    if (nspec <= 0) {
        fprintf(stderr, "usage: %s [--plain] BYTES:REPS [BYTES:REPS ...]  (BYTES a multiple of 4)\n",
                argv[0]);
        rally_finalize(r);
        return 2;
    }
    const int rank = rally_rank(r), nv = 1 + with_plain;
    for (int s = 0; s < nspec; s++) {
        size_t count = spec[s].bytes / sizeof(float);
        const int reps = spec[s].reps;
        float *buf = malloc(spec[s].bytes);
        /* per variant v: reps times, then the faults over the timed reps */
        double *t = malloc(sizeof(double) * (size_t)nv * ((size_t)reps + 1));
        if (!buf || !t) {
            fprintf(stderr, "bench_allreduce: out of memory for %zu bytes\n", spec[s].bytes);
            rally_finalize(r);
            return 1;
        }
        float token = 0;

        uint64_t mv[2] = {0, 0}; /* bytes each variant's checked call moved (util/copy.h) */
        for (int v = 0; v < nv; v++) {
            uint64_t m0 = __atomic_load_n(&rally__moved_nbytes, __ATOMIC_RELAXED);
            if (check(r, v ? en : NULL, buf, count, spec[s].bytes) != 0)
                return 1;
            mv[v] = __atomic_load_n(&rally__moved_nbytes, __ATOMIC_RELAXED) - m0;
        }
        if (rank == 0)
            printf("MOVED %zu %.3f %.3f\n", spec[s].bytes, (double)mv[0] / (double)spec[s].bytes,
                   (double)mv[1] / (double)spec[s].bytes);
        memset(buf, 0, spec[s].bytes);

        double faults[2] = {0, 0};
        int warm = bench_warmup(reps), batch = bench_batch(spec[s].bytes);
        for (int i = -warm; i < reps; i++) {
            for (int k = 0; k < nv; k++) {
                int v = (k + (i & 1)) % nv; /* alternate which goes first */
                if ((rc = rally_allreduce(r, &token, 1, RALLY_FLOAT, RALLY_SUM, NULL, NULL)) !=
                    RALLY_OK)
                    return fail(r, 1, "rally_allreduce (barrier)", rc);
                double f0 = bench_minflt();
                double t0 = bench_now_us();
                for (int b = 0; b < batch && rc == RALLY_OK; b++)
                    rc = reduce(r, v ? en : NULL, buf, count);
                double t1 = bench_now_us();
                double f1 = bench_minflt();
                if (rc != RALLY_OK)
                    return fail(r, 1, v ? "plain allreduce" : "rally_allreduce", rc);
                if (i >= 0) {
                    t[(size_t)v * ((size_t)reps + 1) + (size_t)i] = (t1 - t0) / batch;
                    faults[v] += (f1 - f0) / batch;
                }
                /* untimed, as an iterative job would: drops the recovery cache */
                if (v == 0 && (rc = rally_checkpoint(r, NULL, 0, NULL, 0)) != RALLY_OK)
                    return fail(r, 1, "rally_checkpoint", rc);
            }
        }
        for (int v = 0; v < nv; v++)
            t[(size_t)v * ((size_t)reps + 1) + (size_t)reps] = faults[v];
        if ((rc = rally_allreduce(r, t, (size_t)nv * ((size_t)reps + 1), RALLY_DOUBLE, RALLY_MAX,
                                  NULL, NULL)) != RALLY_OK)
            return fail(r, 1, "rally_allreduce (max)", rc);
        for (int v = 0; v < nv && rank == 0; v++) {
            double *tv = t + (size_t)v * ((size_t)reps + 1);
            bench_report_as(v ? "PLAIN" : "RESULT", spec[s].bytes, tv, reps, tv[reps] / reps);
        }
        free(buf);
        free(t);
    }
    rc = rally_finalize(r);
    if (rc != RALLY_OK) {
        fprintf(stderr, "bench_allreduce: rally_finalize: %s\n", rally_strstatus(rc));
        return 1;
    }
    return 0;
}
