/*
 * exact.h — RALLY_SUM_EXACT and rally_allreduce_xsum over any engine: two
 * of its allreduces, a pre-pass of int16 MAX and a pass of int64 SUM
 * (util/xsum.h has the arithmetic).  Both are ordinary collectives to the
 * engine, so recovery, both backends, every algorithm and transport carry
 * them as they carry any other.
 */
#ifndef RALLY_API_EXACT_H
#define RALLY_API_EXACT_H

#include "api/engine.h"

/* A handle's buffers for the two passes, grown to the largest call and
 * kept (no fresh pages on a steady-state path). */
struct rally__xs_wire {
    int16_t *marks;
    size_t marks_cap; /* elements of 2 int16 */
    uint8_t *nlimbs;  /* each element's digits on the wire */
    size_t nlimbs_cap;
    int64_t *digits;
    size_t digits_cap;
};

void rally__xs_wire_free(struct rally__xs_wire *w);

/* The exact sum of count elements of dtype (RALLY_FLOAT or RALLY_DOUBLE)
 * over every rank into out: of the values at out itself when acc is NULL
 * (in place), else of acc's elements.  prepare as rally_allreduce's: called
 * at most once, before anything is read, and only when a pass is computed
 * here.  out is written only when both passes succeeded. */
int rally__xs_allreduce(struct rally__engine *en, struct rally__err *e, struct rally__xs_wire *w,
                        void *out, size_t count, int dtype, rally_xsum_t *acc,
                        rally_prepare_fn prepare, void *prepare_arg);

/* acc's element count (for the API's checks). */
size_t rally__xs_count(const rally_xsum_t *acc);

#endif
