/*
 * rally-kmeans — distributed k-means (Lloyd) over rally, recoverable without
 * a global restart.  examples/kmeans/README.md explains the flags, the model
 * format and how initialisation and recovery work; in short:
 *
 *   rally-run -n 4 rally-kmeans --data blobs.csv --data-opt csv_label=0 -k 8
 *
 * Every worker reads its shard (include/rally/data.h) and logs the shard's
 * fingerprint.  Before rally_load_checkpoint (bootstrap collectives, which a
 * restarted worker replays from the survivors): the feature count (MAX, LIBSVM
 * shards may differ), an error flag (so one bad shard stops every worker
 * cleanly), and every shard's row count (allgather).  On a fresh start
 * (version 0) the initial centroids come from k-means++ (or --init-in) and
 * are checkpointed as iteration 0, so a recovery never redoes them.  Each
 * Lloyd iteration is one SUM allreduce of [sums (k x d) | counts (k) |
 * objective] and one checkpoint of the whole model: centroids, iteration
 * number, converged flag, RNG state, last objective.
 *
 * Output (rank 0 unless said): every rank "shard R fingerprint HEX rows N pid
 * P"; a restarted rank "rank R restarted: resuming after iteration T"; one
 * line per iteration "iteration T objective X time S s"; last
 * "result: model_digest=HEX objective=X" (no timing in it).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rally/data.h"
#include "rally/rally.h"

#define KM_MAGIC "RALLYKM"   /* 7 bytes and a NUL: the model's first 8 bytes */
#define KM_FORMAT 1u         /* the model format version */
#define KM_HEADER_NBYTES 88u /* the fixed part before the centroids */
#define KM_MAX_K 65536u
#define KM_MAX_FEATURES 1000000u

enum { KM_CONVERGED = 1u, KM_HAS_OBJECTIVE = 2u };

/* The global model: everything the continuation depends on. */
struct model {
    uint32_t k, d, flags;
    uint64_t iteration; /* Lloyd iterations done; 0 = just initialised */
    uint64_t seed;
    uint64_t rng[4];  /* xoshiro256** state after initialisation */
    double objective; /* of the last assignment (to the centroids before the last update) */
    double *c;        /* k x d, row-major */
};

struct opts {
    const char *data, *init_in, *init_out, *model_out;
    uint32_t k;
    uint64_t iters, seed;
    long pause_ms;
    int fixed, json, quiet;
};

/* --- small helpers ----------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int s)
{
    return (x << s) | (x >> (64 - s));
}

static uint64_t rng_next(uint64_t s[4])
{
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

static double rng_uniform(uint64_t s[4]) /* [0, 1) */
{
    return (double)(rng_next(s) >> 11) * 0x1p-53;
}

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3u;
    return h;
}

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

/* --- the model's bytes (README.md, "Model format") ---------------------------- */

static size_t model_nbytes(uint32_t k, uint32_t d)
{
    return KM_HEADER_NBYTES + (size_t)k * d * 8 + 8;
}

/* Serialises m into a new buffer of model_nbytes(m->k, m->d) bytes. */
static unsigned char *model_encode(const struct model *m, size_t *nbytes)
{
    size_t n = model_nbytes(m->k, m->d);
    unsigned char *b = malloc(n), *p = b;
    if (b == NULL)
        return NULL;
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
    put64(p, fnv1a(b, n - 8));
    *nbytes = n;
    return b;
}

/* Parses a model; returns NULL (and a reason in why) when the bytes are not
 * one. */
static int model_decode(const unsigned char *b, size_t n, struct model *m, const char **why)
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
    if (k == 0 || k > KM_MAX_K || d == 0 || d > KM_MAX_FEATURES || n != model_nbytes(k, d)) {
        *why = "a size that does not match its k and feature count";
        return -1;
    }
    if (get64(b + n - 8) != fnv1a(b, n - 8)) {
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

static void model_json(FILE *f, const struct model *m, uint64_t digest)
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

/* Writes bytes to path through a temporary file, fsync'd and renamed. */
static int write_file(const char *path, const void *buf, size_t n, char *err, size_t cap)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (f == NULL) {
        snprintf(err, cap, "%s: cannot open for writing: %s", tmp, strerror(errno));
        return -1;
    }
    int ok = fwrite(buf, 1, n, f) == n && fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, cap, "%s: cannot write: %s", path, strerror(errno));
        remove(tmp);
        return -1;
    }
    return 0;
}

