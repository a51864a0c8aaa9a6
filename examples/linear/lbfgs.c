/*
 * lbfgs.c — L-BFGS: one iteration of it over any function (the distributed
 * objective here, a worker's ADMM subproblem in admm.c), and the distributed
 * solver, whose every function evaluation is one allreduce.
 *
 * An iteration: the two-loop recursion turns g and the newest (s, y) pairs
 * into a direction (scaled by s.y / y.y of the newest pair; the first step
 * is 1 / |g|_2 long); a backtracking line search tries steps from 1 until
 * the Armijo condition f(w + a d) <= f + 1e-4 a g.d holds (each trial one
 * evaluation; the next trial is the quadratic model's minimum, kept within
 * [0.1, 0.5] of the last step); then the pair (s, y) enters the history when
 * s.y > 0 (the objective is strictly convex, so it always does in exact
 * arithmetic).  Every sum runs in index order: the same bits on every rank
 * and every run.
 *
 * The distributed evaluation: a prepare callback (run only where the result
 * is computed, not on a recovering worker served the cached one) sums the
 * shard's loss and gradient into [g (n) | loss]; one SUM allreduce; then
 * every rank adds the penalty (lambda/2) |w|^2 (not to the intercept).
 * Rank 0 reports each iteration's loss (rally_report, for rally-run's
 * observers) and --iters as the iterations in all.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linear.h"

#define LS_MAX_TRIALS 60
#define FTOL 1e-13

static double dot(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

static double inf_norm(const double *a, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s = fabs(a[i]) > s ? fabs(a[i]) : s;
    return s;
}

int lr_lbfgs_work_alloc(struct lr_lbfgs_work *w, uint32_t n, uint32_t mem)
{
    double *v = malloc(((size_t)3 * n + mem + 1) * sizeof *v);
    if (v == NULL)
        return -1;
    w->dir = v;
    w->x = v + n;
    w->gx = w->x + n;
    w->alpha = w->gx + n;
    return 0;
}

void lr_lbfgs_work_free(struct lr_lbfgs_work *w)
{
    free(w->dir);
    w->dir = NULL;
}

/* dir = -H g by the two-loop recursion over the history. */
static void direction(const struct lr_model *m, struct lr_lbfgs_work *wk)
{
    size_t n = (size_t)m->d + 1;
    double *q = wk->dir;
    memcpy(q, m->g, n * sizeof *q);
    for (uint32_t k = 0; k < m->hist_len; k++) { /* newest to oldest */
        uint32_t i = (m->hist_head + m->mem - k) % m->mem;
        double a = dot(m->s + i * n, q, n) / m->sy[i];
        wk->alpha[i] = a;
        const double *yi = m->y + i * n;
        for (size_t e = 0; e < n; e++)
            q[e] -= a * yi[e];
    }
    if (m->hist_len > 0) {
        const double *yn = m->y + (size_t)m->hist_head * n;
        double gamma = m->sy[m->hist_head] / dot(yn, yn, n);
        for (size_t e = 0; e < n; e++)
            q[e] *= gamma;
    }
    for (uint32_t k = m->hist_len; k-- > 0;) { /* oldest to newest */
        uint32_t i = (m->hist_head + m->mem - k) % m->mem;
        double b = dot(m->y + i * n, q, n) / m->sy[i];
        const double *si = m->s + i * n;
        for (size_t e = 0; e < n; e++)
            q[e] += (wk->alpha[i] - b) * si[e];
    }
    for (size_t e = 0; e < n; e++)
        q[e] = -q[e];
}

