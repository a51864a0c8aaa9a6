/*
 * rabit/internal/utils.h — rabit's checks (rabit::utils::Check, Assert,
 * Error): printf-style, and on failure the message on standard error and
 * the end of the process with status -1 (255), as rabit's were.  rally-run
 * then sees a failed worker, restarts it, and a check that fails again
 * ends the job when its restarts run out.
 */
#ifndef RABIT_INTERNAL_UTILS_H_
#define RABIT_INTERNAL_UTILS_H_

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace rabit {
namespace utils {

/* Prints prefix and the formatted message as one line, then exits. */
inline void Fail(const char *prefix, const char *fmt, va_list ap)
{
    char msg[1024];
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    std::fprintf(stderr, "%s%s\n", prefix, msg);
    std::fflush(stderr);
    std::exit(-1);
}

/* An internal invariant: "AssertError:msg" when it does not hold. */
inline void Assert(bool exp, const char *fmt, ...)
{
    if (!exp) {
        va_list ap;
        va_start(ap, fmt);
        Fail("AssertError:", fmt, ap);
        va_end(ap);
    }
}

/* A user's condition (an input, an argument): "msg" when it does not hold. */
inline void Check(bool exp, const char *fmt, ...)
{
    if (!exp) {
        va_list ap;
        va_start(ap, fmt);
        Fail("", fmt, ap);
        va_end(ap);
    }
}

/* Reports msg and exits. */
inline void Error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    Fail("", fmt, ap);
    va_end(ap);
}

} // namespace utils
} // namespace rabit
#endif
