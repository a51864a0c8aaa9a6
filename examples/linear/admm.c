/*
 * admm.c — consensus ADMM for the same objective: a job whose per-worker
 * state cannot be recomputed from the global model, so it rides on rally's
 * local-model replication.
 *
 * Worker i holds f_i(x) = (1/n) sum over its rows of the logistic loss; the
 * problem is min sum_i f_i(x_i) + (lambda/2) |z_w|^2 subject to x_i = z, and
 * scaled ADMM (Boyd et al., "Distributed Optimization and Statistical
 * Learning via ADMM", section 7.1) iterates
 *
 *     x_i <- argmin_x f_i(x) + (rho/2) |x - z + u_i|^2     (local L-BFGS)
 *     z   <- the prox of the penalty at mean_i(x_i + u_i)  (one allreduce)
 *     u_i <- u_i + x_i - z
 *
 * z (with the iteration, rho, lambda) is the global model; (x_i, u_i) is
 * worker i's local model, checkpointed with it every iteration and
 * replicated by rally to the next rally_local_replica ranks.  A worker
 * restarted with a lost (x_i, u_i) could not rebuild it from z: rally then
 * names the lost local models and the job stops.
 *
 * The one allreduce per iteration carries [x_i + u_i (n) | f_i(z) | |x_i - z|^2],
 * the last two at the z before the update, so an iteration reports the
 * objective of the z it started from and the primal residual of the
 * previous one (rank 0 also to rally-run's observers, rally_report's
 * "loss", with --iters as the iterations in all).  Converged: primal and dual residuals both at
 * most --tol. rho adapts by residual balancing (balance()).  At the end one more allreduce gives
 * the final z's objective.
 *
 * The local model's bytes: the iteration (8 bytes), x (n doubles), u (n
 * doubles), host byte order (replicas stay within the job).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linear.h"

#define LOCAL_TOL 1e-11 /* |gradient|_inf of a worker's subproblem */
#define LOCAL_ITERS 500
#define LOCAL_MEM 8

struct sub {
    const struct lr_job *j;
    const double *v; /* z - u_i */
    double rho;
    int intercept;
};

/* f_i(x) + (rho/2) |x - v|^2 and its gradient: no collective. */
static int sub_eval(void *arg, const double *x, double *f, double *g)
{
    const struct sub *s = arg;
    size_t n = (size_t)s->j->d + 1;
    memset(g, 0, n * sizeof *g);
    double loss = lr_loss_grad(s->j, x, (double)s->j->total_rows, g), pen = 0;
    for (size_t e = 0; e < n; e++) {
        double t = x[e] - s->v[e];
        pen += t * t;
        g[e] += s->rho * t;
    }
    if (!s->intercept)
        g[n - 1] = 0;
    *f = loss + 0.5 * s->rho * pen;
    return LR_EXIT_OK;
}

/* x <- argmin of the subproblem at v, warm-started from x. */
static int solve_local(const struct lr_job *j, struct lr_model *lm, struct lr_lbfgs_work *wk,
                       double *x, const double *v, double rho, int intercept)
{
    size_t n = (size_t)j->d + 1;
    struct sub s = {j, v, rho, intercept};
    memcpy(lm->w, x, n * sizeof *x);
    lm->hist_len = lm->hist_head = 0;
    lm->flags = 0;
    lm->iteration = lm->evals = 0;
    sub_eval(&s, lm->w, &lm->f, lm->g);
    double gmax = 0;
    for (size_t e = 0; e < n; e++)
        gmax = fabs(lm->g[e]) > gmax ? fabs(lm->g[e]) : gmax;
    if (gmax > LOCAL_TOL)
        while (!(lm->flags & LR_CONVERGED) && lm->iteration < LOCAL_ITERS)
            lr_lbfgs_step(lm, wk, sub_eval, &s, LOCAL_TOL);
    memcpy(x, lm->w, n * sizeof *x);
    return LR_EXIT_OK;
}

/* Residual balancing (Boyd et al. 3.4.1): rho doubles when the primal
 * residual is over ten times the dual one, halves in the opposite case, and
 * the scaled duals u = y / rho follow.  Every rank decides alike (the
 * residuals are global) and rescales its own u. */
