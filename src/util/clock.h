/*
 * clock.h — monotonic milliseconds and deadlines.
 *
 * A deadline is an absolute rally__now_ms() value; RALLY__NEVER means none.
 * rally__ms_left() turns one into a poll() timeout.
 */
#ifndef RALLY_UTIL_CLOCK_H
#define RALLY_UTIL_CLOCK_H

#include <stdint.h>

#define RALLY__NEVER INT64_MAX

int64_t rally__now_ms(void);
int64_t rally__now_us(void);
/* rally__now_ms() as of the kernel's last tick (1-10 ms behind): a quarter
 * of the cost, for a stamp taken on every call and read in milliseconds. */
int64_t rally__now_ms_coarse(void);
/* now + timeout_ms, or RALLY__NEVER for timeout_ms <= 0. */
int64_t rally__deadline(int64_t timeout_ms);
/* The same from rally__now_ms_coarse(): up to a tick early, for a bound of
 * seconds set again on every turn of a collective's loop. */
int64_t rally__deadline_coarse(int64_t timeout_ms);
/* Milliseconds until the deadline for poll(): -1 for RALLY__NEVER, 0 when past. */
int rally__ms_left(int64_t deadline);
void rally__sleep_ms(int64_t ms);

#endif
