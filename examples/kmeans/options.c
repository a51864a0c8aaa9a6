/*
 * options.c — rally-kmeans's command line: the usage text and the flags, parsed
 * into struct km_opts.  rally_init has already taken the rally_key=value
 * arguments out of argv; --data-opt values go straight to the data reader's
 * own option parser (rally_data_opts_parse), so their errors are its errors.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "kmeans.h"
#include "opts.h"

#define PROG "rally-kmeans"

static void usage(FILE *f)
{
    fprintf(f, "usage: rally-run -n N rally-kmeans [options] --data FILE [rally_key=value...]\n"
               "       rally-kmeans --show MODEL\n"
               "Distributed k-means (k-means++ initialisation, Lloyd iterations) over rally;\n"
               "a worker that dies is restarted and recovered without restarting the job.\n"
               "\n"
               "  --data FILE          LIBSVM or CSV data (each worker reads its shard)\n"
               "  --data-opt KEY=VAL   a data reader option, repeatable (docs/data.md), e.g.\n"
               "                       csv_label=0, csv_header=yes, format=libsvm, partition=hash\n"
               "  -k, --clusters K     number of clusters (default 8)\n"
               "  --iters N            at most N Lloyd iterations (default 100); the job stops\n"
               "                       earlier when the centroids stop changing\n"
               "  --fixed-iters        run all N iterations even after convergence (benchmarks)\n"
               "  --seed S             seed of the k-means++ initialisation (default 1)\n"
               "  --reproducible       the same model, bit for bit, on any number of workers:\n"
               "                       exact sums (RALLY_SUM_EXACT) and k-means++ drawn by\n"
               "                       each row's own random number (docs/determinism.md)\n"
               "  --init-in FILE       start from these centroids (CSV: k lines of d numbers)\n"
               "                       instead of k-means++\n"
               "  --init-out FILE      write the initial centroids (CSV, %%.17g) there\n"
               "  --model-out FILE     save the final model (binary; README.md describes it)\n"
               "  --json               print the final model as JSON before the result line\n"
               "  --show MODEL         print a saved model as JSON and exit (no job)\n"
               "  --pause-ms MS        sleep MS ms per iteration (demos: time to kill a worker)\n"
               "  --quiet              no per-iteration lines\n"
               "  -h, --help           this text\n"
               "      --version        rally's version\n"
               "\n"
               "rally_key=value arguments and RALLY_* variables configure rally (docs/config.md).\n"
               "The last line is 'result: model_digest=<hex> objective=<%%.17g>', where the\n"
               "objective is the sum over all rows of the squared distance to the nearest final\n"
               "centroid.  Exit status: 0 on success, 1 on a rally error, 2 on bad input.\n");
}

int km_early_flags(int argc, char **argv)
{
    return ex_early_flags(PROG, argc, argv, usage, km_model_show);
}

int km_opts_parse(int argc, char **argv, struct km_opts *o)
{
    static const struct option longopts[] = {EX_OPTS_LONG,
                                             {"clusters", required_argument, 0, 'k'},
                                             {"iters", required_argument, 0, 'i'},
                                             {"fixed-iters", no_argument, 0, 'F'},
                                             {"reproducible", no_argument, 0, 'R'},
                                             {"seed", required_argument, 0, 's'},
                                             {"init-in", required_argument, 0, 'I'},
                                             {"init-out", required_argument, 0, 'O'},
                                             {"show", required_argument, 0, 'S'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    *o = (struct km_opts){.k = 8, .iters = 100, .seed = 1};
    if (ex_opts_init(PROG, &o->ex) != 0)
        return -1;
    uint64_t v;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "k:h", longopts, NULL)) != -1) {
        int taken = ex_opts_take(PROG, &o->ex, c, optarg);
        if (taken < 0)
            return -1;
        if (taken > 0)
            continue;
        switch (c) {
        case 'k':
            if (ex_whole(PROG, "-k", optarg, 1, KM_MAX_K, &v) != 0)
                return -1;
            o->k = (uint32_t)v;
            break;
        case 'i':
            if (ex_whole(PROG, "--iters", optarg, 0, 1000000000, &o->iters) != 0)
                return -1;
            break;
        case 'F':
            o->fixed = 1;
            break;
        case 'R':
            o->reproducible = 1;
            break;
        case 's':
            if (ex_whole(PROG, "--seed", optarg, 0, UINT64_MAX, &o->seed) != 0)
                return -1;
            break;
        case 'I':
            o->init_in = optarg;
            break;
        case 'O':
            o->init_out = optarg;
            break;
        case 'S': /* --show=MODEL; "--show MODEL" is km_early_flags' */
            return km_model_show(optarg) == 0 ? 1 : -1;
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
    return 0;
}

void km_opts_free(struct km_opts *o)
{
    ex_opts_free(&o->ex);
}
