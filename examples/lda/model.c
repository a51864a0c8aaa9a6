/*
 * model.c — how an LDA model is stored and shown: its bytes (the checkpoint,
 * the --model-out file and what model_digest hashes), the log likelihood,
 * and the JSON of --json and --show.
 *
 * The bytes (README.md, "Model format"), little-endian and fixed width:
 * magic "RALLYLDA", format version, topics K, vocabulary V, 4 reserved
 * bytes, iteration, seed, alpha and beta (IEEE double bits), tokens, 8
 * reserved bytes, then the V x K topic-word counts as 32-bit numbers
 * (word-major), and the rally_digest64 of everything before it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lda.h"

#define LDA_MAGIC "RALLYLDA"
#define LDA_FORMAT 1u
#define LDA_HEADER_NBYTES 64u

size_t lda_model_nbytes(uint32_t topics, uint32_t vocab)
{
    return LDA_HEADER_NBYTES + (size_t)topics * vocab * 4 + 8;
}

void lda_model_encode(const struct lda_model *m, unsigned char *b)
{
    size_t n = lda_model_nbytes(m->topics, m->vocab), cells = (size_t)m->topics * m->vocab;
    memcpy(b, LDA_MAGIC, 8);
    ex_put32(b + 8, LDA_FORMAT);
    ex_put32(b + 12, m->topics);
    ex_put32(b + 16, m->vocab);
    ex_put32(b + 20, 0);
    ex_put64(b + 24, m->iteration);
    ex_put64(b + 32, m->seed);
    ex_put64(b + 40, ex_dbits(m->alpha));
    ex_put64(b + 48, ex_dbits(m->beta));
    ex_put64(b + 56, m->tokens);
    unsigned char *p = b + LDA_HEADER_NBYTES;
    for (size_t i = 0; i < cells; i++, p += 4)
        ex_put32(p, m->counts[i]);
    ex_put64(p, rally_digest64(b, n - 8));
}

int lda_model_decode(const unsigned char *b, size_t n, struct lda_model *m, const char **why)
{
    if (n < LDA_HEADER_NBYTES + 8 || memcmp(b, LDA_MAGIC, 8) != 0) {
        *why = "not a rally-lda model (bad magic or too short)";
        return -1;
    }
    if (ex_get32(b + 8) != LDA_FORMAT) {
        *why = "an unknown model format version";
        return -1;
    }
    uint32_t K = ex_get32(b + 12), V = ex_get32(b + 16);
    if (K == 0 || K > LDA_MAX_TOPICS || V == 0 || (uint64_t)K * V > LDA_MAX_CELLS ||
        n != lda_model_nbytes(K, V)) {
        *why = "a size that does not match its topics and vocabulary";
        return -1;
    }
    if (ex_get64(b + n - 8) != rally_digest64(b, n - 8)) {
        *why = "a checksum mismatch (the file is corrupt)";
        return -1;
    }
    size_t cells = (size_t)K * V;
    uint32_t *c = malloc(cells * sizeof *c);
    if (c == NULL) {
        *why = "out of memory";
        return -1;
    }
    for (size_t i = 0; i < cells; i++)
        c[i] = ex_get32(b + LDA_HEADER_NBYTES + 4 * i);
    *m = (struct lda_model){.topics = K,
                            .vocab = V,
                            .iteration = ex_get64(b + 24),
                            .seed = ex_get64(b + 32),
                            .alpha = ex_bitsd(ex_get64(b + 40)),
                            .beta = ex_bitsd(ex_get64(b + 48)),
                            .tokens = ex_get64(b + 56),
                            .counts = c};
    return 0;
}

/* log p(w | z) = sum over topics of log Gamma(V beta) - log Gamma(n_k + V beta)
 * + sum over words of log Gamma(n_wk + beta) - log Gamma(beta). */
double lda_log_likelihood(const struct lda_model *m)
{
    const uint32_t K = m->topics;
    double ll = 0, vb = m->vocab * m->beta, lgb = lgamma(m->beta);
    for (uint32_t k = 0; k < K; k++) {
        uint64_t nk = 0;
        double s = 0;
        for (size_t w = 0; w < m->vocab; w++) {
            uint32_t c = m->counts[w * K + k];
            nk += c;
            if (c)
                s += lgamma(c + m->beta) - lgb;
        }
        ll += s + lgamma(vb) - lgamma((double)nk + vb);
    }
    return ll;
}

/* --- JSON --------------------------------------------------------------------- */

void lda_model_json(FILE *f, const struct lda_model *m, uint64_t digest, uint32_t top_words)
{
    const uint32_t K = m->topics;
    uint32_t n = top_words < m->vocab ? top_words : m->vocab;
    uint32_t *top = malloc((n ? n : 1) * sizeof *top);
    fprintf(f,
            "{\"format\": \"rally-lda\", \"format_version\": %u, \"topics\": %" PRIu32
            ", \"vocabulary\": %" PRIu32 ", \"iteration\": %" PRIu64 ", \"seed\": %" PRIu64
            ", \"alpha\": %.17g, \"beta\": %.17g, \"tokens\": %" PRIu64
            ", \"log_likelihood\": %.17g, \"model_digest\": \"%016" PRIx64 "\",\n"
            " \"topics_top_words\": [",
            LDA_FORMAT, K, m->vocab, m->iteration, m->seed, m->alpha, m->beta, m->tokens,
            lda_log_likelihood(m), digest);
    for (uint32_t k = 0; k < K; k++) {
        uint64_t nk = 0;
        for (size_t w = 0; w < m->vocab; w++)
            nk += m->counts[w * K + k];
        /* the n heaviest words, ties to the smaller id: an insertion into top */
        uint32_t have = 0;
        for (uint32_t w = 0; w < m->vocab && top; w++) {
            uint32_t c = m->counts[(size_t)w * K + k], at = have;
            while (at > 0 && m->counts[(size_t)top[at - 1] * K + k] < c)
                at--;
            if (at >= n)
                continue;
            if (have < n)
                have++;
            memmove(top + at + 1, top + at, (have - 1 - at) * sizeof *top);
            top[at] = w;
        }
        fprintf(f, "%s\n  {\"words\": %" PRIu64 ", \"top\": [", k ? "," : "", nk);
        for (uint32_t i = 0; i < have; i++)
            fprintf(f, "%s[%" PRIu32 ", %" PRIu32 "]", i ? ", " : "", top[i] + 1,
                    m->counts[(size_t)top[i] * K + k]);
        fprintf(f, "]}");
    }
    fprintf(f, "\n ]}\n");
    free(top);
}

int lda_model_show(const char *path)
{
    unsigned char *b = NULL;
    size_t n = 0;
    struct lda_model m = {0};
    const char *why = NULL;
    char err[4200];
    int status = LDA_EXIT_RALLY;
    if (ex_slurp(path, lda_model_nbytes(1, (uint32_t)LDA_MAX_CELLS), &b, &n, err, sizeof err) != 0) {
        fprintf(stderr, "rally-lda: %s\n", err);
        goto out;
    }
    if (lda_model_decode(b, n, &m, &why) != 0) {
        fprintf(stderr, "rally-lda: %s: %s\n", path, why);
        goto out;
    }
    lda_model_json(stdout, &m, rally_digest64(b, n), 10);
    status = LDA_EXIT_OK;
out:
    free(m.counts);
    free(b);
    return status;
}
