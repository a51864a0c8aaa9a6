/*
 * link.h — a link to one peer: an ops table plus the transport's private
 * state, and the one way to wait on a set of links.
 *
 * The collective layer moves bytes only through these ops and waits only in
 * rally__link_wait(); it never sees a descriptor.  Every op is non-blocking:
 *
 *   send   moves a[0..an) then b[0..bn) (a header and a payload in one go, so
 *          a small message leaves as one segment); returns the bytes moved
 *          (>= 0; 0: would block) or -1 with e set: RALLY_EPEER "rank 3
 *          closed the connection" when the peer went away, RALLY_ESYS else.
 *          The message names the peer by l->what.
 *   recv   the same into a[0..an) then b[0..bn).  A peer that closed is -1
 *          (RALLY_EPEER), never 0.
 *   readable  (NULL for TCP) the bytes a recv would move now, at least: a
 *          recv of no more than that moves exactly what it asks (shm.c:
 *          what the peer wrote into the ring).  A kept allreduce uses it to
 *          land whole elements straight in the caller's buffer
 *          (rally__chan_recv_whole, coll/run.h).
 *   peek   (NULL for TCP) the bytes a recv would move now that lie in one
 *          piece in the link's own memory, at *at (shm.c: the ring, up to
 *          its end), so that a reduction reads them where they are; 0 when
 *          none (a recv then says why, a failure included).
 *   consume  drops the first n of the bytes peek showed, as a recv of them
 *          would (the peer may write over them then).  Together they make a
 *          received byte cost no copy (coll/ring.c's reduce-scatter).
 *   handles  fills h[0..RALLY__LINK_HANDLES) with what to wait on for the
 *          directions want names (RALLY__WANT_IN / RALLY__WANT_OUT) after an
 *          op would block, and returns how many: TCP's socket, readable or
 *          writable; shared memory's doorbell (an eventfd the peer signals,
 *          whatever the direction) and its connection, readable on hang-up.
 *   close  releases the link's state; the link is then closed (ops NULL).
 *   peer_read  (NULL: none) copies n bytes of the peer's own memory at its
 *          address from into dst, in one system call (shm.c: the peer is a
 *          process of this user on this host, and the set-up found that
 *          the kernel lets each end read the other: process_vm_readv).
 *          Returns n, or -1 with e set: RALLY_EPEER when the peer is gone
 *          or its memory is not there whole.  coll/cma.c reads a peer's
 *          buffers with it, each byte copied once.
 *
 * A transport whose readiness lives in memory (shm.c) also has these three,
 * which rally__link_wait() calls and nothing else does (NULL for TCP):
 *
 *   ready  1 when the link could move bytes in a wanted direction, or has
 *          failed; read in memory, without a system call.  The spin phase
 *          calls it instead of polling the link's handles.
 *   arm    before blocking: asks the peer to signal the doorbell when it
 *          moves bytes (a "sleeping" flag), then returns ready().
 *   woken  after arm or a poll of the handles, with the handles that fired
 *          (bit i: h[i]): withdraws what arm asked, drains the doorbell, and
 *          on a hang-up marks the link failed for its next send or receive.
 *
 * A link is owned by one thread at a time.  To add a transport, see
 * transport.h.
 */
#ifndef RALLY_NET_LINK_H
#define RALLY_NET_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define RALLY__LINK_WHAT 24

enum { RALLY__WANT_IN = 1, RALLY__WANT_OUT = 2 };

#define RALLY__LINK_HANDLES 2 /* handles per link, at most */

/* Something a wait can block on.  Opaque above net/: only net/ reads it. */
struct rally__handle {
    int fd;   /* -1: none */
    int want; /* RALLY__WANT_* */
};

struct rally__link;

