/*
 * options.c — rally-gbdt's command line: the usage text and the flags, parsed
 * into struct gb_opts.  rally_init has already taken the rally_key=value
 * arguments out of argv; --data-opt values go to the data reader's own
 * option parser.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "gbdt.h"
#include "opts.h"

#define PROG "rally-gbdt"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: rally-run -n N rally-gbdt [options] --data FILE [rally_key=value...]\n"
            "       rally-gbdt predict MODEL.json DATA [--data-opt KEY=VAL]... [--out FILE]\n"
            "       rally-gbdt --show MODEL.json\n"
            "Gradient-boosted trees (histograms, as XGBoost's tree_method=hist) over rally;\n"
            "a worker that dies is restarted and recovered without restarting the job.\n"
            "\n"
            "  --data FILE             LIBSVM or CSV training data with labels (each worker\n"
            "                          reads its shard); absent or empty values are missing\n"
            "  --data-opt KEY=VAL      a data reader option, repeatable (docs/data.md), e.g.\n"
            "                          csv_label=0, csv_header=yes, format=libsvm\n"
            "  --objective OBJ         binary:logistic (default; labels 0/1) or\n"
            "                          reg:squarederror\n"
            "  --trees N               boosting rounds (default 10)\n"
            "  --max-depth D           depth of each tree, 1..%u (default 6)\n"
            "  --eta X                 learning rate (default 0.3)\n"
            "  --lambda X              L2 regularisation of leaf weights (default 1)\n"
            "  --gamma X               minimum loss change of a split (default 0)\n"
            "  --min-child-weight X    minimum hessian sum of a child (default 1)\n"
            "  --max-bin B             histogram bins per feature, 2..%u (default 255)\n"
            "  --base-score X          initial prediction (default 0.5)\n"
            "  --checkpoint-every M    checkpoint the trees every M trees and after the\n"
            "                          last (default 1)\n"
            "  --reproducible          the same model, bit for bit, on any number of workers:\n"
            "                          exact quantile cuts, gradients on a common grid summed\n"
            "                          exactly (docs/determinism.md)\n"
            "  --model-out FILE        save the final model as JSON (README.md describes it)\n"
            "  --pred-out FILE         write the training rows' predictions (rank 0, file\n"
            "                          order, %%.17g), as `predict` prints them\n"
            "  --json                  print the final model as JSON before the result line\n"
            "  --show MODEL.json       check a saved model and print it (no job)\n"
            "  --pause-ms MS           sleep MS ms per tree (demos: time to kill a worker)\n"
            "  --quiet                 no per-tree lines\n"
            "  -h, --help              this text\n"
            "      --version           rally's version\n"
            "\n"
            "rally_key=value arguments and RALLY_* variables configure rally (docs/config.md).\n"
            "Rank 0 prints one line per tree (tree, train loss, seconds), then\n"
            "'predictions: digest=<hex>' and last 'result: model_digest=<hex>\n"
            "objective=<%%.17g>', the final mean train log loss (logistic) or root mean\n"
            "squared error.  Exit status: 0 on success, 1 on a rally error, 2 on bad input.\n",
            GB_MAX_DEPTH, GB_MAX_BIN);
}

/* --show MODEL: the saved model as JSON.  The exit status. */
static int show(const char *path)
{
    struct gb_model m = {0};
    char err[8192], *json = NULL;
    size_t n = 0;
    int rc = GB_EXIT_INPUT;
    if (gb_model_read_json(path, &m, err, sizeof err) != 0)
        fprintf(stderr, "rally-gbdt: %s\n", err);
    else if (gb_model_json(&m, &json, &n) != 0)
        rc = gb_oom();
    else
        rc = fwrite(json, 1, n, stdout) == n ? GB_EXIT_OK : GB_EXIT_RALLY;
    free(json);
    gb_model_free(&m);
    return rc;
}

int gb_early_flags(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "predict") == 0)
        return gb_predict_main(argc, argv);
    return ex_early_flags(PROG, argc, argv, usage, show);
}

