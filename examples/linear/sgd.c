/*
 * sgd.c — minibatch SGD on the logistic objective, driven by rally's data
 * cursor (rally/data.h): every sample once per epoch, whatever fails and
 * however many workers there are.
 *
 * Every worker holds the whole data set (linear.c reads it at world 1), so
 * a global sample id is a row number.  A step: rally_cursor_next gives this
 * rank its share of the global batch of b ids; one SUM allreduce of the
 * share's [gradient (n) | loss] (with --reproducible exact sums, so the
 * bits do not depend on how the batch was split); one SUM allreduce of the
 * share's [id count, rally_ids_digest] into the epoch's tally; then every
 * rank makes the same update
 *
 *     w <- w - lr (grad / b + lambda w)   (the intercept not penalised)
 *
 * and checkpoints.  The checkpoint is the model's bytes (model.c), then
 * the epoch's tally so far (u64 count, u64 digest) and the cursor's
 * RALLY_CURSOR_NBYTES: the cursor always stands where the model is, so a
 * restarted worker, a job that shrank or grew (every worker loads it) and
 * a snapshot resumed at another N all go on with the same epoch at the
 * same position.  At each epoch's end rank 0 prints
 * "epoch E: consumed N samples, ids digest HEX" from the tally: the ids
 * every rank took, as they took them.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linear.h"

#define TALLY_NBYTES 16

struct sgd {
    struct lr_job *j;
    rally_cursor_t *cur;
    uint64_t *ids; /* this rank's share of the step */
    size_t nids, cap;
    const double *w;
    double scale;      /* the step's global batch */
    double *buf;       /* [g (n) | loss] */
    rally_xsum_t *acc; /* --reproducible */
    double *tmp;
    uint64_t *at;
    uint64_t tally[2]; /* the epoch so far: ids taken, their digest */
    unsigned char *bytes; /* the checkpoint: model, tally, cursor */
    size_t model_nbytes;
};

static void prepare(void *arg)
{
    struct sgd *s = arg;
    size_t n = (size_t)s->j->d + 1;
    memset(s->buf, 0, (n + 1) * sizeof *s->buf);
    s->buf[n] = lr_batch_grad(s->j, s->w, s->ids, s->nids, s->scale, s->buf);
}

static void prepare_exact(void *arg)
{
    struct sgd *s = arg;
    lr_batch_grad_exact(s->j, s->w, s->ids, s->nids, s->scale, s->acc, s->tmp, s->at);
}

static int save(struct sgd *s, const struct lr_model *m)
{
    lr_model_encode(m, s->bytes);
    ex_put64(s->bytes + s->model_nbytes, s->tally[0]);
    ex_put64(s->bytes + s->model_nbytes + 8, s->tally[1]);
    rally_cursor_save(s->cur, s->bytes + s->model_nbytes + TALLY_NBYTES, RALLY_CURSOR_NBYTES);
    size_t nbytes = s->model_nbytes + TALLY_NBYTES + RALLY_CURSOR_NBYTES;
    int rc = rally_checkpoint(s->j->r, s->bytes, nbytes, NULL, 0);
    return rc == RALLY_OK ? LR_EXIT_OK : lr_fail(s->j, "rally_checkpoint", rc);
}

/* The model, tally and cursor from the newest checkpoint, or a fresh
 * start.  The exit status. */
static int load_or_start(struct sgd *s, const struct lr_opts *o, struct lr_model *m)
{
    struct lr_job *j = s->j;
    void *saved = NULL;
    uint64_t saved_n = 0, version = 0;
    const char *why = "too short";
    char err[256];
    int status = LR_EXIT_RALLY, rc;
    if ((rc = rally_load_checkpoint(j->r, &saved, &saved_n, NULL, NULL, &version)) != RALLY_OK)
        return lr_fail(j, "rally_load_checkpoint", rc);
    if (version == 0) {
        if (lr_model_alloc(m, LR_SGD, j->d, 0) != 0) {
            status = lr_oom();
            goto out;
        }
        m->flags = o->intercept ? LR_INTERCEPT : 0;
        m->lambda = o->lambda;
        m->rho = o->lr;
        status = LR_EXIT_OK;
        goto out;
    }
    size_t tail = TALLY_NBYTES + RALLY_CURSOR_NBYTES;
    const unsigned char *b = saved;
    if (saved_n < tail || lr_model_decode(b, saved_n - tail, m, &why) != 0) {
        fprintf(stderr, "rally-linear: rank %d: the checkpoint is %s\n", j->rank, why);
        goto out;
    }
    if (m->solver != LR_SGD || m->d != j->d) {
        fprintf(stderr, "rally-linear: rank %d: the checkpoint is for another solver or shape\n",
                j->rank);
        goto out;
    }
    s->tally[0] = ex_get64(b + saved_n - tail);
    s->tally[1] = ex_get64(b + saved_n - tail + 8);
    if (!o->forget_cursor &&
        rally_cursor_load(s->cur, b + saved_n - RALLY_CURSOR_NBYTES, RALLY_CURSOR_NBYTES, err,
                          sizeof err) != RALLY_OK) {
        fprintf(stderr, "rally-linear: rank %d: %s\n", j->rank, err);
        goto out;
    }
    ex_say("rank %d restarted: resuming after step %" PRIu64 " at epoch %" PRIu64
           " position %" PRIu64 " (checkpoint version %" PRIu64 ")\n",
           j->rank, m->iteration, rally_cursor_epoch(s->cur) + 1, rally_cursor_position(s->cur),
           version);
    status = LR_EXIT_OK;
out:
    rally_free(saved);
    return status;
}

