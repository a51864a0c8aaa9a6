/*
 * lloyd.c — the Lloyd iterations: every worker assigns its rows to the
 * nearest centroid and sums them up, one SUM allreduce of
 * [sums (k x d) | counts (k) | objective] combines the shards, every worker
 * computes the same new centroids, and the whole model is checkpointed.
 *
 * Pass t assigns every row to its nearest centroid of c_t and sums up; the
 * objective it reports is that of c_t.  The pass after the last update gives
 * the final objective (or none is needed: converged means c_t == c_(t-1) bit
 * for bit, so the last pass's objective is c_t's).  Rank 0 reports each
 * update's objective (rally_report, for rally-run's observers) at the
 * checkpoint version it stands in, the iteration, and --iters as the
 * iterations in all.  The hot loop is
 * distances(): built with -O3 it vectorises across centroids, reordering no
 * sum.
 *
 * --reproducible adds the rows, counts and distances into exact
 * accumulators (rally_xsum) instead, and rally_allreduce_xsum rounds each
 * element's sum once: the same new centroids at any N.
 *
 * The rows take a faster lane to the same exact sums.  Each feature's values
 * on this shard are integers on a grid of its own, 2^e with |x| < 2^(e + B)
 * and B = 62 - ceil(log2(rows + 1)): x * 2^-e is an exact integer for every
 * value with no bits below 2^e, and any rows of them sum in an int64 without
 * overflow.  So a row is added by a multiply, a conversion and an integer add
 * a feature, and at the pass's end each integer sum S goes into the
 * accumulator as two doubles (S's high and low 31 bits, each exact): the
 * accumulator then holds exactly what adding every row would have left,
 * and rounds the same.  A value off its grid (a tiny one far below the
 * feature's largest), a NaN, an infinity or a -0 (whose sign an integer
 * loses) is added to the accumulator itself; a row with none of them (all
 * but a handful) skips the checks.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kmeans.h"

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

/* ct = the centroids transposed (d x k), for distances(). */
static void transpose(const struct km_model *m, double *ct)
{
    for (uint32_t c = 0; c < m->k; c++)
        for (uint32_t f = 0; f < m->d; f++)
            ct[(size_t)f * m->k + c] = m->c[(size_t)c * m->d + f];
}

/* The centroid nearest to x (ties to the lowest number); dist[] all k. */
static uint32_t nearest(const float *x, const struct km_model *m, const double *ct, double *dist)
{
    distances(x, m->d, ct, m->k, dist);
    uint32_t best = 0;
    for (uint32_t c = 1; c < m->k; c++)
        if (dist[c] < dist[best])
            best = c;
    return best;
}

/* One assignment pass over the shard into buf = [sums | counts | objective]
 * (zeroed here). */
static void assign(const struct km_job *j, const struct km_model *m, double *ct, double *dist,
                   double *buf)
{
    size_t kd = (size_t)m->k * m->d;
    transpose(m, ct);
    memset(buf, 0, (kd + m->k + 1) * sizeof *buf);
    double *sums = buf, *counts = buf + kd, obj = 0;
    for (uint64_t i = 0; i < j->rows; i++) {
        const float *x = j->x + i * m->d;
        uint32_t best = nearest(x, m, ct, dist);
        obj += dist[best];
        counts[best] += 1;
        double *s = sums + (size_t)best * m->d;
        for (uint32_t f = 0; f < m->d; f++)
            s[f] += x[f];
    }
    buf[kd + m->k] = obj;
}

/* --reproducible's lane: each feature's grid on this shard, the integer
 * sums, the counts, the distances waiting for the accumulator. */
#define KM_CHUNK 256
struct lane {
    double *scale;  /* [d]: 2^-e of feature f's grid, or NaN: every value to the accumulator */
    int *e;         /* [d] */
    uint8_t *odd;   /* [rows]: 1 when a value of the row is not on its grid (or a -0) */
    int64_t *sum;   /* k x d */
    int64_t *slow;  /* k x d: the values that went to the accumulator itself */
    int64_t *count; /* k */
    double *dist;   /* [KM_CHUNK] */
    uint64_t *at;   /* [KM_CHUNK]: all the objective's element */
};

static void lane_free(struct lane *l)
{
    free(l->scale);
    free(l->e);
    free(l->odd);
    free(l->sum);
    free(l->slow);
    free(l->count);
    free(l->dist);
    free(l->at);
}

/* Feature f's value x as an integer on its grid in *q: 1, or 0 when it is
 * not one (off the grid, not finite, or -0). */
