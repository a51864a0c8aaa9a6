/*
 * linear.h — what the parts of rally-linear share: the model, the job, the
 * options, and the functions each file offers the others.
 *
 *   linear.c   main and the job's course: bootstrap, load or start, report
 *   options.c  the command line
 *   model.c    the model's bytes, its file and its JSON
 *   loss.c     the logistic loss and its gradient over a CSR shard
 *   lbfgs.c    L-BFGS: one iteration (direction, line search, history), and
 *              the distributed solver, one allreduce per function evaluation
 *   admm.c     consensus ADMM: each worker's (x_i, u_i) a local model, z global
 *   sgd.c      minibatch SGD over the whole data set, driven by a data cursor
 *
 * Only the public API is used (rally/rally.h, rally/data.h), so this folder
 * builds against an installed librally as it is.
 *
 * The objective, for labels y in {-1, +1} (a label > 0 is +1) and n rows:
 *
 *     F(w, b) = (1/n) sum_j log(1 + exp(-y_j (w . a_j + b))) + (lambda/2) |w|^2
 *
 * (the intercept b is not penalised): scikit-learn's LogisticRegression
 * with C = 1 / (lambda n) minimises n F.
 */
#ifndef LINEAR_H
#define LINEAR_H

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

#define LR_MAX_FEATURES 100000000u
#define LR_MAX_MEMORY 100u

/* Exit statuses (usage() prints them). */
/* LR_RESIZED is no exit status: an elastic job went on with other workers,
 * and main starts again from the shard (docs/recovery.md, "Elastic jobs"). */
enum { LR_EXIT_OK = 0, LR_EXIT_RALLY = 1, LR_EXIT_INPUT = 2, LR_RESIZED = -2 };

enum { LR_LBFGS = 0, LR_ADMM = 1, LR_SGD = 2 };

/* lr_model.flags */
enum { LR_CONVERGED = 1u, LR_INTERCEPT = 2u, LR_LS_FAILED = 4u };

/* The global model: everything the continuation depends on, and exactly
 * what is checkpointed (model.c gives its bytes).  Vectors have n = d + 1
 * elements, the last the intercept (0 and never moved without one).
 * L-BFGS: w, f and g at w, and the newest hist_len of the mem (s, y) pairs
 * in a ring whose newest is at hist_head.  ADMM: w is the consensus z,
 * f its objective, g the previous z; mem = 0.  SGD: w, g the last step's
 * gradient, f its batch's objective, rho the learning rate, iteration the
 * steps taken; mem = 0 (its checkpoint adds the data cursor: sgd.c). */
struct lr_model {
    uint32_t solver, d, mem, flags;
    uint32_t hist_len, hist_head;
    uint64_t iteration, evals;
    double lambda, rho;
    double f;     /* the objective at w */
    double resid; /* ADMM: the dual residual of the last update; L-BFGS: the last step */
    double *w, *g, *sy, *s, *y; /* n, n, mem, mem x n, mem x n: one allocation at w */
};

/* A worker's view of the job: its handle, its shard (CSR), the totals. */
struct lr_job {
    rally_t *r;
    int rank, world;
    uint64_t rows, total_rows;
    uint32_t d;
    const uint64_t *rp;
    const uint32_t *idx;
    const float *val;
    double *y; /* rows labels in {-1, +1} */
    int dense; /* every row stores all d features (indices 0 .. d-1) */
    int reproducible; /* --reproducible: exact sums, the same model at any N */
    rally_dataset_t *ds;
};

struct lr_opts {
    struct ex_opts ex; /* --data, --data-opt, --model-out, --json, --pause-ms, --quiet */
    int solver;
    double lambda, C, tol, rho; /* C > 0: lambda = 1 / (C n) */
    uint64_t iters;
    uint32_t mem;
    int intercept;
    int reproducible;
    uint64_t epochs, batch, seed; /* sgd: --epochs, --batch (global), --seed */
    double lr;                    /* sgd: --lr */
    uint64_t gate_step;           /* --gate STEP,FILE (tests): rank 0 waits before */
    const char *gate_file;        /* step STEP until FILE exists */
    int forget_cursor;            /* --forget-cursor: the tests' negative control */
};

/* --- options.c ---------------------------------------------------------------- */

/* --help and --show MODEL, which need no job: the exit status, or -1. */
int lr_early_flags(int argc, char **argv);

/* Fills o from argv.  0 to run, 1 when done (--help), -1 on a usage error. */
int lr_opts_parse(int argc, char **argv, struct lr_opts *o);
void lr_opts_free(struct lr_opts *o);

/* --- model.c ------------------------------------------------------------------ */

/* A model with its vectors allocated (zeroed).  0, or -1 out of memory. */
int lr_model_alloc(struct lr_model *m, int solver, uint32_t d, uint32_t mem);
void lr_model_free(struct lr_model *m);

size_t lr_model_nbytes(const struct lr_model *m);
void lr_model_encode(const struct lr_model *m, unsigned char *b);