static int show(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "rally-kmeans: %s: cannot open: %s\n", path, strerror(errno));
        return 1;
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *b = malloc(cap);
    for (;;) {
        if (b == NULL) {
            fclose(f);
            fprintf(stderr, "rally-kmeans: out of memory\n");
            return 1;
        }
        n += fread(b + n, 1, cap - n, f);
        if (n < cap || cap > ((size_t)1 << 36))
            break;
        unsigned char *nb = realloc(b, cap *= 2);
        if (nb == NULL)
            free(b);
        b = nb;
    }
    int bad = ferror(f);
    fclose(f);
    struct model m;
    const char *why = "a read error";
    if (bad || model_decode(b, n, &m, &why) != 0) {
        fprintf(stderr, "rally-kmeans: %s: %s\n", path, why);
        free(b);
        return 1;
    }
    model_json(stdout, &m, fnv1a(b, n));
    free(m.c);
    free(b);
    return 0;
}

/* --- command line ------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: rally-run -n N rally-kmeans [options] --data FILE [rally_key=value...]\n"
               "       rally-kmeans --show MODEL\n"
               "Distributed k-means (k-means++ initialisation, Lloyd iterations) over rally;\n"
               "a worker that dies is restarted and recovered without restarting the job.\n"
               "\n"
               "  --data FILE          LIBSVM or CSV data (each worker reads its shard)\n"
               "  --data-opt KEY=VAL   a data reader option, repeatable (docs/data.md), e.g.\n"
               "                       csv_label=0, csv_header=yes, format=libsvm, partition=hash\n"
               "  -k, --clusters K     number of clusters (default 8)\n"
               "  --iters N            at most N Lloyd iterations (default 100); the job stops\n"
               "                       earlier when the centroids stop changing\n"
               "  --fixed-iters        run all N iterations even after convergence (benchmarks)\n"
               "  --seed S             seed of the k-means++ initialisation (default 1)\n"
               "  --init-in FILE       start from these centroids (CSV: k lines of d numbers)\n"
               "                       instead of k-means++\n"
               "  --init-out FILE      write the initial centroids (CSV, %%.17g) there\n"
               "  --model-out FILE     save the final model (binary; README.md describes it)\n"
               "  --json               print the final model as JSON before the result line\n"
               "  --show MODEL         print a saved model as JSON and exit (no job)\n"
               "  --pause-ms MS        sleep MS ms per iteration (demos: time to kill a worker)\n"
               "  --quiet              no per-iteration lines\n"
               "  -h, --help           this text\n"
               "\n"
               "rally_key=value arguments and RALLY_* variables configure rally (docs/config.md).\n"
               "The last line is 'result: model_digest=<hex> objective=<%%.17g>', where the\n"
               "objective is the sum over all rows of the squared distance to the nearest final\n"
               "centroid.  Exit status: 0 on success, 1 on a rally error, 2 on bad input.\n");
}

static int whole(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = s[0] == '-' ? 0 : strtoull(s, &end, 10);
    if (s[0] == '-' || s[0] == '\0' || *end != '\0' || errno != 0 || v < lo || v > hi) {
        fprintf(stderr,
                "rally-kmeans: %s '%s' is not a whole number in [%" PRIu64 ", %" PRIu64 "]\n", opt,
                s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* Parses argv (rally_* already removed).  Returns 0, or 1 for --help / --show
 * (done), or -1 on a usage error (printed). */
