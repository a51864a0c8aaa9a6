/*
 * server.h — the tracker, as a non-blocking component for someone else's
 * poll loop.
 *
 * A launcher (tools/rally-run.c) or a standalone tool (tools/rally-tracker.c)
 * owns the loop; the tracker only says which descriptors it wants watched
 * and what its next deadline is:
 *
 *     for (;;) {
 *         size_t n = rally__tracker_fill(t, pfd, cap);   // + the caller's own fds
 *         poll(pfd, n + mine, min(rally__ms_left(rally__tracker_deadline(t)), ...));
 *         rally__tracker_handle(t, pfd, n);              // always, also on timeout
 *         if (rally__tracker_state(t, NULL, NULL) != RALLY__TRACKER_RUNNING) ...
 *     }
 *
 * Nothing here blocks: every socket is non-blocking, output waits in a queue
 * per connection, and each connection must finish its handshake and send
 * REGISTER within handshake_timeout_ms, so a silent or slow stranger costs
 * one descriptor for a while, never the job.  The protocol is in proto.h and
 * docs/protocol.md.  Single-threaded: call everything from the loop's thread.
 *
 * Recovery (docs/protocol.md, section 4).  Until the first GO every failure
 * is the job's (ABORT to all, TRACKER_FAILED).  After it, a registered
 * worker's failure (its connection drops, its heartbeats stop, the owner
 * reports it dead with rally__tracker_rank_died, or a worker reports a broken
 * link) starts a new epoch: the failed incarnation is fenced (its connection
 * closed), TEV_RANK_FAILED tells the owner (who restarts the process), RESET
 * goes to every live worker, and once every rank has rejoined or registered
 * again the tracker sends ASSIGN, waits for READY, sends GO and reports
 * TEV_RECOVERED.  Still fatal: ERROR frames, protocol violations, a failure
 * once any rank has sent SHUTDOWN (the job was finishing), and an epoch that
 * does not come together within startup_timeout_ms.
 */
#ifndef RALLY_TRACKER_SERVER_H
#define RALLY_TRACKER_SERVER_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "net/auth.h"
#include "net/sock.h"
#include "tracker/events.h"
#include "tracker/msg.h"
#include "util/err.h"

struct rally__tracker;

struct rally__tracker_opts {
    int world;                          /* 1..RALLY__WORLD_MAX workers */
    const char *host;                   /* bind address; "" or "*": every address */
    int port;                           /* 0: the kernel picks (see rally__tracker_port) */
    const struct rally__secret *secret; /* copied */
    int64_t startup_timeout_ms;         /* all REGISTER and READY by then; <= 0: none */
    int64_t handshake_timeout_ms;       /* per connection, up to REGISTER; 0: 10000 */
    /* Both may be NULL.  Called from inside rally__tracker_handle/abort. */
    void (*print)(void *arg, int rank, const char *msg);
    void (*event)(void *arg, const struct rally__tracker_event *ev);
    void *arg;
};

enum { RALLY__TRACKER_RUNNING = 0, RALLY__TRACKER_DONE = 1, RALLY__TRACKER_FAILED = 2 };

/* Binds and listens; does not block. */
int rally__tracker_new(struct rally__tracker **out, const struct rally__tracker_opts *o,
                       struct rally__err *e);
/* Closes every connection (nothing more is sent) and frees t (NULL is accepted). */
void rally__tracker_free(struct rally__tracker *t);

int rally__tracker_port(const struct rally__tracker *t);

/* How many pollfd slots rally__tracker_fill may need right now. */
size_t rally__tracker_npoll(const struct rally__tracker *t);
/* Writes up to cap entries to p and returns how many it wrote. */
size_t rally__tracker_fill(struct rally__tracker *t, struct pollfd *p, size_t cap);
/* Handles the revents of exactly the slice fill wrote (p, n), and every
 * deadline that has passed.  Call it after every poll, also on timeout. */
void rally__tracker_handle(struct rally__tracker *t, const struct pollfd *p, size_t n);
/* The earliest moment handle must run even without I/O (RALLY__NEVER: none). */
int64_t rally__tracker_deadline(const struct rally__tracker *t);

/* RALLY__TRACKER_RUNNING, _DONE or _FAILED.  When failed, *sentence (may be
 * NULL) gets why, and *rank (may be NULL) the rank whose connection dropped
 * without finalizing when that was the cause, else -1. */
