/*
 * opts.c — the flags every trainer takes (opts.h).
 */
#include <stdio.h>

#include "args.h"
#include "opts.h"

int ex_opts_init(const char *prog, struct ex_opts *o)
{
    *o = (struct ex_opts){0};
    if (rally_data_opts_new(&o->dopts) != RALLY_OK) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return -1;
    }
    return 0;
}

int ex_opts_take(const char *prog, struct ex_opts *o, int c, const char *arg)
{
    char err[512];
    uint64_t v;
    switch (c) {
    case 'd':
        o->data = arg;
        return 1;
    case 'D':
        if (rally_data_opts_parse(o->dopts, arg, err, sizeof err) != RALLY_OK) {
            fprintf(stderr, "%s: --data-opt %s: %s\n", prog, arg, err);
            return -1;
        }
        return 1;
    case 'm':
        o->model_out = arg;
        return 1;
    case 'j':
        o->json = 1;
        return 1;
    case 'p':
        if (ex_whole(prog, "--pause-ms", arg, 0, 3600000, &v) != 0)
            return -1;
        o->pause_ms = (long)v;
        return 1;
    case 'q':
        o->quiet = 1;
        return 1;
    default:
        return 0;
    }
}

void ex_opts_free(struct ex_opts *o)
{
    rally_data_opts_free(o->dopts);
    o->dopts = NULL;
}
