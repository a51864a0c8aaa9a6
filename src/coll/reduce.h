/*
 * reduce.h — the reducer table: inout[i] = inout[i] (+) in[i].
 *
 * Built-in kernels for every dtype x op are straight loops over unaligned
 * element pointers, compiled at -O3 so they vectorise.  Integer SUM wraps
 * (two's complement, no undefined overflow).  Float MAX/MIN propagate NaN.
 */
#ifndef RALLY_COLL_REDUCE_H
#define RALLY_COLL_REDUCE_H

#include <stddef.h>

#include "rally/rally.h"

#define RALLY__NDTYPES 10
#define RALLY__NOPS 4

struct rally__reducer {
    size_t elem_nbytes;
    int commutative;
    rally_reduce_fn fn;
    void *arg;
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

#endif
