/*
 * copy.h — copies of collectives' results, which the collective layer and
 * the robust engine both make, and the fresh buffers that receive them.
 */
#ifndef RALLY_UTIL_COPY_H
#define RALLY_UTIL_COPY_H

#include <stddef.h>
#include <stdint.h>

/* Bytes the data path wrote, by copy or reduction, in this process: each
 * payload byte a collective sent or received through a link (the copy into
 * the transport: a shared-memory ring or a socket; the copy out of it),
 * each byte it reduced or copied in its own buffers, and each byte the
 * robust engine kept of a result.  Counted once a collective's run, so
 * that a test or bench_allreduce can divide it by the bytes of the call
 * (docs/architecture.md, "Bytes moved"). */
extern uint64_t rally__moved_nbytes;
static inline void rally__moved(uint64_t n)
{
    __atomic_add_fetch(&rally__moved_nbytes, n, __ATOMIC_RELAXED);
}

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
