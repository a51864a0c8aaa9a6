/*
 * cli.h — what the command-line tools share: one-line usage errors,
 * strict number parsing and --version.
 *
 * RALLY_TOOLS_VERSION comes from CMakeLists.txt (project(rally VERSION ...)),
 * the one place the version is defined.
 */
#ifndef RALLY_TOOLS_CLI_H
#define RALLY_TOOLS_CLI_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/config.h"

#ifndef RALLY_TOOLS_VERSION
#error "RALLY_TOOLS_VERSION must come from the build (CMakeLists.txt)"
#endif

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

/* When argv[1] is --version: prints "prog (rally) VERSION" on stdout and
 * returns 1 (the tool exits 0); else 0.  Only the first argument counts, so a
 * worker's own --version after rally-run's options is never taken. */
static inline int cli_version(const char *prog, int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--version") != 0)
        return 0;
    printf("%s (rally) %s\n", prog, RALLY_TOOLS_VERSION);
    return 1;
}

#endif
