/*
 * lda.c — rally-lda's main and the course of the job: read the shard's
 * documents, agree on the vocabulary, load the model and this shard's topics
 * from a checkpoint or draw them, sweep, report.  examples/lda/README.md
 * explains the flags, the model format and why the bits do not depend on the
 * number of workers; in short:
 *
 *   rally-datagen --docs 4000 --vocab 2000 --topics 20 --seed 1 -o docs.svm
 *   rally-run -n 4 rally-lda --data docs.svm --topics 20 --iters 200
 *
 * Output (rank 0 unless said): every rank "shard R fingerprint HEX rows N pid
 * P"; a restarted rank "rank R restarted: resuming after iteration T"; one
 * line per sweep "iteration T log_likelihood X time S s"; last "result:
 * model_digest=HEX log_likelihood=X [perplexity=Y]" (no timing in it).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lda.h"
#include "args.h"
#include "shard.h"

/* Whether the shard can be keyed by byte offsets: LIBSVM, range partition.
 * NULL, or the reason. */
static const char *unkeyable(const rally_dataset_t *ds)
{
    if (strcmp(rally_data_format(ds), "libsvm") != 0)
        return "documents are LIBSVM lines 'label word:count ...', not CSV";
    if (strcmp(rally_data_partition(ds), "range") != 0)
        return "a document's id is its byte offset, which only the range partition owns by "
               "(drop partition=hash)";
    return NULL;
}

/* The shard's documents into j: ids, token starts, words (each repeated by
 * its count).  0, or -1 with a sentence in err. */
static int take_docs(struct lda_job *j, const rally_dataset_t *ds, const char *path, char *err,
                     size_t cap)
{
    const uint64_t *rp;
    const uint32_t *idx;
    const float *val;
    rally_data_csr(ds, &rp, &idx, &val);
    j->docs = rally_data_num_rows(ds);
    uint64_t tokens = 0;
    for (uint64_t e = 0; e < rp[j->docs]; e++) {
        float v = val[e];
        if (!(v >= 0 && v <= LDA_MAX_WORD_COUNT && v == floorf(v))) {
            uint64_t d = 0;
            while (rp[d + 1] <= e)
                d++;
            snprintf(err, cap,
                     "%s: the document at byte %" PRIu64 " counts word %u %g times; a count "
                     "is a whole number from 0 to %u",
                     path, rally_data_row_offset(ds, d), idx[e] + 1, v, LDA_MAX_WORD_COUNT);
            return -1;
        }
        tokens += (uint64_t)v;
    }
    j->id = malloc((j->docs + 1) * sizeof *j->id);
    j->start = malloc((j->docs + 1) * sizeof *j->start);
    j->word = malloc((tokens + 1) * sizeof *j->word);
    j->z = malloc((tokens + 1) * sizeof *j->z);
    if (j->id == NULL || j->start == NULL || j->word == NULL || j->z == NULL) {
        snprintf(err, cap, "out of memory for %" PRIu64 " words", tokens);
        return -1;
    }
    uint64_t t = 0;
    j->longest = 0;
    for (uint64_t d = 0; d < j->docs; d++) {
        j->id[d] = rally_data_row_offset(ds, d);
        j->start[d] = t;
        for (uint64_t e = rp[d]; e < rp[d + 1]; e++)
            for (uint32_t c = 0; c < (uint32_t)val[e]; c++)
                j->word[t++] = idx[e];
        if (t - j->start[d] > j->longest)
            j->longest = t - j->start[d];
    }
    j->start[j->docs] = t;
    return 0;
}

/* Reads this worker's documents, then every worker agrees on the vocabulary
 * (the largest word id), on whether all could read their input, and on the
 * corpus's size.  The exit status. */
