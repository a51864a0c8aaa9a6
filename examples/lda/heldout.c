/*
 * heldout.c — perplexity on held-out documents, the number to compare
 * topic models by (README.md, "Perplexity").
 *
 * The topics are fixed at phi_kw = (n_wk + beta) / (n_k + V beta).  A
 * held-out document's mix theta starts uniform and takes LDA_FOLD_IN_STEPS
 * EM steps, each theta_k <- (alpha + sum_w c_w r_wk) / (N + K alpha) with
 * r_wk = theta_k phi_kw / sum_j theta_j phi_jw from the step before.  Then
 * the document adds sum_w c_w log(sum_k theta_k phi_kw) to the log
 * likelihood, and the perplexity is exp(-log likelihood / words).  The mix
 * is fitted on the very words it then scores (the usual "fold-in"), so the
 * figure is optimistic in the same way for every model it is used on:
 * tests/rigs/lda_sklearn.py scores scikit-learn's topics with the same rule.
 * Rank 0 scores every document alone, in file order: the figure does not
 * depend on the number of workers.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lda.h"

int lda_perplexity(const struct lda_model *m, const char *path, double *perplexity,
                   uint64_t *words, uint64_t *unknown, char *err, size_t cap)
{
    const uint32_t K = m->topics;
    rally_data_opts_t *o = NULL;
    rally_dataset_t *ds = NULL;
    double *phi = malloc((size_t)m->vocab * K * sizeof *phi); /* word-major, as the counts */
    double *theta = malloc(2 * (size_t)K * sizeof *theta), *acc = theta + K;
    int64_t *nk = calloc(K, sizeof *nk);
    int rc = -1;
    if (phi == NULL || theta == NULL || nk == NULL) {
        snprintf(err, cap, "out of memory for %u x %u topics", K, m->vocab);
        goto out;
    }
    for (size_t w = 0; w < m->vocab; w++)
        for (uint32_t k = 0; k < K; k++)
            nk[k] += m->counts[w * K + k];
    for (size_t w = 0; w < m->vocab; w++)
        for (uint32_t k = 0; k < K; k++)
            phi[w * K + k] =
                (m->counts[w * K + k] + m->beta) / ((double)nk[k] + m->vocab * m->beta);
    if (rally_data_opts_new(&o) != RALLY_OK ||
        rally_data_opts_set(o, "format", "libsvm", err, cap) != RALLY_OK ||
        rally_data_read(path, o, 0, 1, &ds, err, cap) != RALLY_OK)
        goto out;
    const uint64_t *rp;
    const uint32_t *idx;
    const float *val;
    rally_data_csr(ds, &rp, &idx, &val);
    double ll = 0;
    *words = *unknown = 0;
    for (uint64_t d = 0; d < rally_data_num_rows(ds); d++) {
        double n = 0;
        for (uint64_t e = rp[d]; e < rp[d + 1]; e++)
            if (idx[e] < m->vocab)
                n += val[e];
            else
                *unknown += (uint64_t)val[e];
        if (n == 0)
            continue;
        for (uint32_t k = 0; k < K; k++)
            theta[k] = 1.0 / K;
        for (int step = 0; step < LDA_FOLD_IN_STEPS; step++) {
            memset(acc, 0, K * sizeof *acc);
            for (uint64_t e = rp[d]; e < rp[d + 1]; e++) {
                if (idx[e] >= m->vocab)
                    continue;
                const double *f = phi + (size_t)idx[e] * K;
                double s = 0;
                for (uint32_t k = 0; k < K; k++)
                    s += theta[k] * f[k];
                for (uint32_t k = 0; k < K; k++)
                    acc[k] += val[e] * theta[k] * f[k] / s;
            }
            for (uint32_t k = 0; k < K; k++)
                theta[k] = (m->alpha + acc[k]) / (n + K * m->alpha);
        }
        for (uint64_t e = rp[d]; e < rp[d + 1]; e++) {
            if (idx[e] >= m->vocab)
                continue;
            const double *f = phi + (size_t)idx[e] * K;
            double s = 0;
            for (uint32_t k = 0; k < K; k++)
                s += theta[k] * f[k];
            ll += val[e] * log(s);
        }
        *words += (uint64_t)n;
    }
    if (*words == 0) {
        snprintf(err, cap, "%s: no held-out word is in the model's vocabulary", path);
        goto out;
    }
    *perplexity = exp(-ll / (double)*words);
    rc = 0;
out:
    rally_data_free(ds);
    rally_data_opts_free(o);
    free(phi);
    free(theta);
    free(nk);
    return rc;
}
