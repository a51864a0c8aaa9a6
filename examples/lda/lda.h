/*
 * lda.h — what the parts of rally-lda share: the model, the job, the options,
 * and the functions each file offers the others.
 *
 *   lda.c      main and the job's course: read the shard, load or initialise, report
 *   options.c  the command line
 *   model.c    the model's bytes (checkpoint, --model-out), JSON, --show
 *   gibbs.c    the sampler: one sweep over this shard's documents, the records
 *   heldout.c  perplexity on held-out documents (rank 0 alone)
 *
 * Latent Dirichlet allocation by collapsed Gibbs sampling.  The global model
 * is the topic-word counts (integers, allreduced exactly); each document's
 * topic assignments are its record in the local model, keyed by the
 * document's byte offset in the file (rally_set_local_records with the range
 * partition's own rule, rally_data_range_owner).  A document is sampled from
 * the counts as they stood at the start of the iteration, changed only by
 * its own earlier words, with a random stream seeded by the seed, its id and
 * the iteration: so the model is the same bits at any number of workers and
 * across any change of them (README.md, "Why the bits do not depend on N").
 *
 * Only the public API is used (rally/rally.h, rally/data.h).
 */
#ifndef LDA_H
#define LDA_H

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "opts.h"
#include "rally/data.h"
#include "rally/rally.h"

#include "bytes.h"
#include "file.h"
#include "say.h"

#define LDA_MAX_TOPICS 65535u            /* an assignment is 16 bits */
#define LDA_MAX_CELLS (1ull << 28)       /* topics x vocabulary: 1 GiB of counts */
#define LDA_MAX_WORD_COUNT 1000000u      /* one word's count in one document */
#define LDA_FOLD_IN_STEPS 50             /* EM steps per held-out document (heldout.c) */

/* Exit statuses (usage() prints them); LDA_RESIZED is none: an elastic job
 * went on with other workers and main starts again from the shard. */
enum { LDA_EXIT_OK = 0, LDA_EXIT_RALLY = 1, LDA_EXIT_INPUT = 2, LDA_RESIZED = -2 };

/* The global model, exactly what is checkpointed (model.c, README.md). */
struct lda_model {
    uint32_t topics, vocab;
    uint64_t iteration;  /* sweeps done; 0 = the random first assignment */
    uint64_t seed;
    double alpha, beta;  /* the Dirichlet priors of document-topic and topic-word */
    uint64_t tokens;     /* words in the corpus */
    uint32_t *counts;    /* vocab x topics, word-major: counts[w * topics + k] */
};

/* A worker's documents: word ids expanded by count, in file order, and the
 * topic of each. */
struct lda_job {
    rally_t *r;
    int rank, world;
    uint64_t file_size;  /* the owner rule's S (rally_data_range_owner) */
    uint64_t docs;       /* this shard's */
    uint64_t *id;        /* [docs] the documents' byte offsets */
    uint64_t *start;     /* [docs + 1] each document's first token */
    uint32_t *word;      /* [tokens] */
    uint16_t *z;         /* [tokens] the topic of each */
    uint64_t longest;    /* this shard's longest document, in words */
    uint32_t vocab;      /* the job's: the largest word id of every shard */
    uint64_t tokens;     /* the job's */
};

struct lda_opts {
    struct ex_opts ex; /* --data, --data-opt, --model-out, --json, --pause-ms, --quiet */
    const char *heldout;
    uint32_t topics, top_words;
    uint64_t iters, seed;
    double alpha, beta;
};

/* --- options.c ---------------------------------------------------------------- */

/* --help, --version and --show MODEL, which need no job: the exit status, or
 * -1 when argv asks for none of them. */
int lda_early_flags(int argc, char **argv);
/* Fills o from argv.  0 to run, 1 when done (--help), -1 on a usage error. */
int lda_opts_parse(int argc, char **argv, struct lda_opts *o);
void lda_opts_free(struct lda_opts *o);

/* --- model.c ------------------------------------------------------------------ */

size_t lda_model_nbytes(uint32_t topics, uint32_t vocab);
void lda_model_encode(const struct lda_model *m, unsigned char *b);
/* Parses n bytes into m (m->counts newly allocated).  0, or -1 with the
 * reason in *why. */
int lda_model_decode(const unsigned char *b, size_t n, struct lda_model *m, const char **why);
/* log p(words | assignments) of the counts: the progress figure. */
double lda_log_likelihood(const struct lda_model *m);
/* m as JSON with each topic's top_words heaviest words (README.md). */
void lda_model_json(FILE *f, const struct lda_model *m, uint64_t digest, uint32_t top_words);
/* --show: the model file at path as JSON.  The exit status. */
int lda_model_show(const char *path);

/* --- gibbs.c ------------------------------------------------------------------ */

/* The first assignment (iteration 0): each word a topic from its document's
 * stream; adds them into counts (vocab x topics, zeroed by the caller). */
void lda_first_assignment(struct lda_job *j, const struct lda_model *m, uint32_t *counts);
/* A sweep's scratch, allocated once for the job: nk, inv, p and ndk of the
 * topics, old of the longest document. */
struct lda_scratch {
    int64_t *nk;
    double *inv, *p;
    uint32_t *ndk;
    uint16_t *old;
};
/* One sweep at iteration m->iteration + 1: every document of the shard
 * resampled from m->counts (left as it was) and its own words; the new
 * assignments' counts go into next (zeroed by the caller). */
void lda_sweep(struct lda_job *j, const struct lda_model *m, struct lda_scratch *t,
               uint32_t *next);
/* The local model's bytes: one record per document (its id, then its
 * topics as 16-bit little-endian numbers).  lda_records_nbytes is their size. */
size_t lda_records_nbytes(const struct lda_job *j);
void lda_records_encode(const struct lda_job *j, unsigned char *b);
/* Takes this shard's assignments from n bytes of records.  0, or -1 after
 * a sentence on stderr when they are not this shard's documents. */
int lda_records_decode(struct lda_job *j, const unsigned char *b, size_t n, uint32_t topics);

/* --- heldout.c ---------------------------------------------------------------- */

/* The perplexity of m on the documents of path (read whole): each
 * document's topic mix folded in by LDA_FOLD_IN_STEPS EM steps with the
 * topics fixed, then exp(-log likelihood / words).  Words past the model's
 * vocabulary are skipped and counted in *unknown.  0, or -1 with a sentence
 * in err. */
int lda_perplexity(const struct lda_model *m, const char *path, double *perplexity,
                   uint64_t *words, uint64_t *unknown, char *err, size_t cap);

/* --- one-line helpers --------------------------------------------------------- */

static inline int lda_fail(const struct lda_job *j, const char *what, int rc)
{
    if (rc == RALLY_ERESIZED)
        return LDA_RESIZED;
    fprintf(stderr, "rally-lda: rank %d: %s failed: %s (%s)\n", j->rank, what, rally_errmsg(j->r),
            rally_strstatus(rc));
    return LDA_EXIT_RALLY;
}

static inline int lda_oom(void)
{
    fprintf(stderr, "rally-lda: out of memory\n");
    return LDA_EXIT_RALLY;
}

#endif