static int bootstrap(struct lda_job *j, const struct lda_opts *o)
{
    rally_dataset_t *ds = NULL;
    char err[8192] = "";
    const char *why;
    int status = LDA_EXIT_INPUT, rc;
    int bad =
        rally_data_read(o->ex.data, o->ex.dopts, j->rank, j->world, &ds, err, sizeof err) != RALLY_OK;
    if (!bad && (why = unkeyable(ds)) != NULL) {
        snprintf(err, sizeof err, "%s: %s", o->ex.data, why);
        bad = 1;
    }
    if (!bad)
        bad = take_docs(j, ds, o->ex.data, err, sizeof err) != 0;
    if (!bad) {
        j->file_size = rally_data_file_size(ds);
        if ((rc = ex_shard(j->r, ds, j->rank)) != RALLY_OK) {
            status = lda_fail(j, "rally_set_input", rc);
            goto out;
        }
    } else {
        fprintf(stderr, "rally-lda: rank %d: %s\n", j->rank, err);
    }
    uint64_t agree[2] = {bad ? 0 : rally_data_num_features(ds), (uint64_t)bad};
    if ((rc = rally_allreduce(j->r, agree, 2, RALLY_UINT64, RALLY_MAX, NULL, NULL)) != RALLY_OK) {
        status = lda_fail(j, "the bootstrap allreduce", rc);
        goto out;
    }
    if (agree[1] != 0) {
        if (!bad && j->rank == 0)
            fprintf(stderr, "rally-lda: another worker could not read its input; stopping\n");
        goto out;
    }
    uint64_t tokens = j->start[j->docs];
    if ((rc = rally_allreduce(j->r, &tokens, 1, RALLY_UINT64, RALLY_SUM, NULL, NULL)) != RALLY_OK) {
        status = lda_fail(j, "the word-count allreduce", rc);
        goto out;
    }
    if (agree[0] == 0 || tokens == 0) {
        if (j->rank == 0)
            fprintf(stderr, "rally-lda: %s holds no words\n", o->ex.data);
        goto out;
    }
    if (agree[0] * o->topics > LDA_MAX_CELLS || tokens > UINT32_MAX) {
        if (j->rank == 0)
            fprintf(stderr,
                    "rally-lda: %" PRIu64 " words x %u topics and %" PRIu64 " tokens: at most "
                    "%llu counts of at most %u\n",
                    agree[0], o->topics, tokens, (unsigned long long)LDA_MAX_CELLS, UINT32_MAX);
        goto out;
    }
    j->vocab = (uint32_t)agree[0];
    j->tokens = tokens;
    status = LDA_EXIT_OK;
out:
    rally_data_free(ds);
    return status;
}

/* The model and this shard's topics from the newest checkpoint (a restarted
 * or renumbered worker), or drawn and checkpointed as iteration 0 (a fresh
 * job).  The exit status. */
static int load_or_init(struct lda_job *j, const struct lda_opts *o, struct lda_model *m)
{
    void *g = NULL, *l = NULL;
    uint64_t gn = 0, ln = 0, version = 0;
    unsigned char *gb = NULL, *lb = NULL;
    const char *why;
    int status = LDA_EXIT_RALLY, rc;
    if ((rc = rally_load_checkpoint(j->r, &g, &gn, &l, &ln, &version)) != RALLY_OK) {
        status = lda_fail(j, "rally_load_checkpoint", rc);
        goto out;
    }
    if (version > 0) {
        if (lda_model_decode(g, gn, m, &why) != 0) {
            fprintf(stderr, "rally-lda: rank %d: the checkpoint is %s\n", j->rank, why);
            goto out;
        }
        if (m->topics != o->topics || m->vocab != j->vocab || m->seed != o->seed ||
            m->alpha != o->alpha || m->beta != o->beta || m->tokens != j->tokens) {
            fprintf(stderr, "rally-lda: rank %d: the checkpoint is for other documents or "
                            "other --topics, --seed, --alpha or --beta\n", j->rank);
            goto out;
        }
        if (lda_records_decode(j, l, ln, m->topics) != 0)
            goto out;
        ex_say("rank %d restarted: resuming after iteration %" PRIu64
               " (checkpoint version %" PRIu64 ")\n",
               j->rank, m->iteration, version);
        status = LDA_EXIT_OK;
        goto out;
    }
    *m = (struct lda_model){.topics = o->topics, .vocab = j->vocab, .seed = o->seed,
                            .alpha = o->alpha, .beta = o->beta, .tokens = j->tokens};
    size_t cells = (size_t)m->topics * m->vocab, gsize = lda_model_nbytes(m->topics, m->vocab);
    size_t lsize = lda_records_nbytes(j);
    m->counts = calloc(cells, sizeof *m->counts);
    gb = malloc(gsize);
    lb = malloc(lsize + 1);
    if (m->counts == NULL || gb == NULL || lb == NULL) {
        status = lda_oom();
        goto out;
    }
    lda_first_assignment(j, m, m->counts);
    if ((rc = rally_allreduce(j->r, m->counts, cells, RALLY_UINT32, RALLY_SUM, NULL, NULL)) !=
        RALLY_OK) {
        status = lda_fail(j, "the first counts' allreduce", rc);
        goto out;
    }
    lda_model_encode(m, gb);
    lda_records_encode(j, lb);
    if ((rc = rally_checkpoint(j->r, gb, gsize, lb, lsize)) != RALLY_OK) {
        status = lda_fail(j, "rally_checkpoint (iteration 0)", rc);
        goto out;
    }
    status = LDA_EXIT_OK;
out:
    free(gb);
    free(lb);
    rally_free(g);
    rally_free(l);
    return status;
}

