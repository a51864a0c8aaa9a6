/*
 * shm.c — the shared-memory link to a peer on the same host: one
 * single-producer, single-consumer byte ring per direction in a memfd both
 * processes map (its row of the mesh's transport table, and the set-up that
 * hands the segment over, are in shm_setup.c; shm.h between them).
 *
 * The rings.  Each ring has a head (bytes written, the producer's) and a
 * tail (bytes read, the consumer's), 64-bit counters that never wrap, on
 * cache lines of their own; the producer publishes bytes by a release store
 * of the head, the consumer frees room by a release store of the tail, and
 * each reads the other's counter with an acquire load.  Moving bytes makes
 * no system call.
 *
 * Waking.  Each end has a doorbell, an eventfd its peer writes.  An end
 * that is about to block (arm) raises a flag in the ring it waits on —
 * reader_waits for bytes, writer_waits for room — then looks at the ring
 * once more; the peer, after moving the counter, looks at the flag and
 * rings the doorbell only if it was raised (and clears it).  A full fence
 * on both sides between the store and the load means one of them always
 * sees the other, so no wake-up is lost, and in the steady state, where
 * nobody sleeps, nobody rings.
 *
 * Liveness.  The authenticated TCP connection the link began as stays open
 * and carries nothing more: its hang-up (the peer closed the link, exited
 * or was killed) is the peer's death.  The wait watches it beside the
 * doorbell; once it fires, the link fails with RALLY_EPEER naming the peer
 * when it next needs the peer (a receive with the ring empty, any send), as
 * a TCP link would.  Nothing ever spins on a flag without a deadline: the
 * waits are rally__link_wait's.
 *
 * Set-up, over the connection the link began as: shm_setup.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "net/transports/shm.h"
#include "net/sock.h"
#include "net/transport.h"
#include "util/clock.h"
#include "util/wire.h"

#define SEG_MAGIC 0x72534d31u /* "rSM1" */
#define CTL_NBYTES 4096       /* the header page: the segment's header, then the ring controls */

/* One direction's counters: the producer's line and the consumer's. */
struct ctl {
    _Alignas(64) _Atomic uint64_t head; /* bytes written */
    _Atomic uint32_t writer_waits;      /* the producer sleeps until there is room */
    _Alignas(64) _Atomic uint64_t tail; /* bytes read */
    _Atomic uint32_t reader_waits;      /* the consumer sleeps until there are bytes */
};

struct seg {
    uint32_t magic, version;
    uint64_t ring_nbytes;
    _Alignas(64) struct ctl ring[2]; /* [0]: connector -> acceptor, [1]: back */
};

_Static_assert(sizeof(struct seg) <= CTL_NBYTES, "the segment header fits its page");
_Static_assert(ATOMIC_LONG_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2 &&
                   ATOMIC_INT_LOCK_FREE == 2,
               "the counters and flags are lock-free, as atomics shared between processes must be");

/* --- the rings ---------------------------------------------------------------- */

static void ring_bell(int fd)
{
    uint64_t one = 1;
    ssize_t k;
    do
        k = write(fd, &one, sizeof one);
    while (k < 0 && errno == EINTR);
    /* EAGAIN would mean the count is about to overflow: a wake-up is pending anyway */
}

/* Raised flag -> cleared, and the peer woken. */
static void wake(_Atomic uint32_t *flag, int bell)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(flag, memory_order_relaxed) != 0 &&
        atomic_exchange_explicit(flag, 0, memory_order_relaxed) != 0)
        ring_bell(bell);
}

static void put(struct shm *s, uint64_t at, const void *src, size_t n)
{
    if (n == 0) /* src may be NULL */
        return;
    size_t pos = (size_t)(at & (s->cap - 1)), first = s->cap - pos;
    if (first > n)
        first = n;
    memcpy(s->out.data + pos, src, first);
    memcpy(s->out.data, (const unsigned char *)src + first, n - first);
}

static void get(struct shm *s, uint64_t at, void *dst, size_t n)
{
    if (n == 0) /* dst may be NULL */
        return;
    size_t pos = (size_t)(at & (s->cap - 1)), first = s->cap - pos;
    if (first > n)
        first = n;
    memcpy(dst, s->in.data + pos, first);
    memcpy((unsigned char *)dst + first, s->in.data, n - first);
}

static long failed(struct rally__link *l, struct rally__err *e)
{
    struct shm *s = l->t.p;
    rally__fail(e, s->dead, "%s %s", l->what, s->why);
    return -1;
}

