/*
 * kmeans.c — rally-kmeans's main and the course of the job: read the shard,
 * agree on its shape, load the model from a checkpoint or initialise it,
 * iterate, report.  examples/kmeans/README.md explains the flags, the model
 * format and how initialisation and recovery work; in short:
 *
 *   rally-run -n 4 rally-kmeans --data blobs.csv --data-opt csv_label=0 -k 8
 *
 * Every worker reads its shard (rally/data.h) and logs the shard's
 * fingerprint.  Before rally_load_checkpoint come the bootstrap collectives,
 * which a restarted worker replays from the survivors: the feature count
 * (MAX, LIBSVM shards may differ), an error flag (so one bad shard stops
 * every worker cleanly), and every shard's row count (allgather).  On a fresh
 * start (version 0) the initial centroids come from k-means++ or --init-in
 * (init.c) and are checkpointed as iteration 0, so a recovery never redoes
 * them.  Then the Lloyd iterations (lloyd.c), each checkpointing the model.
 *
 * Output (rank 0 unless said): every rank "shard R fingerprint HEX rows N pid
 * P"; a restarted rank "rank R restarted: resuming after iteration T"; one
 * line per iteration "iteration T objective X time S s"; last
 * "result: model_digest=HEX objective=X" (no timing in it).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "kmeans.h"
#include "shard.h"

/* The shard's rows as a dense rows x d array in j->x (missing values 0):
 * the distance loop then runs over plain arrays; and each row's id (its
 * byte offset).  0, or -1 out of memory. */
static int densify(struct km_job *j, const rally_dataset_t *ds)
{
    const uint64_t *rp;
    const uint32_t *idx;
    const float *val;
    rally_data_csr(ds, &rp, &idx, &val);
    if ((j->x = calloc(j->rows * j->d + 1, sizeof *j->x)) == NULL ||
        (j->ids = malloc((j->rows + 1) * sizeof *j->ids)) == NULL)
        return -1;
    for (uint64_t i = 0; i < j->rows; i++) {
        for (uint64_t e = rp[i]; e < rp[i + 1]; e++)
            j->x[i * j->d + idx[e]] = val[e];
        j->ids[i] = rally_data_row_offset(ds, i);
    }
    return 0;
}

/* Reads this worker's shard into j->x (dense, missing values 0), and the
 * --init-in centroids into *init; then every worker agrees on the feature
 * count and on whether all could read their input, and learns every shard's
 * row count.  The exit status. */
