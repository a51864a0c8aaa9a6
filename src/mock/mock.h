/*
 * mock.h — failure injection (librally_mock).
 *
 * rally_mock=rank,version,seq,ndeath[,phase[,group]] (repeatable) kills the
 * worker, as SIGKILL does (no atexit, no flush), when it reaches that point:
 *   rank     the worker's rank
 *   version  its checkpoint version (how many checkpoints it has taken)
 *   seq      the collective's number within that version, from 0; a
 *            rally_checkpoint or rally_finalize call counts as seq = the
 *            number of collectives before it in its version
 *   ndeath   how many times this rank died before (incarnation - 1, plus
 *            its deaths in the job's earlier attempts, rally_mock_deaths,
 *            which rally-run --auto-resume sets), so a point fires once
 *            and the restarted worker, or the resumed job, gets past it
 *   phase    where (default op):
 *              op          on entry to the collective / checkpoint call
 *              checkpoint  inside rally_checkpoint, after the new model is
 *                          stored, before the others know (seq as above)
 *              recovery    while serving another worker's recovery, with
 *                          this worker's own (version, seq)
 *              load        inside rally_load_checkpoint, before the
 *                          checkpoint arrives (version 0, seq 0)
 *              wire        as a survivor starts wiring a new epoch's links,
 *                          with the (version, seq) of the call it is in:
 *                          a death while the others wire (tests/jobs/rewire_test.sh)
 *              flip        no death: one bit of this rank's result of the
 *                          collective at (version, seq) is flipped as it
 *                          arrives, before the caller or the cache sees it
 *                          (silent corruption, for rally_verify_every)
 *              final       inside an allreduce, once the first part of this
 *                          rank's result is final and written over its
 *                          input (the ring's; other algorithms write the
 *                          result over the input only once it is whole):
 *                          the others are left with buffers part input,
 *                          part result (docs/recovery.md, "Retrying an
 *                          allreduce"); no group (a member would wait
 *                          inside a collective its peers need it in)
 *              lag         no death: a straggler.  From (version, seq) on
 *                          (every later collective, of later versions
 *                          too), in this incarnation, the worker sleeps
 *                          the milliseconds the sixth field gives before
 *                          each collective (before each of the two parts
 *                          of a broadcast of unknown size or an
 *                          allgatherv), in its own code (outside the
 *                          call: the others wait for it there), never
 *                          before a checkpoint's or rally's own
 *                          operations: rally_mock=5,0,10,0,lag,40
 *              ack         no death: a change of the workers that reaches
 *                          this worker inside the acknowledgement that
 *                          takes a waiting worker in (its requests carry
 *                          the grow), the first at or after version
 *                          `version` (seq 0): when the others learn of the
 *                          joiner is the tracker's timing, so the point
 *                          follows the grow, not the clock.  Its result is
 *                          here, so the others may have committed and
 *                          gone on, but this worker takes it for cut
 *                          short and waits for the tracker's next RESET
 *                          (rally_timeout_ms at most), as one does whose
 *                          RESET came before it read the result: it
 *                          stored the version and never committed it
 *              cut         no death: the same inside a user allreduce at
 *                          (version, seq): its whole result is final in
 *                          the caller's buffer, and this worker takes the
 *                          call for cut short and waits for the next RESET
 *                          (a worker still in a call when a host that
 *                          finished it dies: docs/recovery.md, "Results
 *                          kept in part")
 *
 * Otherwise a sixth field names a group: rally_mock=3,1,5,0,op,lost and
 * rally_mock=4,1,5,0,op,lost die together (one point per rank and group,
 * each at its own point).  An op, checkpoint or load member waits at its
 * point until every member is there; a recovery member only needs to have
 * reached its (version, seq) on entry to the call, and dies later where it
 * serves a recovery.  Then the member with the lowest rank among those
 * waiting SIGKILLs the others, then itself, so no victim is restarted, or
 * serves a recovery, before the others are dead.  Each member says it is
 * there by locking (fcntl) a file named after the group and its rank in the
 * directory rally_mock_sync names; the lock gives the killer its pid, and
 * the kernel drops it when the process dies, so files of an earlier job
 * count for nothing.  While members wait no other worker may die (its
 * recovery would need them); a member that waits longer than
 * rally_connect_timeout_ms prints "rally mock: ... gave up" and dies alone.
 * Points without a group die alone, as soon as they are reached.
 *
 * In librally (not the mock build) any rally_mock value is RALLY_ECONFIG,
 * rally_mock_sync is ignored, and rally__mock_check costs a test of n == 0.
 */
