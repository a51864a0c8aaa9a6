/*
 * err.c — fills the error record: first failure wins, a message names what
 * failed and why (err.h).
 */
#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int vfail(struct rally__err *e, int code, int errnum, int over, const char *fmt, va_list ap)
{
    if (e == NULL || (e->code != RALLY_OK && !over))
        return code;
    e->code = code;
    int n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    if (errnum != 0 && n >= 0 && (size_t)n < sizeof e->msg)
        snprintf(e->msg + n, sizeof e->msg - (size_t)n, ": %s", strerror(errnum));
    return code;
}

int rally__fail(struct rally__err *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(e, code, 0, 0, fmt, ap);
    va_end(ap);
    return code;
}

int rally__fail_errno(struct rally__err *e, int code, int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(e, code, errnum, 0, fmt, ap);
    va_end(ap);
    return code;
}

int rally__fail_over(struct rally__err *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(e, code, 0, 1, fmt, ap);
    va_end(ap);
    return code;
}

void rally__err_clear(struct rally__err *e)
{
    if (e != NULL) {
        e->code = RALLY_OK;
        e->msg[0] = '\0';
    }
}
