/*
 * model.c — how a k-means model is stored and shown: its bytes (the
 * checkpoint, the --model-out file and what model_digest hashes), the durable
 * file write, the centroid CSV files of --init-in and --init-out, and the
 * JSON of --json and --show.
 *
 * The bytes (README.md, "Model format"), little-endian and fixed width:
 * magic "RALLYKM\0", format version, k, d, flags, iteration, seed, the RNG
 * state, the objective, 8 reserved bytes, the k x d centroids, and the
 * rally_digest64 of everything before it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kmeans.h"

#define KM_MAGIC "RALLYKM"   /* 7 bytes and a NUL: the model's first 8 bytes */
#define KM_FORMAT 1u         /* the model format version */
#define KM_HEADER_NBYTES 88u /* the fixed part before the centroids */

/* --- the model's bytes ---------------------------------------------------------- */

size_t km_model_nbytes(uint32_t k, uint32_t d)
{
    return KM_HEADER_NBYTES + (size_t)k * d * 8 + 8;
}

void km_model_encode(const struct km_model *m, unsigned char *b)
{
    size_t n = km_model_nbytes(m->k, m->d);
    unsigned char *p = b;
    memcpy(p, KM_MAGIC, 8);
    ex_put32(p + 8, KM_FORMAT);
    ex_put32(p + 12, m->k);
    ex_put32(p + 16, m->d);
    ex_put32(p + 20, m->flags);
    ex_put64(p + 24, m->iteration);
    ex_put64(p + 32, m->seed);
    for (int i = 0; i < 4; i++)
        ex_put64(p + 40 + 8 * i, m->rng[i]);
    ex_put64(p + 72, ex_dbits(m->objective));
    ex_put64(p + 80, 0); /* reserved */
    p += KM_HEADER_NBYTES;
    for (size_t i = 0; i < (size_t)m->k * m->d; i++, p += 8)
        ex_put64(p, ex_dbits(m->c[i]));
    ex_put64(p, rally_digest64(b, n - 8));
}

int km_model_decode(const unsigned char *b, size_t n, struct km_model *m, const char **why)
{
    if (n < KM_HEADER_NBYTES + 8 || memcmp(b, KM_MAGIC, 8) != 0) {
        *why = "not a rally-kmeans model (bad magic or too short)";
        return -1;
    }
    if (ex_get32(b + 8) != KM_FORMAT) {
        *why = "an unknown model format version";
        return -1;
    }
    uint32_t k = ex_get32(b + 12), d = ex_get32(b + 16);
    if (k == 0 || k > KM_MAX_K || d == 0 || d > KM_MAX_FEATURES || n != km_model_nbytes(k, d)) {
        *why = "a size that does not match its k and feature count";
        return -1;
    }
    if (ex_get64(b + n - 8) != rally_digest64(b, n - 8)) {
        *why = "a checksum mismatch (the file is corrupt)";
        return -1;
    }
    double *c = malloc((size_t)k * d * sizeof *c);
    if (c == NULL) {
        *why = "out of memory";
        return -1;
    }
    for (size_t i = 0; i < (size_t)k * d; i++)
        c[i] = ex_bitsd(ex_get64(b + KM_HEADER_NBYTES + 8 * i));
    m->k = k;
    m->d = d;
    m->flags = ex_get32(b + 20);
    m->iteration = ex_get64(b + 24);
    m->seed = ex_get64(b + 32);
    for (int i = 0; i < 4; i++)
        m->rng[i] = ex_get64(b + 40 + 8 * i);
    m->objective = ex_bitsd(ex_get64(b + 72));
    m->c = c;
    return 0;
}

/* --- JSON --------------------------------------------------------------------- */

void km_model_json(FILE *f, const struct km_model *m, uint64_t digest)
{
    fprintf(f,
            "{\"format\": \"rally-kmeans\", \"format_version\": %u, \"k\": %" PRIu32
            ", \"features\": %" PRIu32 ", \"iteration\": %" PRIu64 ", \"converged\": %s, "
            "\"seed\": %" PRIu64 ", \"objective\": ",
            KM_FORMAT, m->k, m->d, m->iteration, m->flags & KM_CONVERGED ? "true" : "false",
            m->seed);
    if (m->flags & KM_HAS_OBJECTIVE)
        fprintf(f, "%.17g", m->objective);
    else
        fprintf(f, "null");
    fprintf(f, ", \"model_digest\": \"%016" PRIx64 "\",\n \"centroids\": [", digest);
    for (uint32_t i = 0; i < m->k; i++) {
        fprintf(f, "%s\n  [", i ? "," : "");
        for (uint32_t j = 0; j < m->d; j++)
            fprintf(f, "%s%.17g", j ? ", " : "", m->c[(size_t)i * m->d + j]);
        fprintf(f, "]");
    }
    fprintf(f, "\n ]}\n");
}

