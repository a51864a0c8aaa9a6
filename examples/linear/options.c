/*
 * options.c — rally-linear's command line: the usage text and the flags,
 * parsed into struct lr_opts.  rally_init has already taken the
 * rally_key=value arguments out of argv; --data-opt values go straight to
 * the data reader's own option parser.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "linear.h"
#include "args.h"
#include "opts.h"

#define PROG "rally-linear"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: rally-run -n N rally-linear [options] --data FILE [rally_key=value...]\n"
            "       rally-linear --show MODEL\n"
            "L2-regularised logistic regression over rally, by L-BFGS (every function\n"
            "evaluation one allreduce), by consensus ADMM (each worker's primal and dual\n"
            "variables a local model) or by minibatch SGD (a data cursor hands each step's\n"
            "global batch out: every sample once per epoch); a worker that dies is\n"
            "restarted and recovered.\n"
            "It minimises (1/n) sum log(1 + exp(-y (w.x + b))) + (lambda/2) |w|^2 over the\n"
            "n rows (labels: > 0 is the positive class; -1, 0, 1 only); scikit-learn's\n"
            "LogisticRegression(C) is lambda = 1 / (C n).\n"
            "\n"
            "  --data FILE          LIBSVM or CSV data (each worker reads its shard; sparse\n"
            "                       rows stay sparse)\n"
            "  --data-opt KEY=VAL   a data reader option, repeatable (docs/data.md), e.g.\n"
            "                       csv_label=0, format=libsvm, num_features=N\n"
            "  --solver S           lbfgs (default), admm or sgd\n"
            "  --lambda L           the L2 penalty (default 1e-4)\n"
            "  --C C                scikit-learn's C instead: lambda = 1 / (C n)\n"
            "  --no-intercept       no intercept b (default: fitted, not penalised)\n"
            "  --iters N            at most N iterations (default 1000)\n"
            "  --tol T              lbfgs: stop when |gradient|_inf <= T (default 1e-8);\n"
            "                       admm: when both residuals are <= T (default 1e-6)\n"
            "  --memory M           L-BFGS history pairs (default 10, at most %u)\n"
            "  --rho R              ADMM penalty parameter (default 1)\n"
            "  --epochs E           sgd: passes over the data (default 1)\n"
            "  --batch B            sgd: the global batch, split among the workers\n"
            "                       (default 64; an epoch's last batch takes what is left)\n"
            "  --lr R               sgd: the learning rate (default 0.1)\n"
            "  --seed S             sgd: the seed of the epochs' sample orders (default 0)\n"
            "  --reproducible       lbfgs, sgd: the same model, bit for bit, on any number of\n"
            "                       workers (exact sums: RALLY_SUM_EXACT; docs/determinism.md)\n"
            "  --model-out FILE     save the final model (binary, the checkpoint's bytes)\n"
            "  --json               print the final model as JSON before the result line\n"
            "  --show MODEL         print a saved model as JSON and exit (no job)\n"
            "  --pause-ms MS        sleep MS ms per iteration (demos: time to kill a worker)\n"
            "  --quiet              no per-iteration lines\n"
            "  --gate STEP,FILE     sgd, for tests: rank 0 waits before step STEP until FILE\n"
            "                       exists (at most 5 minutes)\n"
            "  --forget-cursor      sgd, for tests: do not restore the data cursor from the\n"
            "                       checkpoint (a negative control: samples repeat)\n"
            "  -h, --help           this text\n"
            "      --version        rally's version\n"
            "\n"
            "rally_key=value arguments and RALLY_* variables configure rally (docs/config.md);\n"
            "for admm, rally_local_replica=k keeps each local model on k more ranks.\n"
            "sgd: rank 0 prints 'epoch E: consumed N samples, ids digest HEX' at each epoch's\n"
            "end (the ids every worker took; docs/data.md).\n"
            "The last line is 'result: model_digest=<hex> objective=<%%.17g>' with the objective\n"
            "above at the final model (sgd: the last batch's).  Exit status: 0 on success, 1 on a rally error, 2 on\n"
            "bad input.\n",
            LR_MAX_MEMORY);
}

int lr_early_flags(int argc, char **argv)
{
    return ex_early_flags(PROG, argc, argv, usage, lr_model_show);
}

int lr_opts_parse(int argc, char **argv, struct lr_opts *o)
{
    static const struct option longopts[] = {EX_OPTS_LONG,
                                             {"solver", required_argument, 0, 'S'},
                                             {"lambda", required_argument, 0, 'l'},
                                             {"C", required_argument, 0, 'C'},
                                             {"no-intercept", no_argument, 0, 'B'},
                                             {"iters", required_argument, 0, 'i'},
                                             {"tol", required_argument, 0, 't'},
                                             {"memory", required_argument, 0, 'M'},
                                             {"rho", required_argument, 0, 'r'},
                                             {"reproducible", no_argument, 0, 'R'},
                                             {"show", required_argument, 0, 'W'},
                                             {"epochs", required_argument, 0, 'E'},
                                             {"batch", required_argument, 0, 'b'},
                                             {"lr", required_argument, 0, 'L'},
                                             {"seed", required_argument, 0, 's'},
                                             {"gate", required_argument, 0, 'G'},
                                             {"forget-cursor", no_argument, 0, 'F'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    *o = (struct lr_opts){.lambda = 1e-4, .iters = 1000, .mem = 10, .rho = 1, .intercept = 1,
                          .epochs = 1, .batch = 64, .lr = 0.1};
    char *comma, step[24];
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
        case 'S':
            if (strcmp(optarg, "lbfgs") == 0) {
                o->solver = LR_LBFGS;
            } else if (strcmp(optarg, "admm") == 0) {
                o->solver = LR_ADMM;
            } else if (strcmp(optarg, "sgd") == 0) {
                o->solver = LR_SGD;
            } else {
                fprintf(stderr, "rally-linear: --solver '%s': want lbfgs, admm or sgd\n", optarg);
                return -1;
            }
            break;
        case 'l':
            if (ex_positive(PROG, "--lambda", optarg, &o->lambda) != 0)
                return -1;
            o->C = 0;
            break;
        case 'C':
            if (ex_positive(PROG, "--C", optarg, &o->C) != 0)
                return -1;
            break;
        case 'B':
            o->intercept = 0;
            break;
        case 'i':
            if (ex_whole(PROG, "--iters", optarg, 0, 1000000000, &o->iters) != 0)
                return -1;
            break;
        case 't':
            if (ex_positive(PROG, "--tol", optarg, &o->tol) != 0)
                return -1;
            break;
        case 'M':
            if (ex_whole(PROG, "--memory", optarg, 1, LR_MAX_MEMORY, &v) != 0)
                return -1;
            o->mem = (uint32_t)v;
            break;
        case 'r':
            if (ex_positive(PROG, "--rho", optarg, &o->rho) != 0)
                return -1;
            break;
        case 'R':
            o->reproducible = 1;
            break;
        case 'E':
            if (ex_whole(PROG, "--epochs", optarg, 1, 1000000, &o->epochs) != 0)
                return -1;
            break;
        case 'b':
            if (ex_whole(PROG, "--batch", optarg, 1, 1000000000, &o->batch) != 0)
                return -1;
            break;
        case 'L':
            if (ex_positive(PROG, "--lr", optarg, &o->lr) != 0)
                return -1;
            break;
        case 's':
            if (ex_whole(PROG, "--seed", optarg, 0, UINT64_MAX, &o->seed) != 0)
                return -1;
            break;
        case 'G':
            if ((comma = strchr(optarg, ',')) == NULL || comma[1] == '\0' ||
                (size_t)(comma - optarg) >= sizeof step) {
                fprintf(stderr, "rally-linear: --gate '%s': want STEP,FILE\n", optarg);
                return -1;
            }
            memcpy(step, optarg, (size_t)(comma - optarg));
            step[comma - optarg] = '\0';
            if (ex_whole(PROG, "--gate", step, 0, UINT64_MAX, &o->gate_step) != 0)
                return -1;
            o->gate_file = comma + 1;
            break;
        case 'F':
            o->forget_cursor = 1;
            break;
        case 'W': /* --show=MODEL; "--show MODEL" is lr_early_flags' */
            return lr_model_show(optarg) == 0 ? 1 : -1;
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
    if (o->solver != LR_SGD && (o->gate_file != NULL || o->forget_cursor)) {
        fprintf(stderr, "rally-linear: --gate and --forget-cursor are for --solver sgd\n");
        return -1;
    }
    if (o->reproducible && o->solver == LR_ADMM) {
        fprintf(stderr, "rally-linear: --reproducible needs --solver lbfgs: ADMM's local models "
                        "(x_i, u_i) belong to a shard, so its model depends on the partition\n");
        return -1;
    }
    if (o->tol == 0)
        o->tol = o->solver == LR_ADMM ? 1e-6 : 1e-8;
    return 0;
}

void lr_opts_free(struct lr_opts *o)
{
    ex_opts_free(&o->ex);
}
