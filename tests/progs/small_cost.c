/*
 * small_cost.c — what the public 8-byte allreduce does per call besides
 * waiting for its peer, counted in instructions, not timed
 * (tests/jobs/small_cost_test.sh runs it under callgrind).
 *
 *   rally-run -n N small_cost CALLS
 *
 * CALLS allreduces of two floats (8 bytes, a sum), a checkpoint after
 * every 50 as an iterative job would take one, every result checked; a
 * failure exits 1.
 */
#include <stdio.h>
#include <stdlib.h>

#include "rally/rally.h"

static int fail(rally_t *r, const char *what, int rc)
{
    fprintf(stderr, "small_cost: rank %d: %s: %s: %s\n", rally_rank(r), what,
            rally_strstatus(rc), rally_errmsg(r));
    rally_finalize(r);
    return 1;
}

int main(int argc, char **argv)
{
    rally_t *r = NULL;
    int rc = rally_init(&r, &argc, &argv);
    if (rc != RALLY_OK) {
        fprintf(stderr, "small_cost: rally_init: %s\n", rally_strstatus(rc));
        return 1;
    }
    long calls = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
    if (calls <= 0) {
        fprintf(stderr, "usage: rally-run -n N small_cost CALLS\n");
        rally_finalize(r);
        return 2;
    }
    int N = rally_world_size(r), me = rally_rank(r);
    for (long i = 0; i < calls; i++) {
        float v[2] = {(float)me, (float)(i % 7)};
        if ((rc = rally_allreduce(r, v, 2, RALLY_FLOAT, RALLY_SUM, NULL, NULL)) != RALLY_OK)
            return fail(r, "rally_allreduce", rc);
        if (v[0] != (float)(N * (N - 1) / 2) || v[1] != (float)(N * (i % 7))) {
            fprintf(stderr, "small_cost: rank %d: call %ld gave %g %g\n", me, i, v[0], v[1]);
            rally_finalize(r);
            return 1;
        }
        if (i % 50 == 49 && (rc = rally_checkpoint(r, NULL, 0, NULL, 0)) != RALLY_OK)
            return fail(r, "rally_checkpoint", rc);
    }
    rc = rally_finalize(r);
    if (rc != RALLY_OK) {
        fprintf(stderr, "small_cost: rally_finalize: %s\n", rally_strstatus(rc));
        return 1;
    }
    return 0;
}
