/*
 * gen.c — synthetic Gaussian blobs from a seed (rally_data_generate).
 *
 * Everything here is integer arithmetic and IEEE double +, -, *, / — no
 * libm, no locale — so a seed gives the same bytes on every platform with
 * IEEE doubles (docs/data.md states the generator exactly):
 *   - PRNG: xoshiro256** seeded by four outputs of splitmix64(seed);
 *   - uniform in [0, 1): (next() >> 11) * 2^-53;
 *   - centres: centers x features coordinates 20 * uniform - 10, row-major;
 *   - per row: centre c = next() mod centers, then features standard
 *     normals z (Marsaglia's polar method with our own log and sqrt, two
 *     normals per accepted pair, a leftover carried to the next draw),
 *     value (float)(centre[c][j] + spread * z);
 *   - numbers are printed by fmt_float(): 9 significant digits, enough for
 *     strtof to give back the same float.
 *
 * And documents for topic models (rally_data_generate_corpus), from the
 * same PRNG: topic k's word weights u^16 (u uniform, word-major within the
 * topic), normalised; per document, its length doc_words / 2 + 1 +
 * next() mod doc_words, its topic weights u^4 normalised, then per word a
 * topic and a word of that topic, each by its cumulative weights (the first
 * index whose cumulative weight exceeds uniform() times the total).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/data.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

struct rng {
    uint64_t s[4];
    int have_spare;
    double spare;
};

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t next(struct rng *g)
{
    uint64_t *s = g->s;
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

static void seed_rng(struct rng *g, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        g->s[i] = splitmix64(&x);
    g->have_spare = 0;
}

static double uniform(struct rng *g)
{
    return (double)(next(g) >> 11) * 0x1.0p-53;
}

/* ln(x) for normal x > 0: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), then
 * ln m = 2 atanh(t), t = (m - 1) / (m + 1), |t| < 0.172, by its series to
 * t^23 (error below 1e-17). */
