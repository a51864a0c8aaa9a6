/*
 * copy.h — copies of collectives' results, which the collective layer and
 * the robust engine both make.
 */
#ifndef RALLY_UTIL_COPY_H
#define RALLY_UTIL_COPY_H

#include <stddef.h>

/* dst[0..n) = src[0..n), bypassing the caches from 4 MiB up: a result
 * copied after its collective has mostly left them. */
void rally__copy_result(void *dst, const void *src, size_t n);
/* The same with streaming stores at any size (a copy nobody reads soon). */
void rally__copy_stream(void *dst, const void *src, size_t n);

#endif
