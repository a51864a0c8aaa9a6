/*
 * mpi_prog.c — the leading principal components by block power iteration,
 * on rally.h linked with librally_mpi and started by OpenMPI's mpirun:
 *
 *   mpirun -n 4 mpi_prog [--rows R] [--features F] [--components K]
 *                        [--iters T] [rally_snapshot_dir=D rally_snapshot_every=S]
 *
 * MPI cannot recover a dead process, so this job is kept by durable
 * snapshots instead: with rally_snapshot_dir a snapshot of the checkpoint
 * is written every S versions, and a job killed whole continues from the
 * newest with RALLY_RESUME=latest (or rally_resume=latest) through the same
 * rally_load_checkpoint as a fresh start.
 *
 * The data are made in the program: rank r's R rows are rows r * R ..
 * of one data set, each F features mixed from a few latent factors plus
 * noise.  Before the checkpoint is loaded, the column means are summed
 * over the job (a bootstrap collective) and taken off.  The model is the
 * iteration and the F x K basis V.  Each iteration computes C V, C the
 * covariance, as the sum over ranks of X_r^T (X_r V) (one allreduce), and
 * orthonormalises the result (Gram-Schmidt) into the next V.
 *
 * Rank 0 prints "iter T eigenvalue L" every 10 iterations (L: the largest),
 * and at the end "eigenvalues L1 L2 ..." and "digest HEX" (rally_digest64
 * of V).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rally/rally.h>

#define NFACTOR 6

static rally_t *r;

static void check(int rc, const char *what)
{
    if (rc != RALLY_OK) {
        fprintf(stderr, "mpi_prog: rank %d: %s: %s\n", rally_rank(r), what, rally_errmsg(r));
        rally_finalize(r);
        exit(1);
    }
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static double unit(uint64_t h) /* in [-1, 1) */
{
    return (double)(h >> 11) * 0x1.0p-52 - 1.0;
}

/* Orthonormalises the columns of the f x k matrix v (row-major) in place,
 * writing each column's norm before it was scaled into norm[]. */
static void gram_schmidt(double *v, int f, int k, double *norm)
{
    for (int c = 0; c < k; c++) {
        for (int p = 0; p < c; p++) {
            double dot = 0;
            for (int i = 0; i < f; i++)
                dot += v[i * k + c] * v[i * k + p];
            for (int i = 0; i < f; i++)
                v[i * k + c] -= dot * v[i * k + p];
        }
        double nn = 0;
        for (int i = 0; i < f; i++)
            nn += v[i * k + c] * v[i * k + c];
        norm[c] = sqrt(nn);
        for (int i = 0; i < f; i++)
            v[i * k + c] /= norm[c] > 0 ? norm[c] : 1;
    }
}

/* This rank's part of C V: cv = X^T (X v), X its rows x f, v f x k. */
static void cov_times(const double *x, int rows, int f, int k, const double *v, double *cv,
                      double *xv)
{
    memset(cv, 0, sizeof *cv * (size_t)f * k);
    for (int i = 0; i < rows; i++) {
        const double *xi = x + (size_t)i * f;
        for (int c = 0; c < k; c++)
            xv[c] = 0;
        for (int j = 0; j < f; j++)
            for (int c = 0; c < k; c++)
                xv[c] += xi[j] * v[j * k + c];
        for (int j = 0; j < f; j++)
            for (int c = 0; c < k; c++)
                cv[j * k + c] += xi[j] * xv[c];
    }
}