int rally__tracker_state(const struct rally__tracker *t, const char **sentence, int *rank);
/* When the job failed on a worker's own report (rally_abort, or a failure
 * it could not recover from): the worker's words ("" otherwise), which its
 * stderr repeats, and its rank in *rank (-1: none, or no rank yet). */
const char *rally__tracker_reported(const struct rally__tracker *t, int *rank);

/* The status the job failed with (RALLY_ECONFIG: a setting or the input
 * refused, src/tracker/job.c), RALLY_OK while it has not. */
int rally__tracker_code(const struct rally__tracker *t);
/* 1 when the job failed because a worker found something lost that
 * recovery in memory cannot bring back (a result, local models or records
 * every holder of which died; its ERROR said RALLY__ELOST): a snapshot can
 * mend it (rally-run --auto-resume).  The job's code is RALLY_EPEER. */
int rally__tracker_lost(const struct rally__tracker *t);

/* Fails the job (if it still runs): queues ABORT(code, sentence) to every
 * connected worker.  The frames leave on the next polls. */
void rally__tracker_abort(struct rally__tracker *t, int code, const char *fmt, ...)
    RALLY__PRINTF(3, 4);

/* 1 when no output waits in any queue (e.g. the last BYE or ABORT left). */
int rally__tracker_flushed(const struct rally__tracker *t);

/* Recovery is on by default; off, any failure of a registered worker fails
 * the job at once (as before the first GO).  Call before the first GO. */
void rally__tracker_set_recovery(struct rally__tracker *t, int on);
/* A worker whose connection has carried a HEARTBEAT and then stays silent
 * (no frame at all) for timeout_ms has failed.  0 (the default): off. */
void rally__tracker_set_heartbeat_timeout(struct rally__tracker *t, int64_t timeout_ms);
/* The progress watch: a rank the others have waited for timeout_ms in an
 * operation it has not called (or that has not come back to a recovery
 * round for that long) while its heartbeats say it stands still is named
 * in a sentence ("ranks 0, 1, 3 wait in allreduce #12 of version 5; rank 2
 * has not called it for 60 s"), then fenced like a silent rank (fail = 0:
 * TEV_RANK_FAILED, the owner kills and restarts it) or the job fails with
 * the sentence (fail = 1).  0 (the default): off. */
void rally__tracker_set_progress_timeout(struct rally__tracker *t, int64_t timeout_ms, int fail);
/* The owner will not restart rank's process again: that rank stuck fails
 * the job with the sentence, as fail = 1 does, instead of being fenced. */
void rally__tracker_no_restart(struct rally__tracker *t, int rank);

/* The owner reports that rank's process died (cause: "killed by signal 9").
 * If its connection is still open it is fenced and the failure handled as
 * above (a new epoch, or the job's failure when recovery does not apply);
 * when the tracker already knew, nothing happens. */
void rally__tracker_rank_died(struct rally__tracker *t, int rank, const char *cause);

/* The owner gives rank up for good (cause: "its restarts are spent"): with
 * a minimum set the job goes on without it (TEV_RESIZED), else it fails. */
void rally__tracker_rank_gone(struct rally__tracker *t, int rank, const char *cause);
/* Elastic membership: see rally__job_set_min_world and _set_max_world (a
 * worker with a new task id is taken in at a checkpoint, up to max_world;
 * RALLY_ENOMEM).  Call before the first GO. */
void rally__tracker_set_min_world(struct rally__tracker *t, int min_world);
int rally__tracker_set_max_world(struct rally__tracker *t, int max_world);
/* The number of ranks now, and the rank of the worker with task_id (-1: none). */
int rally__tracker_world(const struct rally__tracker *t);
int rally__tracker_rank_of(const struct rally__tracker *t, const char *task_id);
const char *rally__tracker_task_of(const struct rally__tracker *t, int rank); /* "": none */

/* 1 when a rank failing now would be recovered: the job runs, the first GO
 * went out, recovery is on and no rank has sent SHUTDOWN. */
int rally__tracker_recoverable(const struct rally__tracker *t);

/* The current epoch: 1 until the first failure after GO, then +1 per failure. */
uint32_t rally__tracker_epoch(const struct rally__tracker *t);

/* For observers (a status page): what the tracker knows of rank (0 .. world
 * - 1) into *out (zeroed first); RALLY_EINVAL for a rank out of range. */
int rally__tracker_rank_info(const struct rally__tracker *t, int rank,
                             struct rally__tracker_rank *out);
/* The job's phase: RALLY__TPHASE_* (events.h). */
int rally__tracker_phase(const struct rally__tracker *t);

#endif
