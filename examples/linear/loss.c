/*
 * loss.c — the logistic loss and its gradient over this worker's shard, read
 * straight from the data reader's CSR arrays (sparse input stays sparse).
 *
 * For row j with margin m = y_j (w . a_j + b):  loss = log(1 + exp(-m)),
 * and d loss / d(w . a_j + b) = -y_j / (1 + exp(m)), both from exp(-|m|),
 * which never overflows.  A shard whose every row stores all d features
 * (dense CSV or LIBSVM) takes a path without the index array; it adds the
 * same terms in the same order, so the bits are the same either way.
 * --reproducible adds the same terms into exact accumulators instead
 * (lr_loss_grad_exact), whose sum no order or partition changes; on a
 * dense shard L-BFGS's evaluations reach the same sums by a faster lane
 * (lr_loss_grad_lane, at the end of this file).  The
 * SGD solver takes the same terms over a list of rows, its share of a
 * minibatch (lr_batch_grad, lr_batch_grad_exact).
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "linear.h"

static double margin_of(const struct lr_job *j, const double *w, uint64_t row)
{
    double z = w[j->d];
    if (j->dense) {
        const float *x = j->val + j->rp[row];
        for (uint32_t f = 0; f < j->d; f++)
            z += w[f] * (double)x[f];
    } else {
        for (uint64_t e = j->rp[row]; e < j->rp[row + 1]; e++)
            z += w[j->idx[e]] * (double)j->val[e];
    }
    return j->y[row] * z;
}

/* log(1 + exp(-m)) from e = exp(-|m|): one exp and one log1p per row. */
static double logloss(double m, double e)
{
    return m > 0 ? log1p(e) : -m + log1p(e);
}

/* Row's gradient coefficient (scaled by inv): -y / (1 + exp(m)), the same
 * from either side without overflow; its loss, unscaled, in *loss. */
static double row_coef(const struct lr_job *j, const double *w, uint64_t i, double inv,
                       double *loss)
{
    double m = margin_of(j, w, i), e = exp(-fabs(m));
    *loss = logloss(m, e);
    return -j->y[i] * inv * (m > 0 ? e / (1.0 + e) : 1.0 / (1.0 + e));
}

/* Adds row's gradient term (scaled by inv) into g; returns its loss. */
static double row_grad(const struct lr_job *j, const double *w, uint64_t i, double inv, double *g)
{
    double loss, c = row_coef(j, w, i, inv, &loss);
    if (j->dense) { /* no scatter: this loop vectorises */
        const float *x = j->val + j->rp[i];
        for (uint32_t f = 0; f < j->d; f++)
            g[f] += c * (double)x[f];
    } else {
        for (uint64_t k = j->rp[i]; k < j->rp[i + 1]; k++)
            g[j->idx[k]] += c * (double)j->val[k];
    }
    g[j->d] += c;
    return loss;
}

double lr_loss_grad(const struct lr_job *j, const double *w, double scale, double *g)
{
    double sum = 0, inv = 1.0 / scale;
    for (uint64_t i = 0; i < j->rows; i++)
        sum += row_grad(j, w, i, inv, g);
    return sum * inv;
}

double lr_batch_grad(const struct lr_job *j, const double *w, const uint64_t *ids, size_t count,
                     double scale, double *g)
{
    double sum = 0, inv = 1.0 / scale;
    for (size_t k = 0; k < count; k++)
        sum += row_grad(j, w, ids[k], inv, g);
    return sum * inv;
}

double lr_loss(const struct lr_job *j, const double *w, double scale)
{
    double sum = 0;
    for (uint64_t i = 0; i < j->rows; i++) {
        double m = margin_of(j, w, i);
        sum += logloss(m, exp(-fabs(m)));
    }
    return sum / scale;
}

