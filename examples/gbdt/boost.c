/*
 * boost.c — the boosting rounds: grow a tree (grow.c), the train loss by one
 * allreduce, a progress line, and a checkpoint of the trees every M trees
 * and after the last.  Between checkpoints rally keeps the collectives'
 * results, so a worker restarted there replays the trees since the last
 * checkpoint from them (docs/recovery.md).  Rank 0 reports each tree's
 * train loss to rally-run's observers (rally_report, "logloss" or "rmse")
 * at the checkpoint version it stands in after the tree, and the
 * checkpoints the run makes as its iterations in all (--trees with the
 * default --ckpt-every 1).
 */
#include <stdlib.h>
#include <unistd.h>

#include "gbdt.h"

/* The summed loss over this shard (or, --reproducible, each row's in
 * j->loss_acc), as the allreduce's prepare callback; it leaves the next
 * tree's gradients behind (grow.c computes them itself when
 * a recovering worker is handed the sum instead). */
struct loss {
    struct gb_job *j;
    const struct gb_model *m;
    double *sum;
};

static void shard_loss(void *arg)
{
    const struct loss *l = arg;
    *l->sum = gb_shard_loss(l->j, &l->m->p, l->m->ntrees, l->j->loss_acc);
}

int gb_train_loss(struct gb_job *j, const struct gb_model *m, double *out)
{
    double sum = 0;
    struct loss l = {j, m, &sum};
    int rc = j->reproducible /* every row's loss into one exact sum */
                 ? rally_allreduce_xsum(j->r, j->loss_acc, RALLY_DOUBLE, &sum, shard_loss, &l)
                 : rally_allreduce(j->r, &sum, 1, RALLY_DOUBLE, RALLY_SUM, shard_loss, &l);
    if (rc != RALLY_OK)
        return gb_fail(j, "the loss allreduce", rc);
    double obj = sum / (double)j->total_rows;
    *out = m->p.objective == GB_SQUARED ? sqrt(obj) : obj;
    return GB_EXIT_OK;
}

int gb_boost(struct gb_job *j, const struct gb_opts *o, struct gb_model *m)
{
    unsigned char *bytes = NULL; /* the checkpoint, reused */
    size_t cap = 0;
    double t_prev = ex_now_s(), obj = 0;
    int status = GB_EXIT_OK, rc;
    const char *metric = m->p.objective == GB_LOGISTIC ? "logloss" : "rmse";
    if (j->rank == 0) /* a checkpoint every ckpt_every trees, and after the last */
        rally_report_total(j->r, (o->trees + o->ckpt_every - 1) / o->ckpt_every);
    while (m->ntrees < o->trees) {
        if (o->ex.pause_ms > 0)
            usleep((useconds_t)o->ex.pause_ms * 1000);
        if ((status = gb_grow(j, m)) != GB_EXIT_OK)
            goto out;
        if ((status = gb_train_loss(j, m, &obj)) != GB_EXIT_OK)
            goto out;
        double t = ex_now_s();
        if (j->rank == 0 && !o->ex.quiet)
            ex_say("tree %" PRIu32 " train-%s %.9g time %.4f s (histograms %.4f, allreduce %.4f, "
                   "splits %.4f, rows %.4f)\n",
                   m->ntrees, metric, obj, t - t_prev, j->t_hist, j->t_reduce - j->t_hist,
                   j->t_split, j->t_rows);
        t_prev = t;
        if (m->ntrees % o->ckpt_every == 0 || m->ntrees == o->trees) {
            size_t n = gb_model_nbytes(m);
            if (n > cap) {
                unsigned char *nb = realloc(bytes, 2 * n);
                if (nb == NULL) {
                    status = gb_oom();
                    goto out;
                }
                bytes = nb;
                cap = 2 * n;
            }
            gb_model_encode(m, bytes);
            if ((rc = rally_checkpoint(j->r, bytes, n, NULL, 0)) != RALLY_OK) {
                status = gb_fail(j, "rally_checkpoint", rc);
                goto out;
            }
        }
        if (j->rank == 0) /* the value every rank has: one report is enough */
            rally_report(j->r, metric, obj);
    }
out:
    free(bytes);
    return status;
}
