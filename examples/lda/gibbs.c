/*
 * gibbs.c — the sampler, and the documents' topics as records.
 *
 * Word i of a document, of word w and topic k0, takes topic k with weight
 *
 *     (n_dk + alpha) * (n_wk + beta) * (1 / (n_k + V * beta))
 *
 * where n_dk counts the document's other words of topic k, and n_wk and n_k
 * are the model's counts (the start of the iteration) without word i and
 * with the new topics of the document's earlier words.  The sweep applies
 * those changes to the model's counts while it samples the document and
 * takes them back after it, so no document sees another's changes: each is
 * a function of the counts, its own topics, the seed, its id and the
 * iteration, whichever worker holds it.  The next counts are the sum of every
 * document's new topics, integers that the allreduce adds exactly.
 *
 * The random stream of a document at an iteration is splitmix64 from
 * mix(seed ^ mix(id ^ mix(iteration))); a draw in [0, 1) is (next >> 11) *
 * 2^-53, and the topic the first whose running weight exceeds the draw times
 * the total.
 */
#include <stdlib.h>
#include <string.h>

#include "lda.h"

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t next(uint64_t *s)
{
    return mix(*s += 0x9e3779b97f4a7c15ULL);
}

static uint64_t stream(uint64_t seed, uint64_t id, uint64_t iteration)
{
    return mix(seed ^ mix(id ^ mix(iteration)));
}

void lda_first_assignment(struct lda_job *j, const struct lda_model *m, uint32_t *counts)
{
    for (uint64_t d = 0; d < j->docs; d++) {
        uint64_t s = stream(m->seed, j->id[d], 0);
        for (uint64_t i = j->start[d]; i < j->start[d + 1]; i++) {
            j->z[i] = (uint16_t)(next(&s) % m->topics);
            counts[(size_t)j->word[i] * m->topics + j->z[i]]++;
        }
    }
}

/* n_k changed: its weight's divisor, 1 / (n_k + V beta), a function of
 * n_k alone (so when it is computed does not matter). */
static void set_nk(struct lda_scratch *t, uint32_t k, int64_t nk, double vb)
{
    t->nk[k] = nk;
    t->inv[k] = 1.0 / ((double)nk + vb);
}

/* Samples document d's words at iteration `it` against counts c (n_wk) and
 * t->nk (n_k), changing both as it goes. */
static void sample_doc(struct lda_job *j, uint64_t d, const struct lda_model *m, uint64_t it,
                       uint32_t *c, struct lda_scratch *t)
{
    const uint32_t K = m->topics;
    const double a = m->alpha, b = m->beta, vb = m->beta * m->vocab;
    uint32_t *ndk = t->ndk;
    double *p = t->p, *inv = t->inv;
    uint64_t s = stream(m->seed, j->id[d], it);
    memset(ndk, 0, K * sizeof *ndk);
    for (uint64_t i = j->start[d]; i < j->start[d + 1]; i++)
        ndk[j->z[i]]++;
    for (uint64_t i = j->start[d]; i < j->start[d + 1]; i++) {
        uint32_t *cw = c + (size_t)j->word[i] * K, k = j->z[i];
        cw[k]--, ndk[k]--;
        set_nk(t, k, t->nk[k] - 1, vb);
        double total = 0;
        for (uint32_t q = 0; q < K; q++)
            p[q] = total += (ndk[q] + a) * (cw[q] + b) * inv[q];
        double u = (double)(next(&s) >> 11) * 0x1.0p-53 * total;
        for (k = 0; k + 1 < K && p[k] <= u; k++)
            ;
        cw[k]++, ndk[k]++;
        set_nk(t, k, t->nk[k] + 1, vb);
        j->z[i] = (uint16_t)k;
    }
}

void lda_sweep(struct lda_job *j, const struct lda_model *m, struct lda_scratch *t,
               uint32_t *next_counts)
{
    const uint32_t K = m->topics;
    const double vb = m->beta * m->vocab;
    uint32_t *c = m->counts;
    memset(t->nk, 0, K * sizeof *t->nk);
    for (size_t w = 0; w < m->vocab; w++)
        for (uint32_t k = 0; k < K; k++)
            t->nk[k] += c[w * K + k];
    for (uint32_t k = 0; k < K; k++)
        set_nk(t, k, t->nk[k], vb);
    for (uint64_t d = 0; d < j->docs; d++) {
        uint64_t first = j->start[d], n = j->start[d + 1] - first;
        memcpy(t->old, j->z + first, n * sizeof *t->old); /* to take the changes back */
        sample_doc(j, d, m, m->iteration + 1, c, t);
        for (uint64_t i = 0; i < n; i++) {
            size_t w = (size_t)j->word[first + i] * K;
            uint16_t k = j->z[first + i], k0 = t->old[i];
            c[w + k]--, t->nk[k]--;
            c[w + k0]++, t->nk[k0]++;
            next_counts[w + k]++;
        }
        for (uint64_t i = 0; i < n; i++) { /* back to the counts' divisors */
            uint16_t k = j->z[first + i];
            if (t->old[i] != k)
                set_nk(t, k, t->nk[k], vb), set_nk(t, t->old[i], t->nk[t->old[i]], vb);
        }
    }
}

/* --- records ------------------------------------------------------------------ */

size_t lda_records_nbytes(const struct lda_job *j)
{
    return (size_t)j->docs * 12 + (size_t)j->start[j->docs] * 2;
}

void lda_records_encode(const struct lda_job *j, unsigned char *b)
{
    for (uint64_t d = 0; d < j->docs; d++) {
        uint64_t n = j->start[d + 1] - j->start[d];
        ex_put64(b, j->id[d]);
        ex_put32(b + 8, (uint32_t)(2 * n));
        b += 12;
        for (uint64_t i = j->start[d]; i < j->start[d + 1]; i++, b += 2)
            b[0] = (unsigned char)j->z[i], b[1] = (unsigned char)(j->z[i] >> 8);
    }
}

int lda_records_decode(struct lda_job *j, const unsigned char *b, size_t n, uint32_t topics)
{
    const unsigned char *end = b + n;
    for (uint64_t d = 0; d < j->docs; d++) {
        uint64_t words = j->start[d + 1] - j->start[d];
        if (end - b < 12 || ex_get64(b) != j->id[d] || ex_get32(b + 8) != 2 * words ||
            (size_t)(end - b - 12) < 2 * words) {
            fprintf(stderr,
                    "rally-lda: rank %d: the checkpoint's records are not this shard's documents "
                    "(document %" PRIu64 " at byte %" PRIu64 " of %" PRIu64 " words)\n",
                    j->rank, d, j->id[d], words);
            return -1;
        }
        b += 12;
        for (uint64_t i = j->start[d]; i < j->start[d + 1]; i++, b += 2)
            if ((j->z[i] = (uint16_t)(b[0] | b[1] << 8)) >= topics) {
                fprintf(stderr, "rally-lda: rank %d: the checkpoint holds topic %u of %u\n",
                        j->rank, j->z[i], topics);
                return -1;
            }
    }
    if (b != end) {
        fprintf(stderr, "rally-lda: rank %d: the checkpoint holds more records than this shard's "
                        "%" PRIu64 " documents\n",
                j->rank, j->docs);
        return -1;
    }
    return 0;
}
