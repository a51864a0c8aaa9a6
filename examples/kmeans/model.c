/*
 * model.c — how a k-means model is stored and shown: its bytes (the
 * checkpoint, the --model-out file and what model_digest hashes), the durable
 * file write, the centroid CSV files of --init-in and --init-out, and the
 * JSON of --json and --show.
 *
 * The bytes (README.md, "Model format"), little-endian and fixed width:
 * magic "RALLYKM\0", format version, k, d, flags, iteration, seed, the RNG
 * state, the objective, 8 reserved bytes, the k x d centroids, and an FNV-1a
 * 64 of everything before it.
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

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t dbits(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static double bitsd(uint64_t b)
{
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

uint64_t km_fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3u;
    return h;
}

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
    put32(p + 8, KM_FORMAT);
    put32(p + 12, m->k);
    put32(p + 16, m->d);
    put32(p + 20, m->flags);
    put64(p + 24, m->iteration);
    put64(p + 32, m->seed);
    for (int i = 0; i < 4; i++)
        put64(p + 40 + 8 * i, m->rng[i]);
    put64(p + 72, dbits(m->objective));
    put64(p + 80, 0); /* reserved */
    p += KM_HEADER_NBYTES;
    for (size_t i = 0; i < (size_t)m->k * m->d; i++, p += 8)
        put64(p, dbits(m->c[i]));
    put64(p, km_fnv1a(b, n - 8));
}

int km_model_decode(const unsigned char *b, size_t n, struct km_model *m, const char **why)
{
    if (n < KM_HEADER_NBYTES + 8 || memcmp(b, KM_MAGIC, 8) != 0) {
        *why = "not a rally-kmeans model (bad magic or too short)";
        return -1;
    }
    if (get32(b + 8) != KM_FORMAT) {
        *why = "an unknown model format version";
        return -1;
    }
    uint32_t k = get32(b + 12), d = get32(b + 16);
    if (k == 0 || k > KM_MAX_K || d == 0 || d > KM_MAX_FEATURES || n != km_model_nbytes(k, d)) {
        *why = "a size that does not match its k and feature count";
        return -1;
    }
    if (get64(b + n - 8) != km_fnv1a(b, n - 8)) {
        *why = "a checksum mismatch (the file is corrupt)";
        return -1;
    }
    double *c = malloc((size_t)k * d * sizeof *c);
    if (c == NULL) {
        *why = "out of memory";
        return -1;
    }
    for (size_t i = 0; i < (size_t)k * d; i++)
        c[i] = bitsd(get64(b + KM_HEADER_NBYTES + 8 * i));
    m->k = k;
    m->d = d;
    m->flags = get32(b + 20);
    m->iteration = get64(b + 24);
    m->seed = get64(b + 32);
    for (int i = 0; i < 4; i++)
        m->rng[i] = get64(b + 40 + 8 * i);
    m->objective = bitsd(get64(b + 72));
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

/* Reads the whole file at path into a new buffer.  0, or -1 with the reason. */
static int slurp(const char *path, unsigned char **out, size_t *nbytes, char *err, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, cap, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    size_t room = (size_t)1 << 16, n = 0;
    unsigned char *b = NULL;
    for (;;) {
        unsigned char *nb = realloc(b, room);
        if (nb == NULL) {
            snprintf(err, cap, "out of memory");
            goto fail;
        }
        b = nb;
        n += fread(b + n, 1, room - n, f);
        if (n < room)
            break;
        if (room > km_model_nbytes(KM_MAX_K, KM_MAX_FEATURES)) {
            snprintf(err, cap, "%s: larger than any model", path);
            goto fail;
        }
        room *= 2;
    }
    if (ferror(f)) {
        snprintf(err, cap, "%s: a read error", path);
        goto fail;
    }
    fclose(f);
    *out = b;
    *nbytes = n;
    return 0;
fail:
    free(b);
    fclose(f);
    return -1;
}

int km_model_show(const char *path)
{
    unsigned char *b = NULL;
    size_t n = 0;
    struct km_model m = {0};
    const char *why = NULL;
    char err[4200];
    int status = KM_EXIT_RALLY;
    if (slurp(path, &b, &n, err, sizeof err) != 0) {
        fprintf(stderr, "rally-kmeans: %s\n", err);
        goto out;
    }
    if (km_model_decode(b, n, &m, &why) != 0) {
        fprintf(stderr, "rally-kmeans: %s: %s\n", path, why);
        goto out;
    }
    km_model_json(stdout, &m, km_fnv1a(b, n));
    status = KM_EXIT_OK;
out:
    free(m.c);
    free(b);
    return status;
}

/* --- files -------------------------------------------------------------------- */

/* The directory that holds path ("." when path names none). */
static void dir_of(const char *path, char *dir, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(dir, cap, ".");
    else if (slash == path)
        snprintf(dir, cap, "/");
    else
        snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

/* Writes n bytes to fd, and fsyncs it.  0, or -1 with errno set. */
static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return fsync(fd);
}

/* The rename is durable only once the directory's entry is on disk too. */
static int sync_dir(const char *path)
{
    char dir[4096];
    dir_of(path, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    if (rc != 0 && errno == EINVAL) /* a file system that cannot sync directories */
        rc = 0;
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int km_write_file(const char *path, const void *buf, size_t n, char *err, size_t cap)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp) {
        snprintf(err, cap, "%.200s...: the path is too long", path);
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        snprintf(err, cap, "%s: cannot open for writing: %s", tmp, strerror(errno));
        return -1;
    }
    int ok = write_all(fd, buf, n) == 0;
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        e = errno;
    }
    if (!ok) {
        snprintf(err, cap, "%s: cannot write: %s", path, strerror(e));
        remove(tmp);
        return -1;
    }
    if (sync_dir(path) != 0) {
        snprintf(err, cap, "%s: written, but its directory cannot be synced: %s", path,
                 strerror(errno));
        return -1;
    }
    return 0;
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
    int rc = km_write_file(path, b, n, err, cap);
    free(b);
    return rc;
}
