/*
 * gbdt.c — rally-gbdt's main and the course of the job: read the shard,
 * agree on its shape, sketch the features, load the trees from a checkpoint
 * (and rebuild the prediction cache from them) or start from none, boost,
 * report.  examples/gbdt/README.md explains the flags, the JSON model and
 * how recovery works; in short:
 *
 *   rally-run -n 4 rally-gbdt --data train.csv --data-opt csv_label=0 --trees 50
 *
 * Before rally_load_checkpoint come the bootstrap collectives, which a
 * restarted worker replays from the survivors: the feature count and an
 * error flag (MAX), every shard's row count (allgather) and the quantile
 * sketch (allgather, sketch.c).  The trees are the global model; the
 * prediction cache is derived from them and never checkpointed.
 *
 * Output (rank 0 unless said): every rank "shard R fingerprint HEX rows N pid
 * P"; a restarted rank "rank R restarted: resuming after tree T ..." with
 * the cache rebuild's time; one line per tree "tree T train-logloss X time
 * S s"; "predictions: digest=HEX rows=N" (every row's cached margin); last
 * "result: model_digest=HEX objective=X" (no timing in it).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "gbdt.h"
#include "shard.h"

/* The shard as a dense rows x d array of floats, NaN where a value is
 * missing, and its labels.  0, or -1 out of memory. */
static int densify(struct gb_job *j, const rally_dataset_t *ds)
{
    const uint64_t *rp;
    const uint32_t *idx;
    const float *val;
    rally_data_csr(ds, &rp, &idx, &val);
    if ((j->x = malloc((j->rows * j->d + 1) * sizeof *j->x)) == NULL ||
        (j->y = malloc((j->rows + 1) * sizeof *j->y)) == NULL)
        return -1;
    for (uint64_t i = 0; i < j->rows * j->d; i++)
        j->x[i] = NAN;
    for (uint64_t i = 0; i < j->rows; i++)
        for (uint64_t e = rp[i]; e < rp[i + 1]; e++)
            j->x[i * j->d + idx[e]] = val[e];
    if (j->rows > 0)
        memcpy(j->y, rally_data_labels(ds), j->rows * sizeof *j->y);
    return 0;
}

/* A sentence in err when the labels do not suit the objective. */
static int bad_labels(const rally_dataset_t *ds, const struct gb_opts *o, char *err, size_t cap)
{
    const float *y = rally_data_labels(ds);
    if (y == NULL && rally_data_num_rows(ds) > 0) {
        snprintf(err, cap, "%s has no labels (CSV: --data-opt csv_label=COLUMN)", o->ex.data);
        return 1;
    }
    for (uint64_t i = 0; i < rally_data_num_rows(ds); i++)
        if (!isfinite(y[i]) || (o->p.objective == GB_LOGISTIC && y[i] != 0 && y[i] != 1)) {
            snprintf(err, cap, "%s: the row at byte %" PRIu64 " has label %g; %s", o->ex.data,
                     rally_data_row_offset(ds, i), (double)y[i],
                     o->p.objective == GB_LOGISTIC ? "binary:logistic wants 0 or 1"
                                                   : "labels must be finite");
            return 1;
        }
    return 0;
}

/* Reads this worker's shard, agrees with the others on the feature count and
 * on whether all could read theirs, learns every shard's row count, and
 * sketches the features.  The exit status. */