int gb_opts_parse(int argc, char **argv, struct gb_opts *o)
{
    static const struct option longopts[] = {EX_OPTS_LONG,
                                             {"objective", required_argument, 0, 'o'},
                                             {"trees", required_argument, 0, 't'},
                                             {"max-depth", required_argument, 0, 'x'},
                                             {"eta", required_argument, 0, 'e'},
                                             {"lambda", required_argument, 0, 'l'},
                                             {"gamma", required_argument, 0, 'g'},
                                             {"min-child-weight", required_argument, 0, 'w'},
                                             {"max-bin", required_argument, 0, 'b'},
                                             {"base-score", required_argument, 0, 'B'},
                                             {"checkpoint-every", required_argument, 0, 'c'},
                                             {"pred-out", required_argument, 0, 'P'},
                                             {"reproducible", no_argument, 0, 'R'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    *o = (struct gb_opts){.trees = 10,
                          .ckpt_every = 1,
                          .p = {.objective = GB_LOGISTIC,
                                .max_depth = 6,
                                .max_bin = 255,
                                .eta = 0.3,
                                .lambda = 1,
                                .gamma = 0,
                                .min_child_weight = 1,
                                .base_score = 0.5}};
    if (ex_opts_init(PROG, &o->ex) != 0)
        return -1;
    uint64_t v;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int taken = ex_opts_take(PROG, &o->ex, c, optarg);
        if (taken < 0)
            return -1;
        if (taken > 0)
            continue;
        switch (c) {
        case 'o':
            if (strcmp(optarg, "binary:logistic") == 0)
                o->p.objective = GB_LOGISTIC;
            else if (strcmp(optarg, "reg:squarederror") == 0)
                o->p.objective = GB_SQUARED;
            else {
                fprintf(stderr,
                        "rally-gbdt: --objective '%s': want binary:logistic or "
                        "reg:squarederror\n",
                        optarg);
                return -1;
            }
            break;
        case 't':
            if (ex_whole(PROG, "--trees", optarg, 1, GB_MAX_TREES, &v) != 0)
                return -1;
            o->trees = (uint32_t)v;
            break;
        case 'x':
            if (ex_whole(PROG, "--max-depth", optarg, 1, GB_MAX_DEPTH, &v) != 0)
                return -1;
            o->p.max_depth = (uint32_t)v;
            break;
        case 'e':
            if (ex_real(PROG, "--eta", optarg, 1e-6, 1, &o->p.eta) != 0)
                return -1;
            break;
        case 'l':
            if (ex_real(PROG, "--lambda", optarg, 0, 1e12, &o->p.lambda) != 0)
                return -1;
            break;
        case 'g':
            if (ex_real(PROG, "--gamma", optarg, 0, 1e12, &o->p.gamma) != 0)
                return -1;
            break;
        case 'w':
            if (ex_real(PROG, "--min-child-weight", optarg, 0, 1e12, &o->p.min_child_weight) != 0)
                return -1;
            break;
        case 'b':
            if (ex_whole(PROG, "--max-bin", optarg, 2, GB_MAX_BIN, &v) != 0)
                return -1;
            o->p.max_bin = (uint32_t)v;
            break;
        case 'B':
            if (ex_real(PROG, "--base-score", optarg, -1e12, 1e12, &o->p.base_score) != 0)
                return -1;
            break;
        case 'c':
            if (ex_whole(PROG, "--checkpoint-every", optarg, 1, GB_MAX_TREES, &v) != 0)
                return -1;
            o->ckpt_every = (uint32_t)v;
            break;
        case 'P':
            o->pred_out = optarg;
            break;
        case 'R':
            o->reproducible = 1;
            break;
        case 'h':
            usage(stdout);
            return 1;
        default:
            usage(stderr);
            return -1;
        }
    }
    if (ex_args_end(PROG, argc, argv, optind, o->ex.data) != 0)
        return -1;
    if (o->p.objective == GB_LOGISTIC && !(o->p.base_score > 0 && o->p.base_score < 1)) {
        fprintf(stderr, "rally-gbdt: --base-score must lie in (0, 1) for binary:logistic\n");
        return -1;
    }
    return 0;
}

void gb_opts_free(struct gb_opts *o)
{
    ex_opts_free(&o->ex);
}