static int parse_args(int argc, char **argv, struct opts *o, rally_data_opts_t *dopts)
{
    static const struct option longopts[] = {{"data", required_argument, 0, 'd'},
                                             {"data-opt", required_argument, 0, 'D'},
                                             {"clusters", required_argument, 0, 'k'},
                                             {"iters", required_argument, 0, 'i'},
                                             {"fixed-iters", no_argument, 0, 'F'},
                                             {"seed", required_argument, 0, 's'},
                                             {"init-in", required_argument, 0, 'I'},
                                             {"init-out", required_argument, 0, 'O'},
                                             {"model-out", required_argument, 0, 'm'},
                                             {"json", no_argument, 0, 'j'},
                                             {"show", required_argument, 0, 'S'},
                                             {"pause-ms", required_argument, 0, 'p'},
                                             {"quiet", no_argument, 0, 'q'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    uint64_t v;
    char err[512];
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "k:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd':
            o->data = optarg;
            break;
        case 'D':
            if (rally_data_opts_parse(dopts, optarg, err, sizeof err) != RALLY_OK) {
                fprintf(stderr, "rally-kmeans: --data-opt %s: %s\n", optarg, err);
                return -1;
            }
            break;
        case 'k':
            if (whole("-k", optarg, 1, KM_MAX_K, &v) != 0)
                return -1;
            o->k = (uint32_t)v;
            break;
        case 'i':
            if (whole("--iters", optarg, 0, 1000000000, &o->iters) != 0)
                return -1;
            break;
        case 'F':
            o->fixed = 1;
            break;
        case 's':
            if (whole("--seed", optarg, 0, UINT64_MAX, &o->seed) != 0)
                return -1;
            break;
        case 'I':
            o->init_in = optarg;
            break;
        case 'O':
            o->init_out = optarg;
            break;
        case 'm':
            o->model_out = optarg;
            break;
        case 'j':
            o->json = 1;
            break;
        case 'S': /* normally handled before rally_init */
            return show(optarg) == 0 ? 1 : -1;
        case 'p':
            if (whole("--pause-ms", optarg, 0, 3600000, &v) != 0)
                return -1;
            o->pause_ms = (long)v;
            break;
        case 'q':
            o->quiet = 1;
            break;
        case 'h':
            usage(stdout);
            return 1;
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "rally-kmeans: unexpected argument '%s' (see --help)\n", argv[optind]);
        return -1;
    }
    if (o->data == NULL) {
        fprintf(stderr, "rally-kmeans: --data FILE is required (see --help)\n");
        return -1;
    }
    return 0;
}

/* Reads k lines of numbers into a new array; *cols gets the column count of
 * line 1 (every line must have it). */
static double *read_centroids(const char *path, uint32_t *rows, uint32_t *cols, char *err,
                              size_t cap)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, cap, "%s: cannot open for reading: %s", path, strerror(errno));
        return NULL;
    }
    size_t n = 0, room = 0;
    double *v = NULL;
    uint32_t nrows = 0, ncols = 0;
    char *line = NULL;
    size_t linecap = 0;
    while (getline(&line, &linecap, f) > 0) {
        char *p = line, *end;
        uint32_t k = 0;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\n' || *p == '\0' || *p == '\r')
            continue;
        for (;;) {
            errno = 0;
            double x = strtod(p, &end);
            if (end == p || errno == ERANGE || !isfinite(x)) {
                snprintf(err, cap, "%s:%u:%ld: expected a finite number", path, nrows + 1,
                         (long)(p - line) + 1);
                goto fail;
            }
            if (n == room) {
                room = room ? room * 2 : 1024;
                double *nv = realloc(v, room * sizeof *v);
                if (nv == NULL) {
                    snprintf(err, cap, "out of memory");
                    goto fail;
                }
                v = nv;
            }
            v[n++] = x;
            k++;
            p = end;
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p != ',')
                break;
            p++;
        }
        if (*p != '\n' && *p != '\0' && *p != '\r') {
            snprintf(err, cap, "%s:%u:%ld: expected ',' or the end of the line", path, nrows + 1,
                     (long)(p - line) + 1);
            goto fail;
        }
        if (nrows > 0 && k != ncols) {
            snprintf(err, cap, "%s:%u: %u numbers, but line 1 has %u", path, nrows + 1, k, ncols);
            goto fail;
        }
        ncols = k;
        nrows++;
    }
    if (nrows == 0) {
        snprintf(err, cap, "%s: no centroids in the file", path);
        goto fail;
    }
    free(line);
    fclose(f);
    *rows = nrows;
    *cols = ncols;
    return v;
fail:
    free(line);
    free(v);
    fclose(f);
    return NULL;
}

static int write_centroids(const char *path, const struct model *m, char *err, size_t cap)
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
    int rc = write_file(path, b, n, err, cap);
    free(b);
    return rc;
}

/* --- the job ---------------------------------------------------------------- */

struct job {
    rally_t *r;
    int rank, world;
    uint64_t rows;        /* this shard's */
    uint32_t d;           /* features, the same everywhere */
    float *x;             /* rows x d, dense */
    uint64_t *shard_rows; /* [world] */
};

