/*
 * kmeans.h — what the parts of rally-kmeans share: the model, the job, the
 * options, and the functions each file offers the others.
 *
 *   kmeans.c   main and the job's course: bootstrap, load or initialise, report
 *   options.c  the command line
 *   model.c    the model's bytes, its files (binary model, centroid CSV) and JSON
 *   init.c     the initial centroids: k-means++ over every shard
 *   lloyd.c    the Lloyd iterations, each one allreduce and one checkpoint
 *
 * Only the public API is used (rally/rally.h, rally/data.h), so this folder
 * builds against an installed librally as it is.
 */
#ifndef KMEANS_H
#define KMEANS_H

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "opts.h"
#include "rally/data.h"
#include "rally/rally.h"

#include "bytes.h"
#include "file.h"
#include "say.h"

#define KM_MAX_K 65536u
#define KM_MAX_FEATURES 1000000u

/* Exit statuses (usage() prints them).  KM_RESIZED is no exit status: an
 * elastic job went on with other workers, and main starts again from the
 * shard (docs/recovery.md, "Elastic jobs"). */
enum { KM_EXIT_OK = 0, KM_EXIT_RALLY = 1, KM_EXIT_INPUT = 2, KM_RESIZED = -2 };

/* km_model.flags */
enum { KM_CONVERGED = 1u, KM_HAS_OBJECTIVE = 2u };

/* The global model: everything the continuation depends on, and exactly
 * what is checkpointed (model.c gives its bytes, README.md its format). */
struct km_model {
    uint32_t k, d, flags;
    uint64_t iteration; /* Lloyd iterations done; 0 = just initialised */
    uint64_t seed;
    uint64_t rng[4];  /* xoshiro256** state after initialisation */
    double objective; /* of the last assignment (to the centroids before the last update) */
    double *c;        /* k x d, row-major */
};

/* A worker's view of the job: its handle, its shard, every shard's size. */
struct km_job {
    rally_t *r;
    int rank, world;
    uint64_t rows;        /* this shard's */
    uint64_t total_rows;  /* every shard's */
    uint32_t d;           /* features, the same everywhere */
    float *x;             /* rows x d, dense, missing values 0 */
    uint64_t *ids;        /* [rows]: each row's byte offset in the file, the same at any N */
    uint64_t *shard_rows; /* [world], in rank order */
};

struct km_opts {
    struct ex_opts ex; /* --data, --data-opt, --model-out, --json, --pause-ms, --quiet */
    const char *init_in, *init_out;
    uint32_t k;
    uint64_t iters, seed;
    int fixed;
    int reproducible; /* --reproducible: the same model at any N (docs/determinism.md) */
};

/* --- options.c ---------------------------------------------------------------- */

/* --help and --show MODEL, which need no job: the exit status, or -1 when
 * argv asks for neither. */
int km_early_flags(int argc, char **argv);

/* Fills o from argv (rally_key=value already removed by rally_init).
 * Returns 0 to run, 1 when done (--help), -1 on a usage error (printed). */
int km_opts_parse(int argc, char **argv, struct km_opts *o);
void km_opts_free(struct km_opts *o);

/* --- model.c ------------------------------------------------------------------ */

/* The size of a model's bytes, and its encoding into b (of that size). */
size_t km_model_nbytes(uint32_t k, uint32_t d);
void km_model_encode(const struct km_model *m, unsigned char *b);

/* Parses n bytes into m (m->c newly allocated).  0, or -1 with the reason in
 * *why when the bytes are not a model. */
int km_model_decode(const unsigned char *b, size_t n, struct km_model *m, const char **why);

/* Prints m as JSON (README.md, "--json"). */
void km_model_json(FILE *f, const struct km_model *m, uint64_t digest);

/* --show: prints the model file at path as JSON.  The exit status. */
int km_model_show(const char *path);

/* Reads a centroid file (CSV, one centroid a line) with rally's CSV reader
 * into a new rows x cols array.  0, or -1 with a sentence in err. */
int km_centroids_read(const char *path, double **c, uint32_t *rows, uint32_t *cols, char *err,
                      size_t cap);

/* Writes m's centroids as CSV (%.17g, exact) through ex_write_file. */
int km_centroids_write(const char *path, const struct km_model *m, char *err, size_t cap);

/* --- init.c ------------------------------------------------------------------- */

/* A fresh model (iteration 0) of o->k centroids: from init (k x d, when not
 * NULL) or by k-means++ over every shard (2k - 1 collectives).  The exit
 * status (0 on success). */
int km_init(struct km_job *j, const struct km_opts *o, const double *init, struct km_model *m);

/* --- lloyd.c ------------------------------------------------------------------ */

/* Runs Lloyd iterations from m until converged or o->iters updates are done,
 * checkpointing m after each; *objective gets that of the final centroids.
 * The exit status (0 on success). */
int km_lloyd(struct km_job *j, const struct km_opts *o, struct km_model *m, double *objective);

/* --- one-line helpers --------------------------------------------------------- */

/* Reports a failed rally call; returns the exit status for it. */
static inline int km_fail(const struct km_job *j, const char *what, int rc)
{
    if (rc == RALLY_ERESIZED)
        return KM_RESIZED;
    fprintf(stderr, "rally-kmeans: rank %d: %s failed: %s (%s)\n", j->rank, what,
            rally_errmsg(j->r), rally_strstatus(rc));
    return KM_EXIT_RALLY;
}

static inline int km_oom(void)
{
    fprintf(stderr, "rally-kmeans: out of memory\n");
    return KM_EXIT_RALLY;
}

#endif