static inline int on_grid(float x, double scale, int64_t *q)
{
    double t = (double)x * scale; /* exact: scale is a power of two */
    if (!(fabs(t) < 0x1p62))      /* NaN and infinities too */
        return 0;
    *q = (int64_t)t;
    return (double)*q == t && (*q != 0 || !signbit(x));
}

/* The grids of this shard's features, and the rows with a value off its
 * own.  0, or -1 out of memory. */
static int lane_init(struct lane *l, const struct km_job *j, uint32_t k)
{
    const uint32_t d = j->d;
    l->scale = malloc(d * sizeof *l->scale);
    l->e = malloc(d * sizeof *l->e);
    l->sum = malloc((size_t)k * d * sizeof *l->sum);
    l->slow = malloc((size_t)k * d * sizeof *l->slow);
    l->count = malloc(k * sizeof *l->count);
    l->odd = malloc(j->rows + 1);
    l->dist = malloc(KM_CHUNK * sizeof *l->dist);
    l->at = malloc(KM_CHUNK * sizeof *l->at);
    if (l->scale == NULL || l->e == NULL || l->sum == NULL || l->slow == NULL || l->count == NULL ||
        l->odd == NULL || l->dist == NULL || l->at == NULL)
        return -1;
    int lg = 0;
    while (lg < 62 && (UINT64_C(1) << lg) < j->rows + 1)
        lg++;
    for (uint32_t f = 0; f < d; f++)
        l->scale[f] = 0;
    for (uint64_t i = 0; i < j->rows; i++) /* the largest magnitudes first (in scale) */
        for (uint32_t f = 0; f < d; f++) {
            double a = fabs((double)j->x[i * d + f]);
            l->scale[f] = a > l->scale[f] && a <= 0x1p128 ? a : l->scale[f];
        }
    for (uint32_t f = 0; f < d; f++) {
        int top = l->scale[f] > 0 ? ilogb(l->scale[f]) + 1 : 0; /* |x| < 2^top */
        l->e[f] = top - (62 - lg);
        /* S's two halves must be doubles: the grid far from the edges */
        l->scale[f] = l->e[f] > -1000 && l->e[f] < 900 ? ldexp(1.0, -l->e[f]) : NAN;
    }
    for (uint64_t i = 0; i < j->rows; i++) {
        int on = 1;
        for (uint32_t f = 0; f < d; f++) {
            int64_t q;
            on &= on_grid(j->x[i * d + f], l->scale[f], &q);
        }
        l->odd[i] = (uint8_t)!on;
    }
    return 0;
}

/* The distances waiting in l into the objective's element. */
static void flush_dist(struct lane *l, rally_xsum_t *acc, size_t n)
{
    rally_xsum_add_at(acc, l->at, l->dist, n);
}

/* The same pass into exact accumulators acc = [sums | counts | objective],
 * the rows through the lane. */
static __attribute__((noinline)) void assign_exact(const struct km_job *j, const struct km_model *m,
                                                   double *ct, double *dist, struct lane *l,
                                                   rally_xsum_t *acc)
{
    const uint32_t d = m->d;
    const size_t kd = (size_t)m->k * d;
    transpose(m, ct);
    rally_xsum_clear(acc);
    memset(l->sum, 0, kd * sizeof *l->sum);
    memset(l->slow, 0, kd * sizeof *l->slow);
    memset(l->count, 0, m->k * sizeof *l->count);
    for (size_t n = 0; n < KM_CHUNK; n++)
        l->at[n] = kd + m->k;
    size_t nd = 0;
    for (uint64_t i = 0; i < j->rows; i++) {
        const float *x = j->x + i * d;
        uint32_t best = nearest(x, m, ct, dist);
        int64_t *S = l->sum + (size_t)best * d;
        if (!l->odd[i]) {
            for (uint32_t f = 0; f < d; f++)
                S[f] += (int64_t)((double)x[f] * l->scale[f]);
        } else {
            for (uint32_t f = 0; f < d; f++) {
                int64_t q;
                if (on_grid(x[f], l->scale[f], &q)) {
                    S[f] += q;
                } else {
                    double v = x[f];
                    rally_xsum_add(acc, (size_t)best * d + f, &v, 1);
                    l->slow[(size_t)best * d + f]++;
                }
            }
        }
        l->count[best]++;
        l->dist[nd++] = dist[best];
        if (nd == KM_CHUNK) {
            flush_dist(l, acc, nd);
            nd = 0;
        }
    }
    flush_dist(l, acc, nd);
    /* The integer sums into the accumulator, as two exact doubles each, for
     * every element that took a value through the lane: its values were
     * never -0, so a sum of 0 adds a +0, as adding them one by one would. */
    for (size_t e = 0; e < kd; e++) {
        int64_t S = l->sum[e];
        if (l->count[e / d] == l->slow[e])
            continue;
        int g = l->e[e % d];
        int64_t hi = S >> 31; /* arithmetic: S = hi * 2^31 + lo, 0 <= lo < 2^31 */
        double parts[2] = {ldexp((double)hi, g + 31),
                           ldexp((double)(S - hi * (INT64_C(1) << 31)), g)};
        rally_xsum_add(acc, e, &parts[0], 1);
        rally_xsum_add(acc, e, &parts[1], 1);
    }
    for (uint32_t c = 0; c < m->k; c++) {
        double n = (double)l->count[c];
        if (n > 0)
            rally_xsum_add(acc, kd + c, &n, 1);
    }
}

