/*
 * rally-datagen — writes a synthetic data set of Gaussian blobs
 * (rally_data_generate in include/rally/data.h; docs/data.md), or documents
 * for topic models (rally_data_generate_corpus).
 *
 *   rally-datagen --rows R --features F --centers K --spread S --seed X
 *                 --format libsvm|csv [--header] [--centers-out FILE] -o FILE
 *   rally-datagen --docs D --vocab V --topics K [--doc-words L] --seed X
 *                 [--topics-out FILE] -o FILE
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "rally/data.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: rally-datagen --rows R --features F --centers K [--spread S] [--seed X]\n"
            "                     [--format libsvm|csv] [--header] [--centers-out FILE] -o FILE\n"
            "       rally-datagen --docs D --vocab V --topics K [--doc-words L] [--seed X]\n"
            "                     [--topics-out FILE] -o FILE\n"
            "Writes R rows of Gaussian blobs around K random centres in F dimensions\n"
            "(standard deviation S, default 1) as LIBSVM (default) or CSV; the label is the\n"
            "centre's number.  Or D documents of about L words (default 100) over a\n"
            "vocabulary of V, each a mix of K random topics, as LIBSVM lines 'label\n"
            "word:count ...' (the label the heaviest topic; --topics-out the true topics,\n"
            "one CSV line of V probabilities each), for rally-lda.  The same arguments\n"
            "always give the same bytes.\n");
}

static int num(const char *opt, const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;
    if (s[0] == '-' || s[0] == '\0')
        goto bad;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0' || v > max)
        goto bad;
    *out = v;
    return 0;
bad:
    fprintf(stderr, "rally-datagen: %s '%s' is not a whole number up to %llu\n", opt, s, max);
    return -1;
}

/* --docs: a corpus for topic models.  The exit status. */
static int corpus(const char *out, unsigned long long docs, unsigned long long vocab,
                  unsigned long long topics, unsigned long long doc_words,
                  unsigned long long seed, const char *topics_out, int extra)
{
    if (extra || out == NULL || vocab == 0 || topics == 0 || doc_words == 0) {
        fprintf(stderr, "rally-datagen: --docs needs --vocab, --topics and -o (and a "
                        "--doc-words of 1 or more)\n");
        usage(stderr);
        return 2;
    }
    char err[512];
    if (rally_data_generate_corpus(out, docs, (uint32_t)vocab, (uint32_t)topics,
                                   (uint32_t)doc_words, seed, topics_out, err,
                                   sizeof err) != RALLY_OK) {
        fprintf(stderr, "rally-datagen: %s\n", err);
        return 1;
    }
    fprintf(stderr, "rally-datagen: wrote %llu documents over %llu words (%llu topics) to %s\n",
            docs, vocab, topics, out);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {{"rows", required_argument, 0, 'r'},
                                             {"features", required_argument, 0, 'f'},
                                             {"centers", required_argument, 0, 'k'},
                                             {"spread", required_argument, 0, 's'},
                                             {"seed", required_argument, 0, 'x'},
                                             {"format", required_argument, 0, 'F'},
                                             {"header", no_argument, 0, 'H'},
                                             {"centers-out", required_argument, 0, 'c'},
                                             {"docs", required_argument, 0, 'D'},
                                             {"vocab", required_argument, 0, 'V'},
                                             {"topics", required_argument, 0, 'K'},
                                             {"doc-words", required_argument, 0, 'L'},
                                             {"topics-out", required_argument, 0, 'T'},
                                             {"output", required_argument, 0, 'o'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    unsigned long long rows = 0, features = 0, centers = 0, seed = 0;
    unsigned long long docs = 0, vocab = 0, topics = 0, doc_words = 100;
    const char *topics_out = NULL;
    double spread = 1.0;
    const char *format = "libsvm", *out = NULL, *centers_out = NULL;
    int header = 0, c;
    if (cli_version("rally-datagen", argc, argv))
        return 0;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'r':
            if (num("--rows", optarg, 1ULL << 40, &rows))
                return 2;
            break;
        case 'f':
            if (num("--features", optarg, 1000000, &features))
                return 2;
            break;
        case 'k':
            if (num("--centers", optarg, 1000000, &centers))
                return 2;
            break;
        case 'x':
            if (num("--seed", optarg, ~0ULL, &seed))
                return 2;
            break;
        case 's':
            spread = strtod(optarg, &end);
            if (*end != '\0' || end == optarg || !(spread >= 0) || spread > 1e30) {
                fprintf(stderr, "rally-datagen: --spread '%s' is not a number >= 0\n", optarg);
                return 2;
            }
            break;
        case 'F':
            format = optarg;
            break;
        case 'H':
            header = 1;
            break;
        case 'c':
            centers_out = optarg;
            break;
        case 'D':
            if (num("--docs", optarg, 1ULL << 40, &docs))
                return 2;
            break;
        case 'V':
            if (num("--vocab", optarg, 1000000, &vocab))
                return 2;
            break;
        case 'K':
            if (num("--topics", optarg, 65535, &topics))
                return 2;
            break;
        case 'L':
            if (num("--doc-words", optarg, 1000000, &doc_words))
                return 2;
            break;
        case 'T':
            topics_out = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (docs > 0)
        return corpus(out, docs, vocab, topics, doc_words, seed, topics_out, optind != argc);
    if (optind != argc || out == NULL || rows == 0 || features == 0 || centers == 0) {
        fprintf(stderr, "rally-datagen: --rows, --features, --centers and -o are required\n");
        usage(stderr);
        return 2;
    }
    if (header && strcmp(format, "csv") != 0) {
        fprintf(stderr, "rally-datagen: --header applies to --format csv only\n");
        return 2;
    }
    char err[512];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = rally_data_generate(out, rows, (uint32_t)features, (uint32_t)centers, spread, seed,
                                 format, header, centers_out, err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc != RALLY_OK) {
        fprintf(stderr, "rally-datagen: %s\n", err);
        return 1;
    }
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr,
            "rally-datagen: wrote %llu rows x %llu features to %s in %.2f s (%.0f rows/s)\n", rows,
            features, out, s, s > 0 ? (double)rows / s : 0.0);
    return 0;
}