static int bootstrap(struct gb_job *j, const struct gb_opts *o)
{
    rally_dataset_t *ds = NULL;
    char err[8192] = "";
    int status = GB_EXIT_INPUT, rc;
    int bad = rally_data_read(o->ex.data, o->ex.dopts, j->rank, j->world, &ds, err, sizeof err) !=
              RALLY_OK;
    if (!bad && rally_data_num_features(ds) > GB_MAX_FEATURES) {
        snprintf(err, sizeof err, "%s: %" PRIu64 " features, at most %u are supported", o->ex.data,
                 rally_data_num_features(ds), GB_MAX_FEATURES);
        bad = 1;
    }
    if (!bad && rally_data_num_rows(ds) > UINT32_MAX) { /* grow.c numbers rows in 32 bits */
        snprintf(err, sizeof err,
                 "%s: %" PRIu64 " rows in this shard, at most %" PRIu32
                 " are supported; run more workers",
                 o->ex.data, rally_data_num_rows(ds), UINT32_MAX);
        bad = 1;
    }
    if (!bad)
        bad = bad_labels(ds, o, err, sizeof err);
    if (!bad) {
        j->rows = rally_data_num_rows(ds);
        if ((rc = ex_shard(j->r, ds, j->rank)) != RALLY_OK) {
            status = gb_fail(j, "rally_set_input", rc);
            goto out;
        }
    }
    if (bad)
        fprintf(stderr, "rally-gbdt: rank %d: %s\n", j->rank, err);
    uint64_t agree[2] = {bad ? 0 : rally_data_num_features(ds), (uint64_t)bad};
    if ((rc = rally_allreduce(j->r, agree, 2, RALLY_UINT64, RALLY_MAX, NULL, NULL)) != RALLY_OK) {
        status = gb_fail(j, "the bootstrap allreduce", rc);
        goto out;
    }
    if (agree[1] != 0) {
        if (!bad && j->rank == 0)
            fprintf(stderr, "rally-gbdt: another worker could not read its input; stopping\n");
        goto out;
    }
    if (agree[0] == 0) {
        if (j->rank == 0)
            fprintf(stderr, "rally-gbdt: %s has no features\n", o->ex.data);
        goto out;
    }
    j->d = (uint32_t)agree[0];
    if (densify(j, ds) != 0 || (j->pred = malloc((j->rows + 1) * sizeof *j->pred)) == NULL ||
        (j->gh = malloc((2 * j->rows + 1) * sizeof *j->gh)) == NULL ||
        (j->order = malloc((j->rows + 1) * sizeof *j->order)) == NULL ||
        (o->reproducible && ((j->qgh = malloc((2 * j->rows + 1) * sizeof *j->qgh)) == NULL ||
                             (j->loss_acc = rally_xsum_new(1)) == NULL))) {
        fprintf(stderr, "rally-gbdt: out of memory for %" PRIu64 " rows\n", j->rows);
        status = GB_EXIT_RALLY;
        goto out;
    }
    rally_data_free(ds);
    ds = NULL;
    uint64_t *shard_rows = malloc((size_t)j->world * sizeof *shard_rows);
    if (shard_rows == NULL) {
        status = gb_oom();
        goto out;
    }
    rc = rally_allgather(j->r, &j->rows, sizeof j->rows, shard_rows);
    for (int r = 0; r < j->world && rc == RALLY_OK; r++)
        j->total_rows += shard_rows[r];
    free(shard_rows);
    if (rc != RALLY_OK) {
        status = gb_fail(j, "the row-count allgather", rc);
        goto out;
    }
    if (j->total_rows == 0) {
        if (j->rank == 0)
            fprintf(stderr, "rally-gbdt: %s has no rows\n", o->ex.data);
        goto out;
    }
    status = gb_sketch(j, o->p.max_bin);
out:
    rally_data_free(ds);
    return status;
}

static int same_params(const struct gb_params *a, const struct gb_params *b)
{
    return a->objective == b->objective && a->max_depth == b->max_depth &&
           a->max_bin == b->max_bin && a->eta == b->eta && a->lambda == b->lambda &&
           a->gamma == b->gamma && a->min_child_weight == b->min_child_weight &&
           a->base_score == b->base_score;
}

/* The trees from the newest checkpoint, and the prediction cache rebuilt
 * from them (a restarted worker); or no trees and every prediction at the
 * base score (a fresh job).  The exit status. */