/* Sweeps until o->iters are done, each one allreduce of the counts and one
 * checkpoint.  The exit status. */
static int train(struct lda_job *j, const struct lda_opts *o, struct lda_model *m)
{
    const uint32_t K = m->topics;
    size_t cells = (size_t)K * m->vocab, gsize = lda_model_nbytes(K, m->vocab);
    size_t lsize = lda_records_nbytes(j);
    struct lda_scratch t = {.nk = malloc(K * sizeof *t.nk),
                            .inv = malloc(K * sizeof *t.inv),
                            .p = malloc(K * sizeof *t.p),
                            .ndk = malloc(K * sizeof *t.ndk),
                            .old = malloc((j->longest + 1) * sizeof *t.old)};
    uint32_t *next = malloc(cells * sizeof *next);
    unsigned char *gb = malloc(gsize), *lb = malloc(lsize + 1); /* reused every sweep */
    double t_prev = ex_now_s();
    int status = LDA_EXIT_OK, rc;
    if (!t.nk || !t.inv || !t.p || !t.ndk || !t.old || !next || !gb || !lb) {
        status = lda_oom();
        goto out;
    }
    while (m->iteration < o->iters) {
        if (o->ex.pause_ms > 0)
            usleep((useconds_t)o->ex.pause_ms * 1000);
        memset(next, 0, cells * sizeof *next);
        lda_sweep(j, m, &t, next);
        if ((rc = rally_allreduce(j->r, next, cells, RALLY_UINT32, RALLY_SUM, NULL, NULL)) !=
            RALLY_OK) {
            status = lda_fail(j, "the counts' allreduce", rc);
            goto out;
        }
        uint32_t *swap = m->counts;
        m->counts = next;
        next = swap;
        m->iteration++;
        double now = ex_now_s();
        if (j->rank == 0 && !o->ex.quiet)
            ex_say("iteration %" PRIu64 " log_likelihood %.12g time %.4f s\n", m->iteration,
                   lda_log_likelihood(m), now - t_prev);
        t_prev = now;
        lda_model_encode(m, gb);
        lda_records_encode(j, lb);
        if ((rc = rally_checkpoint(j->r, gb, gsize, lb, lsize)) != RALLY_OK) {
            status = lda_fail(j, "rally_checkpoint", rc);
            goto out;
        }
    }
out:
    free(t.nk);
    free(t.inv);
    free(t.p);
    free(t.ndk);
    free(t.old);
    free(next);
    free(gb);
    free(lb);
    return status;
}

/* Rank 0 saves the model (--model-out), prints it (--json), scores it
 * (--heldout) and prints the result line.  The exit status. */
