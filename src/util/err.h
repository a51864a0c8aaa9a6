/*
 * err.h — the error record every layer writes into.
 *
 * A struct rally__err lives on a handle (or a tracker, or a test); a failing
 * function fills it with rally__fail() and returns the code, in one line:
 *
 *     return rally__fail(e, RALLY_EPROTO, "rank %d speaks protocol %u", peer, v);
 *
 * The first failure wins: later rally__fail() calls on a set record keep the
 * original message (the root cause) unless rally__err_clear() ran first.
 */
#ifndef RALLY_UTIL_ERR_H
#define RALLY_UTIL_ERR_H

#include <stddef.h>

#include "rally/rally.h"

#define RALLY__ERR_MSG_MAX 512

struct rally__err {
    int code;
    char msg[RALLY__ERR_MSG_MAX];
};

#if defined(__GNUC__)
#define RALLY__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define RALLY__PRINTF(a, b)
#endif

/* Records code and the formatted sentence unless e already holds an error;
 * returns code (e may be NULL). */
int rally__fail(struct rally__err *e, int code, const char *fmt, ...) RALLY__PRINTF(3, 4);
/* As rally__fail, appending ": strerror(errnum)". */
int rally__fail_errno(struct rally__err *e, int code, int errnum, const char *fmt, ...)
    RALLY__PRINTF(4, 5);
/* Overwrites whatever e holds. */
int rally__fail_over(struct rally__err *e, int code, const char *fmt, ...) RALLY__PRINTF(3, 4);
void rally__err_clear(struct rally__err *e);

#endif