static void balance(struct lr_model *m, double *u, size_t n, double primal)
{
    double k = primal > 10 * m->resid ? 2.0 : m->resid > 10 * primal ? 0.5 : 1.0;
    if (k == 1.0)
        return;
    m->rho *= k;
    for (size_t e = 0; e < n; e++)
        u[e] /= k;
}

static double sq(double x)
{
    return x * x;
}

/* The global model from the newest checkpoint with this worker's (x, u), or
 * a fresh start (z = x = u = 0) checkpointed as iteration 0.  The exit status. */
static int load_or_start(struct lr_job *j, const struct lr_opts *o, struct lr_model *m, double *x,
                         double *u, unsigned char *local, size_t local_nbytes)
{
    void *saved = NULL, *lsaved = NULL;
    uint64_t saved_n = 0, lsaved_n = 0, version = 0;
    const char *why;
    size_t n = (size_t)j->d + 1;
    int status = LR_EXIT_RALLY, rc;
    if ((rc = rally_load_checkpoint(j->r, &saved, &saved_n, &lsaved, &lsaved_n, &version)) !=
        RALLY_OK) {
        status = lr_fail(j, "rally_load_checkpoint", rc);
        goto out;
    }
    if (version > 0) {
        uint64_t it;
        if (lr_model_decode(saved, saved_n, m, &why) != 0) {
            fprintf(stderr, "rally-linear: rank %d: the checkpoint is %s\n", j->rank, why);
            goto out;
        }
        if (m->solver != LR_ADMM || m->d != j->d || lsaved_n != local_nbytes) {
            fprintf(stderr,
                    "rally-linear: rank %d: the checkpoint is for another solver or shape\n",
                    j->rank);
            goto out;
        }
        memcpy(&it, lsaved, 8);
        if (it != m->iteration) {
            fprintf(stderr,
                    "rally-linear: rank %d: the local model is of iteration %" PRIu64
                    ", the global one of %" PRIu64 "\n",
                    j->rank, it, m->iteration);
            goto out;
        }
        memcpy(x, (unsigned char *)lsaved + 8, n * sizeof *x);
        memcpy(u, (unsigned char *)lsaved + 8 + n * sizeof *x, n * sizeof *u);
        ex_say("rank %d restarted: resuming after iteration %" PRIu64
               " (checkpoint version %" PRIu64 ", local model restored)\n",
               j->rank, m->iteration, version);
        status = LR_EXIT_OK;
        goto out;
    }
    if (lr_model_alloc(m, LR_ADMM, j->d, 0) != 0) {
        status = lr_oom();
        goto out;
    }
    m->flags = o->intercept ? LR_INTERCEPT : 0;
    m->lambda = o->lambda;
    m->rho = o->rho;
    m->f = NAN;
    size_t nbytes = lr_model_nbytes(m);
    unsigned char *bytes = malloc(nbytes);
    if (bytes == NULL) {
        status = lr_oom();
        goto out;
    }
    lr_model_encode(m, bytes);
    memset(local, 0, local_nbytes);
    rc = rally_checkpoint(j->r, bytes, nbytes, local, local_nbytes);
    free(bytes);
    if (rc != RALLY_OK) {
        status = lr_fail(j, "rally_checkpoint (iteration 0)", rc);
        goto out;
    }
    status = LR_EXIT_OK;
out:
    rally_free(saved);
    rally_free(lsaved);
    return status;
}