static int fail(struct job *j, const char *what, int rc)
{
    fprintf(stderr, "rally-kmeans: rank %d: %s failed: %s (%s)\n", j->rank, what,
            rally_errmsg(j->r), rally_strstatus(rc));
    return 1;
}

/* dist[c] = squared distance from x to centroid c, for all c; ct is the
 * centroids transposed (d x k) so that the inner loop runs over centroids
 * (vectorisable without reordering any sum: each dist[c] adds its d terms in
 * feature order). */
static void distances(const float *x, uint32_t d, const double *ct, uint32_t k, double *dist)
{
    for (uint32_t c = 0; c < k; c++)
        dist[c] = 0;
    for (uint32_t f = 0; f < d; f++) {
        const double xf = x[f], *row = ct + (size_t)f * k;
        for (uint32_t c = 0; c < k; c++) {
            double t = xf - row[c];
            dist[c] += t * t;
        }
    }
}

static double sqdist(const float *x, const double *c, uint32_t d)
{
    double s = 0;
    for (uint32_t f = 0; f < d; f++) {
        double t = (double)x[f] - c[f];
        s += t * t;
    }
    return s;
}

/* Sends the coordinates of global row g to every rank: its owner fills them,
 * the others add zeros (exact), one SUM allreduce. */
static int share_row(struct job *j, uint64_t g_owner_rank, uint64_t local_row, double *out)
{
    for (uint32_t f = 0; f < j->d; f++)
        out[f] = (uint64_t)j->rank == g_owner_rank ? (double)j->x[local_row * j->d + f] : 0.0;
    return rally_allreduce(j->r, out, j->d, RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
}

/* k-means++ (Arthur and Vassilvitskii): the first centroid is a row drawn
 * uniformly; each next one a row drawn with probability D(x)^2 / sum D^2,
 * where D(x) is the distance to the nearest centroid chosen so far.  Every
 * rank draws the same numbers from the same RNG, and the sums it needs are
 * the per-shard sums gathered in rank order, so every rank picks the same
 * row.  2k - 1 collectives. */
static int kmeanspp(struct job *j, struct model *m)
{
    int rc = RALLY_OK;
    uint64_t total_rows = 0;
    for (int r = 0; r < j->world; r++)
        total_rows += j->shard_rows[r];
    double *d2 = malloc((j->rows ? j->rows : 1) * sizeof *d2);
    double *sums = malloc((size_t)j->world * sizeof *sums);
    if (d2 == NULL || sums == NULL) {
        fprintf(stderr, "rally-kmeans: out of memory\n");
        free(d2);
        free(sums);
        return RALLY_ENOMEM;
    }
    for (uint32_t c = 0; c < m->k; c++) {
        int owner = -1;
        uint64_t local = 0;
        double total = 0;
        if (c > 0) {
            double s = 0;
            for (uint64_t i = 0; i < j->rows; i++)
                s += d2[i];
            if ((rc = rally_allgather(j->r, &s, sizeof s, sums)) != RALLY_OK)
                goto out;
            for (int r = 0; r < j->world; r++)
                total += sums[r];
        }
        if (total > 0) {
            double target = rng_uniform(m->rng) * total, prefix = 0;
            for (int r = 0; r < j->world && owner < 0; r++) {
                if (sums[r] > 0 && (target < prefix + sums[r] || r == j->world - 1))
                    owner = r;
                else
                    prefix += sums[r];
            }
            if (owner < 0) /* rounding: the last shard with mass */
                for (int r = j->world - 1; r >= 0 && owner < 0; r--)
                    if (sums[r] > 0)
                        owner = r;
            if (owner == j->rank) {
                double t = target - prefix, cum = 0;
                uint64_t last = 0;
                int found = 0;
                for (uint64_t i = 0; i < j->rows && !found; i++) {
                    if (d2[i] > 0)
                        last = i;
                    cum += d2[i];
                    if (cum > t && d2[i] > 0) {
                        local = i;
                        found = 1;
                    }
                }
                if (!found)
                    local = last;
            }
        } else { /* the first centroid, or every row already is a centroid */
            uint64_t g = rng_next(m->rng) % total_rows;
            for (owner = 0; g >= j->shard_rows[owner]; owner++)
                g -= j->shard_rows[owner];
            local = g;
        }
        double *cen = m->c + (size_t)c * m->d;
        if ((rc = share_row(j, (uint64_t)owner, local, cen)) != RALLY_OK)
            goto out;
        for (uint64_t i = 0; i < j->rows; i++) {
            double t = sqdist(j->x + i * j->d, cen, j->d);
            if (c == 0 || t < d2[i])
                d2[i] = t;
        }
    }
out:
    free(d2);
    free(sums);
    return rc;
}

/* Reads the shard into j->x (dense floats, missing values 0).  0 or -1 with
 * err set. */
static int load_shard(struct job *j, const char *path, const rally_data_opts_t *dopts,
                      rally_dataset_t **dsp, char *err, size_t cap)
{
    if (rally_data_read(path, dopts, j->rank, j->world, dsp, err, cap) != RALLY_OK)
        return -1;
    uint64_t nf = rally_data_num_features(*dsp);
    if (nf > KM_MAX_FEATURES) {
        snprintf(err, cap, "%s: %" PRIu64 " features, at most %u are supported", path, nf,
                 KM_MAX_FEATURES);
        return -1;
    }
    j->rows = rally_data_num_rows(*dsp);
    return 0;
}

static int densify(struct job *j, const rally_dataset_t *ds)
{
    const uint64_t *rp;
    const uint32_t *idx;
    const float *val;
    rally_data_csr(ds, &rp, &idx, &val);
    j->x = calloc(j->rows * j->d + 1, sizeof *j->x);
    if (j->x == NULL)
        return -1;
    for (uint64_t i = 0; i < j->rows; i++)
        for (uint64_t e = rp[i]; e < rp[i + 1]; e++)
            j->x[i * j->d + idx[e]] = val[e];
    return 0;
}

/* One line on standard output, flushed at once (rally-run prefixes it). */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* --help works without a job */
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--show") == 0 && i + 1 < argc) {
            return show(argv[i + 1]);
        }

    struct job j = {0};
    int rc = rally_init(&j.r, &argc, &argv);
    if (rc != RALLY_OK) {
        fprintf(stderr, "rally-kmeans: rally_init failed: %s (%s)\n", rally_errmsg(j.r),
                rally_strstatus(rc));
        rally_finalize(j.r);
        return 1;
    }
    j.rank = rally_rank(j.r);
    j.world = rally_world_size(j.r);

    int status = 2;
    struct opts o = {.k = 8, .iters = 100, .seed = 1};
    struct model m = {0};
    rally_data_opts_t *dopts = NULL;
    rally_dataset_t *ds = NULL;
    double *init = NULL, *buf = NULL, *ct = NULL, *dist = NULL;
    void *saved = NULL;
    unsigned char *bytes = NULL;
    char err[8192] = "";
    if (rally_data_opts_new(&dopts) != RALLY_OK) {
        fprintf(stderr, "rally-kmeans: out of memory\n");
        goto out;
    }
    int pa = parse_args(argc, argv, &o, dopts);
    if (pa != 0) {
        status = pa > 0 ? 0 : 2;
        goto out;
    }

    /* Bootstrap: read the shard, agree on the feature count and on whether
     * every worker could read its input. */
    uint32_t init_rows = 0, init_cols = 0;
    int bad = load_shard(&j, o.data, dopts, &ds, err, sizeof err) != 0;
    if (!bad) {
        char fp[17];
        rally_data_fingerprint(ds, fp, sizeof fp);
        say("shard %d fingerprint %s rows %" PRIu64 " pid %ld\n", j.rank, fp, j.rows,
            (long)getpid());
        if (o.init_in != NULL &&
            (init = read_centroids(o.init_in, &init_rows, &init_cols, err, sizeof err)) == NULL)
            bad = 1;
    }
    if (bad)
        fprintf(stderr, "rally-kmeans: rank %d: %s\n", j.rank, err);
    uint64_t agree[2] = {bad ? 0 : rally_data_num_features(ds), (uint64_t)bad};
    if ((rc = rally_allreduce(j.r, agree, 2, RALLY_UINT64, RALLY_MAX, NULL, NULL)) != RALLY_OK) {
        status = fail(&j, "the bootstrap allreduce", rc);
        goto out;
    }
    if (agree[1] != 0) {
        if (!bad && j.rank == 0)
            fprintf(stderr, "rally-kmeans: another worker could not read its input; stopping\n");
        goto out;
    }
    if (agree[0] == 0) {
        if (j.rank == 0)
            fprintf(stderr, "rally-kmeans: %s has no features\n", o.data);
        goto out;
    }
    j.d = (uint32_t)agree[0];
    if (o.init_in != NULL && (init_rows != o.k || init_cols != j.d)) {
        if (j.rank == 0)
            fprintf(stderr,
                    "rally-kmeans: %s holds %u centroids of %u numbers; want k = %u of %u\n",
                    o.init_in, init_rows, init_cols, o.k, j.d);
        goto out;
    }
    j.shard_rows = malloc((size_t)j.world * sizeof *j.shard_rows);
    if (j.shard_rows == NULL || densify(&j, ds) != 0) {
        fprintf(stderr, "rally-kmeans: out of memory for %" PRIu64 " rows\n", j.rows);
        status = 1;
        goto out;
    }
    rally_data_free(ds);
    ds = NULL;
    if ((rc = rally_allgather(j.r, &j.rows, sizeof j.rows, j.shard_rows)) != RALLY_OK) {
        status = fail(&j, "the row-count allgather", rc);
        goto out;
    }
    uint64_t total_rows = 0;
    for (int r = 0; r < j.world; r++)
        total_rows += j.shard_rows[r];
    if (total_rows < o.k) {
        if (j.rank == 0)
            fprintf(stderr, "rally-kmeans: %" PRIu64 " rows cannot make %u clusters\n", total_rows,
                    o.k);
        goto out;
    }

    /* The model: from the newest checkpoint, or initialised (iteration 0). */
    m.k = o.k;
    m.d = j.d;
    size_t kd = (size_t)m.k * m.d, nbytes = 0;
    uint64_t saved_n = 0, version = 0;
    if ((rc = rally_load_checkpoint(j.r, &saved, &saved_n, NULL, NULL, &version)) != RALLY_OK) {
        status = fail(&j, "rally_load_checkpoint", rc);
        goto out;
    }
    if (version > 0) {
        const char *why;
        if (model_decode(saved, saved_n, &m, &why) != 0 || m.k != o.k || m.d != j.d) {
            fprintf(stderr, "rally-kmeans: rank %d: the checkpoint is %s\n", j.rank,
                    m.c ? "for another k or feature count" : why);
            status = 1;
            goto out;
        }
        rally_free(saved);
        saved = NULL;
        say("rank %d restarted: resuming after iteration %" PRIu64 " (checkpoint version %" PRIu64
            ")\n",
            j.rank, m.iteration, version);
    } else {
        m.seed = o.seed;
        uint64_t sm = o.seed;
        for (int i = 0; i < 4; i++)
            m.rng[i] = splitmix64(&sm);
        m.c = malloc(kd * sizeof *m.c);
        if (m.c == NULL) {
            fprintf(stderr, "rally-kmeans: out of memory\n");
            status = 1;
            goto out;
        }
        double t0 = now_s();
        if (init != NULL) {
            memcpy(m.c, init, kd * sizeof *m.c);
        } else if ((rc = kmeanspp(&j, &m)) != RALLY_OK) {
            status = fail(&j, "k-means++", rc);
            goto out;
        }
        if (j.rank == 0 && !o.quiet)
            say("initialised %u centroids (%s) from %" PRIu64
                " rows x %u features on %d workers in %.3f s\n",
                m.k, init ? o.init_in : "k-means++", total_rows, m.d, j.world, now_s() - t0);
        if (j.rank == 0 && o.init_out != NULL && write_centroids(o.init_out, &m, err, sizeof err))
            fprintf(stderr, "rally-kmeans: %s\n", err);
        if ((bytes = model_encode(&m, &nbytes)) == NULL) {
            fprintf(stderr, "rally-kmeans: out of memory\n");
            status = 1;
            goto out;
        }
        if ((rc = rally_checkpoint(j.r, bytes, nbytes, NULL, 0)) != RALLY_OK) {
            status = fail(&j, "rally_checkpoint (iteration 0)", rc);
            goto out;
        }
        free(bytes);
        bytes = NULL;
    }

    /* Lloyd.  Pass t assigns every row to its nearest centroid of c_t and sums
     * up; the objective it reports is that of c_t.  The pass after the last
     * update gives the final objective (or none is needed: converged means
     * c_t == c_(t-1) bit for bit, so the last pass's objective is c_t's). */
    size_t nbuf = kd + m.k + 1;
    buf = malloc(nbuf * sizeof *buf);
    ct = malloc(kd * sizeof *ct);
    dist = malloc(m.k * sizeof *dist);
    if (buf == NULL || ct == NULL || dist == NULL) {
        fprintf(stderr, "rally-kmeans: out of memory\n");
        status = 1;
        goto out;
    }
    double objective = m.objective, t_prev = now_s();
    for (;;) {
        if ((m.flags & KM_CONVERGED) && !o.fixed)
            break;
        if (o.pause_ms > 0)
            usleep((useconds_t)o.pause_ms * 1000);
        for (uint32_t c = 0; c < m.k; c++)
            for (uint32_t f = 0; f < m.d; f++)
                ct[(size_t)f * m.k + c] = m.c[(size_t)c * m.d + f];
        memset(buf, 0, nbuf * sizeof *buf);
        double *sums = buf, *counts = buf + kd, obj = 0;
        for (uint64_t i = 0; i < j.rows; i++) {
            const float *x = j.x + i * m.d;
            distances(x, m.d, ct, m.k, dist);
            uint32_t best = 0;
            for (uint32_t c = 1; c < m.k; c++)
                if (dist[c] < dist[best])
                    best = c;
            obj += dist[best];
            counts[best] += 1;
            double *s = sums + (size_t)best * m.d;
            for (uint32_t f = 0; f < m.d; f++)
                s[f] += x[f];
        }
        buf[nbuf - 1] = obj;
        if ((rc = rally_allreduce(j.r, buf, nbuf, RALLY_DOUBLE, RALLY_SUM, NULL, NULL)) !=
            RALLY_OK) {
            status = fail(&j, "the Lloyd allreduce", rc);
            goto out;
        }
        objective = buf[nbuf - 1];
        if (m.iteration >= o.iters)
            break;
        int changed = 0, empty = 0;
        for (uint32_t c = 0; c < m.k; c++) {
            if (counts[c] == 0) { /* an empty cluster keeps its centroid */
                empty++;
                continue;
            }
            for (uint32_t f = 0; f < m.d; f++) {
                double v = sums[(size_t)c * m.d + f] / counts[c];
                changed |= dbits(v) != dbits(m.c[(size_t)c * m.d + f]);
                m.c[(size_t)c * m.d + f] = v;
            }
        }
        m.iteration++;
        m.objective = objective;
        m.flags = KM_HAS_OBJECTIVE | (changed ? 0u : KM_CONVERGED);
        double t = now_s();
        if (j.rank == 0 && !o.quiet) {
            char note[64] = "";
            if (empty)
                snprintf(note, sizeof note, " (%d empty cluster%s kept)", empty,
                         empty > 1 ? "s" : "");
            say("iteration %" PRIu64 " objective %.12g time %.4f s%s%s\n", m.iteration, objective,
                t - t_prev, note, changed ? "" : " converged");
        }
        t_prev = t;
        if ((bytes = model_encode(&m, &nbytes)) == NULL) {
            fprintf(stderr, "rally-kmeans: out of memory\n");
            status = 1;
            goto out;
        }
        if ((rc = rally_checkpoint(j.r, bytes, nbytes, NULL, 0)) != RALLY_OK) {
            status = fail(&j, "rally_checkpoint", rc);
            goto out;
        }
        free(bytes);
        bytes = NULL;
    }
    /* Converged without a final pass: the objective of c_t is the one stored. */
    if ((m.flags & KM_CONVERGED) && !o.fixed)
        objective = m.objective;

    if ((bytes = model_encode(&m, &nbytes)) == NULL) {
        fprintf(stderr, "rally-kmeans: out of memory\n");
        status = 1;
        goto out;
    }
    uint64_t digest = fnv1a(bytes, nbytes);
    status = 0;
    if (j.rank == 0) {
        if (o.model_out != NULL && write_file(o.model_out, bytes, nbytes, err, sizeof err) != 0) {
            fprintf(stderr, "rally-kmeans: %s\n", err);
            status = 1;
        }
        if (o.json)
            model_json(stdout, &m, digest);
        say("result: model_digest=%016" PRIx64 " objective=%.17g\n", digest, objective);
    }
out:
    free(bytes);
    free(buf);
    free(ct);
    free(dist);
    free(init);
    free(m.c);
    free(j.x);
    free(j.shard_rows);
    rally_free(saved);
    rally_data_free(ds);
    rally_data_opts_free(dopts);
    rc = rally_finalize(j.r);
    if (rc != RALLY_OK && status == 0)
        status = 1;
    return status;
}