/* The peer's counter is impossible: never copy by it. */
static long corrupt(struct rally__link *l, struct rally__err *e)
{
    struct shm *s = l->t.p;
    s->dead = RALLY_EPROTO;
    snprintf(s->why, sizeof s->why, "left its shared-memory ring in an impossible state");
    return failed(l, e);
}

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

static long shm_send(struct rally__link *l, const void *a, size_t an, const void *b, size_t bn,
                     struct rally__err *e)
{
    struct shm *s = l->t.p;
    if (s->dead)
        return failed(l, e);
    uint64_t head = s->out.mine;
    uint64_t tail = atomic_load_explicit(&s->out.c->tail, memory_order_acquire);
    if (head - tail > s->cap)
        return corrupt(l, e);
    size_t room = s->cap - (size_t)(head - tail);
    if (room == 0 || an + bn == 0)
        return 0;
    size_t na = min_size(an, room), nb = min_size(bn, room - na);
    put(s, head, a, na);
    put(s, head + na, b, nb);
    s->out.mine = head + na + nb;
    atomic_store_explicit(&s->out.c->head, s->out.mine, memory_order_release);
    wake(&s->out.c->reader_waits, s->peer_bell);
    return (long)(na + nb);
}

/* Hands n bytes read from the ring back to the writer. */
static void shm_consume(struct rally__link *l, size_t n)
{
    struct shm *s = l->t.p;
    s->in.mine += n;
    atomic_store_explicit(&s->in.c->tail, s->in.mine, memory_order_release);
    wake(&s->in.c->writer_waits, s->peer_bell);
}

static long shm_recv(struct rally__link *l, void *a, size_t an, void *b, size_t bn,
                     struct rally__err *e)
{
    struct shm *s = l->t.p;
    uint64_t tail = s->in.mine;
    uint64_t head = atomic_load_explicit(&s->in.c->head, memory_order_acquire);
    if (head - tail > s->cap)
        return corrupt(l, e);
    size_t avail = (size_t)(head - tail);
    if (an + bn == 0)
        return 0;
    if (avail == 0)
        return s->dead ? failed(l, e) : 0; /* what the peer sent before it went is read first */
    size_t na = min_size(an, avail), nb = min_size(bn, avail - na);
    get(s, tail, a, na);
    get(s, tail + na, b, nb);
    shm_consume(l, na + nb);
    return (long)(na + nb);
}

static size_t shm_readable(const struct rally__link *l)
{
    const struct shm *s = l->t.p;
    uint64_t head = atomic_load_explicit(&s->in.c->head, memory_order_acquire);
    return head - s->in.mine > s->cap ? 0 : (size_t)(head - s->in.mine);
}

/* The received bytes up to the ring's end: the rest, after the wrap, in
 * the next look.  An impossible counter shows none: the recv says so. */
static size_t shm_peek(struct rally__link *l, const unsigned char **at)
{
    const struct shm *s = l->t.p;
    size_t n = shm_readable(l), pos = (size_t)(s->in.mine & (s->cap - 1));
    *at = s->in.data + pos;
    return min_size(n, s->cap - pos);
}

static int shm_ready(const struct rally__link *l, int want)
{
    const struct shm *s = l->t.p;
    if (s->dead)
        return 1;
    if ((want & RALLY__WANT_IN) &&
        atomic_load_explicit(&s->in.c->head, memory_order_acquire) != s->in.mine)
        return 1;
    return (want & RALLY__WANT_OUT) &&
           s->out.mine - atomic_load_explicit(&s->out.c->tail, memory_order_acquire) < s->cap;
}

static int shm_arm(struct rally__link *l, int want)
{
    struct shm *s = l->t.p;
    if (want & RALLY__WANT_IN)
        atomic_store_explicit(&s->in.c->reader_waits, 1, memory_order_relaxed);
    if (want & RALLY__WANT_OUT)
        atomic_store_explicit(&s->out.c->writer_waits, 1, memory_order_relaxed);
    s->armed = want;
    atomic_thread_fence(memory_order_seq_cst);
    return shm_ready(l, want);
}

/* After a wait: withdraw the flags, drain the doorbell, and look at the
 * connection if it fired: the peer never writes on it again, so readable
 * means gone. */
