/*
 * loss.c — the logistic loss and its gradient over this worker's shard, read
 * straight from the data reader's CSR arrays (sparse input stays sparse).
 *
 * For row j with margin m = y_j (w . a_j + b):  loss = log(1 + exp(-m)),
 * computed without overflow, and d loss / d(w . a_j + b) = -y_j / (1 + exp(m)).
 */
#include <math.h>

#include "linear.h"

static double margin_of(const struct lr_job *j, const double *w, uint64_t row)
{
    double z = w[j->d];
    for (uint64_t e = j->rp[row]; e < j->rp[row + 1]; e++)
        z += w[j->idx[e]] * (double)j->val[e];
    return j->y[row] * z;
}

static double logloss(double m)
{
    return m > 0 ? log1p(exp(-m)) : -m + log1p(exp(m));
}

double lr_loss_grad(const struct lr_job *j, const double *w, double scale, double *g)
{
    double sum = 0, inv = 1.0 / scale;
    for (uint64_t i = 0; i < j->rows; i++) {
        double m = margin_of(j, w, i);
        sum += logloss(m);
        double c = -j->y[i] * inv / (1.0 + exp(m));
        for (uint64_t e = j->rp[i]; e < j->rp[i + 1]; e++)
            g[j->idx[e]] += c * (double)j->val[e];
        g[j->d] += c;
    }
    return sum * inv;
}

double lr_loss(const struct lr_job *j, const double *w, double scale)
{
    double sum = 0;
    for (uint64_t i = 0; i < j->rows; i++)
        sum += logloss(margin_of(j, w, i));
    return sum / scale;
}
