/*
 * options.c — rally-lda's command line: the usage text and the flags, parsed
 * into struct lda_opts.  rally_init has already taken the rally_key=value
 * arguments out of argv; --data-opt values go to the data reader's parser.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "lda.h"
#include "args.h"
#include "opts.h"

#define PROG "rally-lda"

static void usage(FILE *f)
{
    fprintf(f, "usage: rally-run -n N rally-lda [options] --data FILE [rally_key=value...]\n"
               "       rally-lda --show MODEL\n"
               "Latent Dirichlet allocation by collapsed Gibbs sampling over rally.  The model\n"
               "(topic-word counts) is the same bits at any number of workers, and across any\n"
               "change of them in an elastic job (rally-run --min-workers/--max-workers).\n"
               "\n"
               "  --data FILE          documents as LIBSVM lines 'label word:count ...' (the\n"
               "                       label is ignored, words count from 1); each worker\n"
               "                       reads its shard (the default range partition)\n"
               "  --data-opt KEY=VAL   a data reader option, repeatable (docs/data.md)\n"
               "  -K, --topics K       number of topics (default 10, at most %u)\n"
               "  --iters N            Gibbs sweeps (default 100)\n"
               "  --alpha A            document-topic prior (default 0.1)\n"
               "  --beta B             topic-word prior (default 0.01)\n"
               "  --seed S             seed of every random stream (default 1)\n"
               "  --heldout FILE       score the model on these documents at the end: the\n"
               "                       result line then gives their perplexity\n"
               "  --top-words N        words per topic in --json (default 10)\n"
               "  --model-out FILE     save the final model (binary; README.md describes it)\n"
               "  --json               print the final model as JSON before the result line\n"
               "  --show MODEL         print a saved model as JSON and exit (no job)\n"
               "  --pause-ms MS        sleep MS ms per sweep (demos: time to kill a worker)\n"
               "  --quiet              no per-sweep lines\n"
               "  -h, --help           this text\n"
               "      --version        rally's version\n"
               "\n"
               "rally_key=value arguments and RALLY_* variables configure rally (docs/config.md).\n"
               "The last line is 'result: model_digest=<hex> log_likelihood=<%%.17g>' and, with\n"
               "--heldout, ' perplexity=<%%.17g>'.  Exit status: 0 on success, 1 on a rally\n"
               "error, 2 on bad input.\n",
            LDA_MAX_TOPICS);
}

int lda_early_flags(int argc, char **argv)
{
    return ex_early_flags(PROG, argc, argv, usage, lda_model_show);
}

int lda_opts_parse(int argc, char **argv, struct lda_opts *o)
{
    static const struct option longopts[] = {EX_OPTS_LONG,
                                             {"topics", required_argument, 0, 'K'},
                                             {"iters", required_argument, 0, 'i'},
                                             {"alpha", required_argument, 0, 'a'},
                                             {"beta", required_argument, 0, 'b'},
                                             {"seed", required_argument, 0, 's'},
                                             {"heldout", required_argument, 0, 'H'},
                                             {"top-words", required_argument, 0, 'T'},
                                             {"show", required_argument, 0, 'S'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    *o = (struct lda_opts){.topics = 10, .iters = 100, .seed = 1, .alpha = 0.1, .beta = 0.01,
                           .top_words = 10};
    if (ex_opts_init(PROG, &o->ex) != 0)
        return -1;
    uint64_t v;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "K:h", longopts, NULL)) != -1) {
        int taken = ex_opts_take(PROG, &o->ex, c, optarg);
        if (taken < 0)
            return -1;
        if (taken > 0)
            continue;
        switch (c) {
        case 'K':
            if (ex_whole(PROG, "--topics", optarg, 1, LDA_MAX_TOPICS, &v) != 0)
                return -1;
            o->topics = (uint32_t)v;
            break;
        case 'i':
            if (ex_whole(PROG, "--iters", optarg, 0, 1000000000, &o->iters) != 0)
                return -1;
            break;
        case 'a':
            if (ex_positive(PROG, "--alpha", optarg, &o->alpha) != 0)
                return -1;
            break;
        case 'b':
            if (ex_positive(PROG, "--beta", optarg, &o->beta) != 0)
                return -1;
            break;
        case 's':
            if (ex_whole(PROG, "--seed", optarg, 0, UINT64_MAX, &o->seed) != 0)
                return -1;
            break;
        case 'H':
            o->heldout = optarg;
            break;
        case 'T':
            if (ex_whole(PROG, "--top-words", optarg, 0, 1000000, &v) != 0)
                return -1;
            o->top_words = (uint32_t)v;
            break;
        case 'S':
            return lda_model_show(optarg) == 0 ? 1 : -1;
        case 'h':
            usage(stdout);
            return 1;
        default:
            usage(stderr);
            return -1;
        }
    }
    return ex_args_end(PROG, argc, argv, optind, o->ex.data);
}

void lda_opts_free(struct lda_opts *o)
{
    ex_opts_free(&o->ex);
}