/* Adds row's gradient terms for coefficient c into acc, one by one. */
static void terms_exact(const struct lr_job *j, uint64_t i, double c, rally_xsum_t *acc,
                        double *tmp, uint64_t *at)
{
    if (j->dense) {
        const float *x = j->val + j->rp[i];
        for (uint32_t f = 0; f < j->d; f++)
            tmp[f] = c * (double)x[f];
        tmp[j->d] = c;
        rally_xsum_add(acc, 0, tmp, (size_t)j->d + 1);
    } else {
        size_t n = 0;
        for (uint64_t k = j->rp[i]; k < j->rp[i + 1]; k++, n++) {
            tmp[n] = c * (double)j->val[k];
            at[n] = j->idx[k];
        }
        tmp[n] = c;
        at[n++] = j->d;
        rally_xsum_add_at(acc, at, tmp, n);
    }
}

/* Adds row's terms (the gradient's scaled by inv, the loss not) into acc. */
static void row_exact(const struct lr_job *j, const double *w, uint64_t i, double inv,
                      rally_xsum_t *acc, double *tmp, uint64_t *at)
{
    double loss, c = row_coef(j, w, i, inv, &loss);
    rally_xsum_add(acc, (size_t)j->d + 1, &loss, 1);
    terms_exact(j, i, c, acc, tmp, at);
}

void lr_loss_grad_exact(const struct lr_job *j, const double *w, double scale, rally_xsum_t *acc,
                        double *tmp, uint64_t *at)
{
    rally_xsum_clear(acc);
    for (uint64_t i = 0; i < j->rows; i++)
        row_exact(j, w, i, 1.0 / scale, acc, tmp, at);
}

void lr_batch_grad_exact(const struct lr_job *j, const double *w, const uint64_t *ids,
                         size_t count, double scale, rally_xsum_t *acc, double *tmp, uint64_t *at)
{
    rally_xsum_clear(acc);
    for (size_t k = 0; k < count; k++)
        row_exact(j, w, ids[k], 1.0 / scale, acc, tmp, at);
}

/* --- --reproducible's lane ---------------------------------------------------
 *
 * Adding every term into the accumulator costs three times the plain pass.
 * The lane reaches the same exact sums with a few double operations a term
 * (Rump, Ogita and Oishi's error-free extraction), on a dense shard.
 *
 * Row i's terms are c * x_f, rounded.  Write c = 2^(8b) * cc, |cc| in
 * [1, 256) (b: c's bucket of 8 binades): while c * x_f is a normal double,
 * its rounding is cc * x_f's scaled by 2^(8b), so the rows of one bucket
 * give terms t = cc * x_f with |t| <= 2^(T_f + 8), |x_f| < 2^T_f on the
 * shard.  Against sigma = 2^k, k = T_f + 9 + M, q = (sigma + t) - sigma is
 * t on the grid of 2^(k - 53), exactly, and t - q the exact rest, |t - q|
 * <= 2^(k - 53) (the rounding error of sigma + t).  2^M such q are
 * multiples of 2^(k - 53) below 2^k in magnitude: their double sum is
 * exact.  A second sigma, 2^(k - 52 + M), takes the rest the same way, and
 * what is left after it (nonzero only for an x far below its feature's
 * largest) goes to the accumulator itself.  Every 2^M rows a bucket's two
 * sums, scaled back by 2^(8b) (exact: they are multiples of the terms'
 * least bit), go to the accumulator, zeros too (the terms were not -0, so
 * the sum is not either), which then holds what adding every term would
 * have left, and rounds the same.  A row with a zero (whose sign the sums
 * lose) or a non-finite value, and a row whose c is not normal or whose
 * terms would not be, adds its terms one by one.
 */
#define LANE_M 8      /* 2^M rows into a bucket's sums between flushes */
#define LANE_SLOTS 16 /* buckets held at once (direct-mapped): 128 binades of c */
#define LANE_CHUNK 256 /* losses added to the accumulator at once */
/* lane_row's loop, 4 terms a step where the CPU can (the same bits at any
 * width: each term's operations are the same, in the same order) */
