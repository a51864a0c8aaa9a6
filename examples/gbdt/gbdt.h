/*
 * gbdt.h — what the parts of rally-gbdt share: the model, the job, the
 * options, and the functions each file offers the others.
 *
 *   gbdt.c     main and the job's course: bootstrap, load or start, report
 *   options.c  the command line
 *   sketch.c   the distributed quantile sketch: each feature's cut points
 *   quantile.c --reproducible's cut points: exact quantiles, whatever the partition
 *   boost.c    the boosting rounds: a tree, the loss, a checkpoint every M
 *   grow.c     one tree: gradients, histograms (one allreduce per level), splits,
 *              the rows grouped per node
 *   predict.c  walking the trees: the prediction cache and `rally-gbdt predict`
 *   model.c    the model's bytes (checkpoint, digest), its JSON, the file write
 *
 * Only the public API is used (rally/rally.h, rally/data.h; jansson parses
 * the JSON model), so this folder builds against an installed librally.
 */
#ifndef GBDT_H
#define GBDT_H

#include <inttypes.h>
#include <math.h>
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

#define GB_MAX_FEATURES 100000u
#define GB_MAX_DEPTH 12u
#define GB_MAX_BIN 255u /* a bin is one byte; the code max_bin means missing */
#define GB_MAX_TREES 100000u
/* Each rank summarises a feature by GB_SKETCH_PER_BIN * max_bin values
 * (sketch.c: the error bound). */
#define GB_SKETCH_PER_BIN 16u

/* Exit statuses (usage() prints them). */
/* GB_RESIZED is no exit status: an elastic job went on with other workers,
 * and main starts again from the shard (docs/recovery.md, "Elastic jobs"). */
enum { GB_EXIT_OK = 0, GB_EXIT_RALLY = 1, GB_EXIT_INPUT = 2, GB_RESIZED = -2 };

enum { GB_LOGISTIC = 0, GB_SQUARED = 1 };

/* The training parameters, part of the model (a checkpoint made with others
 * is refused). */
struct gb_params {
    uint32_t objective, max_depth, max_bin;
    double eta, lambda, gamma, min_child_weight, base_score;
};

/* One node.  A split sends x[feature] < threshold left, a missing value to
 * the default side; threshold is the cut point above bin split_bin, so
 * "bin <= split_bin" and "value < threshold" agree on every training row. */
struct gb_node {
    int32_t feature; /* -1: a leaf */
    uint32_t left, right, split_bin;
    float threshold;
    uint32_t default_left;
    double value;       /* a leaf's output (eta times the weight) */
    double gain, cover; /* a split's loss change; the node's hessian sum */
};

struct gb_tree {
    uint32_t n;
    struct gb_node *nodes; /* node 0 is the root; children after parents */
};

/* The global model: the parameters, the feature count and the trees — what
 * is checkpointed.  The prediction cache is not part of it (predict.c). */
struct gb_model {
    struct gb_params p;
    uint32_t d, ntrees, cap;
    struct gb_tree *trees;
};

/* A worker's view of the job. */
struct gb_job {
    rally_t *r;
    int rank, world;
    uint64_t rows, total_rows;
    uint32_t d;
    float *x;        /* rows x d, NaN = missing: what the trees are walked on */
    float *y;        /* labels */
    uint8_t *bins;   /* rows x d: the bin of each value, max_bin = missing */
    uint8_t *cols;   /* d x rows: the same bins by feature (moving rows reads one) */
    uint32_t *nbin;  /* [d]: bins of each feature (cut points) */
    float *cuts;     /* d x max_bin: feature f's cut points at f * max_bin */
    double *pred;    /* the prediction cache: each row's margin (derived) */
    double *gh;      /* 2 x rows: each row's gradient and hessian, side by side */
    uint32_t gh_for; /* 1 + the tree whose gradients gh holds; 0: none */
    /* --reproducible (docs/determinism.md): the gradients on a grid common
     * to every rank, as integers, so that a histogram's sums are exact */
    int reproducible;
    int64_t *qgh;           /* 2 x rows: gh in units of 2^eg and 2^eh */
    uint32_t qgh_for;       /* 1 + the tree whose gradients qgh holds; 0: none */
    int eg, eh;             /* the tree's grid */
    rally_xsum_t *loss_acc; /* the shard's loss, exactly */
    uint32_t *order;        /* the rows, grouped by the node they are at while a tree grows */
    /* where a tree's time goes (seconds, this rank, reset per tree): building
     * histograms, in the histogram allreduces besides that, finding splits
     * and moving rows, the rest (gradients, cache update) */
    double t_hist, t_reduce, t_split, t_rows;
};

struct gb_opts {
    struct ex_opts ex; /* --data, --data-opt, --model-out, --json, --pause-ms, --quiet */
    const char *pred_out;
    struct gb_params p;
    uint32_t trees, ckpt_every;
    int reproducible; /* --reproducible: the same model at any N */
};

/* --- options.c ---------------------------------------------------------------- */

/* --help, --show MODEL and `predict MODEL DATA`, which need no job: the exit
 * status, or -1 when argv asks for none of them. */
