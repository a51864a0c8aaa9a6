/*
 * shm.c — the shared-memory link to a peer on the same host: one
 * single-producer, single-consumer byte ring per direction in a memfd both
 * processes map, and its row of the mesh's transport table (transport.h).
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
 * Set-up, over the connection (both ends block, to the mesh's deadline):
 *   the acceptor  listens on a fresh Unix socket in the abstract namespace
 *                 (a kernel-chosen name) and sends OFFER: the name and a
 *                 random 16-byte token (or a refusal);
 *   the connector creates the memfd and the two eventfds, maps the
 *                 segment, connects to the name and sends the token with
 *                 the three descriptors (SCM_RIGHTS); then REPLY: ok or not;
 *   the acceptor  takes only a connection from its own user that presents
 *                 the token, maps the segment, checks its header and
 *                 answers ACK: ok or not.  It waits on every connection
 *                 beside the others, so one that stays silent (any process
 *                 of the user can find the name) delays nobody; it is
 *                 closed after the mesh's handshake_ms.
 * A refusal anywhere leaves the connection at a message boundary, so with
 * rally_transport=auto the link simply stays TCP; with shm it fails.  No
 * name outlives the set-up (an abstract socket vanishes with its listener)
 * and the segment is anonymous: it is gone when both ends have closed or
 * died, so nothing can be orphaned, whoever is killed.
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
#include <sys/un.h>
#include <unistd.h>

#include "net/sock.h"
#include "net/transport.h"
#include "util/clock.h"
#include "util/wire.h"

#define SEG_MAGIC 0x72534d31u /* "rSM1" */
#define MSG_MAGIC 0x5253484du /* "RSHM" */
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
_Static_assert(ATOMIC_LONG_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
               "the counters and flags are lock-free, as atomics shared between processes must be");

struct ring {
    struct ctl *c;
    unsigned char *data;
    uint64_t mine; /* our own counter, as last stored: head out, tail in */
};

struct shm {
    unsigned char *base;
    size_t nbytes, cap;
    struct ring out, in;
    int bell;      /* ours: the peer rings it */
    int peer_bell; /* the peer's */
    int fd;        /* the connection: silent, watched for the hang-up */
    int armed;     /* RALLY__WANT_* flags arm raised */
    int dead;      /* 0, or the code the next op that needs the peer fails with */
    char why[64];  /* what the peer did, for the message */
};

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
    s->in.mine = tail + na + nb;
    atomic_store_explicit(&s->in.c->tail, s->in.mine, memory_order_release);
    wake(&s->in.c->writer_waits, s->peer_bell);
    return (long)(na + nb);
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

static void shm_free(struct shm *s)
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
    shm_free(l->t.p);
    l->t.p = NULL;
}

static const struct rally__link_ops shm_ops = {
    .name = "shm",
    .send = shm_send,
    .recv = shm_recv,
    .handles = shm_handles,
    .close = shm_close,
    .ready = shm_ready,
    .arm = shm_arm,
    .woken = shm_woken,
};

/* --- the segment ----------------------------------------------------------------- */

static struct shm *shm_new(void)
{
    struct shm *s = calloc(1, sizeof *s);
    if (s != NULL)
        s->bell = s->peer_bell = s->fd = -1;
    return s;
}

/* Maps memfd mfd (checking it when check) and points s's rings at it. */
static int shm_map(struct shm *s, int mfd, size_t ring_nbytes, int connector, int check,
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
static int shm_create(struct shm *s, size_t ring_nbytes, int fds[3], struct rally__err *e)
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
    return shm_map(s, fds[0], ring_nbytes, 1, 0, e);
}

static void link_of(struct rally__link *l, struct shm *s, int peer)
{
    l->ops = &shm_ops;
    l->peer = peer;
    l->spin_alone = 0;
    snprintf(l->what, sizeof l->what, "rank %d", peer);
    l->t.p = s;
}

