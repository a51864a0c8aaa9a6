/*
 * sock.c — setting up TCP sockets: addresses, listen, connect, accept, options.
 */
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
#include <sched.h>
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

long rally__usable_cpus(void)
{
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof s, &s) == 0 && CPU_COUNT(&s) > 0)
        return CPU_COUNT(&s);
    return sysconf(_SC_NPROCESSORS_ONLN);
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

int rally__fd_wait(int fd, int out, int64_t deadline)
{
    struct pollfd p = {.fd = fd, .events = out ? POLLOUT : POLLIN};
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
            int w = rally__fd_wait(s, 1, deadline);
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

int rally__tcp_connect_start(const char *host, int port, int *fd, int *done, struct rally__err *e)
{
    struct addrinfo *res;
    if (resolve(host, port, 0, &res, e) != RALLY_OK)
        return e->code;
    int s = socket(res->ai_family, res->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int err = errno, now = 0;
    if (s >= 0) {
        if (connect(s, res->ai_addr, res->ai_addrlen) == 0)
            now = 1;
        else if (errno != EINPROGRESS) {
            err = errno;
            close(s);
            s = -1;
        }
    }
    freeaddrinfo(res);
    if (s < 0)
        return rally__fail_errno(e, err == ECONNREFUSED ? RALLY_EPEER : RALLY_ESYS, err,
                                 "cannot connect to %s:%d", host, port);
    rally__sock_tune(s);
    *done = now;
    *fd = s;
    return RALLY_OK;
}

int rally__tcp_connect_done(int fd, const char *what, struct rally__err *e)
{
    int so = 0;
    socklen_t sl = sizeof so;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) != 0)
        so = errno;
    if (so == 0)
        return RALLY_OK;
    return rally__fail_errno(e, so == ECONNREFUSED || so == ECONNRESET ? RALLY_EPEER : RALLY_ESYS,
                             so, "cannot connect to %s", what);
}

void rally__sock_link_timeout(int fd, int64_t timeout_ms)
{
    if (timeout_ms <= 0)
        return;
    unsigned ut = timeout_ms > UINT32_MAX / 2 ? UINT32_MAX / 2 : (unsigned)timeout_ms;
    int one = 1;
    /* probe an idle link a few times within the bound; TCP_USER_TIMEOUT then
     * ends it when neither data nor probes are acknowledged for timeout_ms */
    int idle = (int)(timeout_ms / 3000), intvl = idle;
    if (idle < 1)
        idle = intvl = 1;
    if (idle > 3600)
        idle = intvl = 3600;
    int cnt = 3;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof ut);
}

int rally__local_addr_towards(const char *host, int port, char *out, size_t cap,
                              struct rally__err *e)
{
    struct addrinfo *res;
    if (resolve(host, port, 0, &res, e) != RALLY_OK)
        return e->code;
    int s = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int ok = s >= 0 && connect(s, res->ai_addr, res->ai_addrlen) == 0;
    int err = errno;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    ok = ok && getsockname(s, (struct sockaddr *)&ss, &sl) == 0;
    if (s >= 0)
        close(s);
    freeaddrinfo(res);
    if (!ok)
        return rally__fail_errno(e, RALLY_ESYS, err, "no route to %s:%d", host, port);
    rally__addr_str((struct sockaddr *)&ss, out, cap, NULL);
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
        int w = rally__fd_wait(lfd, 0, deadline);
        if (w == 0)
            return rally__fail(e, RALLY_ETIMEDOUT, "no connection arrived before the deadline");
        if (w < 0)
            return rally__fail_errno(e, RALLY_ESYS, errno, "poll failed");
    }
}
