/*
 * copy.h — copies of collectives' results, which the collective layer and
 * the robust engine both make, and the fresh buffers that receive them.
 */
#ifndef RALLY_UTIL_COPY_H
#define RALLY_UTIL_COPY_H

#include <stddef.h>

/* dst[0..n) = src[0..n), bypassing the caches from 4 MiB up: a result
 * copied after its collective has mostly left them. */
void rally__copy_result(void *dst, const void *src, size_t n);
/* 1 when rally__copy_result copies n bytes with streaming stores. */
int rally__copy_streams(size_t n);
/* The same with streaming stores at any size (a copy nobody reads soon). */
void rally__copy_stream(void *dst, const void *src, size_t n);

/* malloc(n), its pages mapped at once from 1 MiB up (one system call,
 * MADV_POPULATE_WRITE, where the kernel has it): for a buffer about to be
 * written whole, which would otherwise take a page fault per 4 KiB page
 * (100 MiB here: 44 ms to fault and copy, 34 ms populated).  Freed with
 * free(). */
void *rally__malloc_warm(size_t n);

#endif