static int bootstrap(struct km_job *j, const struct km_opts *o, double **init)
{
    rally_dataset_t *ds = NULL;
    uint32_t init_rows = 0, init_cols = 0;
    char err[8192] = "";
    int status = KM_EXIT_INPUT, rc;
    int bad = rally_data_read(o->ex.data, o->ex.dopts, j->rank, j->world, &ds, err, sizeof err) !=
              RALLY_OK;
    if (!bad && rally_data_num_features(ds) > KM_MAX_FEATURES) {
        snprintf(err, sizeof err, "%s: %" PRIu64 " features, at most %u are supported", o->ex.data,
                 rally_data_num_features(ds), KM_MAX_FEATURES);
        bad = 1;
    }
    if (!bad) {
        j->rows = rally_data_num_rows(ds);
        if ((rc = ex_shard(j->r, ds, j->rank)) != RALLY_OK) {
            status = km_fail(j, "rally_set_input", rc);
            goto out;
        }
        if (o->init_in != NULL &&
            km_centroids_read(o->init_in, init, &init_rows, &init_cols, err, sizeof err) != 0)
            bad = 1;
    }
    if (bad)
        fprintf(stderr, "rally-kmeans: rank %d: %s\n", j->rank, err);
    uint64_t agree[2] = {bad ? 0 : rally_data_num_features(ds), (uint64_t)bad};
    if ((rc = rally_allreduce(j->r, agree, 2, RALLY_UINT64, RALLY_MAX, NULL, NULL)) != RALLY_OK) {
        status = km_fail(j, "the bootstrap allreduce", rc);
        goto out;
    }
    if (agree[1] != 0) {
        if (!bad && j->rank == 0)
            fprintf(stderr, "rally-kmeans: another worker could not read its input; stopping\n");
        goto out;
    }
    if (agree[0] == 0) {
        if (j->rank == 0)
            fprintf(stderr, "rally-kmeans: %s has no features\n", o->ex.data);
        goto out;
    }
    j->d = (uint32_t)agree[0];
    if (o->init_in != NULL && (init_rows != o->k || init_cols != j->d)) {
        if (j->rank == 0)
            fprintf(stderr,
                    "rally-kmeans: %s holds %u centroids of %u numbers; want k = %u of %u\n",
                    o->init_in, init_rows, init_cols, o->k, j->d);
        goto out;
    }
    j->shard_rows = malloc((size_t)j->world * sizeof *j->shard_rows);
    if (j->shard_rows == NULL || densify(j, ds) != 0) {
        fprintf(stderr, "rally-kmeans: out of memory for %" PRIu64 " rows\n", j->rows);
        status = KM_EXIT_RALLY;
        goto out;
    }
    rally_data_free(ds);
    ds = NULL;
    if ((rc = rally_allgather(j->r, &j->rows, sizeof j->rows, j->shard_rows)) != RALLY_OK) {
        status = km_fail(j, "the row-count allgather", rc);
        goto out;
    }
    for (int r = 0; r < j->world; r++)
        j->total_rows += j->shard_rows[r];
    if (j->total_rows < o->k) {
        if (j->rank == 0)
            fprintf(stderr, "rally-kmeans: %" PRIu64 " rows cannot make %u clusters\n",
                    j->total_rows, o->k);
        goto out;
    }
    status = KM_EXIT_OK;
out:
    rally_data_free(ds);
    return status;
}

/* The model from the newest checkpoint (a restarted worker), or initialised
 * and checkpointed as iteration 0 (a fresh job).  The exit status. */
static int load_or_init(struct km_job *j, const struct km_opts *o, const double *init,
                        struct km_model *m)
{
    void *saved = NULL;
    unsigned char *bytes = NULL;
    uint64_t saved_n = 0, version = 0;
    char err[8192];
    const char *why;
    int status = KM_EXIT_RALLY, rc;
    if ((rc = rally_load_checkpoint(j->r, &saved, &saved_n, NULL, NULL, &version)) != RALLY_OK) {
        status = km_fail(j, "rally_load_checkpoint", rc);
        goto out;
    }
    if (version > 0) {
        if (km_model_decode(saved, saved_n, m, &why) != 0 || m->k != o->k || m->d != j->d) {
            fprintf(stderr, "rally-kmeans: rank %d: the checkpoint is %s\n", j->rank,
                    m->c ? "for another k or feature count" : why);
            goto out;
        }
        ex_say("rank %d restarted: resuming after iteration %" PRIu64
               " (checkpoint version %" PRIu64 ")\n",
               j->rank, m->iteration, version);
        status = KM_EXIT_OK;
        goto out;
    }
    if ((status = km_init(j, o, init, m)) != KM_EXIT_OK)
        goto out;
    if (j->rank == 0 && o->init_out != NULL &&
        km_centroids_write(o->init_out, m, err, sizeof err) != 0)
        fprintf(stderr, "rally-kmeans: %s\n", err);
    size_t nbytes = km_model_nbytes(m->k, m->d);
    if ((bytes = malloc(nbytes)) == NULL) {
        status = km_oom();
        goto out;
    }
    km_model_encode(m, bytes);
    if ((rc = rally_checkpoint(j->r, bytes, nbytes, NULL, 0)) != RALLY_OK)
        status = km_fail(j, "rally_checkpoint (iteration 0)", rc);
out:
    free(bytes);
    rally_free(saved);
    return status;
}

/* Rank 0 saves the model (--model-out), prints it (--json) and the result
 * line.  The exit status. */