static int load_or_start(struct gb_job *j, const struct gb_opts *o, struct gb_model *m)
{
    void *saved = NULL;
    uint64_t saved_n = 0, version = 0;
    const char *why = NULL;
    int status = GB_EXIT_RALLY, rc;
    m->p = o->p;
    m->d = j->d;
    if ((rc = rally_load_checkpoint(j->r, &saved, &saved_n, NULL, NULL, &version)) != RALLY_OK) {
        status = gb_fail(j, "rally_load_checkpoint", rc);
        goto out;
    }
    if (version > 0) {
        struct gb_model got = {0};
        if (gb_model_decode(saved, saved_n, &got, &why) != 0 || got.d != j->d ||
            !same_params(&got.p, &o->p) || got.ntrees > o->trees) {
            fprintf(stderr, "rally-gbdt: rank %d: the checkpoint is %s\n", j->rank,
                    why ? why : "for other parameters, features or fewer trees");
            gb_model_free(&got);
            goto out;
        }
        *m = got;
        double t0 = ex_now_s();
        gb_rebuild_cache(m, j->x, j->rows, j->pred);
        ex_say("rank %d restarted: resuming after tree %" PRIu32 " (checkpoint version %" PRIu64
               "); prediction cache of %" PRIu64 " rows rebuilt from %" PRIu32 " trees in %.4f s\n",
               j->rank, m->ntrees, version, j->rows, m->ntrees, ex_now_s() - t0);
        status = GB_EXIT_OK;
        goto out;
    }
    gb_rebuild_cache(m, j->x, j->rows, j->pred); /* no trees: the base margin */
    status = GB_EXIT_OK;
out:
    rally_free(saved);
    return status;
}

/* Every rank's cached predictions hashed (allgather), the predictions file
 * (allgatherv, --pred-out), the final loss; rank 0 saves and prints the
 * model and the result line.  The exit status. */
static int report(struct gb_job *j, const struct gb_opts *o, const struct gb_model *m)
{
    uint64_t mine = rally_digest64((const unsigned char *)j->pred, j->rows * sizeof *j->pred);
    uint64_t *all = malloc((size_t)j->world * sizeof *all), digest;
    double *out = NULL, objective = 0;
    void *gathered = NULL;
    uint64_t *sizes = malloc((size_t)j->world * sizeof *sizes);
    char *json = NULL, err[8192];
    size_t jn = 0;
    int status = GB_EXIT_RALLY, rc;
    if (all == NULL || sizes == NULL) {
        status = gb_oom();
        goto out;
    }
    if ((status = gb_train_loss(j, m, &objective)) != GB_EXIT_OK)
        goto out;
    status = GB_EXIT_RALLY;
    if ((rc = rally_allgather(j->r, &mine, sizeof mine, all)) != RALLY_OK) {
        status = gb_fail(j, "the predictions allgather", rc);
        goto out;
    }
    digest = rally_digest64((const unsigned char *)all, (size_t)j->world * sizeof *all);
    if (o->pred_out != NULL) {
        if ((out = malloc((j->rows + 1) * sizeof *out)) == NULL) {
            status = gb_oom();
            goto out;
        }
        for (uint64_t i = 0; i < j->rows; i++)
            out[i] = gb_output(&m->p, j->pred[i]);
        if ((rc = rally_allgatherv(j->r, out, j->rows * sizeof *out, &gathered, sizes)) !=
            RALLY_OK) {
            status = gb_fail(j, "the predictions allgatherv", rc);
            goto out;
        }
    }
    if (j->rank != 0) {
        status = GB_EXIT_OK;
        goto out;
    }
    if (o->pred_out != NULL) {
        FILE *f = fopen(o->pred_out, "w");
        const double *p = gathered;
        int ok = f != NULL;
        for (uint64_t i = 0; ok && i < j->total_rows; i++)
            ok = fprintf(f, "%.17g\n", p[i]) > 0;
        if (f != NULL && fclose(f) != 0)
            ok = 0;
        if (!ok) {
            fprintf(stderr, "rally-gbdt: %s: cannot write the predictions\n", o->pred_out);
            goto out;
        }
    }
    if ((o->ex.model_out != NULL || o->ex.json) && gb_model_json(m, &json, &jn) != 0) {
        status = gb_oom();
        goto out;
    }
    if (o->ex.model_out != NULL && ex_write_file(o->ex.model_out, json, jn, err, sizeof err) != 0) {
        fprintf(stderr, "rally-gbdt: %s\n", err);
        goto out;
    }
    if (o->ex.json)
        fwrite(json, 1, jn, stdout);
    ex_say("predictions: digest=%016" PRIx64 " rows=%" PRIu64 "\n", digest, j->total_rows);
    ex_say("result: model_digest=%016" PRIx64 " objective=%.17g\n", gb_model_digest(m), objective);
    status = GB_EXIT_OK;
out:
    free(all);
    free(sizes);
    free(out);
    free(json);
    rally_free(gathered);
    return status;
}

