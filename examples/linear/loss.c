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
 * (lr_loss_grad_exact), whose sum no order or partition changes.  The
 * SGD solver takes the same terms over a list of rows, its share of a
 * minibatch (lr_batch_grad, lr_batch_grad_exact).
 */
#include <math.h>

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

/* Adds row's gradient term (scaled by inv) into g; returns its loss. */
static double row_grad(const struct lr_job *j, const double *w, uint64_t i, double inv, double *g)
{
    double m = margin_of(j, w, i), e = exp(-fabs(m));
    /* -y / (1 + exp(m)), the same from either side without overflow */
    double c = -j->y[i] * inv * (m > 0 ? e / (1.0 + e) : 1.0 / (1.0 + e));
    if (j->dense) { /* no scatter: this loop vectorises */
        const float *x = j->val + j->rp[i];
        for (uint32_t f = 0; f < j->d; f++)
            g[f] += c * (double)x[f];
    } else {
        for (uint64_t k = j->rp[i]; k < j->rp[i + 1]; k++)
            g[j->idx[k]] += c * (double)j->val[k];
    }
    g[j->d] += c;
    return logloss(m, e);
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

/* Adds row's terms (the gradient's scaled by inv, the loss not) into acc. */
static void row_exact(const struct lr_job *j, const double *w, uint64_t i, double inv,
                      rally_xsum_t *acc, double *tmp, uint64_t *at)
{
    double m = margin_of(j, w, i), e = exp(-fabs(m)), loss = logloss(m, e);
    double c = -j->y[i] * inv * (m > 0 ? e / (1.0 + e) : 1.0 / (1.0 + e));
    rally_xsum_add(acc, (size_t)j->d + 1, &loss, 1);
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
