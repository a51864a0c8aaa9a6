/*
 * proto.h — frame types and bodies between workers and the tracker.
 *
 * Every connection starts with the handshake of net/auth.h (the worker
 * connects with role RALLY__ROLE_WORKER); then both sides exchange frames
 * (net/frame.h) over that one persistent connection.  Integers are
 * little-endian; a "str" is u32 length then bytes.  docs/protocol.md is the
 * reference, byte by byte.
 *
 *   W->T REGISTER  str task_id, i32 want_rank (-1: any), u32 world_hint (0:
 *                  unknown), u16 listen_port, str listen_host ("" = the
 *                  address the tracker sees), str processor_name
 *   T->W ASSIGN    i32 rank, u32 world, u32 incarnation, then world times:
 *                  str host, u16 port, u32 incarnation   (the address book)
 *   W->T READY     (empty) all my peer links are up
 *   T->W GO        (empty) every worker is ready: collectives may start
 *   W->T PRINT     str message (rally_tracker_print)
 *   W->T ERROR     u32 code, str sentence: this worker's collective failed
 *                  in a way the others must hear about (e.g. a mismatch)
 *   T->W ABORT     u32 code, str sentence: the job failed; every collective
 *                  in progress or to come fails with this sentence
 *   W->T INPUT     str scheme (1..64 bytes), u64 fingerprint: the input this
 *                  incarnation read (rally_set_input); a later incarnation of
 *                  the rank whose INPUT differs fails the job (ABORT), unless
 *                  rally_input_check=0 (then the worker sends none)
 *   T->W INPUT_OK  (empty) the INPUT is the rank's: the worker waits for this
 *                  (or the ABORT) before it goes on, so no survivor computes
 *                  past a replacement that read other data
 *   W->T SHUTDOWN  (empty) rally_finalize
 *   T->W BYE       (empty) shutdown recorded; the worker may exit
 *
 * Recovery (docs/recovery.md).  The job runs in epochs; the first starts
 * with the first GO.  When a rank fails (its connection drops without
 * SHUTDOWN, its heartbeats stop for rally_timeout_ms, the launcher reports it
 * dead, or a worker reports a broken link), the tracker fences the failed
 * incarnation (closes its connection, refuses it everywhere), starts epoch
 * e+1 and sends RESET to every live worker.  Each stops its collective,
 * closes its peer links and answers REJOIN; a restarted worker REGISTERs
 * (same task id: same rank, incarnation + 1).  When every rank has rejoined
 * or registered in the current epoch, every worker gets ASSIGN (new address
 * book), wires its links, sends READY, and GO restarts the job.  A failure
 * during all this simply starts the next epoch.
 *
 *   T->W RESET       u32 epoch, str reason
 *   W->T REJOIN      u32 epoch, u64 position (docs/recovery.md: where this
 *                    worker stands), u32 checkpoint version
 *   W->T HEARTBEAT   every rally_heartbeat_ms, from a library thread: empty,
 *                    or where the worker stands and its counters (msg.h)
 *   W->T LINK_FAILED u32 epoch, str sentence: a peer link broke or stalled
 *                    in that epoch; ignored when the tracker is past it
 *   ASSIGN           gains a trailing u32 epoch (0 for the first)
 *   ERROR / ABORT    stay fatal: no recovery (a divergence, lost data)
 *
 * Observers (a launcher's status page): REPORT carries what a worker tells
 * them (rally_report, a snapshot's fate); the job does nothing with it
 * but hand it to the tracker's owner (RALLY__TEV_REPORT).
 *
 * Ranks: when every worker's task_id is a distinct integer in [0, world),
 * rank = task_id (rally-run sets RALLY_TASK_ID so); otherwise workers are
 * ranked by (host, task_id, arrival).  Incarnations count registrations of a
 * rank from 1.
 */
#ifndef RALLY_TRACKER_PROTO_H
#define RALLY_TRACKER_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "util/report.h"

enum {
    RALLY__T_REGISTER = 16,
    RALLY__T_ASSIGN = 17,
    RALLY__T_READY = 18,
    RALLY__T_GO = 19,
    RALLY__T_PRINT = 20,
    RALLY__T_ERROR = 21,
    RALLY__T_ABORT = 22,
    RALLY__T_SHUTDOWN = 23,
    RALLY__T_BYE = 24,
    RALLY__T_RESET = 25,
    RALLY__T_REJOIN = 26,
    RALLY__T_HEARTBEAT = 27,
    RALLY__T_LINK_FAILED = 28,
    RALLY__T_INPUT = 29,
    RALLY__T_INPUT_OK = 30,
    RALLY__T_GROW = 31,      /* T->W (empty): a worker waits to join; take it in at a checkpoint */
    RALLY__T_GROW_READY = 32, /* W->T u32 epoch: the job committed a checkpoint asking for it */
    RALLY__T_REPORT = 33,     /* W->T u8 kind, u64 version, f64 value, u64 nbytes, str key, str
                                 text: for observers only (docs/protocol.md) */
    RALLY__T_IN_STEP = 34     /* W->T u32 epoch: every worker is back at one position after the
                                 epoch's recovery (the recovery is over) */
};

/* REPORT kinds and the key's rule: util/report.h. */

/* Positions (REJOIN, docs/recovery.md): where a worker stands.  The top two
 * bits are the phase: bootstrap collective b (before the first
 * load_checkpoint), inside load_checkpoint, op q of checkpoint version V
 * (q = 0: the checkpoint's acknowledgement; user collective s: q = s + 1),
 * inside finalize.  Keys order everything a worker does. */
#define RALLY__KEY_BOOT(b) ((uint64_t)(b))
#define RALLY__KEY_LOAD ((uint64_t)1 << 62)
#define RALLY__KEY_OP(v, q) (((uint64_t)2 << 62) | ((uint64_t)(v) << 32) | (uint64_t)(q))
#define RALLY__KEY_FINAL ((uint64_t)3 << 62)
/* And back: the phase (0 bootstrap, 1 load, 2 op, 3 finalize), V and q. */
#define RALLY__KEY_PHASE(k) ((unsigned)((k) >> 62))
#define RALLY__KEY_VERSION(k) ((uint32_t)(((k) & ((UINT64_C(1) << 62) - 1)) >> 32))
#define RALLY__KEY_Q(k) ((uint32_t)(k))

/* A position in words: "bootstrap op 2", "in load_checkpoint", "version 3,
 * checkpoint", "version 3, seq 7", "in finalize". */
void rally__position_str(uint64_t position, char *s, size_t cap);

/* An internal status (never returned to users): the tracker ordered a
 * reset; the robust layer answers it with recovery. */
#define RALLY__ERESET 100
/* An ERROR's code (never returned to users): what recovery in memory lost
 * (a result, local models or records every holder of which died), which only
 * a snapshot can mend.  The job fails with RALLY_EPEER, and the tracker notes
 * the loss for its owner (rally__tracker_lost: rally-run --auto-resume). */
#define RALLY__ELOST 101

/* Longest PRINT message carried (longer ones are cut). */
#define RALLY__PRINT_MAX 8192
/* Largest world a tracker accepts. */
#define RALLY__WORLD_MAX 65536

#endif