/* Names the job for durable snapshots: its options (rally_* settings
 * removed) are the configuration a resumed job must share. */
static int register_app(const struct gb_job *j, int argc, char **argv)
{
    char *cfg = ex_join_args(argc, argv);
    if (cfg == NULL)
        return gb_oom();
    int rc = rally_set_app(j->r, "rally-gbdt", cfg);
    free(cfg);
    return rc == RALLY_OK ? GB_EXIT_OK : gb_fail(j, "rally_set_app", rc);
}

/* Forgets the shard, what is derived from it and the model, for the rank
 * and world the job has now. */
static void job_reset(struct gb_job *j, struct gb_model *m)
{
    gb_model_free(m);
    *m = (struct gb_model){0};
    free(j->x);
    free(j->y);
    free(j->bins);
    free(j->cols);
    free(j->nbin);
    free(j->cuts);
    free(j->pred);
    free(j->gh);
    free(j->order);
    free(j->qgh);
    rally_xsum_free(j->loss_acc);
    struct gb_job fresh = {.r = j->r,
                           .rank = rally_rank(j->r),
                           .world = rally_world_size(j->r),
                           .reproducible = j->reproducible};
    *j = fresh;
}

int main(int argc, char **argv)
{
    int status = gb_early_flags(argc, argv); /* --help, --show, predict: no job */
    if (status >= 0)
        return status;

    struct gb_job j = {0};
    struct gb_opts o = {0};
    struct gb_model m = {0};
    int rc = rally_init(&j.r, &argc, &argv);
    if (rc != RALLY_OK) {
        fprintf(stderr, "rally-gbdt: rally_init failed: %s (%s)\n", rally_errmsg(j.r),
                rally_strstatus(rc));
        rally_finalize(j.r);
        return GB_EXIT_RALLY;
    }
    j.rank = rally_rank(j.r);
    j.world = rally_world_size(j.r);

    int parsed = gb_opts_parse(argc, argv, &o); /* 1: --help done; -1: a usage error */
    if (parsed != 0) {
        status = parsed > 0 ? GB_EXIT_OK : GB_EXIT_INPUT;
        goto out;
    }
    if ((status = register_app(&j, argc, argv)) != GB_EXIT_OK) /* for snapshots */
        goto out;
    j.reproducible = o.reproducible;
    for (;;) {
        if ((status = bootstrap(&j, &o)) == GB_EXIT_OK && /* the shard, its shape, the sketch */
            (status = load_or_start(&j, &o, &m)) == GB_EXIT_OK) /* trees, and the cache */
            status = gb_boost(&j, &o, &m);                      /* grow the trees */
        if (status != GB_RESIZED)
            break;
        /* the job went on with other workers from its newest checkpoint: a
         * new shard, its sketch, and its prediction cache rebuilt at the load */
        job_reset(&j, &m);
        ex_say("rank %d of %d now: reading its shard again\n", j.rank, j.world);
    }
    if (status == GB_EXIT_OK)
        status = report(&j, &o, &m); /* digests, --model-out, --json, the result line */
out:
    gb_grow_free();
    job_reset(&j, &m);
    gb_opts_free(&o);
    if (rally_finalize(j.r) != RALLY_OK && status == GB_EXIT_OK)
        status = GB_EXIT_RALLY;
    return status;
}
