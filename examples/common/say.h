/*
 * say.h — the examples' progress lines: a monotonic clock in seconds, and
 * one line on standard output flushed at once (rally-run prefixes it).
 */
#ifndef RALLY_EXAMPLES_SAY_H
#define RALLY_EXAMPLES_SAY_H

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static inline double ex_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void ex_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static inline void ex_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

#endif
