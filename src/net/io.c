/*
 * io.c — moving bytes over a connected socket: the non-blocking and
 * deadline-bound sends and receives every layer uses (sock.h), below the
 * transports (transports/tcp.c's link runs on them).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "net/sock.h"

/* A connection the kernel gave up on (its data or keepalive probes went
 * unacknowledged for rally_link_timeout_ms, or the route vanished) is a lost
 * peer, as a reset is: RALLY_EPEER, which recovery repairs.  1 when errno
 * was such a loss (e filled). */
static int link_lost(int err, const char *what, struct rally__err *e)
{
    if (err != ETIMEDOUT && err != EHOSTUNREACH && err != ENETUNREACH && err != ENETDOWN &&
        err != ECONNABORTED)
        return 0;
    rally__fail(e, RALLY_EPEER,
                "the connection to %s was lost: %s (rally_link_timeout_ms bounds "
                "how long an unanswered link may last)",
                what, strerror(err));
    return 1;
}

long rally__send_some(int fd, const void *buf, size_t n, const char *what, struct rally__err *e)
{
    for (;;) {
        ssize_t k = send(fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k >= 0)
            return (long)k;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        if (errno == EPIPE || errno == ECONNRESET)
            rally__fail(e, RALLY_EPEER, "%s closed the connection", what);
        else if (!link_lost(errno, what, e))
            rally__fail_errno(e, RALLY_ESYS, errno, "sending to %s failed", what);
        return -1;
    }
}

long rally__recv_some(int fd, void *buf, size_t n, const char *what, struct rally__err *e)
{
    for (;;) {
        ssize_t k = recv(fd, buf, n, MSG_DONTWAIT);
        if (k > 0)
            return (long)k;
        if (k == 0) {
            if (n == 0)
                return 0;
            rally__fail(e, RALLY_EPEER, "%s closed the connection", what);
            return -1;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        if (errno == ECONNRESET)
            rally__fail(e, RALLY_EPEER, "%s reset the connection", what);
        else if (!link_lost(errno, what, e))
            rally__fail_errno(e, RALLY_ESYS, errno, "receiving from %s failed", what);
        return -1;
    }
}

static long io_error(long k, int out, size_t n, const char *what, struct rally__err *e)
{
    if (k >= 0)
        return k;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
        return 0;
    if (errno == EPIPE || errno == ECONNRESET)
        rally__fail(e, RALLY_EPEER, "%s %s the connection", what,
                    errno == EPIPE || out ? "closed" : "reset");
    else if (link_lost(errno, what, e))
        ;
    else
        rally__fail_errno(e, RALLY_ESYS, errno, "%s %s failed", out ? "sending to" : "receiving from",
                          what);
    return -1;
}

long rally__send2_some(int fd, const void *a, size_t an, const void *b, size_t bn,
                       const char *what, struct rally__err *e)
{
    struct iovec iov[2] = {{(void *)a, an}, {(void *)b, bn}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
    for (;;) {
        ssize_t k = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k < 0 && errno == EINTR)
            continue;
        return io_error((long)k, 1, an + bn, what, e);
    }
}

long rally__recv2_some(int fd, void *a, size_t an, void *b, size_t bn, const char *what,
                       struct rally__err *e)
{
    struct iovec iov[2] = {{a, an}, {b, bn}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
    for (;;) {
        ssize_t k = recvmsg(fd, &m, MSG_DONTWAIT);
        if (k < 0 && errno == EINTR)
            continue;
        if (k == 0 && an + bn > 0) {
            rally__fail(e, RALLY_EPEER, "%s closed the connection", what);
            return -1;
        }
        return io_error((long)k, 0, an + bn, what, e);
    }
}

static int xfer_all(int fd, void *buf, size_t n, int64_t deadline, const char *what, int out,
                    struct rally__err *e)
{
    char *p = buf;
    while (n > 0) {
        long k = out ? rally__send_some(fd, p, n, what, e) : rally__recv_some(fd, p, n, what, e);
        if (k < 0)
            return e->code;
        p += k;
        n -= (size_t)k;
        if (n == 0)
            break;
        if (k == 0) {
            int w = rally__fd_wait(fd, out, deadline);
            if (w == 0)
                return rally__fail(e, RALLY_ETIMEDOUT, "timed out %s %s", out ? "sending to" : "waiting for",
                                   what);
            if (w < 0)
                return rally__fail_errno(e, RALLY_ESYS, errno, "poll failed");
        }
    }
    return RALLY_OK;
}

int rally__send_all(int fd, const void *buf, size_t n, int64_t deadline, const char *what,
                    struct rally__err *e)
{
    return xfer_all(fd, (void *)buf, n, deadline, what, 1, e);
}

int rally__recv_all(int fd, void *buf, size_t n, int64_t deadline, const char *what,
                    struct rally__err *e)
{
    return xfer_all(fd, buf, n, deadline, what, 0, e);
}