static void shm_woken(struct rally__link *l, unsigned fired)
{
    struct shm *s = l->t.p;
    if (s->armed & RALLY__WANT_IN)
        atomic_store_explicit(&s->in.c->reader_waits, 0, memory_order_relaxed);
    if (s->armed & RALLY__WANT_OUT)
        atomic_store_explicit(&s->out.c->writer_waits, 0, memory_order_relaxed);
    s->armed = 0;
    if (fired & 1) {
        uint64_t n;
        while (read(s->bell, &n, sizeof n) < 0 && errno == EINTR)
            ;
    }
    if ((fired & 2) && !s->dead) {
        char c;
        ssize_t k = recv(s->fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            s->dead = RALLY_EPEER;
            snprintf(s->why, sizeof s->why, "closed the connection");
        } else if (k > 0) {
            s->dead = RALLY_EPROTO;
            snprintf(s->why, sizeof s->why, "sent bytes on its shared-memory link's connection");
        }
    }
}

static int shm_handles(const struct rally__link *l, int want, struct rally__handle *h)
{
    (void)want;
    const struct shm *s = l->t.p;
    h[0] = (struct rally__handle){s->bell, RALLY__WANT_IN};
    h[1] = (struct rally__handle){s->fd, RALLY__WANT_IN};
    return 2;
}

void rally__shm_free(struct shm *s)
{
    if (s == NULL)
        return;
    if (s->base != NULL)
        munmap(s->base, s->nbytes);
    if (s->bell >= 0)
        close(s->bell);
    if (s->peer_bell >= 0)
        close(s->peer_bell);
    if (s->fd >= 0)
        close(s->fd);
    free(s);
}

static void shm_close(struct rally__link *l)
{
    rally__shm_free(l->t.p);
    l->t.p = NULL;
}

/* The ops of every shm link; rally__shm_cma_ops adds peer_read (below). */
#define SHM_OPS                                                                                    \
    .name = "shm", .send = shm_send, .recv = shm_recv, .readable = shm_readable,                   \
    .peek = shm_peek, .consume = shm_consume, .handles = shm_handles, .close = shm_close,          \
    .ready = shm_ready, .arm = shm_arm, .woken = shm_woken

const struct rally__link_ops rally__shm_ops = {SHM_OPS};

/* --- reading the peer's memory ------------------------------------------------- */

/* The kernel holds the peer's memory for the length of the call, so a read
 * that started lands whole even if the peer is killed meanwhile; the next
 * one fails with ESRCH.  A short read means the peer's buffer was not
 * mapped whole: the peer broke the call. */
static long shm_peer_read(struct rally__link *l, void *dst, uint64_t from, size_t n,
                          struct rally__err *e)
{
    struct shm *s = l->t.p;
    struct iovec to = {dst, n}, at = {(void *)(uintptr_t)from, n};
    ssize_t k = process_vm_readv(s->peer_pid, &to, 1, &at, 1, 0);
    if (k == (ssize_t)n)
        return (long)n;
    if (k >= 0)
        rally__fail(e, RALLY_EPEER, "%s's buffer ended after %zd of %zu bytes", l->what, k, n);
    else if (errno == ESRCH)
        rally__fail(e, RALLY_EPEER, "%s exited (its memory is gone)", l->what);
    else
        rally__fail_errno(e, RALLY_EPEER, errno, "reading %s's buffer failed", l->what);
    return -1;
}

/* Address 0 is never mapped: the kernel checks the right to read first, so
 * EFAULT says we have it (EPERM: Yama or another user; ENOSYS: seccomp or
 * an old kernel; ESRCH: gone). */
int rally__shm_can_read(int pid)
{
    unsigned char b;
    struct iovec to = {&b, 1}, at = {NULL, 1};
    return pid > 0 && process_vm_readv(pid, &to, 1, &at, 1, 0) < 0 && errno == EFAULT;
}

const struct rally__link_ops rally__shm_cma_ops = {SHM_OPS, .peer_read = shm_peer_read};

/* --- the segment ----------------------------------------------------------------- */

struct shm *rally__shm_new(void)
{
    struct shm *s = calloc(1, sizeof *s);
    if (s != NULL)
        s->bell = s->peer_bell = s->fd = -1;
    return s;
}