#if defined(__x86_64__) && defined(__GNUC__)
#define LANE_WIDE __attribute__((target_clones("avx2", "default")))
#else
#define LANE_WIDE
#endif

struct lr_lane {
    size_t n;           /* d + 1: the features and the intercept */
    double *sig;        /* 2 x n: each element's two sigmas */
    double *sum;        /* LANE_SLOTS x 2 x n: each slot's two sums per element */
    double *rest;       /* n: a row's rests */
    double *loss;       /* LANE_CHUNK losses waiting for the accumulator */
    uint64_t *at;       /* LANE_CHUNK times the loss's element */
    uint8_t *odd;       /* rows: a zero or a non-finite value */
    int bmin, bmax;     /* the buckets whose terms and sums stay normal and finite */
    int bucket[LANE_SLOTS];
    uint32_t rows[LANE_SLOTS]; /* rows since the slot's flush; 0: the slot is free */
};

void lr_lane_free(struct lr_lane *l)
{
    if (l == NULL)
        return;
    free(l->sig);
    free(l->sum);
    free(l->rest);
    free(l->loss);
    free(l->at);
    free(l->odd);
    free(l);
}

struct lr_lane *lr_lane_new(const struct lr_job *j)
{
    struct lr_lane *l = calloc(1, sizeof *l);
    if (l == NULL)
        return NULL;
    const uint32_t d = j->d;
    l->n = (size_t)d + 1;
    l->sig = calloc(2 * l->n, sizeof *l->sig);
    l->sum = calloc(LANE_SLOTS * 2 * l->n, sizeof *l->sum);
    l->rest = malloc(l->n * sizeof *l->rest);
    l->loss = malloc(LANE_CHUNK * sizeof *l->loss);
    l->at = malloc(LANE_CHUNK * sizeof *l->at);
    l->odd = malloc(j->rows + 1);
    if (l->sig == NULL || l->sum == NULL || l->rest == NULL || l->loss == NULL || l->at == NULL ||
        l->odd == NULL) {
        lr_lane_free(l);
        return NULL;
    }
    for (size_t k = 0; k < LANE_CHUNK; k++)
        l->at[k] = l->n;
    double *top = l->sig; /* first each feature's largest |x| */
    int xlo = INT_MAX;
    for (uint64_t i = 0; i < j->rows; i++) {
        const float *x = j->val + j->rp[i];
        int odd = 0;
        for (uint32_t f = 0; f < d; f++) {
            double a = fabs((double)x[f]);
            if (a == 0 || !isfinite(a)) {
                odd = 1;
                continue;
            }
            top[f] = a > top[f] ? a : top[f];
            xlo = ilogb(a) < xlo ? ilogb(a) : xlo;
        }
        l->odd[i] = (uint8_t)odd;
    }
    top[d] = 1.0;             /* the intercept's x */
    xlo = xlo < 0 ? xlo : 0; /* (no value at all: any bound will do) */
    int kmax = 0;
    for (size_t f = 0; f < l->n; f++) {
        int k = (top[f] > 0 ? ilogb(top[f]) + 1 : 0) + 9 + LANE_M;
        kmax = k > kmax ? k : kmax;
        l->sig[f] = ldexp(1.0, k);
        l->sig[l->n + f] = ldexp(1.0, k - 52 + LANE_M);
    }
    /* |c x| >= 2^(8b + xlo) normal; a sum < 2^(8b + k) finite */
    l->bmin = -128; /* xlo <= 0: bmin > -128, and bmax < 128 */
    while (8 * l->bmin + xlo < -1022)
        l->bmin++;
    l->bmax = (1023 - kmax) / 8 - 1;
    return l;
}

