/*
 * sock.c — setting up TCP sockets: addresses, listen, connect, accept, options.
 *
 * Choosing an address (rally__sock_choose_addr, _bind_addr, _primary_addr)
 * reads this host's interfaces with getifaddrs(): the one place that knows
 * which addresses are local, which interface is up, and which IPv6 address
 * is link-local (fe80::/10, whose scope only this host understands, so it is
 * never advertised).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "net/sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
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
    const char *colon, *h = s;
    size_t hlen;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || close[1] != ':')
            return rally__fail(e, RALLY_ECONFIG, "address '%s' is not [host]:port", s);
        hlen = (size_t)(close - s - 1);
        h = s + 1;
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL)
            return rally__fail(e, RALLY_ECONFIG, "address '%s' is not host:port", s);
        hlen = (size_t)(colon - s);
        if (memchr(s, ':', hlen) != NULL)
            return rally__fail(e, RALLY_ECONFIG,
                               "address '%s': write an IPv6 address in brackets: [%.*s]:%s", s,
                               (int)hlen, s, colon + 1);
    }
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || p < 0 || p > 65535)
        return rally__fail(e, RALLY_ECONFIG, "address '%s' has no valid port (0..65535)", s);
    if (hlen == 0)
        return rally__fail(e, RALLY_ECONFIG, "address '%s' has no host", s);
    if (hlen >= cap)
        return rally__fail(e, RALLY_ECONFIG, "address '%s': host name too long", s);
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (int)p;
    return RALLY_OK;
}

void rally__hostport_fmt(const char *host, int port, char *out, size_t cap)
{
    snprintf(out, cap, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
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

const char *rally__host_key(const char *host)
{
    return rally__host_is_loopback(host) ? "" : host;
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
    char hp[RALLY__HOST_MAX + 8];
    rally__hostport_fmt(host[0] ? host : "*", port, hp, sizeof hp);
    if (s < 0)
        return rally__fail_errno(e, RALLY_ESYS, err, "cannot listen on %s", hp);
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
    char hp[RALLY__HOST_MAX + 8];
    rally__hostport_fmt(host, port, hp, sizeof hp);
    if (s < 0)
        return rally__fail_errno(e, timed_out ? RALLY_ETIMEDOUT : RALLY_ESYS, err,
                                 "cannot connect to %s", hp);
    rally__sock_tune(s);
    *fd = s;
    return RALLY_OK;
}

/* A peer that cannot be reached now (refused, reset, no route, the
 * network down, no answer) is a lost peer, which recovery repairs by
 * re-wiring: RALLY_EPEER; anything else is RALLY_ESYS. */
static int connect_code(int err)
{
    switch (err) {
    case ECONNREFUSED:
    case ECONNRESET:
    case ECONNABORTED:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ENETDOWN:
    case ETIMEDOUT:
        return RALLY_EPEER;
    default:
        return RALLY_ESYS;
    }
}

int rally__tcp_connect_start(const char *host, int port, const char *what, int *fd, int *done,
                             struct rally__err *e)
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
    char hp[RALLY__HOST_MAX + 8];
    rally__hostport_fmt(host, port, hp, sizeof hp);
    if (s < 0)
        return rally__fail_errno(e, connect_code(err), err, "cannot connect to %s",
                                 what ? what : hp);
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
    return rally__fail_errno(e, connect_code(so), so, "cannot connect to %s", what);
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


/* --- choosing addresses ------------------------------------------------------ */