int lr_lbfgs_step(struct lr_model *m, struct lr_lbfgs_work *wk, lr_eval_fn eval, void *arg,
                  double tol)
{
    size_t n = (size_t)m->d + 1;
    direction(m, wk);
    double gd = dot(m->g, wk->dir, n);
    if (!(gd < 0)) { /* not a descent direction (rounding): restart from -g */
        m->hist_len = 0;
        direction(m, wk);
        gd = dot(m->g, wk->dir, n);
    }
    double step = m->hist_len > 0 ? 1.0 : 1.0 / sqrt(dot(m->g, m->g, n));
    if (step > 1.0)
        step = 1.0;
    double fx = 0;
    int ok = 0, status;
    for (int t = 0; t < LS_MAX_TRIALS; t++) {
        for (size_t e = 0; e < n; e++)
            wk->x[e] = m->w[e] + step * wk->dir[e];
        if ((status = eval(arg, wk->x, &fx, wk->gx)) != LR_EXIT_OK)
            return status;
        m->evals++;
        if (fx <= m->f + 1e-4 * step * gd) {
            ok = 1;
            break;
        }
        /* the minimum of the quadratic through f, g.d and fx, within [0.1, 0.5] step */
        double next = -gd * step * step / (2 * (fx - m->f - gd * step));
        if (!(next >= 0.1 * step))
            next = 0.1 * step;
        if (next > 0.5 * step)
            next = 0.5 * step;
        step = next;
    }
    if (!ok) { /* no decrease at any step: w is as good as this precision allows */
        m->flags |= LR_CONVERGED | LR_LS_FAILED;
        m->iteration++;
        return LR_EXIT_OK;
    }
    if (m->mem > 0) {
        uint32_t i = m->hist_len == 0 ? 0 : (m->hist_head + 1) % m->mem;
        double *si = m->s + i * n, *yi = m->y + i * n;
        for (size_t e = 0; e < n; e++) {
            si[e] = wk->x[e] - m->w[e];
            yi[e] = wk->gx[e] - m->g[e];
        }
        double sy = dot(si, yi, n);
        if (sy > 1e-16 * dot(yi, yi, n) && sy > 0) {
            m->sy[i] = sy;
            m->hist_head = i;
            if (m->hist_len < m->mem)
                m->hist_len++;
        }
    }
    double decrease = m->f - fx, scale = fabs(m->f) > 1 ? fabs(m->f) : 1;
    memcpy(m->w, wk->x, n * sizeof *m->w);
    memcpy(m->g, wk->gx, n * sizeof *m->g);
    m->f = fx;
    m->resid = step;
    m->iteration++;
    if (inf_norm(m->g, n) <= tol || decrease <= FTOL * scale)
        m->flags |= LR_CONVERGED;
    return LR_EXIT_OK;
}

/* --- the distributed objective ------------------------------------------------ */

struct dist_eval {
    struct lr_job *j;
    const struct lr_model *m;
    const double *x;
    double *buf;       /* [g (n) | loss] */
    rally_xsum_t *acc;    /* --reproducible: the same sums, exact */
    double *tmp;          /* a row's terms (n) */
    uint64_t *at;         /* their elements (n) */
    struct lr_lane *lane; /* --reproducible on a dense shard: the faster lane */
};

static int dist_eval_alloc(struct dist_eval *de, struct lr_job *j, const struct lr_model *m)
{
    size_t n = (size_t)m->d + 1;
    *de = (struct dist_eval){j, m, NULL, malloc((n + 1) * sizeof(double)), NULL, NULL, NULL, NULL};
    if (j->reproducible) {
        de->acc = rally_xsum_new(n + 1);
        de->tmp = malloc(n * sizeof *de->tmp);
        de->at = malloc(n * sizeof *de->at);
        if (de->acc == NULL || de->tmp == NULL || de->at == NULL ||
            (j->dense && (de->lane = lr_lane_new(j)) == NULL))
            return -1;
    }
    return de->buf == NULL ? -1 : 0;
}

static void dist_eval_free(struct dist_eval *de)
{
    free(de->buf);
    rally_xsum_free(de->acc);
    free(de->tmp);
    free(de->at);
    lr_lane_free(de->lane);
}

static void prepare(void *arg)
{
    struct dist_eval *de = arg;
    size_t n = (size_t)de->j->d + 1;
    memset(de->buf, 0, (n + 1) * sizeof *de->buf);
    de->buf[n] = lr_loss_grad(de->j, de->x, (double)de->j->total_rows, de->buf);
}

