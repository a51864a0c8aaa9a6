/*
 * linear.c — rally-linear's main and the course of the job: read the shard,
 * agree on its shape, load the model from a checkpoint or start it, run the
 * solver, report.  In short:
 *
 *   rally-run -n 4 rally-linear --data train.svm --lambda 1e-4
 *   rally-run -n 4 rally-linear --data train.csv --data-opt csv_label=0 --solver admm
 *   rally-run -n 4 rally-linear --data train.svm --solver sgd --epochs 3 --batch 64
 *
 * Every worker reads its shard (rally/data.h, kept in CSR form) and logs its
 * fingerprint; SGD reads the whole data set, which its data cursor indexes.
 * The bootstrap collectives before rally_load_checkpoint, which a restarted
 * worker replays from the survivors: MAX of [feature count, error flag]
 * (LIBSVM shards may differ; one bad shard stops every worker cleanly) and
 * SUM of the row counts (not for SGD).  L-BFGS on a fresh start
 * evaluates the objective at w = 0 and checkpoints that as iteration 0, so a
 * recovery never redoes it; ADMM's start is admm.c's.
 *
 * Output (rank 0 unless said): every rank "shard R fingerprint HEX rows N
 * pid P"; a restarted rank "rank R restarted: resuming after iteration T";
 * one line per iteration with the loss and the time; last
 * "result: model_digest=HEX objective=X" (no timing in it).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linear.h"
#include "args.h"
#include "shard.h"

/* The labels as -1 / +1 in j->y; 0, or -1 with a sentence in err. */
static int labels(struct lr_job *j, const rally_dataset_t *ds, const char *path, char *err,
                  size_t cap)
{
    const float *lab = rally_data_labels(ds);
    if (lab == NULL && j->rows > 0) {
        snprintf(err, cap, "%s has no labels (CSV: set --data-opt csv_label=COLUMN)", path);
        return -1;
    }
    if ((j->y = malloc((j->rows + 1) * sizeof *j->y)) == NULL) {
        snprintf(err, cap, "out of memory for %" PRIu64 " labels", j->rows);
        return -1;
    }
    for (uint64_t i = 0; i < j->rows; i++) {
        if (lab[i] != -1.0f && lab[i] != 0.0f && lab[i] != 1.0f) {
            snprintf(err, cap,
                     "%s: the row at byte %" PRIu64 " has the label %g; want -1, 0 or 1 "
                     "(binary classification)",
                     path, rally_data_row_offset(ds, i), (double)lab[i]);
            return -1;
        }
        j->y[i] = lab[i] > 0 ? 1.0 : -1.0;
    }
    return 0;
}

/* Reads this worker's shard; every worker then agrees on the feature count
 * and on whether all could read their input, and learns the total row
 * count.  The exit status. */
static int bootstrap(struct lr_job *j, const struct lr_opts *o)
{
    char err[8192] = "";
    int status = LR_EXIT_INPUT, rc;
    int whole = o->solver == LR_SGD; /* SGD's cursor takes any sample id: the whole set */
    int bad = rally_data_read(o->ex.data, o->ex.dopts, whole ? 0 : j->rank, whole ? 1 : j->world,
                              &j->ds, err, sizeof err) != RALLY_OK;
    if (!bad && rally_data_num_features(j->ds) > LR_MAX_FEATURES) {
        snprintf(err, sizeof err, "%s: %" PRIu64 " features, at most %u are supported", o->ex.data,
                 rally_data_num_features(j->ds), LR_MAX_FEATURES);
        bad = 1;
    }
    if (!bad) {
        j->rows = rally_data_num_rows(j->ds);
        if ((rc = ex_shard(j->r, j->ds, j->rank)) != RALLY_OK) {
            status = lr_fail(j, "rally_set_input", rc);
            goto out;
        }
        bad = labels(j, j->ds, o->ex.data, err, sizeof err) != 0;
    }
    if (bad)
        fprintf(stderr, "rally-linear: rank %d: %s\n", j->rank, err);
    uint64_t agree[2] = {bad ? 0 : rally_data_num_features(j->ds), (uint64_t)bad};
    if ((rc = rally_allreduce(j->r, agree, 2, RALLY_UINT64, RALLY_MAX, NULL, NULL)) != RALLY_OK) {
        status = lr_fail(j, "the bootstrap allreduce", rc);
        goto out;
    }
    if (agree[1] != 0) {
        if (!bad && j->rank == 0)
            fprintf(stderr, "rally-linear: another worker could not read its input; stopping\n");
        goto out;
    }
    if (agree[0] == 0) {
        if (j->rank == 0)
            fprintf(stderr, "rally-linear: %s has no features\n", o->ex.data);
        goto out;
    }
    j->d = (uint32_t)agree[0];
    rally_data_csr(j->ds, &j->rp, &j->idx, &j->val);
    j->dense = 1; /* strictly increasing indices below d: d of them are 0 .. d-1 */
    for (uint64_t i = 0; i < j->rows && j->dense; i++)
        j->dense = j->rp[i + 1] - j->rp[i] == j->d;
    uint64_t total = j->rows;
    if (!whole &&
        (rc = rally_allreduce(j->r, &total, 1, RALLY_UINT64, RALLY_SUM, NULL, NULL)) != RALLY_OK) {
        status = lr_fail(j, "the row-count allreduce", rc);
        goto out;
    }
    if (total == 0) {
        if (j->rank == 0)
            fprintf(stderr, "rally-linear: %s has no rows\n", o->ex.data);
        goto out;
    }
    j->total_rows = total;
    status = LR_EXIT_OK;
out:
    return status;
}