/* --gate STEP,FILE: rank 0 holds the job before step STEP until FILE
 * exists (a test takes workers in or out there), at most five minutes. */
static int gate(const struct lr_job *j, const struct lr_opts *o, uint64_t step)
{
    if (o->gate_file == NULL || j->rank != 0 || step != o->gate_step)
        return LR_EXIT_OK;
    ex_say("at the gate before step %" PRIu64 "\n", step);
    for (int i = 0; i < 30000 && access(o->gate_file, F_OK) != 0; i++)
        usleep(10000);
    if (access(o->gate_file, F_OK) == 0)
        return LR_EXIT_OK;
    fprintf(stderr, "rally-linear: %s never came\n", o->gate_file);
    return LR_EXIT_RALLY;
}

/* One step: the share's gradient and ids summed over every rank, the
 * update, the epoch's end.  The exit status. */
static int step(struct sgd *s, const struct lr_opts *o, struct lr_model *m)
{
    struct lr_job *j = s->j;
    size_t n = (size_t)m->d + 1;
    uint64_t epoch = rally_cursor_epoch(s->cur);
    uint64_t b = j->total_rows - rally_cursor_position(s->cur);
    b = b < o->batch ? b : o->batch;
    if (rally_cursor_next(s->cur, j->rank, j->world, s->ids, s->cap, &s->nids) != RALLY_OK) {
        fprintf(stderr, "rally-linear: rank %d: rally_cursor_next refused\n", j->rank);
        return LR_EXIT_RALLY;
    }
    s->w = m->w;
    s->scale = (double)b;
    int rc;
    if (s->acc != NULL) {
        rc = rally_allreduce_xsum(j->r, s->acc, RALLY_DOUBLE, s->buf, prepare_exact, s);
        s->buf[n] *= 1.0 / (double)b;
    } else {
        rc = rally_allreduce(j->r, s->buf, n + 1, RALLY_DOUBLE, RALLY_SUM, prepare, s);
    }
    if (rc != RALLY_OK)
        return lr_fail(j, "the gradient allreduce", rc);
    uint64_t took[2] = {s->nids, rally_ids_digest(s->ids, s->nids)};
    if ((rc = rally_allreduce(j->r, took, 2, RALLY_UINT64, RALLY_SUM, NULL, NULL)) != RALLY_OK)
        return lr_fail(j, "the ids allreduce", rc);
    double pen = 0;
    for (uint32_t e = 0; e < m->d; e++) {
        pen += m->w[e] * m->w[e];
        m->g[e] = s->buf[e] + m->lambda * m->w[e];
    }
    m->g[m->d] = m->flags & LR_INTERCEPT ? s->buf[m->d] : 0.0;
    m->f = s->buf[n] + 0.5 * m->lambda * pen;
    for (size_t e = 0; e < n; e++)
        m->w[e] -= m->rho * m->g[e];
    m->iteration++;
    m->evals++;
    s->tally[0] += took[0];
    s->tally[1] += took[1];
    if (rally_cursor_epoch(s->cur) != epoch) {
        if (j->rank == 0)
            ex_say("epoch %" PRIu64 ": consumed %" PRIu64 " samples, ids digest %016" PRIx64
                   "\n",
                   epoch + 1, s->tally[0], s->tally[1]);
        s->tally[0] = s->tally[1] = 0;
    }
    return LR_EXIT_OK;
}

int lr_sgd(struct lr_job *j, const struct lr_opts *o, struct lr_model *m)
{
    struct sgd s = {.j = j, .cap = (size_t)(o->batch / (uint64_t)j->world) + 1};
    size_t n = (size_t)j->d + 1;
    int status = LR_EXIT_RALLY;
    if (rally_cursor_new(j->total_rows, o->batch, o->seed, &s.cur) != RALLY_OK ||
        (s.ids = malloc(s.cap * sizeof *s.ids)) == NULL ||
        (s.buf = malloc((n + 1) * sizeof *s.buf)) == NULL) {
        status = lr_oom();
        goto out;
    }
    if (j->reproducible && ((s.acc = rally_xsum_new(n + 1)) == NULL ||
                            (s.tmp = malloc(n * sizeof *s.tmp)) == NULL ||
                            (s.at = malloc(n * sizeof *s.at)) == NULL)) {
        status = lr_oom();
        goto out;
    }
    if ((status = load_or_start(&s, o, m)) != LR_EXIT_OK)
        goto out;
    s.model_nbytes = lr_model_nbytes(m);
    if ((s.bytes = malloc(s.model_nbytes + TALLY_NBYTES + RALLY_CURSOR_NBYTES)) == NULL) {
        status = lr_oom();
        goto out;
    }
    if (j->rank == 0 && m->iteration == 0 && !o->ex.quiet)
        ex_say("sgd: %" PRIu64 " samples x %u features on %d workers, batch %" PRIu64
               ", %" PRIu64 " epochs, lr %.6g\n",
               j->total_rows, j->d, j->world, o->batch, o->epochs, o->lr);
    while (rally_cursor_epoch(s.cur) < o->epochs) {
        if (o->ex.pause_ms > 0)
            usleep((useconds_t)o->ex.pause_ms * 1000);
        if ((status = gate(j, o, m->iteration)) != LR_EXIT_OK ||
            (status = step(&s, o, m)) != LR_EXIT_OK || (status = save(&s, m)) != LR_EXIT_OK)
            goto out;
        if (j->rank == 0)
            rally_report(j->r, "loss", m->f);
    }
    status = LR_EXIT_OK;
out:
    rally_cursor_free(s.cur);
    free(s.ids);
    free(s.buf);
    rally_xsum_free(s.acc);
    free(s.tmp);
    free(s.at);
    free(s.bytes);
    return status;
}