/* A slot's sums, scaled back, into acc; the slot free. */
static void lane_flush(struct lr_lane *l, int s, rally_xsum_t *acc, double *tmp)
{
    if (l->rows[s] == 0)
        return;
    double *S = l->sum + (size_t)s * 2 * l->n;
    for (size_t k = 0; k < 2 * l->n; k += l->n) {
        for (size_t f = 0; f < l->n; f++) {
            tmp[f] = ldexp(S[k + f], 8 * l->bucket[s]);
            S[k + f] = 0;
        }
        rally_xsum_add(acc, 0, tmp, l->n);
    }
    l->rows[s] = 0;
}

/* Row x's terms cc * x_f (and cc, the intercept's) into the sums S; the
 * rests in l->rest.  Whether any rest is nonzero. */
LANE_WIDE static int lane_row(struct lr_lane *l, double *S, const float *x, uint32_t d, double cc)
{
    const double *s1 = l->sig, *s2 = l->sig + l->n;
    double *S1 = S, *S2 = S + l->n, *r = l->rest;
    for (uint32_t f = 0; f < d; f++) { /* vectorises: each sum is its own */
        double t = cc * (double)x[f];
        double q1 = (s1[f] + t) - s1[f];
        double r1 = t - q1;
        double q2 = (s2[f] + r1) - s2[f];
        S1[f] += q1;
        S2[f] += q2;
        r[f] = r1 - q2;
    }
    double q1 = (s1[d] + cc) - s1[d], r1 = cc - q1, q2 = (s2[d] + r1) - s2[d];
    S1[d] += q1;
    S2[d] += q2;
    r[d] = r1 - q2;
    uint64_t any = 0;
    for (uint32_t f = 0; f <= d; f++) {
        uint64_t u;
        memcpy(&u, &r[f], sizeof u);
        any |= u;
    }
    return any != 0; /* a rest is never -0: t - q is +0 when they are equal */
}

void lr_loss_grad_lane(const struct lr_job *j, const double *w, double scale, rally_xsum_t *acc,
                       double *tmp, uint64_t *at, struct lr_lane *l)
{
    const double inv = 1.0 / scale;
    size_t nloss = 0;
    rally_xsum_clear(acc);
    for (uint64_t i = 0; i < j->rows; i++) {
        double c = row_coef(j, w, i, inv, &l->loss[nloss]);
        if (++nloss == LANE_CHUNK) {
            rally_xsum_add_at(acc, l->at, l->loss, nloss);
            nloss = 0;
        }
        uint64_t bits;
        memcpy(&bits, &c, sizeof bits);
        /* c = cc 2^(8b), cc's exponent 0 .. 7; a zero or subnormal c falls
         * below bmin (b = -128), an infinity or NaN above bmax (128) */
        int ex = (int)(bits >> 52) & 0x7ff, b = (ex + 1) / 8 - 128;
        if (l->odd[i] || b < l->bmin || b > l->bmax) {
            terms_exact(j, i, c, acc, tmp, at);
            continue;
        }
        int s = (int)((unsigned)b % LANE_SLOTS);
        if (l->rows[s] > 0 && l->bucket[s] != b)
            lane_flush(l, s, acc, tmp);
        l->bucket[s] = b;
        bits = (bits & ~(UINT64_C(0x7ff) << 52)) | (uint64_t)(ex - 8 * b) << 52;
        double cc;
        memcpy(&cc, &bits, sizeof cc);
        if (lane_row(l, l->sum + (size_t)s * 2 * l->n, j->val + j->rp[i], j->d, cc))
            for (size_t f = 0; f < l->n; f++)
                if (l->rest[f] != 0) {
                    double v = ldexp(l->rest[f], 8 * b);
                    rally_xsum_add(acc, f, &v, 1);
                }
        if (++l->rows[s] == 1u << LANE_M)
            lane_flush(l, s, acc, tmp);
    }
    rally_xsum_add_at(acc, l->at, l->loss, nloss);
    for (int s = 0; s < LANE_SLOTS; s++)
        lane_flush(l, s, acc, tmp);
}