/* L-BFGS: the model from the newest checkpoint (a restarted worker), or
 * w = 0 evaluated and checkpointed as iteration 0.  The exit status. */
static int lbfgs_load_or_start(struct lr_job *j, const struct lr_opts *o, struct lr_model *m)
{
    void *saved = NULL;
    unsigned char *bytes = NULL;
    uint64_t saved_n = 0, version = 0;
    const char *why;
    int status = LR_EXIT_RALLY, rc;
    if ((rc = rally_load_checkpoint(j->r, &saved, &saved_n, NULL, NULL, &version)) != RALLY_OK) {
        status = lr_fail(j, "rally_load_checkpoint", rc);
        goto out;
    }
    if (version > 0) {
        if (lr_model_decode(saved, saved_n, m, &why) != 0) {
            fprintf(stderr, "rally-linear: rank %d: the checkpoint is %s\n", j->rank, why);
            goto out;
        }
        if (m->solver != LR_LBFGS || m->d != j->d || m->mem != o->mem) {
            fprintf(stderr, "rally-linear: rank %d: the checkpoint is for another shape\n",
                    j->rank);
            goto out;
        }
        ex_say("rank %d restarted: resuming after iteration %" PRIu64
               " (checkpoint version %" PRIu64 ")\n",
               j->rank, m->iteration, version);
        status = LR_EXIT_OK;
        goto out;
    }
    if (lr_model_alloc(m, LR_LBFGS, j->d, o->mem) != 0) {
        status = lr_oom();
        goto out;
    }
    m->flags = o->intercept ? LR_INTERCEPT : 0;
    m->lambda = o->lambda;
    if ((status = lr_lbfgs_eval_start(j, m)) != LR_EXIT_OK)
        goto out;
    status = LR_EXIT_RALLY;
    size_t nbytes = lr_model_nbytes(m);
    if ((bytes = malloc(nbytes)) == NULL) {
        status = lr_oom();
        goto out;
    }
    lr_model_encode(m, bytes);
    if ((rc = rally_checkpoint(j->r, bytes, nbytes, NULL, 0)) != RALLY_OK) {
        status = lr_fail(j, "rally_checkpoint (iteration 0)", rc);
        goto out;
    }
    if (j->rank == 0 && !o->ex.quiet)
        ex_say("iteration 0 loss %.12g (w = 0; %" PRIu64 " rows x %u features on %d workers, "
               "lambda %.6g)\n",
               m->f, j->total_rows, j->d, j->world, m->lambda);
    status = LR_EXIT_OK;
out:
    free(bytes);
    rally_free(saved);
    return status;
}

/* Rank 0 saves the model (--model-out), prints it (--json) and the result
 * line.  The exit status. */