int lr_admm(struct lr_job *j, const struct lr_opts *o, struct lr_model *m)
{
    size_t n = (size_t)j->d + 1, local_nbytes = 8 + 2 * n * sizeof(double);
    double N = (double)j->world;
    double *x = calloc(4 * n + 2, sizeof *x), *u = x + n, *v = u + n, *buf = v + n;
    unsigned char *local = malloc(local_nbytes), *bytes = NULL;
    struct lr_model lm = {0}; /* the subproblem's L-BFGS state */
    struct lr_lbfgs_work wk = {0};
    int status = LR_EXIT_RALLY, rc;
    if (x == NULL || local == NULL || lr_model_alloc(&lm, LR_LBFGS, j->d, LOCAL_MEM) != 0 ||
        lr_lbfgs_work_alloc(&wk, (uint32_t)n, LOCAL_MEM) != 0) {
        status = lr_oom();
        goto out;
    }
    if ((status = load_or_start(j, o, m, x, u, local, local_nbytes)) != LR_EXIT_OK)
        goto out;
    size_t nbytes = lr_model_nbytes(m);
    if ((bytes = malloc(nbytes)) == NULL) {
        status = lr_oom();
        goto out;
    }
    int intercept = (m->flags & LR_INTERCEPT) != 0;
    double *z = m->w, *zold = m->g, t_prev = ex_now_s();
    if (j->rank == 0)
        rally_report_total(j->r, o->iters);
    while (!(m->flags & LR_CONVERGED) && m->iteration < o->iters) {
        if (o->ex.pause_ms > 0)
            usleep((useconds_t)o->ex.pause_ms * 1000);
        double r_prev = 0;
        for (size_t e = 0; e < n; e++) {
            r_prev += sq(x[e] - z[e]);
            v[e] = z[e] - u[e];
        }
        solve_local(j, &lm, &wk, x, v, m->rho, intercept);
        uint64_t passes = lm.evals + 2; /* and the start's evaluation, and the loss at z */
        for (size_t e = 0; e < n; e++)
            buf[e] = x[e] + u[e];
        buf[n] = lr_loss(j, z, (double)j->total_rows);
        buf[n + 1] = r_prev;
        if ((rc = rally_allreduce(j->r, buf, n + 2, RALLY_DOUBLE, RALLY_SUM, NULL, NULL)) !=
            RALLY_OK) {
            status = lr_fail(j, "the ADMM allreduce", rc);
            goto out;
        }
        double pen = 0, dz = 0;
        for (uint32_t e = 0; e < j->d; e++)
            pen += z[e] * z[e];
        double obj = buf[n] + 0.5 * m->lambda * pen, primal = sqrt(buf[n + 1]);
        memcpy(zold, z, n * sizeof *z);
        for (uint32_t e = 0; e < j->d; e++)
            z[e] = m->rho * buf[e] / (m->lambda + N * m->rho);
        z[j->d] = intercept ? buf[j->d] / N : 0.0;
        for (size_t e = 0; e < n; e++) {
            dz += sq(z[e] - zold[e]);
            u[e] += x[e] - z[e];
        }
        m->f = obj;
        m->resid = m->rho * sqrt(N * dz);
        m->iteration++;
        m->evals++;
        if (m->iteration >= 2 && primal <= o->tol && m->resid <= o->tol)
            m->flags |= LR_CONVERGED;
        else if (m->iteration >= 2)
            balance(m, u, n, primal);
        double t = ex_now_s();
        if (j->rank == 0 && !o->ex.quiet)
            ex_say("iteration %" PRIu64
                   " objective %.12g primal %.3g dual %.3g local passes %" PRIu64
                   " time %.4f s%s\n",
                   m->iteration, obj, primal, m->resid, passes, t - t_prev,
                   m->flags & LR_CONVERGED ? " converged" : "");
        t_prev = t;
        if (j->rank == 0) /* the value every rank has: one report is enough */
            rally_report(j->r, "loss", obj);
        uint64_t it = m->iteration;
        memcpy(local, &it, 8);
        memcpy(local + 8, x, n * sizeof *x);
        memcpy(local + 8 + n * sizeof *x, u, n * sizeof *u);
        lr_model_encode(m, bytes);
        if ((rc = rally_checkpoint(j->r, bytes, nbytes, local, local_nbytes)) != RALLY_OK) {
            status = lr_fail(j, "rally_checkpoint", rc);
            goto out;
        }
    }
    double fin = lr_loss(j, z, (double)j->total_rows), pen = 0;
    if ((rc = rally_allreduce(j->r, &fin, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL)) != RALLY_OK) {
        status = lr_fail(j, "the final objective's allreduce", rc);
        goto out;
    }
    for (uint32_t e = 0; e < j->d; e++)
        pen += z[e] * z[e];
    m->f = fin + 0.5 * m->lambda * pen;
    status = LR_EXIT_OK;
out:
    lr_lbfgs_work_free(&wk);
    lr_model_free(&lm);
    free(bytes);
    free(local);
    free(x);
    return status;
}
