/*
 * args.h — the examples' command-line numbers: strict parsing with one
 * message naming the program, the flag and the bounds; and --version.
 */
#ifndef RALLY_EXAMPLES_ARGS_H
#define RALLY_EXAMPLES_ARGS_H

#include <stdint.h>
#include <stdio.h>

/* A whole number in [lo, hi] (no sign, no trailing text).  0, or -1 after
 * "PROG: OPT 'S' is not a whole number in [lo, hi]" on stderr. */
int ex_whole(const char *prog, const char *opt, const char *s, uint64_t lo, uint64_t hi,
             uint64_t *out);
/* A finite number > 0.  0, or -1 after a message as above. */
int ex_positive(const char *prog, const char *opt, const char *s, double *out);
/* A number in [lo, hi].  0, or -1 after a message as above. */
int ex_real(const char *prog, const char *opt, const char *s, double lo, double hi, double *out);

/* The end of a trainer's option parsing: no operand left after getopt
 * (first = optind) and --data given.  0, or -1 after "PROG: ..." on stderr. */
int ex_args_end(const char *prog, int argc, char **argv, int first, const char *data);

/* When arg is --version: prints "PROG (rally) VERSION" on stdout (the rally
 * this program was built with, as rally-run --version says it) and returns
 * 1 (the program exits 0); else 0. */
int ex_version(const char *prog, const char *arg);

/* The flags that need no job, looked for anywhere in argv: --help or -h
 * (usage(stdout), then 0), --version (ex_version, then 0) and --show MODEL
 * (show(MODEL)'s exit status).  -1 when argv has none of them. */
int ex_early_flags(const char *prog, int argc, char **argv, void (*usage)(FILE *),
                   int (*show)(const char *path));

/* argv[1..argc) joined by single spaces, malloc'd (the caller frees): the
 * configuration string an example registers with rally_set_app.  NULL when
 * out of memory. */
char *ex_join_args(int argc, char **argv);

#endif