/* Parses n bytes into m (allocated here).  0, or -1 with the reason in *why. */
int lr_model_decode(const unsigned char *b, size_t n, struct lr_model *m, const char **why);

void lr_model_json(FILE *f, const struct lr_model *m, uint64_t digest);
int lr_model_show(const char *path);
/* --- loss.c ------------------------------------------------------------------- */

/* Over rows [0, j->rows) of the shard at w (n = d + 1): adds to g[0..n) the
 * gradient of sum_j loss_j / scale and returns sum_j loss_j / scale.  Rows
 * are visited in order, so the result is the same bits every time. */
double lr_loss_grad(const struct lr_job *j, const double *w, double scale, double *g);

/* Only the loss sum / scale. */
double lr_loss(const struct lr_job *j, const double *w, double scale);

/* The same sums added exactly into acc = [g (d + 1) | loss] (cleared here):
 * each row's terms as lr_loss_grad computes them, the loss unscaled.  tmp
 * and at hold d + 1 values and indices. */
void lr_loss_grad_exact(const struct lr_job *j, const double *w, double scale, rally_xsum_t *acc,
                        double *tmp, uint64_t *at);

/* --reproducible's faster lane to the same sums on a dense shard (loss.c
 * says how): lr_lane_new reads the shard once (NULL: out of memory);
 * lr_loss_grad_lane gives acc exactly what lr_loss_grad_exact gives it. */
struct lr_lane;
struct lr_lane *lr_lane_new(const struct lr_job *j);
void lr_lane_free(struct lr_lane *l);
void lr_loss_grad_lane(const struct lr_job *j, const double *w, double scale, rally_xsum_t *acc,
                       double *tmp, uint64_t *at, struct lr_lane *l);

/* The same over the rows ids[0 .. count) (an SGD step's share). */
double lr_batch_grad(const struct lr_job *j, const double *w, const uint64_t *ids, size_t count,
                     double scale, double *g);
void lr_batch_grad_exact(const struct lr_job *j, const double *w, const uint64_t *ids,
                         size_t count, double scale, rally_xsum_t *acc, double *tmp, uint64_t *at);

/* --- lbfgs.c ------------------------------------------------------------------ */

/* A function to minimise: f(x) and its gradient g (n elements, overwritten).
 * 0, or an exit status to stop with. */
typedef int (*lr_eval_fn)(void *arg, const double *x, double *f, double *g);

/* Scratch for lr_lbfgs_step, sized for n = d + 1. */
struct lr_lbfgs_work {
    double *dir, *x, *gx, *alpha;
};
int lr_lbfgs_work_alloc(struct lr_lbfgs_work *w, uint32_t n, uint32_t mem);
void lr_lbfgs_work_free(struct lr_lbfgs_work *w);

/* One L-BFGS iteration from m's w, f, g and history: the two-loop
 * direction, a backtracking Armijo line search (every trial one eval), the
 * history update; sets LR_CONVERGED when |g|_inf <= tol or the decrease is
 * below ftol relative.  The exit status. */
int lr_lbfgs_step(struct lr_model *m, struct lr_lbfgs_work *wk, lr_eval_fn eval, void *arg,
                  double tol);

/* The distributed solver from m (w, f, g set, iteration as loaded) until
 * converged or o->iters iterations; checkpoints m after each.  eval_start
 * evaluates m at w (the fresh start).  The exit status. */
int lr_lbfgs_eval_start(struct lr_job *j, struct lr_model *m);
int lr_lbfgs_run(struct lr_job *j, const struct lr_opts *o, struct lr_model *m);

/* --- admm.c ------------------------------------------------------------------- */

/* Loads or starts the ADMM job (global z, local (x_i, u_i)), iterates until
 * converged or o->iters iterations, and evaluates the final objective into
 * m->f.  The exit status. */
int lr_admm(struct lr_job *j, const struct lr_opts *o, struct lr_model *m);

/* --- sgd.c -------------------------------------------------------------------- */

/* Loads the model and the data cursor from the newest checkpoint or starts
 * them, runs o->epochs epochs of minibatch steps (each one gradient
 * allreduce, one allreduce of the ids' count and digest, one checkpoint),
 * rank 0 saying each epoch's consumed count and digest.  The exit status. */
int lr_sgd(struct lr_job *j, const struct lr_opts *o, struct lr_model *m);

/* --- one-line helpers --------------------------------------------------------- */

static inline int lr_fail(const struct lr_job *j, const char *what, int rc)
{
    if (rc == RALLY_ERESIZED)
        return LR_RESIZED;
    fprintf(stderr, "rally-linear: rank %d: %s failed: %s (%s)\n", j->rank, what,
            rally_errmsg(j->r), rally_strstatus(rc));
    return LR_EXIT_RALLY;
}

static inline int lr_oom(void)
{
    fprintf(stderr, "rally-linear: out of memory\n");
    return LR_EXIT_RALLY;
}

#endif