static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* New centroids from the reduced buf: sum / count, an empty cluster keeps
 * its centroid.  Returns whether any centroid changed; *empty counts the
 * empty clusters. */
static int update(struct km_model *m, const double *buf, int *empty)
{
    const double *sums = buf, *counts = buf + (size_t)m->k * m->d;
    int changed = 0;
    *empty = 0;
    for (uint32_t c = 0; c < m->k; c++) {
        if (counts[c] == 0) {
            ++*empty;
            continue;
        }
        for (uint32_t f = 0; f < m->d; f++) {
            double v = sums[(size_t)c * m->d + f] / counts[c];
            changed |= !same_bits(v, m->c[(size_t)c * m->d + f]);
            m->c[(size_t)c * m->d + f] = v;
        }
    }
    return changed;
}

int km_lloyd(struct km_job *j, const struct km_opts *o, struct km_model *m, double *objective)
{
    size_t kd = (size_t)m->k * m->d, nbuf = kd + m->k + 1;
    size_t nbytes = km_model_nbytes(m->k, m->d);
    double *buf = malloc(nbuf * sizeof *buf), *ct = malloc(kd * sizeof *ct);
    double *dist = malloc(m->k * sizeof *dist);
    unsigned char *bytes = malloc(nbytes); /* the checkpoint, reused every iteration */
    rally_xsum_t *acc = o->reproducible ? rally_xsum_new(nbuf) : NULL;
    struct lane lane = {0};
    double obj = m->objective, t_prev = ex_now_s();
    int status = KM_EXIT_OK, rc;
    if (buf == NULL || ct == NULL || dist == NULL || bytes == NULL ||
        (o->reproducible && (acc == NULL || lane_init(&lane, j, m->k) != 0))) {
        status = km_oom();
        goto out;
    }
    if (j->rank == 0)
        rally_report_total(j->r, o->iters);
    for (;;) {
        if ((m->flags & KM_CONVERGED) && !o->fixed)
            break;
        if (o->ex.pause_ms > 0)
            usleep((useconds_t)o->ex.pause_ms * 1000);
        if (acc != NULL) {
            assign_exact(j, m, ct, dist, &lane, acc);
            rc = rally_allreduce_xsum(j->r, acc, RALLY_DOUBLE, buf, NULL, NULL);
        } else {
            assign(j, m, ct, dist, buf);
            rc = rally_allreduce(j->r, buf, nbuf, RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
        }
        if (rc != RALLY_OK) {
            status = km_fail(j, "the Lloyd allreduce", rc);
            goto out;
        }
        obj = buf[nbuf - 1];
        if (m->iteration >= o->iters)
            break;
        int empty;
        int changed = update(m, buf, &empty);
        m->iteration++;
        m->objective = obj;
        m->flags = KM_HAS_OBJECTIVE | (changed ? 0u : KM_CONVERGED);
        double t = ex_now_s();
        if (j->rank == 0 && !o->ex.quiet) {
            char note[64] = "";
            if (empty)
                snprintf(note, sizeof note, " (%d empty cluster%s kept)", empty,
                         empty > 1 ? "s" : "");
            ex_say("iteration %" PRIu64 " objective %.12g time %.4f s%s%s\n", m->iteration, obj,
                   t - t_prev, note, changed ? "" : " converged");
        }
        t_prev = t;
        if (j->rank == 0) /* the value every rank has: one report is enough */
            rally_report(j->r, "objective", obj);
        km_model_encode(m, bytes);
        if ((rc = rally_checkpoint(j->r, bytes, nbytes, NULL, 0)) != RALLY_OK) {
            status = km_fail(j, "rally_checkpoint", rc);
            goto out;
        }
    }
    /* Converged without a final pass: the objective of c_t is the one stored. */
    if ((m->flags & KM_CONVERGED) && !o->fixed)
        obj = m->objective;
    *objective = obj;
out:
    free(bytes);
    free(buf);
    free(ct);
    free(dist);
    rally_xsum_free(acc);
    lane_free(&lane);
    return status;
}
