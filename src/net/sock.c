#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "net/sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/uio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/clock.h"

int rally__hostport_split(const char *s, char *host, size_t cap, int *port, struct rally__err *e)
{
    const char *colon;
    size_t hlen;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || close[1] != ':')
            return rally__fail(e, RALLY_ECONFIG, "address '%s' is not [host]:port", s);
        hlen = (size_t)(close - s - 1);
        s++;
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL)
            return rally__fail(e, RALLY_ECONFIG, "address '%s' is not host:port", s);
        hlen = (size_t)(colon - s);
    }
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || p < 0 || p > 65535)
        return rally__fail(e, RALLY_ECONFIG, "address '%s' has no valid port (0..65535)", s);
    if (hlen >= cap)
        return rally__fail(e, RALLY_ECONFIG, "address '%s': host name too long", s);
    memcpy(host, s, hlen);
    host[hlen] = '\0';
    *port = (int)p;
    return RALLY_OK;
}

void rally__addr_str(const struct sockaddr *sa, char *host, size_t cap, int *port)
{
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
        if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
            struct in_addr a4;
            memcpy(&a4, &s6->sin6_addr.s6_addr[12], 4);
            inet_ntop(AF_INET, &a4, host, (socklen_t)cap);
        } else {
            inet_ntop(AF_INET6, &s6->sin6_addr, host, (socklen_t)cap);
        }
        if (port)
            *port = ntohs(s6->sin6_port);
    } else if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &s4->sin_addr, host, (socklen_t)cap);
        if (port)
            *port = ntohs(s4->sin_port);
    } else {
        snprintf(host, cap, "?");
        if (port)
            *port = 0;
    }
}

int rally__host_is_loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
           strcmp(host, "localhost") == 0;
}

void rally__sock_tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int rally__sock_bufs(int fd, int nbytes, struct rally__err *e)
{
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &nbytes, sizeof nbytes) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &nbytes, sizeof nbytes) != 0)
        return rally__fail_errno(e, RALLY_ESYS, errno, "cannot set %d-byte socket buffers", nbytes);
    return RALLY_OK;
}

int64_t rally__sock_buf_choice(int64_t want, int world, int one_host, long ncpu)
{
    if (want >= 0)
        return want;
    return one_host && ncpu > 0 && world > ncpu ? RALLY__SOCK_BUF_SHARED : 0;
}

static int resolve(const char *host, int port, int passive, struct addrinfo **res,
                   struct rally__err *e)
{
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : AI_ADDRCONFIG);
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    const char *h = (host[0] == '\0' || strcmp(host, "*") == 0) ? NULL : host;
    int rc = getaddrinfo(h, ps, &hints, res);
    if (rc != 0 && !passive) { /* AI_ADDRCONFIG hides ::1 on hosts with only loopback v6 */
        hints.ai_flags = AI_NUMERICSERV;
        rc = getaddrinfo(h, ps, &hints, res);
    }
    if (rc != 0)
        return rally__fail(e, RALLY_ESYS, "cannot resolve '%s': %s", host, gai_strerror(rc));
    return RALLY_OK;
}

int rally__tcp_listen(const char *host, int port, int backlog, int *fd, int *bound_port,
                      struct rally__err *e)
{
    struct addrinfo *res, *ai;
    if (resolve(host, port, 1, &res, e) != RALLY_OK)
        return e->code;
    /* Passive "any" lists v4 first on some systems: prefer a dual-stack v6 socket. */
    int err = 0, s = -1;
    for (int pass = 0; pass < 2 && s < 0; pass++) {
        for (ai = res; ai != NULL; ai = ai->ai_next) {
            if ((pass == 0) != (ai->ai_family == AF_INET6))
                continue;
            s = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (s < 0) {
                err = errno;
                continue;
            }
            int one = 1, zero = 0;
            setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (ai->ai_family == AF_INET6)
                setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
            if (bind(s, ai->ai_addr, ai->ai_addrlen) == 0 && listen(s, backlog) == 0)
                break;
            err = errno;
            close(s);
            s = -1;
        }
    }
    freeaddrinfo(res);
    if (s < 0)
        return rally__fail_errno(e, RALLY_ESYS, err, "cannot listen on %s:%d", host[0] ? host : "*",
                                 port);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(s, (struct sockaddr *)&ss, &sl);
    char h[RALLY__HOST_MAX];
    rally__addr_str((struct sockaddr *)&ss, h, sizeof h, bound_port);
    *fd = s;
    return RALLY_OK;
}

static int wait_fd(int fd, short ev, int64_t deadline)
{
    struct pollfd p = {.fd = fd, .events = ev};
    for (;;) {
        int n = poll(&p, 1, rally__ms_left(deadline));
        if (n > 0)
            return 1;
        if (n == 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

int rally__tcp_connect(const char *host, int port, int64_t deadline, int *fd, struct rally__err *e)
{
    struct addrinfo *res, *ai;
    if (resolve(host, port, 0, &res, e) != RALLY_OK)
        return e->code;
    int err = ECONNREFUSED, s = -1, timed_out = 0;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        s = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (s < 0) {
            err = errno;
            continue;
        }
        if (connect(s, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        if (errno == EINPROGRESS) {
            int w = wait_fd(s, POLLOUT, deadline);
            int so = 0;
            socklen_t sl = sizeof so;
            if (w > 0 && getsockopt(s, SOL_SOCKET, SO_ERROR, &so, &sl) == 0 && so == 0)
                break;
            err = w == 0 ? ETIMEDOUT : so ? so : errno;
            timed_out = w == 0;
        } else {
            err = errno;
        }
        close(s);
        s = -1;
        if (timed_out)
            break;
    }
    freeaddrinfo(res);
    if (s < 0)
        return rally__fail_errno(e, timed_out ? RALLY_ETIMEDOUT : RALLY_ESYS, err,
                                 "cannot connect to %s:%d", host, port);
    rally__sock_tune(s);
    *fd = s;
    return RALLY_OK;
}

int rally__tcp_accept(int lfd, int64_t deadline, int *fd, char *peer_host, size_t cap,
                      struct rally__err *e)
{
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int s = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (s >= 0) {
            if (peer_host)
                rally__addr_str((struct sockaddr *)&ss, peer_host, cap, NULL);
            rally__sock_tune(s);
            *fd = s;
            return RALLY_OK;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return rally__fail_errno(e, RALLY_ESYS, errno, "accept failed");
        int w = wait_fd(lfd, POLLIN, deadline);
        if (w == 0)
            return rally__fail(e, RALLY_ETIMEDOUT, "no connection arrived before the deadline");
        if (w < 0)
            return rally__fail_errno(e, RALLY_ESYS, errno, "poll failed");
    }
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
        else
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
        else
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
            int w = wait_fd(fd, out ? POLLOUT : POLLIN, deadline);
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