static int link_local(const struct sockaddr *sa)
{
    return sa->sa_family == AF_INET6 &&
           IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/* An address of ifa worth advertising: IPv4, or IPv6 that is not link-local. */
static int usable(const struct ifaddrs *ifa)
{
    const struct sockaddr *sa = ifa->ifa_addr;
    return sa != NULL && (sa->sa_family == AF_INET || (sa->sa_family == AF_INET6 && !link_local(sa)));
}

/* The first usable address of interface name (or of index ifindex when name
 * is NULL), family first, then the other: 1 found (out), 0 the interface
 * exists but has none, -1 no such interface; *up is 1 when it is up. */
static int iface_addr(const struct ifaddrs *all, const char *name, unsigned ifindex, int family,
                      char *out, size_t cap, int *up)
{
    char byindex[IF_NAMESIZE];
    if (name == NULL && (name = if_indextoname(ifindex, byindex)) == NULL)
        return -1;
    int seen = 0;
    *up = 0;
    for (int pass = 0; pass < 2; pass++)
        for (const struct ifaddrs *ifa = all; ifa != NULL; ifa = ifa->ifa_next) {
            if (strcmp(ifa->ifa_name, name) != 0)
                continue;
            seen = 1;
            *up |= (ifa->ifa_flags & IFF_UP) != 0;
            if (!usable(ifa) || (pass == 0) != (ifa->ifa_addr->sa_family == family))
                continue;
            if (!(ifa->ifa_flags & IFF_UP))
                continue;
            rally__addr_str(ifa->ifa_addr, out, cap, NULL);
            return 1;
        }
    return seen || if_nametoindex(name) != 0 ? 0 : -1;
}

/* 1 when a numeric address a (family, bytes) belongs to an interface here. */
static int is_local(const struct ifaddrs *all, int family, const void *a)
{
    for (const struct ifaddrs *ifa = all; ifa != NULL; ifa = ifa->ifa_next) {
        const struct sockaddr *sa = ifa->ifa_addr;
        if (sa == NULL || sa->sa_family != family)
            continue;
        if (family == AF_INET &&
            memcmp(&((const struct sockaddr_in *)sa)->sin_addr, a, sizeof(struct in_addr)) == 0)
            return 1;
        if (family == AF_INET6 &&
            memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, a, sizeof(struct in6_addr)) == 0)
            return 1;
    }
    return 0;
}

/* The interface names of this host, for an error message. */
static void iface_names(const struct ifaddrs *all, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (const struct ifaddrs *ifa = all; ifa != NULL && n + 1 < cap; ifa = ifa->ifa_next) {
        if (ifa->ifa_addr == NULL || ifa->ifa_addr->sa_family != AF_PACKET)
            continue;
        n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? ", " : "", ifa->ifa_name);
    }
    if (n >= cap)
        out[cap - 1] = '\0';
}

/* spec without surrounding brackets, in buf. */
static const char *unbracket(const char *spec, char *buf, size_t cap)
{
    size_t n = strlen(spec);
    if (n >= 2 && spec[0] == '[' && spec[n - 1] == ']' && n - 2 < cap) {
        memcpy(buf, spec + 1, n - 2);
        buf[n - 2] = '\0';
        return buf;
    }
    return spec;
}

/* spec as an interface name or a local address: 1 (out filled), 0 when it
 * is neither an interface nor an address literal (e unset), or RALLY_ECONFIG
 * as a negative number with e filled. */
static int resolve_spec(const struct ifaddrs *all, const char *spec, int family, char *out,
                        size_t cap, struct rally__err *e)
{
    char buf[RALLY__HOST_MAX];
    const char *a = unbracket(spec, buf, sizeof buf);
    unsigned char bin[sizeof(struct in6_addr)];
    int fam = inet_pton(AF_INET, a, bin) == 1 ? AF_INET : inet_pton(AF_INET6, a, bin) == 1 ? AF_INET6 : 0;
    if (fam == AF_INET6 && IN6_IS_ADDR_LINKLOCAL((struct in6_addr *)bin))
        return -rally__fail(e, RALLY_ECONFIG,
                            "'%s' is an IPv6 link-local address, which peers on other hosts "
                            "cannot use; give a global or unique-local address, or an "
                            "interface name",
                            spec);
    if (fam != 0) {
        if (!is_local(all, fam, bin))
            return -rally__fail(e, RALLY_ECONFIG,
                                "%s is not an address of this host (no interface has it)", a);
        snprintf(out, cap, "%s", a);
        return 1;
    }
    int up, k = iface_addr(all, spec, 0, family, out, cap, &up);
    if (k > 0)
        return 1;
    if (k == 0)
        return -rally__fail(e, RALLY_ECONFIG,
                            up ? "interface '%s' has no IPv4 or global IPv6 address"
                               : "interface '%s' is down",
                            spec);
    return 0;
}

