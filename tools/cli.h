/*
 * cli.h — what the command-line tools share: one-line usage errors and
 * strict number parsing.
 */
#ifndef RALLY_TOOLS_CLI_H
#define RALLY_TOOLS_CLI_H

#include <stdarg.h>
#include <stdio.h>

#include "util/config.h"

/* "prog: <sentence>\nTry 'prog --help'." on stderr; returns 2 (a usage error). */
static inline int cli_usage_error(const char *prog, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help'.\n", prog);
    return 2;
}

#endif