#ifndef RALLY_MOCK_MOCK_H
#define RALLY_MOCK_MOCK_H

#include <stdint.h>

#include "util/config.h"
#include "util/err.h"

enum {
    RALLY__MOCK_OP = 0,
    RALLY__MOCK_CHECKPOINT,
    RALLY__MOCK_RECOVERY,
    RALLY__MOCK_LOAD,
    RALLY__MOCK_WIRE,
    RALLY__MOCK_FLIP,
    RALLY__MOCK_FINAL,
    RALLY__MOCK_LAG,
    RALLY__MOCK_ACK,
    RALLY__MOCK_CUT
};

struct rally__mock_point {
    int rank;
    uint64_t version, seq;
    uint32_t ndeath;
    int phase;
    char group[32]; /* "" none */
    int fd;         /* this worker's rendezvous file for the point's group, or -1 */
    int flipped;    /* a flip, lag or ack point that fired (it kills nobody, so ndeath cannot tell) */
    int64_t lag_ms; /* a lag point's sleep */
};

struct rally__mock {
    struct rally__mock_point *pts;
    int n;
    char *sync;      /* the rendezvous directory (rally_mock_sync), or NULL */
    int64_t wait_ms; /* how long a member waits for its group */
    uint32_t before; /* this rank's deaths in earlier attempts (rally_mock_deaths) */
};

/* Parses cfg->mock, a ';'-separated list of points ("" is none), and takes
 * the rendezvous settings (rally_mock_sync, rally_connect_timeout_ms) and
 * the deaths before this attempt (rally_mock_deaths), which every ndeath
 * passed below is counted on from. */
int rally__mock_parse(struct rally__mock *m, const struct rally__config *cfg, struct rally__err *e);
/* Once the world size is known: a point naming a rank outside the job
 * (world ranks, 0..world-1) is RALLY_ECONFIG, since it could never fire. */
int rally__mock_check_world(const struct rally__mock *m, int world, struct rally__err *e);
/* Closes the rendezvous files (a member that never died leaves its group). */
void rally__mock_free(struct rally__mock *m);

/* At a clean finalize (version, seq: where the worker stands): prints one
 * line on stderr for each of rank's points that never fired, those for this
 * incarnation (ndeath) or a later one, naming the point and where the
 * worker went instead, so a point set wrong (a checkpoint phase's seq) is
 * not mistaken for a recovery that was tested. */
void rally__mock_unfired(const struct rally__mock *m, int rank, uint32_t ndeath, uint64_t version,
                         uint64_t seq);

/* Dies here if a point matches (with its group, if it has one); on entry to
 * a call, announces this worker to the group of a recovery point there. */
void rally__mock_check(const struct rally__mock *m, int rank, uint64_t version, uint64_t seq,
                       uint32_t ndeath, int phase);
/* The milliseconds a lag point has this worker sleep before the
 * collective at (version, seq): the first point at or before it; 0 none. */
int64_t rally__mock_lag(struct rally__mock *m, int rank, uint64_t version, uint64_t seq,
                        uint32_t ndeath);
/* 1 when a flip point matches: the caller flips one bit of the result. */
int rally__mock_flip(const struct rally__mock *m, int rank, uint64_t version, uint64_t seq,
                     uint32_t ndeath);
/* 1 when an ack point matches an acknowledgement that takes a worker in,
 * at version or after: the caller waits for the tracker's RESET instead of
 * taking its result. */
int rally__mock_ack(const struct rally__mock *m, int rank, uint64_t version, uint32_t ndeath);
/* 1 when a cut point matches the allreduce at (version, seq): the caller
 * waits for the tracker's RESET instead of returning its result. */
int rally__mock_cut(const struct rally__mock *m, int rank, uint64_t version, uint64_t seq,
                    uint32_t ndeath);

#endif
