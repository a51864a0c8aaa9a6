/*
 * lloyd.c — the Lloyd iterations: every worker assigns its rows to the
 * nearest centroid and sums them up, one SUM allreduce of
 * [sums (k x d) | counts (k) | objective] combines the shards, every worker
 * computes the same new centroids, and the whole model is checkpointed.
 *
 * Pass t assigns every row to its nearest centroid of c_t and sums up; the
 * objective it reports is that of c_t.  The pass after the last update gives
 * the final objective (or none is needed: converged means c_t == c_(t-1) bit
 * for bit, so the last pass's objective is c_t's).  The hot loop is
 * distances(): built with -O3 it vectorises across centroids, reordering no
 * sum.
 *
 * --reproducible adds the rows, counts and distances into exact
 * accumulators (rally_xsum) instead, and rally_allreduce_xsum rounds each
 * element's sum once: the same new centroids at any N.
 */
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

/* The same pass into exact accumulators acc = [sums | counts | objective]. */
static void assign_exact(const struct km_job *j, const struct km_model *m, double *ct,
                         double *dist, rally_xsum_t *acc)
{
    size_t kd = (size_t)m->k * m->d;
    transpose(m, ct);
    rally_xsum_clear(acc);
    const double one = 1;
    for (uint64_t i = 0; i < j->rows; i++) {
        const float *x = j->x + i * m->d;
        uint32_t best = nearest(x, m, ct, dist);
        rally_xsum_add_float(acc, (size_t)best * m->d, x, m->d);
        rally_xsum_add(acc, kd + best, &one, 1);
        rally_xsum_add(acc, kd + m->k, &dist[best], 1);
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
    double obj = m->objective, t_prev = ex_now_s();
    int status = KM_EXIT_OK, rc;
    if (buf == NULL || ct == NULL || dist == NULL || bytes == NULL ||
        (o->reproducible && acc == NULL)) {
        status = km_oom();
        goto out;
    }
    for (;;) {
        if ((m->flags & KM_CONVERGED) && !o->fixed)
            break;
        if (o->ex.pause_ms > 0)
            usleep((useconds_t)o->ex.pause_ms * 1000);
        if (acc != NULL) {
            assign_exact(j, m, ct, dist, acc);
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
    return status;
}
