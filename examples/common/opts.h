/*
 * opts.h — the flags every trainer takes, parsed alike: --data, --data-opt,
 * --model-out, --json, --pause-ms and --quiet.  A trainer embeds struct
 * ex_opts in its own options, lists EX_OPTS_LONG among its getopt_long
 * options, and hands each option it reads to ex_opts_take first.
 */
#ifndef RALLY_EXAMPLES_OPTS_H
#define RALLY_EXAMPLES_OPTS_H

#include <getopt.h>

#include "rally/data.h"

struct ex_opts {
    const char *data;         /* --data FILE */
    rally_data_opts_t *dopts; /* --data-opt KEY=VAL...: owned (ex_opts_free) */
    const char *model_out;    /* --model-out FILE */
    long pause_ms;            /* --pause-ms MS: a sleep per iteration (demos) */
    int json, quiet;          /* --json, --quiet */
};

/* The getopt_long rows of those flags: 'd', 'D', 'm', 'j', 'p', 'q'. */
#define EX_OPTS_LONG                                                                               \
    {"data", required_argument, 0, 'd'}, {"data-opt", required_argument, 0, 'D'},                  \
        {"model-out", required_argument, 0, 'm'}, {"json", no_argument, 0, 'j'},                   \
        {"pause-ms", required_argument, 0, 'p'}, {"quiet", no_argument, 0, 'q'}

/* The defaults, and the data reader's options: 0, or -1 after "PROG: out of
 * memory" on stderr. */
int ex_opts_init(const char *prog, struct ex_opts *o);
/* Option c (from getopt_long) with its argument: 1 when it is one of these
 * flags and was taken, 0 when it is not one of them, -1 on a bad value
 * (said on stderr, naming prog and the flag). */
int ex_opts_take(const char *prog, struct ex_opts *o, int c, const char *arg);
void ex_opts_free(struct ex_opts *o);

#endif