double rally__data_log(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    int e = (int)((b >> 52) & 0x7ff) - 1023;
    b = (b & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
    double m;
    memcpy(&m, &b, sizeof m);
    if (m > 1.4142135623730951) {
        m *= 0.5;
        e++;
    }
    double t = (m - 1.0) / (m + 1.0), t2 = t * t, s = 0.0;
    for (int k = 23; k >= 3; k -= 2)
        s = (s + 1.0 / k) * t2;
    s = 2.0 * t * (1.0 + s);
    return (double)e * 6.93147180369123816490e-01 + ((double)e * 1.90821492927058770002e-10 + s);
}

/* sqrt(y) for y >= 0 by Newton's method from a halved-exponent guess. */
double rally__data_sqrt(double y)
{
    if (!(y > 0.0))
        return 0.0;
    uint64_t b;
    memcpy(&b, &y, sizeof b);
    b = (b >> 1) + 0x1ff8000000000000ULL;
    double x;
    memcpy(&x, &b, sizeof x);
    for (int i = 0; i < 6; i++)
        x = 0.5 * (x + y / x);
    return x;
}

static double normal(struct rng *g)
{
    if (g->have_spare) {
        g->have_spare = 0;
        return g->spare;
    }
    for (;;) {
        double u = 2.0 * uniform(g) - 1.0, v = 2.0 * uniform(g) - 1.0;
        double s = u * u + v * v;
        if (s >= 1.0 || s == 0.0)
            continue;
        double f = rally__data_sqrt(-2.0 * rally__data_log(s) / s);
        g->spare = v * f;
        g->have_spare = 1;
        return u * f;
    }
}

static const double pow10tab[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                  1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* x * 10^k for |k| <= 44, with exact powers of ten (at most two roundings). */
static double scale10(double x, int k)
{
    while (k > 22) {
        x *= 1e22;
        k -= 22;
    }
    while (k < -22) {
        x /= 1e22;
        k += 22;
    }
    return k >= 0 ? x * pow10tab[k] : x / pow10tab[-k];
}

/* Writes a finite float with 9 significant digits (trailing zeros dropped)
 * like %.9g, in fixed notation for exponents -4..8, else d.ddde[+-]XX;
 * returns the length (at most 16).  The digits are within 1e-9 relative
 * of f, so strtof gives f back. */
int rally__data_fmt_float(char *out, float f)
{
    double x = f;
    int n = 0;
    if (x == 0.0) {
        out[0] = '0';
        return 1;
    }
    if (x < 0) {
        out[n++] = '-';
        x = -x;
    }
    int e10 = 0; /* 10^e10 <= x < 10^(e10+1), found by exact comparisons */
    while (e10 < 38 && x >= scale10(1.0, e10 + 1))
        e10++;
    while (e10 > -46 && x < scale10(1.0, e10))
        e10--;
    double m = scale10(x, 8 - e10);
    uint64_t d = (uint64_t)m; /* round half to even, as printf does */
    double frac = m - (double)d;
    if (frac > 0.5 || (frac == 0.5 && (d & 1)))
        d++;
    if (d >= 1000000000ULL) { /* 999999999.5 rounded up */
        d /= 10;
        e10++;
    }
    if (d < 100000000ULL)
        d = 100000000ULL; /* cannot happen; keeps 9 digits */
    char dig[9];
    for (int i = 8; i >= 0; i--) {
        dig[i] = (char)('0' + d % 10);
        d /= 10;
    }
    int nd = 9;
    while (nd > 1 && dig[nd - 1] == '0')
        nd--;
    if (e10 >= -4 && e10 <= 8) {
        if (e10 < 0) {
            out[n++] = '0';
            out[n++] = '.';
            for (int i = -1; i > e10; i--)
                out[n++] = '0';
            memcpy(out + n, dig, (size_t)nd);
            n += nd;
        } else {
            for (int i = 0; i <= e10; i++)
                out[n++] = i < nd ? dig[i] : '0';
            if (nd > e10 + 1) {
                out[n++] = '.';
                memcpy(out + n, dig + e10 + 1, (size_t)(nd - e10 - 1));
                n += nd - e10 - 1;
            }
        }
        return n;
    }
    out[n++] = dig[0];
    if (nd > 1) {
        out[n++] = '.';
        memcpy(out + n, dig + 1, (size_t)(nd - 1));
        n += nd - 1;
    }
    out[n++] = 'e';
    out[n++] = e10 < 0 ? '-' : '+';
    int a = e10 < 0 ? -e10 : e10;
    out[n++] = (char)('0' + a / 10);
    out[n++] = (char)('0' + a % 10);
    return n;
}

/* --- buffered output --------------------------------------------------------- */

#define OUTBUF ((size_t)1 << 20)

struct out {
    int fd;
    char *buf;
    size_t len;
    const char *name;
    struct rally__err *e;
};

static int out_flush(struct out *o)
{
    size_t done = 0;
    while (done < o->len) {
        ssize_t r = write(o->fd, o->buf + done, o->len - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return rally__fail_errno(o->e, RALLY_ESYS, errno, "%s: cannot write", o->name);
        done += (size_t)r;
    }
    o->len = 0;
    return RALLY_OK;
}

/* Room for n more bytes (n <= 64). */
static int out_room(struct out *o, size_t n)
{
    return o->len + n > OUTBUF ? out_flush(o) : RALLY_OK;
}

static void put_str(struct out *o, const char *s, size_t n)
{
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

static void put_u64(struct out *o, uint64_t v)
{
    char t[24];
    int n = 0;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        o->buf[o->len++] = t[--n];
}

static int out_open(struct out *o, const char *path, char *tmp, size_t tmpcap, struct rally__err *e)
{
    o->e = e;
    o->name = path;
    o->len = 0;
    o->fd = -1;
    o->buf = malloc(OUTBUF);
    if (o->buf == NULL)
        return rally__fail(e, RALLY_ENOMEM, "%s: cannot allocate an output buffer", path);
    if ((size_t)snprintf(tmp, tmpcap, "%s.tmp.%ld", path, (long)getpid()) >= tmpcap)
        return rally__fail(e, RALLY_EINVAL, "%s: the path is too long", path);
    o->fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (o->fd < 0)
        return rally__fail_errno(e, RALLY_ESYS, errno, "%s: cannot create", tmp);
    return RALLY_OK;
}

/* Flushes, closes and renames into place (ok) or removes the temporary. */
static int out_close(struct out *o, const char *tmp, int ok)
{
    int rc = ok ? out_flush(o) : RALLY_OK;
    if (o->fd >= 0 && close(o->fd) != 0 && ok && rc == RALLY_OK)
        rc = rally__fail_errno(o->e, RALLY_ESYS, errno, "%s: cannot close", tmp);
    if (o->fd >= 0) {
        if (ok && rc == RALLY_OK && rename(tmp, o->name) != 0)
            rc = rally__fail_errno(o->e, RALLY_ESYS, errno, "cannot rename %s to %s", tmp, o->name);
        if (!ok || rc != RALLY_OK)
            unlink(tmp);
    }
    free(o->buf);
    o->buf = NULL;
    o->fd = -1;
    return ok ? rc : o->e->code;
}

static int write_centers(const char *path, const float *c, uint32_t k, uint32_t f,
                         struct rally__err *e)
{
    struct out o;
    char tmp[4096];
    int rc = out_open(&o, path, tmp, sizeof tmp, e);
    for (uint32_t i = 0; i < k && rc == RALLY_OK; i++)
        for (uint32_t j = 0; j < f && rc == RALLY_OK; j++) {
            if ((rc = out_room(&o, 24)) != RALLY_OK)
                break;
            o.len += (size_t)rally__data_fmt_float(o.buf + o.len, c[(size_t)i * f + j]);
            o.buf[o.len++] = j + 1 < f ? ',' : '\n';
        }
    return out_close(&o, tmp, rc == RALLY_OK);
}

static int generate(const char *path, uint64_t rows, uint32_t features, uint32_t centers,
                    double spread, uint64_t seed, int csv, int header, const char *centers_path,
                    struct rally__err *e)
{
    if (path == NULL || rows == 0 || features == 0 || features > 1000000 || centers == 0 ||
        (uint64_t)centers * features > 100000000ULL || !isfinite(spread) || spread < 0)
        return rally__fail(e, RALLY_EINVAL,
                           "rally_data_generate: need a path, rows >= 1, 1 <= features <= "
                           "1000000, centers >= 1, centers * features <= 1e8 and a finite "
                           "spread >= 0 (got rows=%llu features=%u centers=%u spread=%g)",
                           (unsigned long long)rows, features, centers, spread);
    struct rng g;
    seed_rng(&g, seed);
    size_t nc = (size_t)centers * features;
    float *c = malloc(nc * sizeof *c);
    double *cd = malloc(nc * sizeof *cd);
    if (c == NULL || cd == NULL) {
        free(c);
        free(cd);
        return rally__fail(e, RALLY_ENOMEM, "rally_data_generate: cannot allocate %zu centres",
                           (size_t)centers);
    }
    for (size_t i = 0; i < nc; i++) {
        cd[i] = 20.0 * uniform(&g) - 10.0;
        c[i] = (float)cd[i];
    }
    int rc = RALLY_OK;
    if (centers_path != NULL)
        rc = write_centers(centers_path, c, centers, features, e);
    struct out o;
    char tmp[4096];
    if (rc == RALLY_OK)
        rc = out_open(&o, path, tmp, sizeof tmp, e);
    else
        o.buf = NULL, o.fd = -1, o.e = e, o.name = path;
    if (rc == RALLY_OK && csv && header) {
        put_str(&o, "label", 5);
        for (uint32_t j = 0; j < features && rc == RALLY_OK; j++) {
            if ((rc = out_room(&o, 24)) == RALLY_OK) {
                put_str(&o, ",f", 2);
                put_u64(&o, j);
            }
        }
        if (rc == RALLY_OK)
            o.buf[o.len++] = '\n';
    }
    for (uint64_t r = 0; r < rows && rc == RALLY_OK; r++) {
        uint32_t k = (uint32_t)(next(&g) % centers);
        const double *ck = cd + (size_t)k * features;
        if ((rc = out_room(&o, 24)) != RALLY_OK)
            break;
        put_u64(&o, k);
        for (uint32_t j = 0; j < features; j++) {
            float v = (float)(ck[j] + spread * normal(&g));
            if ((rc = out_room(&o, 40)) != RALLY_OK)
                break;
            if (csv) {
                o.buf[o.len++] = ',';
            } else {
                o.buf[o.len++] = ' ';
                put_u64(&o, (uint64_t)j + 1);
                o.buf[o.len++] = ':';
            }
            o.len += (size_t)rally__data_fmt_float(o.buf + o.len, v);
        }
        if (rc == RALLY_OK)
            o.buf[o.len++] = '\n';
    }
    if (o.buf != NULL || o.fd >= 0)
        rc = out_close(&o, tmp, rc == RALLY_OK);
    free(c);
    free(cd);
    return rc;
}

int rally_data_generate(const char *path, uint64_t rows, uint32_t features, uint32_t centers,
                        double spread, uint64_t seed, const char *format, int csv_header,
                        const char *centers_path, char *err, size_t errcap)
{
    struct rally__err e = {0};
    int csv = 0;
    if (format != NULL && strcmp(format, "csv") == 0)
        csv = 1;
    else if (format == NULL || strcmp(format, "libsvm") != 0)
        rally__fail(&e, RALLY_EINVAL, "rally_data_generate: format '%s' is not libsvm or csv",
                    format ? format : "(null)");
    if (e.code == RALLY_OK)
        generate(path, rows, features, centers, spread, seed, csv, csv_header, centers_path, &e);
    if (e.code != RALLY_OK)
        rally__data_errout(&e, err, errcap);
    return e.code;
}

/* --- topic-model documents ---------------------------------------------------- */

/* The first i in [0, n) with cum[i] > x (cum increasing, x < cum[n - 1]). */
static uint32_t pick(const double *cum, uint32_t n, double x)
{
    uint32_t lo = 0, hi = n - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cum[mid] > x)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Topic k's cumulative word weights into cum[k * vocab ..], and with
 * topics_path its normalised weights as CSV (one topic a line). */
static int corpus_topics(struct rng *g, double *cum, uint32_t vocab, uint32_t topics,
                         const char *topics_path, struct rally__err *e)
{
    struct out o = {.fd = -1};
    char tmp[4096];
    int rc = topics_path ? out_open(&o, topics_path, tmp, sizeof tmp, e) : RALLY_OK;
    for (uint32_t k = 0; k < topics && rc == RALLY_OK; k++) {
        double *c = cum + (size_t)k * vocab, total = 0;
        for (uint32_t w = 0; w < vocab; w++) {
            double u = uniform(g);
            u *= u, u *= u, u *= u, u *= u;
            c[w] = total += u;
        }
        for (uint32_t w = 0; topics_path && w < vocab && rc == RALLY_OK; w++) {
            if ((rc = out_room(&o, 24)) != RALLY_OK)
                break;
            double p = (c[w] - (w ? c[w - 1] : 0)) / total;
            o.len += (size_t)rally__data_fmt_float(o.buf + o.len, (float)p);
            o.buf[o.len++] = w + 1 < vocab ? ',' : '\n';
        }
    }
    return topics_path ? out_close(&o, tmp, rc == RALLY_OK) : rc;
}

static int corpus(const char *path, uint64_t docs, uint32_t vocab, uint32_t topics,
                  uint32_t doc_words, uint64_t seed, const char *topics_path,
                  struct rally__err *e)
{
    if (path == NULL || docs == 0 || vocab == 0 || vocab > 1000000 || topics == 0 ||
        topics > 65535 || doc_words == 0 || doc_words > 1000000 ||
        (uint64_t)topics * vocab > 100000000ULL)
        return rally__fail(e, RALLY_EINVAL,
                           "rally_data_generate_corpus: need a path, docs >= 1, 1 <= vocab <= "
                           "1000000, 1 <= topics <= 65535, topics * vocab <= 1e8 and 1 <= "
                           "doc_words <= 1000000 (got docs=%llu vocab=%u topics=%u "
                           "doc_words=%u)",
                           (unsigned long long)docs, vocab, topics, doc_words);
    struct rng g;
    seed_rng(&g, seed);
    double *cum = malloc((size_t)topics * vocab * sizeof *cum);
    double *theta = malloc((size_t)topics * sizeof *theta);
    uint32_t *count = calloc(vocab, sizeof *count);
    uint32_t *seen = malloc(((size_t)doc_words * 3 / 2 + 2) * sizeof *seen);
    struct out o = {.fd = -1, .e = e, .name = path};
    char tmp[4096];
    int rc = RALLY_OK;
    if (cum == NULL || theta == NULL || count == NULL || seen == NULL)
        rc = rally__fail(e, RALLY_ENOMEM, "rally_data_generate_corpus: cannot allocate %u "
                         "topics of %u words", topics, vocab);
    if (rc == RALLY_OK)
        rc = corpus_topics(&g, cum, vocab, topics, topics_path, e);
    if (rc == RALLY_OK)
        rc = out_open(&o, path, tmp, sizeof tmp, e);
    for (uint64_t d = 0; d < docs && rc == RALLY_OK; d++) {
        uint32_t len = doc_words / 2 + 1 + (uint32_t)(next(&g) % doc_words), nseen = 0, top = 0;
        double total = 0;
        for (uint32_t k = 0; k < topics; k++) {
            double u = uniform(&g);
            u *= u, u *= u;
            theta[k] = total += u;
            if (u > theta[top] - (top ? theta[top - 1] : 0))
                top = k;
        }
        for (uint32_t i = 0; i < len; i++) {
            uint32_t k = pick(theta, topics, uniform(&g) * total);
            const double *c = cum + (size_t)k * vocab;
            uint32_t w = pick(c, vocab, uniform(&g) * c[vocab - 1]);
            if (count[w]++ == 0)
                seen[nseen++] = w;
        }
        qsort(seen, nseen, sizeof *seen, cmp_u32);
        if ((rc = out_room(&o, 24)) != RALLY_OK)
            break;
        put_u64(&o, top);
        for (uint32_t i = 0; i < nseen; i++) {
            if ((rc = out_room(&o, 48)) != RALLY_OK)
                break;
            o.buf[o.len++] = ' ';
            put_u64(&o, (uint64_t)seen[i] + 1);
            o.buf[o.len++] = ':';
            put_u64(&o, count[seen[i]]);
            count[seen[i]] = 0;
        }
        if (rc == RALLY_OK)
            o.buf[o.len++] = '\n';
    }
    if (o.buf != NULL || o.fd >= 0)
        rc = out_close(&o, tmp, rc == RALLY_OK);
    free(cum);
    free(theta);
    free(count);
    free(seen);
    return rc;
}

int rally_data_generate_corpus(const char *path, uint64_t docs, uint32_t vocab, uint32_t topics,
                               uint32_t doc_words, uint64_t seed, const char *topics_path,
                               char *err, size_t errcap)
{
    struct rally__err e = {0};
    corpus(path, docs, vocab, topics, doc_words, seed, topics_path, &e);
    if (e.code != RALLY_OK)
        rally__data_errout(&e, err, errcap);
    return e.code;
}