/* --show: prints the model file at path as JSON.  The exit status. */
int km_model_show(const char *path)
{
    unsigned char *b = NULL;
    size_t n = 0;
    struct km_model m = {0};
    const char *why = NULL;
    char err[4200];
    int status = KM_EXIT_RALLY;
    if (ex_slurp(path, km_model_nbytes(KM_MAX_K, KM_MAX_FEATURES), &b, &n, err, sizeof err) != 0) {
        fprintf(stderr, "rally-kmeans: %s\n", err);
        goto out;
    }
    if (km_model_decode(b, n, &m, &why) != 0) {
        fprintf(stderr, "rally-kmeans: %s: %s\n", path, why);
        goto out;
    }
    km_model_json(stdout, &m, rally_digest64(b, n));
    status = KM_EXIT_OK;
out:
    free(m.c);
    free(b);
    return status;
}

/* --- centroid files (CSV) --------------------------------------------------------- */

int km_centroids_read(const char *path, double **c, uint32_t *rows, uint32_t *cols, char *err,
                      size_t cap)
{
    rally_data_opts_t *o = NULL;
    rally_dataset_t *ds = NULL;
    double *v = NULL;
    int rc = -1;
    if (rally_data_opts_new(&o) != RALLY_OK) {
        snprintf(err, cap, "out of memory");
        goto out;
    }
    /* Plain CSV whatever the file's name: commas, no header, no label; and
     * room for a line of KM_MAX_FEATURES numbers at %.17g (the default line
     * limit is 16 MiB). */
    if (rally_data_opts_set(o, "format", "csv", err, cap) != RALLY_OK ||
        rally_data_opts_set(o, "csv_delimiter", "comma", err, cap) != RALLY_OK ||
        rally_data_opts_set(o, "max_line_bytes", "1073741824", err, cap) != RALLY_OK)
        goto out;
    if (rally_data_read(path, o, 0, 1, &ds, err, cap) != RALLY_OK)
        goto out;
    uint64_t n = rally_data_num_rows(ds), d = rally_data_num_features(ds);
    if (n == 0 || d == 0) {
        snprintf(err, cap, "%s: no centroids in the file", path);
        goto out;
    }
    if (n > KM_MAX_K || d > KM_MAX_FEATURES) {
        snprintf(err, cap, "%s: %" PRIu64 " centroids of %" PRIu64 " numbers; at most %u of %u",
                 path, n, d, KM_MAX_K, KM_MAX_FEATURES);
        goto out;
    }
    const uint64_t *rp;
    const uint32_t *idx;
    const float *val;
    rally_data_csr(ds, &rp, &idx, &val);
    if ((v = malloc(n * d * sizeof *v)) == NULL) {
        snprintf(err, cap, "out of memory");
        goto out;
    }
    for (uint64_t i = 0; i < n; i++) {
        if (rp[i + 1] - rp[i] != d) { /* an empty field: the reader's missing value */
            snprintf(err, cap,
                     "%s: centroid %" PRIu64 " (the line at byte %" PRIu64 ") has an empty field",
                     path, i + 1, rally_data_row_offset(ds, i));
            goto out;
        }
        for (uint64_t e = rp[i]; e < rp[i + 1]; e++)
            v[i * d + idx[e]] = val[e];
    }
    *c = v;
    v = NULL;
    *rows = (uint32_t)n;
    *cols = (uint32_t)d;
    rc = 0;
out:
    free(v);
    rally_data_free(ds);
    rally_data_opts_free(o);
    return rc;
}

int km_centroids_write(const char *path, const struct km_model *m, char *err, size_t cap)
{
    size_t room = (size_t)m->k * m->d * 26 + m->k + 1, n = 0;
    char *b = malloc(room);
    if (b == NULL) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    for (uint32_t i = 0; i < m->k; i++)
        for (uint32_t j = 0; j < m->d; j++)
            n += (size_t)snprintf(b + n, room - n, "%.17g%c", m->c[(size_t)i * m->d + j],
                                  j + 1 == m->d ? '\n' : ',');
    int rc = ex_write_file(path, b, n, err, cap);
    free(b);
    return rc;
}