static void prepare_exact(void *arg)
{
    struct dist_eval *de = arg;
    if (de->lane != NULL)
        lr_loss_grad_lane(de->j, de->x, (double)de->j->total_rows, de->acc, de->tmp, de->at,
                          de->lane);
    else
        lr_loss_grad_exact(de->j, de->x, (double)de->j->total_rows, de->acc, de->tmp, de->at);
}

static int dist_eval(void *arg, const double *x, double *f, double *g)
{
    struct dist_eval *de = arg;
    const struct lr_model *m = de->m;
    size_t n = (size_t)m->d + 1;
    de->x = x;
    int rc;
    if (de->acc != NULL) {
        rc = rally_allreduce_xsum(de->j->r, de->acc, RALLY_DOUBLE, de->buf, prepare_exact, de);
        de->buf[n] *= 1.0 / (double)de->j->total_rows;
    } else {
        rc = rally_allreduce(de->j->r, de->buf, n + 1, RALLY_DOUBLE, RALLY_SUM, prepare, de);
    }
    if (rc != RALLY_OK)
        return lr_fail(de->j, "the loss allreduce", rc);
    double pen = 0;
    for (uint32_t e = 0; e < m->d; e++) {
        pen += x[e] * x[e];
        g[e] = de->buf[e] + m->lambda * x[e];
    }
    g[m->d] = m->flags & LR_INTERCEPT ? de->buf[m->d] : 0.0;
    *f = de->buf[n] + 0.5 * m->lambda * pen;
    return LR_EXIT_OK;
}

int lr_lbfgs_eval_start(struct lr_job *j, struct lr_model *m)
{
    struct dist_eval de;
    int status = dist_eval_alloc(&de, j, m) == 0 ? dist_eval(&de, m->w, &m->f, m->g) : lr_oom();
    m->evals = 1;
    dist_eval_free(&de);
    return status;
}

int lr_lbfgs_run(struct lr_job *j, const struct lr_opts *o, struct lr_model *m)
{
    size_t n = (size_t)m->d + 1, nbytes = lr_model_nbytes(m);
    struct lr_lbfgs_work wk = {0};
    struct dist_eval de;
    unsigned char *bytes = malloc(nbytes); /* the checkpoint, reused every iteration */
    int status = LR_EXIT_OK, rc;
    if (dist_eval_alloc(&de, j, m) != 0 || bytes == NULL ||
        lr_lbfgs_work_alloc(&wk, (uint32_t)n, m->mem) != 0) {
        status = lr_oom();
        goto out;
    }
    double t_prev = ex_now_s();
    if (j->rank == 0)
        rally_report_total(j->r, o->iters);
    while (!(m->flags & LR_CONVERGED) && m->iteration < o->iters) {
        if (o->ex.pause_ms > 0)
            usleep((useconds_t)o->ex.pause_ms * 1000);
        uint64_t evals = m->evals;
        if ((status = lr_lbfgs_step(m, &wk, dist_eval, &de, o->tol)) != LR_EXIT_OK)
            goto out;
        double t = ex_now_s();
        if (j->rank == 0 && !o->ex.quiet)
            ex_say("iteration %" PRIu64 " loss %.12g |g| %.3g step %.3g evals %" PRIu64
                   " time %.4f s%s\n",
                   m->iteration, m->f, inf_norm(m->g, n), m->resid, m->evals - evals, t - t_prev,
                   m->flags & LR_LS_FAILED   ? " line search found no decrease; stopping"
                   : m->flags & LR_CONVERGED ? " converged"
                                             : "");
        t_prev = t;
        if (j->rank == 0) /* the value every rank has: one report is enough */
            rally_report(j->r, "loss", m->f);
        lr_model_encode(m, bytes);
        if ((rc = rally_checkpoint(j->r, bytes, nbytes, NULL, 0)) != RALLY_OK) {
            status = lr_fail(j, "rally_checkpoint", rc);
            goto out;
        }
    }
out:
    lr_lbfgs_work_free(&wk);
    free(bytes);
    dist_eval_free(&de);
    return status;
}
