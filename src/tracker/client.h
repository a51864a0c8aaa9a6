/*
 * client.h — a worker's side of the tracker protocol (proto.h).
 *
 * One persistent, authenticated connection per worker.  Besides start-up it
 * is the worker's alarm line: when the job fails the tracker sends ABORT on
 * it, and when a rank fails it sends RESET (a new epoch, proto.h), so
 * collectives poll its descriptor next to their data links and stop instead
 * of waiting for a peer that will never answer.
 *
 * Threads: every read happens on the caller's thread (one at a time); the
 * heartbeat thread only sends.  Every frame send takes t->send_mu, so the
 * two never interleave bytes.  A send that times out part-way through a
 * frame shuts the socket down (the stream could not be parsed any more):
 * the next read sees RALLY_EPEER and the tracker sees the worker fail.
 */
#ifndef RALLY_TRACKER_CLIENT_H
#define RALLY_TRACKER_CLIENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "net/auth.h"
#include "net/frame.h"
#include "net/sock.h"
#include "tracker/msg.h"
#include "util/err.h"

struct rally__tclient {
    int fd; /* -1 when closed */
    char what[RALLY__HOST_MAX + 16]; /* "tracker 127.0.0.1:9000", for messages */
    struct rally__secret secret;
    int rank, world;
    uint32_t incarnation;
    struct rally__peer_addr *peers; /* world entries, indexed by rank */
    struct rally__frame_in in;      /* every read goes through it (check never blocks) */
    /* recovery */
    uint32_t epoch;         /* of the last ASSIGN: 0 for the job's first, else the epoch */
    uint32_t reset_epoch;   /* the newest RESET seen, 0: none */
    uint32_t members;       /* the job's membership changes so far (ASSIGN) */
    uint32_t assign_flags;  /* ... and the flags that came with it (RALLY__ASSIGN_*) */
    int resized;            /* a rejoin renumbered this worker: the owner clears it */
    int grow_asked;         /* the tracker said a worker waits to join: the owner clears it */
    char reset_reason[256]; /* its reason */
    int reset_held;         /* a RESET read while waiting for INPUT_OK: check() returns it */
    uint64_t rejoin_position; /* what REJOIN says while rally__tclient_rejoin waits */
    uint32_t rejoin_version;
    /* sending: the heartbeat thread and the caller share the socket */
    pthread_mutex_t send_mu;
    int send_mu_ok;          /* send_mu is initialised */
    pthread_t hb_thread;
    int hb_running;          /* hb_thread exists and must be joined */
    int hb_stop[2];          /* a pipe: a byte on it stops the thread */
    int64_t hb_interval_ms;
    /* where the worker stands, for the heartbeat (rally__tclient_position):
     * a sequence lock, odd while the caller writes */
    struct {
        atomic_uint seq;
        _Atomic uint64_t position;
        atomic_int waiting;
        _Atomic int64_t since_ms;
        _Atomic(const char *) what;
        _Atomic uint64_t calls, nbytes; /* rally__tclient_counters */
        _Atomic uint32_t win;
        _Atomic uint64_t win_wait_ms, win_span_ms;
    } pos;
};

struct rally__tclient_opts {
    const char *tracker;     /* host:port or [v6]:port */
    const char *secret_file; /* see net/auth.h */
    const char *task_id;     /* "" when the launcher gave none */
    int listen_port;         /* this worker's peer-link port */
    const char *processor_name;
    int64_t connect_timeout_ms;
    /* how long to wait for ASSIGN once registered (0: connect_timeout_ms); a
     * restarted worker waits for survivors that may be busy computing, and
     * the tracker bounds the start-up itself */
    int64_t assign_timeout_ms;
    /* rally__sock_link_timeout for the connection (0: kernel defaults): a
     * tracker line that stops moving data is found as a peer link is */
    int64_t link_timeout_ms;
    /* Peer links.  listen_fd NULL: the worker listens already, on
     * listen_port, and the tracker takes the address it sees.  Else join
     * listens itself once it reached the tracker, on the address
     * rally__sock_choose_addr picks for interface (rally_interface; NULL or
     * "": the local end of the tracker connection), registers that address
     * and the port, and puts the listening descriptor in *listen_fd (the
     * caller closes it; -1 on failure). */
    const char *interface;
    int *listen_fd;
    const char *domain; /* the worker's rack or zone for the address book; NULL or "": none */
};

/* Connects, authenticates, registers and waits for ASSIGN (until every
 * worker has registered, bounded by connect_timeout_ms).  On success t holds
 * rank, world, incarnation, epoch and the address book.  A restarted worker
 * joins the same way (same task id: same rank, next incarnation); its ASSIGN
 * comes once the tracker has assembled the whole epoch, and carries a
 * non-zero epoch.  A RESET before ASSIGN is ignored (the tracker counts this
 * worker in its newest epoch anyway).  Blocks; ABORT is its code. */
int rally__tclient_join(struct rally__tclient *t, const struct rally__tclient_opts *o,
                        struct rally__err *e);

/* A worker whose start failed for good (a setting refused: an unknown
 * RALLY_* variable, rally_mock without librally_mock) tells the tracker so
 * the job fails once with msg: connects and REGISTERs as join does (no peer
 * port), sends ERROR(code, msg) and waits for the tracker's ABORT, at most
 * min(connect_timeout_ms, 5 s) in all.  Best effort, never an error. */
void rally__tclient_fail_start(const struct rally__tclient_opts *o, int code, const char *msg);