struct rally__link_ops {
    const char *name; /* the transport's, "tcp" */
    long (*send)(struct rally__link *l, const void *a, size_t an, const void *b, size_t bn,
                 struct rally__err *e);
    long (*recv)(struct rally__link *l, void *a, size_t an, void *b, size_t bn,
                 struct rally__err *e);
    size_t (*readable)(const struct rally__link *l);
    size_t (*peek)(struct rally__link *l, const unsigned char **at);
    void (*consume)(struct rally__link *l, size_t n);
    int (*handles)(const struct rally__link *l, int want, struct rally__handle *h);
    void (*close)(struct rally__link *l);
    int (*ready)(const struct rally__link *l, int want);
    int (*arm)(struct rally__link *l, int want);
    void (*woken)(struct rally__link *l, unsigned fired);
    long (*peer_read)(struct rally__link *l, void *dst, uint64_t from, size_t n,
                      struct rally__err *e);
};

struct rally__link {
    const struct rally__link_ops *ops; /* NULL: closed */
    int peer;                          /* rank */
    int spin_alone;                    /* 1: a wait may spin without yielding the core (the
                                        * transport knows the peer has a core of its own) */
    char what[RALLY__LINK_WHAT];       /* "rank 3", for messages */
    union {
        int fd;
        void *p;
    } t; /* the transport's own state: only its file reads it */
};

static inline long rally__link_send(struct rally__link *l, const void *a, size_t an, const void *b,
                                    size_t bn, struct rally__err *e)
{
    return l->ops->send(l, a, an, b, bn, e);
}

static inline long rally__link_recv(struct rally__link *l, void *a, size_t an, void *b, size_t bn,
                                    struct rally__err *e)
{
    return l->ops->recv(l, a, an, b, bn, e);
}

/* Closes l; a closed link is left alone. */
void rally__link_close(struct rally__link *l);

/* A handle on a descriptor the layer above owns (its alarm line),
 * readable when it has news; fd -1 gives rally__handle_none(). */
struct rally__handle rally__handle_fd(int fd);
struct rally__handle rally__handle_none(void);
int rally__handle_is_none(const struct rally__handle *h);

/* One link and the directions a wait is for. */
struct rally__interest {
    struct rally__link *l;
    int want; /* RALLY__WANT_*; 0: not waited on */
};

#define RALLY__WAIT_MAX 23 /* links per wait */

/* Waits until a link in w[0..n) can move bytes in a direction it wants, the
 * alarm (may be NULL or none) is readable, or the deadline (util/clock.h)
 * passes.  A link already ready ends it at once, without a clock read or a
 * system call.  Else it first polls without sleeping for up to spin_us,
 * yielding the core between polls: a reply that comes that soon needs no
 * wake-up, which on virtual machines costs tens of microseconds across
 * cores; then it blocks.  Links with a ready op are polled in memory (their
 * descriptors, which only carry wake-ups and hang-ups, and the alarm, every
 * 100 us when no link needs poll()), and armed before the wait blocks.
 * When every link waited on is spin_alone, nobody else needs the core: the
 * spin lasts spin_alone_us when that is longer (a wake-up then costs at
 * most a percent or two of the wait), reads the clock only every 64 looks,
 * and yields only on evidence that the peer is not running (link.c: long
 * without news, or soon when a yield let the peer's bytes come: it shares
 * our core, and once that happens again and again this thread moves to
 * another core); a yield sooner gives the core to whatever else wants it.
 * A spin alone's yield that another thread took the core at says the
 * machine is crowded: that wait blocks at once, and for a while (link.c,
 * CROWDED_US) every wait alone spins spin_us without yielding, then blocks.
 * Returns 1 when something is ready or a signal
 * interrupted the wait (*alarmed: whether the alarm is readable), 0 at the
 * deadline, -1 with e set when the wait itself failed.  Allocates
 * nothing. */
int rally__link_wait(const struct rally__interest *w, int n, const struct rally__handle *alarm,
                     int64_t spin_us, int64_t spin_alone_us, int64_t deadline, int *alarmed,
                     struct rally__err *e);

/* What this thread's waits cost so far: tests pin the spin's clock reads
 * and system calls by these counts. */
struct rally__wait_counts {
    uint64_t clock_reads, polls, yields;
    uint64_t moves;   /* off a core the peer shared (link.c, move_off) */
    uint64_t crowded; /* yields that handed the core to another thread */
};
extern _Thread_local struct rally__wait_counts rally__wait_counts;

#endif