int rally__shm_pair(struct rally__link *a, int peer_a, struct rally__link *b, int peer_b,
                    size_t ring_nbytes, struct rally__err *e)
{
    int fds[3] = {-1, -1, -1}, sv[2] = {-1, -1};
    struct shm *sa = shm_new(), *sb = shm_new();
    int rc = RALLY_OK;
    if (sa == NULL || sb == NULL) {
        rc = rally__fail(e, RALLY_ENOMEM, "out of memory for a link");
        goto done;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        rc = rally__fail_errno(e, RALLY_ESYS, errno, "socketpair failed");
        goto done;
    }
    if ((rc = shm_create(sa, ring_nbytes, fds, e)) != RALLY_OK ||
        (rc = shm_map(sb, fds[0], 0, 0, 1, e)) != RALLY_OK)
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
    shm_free(sa);
    shm_free(sb);
    return rc;
}

/* --- set-up over the connection ------------------------------------------------- */

#define MSG_NBYTES 64
#define NAME_MAX_NBYTES 40

struct offer {
    int ok;
    unsigned char token[16];
    size_t namelen;
    char name[NAME_MAX_NBYTES]; /* the abstract name, leading NUL included */
};

static void put_offer(unsigned char *m, const struct offer *o)
{
    memset(m, 0, MSG_NBYTES);
    rally__put_u32(m, MSG_MAGIC);
    m[4] = (unsigned char)o->ok;
    m[5] = (unsigned char)o->namelen;
    memcpy(m + 8, o->token, 16);
    memcpy(m + 24, o->name, o->namelen);
}

static int get_offer(const unsigned char *m, struct offer *o)
{
    if (rally__get_u32(m) != MSG_MAGIC || m[5] > NAME_MAX_NBYTES)
        return -1;
    o->ok = m[4] == 1;
    o->namelen = m[5];
    memcpy(o->token, m + 8, 16);
    memcpy(o->name, m + 24, o->namelen);
    return 0;
}

/* A short answer: ok (1) or not (0). */
static int say(int fd, int ok, int64_t deadline, const char *what, struct rally__err *e)
{
    unsigned char m[8] = {0};
    rally__put_u32(m, MSG_MAGIC);
    m[4] = (unsigned char)(ok ? 1 : 0);
    return rally__send_all(fd, m, sizeof m, deadline, what, e);
}

static int hear(int fd, int *ok, int64_t deadline, const char *what, struct rally__err *e)
{
    unsigned char m[8];
    if (rally__recv_all(fd, m, sizeof m, deadline, what, e) != RALLY_OK)
        return e->code;
    if (rally__get_u32(m) != MSG_MAGIC || m[4] > 1)
        return rally__fail(e, RALLY_EPROTO, "%s answered the shared-memory set-up with bytes that "
                                            "are not part of it (protocol error)", what);
    *ok = m[4];
    return RALLY_OK;
}

static socklen_t abstract_addr(struct sockaddr_un *a, const char *name, size_t namelen)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    memcpy(a->sun_path, name, namelen);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + namelen);
}

/* The acceptor's listener: a fresh abstract name and a token. */
static int listen_offer(int *lfd, struct offer *o, struct rally__err *e)
{
    if (getrandom(o->token, sizeof o->token, 0) != (ssize_t)sizeof o->token)
        return rally__fail_errno(e, RALLY_ESYS, errno, "getrandom failed");
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return rally__fail_errno(e, RALLY_ESYS, errno, "a Unix socket failed");
    struct sockaddr_un a;
    socklen_t n = sizeof(sa_family_t); /* autobind: the kernel picks an abstract name */
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    if (bind(fd, (struct sockaddr *)&a, n) != 0 || listen(fd, 4) != 0) {
        close(fd);
        return rally__fail_errno(e, RALLY_ESYS, errno, "listening on a Unix socket failed");
    }
    n = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &n) != 0 ||
        n <= offsetof(struct sockaddr_un, sun_path) ||
        n - offsetof(struct sockaddr_un, sun_path) > NAME_MAX_NBYTES) {
        close(fd);
        return rally__fail(e, RALLY_ESYS, "a Unix socket got no usable abstract name");
    }
    o->namelen = n - offsetof(struct sockaddr_un, sun_path);
    memcpy(o->name, a.sun_path, o->namelen);
    o->ok = 1;
    *lfd = fd;
    return RALLY_OK;
}