int main(int argc, char **argv)
{
    if (rally_init(&r, &argc, &argv) != RALLY_OK) {
        fprintf(stderr, "mpi_prog: %s\n", rally_errmsg(r));
        rally_finalize(r);
        return 1;
    }
    int rows = 20000, f = 48, k = 4, iters = 100;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--rows") == 0)
            rows = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--features") == 0)
            f = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--components") == 0)
            k = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--iters") == 0)
            iters = atoi(argv[i + 1]);
        else
            break;
    }
    if (argc % 2 == 0 || rows < 1 || f < 1 || k < 1 || k > f || iters < 0) {
        fprintf(stderr, "usage: mpi_prog [--rows R] [--features F] [--components K] "
                        "[--iters T]\n");
        rally_finalize(r);
        return 2;
    }
    int rank = rally_rank(r);

    /* my rows: NFACTOR latent factors through a fixed loading, plus noise */
    double *x = malloc(sizeof *x * (size_t)rows * (size_t)f);
    double *mean = calloc((size_t)f, sizeof *mean);
    double *model = calloc(1 + (size_t)f * (size_t)k, sizeof *model);
    double *xv = malloc(sizeof *xv * (size_t)k), *cv = malloc(sizeof *cv * (size_t)f * k);
    double *norm = malloc(sizeof *norm * (size_t)k);
    if (!x || !mean || !model || !xv || !cv || !norm) {
        fprintf(stderr, "mpi_prog: out of memory\n");
        return 1;
    }
    for (int i = 0; i < rows; i++) {
        uint64_t row = (uint64_t)rank * (uint64_t)rows + (uint64_t)i;
        double z[NFACTOR];
        for (int a = 0; a < NFACTOR; a++)
            z[a] = unit(mix(row * 131 + (uint64_t)a)) * (NFACTOR - a);
        for (int j = 0; j < f; j++) {
            double v = 0.2 * unit(mix(~row * 977 + (uint64_t)j));
            for (int a = 0; a < NFACTOR; a++)
                v += z[a] * unit(mix(((uint64_t)a << 32) + (uint64_t)j));
            x[(size_t)i * f + j] = v;
            mean[j] += v;
        }
    }
    /* bootstrap: the column means over the job, before the checkpoint */
    double total = rows;
    check(rally_allreduce(r, &total, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL), "row count");
    check(rally_allreduce(r, mean, (size_t)f, RALLY_DOUBLE, RALLY_SUM, NULL, NULL), "means");
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < f; j++)
            x[(size_t)i * f + j] -= mean[j] / total;

    char config[96];
    snprintf(config, sizeof config, "rows=%d features=%d components=%d iters=%d", rows, f, k,
             iters);
    check(rally_set_app(r, "mpi_prog", config), "rally_set_app");
    void *g = NULL;
    uint64_t gn = 0, version = 0;
    const uint64_t model_bytes = sizeof *model * (1 + (uint64_t)f * (uint64_t)k);
    check(rally_load_checkpoint(r, &g, &gn, NULL, NULL, &version), "rally_load_checkpoint");
    double *v = model + 1;
    if (version > 0) {
        if (gn != model_bytes) {
            fprintf(stderr, "mpi_prog: a checkpoint of %" PRIu64 " bytes\n", gn);
            return 1;
        }
        memcpy(model, g, gn);
        rally_free(g);
        if (rank == 0)
            printf("continuing after iteration %.0f\n", model[0]);
    } else {
        for (int j = 0; j < f * k; j++)
            v[j] = unit(mix(0x5eed + (uint64_t)j));
        gram_schmidt(v, f, k, norm);
    }

    for (int t = (int)model[0]; t < iters; t++) {
        cov_times(x, rows, f, k, v, cv, xv);
        check(rally_allreduce(r, cv, (size_t)f * k, RALLY_DOUBLE, RALLY_SUM, NULL, NULL), "C V");
        memcpy(v, cv, sizeof *cv * (size_t)f * k);
        gram_schmidt(v, f, k, norm);
        model[0] = t + 1;
        if (rank == 0 && (t + 1) % 10 == 0)
            printf("iter %d eigenvalue %.6f\n", t + 1, norm[0] / total);
        check(rally_checkpoint(r, model, model_bytes, NULL, 0), "rally_checkpoint");
    }

    /* the eigenvalues along the final basis: v_c . C v_c */
    cov_times(x, rows, f, k, v, cv, xv);
    check(rally_allreduce(r, cv, (size_t)f * k, RALLY_DOUBLE, RALLY_SUM, NULL, NULL), "C V");
    if (rank == 0) {
        printf("eigenvalues");
        for (int c = 0; c < k; c++) {
            double q = 0;
            for (int j = 0; j < f; j++)
                q += v[j * k + c] * cv[j * k + c];
            printf(" %.6f", q / total);
        }
        printf("\ndigest %016" PRIx64 "\n", rally_digest64(v, sizeof *v * (size_t)f * k));
    }
    free(x);
    free(mean);
    free(model);
    free(xv);
    free(cv);
    free(norm);
    return rally_finalize(r) == RALLY_OK ? 0 : 1;
}
