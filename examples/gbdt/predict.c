/*
 * predict.c — walking the trees: a row's margin, the prediction cache rebuilt
 * after a restore, and `rally-gbdt predict MODEL DATA` (the objectives'
 * outputs and losses are inline in gbdt.h, for grow.c's loss pass).
 *
 * The prediction cache (j->pred) is derived state: each row's margin, base
 * plus the trees' outputs.  Training adds tree t's output to it when t is
 * grown (grow.c, by the leaf each row reached through its bins); after a
 * restore it is recomputed here from the loaded trees, adding the same
 * outputs in the same order, so it holds the same bits as in a run that
 * never stopped.  Both agree on the leaf because a split's threshold is the
 * cut point above its bin: bin <= split_bin exactly when value < threshold.
 */
#include <stdlib.h>
#include <string.h>

#include "gbdt.h"

static double base_margin(const struct gb_params *p)
{
    return p->objective == GB_LOGISTIC ? log(p->base_score / (1.0 - p->base_score)) : p->base_score;
}

static double leaf(const struct gb_tree *t, const float *x)
{
    const struct gb_node *n = t->nodes;
    while (n->feature >= 0) {
        float v = x[n->feature];
        int left = isnan(v) ? (int)n->default_left : v < n->threshold;
        n = &t->nodes[left ? n->left : n->right];
    }
    return n->value;
}

double gb_margin(const struct gb_model *m, const float *x)
{
    double s = base_margin(&m->p);
    for (uint32_t t = 0; t < m->ntrees; t++)
        s += leaf(&m->trees[t], x);
    return s;
}

void gb_rebuild_cache(const struct gb_model *m, const float *x, uint64_t rows, double *pred)
{
    for (uint64_t i = 0; i < rows; i++)
        pred[i] = gb_margin(m, x + i * m->d);
}

int gb_predict_main(int argc, char **argv)
{
    struct gb_model m = {0};
    rally_data_opts_t *o = NULL;
    rally_dataset_t *ds = NULL;
    float *row = NULL;
    FILE *out = stdout;
    const char *out_path = NULL;
    char err[8192];
    int status = GB_EXIT_INPUT;
    if (argc < 4) {
        fprintf(stderr, "usage: rally-gbdt predict MODEL.json DATA [--data-opt KEY=VAL]... "
                        "[--out FILE]\n");
        return GB_EXIT_INPUT;
    }
    if (rally_data_opts_new(&o) != RALLY_OK)
        return gb_oom();
    for (int i = 4; i < argc; i++) {
        if (strcmp(argv[i], "--data-opt") == 0 && i + 1 < argc) {
            if (rally_data_opts_parse(o, argv[++i], err, sizeof err) != RALLY_OK) {
                fprintf(stderr, "rally-gbdt: --data-opt %s: %s\n", argv[i], err);
                goto out;
            }
        } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
            out_path = argv[++i];
        } else {
            fprintf(stderr, "rally-gbdt: predict: unexpected argument '%s'\n", argv[i]);
            goto out;
        }
    }
    if (gb_model_read_json(argv[2], &m, err, sizeof err) != 0) {
        fprintf(stderr, "rally-gbdt: %s\n", err);
        goto out;
    }
    if (rally_data_read(argv[3], o, 0, 1, &ds, err, sizeof err) != RALLY_OK) {
        fprintf(stderr, "rally-gbdt: %s\n", err);
        goto out;
    }
    size_t width = rally_data_num_features(ds) > m.d ? rally_data_num_features(ds) : m.d;
    if ((row = malloc((width + 1) * sizeof *row)) == NULL) {
        status = gb_oom();
        goto out;
    }
    if (out_path != NULL && (out = fopen(out_path, "w")) == NULL) {
        fprintf(stderr, "rally-gbdt: %s: cannot open for writing\n", out_path);
        out = stdout;
        goto out;
    }
    for (uint64_t i = 0; i < rally_data_num_rows(ds); i++) {
        if (rally_data_row_dense(ds, i, row, width, NAN) != RALLY_OK) {
            fprintf(stderr, "rally-gbdt: %s: row %" PRIu64 " cannot be read\n", argv[3], i);
            goto out;
        }
        fprintf(out, "%.17g\n", gb_output(&m.p, gb_margin(&m, row)));
    }
    status = fflush(out) == 0 ? GB_EXIT_OK : GB_EXIT_RALLY;
out:
    if (out != stdout)
        fclose(out);
    free(row);
    rally_data_free(ds);
    rally_data_opts_free(o);
    gb_model_free(&m);
    return status;
}