static int report(const struct km_job *j, const struct km_opts *o, const struct km_model *m,
                  double objective)
{
    size_t nbytes = km_model_nbytes(m->k, m->d);
    unsigned char *bytes = malloc(nbytes);
    char err[8192];
    int status = KM_EXIT_OK;
    if (bytes == NULL)
        return km_oom();
    km_model_encode(m, bytes);
    uint64_t digest = rally_digest64(bytes, nbytes);
    if (j->rank == 0) {
        if (o->ex.model_out != NULL &&
            ex_write_file(o->ex.model_out, bytes, nbytes, err, sizeof err)) {
            fprintf(stderr, "rally-kmeans: %s\n", err);
            status = KM_EXIT_RALLY;
        }
        if (o->ex.json)
            km_model_json(stdout, m, digest);
        ex_say("result: model_digest=%016" PRIx64 " objective=%.17g\n", digest, objective);
    }
    free(bytes);
    return status;
}

/* Names the job for durable snapshots: its options (rally_* settings
 * removed) are the configuration a resumed job must share. */
static int register_app(struct km_job *j, int argc, char **argv)
{
    char *cfg = ex_join_args(argc, argv);
    if (cfg == NULL)
        return km_oom();
    int rc = rally_set_app(j->r, "rally-kmeans", cfg);
    free(cfg);
    return rc == RALLY_OK ? KM_EXIT_OK : km_fail(j, "rally_set_app", rc);
}

/* Forgets the shard and the model for a new rank and world. */
static void km_job_reset(struct km_job *j, double **init, struct km_model *m)
{
    free(*init);
    free(m->c);
    free(j->x);
    free(j->ids);
    free(j->shard_rows);
    *init = NULL;
    *m = (struct km_model){0};
    j->x = NULL;
    j->ids = NULL;
    j->shard_rows = NULL;
    j->rows = j->total_rows = 0;
    j->rank = rally_rank(j->r);
    j->world = rally_world_size(j->r);
    ex_say("rank %d of %d now: reading its shard again\n", j->rank, j->world);
}

int main(int argc, char **argv)
{
    int status = km_early_flags(argc, argv); /* --help, --show MODEL: no job */
    if (status >= 0)
        return status;

    struct km_job j = {0};
    struct km_opts o = {0};
    struct km_model m = {0};
    double *init = NULL, objective = 0;
    int rc = rally_init(&j.r, &argc, &argv);
    if (rc != RALLY_OK) {
        fprintf(stderr, "rally-kmeans: rally_init failed: %s (%s)\n", rally_errmsg(j.r),
                rally_strstatus(rc));
        rally_finalize(j.r);
        return KM_EXIT_RALLY;
    }
    j.rank = rally_rank(j.r);
    j.world = rally_world_size(j.r);

    int parsed = km_opts_parse(argc, argv, &o); /* 1: --help done; -1: a usage error */
    if (parsed != 0) {
        status = parsed > 0 ? KM_EXIT_OK : KM_EXIT_INPUT;
        goto out;
    }
    if ((status = register_app(&j, argc, argv)) != KM_EXIT_OK) /* for snapshots */
        goto out;
    for (;;) {
        if ((status = bootstrap(&j, &o, &init)) == KM_EXIT_OK &&     /* the shard, and its shape */
            (status = load_or_init(&j, &o, init, &m)) == KM_EXIT_OK) /* checkpoint or k-means++ */
            status = km_lloyd(&j, &o, &m, &objective);               /* iterate */
        if (status != KM_RESIZED)
            break;
        /* the job went on with other workers from its newest checkpoint:
         * this worker's shard is another one now */
        km_job_reset(&j, &init, &m);
    }
    if (status == KM_EXIT_OK)
        status = report(&j, &o, &m, objective); /* --model-out, --json, the result line */
out:
    free(init);
    free(m.c);
    free(j.x);
    free(j.ids);
    free(j.shard_rows);
    km_opts_free(&o);
    if (rally_finalize(j.r) != RALLY_OK && status == KM_EXIT_OK)
        status = KM_EXIT_RALLY;
    return status;
}