int gb_early_flags(int argc, char **argv);

/* Fills o from argv.  0 to run, 1 when done (--help), -1 on a usage error. */
int gb_opts_parse(int argc, char **argv, struct gb_opts *o);
void gb_opts_free(struct gb_opts *o);

/* --- sketch.c ------------------------------------------------------------------- */

/* Every feature's cut points from every shard's values (one allgather), and
 * each row's bins.  j->x and j->d are set.  The exit status. */
int gb_sketch(struct gb_job *j, uint32_t max_bin);

/* A float above v (the last cut, a sentinel above every value). */
float gb_above(float v);

/* --- quantile.c ----------------------------------------------------------------- */

/* --reproducible: every feature's cuts, exact quantiles of all its values
 * (four allreduces per 16 features), into j->cuts and j->nbin.  The exit
 * status. */
int gb_quantile_cuts(struct gb_job *j, uint32_t max_bin);

/* --- grow.c --------------------------------------------------------------------- */

/* Grows one tree on the current predictions, appends it to m and adds its
 * outputs to the prediction cache.  The exit status. */
int gb_grow(struct gb_job *j, struct gb_model *m);
/* Frees gb_grow's reusable buffers. */
void gb_grow_free(void);

/* The summed loss of the prediction cache over this shard, row order; in
 * the same pass (the same exp) the gradients of tree `tree`, which it notes
 * in j->gh_for.  With acc (--reproducible) each row's loss is added into
 * its element 0 instead, and 0 returned. */
double gb_shard_loss(struct gb_job *j, const struct gb_params *p, uint32_t tree, rally_xsum_t *acc);

/* --- boost.c -------------------------------------------------------------------- */

/* Grows trees until m has o->trees, checkpointing every o->ckpt_every and
 * after the last.  The exit status. */
int gb_boost(struct gb_job *j, const struct gb_opts *o, struct gb_model *m);

/* The train loss of the prediction cache (one allreduce): mean log loss or
 * root mean squared error.  The exit status. */
int gb_train_loss(struct gb_job *j, const struct gb_model *m, double *out);

/* --- predict.c ------------------------------------------------------------------ */

/* The margin of one row (d values, NaN = missing): base plus every tree's
 * output, added in tree order. */
double gb_margin(const struct gb_model *m, const float *x);

/* The prediction cache rebuilt from the model's trees: what the training
 * loop's increments gave, bit for bit (the same additions in the same
 * order). */
void gb_rebuild_cache(const struct gb_model *m, const float *x, uint64_t rows, double *pred);

/* The objective's output for a margin: a probability or the margin. */
static inline double gb_output(const struct gb_params *p, double margin)
{
    return p->objective == GB_LOGISTIC ? 1.0 / (1.0 + exp(-margin)) : margin;
}

/* One row's loss from its output q = gb_output(margin): log loss (logistic)
 * or squared error. */
static inline double gb_loss_of(const struct gb_params *p, double q, float y)
{
    if (p->objective == GB_SQUARED)
        return (q - y) * (q - y);
    q = !(q >= 1e-15) ? 1e-15 : q; /* fmin(fmax(q, 1e-15), 1 - 1e-15), inline */
    q = !(q <= 1.0 - 1e-15) ? 1.0 - 1e-15 : q;
    return y > 0.5 ? -log(q) : -log(1.0 - q);
}

/* `rally-gbdt predict MODEL DATA [--data-opt K=V]... [--out FILE]`. */
int gb_predict_main(int argc, char **argv);

/* --- model.c -------------------------------------------------------------------- */

size_t gb_model_nbytes(const struct gb_model *m);
void gb_model_encode(const struct gb_model *m, unsigned char *b);
/* 0, or -1 with the reason in *why. */
int gb_model_decode(const unsigned char *b, size_t n, struct gb_model *m, const char **why);
void gb_model_free(struct gb_model *m);
/* Appends a tree (its nodes are taken over).  0, or -1 out of memory. */
int gb_model_push(struct gb_model *m, struct gb_tree t);

/* The model digest: rally_digest64 (XXH3-64) of its bytes.  UINT64_MAX out of memory. */
uint64_t gb_model_digest(const struct gb_model *m);

/* The JSON form (README.md) into a new buffer.  0, or -1 out of memory. */
int gb_model_json(const struct gb_model *m, char **out, size_t *n);
/* Reads a JSON model file; checks its digest.  0, or -1 with err. */
int gb_model_read_json(const char *path, struct gb_model *m, char *err, size_t cap);

/* --- one-line helpers ------------------------------------------------------------- */

static inline int gb_fail(const struct gb_job *j, const char *what, int rc)
{
    if (rc == RALLY_ERESIZED)
        return GB_RESIZED;
    fprintf(stderr, "rally-gbdt: rank %d: %s failed: %s (%s)\n", j->rank, what, rally_errmsg(j->r),
            rally_strstatus(rc));
    return GB_EXIT_RALLY;
}

static inline int gb_oom(void)
{
    fprintf(stderr, "rally-gbdt: out of memory\n");
    return GB_EXIT_RALLY;
}

#endif