/* Sends READY and waits for GO (or ABORT) until deadline.  A RESET while
 * waiting returns RALLY__ERESET (t->reset_epoch/reason record it): the
 * epoch is over before it started; call rally__tclient_rejoin. */
int rally__tclient_ready(struct rally__tclient *t, int64_t deadline, struct rally__err *e);

/* After a RESET: sends REJOIN{t->reset_epoch, position, version} and waits
 * for ASSIGN of that epoch, sending REJOIN again whenever a newer RESET
 * arrives meanwhile.  On success the address book, the incarnations and
 * t->epoch are the new epoch's.  t->rank and t->world stay, unless the
 * ASSIGN counts another membership (an elastic job went on with other
 * workers): then they are the new ones and t->resized is set.  Another rank
 * or world with the same count is RALLY_EPROTO.  ABORT returns its code; the deadline RALLY_ETIMEDOUT;
 * no RESET seen yet RALLY_ESTATE.  Blocks until then. */
int rally__tclient_rejoin(struct rally__tclient *t, uint64_t position, uint32_t version,
                          int64_t deadline, struct rally__err *e);

/* GROW_READY{t->epoch}: the job committed a checkpoint that asks to take
 * the waiting workers in; the tracker answers with a RESET.  Bounded (1 s);
 * the error is e's. */
int rally__tclient_grow_ready(struct rally__tclient *t, struct rally__err *e);

/* IN_STEP{t->epoch}: every worker is back at one position after this
 * epoch's recovery (the tracker's RECOVERED waits for every rank's).  Best
 * effort, bounded (1 s), never an error. */
void rally__tclient_in_step(struct rally__tclient *t);

/* Tells the tracker that a peer link broke or stalled in epoch t->epoch
 * (LINK_FAILED); it answers with a RESET unless it is past that epoch.  Best
 * effort, bounded (1 s), never an error. */
void rally__tclient_link_failed(struct rally__tclient *t, const char *sentence);

/* Starts a thread that sends HEARTBEAT every interval_ms (> 0) until
 * rally__tclient_heartbeat_stop or _close.  It never waits for the socket:
 * a beat the socket cannot take at once is skipped, and it skips its turn
 * while the caller is sending.  Calling it twice is harmless. */
int rally__tclient_heartbeat_start(struct rally__tclient *t, int64_t interval_ms,
                                   struct rally__err *e);
/* Where this worker stands from now on, for the heartbeats to carry
 * (proto.h): waiting 1 inside the operation at position (what: its kind, a
 * string that lives for the whole process), 0 in its own code before it.
 * Cheap (a clock read and a few stores); any thread, one at a time.
 * Returns the time it stamped (rally__now_ms_coarse), for the caller's
 * own accounting. */
int64_t rally__tclient_position(struct rally__tclient *t, uint64_t position, int waiting,
                                const char *what);

/* The public collectives this worker has completed so far and the bytes
 * of their buffers, and the straggler window (the newest win calls: the ms
 * waited inside them, the ms they spanned), for the heartbeats to carry
 * from now on (observers show them).  Cheap; any thread, one at a time
 * (with _position too). */
void rally__tclient_counters(struct rally__tclient *t, uint64_t calls, uint64_t nbytes,
                             uint32_t win, uint64_t win_wait_ms, uint64_t win_span_ms);

/* Stops the heartbeat thread and joins it (no-op when none runs). */
void rally__tclient_heartbeat_stop(struct rally__tclient *t);

int rally__tclient_print(struct rally__tclient *t, const char *msg, struct rally__err *e);

/* Tells the tracker the input this incarnation read (INPUT: scheme, 1 to 64
 * bytes, and fingerprint), so a replacement that read another fails the job,
 * and waits for its answer: INPUT_OK, or the ABORT (its code).  A RESET
 * meanwhile is recorded and held: the next rally__tclient_check returns it.
 * Blocks (10 s at most). */
int rally__tclient_input(struct rally__tclient *t, const char *scheme, uint64_t fingerprint,
                         struct rally__err *e);

/* REPORT (proto.h), for observers only: what m says (a VALUE's key checked
 * by the caller).  Never blocks on the network: the frame goes out at once
 * when the socket takes it whole (waiting only for the heartbeat's send,
 * if one is under way), and is dropped, silently, when the socket is full
 * (the tracker reads all the time, so it is stalled) or closed.  Never an
 * error. */
void rally__tclient_send_report(struct rally__tclient *t, const struct rally__msg_report *m);

/* Tells the tracker this worker failed with (code, sentence); best effort. */
void rally__tclient_report(struct rally__tclient *t, int code, const char *msg);

/* Call when t->fd is readable (or t->reset_held): reads what arrived, never
 * blocks.  An ABORT
 * fills e with the tracker's sentence and returns its code; a RESET records
 * t->reset_epoch/reason, fills e with "the tracker ordered recovery (epoch
 * N): reason" and returns RALLY__ERESET; EOF from the tracker is RALLY_EPEER;
 * nothing decisive yet returns RALLY_OK. */
int rally__tclient_check(struct rally__tclient *t, struct rally__err *e);

/* Sends SHUTDOWN and waits for BYE until deadline.  A RESET meanwhile is
 * skipped: once a rank has finalized the tracker answers a failure with
 * ABORT, which is what this returns then. */
int rally__tclient_shutdown(struct rally__tclient *t, int64_t deadline, struct rally__err *e);

/* Stops the heartbeat thread, closes the connection and frees the address
 * book (t may be zeroed, or hold fd -1). */
void rally__tclient_close(struct rally__tclient *t);

#endif