static int report(const struct lr_job *j, const struct lr_opts *o, const struct lr_model *m)
{
    size_t nbytes = lr_model_nbytes(m);
    unsigned char *bytes = malloc(nbytes);
    char err[8192];
    int status = LR_EXIT_OK;
    if (bytes == NULL)
        return lr_oom();
    lr_model_encode(m, bytes);
    uint64_t digest = rally_digest64(bytes, nbytes);
    if (j->rank == 0) {
        if (o->ex.model_out != NULL && ex_write_file(o->ex.model_out, bytes, nbytes, err, sizeof err)) {
            fprintf(stderr, "rally-linear: %s\n", err);
            status = LR_EXIT_RALLY;
        }
        if (o->ex.json)
            lr_model_json(stdout, m, digest);
        ex_say("result: model_digest=%016" PRIx64 " objective=%.17g\n", digest, m->f);
    }
    free(bytes);
    return status;
}

/* Names the job for durable snapshots: its options (rally_* settings
 * removed) are the configuration a resumed job must share. */
static int register_app(const struct lr_job *j, int argc, char **argv)
{
    char *cfg = ex_join_args(argc, argv);
    if (cfg == NULL)
        return lr_oom();
    int rc = rally_set_app(j->r, "rally-linear", cfg);
    free(cfg);
    return rc == RALLY_OK ? LR_EXIT_OK : lr_fail(j, "rally_set_app", rc);
}

/* Forgets the shard and the model for a new rank and world. */
static void lr_job_reset(struct lr_job *j, struct lr_model *m)
{
    lr_model_free(m);
    *m = (struct lr_model){0};
    free(j->y);
    rally_data_free(j->ds);
    struct lr_job fresh = {.r = j->r, .rank = rally_rank(j->r), .world = rally_world_size(j->r),
                           .reproducible = j->reproducible};
    *j = fresh;
    ex_say("rank %d of %d now: reading its shard again\n", j->rank, j->world);
}

int main(int argc, char **argv)
{
    int status = lr_early_flags(argc, argv); /* --help, --show MODEL: no job */
    if (status >= 0)
        return status;

    struct lr_job j = {0};
    struct lr_opts o = {0};
    struct lr_model m = {0};
    int rc = rally_init(&j.r, &argc, &argv);
    if (rc != RALLY_OK) {
        fprintf(stderr, "rally-linear: rally_init failed: %s (%s)\n", rally_errmsg(j.r),
                rally_strstatus(rc));
        rally_finalize(j.r);
        return LR_EXIT_RALLY;
    }
    j.rank = rally_rank(j.r);
    j.world = rally_world_size(j.r);

    int parsed = lr_opts_parse(argc, argv, &o); /* 1: --help done; -1: a usage error */
    if (parsed != 0) {
        status = parsed > 0 ? LR_EXIT_OK : LR_EXIT_INPUT;
        goto out;
    }
    if ((status = register_app(&j, argc, argv)) != LR_EXIT_OK) /* for snapshots */
        goto out;
    j.reproducible = o.reproducible;
    for (;;) {
        if ((status = bootstrap(&j, &o)) == LR_EXIT_OK) { /* the shard, and its shape */
            if (o.C > 0) /* scikit-learn's C */
                o.lambda = 1.0 / (o.C * (double)j.total_rows);
            if (o.solver == LR_ADMM) {
                status = lr_admm(&j, &o, &m); /* load or start, iterate */
            } else if (o.solver == LR_SGD) {
                status = lr_sgd(&j, &o, &m); /* load or start, the epochs */
            } else if ((status = lbfgs_load_or_start(&j, &o, &m)) == LR_EXIT_OK) {
                status = lr_lbfgs_run(&j, &o, &m); /* iterate */
            }
        }
        if (status != LR_RESIZED)
            break;
        /* the job went on with other workers from its newest checkpoint:
         * this worker's shard is another one now */
        lr_job_reset(&j, &m);
    }
    if (status == LR_EXIT_OK)
        status = report(&j, &o, &m); /* --model-out, --json, the result line */
out:
    lr_model_free(&m);
    free(j.y);
    rally_data_free(j.ds);
    lr_opts_free(&o);
    if (rally_finalize(j.r) != RALLY_OK && status == LR_EXIT_OK)
        status = LR_EXIT_RALLY;
    return status;
}
