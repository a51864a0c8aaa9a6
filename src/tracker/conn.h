/*
 * conn.h — the tracker's connections: accept, the authentication handshake,
 * frames in, output queues out; it reports what happened and decides nothing.
 *
 * A struct rally__conns owns the listening socket and every accepted
 * connection.  The owner (server.c) drives it from its poll loop:
 *
 *     n = rally__conns_fill(s, pfd, cap);  poll(...);
 *     rally__conns_begin(s, pfd, n, now);
 *     while (rally__conns_next(s, &r)) ...  // one report at a time
 *
 * Reports come in stages: first what the descriptors said (frames, losses,
 * handshakes done; then, when the owner's timers are due, what arrived
 * since its poll) and connection deadlines, then one RALLY__CONN_TIMERS
 * (the moment for the owner's own timers), then the losses of the final
 * flush of every queue; new connections are accepted last.  The owner acts
 * on a report (queues frames, closes connections) before asking for the
 * next: nothing here calls back up, and a write that fails deep in a queue
 * is only ever a report.  Connections that never authenticated are handled
 * here alone (a LOG report says so); an authenticated one is reported lost
 * or bad and is closed already when the report arrives.
 *
 * What a stranger may cost (docs/security.md): until it authenticates, a
 * connection's frames are read into a fixed buffer of RALLY__CONN_HS_MAX
 * bytes (a larger frame is refused from its header, nothing is allocated),
 * and at most max_strangers such connections are kept: when one more
 * arrives, the oldest that gives way goes (a refused one lingering, else one
 * that has sent nothing, else the oldest), so a flood never keeps out a
 * worker that knows the secret.  Authenticated connections have no cap here
 * (they hold the job's secret; the job refuses what it does not need).
 */
#ifndef RALLY_TRACKER_CONN_H
#define RALLY_TRACKER_CONN_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "net/auth.h"
#include "net/frame.h"
#include "net/sock.h"
#include "util/err.h"

struct rally__conns;
struct rally__conn_chunk;

/* The largest frame read before authentication: HELLO is 56 bytes, PROOF 32. */
#define RALLY__CONN_HS_MAX 128

/* An authenticated connection, as the owner sees it. */
struct rally__conn {
    void *user;       /* the owner's, freed (free()) with the connection */
    const char *name; /* for messages: "connection from 1.2.3.4:5678"; the owner may point
                         it at a longer-lived name of its own */
    char peer[RALLY__HOST_MAX]; /* the address the connection came from */
    /* private */
    int fd, authed, closing, gone, bad_pending;
    short rev;
    int reads_left;
    int64_t deadline;
    char what[RALLY__HOST_MAX + 48];
    char why[RALLY__ERR_MSG_MAX]; /* a pending BAD report */
    struct rally__auth_srv auth;
    unsigned char hs[RALLY__FRAME_HDR + RALLY__CONN_HS_MAX]; /* a handshake frame */
    size_t hs_got;
    int hs_ready, hs_frames;
    struct rally__frame_in in; /* frames after the handshake */
    struct rally__conn_chunk *out_head, *out_tail;
    struct rally__conn *pending_next;
};

/* An address book: bytes that many queued frames share (reference counted). */
struct rally__conn_book;
struct rally__conn_book *rally__conn_book_new(const void *bytes, size_t nbytes);
void rally__conn_book_unref(struct rally__conn_book *b);

enum {
    RALLY__CONN_LOG = 1, /* text: a line for the operator (a stranger refused, dropped) */
    RALLY__CONN_AUTHED,  /* c finished the handshake */
    RALLY__CONN_FRAME,   /* c sent a frame: type, body[0..nbytes) valid until the next call */
    RALLY__CONN_LOST,    /* c's peer went away; text says how; c is closed */
    RALLY__CONN_BAD,     /* c broke the framing, missed its deadline, or a frame could not
                            be queued; text says how; c is closed */
    RALLY__CONN_TIMERS   /* the descriptors and deadlines are done: run the owner's timers */
};

struct rally__conn_report {
    int kind;
    struct rally__conn *c;
    uint16_t type;
    const unsigned char *body;
    size_t nbytes;
    const char *text;
};

struct rally__conns_opts {
    const char *host; /* bind address; "" or "*": every address */
    int port;         /* 0: the kernel picks */
    int backlog;
    size_t max_strangers;      /* unauthenticated connections kept at once (>= 1) */
    int64_t handshake_ms;      /* from accept until the owner admits the connection */
    uint16_t role;             /* the one role accepted (net/auth.h) */
    const struct rally__secret *secret; /* must outlive the set */
};

int rally__conns_new(struct rally__conns **out, const struct rally__conns_opts *o,
                     struct rally__err *e);
/* Closes every connection (nothing more is sent) and frees s (NULL is accepted). */
void rally__conns_free(struct rally__conns *s);
int rally__conns_port(const struct rally__conns *s);

size_t rally__conns_npoll(const struct rally__conns *s);
size_t rally__conns_fill(struct rally__conns *s, struct pollfd *p, size_t cap);
/* Starts the reports for the revents of the slice fill wrote.  timers_ms is
 * when the owner's next timer is due (RALLY__NEVER: none): if that moment
 * has come when the descriptors are done, every connection is looked at
 * again without waiting (a poll of timeout 0) and what arrived since the
 * owner's poll is read before RALLY__CONN_TIMERS, so a loop that was slow or
 * stopped between its poll and this call never judges a sender by frames it
 * has not read yet. */
void rally__conns_begin(struct rally__conns *s, const struct pollfd *p, size_t n, int64_t now_ms,
                        int64_t timers_ms);
/* 1 and *r: the next report; 0: none left for this round. */
int rally__conns_next(struct rally__conns *s, struct rally__conn_report *r);
/* The earliest connection deadline (RALLY__NEVER: none). */
int64_t rally__conns_deadline(const struct rally__conns *s);
/* 1 when no output waits in any queue. */
int rally__conns_flushed(const struct rally__conns *s);

/* Queues one frame to c: body (copied), then book (referenced; may be NULL),
 * then tail (copied).  Never writes: the bytes leave in the I/O stages.  Out
 * of memory closes c and reports it BAD later. */
void rally__conn_send(struct rally__conns *s, struct rally__conn *c, uint16_t type,
                      const void *body, size_t nbytes, struct rally__conn_book *book,
                      const void *tail, size_t tail_nbytes);
/* The owner took c in: its handshake deadline no longer applies. */
void rally__conn_admit(struct rally__conn *c);
/* Send what is queued (the refusal), then close; read nothing more; give up
 * after a short linger from now_ms. */
void rally__conn_linger(struct rally__conn *c, int64_t now_ms);
/* Closes c now; its memory lives until the round's end. */
void rally__conn_close(struct rally__conn *c);

#endif
