/*
 * mock.h — failure injection (librally_mock).
 *
 * rally_mock=rank,version,seq,ndeath[,phase] (repeatable) kills the worker,
 * as SIGKILL does (no atexit, no flush), when it reaches that point:
 *   rank     the worker's rank
 *   version  its checkpoint version (how many checkpoints it has taken)
 *   seq      the collective's number within that version, from 0; a
 *            rally_checkpoint or rally_finalize call counts as seq = the
 *            number of collectives before it in its version
 *   ndeath   how many times this rank died before (incarnation - 1), so a
 *            point fires once and the restarted worker gets past it
 *   phase    where (default op):
 *              op          on entry to the collective / checkpoint call
 *              checkpoint  inside rally_checkpoint, after the new model is
 *                          stored, before the others know (seq as above)
 *              recovery    while serving another worker's recovery, with
 *                          this worker's own (version, seq)
 *              load        inside rally_load_checkpoint, before the
 *                          checkpoint arrives (version 0, seq 0)
 * In librally (not the mock build) any rally_mock value is RALLY_ECONFIG.
 */
#ifndef RALLY_MOCK_MOCK_H
#define RALLY_MOCK_MOCK_H

#include <stdint.h>

#include "util/err.h"

enum { RALLY__MOCK_OP = 0, RALLY__MOCK_CHECKPOINT, RALLY__MOCK_RECOVERY, RALLY__MOCK_LOAD };

struct rally__mock_point {
    int rank;
    uint64_t version, seq;
    uint32_t ndeath;
    int phase;
};

struct rally__mock {
    struct rally__mock_point *pts;
    int n;
};

/* Parses a ';'-separated list of points ("" is none). */
int rally__mock_parse(struct rally__mock *m, const char *spec, struct rally__err *e);
void rally__mock_free(struct rally__mock *m);

/* Dies here if a point matches. */
void rally__mock_check(const struct rally__mock *m, int rank, uint64_t version, uint64_t seq,
                       uint32_t ndeath, int phase);

#endif
