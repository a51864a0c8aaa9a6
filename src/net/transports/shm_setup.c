/*
 * shm_setup.c — a shared-memory link's set-up over the authenticated TCP
 * connection it began as (shm.c has the rings; shm.h is what the two share),
 * and the shared-memory row of the mesh's transport table (transport.h).
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
 *                 answers ACK: ok or not.
 * REPLY and ACK also say whether the kernel lets this end read the peer's
 * memory (process_vm_readv, asked once here of the pid the Unix socket's
 * credentials name; rally_cma=0: never): REPLY the connector's answer, ACK
 * both ends' together, so both decide alike whether the link reads the
 * peer's buffers (coll/cma.c) or keeps to the rings.  It waits on every connection
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "net/transports/shm.h"
#include "net/sock.h"
#include "net/transport.h"
#include "util/clock.h"
#include "util/wire.h"

#define MSG_MAGIC 0x5253484du /* "RSHM" */

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

/* A short answer: ok (1) or not (0), and whether the peer's memory may be
 * read (1) or not (0). */
static int say(int fd, int ok, int can_read, int64_t deadline, const char *what,
               struct rally__err *e)
{
    unsigned char m[8] = {0};
    rally__put_u32(m, MSG_MAGIC);
    m[4] = (unsigned char)(ok ? 1 : 0);
    m[5] = (unsigned char)(can_read ? 1 : 0);
    return rally__send_all(fd, m, sizeof m, deadline, what, e);
}

static int hear(int fd, int *ok, int *can_read, int64_t deadline, const char *what,
                struct rally__err *e)
{
    unsigned char m[8];
    if (rally__recv_all(fd, m, sizeof m, deadline, what, e) != RALLY_OK)
        return e->code;
    if (rally__get_u32(m) != MSG_MAGIC || m[4] > 1 || m[5] > 1)
        return rally__fail(e, RALLY_EPROTO,
                           "%s answered the shared-memory set-up with bytes that "
                           "are not part of it (protocol error)",
                           what);
    *ok = m[4];
    *can_read = m[5];
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
static int hand_over(struct shm *s, const struct offer *o, int64_t deadline, struct rally__err *e)
{
    int fds[3] = {-1, -1, -1};
    int u = -1, rc = rally__shm_create(s, RALLY__SHM_RING_NBYTES, fds, e);
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
    struct ucred cr;
    socklen_t crn = sizeof cr;
    if (getsockopt(u, SOL_SOCKET, SO_PEERCRED, &cr, &crn) == 0)
        s->peer_pid = (int)cr.pid;
    union {
        char buf[CMSG_SPACE(sizeof fds)];
        struct cmsghdr align;
    } c;
    memset(&c, 0, sizeof c);
    struct iovec iov = {(void *)o->token, sizeof o->token};
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof c.buf};
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
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof c.buf};
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
    int rc = good ? rally__shm_map(s, fds[0], 0, 0, 1, e) : RALLY_OK;
    if (fds[0] >= 0)
        close(fds[0]);
    if (good && rc == RALLY_OK) {
        s->peer_pid = (int)cr.pid;
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
                 int *used, int *cma, struct rally__err *e)
{
    unsigned char m[MSG_NBYTES];
    struct offer of;
    memset(&of, 0, sizeof of);
    struct rally__err mine = {0, ""};
    int lfd = -1, theirs = 0, got = 0, they_read = 0;
    if (listen_offer(&lfd, &of, &mine) != RALLY_OK)
        of.ok = 0;
    put_offer(m, &of);
    int rc = rally__send_all(fd, m, sizeof m, o->deadline, what, e);
    if (rc == RALLY_OK && of.ok)
        rc = hear(fd, &theirs, &they_read, o->deadline, what, e);
    if (rc == RALLY_OK && theirs) {
        got = take_over(s, lfd, &of, o->deadline, o->handshake_ms, &mine) == RALLY_OK;
        *cma = got && they_read && o->cma && rally__shm_can_read(s->peer_pid);
        rc = say(fd, got, *cma, o->deadline, what, e);
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
static int accept_offer(const struct rally__mesh_opts *o, int fd, const char *what, struct shm *s,
                        int *used, int *cma, struct rally__err *e)
{
    unsigned char m[MSG_NBYTES];
    struct offer of;
    struct rally__err mine = {0, ""};
    if (rally__recv_all(fd, m, sizeof m, o->deadline, what, e) != RALLY_OK)
        return e->code;
    if (get_offer(m, &of) != 0)
        return rally__fail(e, RALLY_EPROTO,
                           "%s opened the shared-memory set-up with bytes that "
                           "are not part of it (protocol error)",
                           what);
    int sent = 0, theirs = 0;
    if (of.ok) {
        sent = hand_over(s, &of, o->deadline, &mine) == RALLY_OK;
        int can_read = sent && o->cma && rally__shm_can_read(s->peer_pid);
        if (say(fd, sent, can_read, o->deadline, what, e) != RALLY_OK)
            return e->code;
        if (sent && hear(fd, &theirs, cma, o->deadline, what, e) != RALLY_OK)
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
    return strcmp(rally__host_key(o->host), rally__host_key(q->host)) == 0;
}

static int shm_setup(const struct rally__mesh_opts *o, const struct rally__mesh_peer *q, int fd,
                     int connector, struct rally__link *l, struct rally__err *e)
{
    char what[RALLY__LINK_WHAT];
    snprintf(what, sizeof what, "rank %d", q->rank);
    struct shm *s = rally__shm_new();
    if (s == NULL) {
        close(fd);
        return rally__fail(e, RALLY_ENOMEM, "out of memory for a link");
    }
    int ok = 0, cma = 0;
    struct rally__err why = {0, ""};
    int rc = connector ? accept_offer(o, fd, what, s, &ok, &cma, &why)
                       : offer(o, fd, what, s, &ok, &cma, &why);
    if (rc != RALLY_OK) {
        rally__shm_free(s);
        close(fd);
        return rally__fail(e, why.code, "%s", why.msg);
    }
    if (ok) {
        s->fd = fd;
        l->t.p = s;
        l->ops = cma ? &rally__shm_cma_ops : &rally__shm_ops;
        /* a job alone on this host with a CPU per worker: the peer runs
         * while we wait, so spinning need not give it our core */
        long ncpu = rally__usable_cpus();
        l->spin_alone = o->one_host && ncpu > 0 && o->world <= ncpu;
        return RALLY_OK;
    }
    rally__shm_free(s);
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

const struct rally__transport rally__shm_transport = {"shm", shm_can_use, shm_setup,
                                                      &rally__shm_ops};
