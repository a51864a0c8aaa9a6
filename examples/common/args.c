/*
 * args.c — the examples' command-line numbers (args.h).
 */
#include "args.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rally/rally.h"

int ex_whole(const char *prog, const char *opt, const char *s, uint64_t lo, uint64_t hi,
             uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = s[0] == '-' ? 0 : strtoull(s, &end, 10);
    if (s[0] == '-' || s[0] == '\0' || *end != '\0' || errno != 0 || v < lo || v > hi) {
        fprintf(stderr, "%s: %s '%s' is not a whole number in [%" PRIu64 ", %" PRIu64 "]\n", prog,
                opt, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int ex_positive(const char *prog, const char *opt, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (s[0] == '\0' || *end != '\0' || errno != 0 || !(v > 0) || !isfinite(v)) {
        fprintf(stderr, "%s: %s '%s' is not a positive number\n", prog, opt, s);
        return -1;
    }
    *out = v;
    return 0;
}

int ex_real(const char *prog, const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (s[0] == '\0' || *end != '\0' || errno != 0 || !(v >= lo && v <= hi)) {
        fprintf(stderr, "%s: %s '%s' is not a number in [%g, %g]\n", prog, opt, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

char *ex_join_args(int argc, char **argv)
{
    size_t n = 1;
    for (int i = 1; i < argc; i++)
        n += strlen(argv[i]) + 1;
    char *s = malloc(n);
    if (s == NULL)
        return NULL;
    s[0] = '\0';
    for (int i = 1; i < argc; i++) {
        if (i > 1)
            strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}

int ex_args_end(const char *prog, int argc, char **argv, int first, const char *data)
{
    if (first < argc) {
        fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", prog, argv[first]);
        return -1;
    }
    if (data == NULL) {
        fprintf(stderr, "%s: --data FILE is required (see --help)\n", prog);
        return -1;
    }
    return 0;
}

int ex_version(const char *prog, const char *arg)
{
    if (strcmp(arg, "--version") != 0)
        return 0;
    printf("%s (rally) %s\n", prog, RALLY_VERSION_STRING);
    return 1;
}

int ex_early_flags(const char *prog, int argc, char **argv, void (*usage)(FILE *),
                   int (*show)(const char *path))
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (ex_version(prog, argv[i])) {
            return 0;
        } else if (strcmp(argv[i], "--show") == 0 && i + 1 < argc) {
            return show(argv[i + 1]);
        }
    return -1;
}
