/*
 * clock.c — monotonic milliseconds and deadlines (clock.h).
 */
#include "util/clock.h"

#include <errno.h>
#include <time.h>

int64_t rally__now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t rally__now_ms(void)
{
    return rally__now_us() / 1000;
}

int64_t rally__now_ms_coarse(void)
{
#ifdef CLOCK_MONOTONIC_COARSE /* the same clock, read without the counter */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
#else
    return rally__now_ms();
#endif
}

int64_t rally__deadline(int64_t timeout_ms)
{
    return timeout_ms <= 0 ? RALLY__NEVER : rally__now_ms() + timeout_ms;
}

int64_t rally__deadline_coarse(int64_t timeout_ms)
{
    return timeout_ms <= 0 ? RALLY__NEVER : rally__now_ms_coarse() + timeout_ms;
}

int rally__ms_left(int64_t deadline)
{
    if (deadline == RALLY__NEVER)
        return -1;
    int64_t left = deadline - rally__now_ms();
    if (left <= 0)
        return 0;
    return left > 1000000000 ? 1000000000 : (int)left;
}

void rally__sleep_ms(int64_t ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}
