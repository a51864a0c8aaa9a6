/*
 * model.c — how a rally-linear model is stored and shown: its bytes (the
 * checkpoint, the --model-out file and what model_digest hashes), the durable
 * file write, and the JSON of --json and --show.
 *
 * The bytes, little-endian and fixed width: magic "RALLYLR\0", format
 * version, solver, d, mem, flags, hist_len, hist_head, 4 reserved bytes,
 * iteration, evals, lambda, rho, f, resid, 8 reserved bytes (96 in all);
 * then with n = d + 1 the vectors w[n], g[n], sy[mem], s[mem][n], y[mem][n]
 * as IEEE doubles; and an FNV-1a 64 of everything before it.
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

uint64_t lr_fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3u;
    return h;
}

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
    put32(b + 8, LR_FORMAT);
    put32(b + 12, m->solver);
    put32(b + 16, m->d);
    put32(b + 20, m->mem);
    put32(b + 24, m->flags);
    put32(b + 28, m->hist_len);
    put32(b + 32, m->hist_head);
    put32(b + 36, 0);
    put64(b + 40, m->iteration);
    put64(b + 48, m->evals);
    put64(b + 56, dbits(m->lambda));
    put64(b + 64, dbits(m->rho));
    put64(b + 72, dbits(m->f));
    put64(b + 80, dbits(m->resid));
    put64(b + 88, 0);
    unsigned char *p = b + LR_HEADER_NBYTES;
    for (size_t i = 0; i < k; i++, p += 8)
        put64(p, dbits(m->w[i]));
    put64(p, lr_fnv1a(b, n - 8));
}

int lr_model_decode(const unsigned char *b, size_t n, struct lr_model *m, const char **why)
{
    if (n < LR_HEADER_NBYTES + 8 || memcmp(b, LR_MAGIC, 8) != 0) {
        *why = "not a rally-linear model (bad magic or too short)";
        return -1;
    }
    if (get32(b + 8) != LR_FORMAT) {
        *why = "an unknown model format version";
        return -1;
    }
    uint32_t solver = get32(b + 12), d = get32(b + 16), mem = get32(b + 20);
    struct lr_model t = {.d = d, .mem = mem};
    if (solver > LR_ADMM || d == 0 || d > LR_MAX_FEATURES || mem > LR_MAX_MEMORY ||
        n != lr_model_nbytes(&t)) {
        *why = "a size that does not match its feature count and memory";
        return -1;
    }
    if (get64(b + n - 8) != lr_fnv1a(b, n - 8)) {
        *why = "a checksum mismatch (the file is corrupt)";
        return -1;
    }
    if (lr_model_alloc(&t, (int)solver, d, mem) != 0) {
        *why = "out of memory";
        return -1;
    }
    t.flags = get32(b + 24);
    t.hist_len = get32(b + 28);
    t.hist_head = get32(b + 32);
    t.iteration = get64(b + 40);
    t.evals = get64(b + 48);
    t.lambda = bitsd(get64(b + 56));
    t.rho = bitsd(get64(b + 64));
    t.f = bitsd(get64(b + 72));
    t.resid = bitsd(get64(b + 80));
    if (t.hist_len > mem || (mem > 0 && t.hist_head >= mem)) {
        lr_model_free(&t);
        *why = "a history that does not fit its memory";
        return -1;
    }
    size_t k = ndoubles(d, mem);
    for (size_t i = 0; i < k; i++)
        t.w[i] = bitsd(get64(b + LR_HEADER_NBYTES + 8 * i));
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
            LR_FORMAT, m->solver == LR_ADMM ? "admm" : "lbfgs", m->d,
            m->flags & LR_INTERCEPT ? "true" : "false", m->lambda, m->iteration, m->evals,
            m->flags & LR_CONVERGED ? "true" : "false", m->f, digest, m->w[m->d]);
    for (uint32_t i = 0; i < m->d; i++)
        fprintf(f, "%s%.17g", i == 0 ? "" : i % 8 ? ", " : ",\n  ", m->w[i]);
    fprintf(f, "]}\n");
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

int lr_model_show(const char *path)
{
    unsigned char *b = NULL;
    size_t n = 0;
    struct lr_model m = {0};
    const char *why = NULL;
    char err[4200];
    int status = LR_EXIT_RALLY;
    if (slurp(path, &b, &n, err, sizeof err) != 0) {
        fprintf(stderr, "rally-linear: %s\n", err);
        goto out;
    }
    if (lr_model_decode(b, n, &m, &why) != 0) {
        fprintf(stderr, "rally-linear: %s: %s\n", path, why);
        goto out;
    }
    lr_model_json(stdout, &m, lr_fnv1a(b, n));
    status = LR_EXIT_OK;
out:
    lr_model_free(&m);
    free(b);
    return status;
}

/* --- files -------------------------------------------------------------------- */

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

static int sync_dir(const char *path)
{
    char dir[4096];
    dir_of(path, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    if (rc != 0 && errno == EINVAL)
        rc = 0;
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int lr_write_file(const char *path, const void *buf, size_t n, char *err, size_t cap)
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