/* The connector: create, map, hand over the descriptors. */
static int hand_over(struct shm *s, const struct offer *o, int64_t deadline,
                     struct rally__err *e)
{
    int fds[3] = {-1, -1, -1};
    int u = -1, rc = shm_create(s, RALLY__SHM_RING_NBYTES, fds, e);
    if (rc != RALLY_OK)
        goto done;
    u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_un a;
    socklen_t an = abstract_addr(&a, o->name, o->namelen);
    int k = -1;
    /* a full backlog (strangers knocking) is EAGAIN: retry, to the deadline */
    while (u >= 0 && (k = connect(u, (struct sockaddr *)&a, an)) != 0 &&
           (errno == EAGAIN || errno == EINTR) && rally__now_ms() < deadline)
        rally__sleep_ms(1);
    if (u < 0 || k != 0) {
        rc = rally__fail_errno(e, RALLY_ESYS, errno, "connecting to the peer's Unix socket failed");
        goto done;
    }
    union {
        char buf[CMSG_SPACE(sizeof fds)];
        struct cmsghdr align;
    } c;
    memset(&c, 0, sizeof c);
    struct iovec iov = {(void *)o->token, sizeof o->token};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
                       .msg_controllen = sizeof c.buf};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(cm), fds, sizeof fds);
    /* 16 bytes into a fresh connection: this does not block */
    if (sendmsg(u, &m, MSG_NOSIGNAL) != (ssize_t)sizeof o->token) {
        rc = rally__fail_errno(e, RALLY_ESYS, errno, "passing the segment to the peer failed");
        goto done;
    }
    s->bell = fds[2];
    s->peer_bell = fds[1];
    fds[1] = fds[2] = -1;
done:
    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (u >= 0)
        close(u);
    return rc;
}

/* One connection to the acceptor's socket: 1 when it came from this user
 * with the token and three descriptors, and the segment maps (s then holds
 * it); 0 when it is not the peer's (a stranger, or nothing yet: close it
 * either way); -1 with e set when the peer's segment does not map. */