int rally__sock_choose_addr(int fd, const char *spec, char *out, size_t cap,
                            struct rally__err *e)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
        return rally__fail_errno(e, RALLY_ESYS, errno, "cannot read the tracker connection's "
                                                       "local address");
    int family = ss.ss_family;
    if (family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)&ss)->sin6_addr))
        family = AF_INET;
    if (spec[0] == '\0' && !link_local((struct sockaddr *)&ss)) {
        rally__addr_str((struct sockaddr *)&ss, out, cap, NULL);
        return RALLY_OK;
    }
    struct ifaddrs *all;
    if (getifaddrs(&all) != 0)
        return rally__fail_errno(e, RALLY_ESYS, errno, "cannot list this host's interfaces");
    int rc = RALLY_OK, up;
    char a[RALLY__HOST_MAX];
    if (spec[0] == '\0') { /* link-local: the same interface's global address */
        unsigned idx = ((struct sockaddr_in6 *)&ss)->sin6_scope_id;
        if (iface_addr(all, NULL, idx, AF_INET6, a, sizeof a, &up) <= 0) {
            char name[IF_NAMESIZE] = "?";
            if_indextoname(idx, name);
            rc = rally__fail(e, RALLY_ECONFIG,
                             "this worker reaches the tracker over an IPv6 link-local address "
                             "of %s, which peers cannot use, and %s has no other address; set "
                             "rally_interface",
                             name, name);
        }
    } else {
        int k = resolve_spec(all, spec, family, a, sizeof a, e);
        if (k < 0)
            rc = -k;
        else if (k == 0) {
            char names[256];
            iface_names(all, names, sizeof names);
            rc = rally__fail(e, RALLY_ECONFIG,
                             strchr(spec, ':') || strchr(spec, '[')
                                 ? "'%s' is not an interface name or an address (interfaces "
                                   "here: %s)"
                                 : "no interface named '%s' and not an address (interfaces "
                                   "here: %s)",
                             spec, names);
        }
    }
    freeifaddrs(all);
    if (rc == RALLY_OK)
        snprintf(out, cap, "%s", a);
    return rc;
}

int rally__sock_bind_addr(const char *spec, char *out, size_t cap, struct rally__err *e)
{
    char buf[RALLY__HOST_MAX], a[RALLY__HOST_MAX];
    const char *s = unbracket(spec, buf, sizeof buf);
    if (s[0] == '\0' || strcmp(s, "*") == 0 || if_nametoindex(s) == 0) {
        snprintf(out, cap, "%s", s);
        return RALLY_OK;
    }
    struct ifaddrs *all;
    if (getifaddrs(&all) != 0)
        return rally__fail_errno(e, RALLY_ESYS, errno, "cannot list this host's interfaces");
    int k = resolve_spec(all, s, AF_INET, a, sizeof a, e);
    freeifaddrs(all);
    if (k < 0)
        return -k;
    snprintf(out, cap, "%s", k > 0 ? a : s);
    return RALLY_OK;
}

void rally__sock_primary_addr(char *out, size_t cap)
{
    struct ifaddrs *all;
    snprintf(out, cap, "127.0.0.1");
    if (getifaddrs(&all) != 0)
        return;
    int found = 0;
    for (int family = AF_INET; !found; family = AF_INET6) {
        for (const struct ifaddrs *ifa = all; ifa != NULL && !found; ifa = ifa->ifa_next)
            if (usable(ifa) && ifa->ifa_addr->sa_family == family && (ifa->ifa_flags & IFF_UP) &&
                !(ifa->ifa_flags & IFF_LOOPBACK)) {
                rally__addr_str(ifa->ifa_addr, out, cap, NULL);
                found = 1;
            }
        if (family == AF_INET6)
            break;
    }
    freeifaddrs(all);
}
