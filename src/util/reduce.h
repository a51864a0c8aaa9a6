/*
 * reduce.h — the reducer table: inout[i] = inout[i] (+) in[i], and for the
 * built-ins also out[i] = a[i] (+) b[i] (so an out-of-place allreduce costs
 * no extra pass).
 *
 * Built-in kernels for every dtype x op are straight loops over unaligned
 * element pointers, compiled at -O3 so they vectorise.  Integer SUM wraps
 * (two's complement, no undefined overflow).  Float MAX/MIN propagate NaN.
 */
#ifndef RALLY_UTIL_REDUCE_H
#define RALLY_UTIL_REDUCE_H

#include <stddef.h>
#include <string.h>

#include "rally/rally.h"

#define RALLY__NDTYPES 10
#define RALLY__NOPS 4

typedef void (*rally__reduce3_fn)(void *out, const void *a, const void *b, size_t count);

struct rally__reducer {
    size_t elem_nbytes;
    int commutative;
    rally_reduce_fn fn;
    void *arg;
    rally__reduce3_fn fn3; /* NULL for custom reducers */
};

size_t rally__dtype_size(int dtype);
const char *rally__dtype_name(int dtype);
const char *rally__op_name(int op);
/* 1 when op applies to dtype (BITOR: integers only). */
int rally__op_valid(int dtype, int op);
/* A built-in reducer (dtype and op valid). */
void rally__reducer_builtin(struct rally__reducer *rd, int dtype, int op);

static inline void rally__reduce(const struct rally__reducer *rd, void *inout, const void *in,
                                 size_t count)
{
    if (count)
        rd->fn(inout, in, count, rd->arg);
}

/* out = a (+) b; out may be a (in place). */
static inline void rally__reduce3(const struct rally__reducer *rd, void *out, const void *a,
                                  const void *b, size_t count)
{
    if (count == 0)
        return;
    if (out == a) {
        rd->fn(out, b, count, rd->arg);
    } else if (rd->fn3 != NULL) {
        rd->fn3(out, a, b, count);
    } else {
        memcpy(out, a, count * rd->elem_nbytes);
        rd->fn(out, b, count, rd->arg);
    }
}

#endif