static int take_one(struct shm *s, int u, const struct offer *o, struct rally__err *e)
{
    struct ucred cr;
    socklen_t crn = sizeof cr;
    int fds[3] = {-1, -1, -1};
    unsigned char token[16];
    union {
        char buf[CMSG_SPACE(sizeof fds)];
        struct cmsghdr align;
    } c;
    struct iovec iov = {token, sizeof token};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
                       .msg_controllen = sizeof c.buf};
    ssize_t k = -1;
    /* the peer sends the token and descriptors in one message as it connects */
    if (getsockopt(u, SOL_SOCKET, SO_PEERCRED, &cr, &crn) == 0 && cr.uid == geteuid())
        k = recvmsg(u, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    struct cmsghdr *cm = k > 0 ? CMSG_FIRSTHDR(&m) : NULL;
    if (cm != NULL && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
        size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        memcpy(fds, CMSG_DATA(cm), (nfd < 3 ? nfd : 3) * sizeof(int));
        for (size_t i = 3; i < nfd; i++) { /* more than asked for: not ours */
            int x;
            memcpy(&x, CMSG_DATA(cm) + i * sizeof(int), sizeof x);
            close(x);
        }
    }
    int good = k == (ssize_t)sizeof token && !(m.msg_flags & MSG_CTRUNC) &&
               memcmp(token, o->token, sizeof token) == 0 && fds[0] >= 0 && fds[1] >= 0 &&
               fds[2] >= 0;
    int rc = good ? shm_map(s, fds[0], 0, 0, 1, e) : RALLY_OK;
    if (fds[0] >= 0)
        close(fds[0]);
    if (good && rc == RALLY_OK) {
        s->bell = fds[1];
        s->peer_bell = fds[2];
        return 1;
    }
    for (int i = 1; i < 3; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return good ? -1 : 0;
}

#define TAKE_PENDING 8 /* connections waited on at once; the oldest makes room */

struct pending {
    int fd;
    int64_t until;
};

/* Closes p[j], keeping the others in the order they came. */
static void drop(struct pending *p, int *np, int j)
{
    close(p[j].fd);
    memmove(&p[j], &p[j + 1], (size_t)(*np - j - 1) * sizeof *p);
    (*np)--;
}

/* The acceptor: take the descriptors from a connection of this user that
 * knows the token.  Every accepted connection is waited on beside the
 * listener, so one that stays silent (a same-user process that found the
 * name) delays nobody: it is closed after each_ms (0: no bound of its own),
 * when TAKE_PENDING newer ones crowd it out, or when the peer's arrives. */
static int take_over(struct shm *s, int lfd, const struct offer *o, int64_t deadline,
                     int64_t each_ms, struct rally__err *e)
{
    struct pending p[TAKE_PENDING];
    struct pollfd pfd[1 + TAKE_PENDING];
    int np = 0, rc = 1; /* 1: still waiting */
    while (rc == 1) {
        int64_t now = rally__now_ms(), until = deadline;
        for (int j = np - 1; j >= 0; j--)
            if (p[j].until <= now)
                drop(p, &np, j);
        if (now >= deadline) {
            rc = rally__fail(e, RALLY_ETIMEDOUT, "timed out waiting for the peer's segment");
            break;
        }
        pfd[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
        for (int j = 0; j < np; j++) {
            pfd[1 + j] = (struct pollfd){.fd = p[j].fd, .events = POLLIN};
            if (p[j].until < until)
                until = p[j].until;
        }
        int n = poll(pfd, (nfds_t)(1 + np), rally__ms_left(until));
        if (n < 0 && errno != EINTR) {
            rc = rally__fail_errno(e, RALLY_ESYS, errno, "poll failed");
            break;
        }
        for (int j = np - 1; n > 0 && rc == 1 && j >= 0; j--) {
            if (!pfd[1 + j].revents)
                continue;
            int got = take_one(s, p[j].fd, o, e); /* anything but the peer's: closed */
            drop(p, &np, j);
            if (got != 0)
                rc = got > 0 ? RALLY_OK : e->code;
        }
        if (rc != 1 || n <= 0 || !pfd[0].revents)
            continue;
        int u = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (u < 0) {
            if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
                continue;
            rc = rally__fail_errno(e, RALLY_ESYS, errno, "accepting on a Unix socket failed");
            break;
        }
        if (np == TAKE_PENDING)
            drop(p, &np, 0);
        p[np++] = (struct pending){u, each_ms > 0 ? rally__now_ms() + each_ms : deadline};
    }
    while (np > 0)
        drop(p, &np, np - 1);
    return rc;
}

/* The acceptor's part: offer, hear the reply, take the segment, confirm.
 * *used says whether both ends will use it; when not, e says why. */
static int offer(const struct rally__mesh_opts *o, int fd, const char *what, struct shm *s,
                 int *used, struct rally__err *e)
{
    unsigned char m[MSG_NBYTES];
    struct offer of;
    memset(&of, 0, sizeof of);
    struct rally__err mine = {0, ""};
    int lfd = -1, theirs = 0, got = 0;
    if (listen_offer(&lfd, &of, &mine) != RALLY_OK)
        of.ok = 0;
    put_offer(m, &of);
    int rc = rally__send_all(fd, m, sizeof m, o->deadline, what, e);
    if (rc == RALLY_OK && of.ok)
        rc = hear(fd, &theirs, o->deadline, what, e);
    if (rc == RALLY_OK && theirs) {
        got = take_over(s, lfd, &of, o->deadline, o->handshake_ms, &mine) == RALLY_OK;
        rc = say(fd, got, o->deadline, what, e);
    }
    if (lfd >= 0)
        close(lfd);
    if (rc != RALLY_OK)
        return rc;
    if (!got && mine.code != 0)
        rally__fail(e, mine.code, "%s", mine.msg);
    else if (!got)
        rally__fail(e, RALLY_ESYS, "%s could not set up its end of a shared-memory link", what);
    *used = got;
    return RALLY_OK;
}

/* The connector's part: hear the offer, hand the segment over, hear the
 * confirmation. */
static int accept_offer(const struct rally__mesh_opts *o, int fd, const char *what,
                        struct shm *s, int *used, struct rally__err *e)
{
    unsigned char m[MSG_NBYTES];
    struct offer of;
    struct rally__err mine = {0, ""};
    if (rally__recv_all(fd, m, sizeof m, o->deadline, what, e) != RALLY_OK)
        return e->code;
    if (get_offer(m, &of) != 0)
        return rally__fail(e, RALLY_EPROTO, "%s opened the shared-memory set-up with bytes that "
                                            "are not part of it (protocol error)", what);
    int sent = 0, theirs = 0;
    if (of.ok) {
        sent = hand_over(s, &of, o->deadline, &mine) == RALLY_OK;
        if (say(fd, sent, o->deadline, what, e) != RALLY_OK)
            return e->code;
        if (sent && hear(fd, &theirs, o->deadline, what, e) != RALLY_OK)
            return e->code;
    }
    if (!of.ok)
        rally__fail(e, RALLY_ESYS, "%s could not set up its end of a shared-memory link", what);
    else if (!sent)
        rally__fail(e, mine.code, "%s", mine.msg);
    else if (!theirs)
        rally__fail(e, RALLY_ESYS, "%s could not map the shared-memory segment", what);
    *used = sent && theirs;
    return RALLY_OK;
}

/* --- the transport's row ----------------------------------------------------------- */

/* Same host: the same address in the book, or loopback on both sides. */
static int shm_can_use(const struct rally__mesh_opts *o, const struct rally__mesh_peer *q)
{
    if (o->transport == RALLY__TRANSPORT_TCP || o->host == NULL || q->host == NULL)
        return 0;
    return strcmp(o->host, q->host) == 0 ||
           (rally__host_is_loopback(o->host) && rally__host_is_loopback(q->host));
}

static int shm_setup(const struct rally__mesh_opts *o, const struct rally__mesh_peer *q, int fd,
                     int connector, struct rally__link *l, struct rally__err *e)
{
    char what[RALLY__LINK_WHAT];
    snprintf(what, sizeof what, "rank %d", q->rank);
    struct shm *s = shm_new();
    if (s == NULL) {
        close(fd);
        return rally__fail(e, RALLY_ENOMEM, "out of memory for a link");
    }
    int ok = 0;
    struct rally__err why = {0, ""};
    int rc = connector ? accept_offer(o, fd, what, s, &ok, &why) : offer(o, fd, what, s, &ok, &why);
    if (rc != RALLY_OK) {
        shm_free(s);
        close(fd);
        return rally__fail(e, why.code, "%s", why.msg);
    }
    if (ok) {
        s->fd = fd;
        l->t.p = s;
        /* a job alone on this host with a CPU per worker: the peer runs
         * while we wait, so spinning need not give it our core */
        long ncpu = rally__usable_cpus();
        l->spin_alone = o->one_host && ncpu > 0 && o->world <= ncpu;
        return RALLY_OK;
    }
    shm_free(s);
    if (o->transport == RALLY__TRANSPORT_SHM) {
        close(fd);
        return rally__fail(e, why.code ? why.code : RALLY_ESYS,
                           "no shared-memory link to %s (rally_transport=shm): %s", what, why.msg);
    }
    /* auto: both ends saw the refusal at the same message; the connection stays TCP */
    if (rally__tcp_transport.setup(o, q, fd, connector, l, e) != RALLY_OK)
        return e->code;
    l->ops = rally__tcp_transport.ops;
    return RALLY_OK;
}

const struct rally__transport rally__shm_transport = {"shm", shm_can_use, shm_setup, &shm_ops};