static int report(const struct lda_job *j, const struct lda_opts *o, const struct lda_model *m)
{
    if (j->rank != 0)
        return LDA_EXIT_OK;
    size_t n = lda_model_nbytes(m->topics, m->vocab);
    unsigned char *b = malloc(n);
    char err[8192], tail[96] = "";
    int status = LDA_EXIT_OK;
    if (b == NULL)
        return lda_oom();
    lda_model_encode(m, b);
    uint64_t digest = rally_digest64(b, n);
    if (o->ex.model_out != NULL && ex_write_file(o->ex.model_out, b, n, err, sizeof err) != 0) {
        fprintf(stderr, "rally-lda: %s\n", err);
        status = LDA_EXIT_RALLY;
    }
    if (o->ex.json)
        lda_model_json(stdout, m, digest, o->top_words);
    if (o->heldout != NULL) {
        double perplexity;
        uint64_t words, unknown;
        if (lda_perplexity(m, o->heldout, &perplexity, &words, &unknown, err, sizeof err) != 0) {
            fprintf(stderr, "rally-lda: %s\n", err);
            free(b);
            return LDA_EXIT_INPUT;
        }
        ex_say("heldout: %" PRIu64 " words scored, %" PRIu64 " outside the vocabulary skipped\n",
               words, unknown);
        snprintf(tail, sizeof tail, " perplexity=%.17g", perplexity);
    }
    ex_say("result: model_digest=%016" PRIx64 " log_likelihood=%.17g%s\n", digest,
           lda_log_likelihood(m), tail);
    free(b);
    return status;
}

static int register_app(struct lda_job *j, int argc, char **argv)
{
    char *cfg = ex_join_args(argc, argv);
    if (cfg == NULL)
        return lda_oom();
    int rc = rally_set_app(j->r, "rally-lda", cfg);
    free(cfg);
    return rc == RALLY_OK ? LDA_EXIT_OK : lda_fail(j, "rally_set_app", rc);
}

/* The owner of a document in a job of `world` workers: the range
 * partition's rule for its byte offset. */
static int owner(uint64_t id, int world, void *arg)
{
    return rally_data_range_owner(*(const uint64_t *)arg, id, world);
}

/* Forgets the shard and the model for a new rank and world. */
static void lda_job_reset(struct lda_job *j, struct lda_model *m)
{
    free(m->counts);
    free(j->id);
    free(j->start);
    free(j->word);
    free(j->z);
    *m = (struct lda_model){0};
    *j = (struct lda_job){.r = j->r, .rank = rally_rank(j->r), .world = rally_world_size(j->r)};
    ex_say("rank %d of %d now: reading its shard again\n", j->rank, j->world);
}

int main(int argc, char **argv)
{
    int status = lda_early_flags(argc, argv); /* --help, --version, --show MODEL: no job */
    if (status >= 0)
        return status;

    struct lda_job j = {0};
    struct lda_opts o = {0};
    struct lda_model m = {0};
    int rc = rally_init(&j.r, &argc, &argv);
    if (rc != RALLY_OK) {
        fprintf(stderr, "rally-lda: rally_init failed: %s (%s)\n", rally_errmsg(j.r),
                rally_strstatus(rc));
        rally_finalize(j.r);
        return LDA_EXIT_RALLY;
    }
    j.rank = rally_rank(j.r);
    j.world = rally_world_size(j.r);
    int parsed = lda_opts_parse(argc, argv, &o);
    if (parsed != 0) {
        status = parsed > 0 ? LDA_EXIT_OK : LDA_EXIT_INPUT;
        goto out;
    }
    if ((status = register_app(&j, argc, argv)) != LDA_EXIT_OK)
        goto out;
    /* the owner reads the file size, which the bootstrap sets before any
     * checkpoint or load */
    if ((rc = rally_set_local_records(j.r, owner, &j.file_size)) != RALLY_OK) {
        status = lda_fail(&j, "rally_set_local_records", rc);
        goto out;
    }
    for (;;) {
        if ((status = bootstrap(&j, &o)) == LDA_EXIT_OK &&  /* the documents, the vocabulary */
            (status = load_or_init(&j, &o, &m)) == LDA_EXIT_OK) /* checkpoint or first draw */
            status = train(&j, &o, &m);                         /* the sweeps */
        if (status != LDA_RESIZED)
            break;
        lda_job_reset(&j, &m); /* the job went on with other workers: another shard */
    }
    if (status == LDA_EXIT_OK)
        status = report(&j, &o, &m);
out:
    free(m.counts);
    free(j.id);
    free(j.start);
    free(j.word);
    free(j.z);
    lda_opts_free(&o);
    if (rally_finalize(j.r) != RALLY_OK && status == LDA_EXIT_OK)
        status = LDA_EXIT_RALLY;
    return status;
}