/* Maps memfd mfd (checking it when check) and points s's rings at it. */
int rally__shm_map(struct shm *s, int mfd, size_t ring_nbytes, int connector, int check,
                   struct rally__err *e)
{
    struct stat st;
    if (fstat(mfd, &st) != 0)
        return rally__fail_errno(e, RALLY_ESYS, errno, "fstat of a shared-memory segment failed");
    size_t nbytes = (size_t)st.st_size;
    if (check && (nbytes < CTL_NBYTES + 2 * 4096 || (nbytes - CTL_NBYTES) % 2 != 0))
        return rally__fail(e, RALLY_EPROTO, "a shared-memory segment of %zu bytes is malformed",
                           nbytes);
    void *p = mmap(NULL, nbytes, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (p == MAP_FAILED)
        return rally__fail_errno(e, RALLY_ESYS, errno, "mapping a %zu-byte segment failed", nbytes);
    s->base = p;
    s->nbytes = nbytes;
    struct seg *g = p;
    if (!check) {
        g->magic = SEG_MAGIC;
        g->version = 1;
        g->ring_nbytes = ring_nbytes;
    } else if (g->magic != SEG_MAGIC || g->version != 1 ||
               g->ring_nbytes != (nbytes - CTL_NBYTES) / 2 ||
               (g->ring_nbytes & (g->ring_nbytes - 1)) != 0) {
        return rally__fail(e, RALLY_EPROTO, "a shared-memory segment has a bad header");
    }
    s->cap = g->ring_nbytes;
    int o = connector ? 0 : 1;
    s->out = (struct ring){&g->ring[o], s->base + CTL_NBYTES + (size_t)o * s->cap, 0};
    s->in = (struct ring){&g->ring[1 - o], s->base + CTL_NBYTES + (size_t)(1 - o) * s->cap, 0};
    return RALLY_OK;
}

/* Creates the segment and both doorbells: fds[0] the memfd, fds[1] the
 * acceptor's doorbell, fds[2] the connector's. */
int rally__shm_create(struct shm *s, size_t ring_nbytes, int fds[3], struct rally__err *e)
{
    size_t nbytes = CTL_NBYTES + 2 * ring_nbytes;
    fds[0] = memfd_create("rally-link", MFD_CLOEXEC);
    if (fds[0] < 0)
        return rally__fail_errno(e, RALLY_ESYS, errno, "memfd_create failed");
    if (ftruncate(fds[0], (off_t)nbytes) != 0)
        return rally__fail_errno(e, RALLY_ESYS, errno, "sizing a %zu-byte segment failed", nbytes);
    fds[1] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    fds[2] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fds[1] < 0 || fds[2] < 0)
        return rally__fail_errno(e, RALLY_ESYS, errno, "eventfd failed");
    return rally__shm_map(s, fds[0], ring_nbytes, 1, 0, e);
}

static void link_of(struct rally__link *l, struct shm *s, int peer)
{
    l->ops = &rally__shm_ops;
    l->peer = peer;
    l->spin_alone = 0;
    snprintf(l->what, sizeof l->what, "rank %d", peer);
    l->t.p = s;
}

int rally__shm_pair(struct rally__link *a, int peer_a, struct rally__link *b, int peer_b,
                    size_t ring_nbytes, struct rally__err *e)
{
    int fds[3] = {-1, -1, -1}, sv[2] = {-1, -1};
    struct shm *sa = rally__shm_new(), *sb = rally__shm_new();
    int rc = RALLY_OK;
    if (sa == NULL || sb == NULL) {
        rc = rally__fail(e, RALLY_ENOMEM, "out of memory for a link");
        goto done;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        rc = rally__fail_errno(e, RALLY_ESYS, errno, "socketpair failed");
        goto done;
    }
    if ((rc = rally__shm_create(sa, ring_nbytes, fds, e)) != RALLY_OK ||
        (rc = rally__shm_map(sb, fds[0], 0, 0, 1, e)) != RALLY_OK)
        goto done;
    sa->bell = fds[2]; /* a is the connector */
    sa->peer_bell = fds[1];
    sb->bell = fds[1];
    sb->peer_bell = dup(fds[2]);
    fds[1] = fds[2] = -1;
    sa->fd = sv[0];
    sb->fd = sv[1];
    sv[0] = sv[1] = -1;
    if (sb->peer_bell < 0) {
        rc = rally__fail_errno(e, RALLY_ESYS, errno, "dup failed");
        goto done;
    }
    link_of(a, sa, peer_a);
    link_of(b, sb, peer_b);
    sa = sb = NULL;
done:
    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (sv[0] >= 0)
        close(sv[0]);
    if (sv[1] >= 0)
        close(sv[1]);
    rally__shm_free(sa);
    rally__shm_free(sb);
    return rc;
}
