/*
 * model.c — how a rally-linear model is stored and shown: its bytes (the
 * checkpoint, the --model-out file and what model_digest hashes), the durable
 * file write, and the JSON of --json and --show.
 *
 * The bytes, little-endian and fixed width: magic "RALLYLR\0", format
 * version, solver, d, mem, flags, hist_len, hist_head, 4 reserved bytes,
 * iteration, evals, lambda, rho, f, resid, 8 reserved bytes (96 in all);
 * then with n = d + 1 the vectors w[n], g[n], sy[mem], s[mem][n], y[mem][n]
 * as IEEE doubles; and a rally_digest64 of everything before it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linear.h"

#define LR_MAGIC "RALLYLR"
#define LR_FORMAT 1u
#define LR_HEADER_NBYTES 96u

/* The doubles after the header: w, g, sy, s, y. */
static size_t ndoubles(uint32_t d, uint32_t mem)
{
    size_t n = (size_t)d + 1;
    return 2 * n + mem + 2 * (size_t)mem * n;
}

int lr_model_alloc(struct lr_model *m, int solver, uint32_t d, uint32_t mem)
{
    size_t n = (size_t)d + 1;
    double *v = calloc(ndoubles(d, mem), sizeof *v);
    if (v == NULL)
        return -1;
    *m = (struct lr_model){.solver = (uint32_t)solver, .d = d, .mem = mem};
    m->w = v;
    m->g = v + n;
    m->sy = m->g + n;
    m->s = m->sy + mem;
    m->y = m->s + (size_t)mem * n;
    return 0;
}

void lr_model_free(struct lr_model *m)
{
    free(m->w);
    m->w = NULL;
}

size_t lr_model_nbytes(const struct lr_model *m)
{
    return LR_HEADER_NBYTES + 8 * ndoubles(m->d, m->mem) + 8;
}

void lr_model_encode(const struct lr_model *m, unsigned char *b)
{
    size_t n = lr_model_nbytes(m), k = ndoubles(m->d, m->mem);
    memcpy(b, LR_MAGIC, 8);
    ex_put32(b + 8, LR_FORMAT);
    ex_put32(b + 12, m->solver);
    ex_put32(b + 16, m->d);
    ex_put32(b + 20, m->mem);
    ex_put32(b + 24, m->flags);
    ex_put32(b + 28, m->hist_len);
    ex_put32(b + 32, m->hist_head);
    ex_put32(b + 36, 0);
    ex_put64(b + 40, m->iteration);
    ex_put64(b + 48, m->evals);
    ex_put64(b + 56, ex_dbits(m->lambda));
    ex_put64(b + 64, ex_dbits(m->rho));
    ex_put64(b + 72, ex_dbits(m->f));
    ex_put64(b + 80, ex_dbits(m->resid));
    ex_put64(b + 88, 0);
    unsigned char *p = b + LR_HEADER_NBYTES;
    for (size_t i = 0; i < k; i++, p += 8)
        ex_put64(p, ex_dbits(m->w[i]));
    ex_put64(p, rally_digest64(b, n - 8));
}

int lr_model_decode(const unsigned char *b, size_t n, struct lr_model *m, const char **why)
{
    if (n < LR_HEADER_NBYTES + 8 || memcmp(b, LR_MAGIC, 8) != 0) {
        *why = "not a rally-linear model (bad magic or too short)";
        return -1;
    }
    if (ex_get32(b + 8) != LR_FORMAT) {
        *why = "an unknown model format version";
        return -1;
    }
    uint32_t solver = ex_get32(b + 12), d = ex_get32(b + 16), mem = ex_get32(b + 20);
    struct lr_model t = {.d = d, .mem = mem};
    if (solver > LR_SGD || d == 0 || d > LR_MAX_FEATURES || mem > LR_MAX_MEMORY ||
        n != lr_model_nbytes(&t)) {
        *why = "a size that does not match its feature count and memory";
        return -1;
    }
    if (ex_get64(b + n - 8) != rally_digest64(b, n - 8)) {
        *why = "a checksum mismatch (the file is corrupt)";
        return -1;
    }
    if (lr_model_alloc(&t, (int)solver, d, mem) != 0) {
        *why = "out of memory";
        return -1;
    }
    t.flags = ex_get32(b + 24);
    t.hist_len = ex_get32(b + 28);
    t.hist_head = ex_get32(b + 32);
    t.iteration = ex_get64(b + 40);
    t.evals = ex_get64(b + 48);
    t.lambda = ex_bitsd(ex_get64(b + 56));
    t.rho = ex_bitsd(ex_get64(b + 64));
    t.f = ex_bitsd(ex_get64(b + 72));
    t.resid = ex_bitsd(ex_get64(b + 80));
    if (t.hist_len > mem || (mem > 0 && t.hist_head >= mem)) {
        lr_model_free(&t);
        *why = "a history that does not fit its memory";
        return -1;
    }
    size_t k = ndoubles(d, mem);
    for (size_t i = 0; i < k; i++)
        t.w[i] = ex_bitsd(ex_get64(b + LR_HEADER_NBYTES + 8 * i));
    *m = t;
    return 0;
}

/* --- JSON --------------------------------------------------------------------- */

void lr_model_json(FILE *f, const struct lr_model *m, uint64_t digest)
{
    fprintf(f,
            "{\"format\": \"rally-linear\", \"format_version\": %u, \"solver\": \"%s\", "
            "\"features\": %" PRIu32 ", \"intercept\": %s, \"lambda\": %.17g, "
            "\"iteration\": %" PRIu64 ", \"evaluations\": %" PRIu64 ", \"converged\": %s, "
            "\"objective\": %.17g, \"model_digest\": \"%016" PRIx64 "\",\n \"bias\": %.17g,\n"
            " \"weights\": [",
            LR_FORMAT, m->solver == LR_ADMM ? "admm" : m->solver == LR_SGD ? "sgd" : "lbfgs", m->d,
            m->flags & LR_INTERCEPT ? "true" : "false", m->lambda, m->iteration, m->evals,
            m->flags & LR_CONVERGED ? "true" : "false", m->f, digest, m->w[m->d]);
    for (uint32_t i = 0; i < m->d; i++)
        fprintf(f, "%s%.17g", i == 0 ? "" : i % 8 ? ", " : ",\n  ", m->w[i]);
    fprintf(f, "]}\n");
}

/* --show: prints the model file at path as JSON.  The exit status. */
int lr_model_show(const char *path)
{
    unsigned char *b = NULL;
    size_t n = 0;
    struct lr_model m = {0};
    const char *why = NULL;
    char err[4200];
    int status = LR_EXIT_RALLY;
    if (ex_slurp(path, SIZE_MAX, &b, &n, err, sizeof err) != 0) {
        fprintf(stderr, "rally-linear: %s\n", err);
        goto out;
    }
    if (lr_model_decode(b, n, &m, &why) != 0) {
        fprintf(stderr, "rally-linear: %s: %s\n", path, why);
        goto out;
    }
    lr_model_json(stdout, &m, rally_digest64(b, n));
    status = LR_EXIT_OK;
out:
    lr_model_free(&m);
    free(b);
    return status;
}
