/*
 * sock.h — TCP sockets for everything above: every descriptor is non-blocking
 * and close-on-exec, every wait has a deadline (util/clock.h), and no write
 * can raise SIGPIPE (MSG_NOSIGNAL): a vanished peer is an error code, never a
 * dead host process.
 *
 * Addresses as text are "host:port" or "[v6]:port" (rally__hostport_split,
 * rally__hostport_fmt); functions that take a host alone take a v6 literal
 * bare.  A host name resolving to several addresses is tried in order (IPv6
 * first where the resolver says so, IPv4 after).  IPv4-mapped IPv6
 * addresses are printed as plain IPv4.
 */
#ifndef RALLY_NET_SOCK_H
#define RALLY_NET_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "util/err.h"

#define RALLY__HOST_MAX 256

/* Splits "host:port" / "[v6]:port" into host and port.  An IPv6 address
 * must be in brackets ("fd00::3:9000" is refused, naming the bracketed
 * form); a zone may follow it inside ("[fe80::1%eth0]:9000").  Errors are
 * RALLY_ECONFIG, naming the text and what is wrong with it. */
int rally__hostport_split(const char *s, char *host, size_t cap, int *port, struct rally__err *e);

/* Writes host and port as text rally__hostport_split reads back: an IPv6
 * host in brackets ("[fd00::3]:41234"), any other as "host:port".  Every
 * message and every address handed on goes through it. */
void rally__hostport_fmt(const char *host, int port, char *out, size_t cap);

/* The address a worker listens on for its peers and advertises to them
 * (numeric, no brackets).  spec is rally_interface:
 *   ""              the local address of fd, the connected tracker line (the
 *                   interface this host reaches the tracker by); an IPv6
 *                   link-local one is replaced by a global or unique-local
 *                   address of the same interface, since its scope means
 *                   nothing on another host;
 *   an interface    its first IPv4 address when fd is IPv4, its first
 *                   non-link-local IPv6 address when fd is IPv6, else the
 *                   other family's;
 *   an address      itself ("[v6]" brackets allowed), when an interface of
 *                   this host has it and it is not link-local.
 * RALLY_ECONFIG naming spec and why otherwise (no such interface, an address
 * that is not this host's, link-local, an interface that is down or has no
 * usable address). */
int rally__sock_choose_addr(int fd, const char *spec, char *out, size_t cap,
                            struct rally__err *e);

/* The tracker's --bind: an interface name becomes its first usable address
 * (IPv4 first); any other text (an address, a host name, "" or "*" for every
 * address) is returned as it is, brackets removed. */
int rally__sock_bind_addr(const char *spec, char *out, size_t cap, struct rally__err *e);

/* For a tracker bound to every address: the address workers on other hosts
 * should use, the first IPv4 address of the first interface that is up and
 * not loopback, else its first global IPv6 address, else 127.0.0.1. */
void rally__sock_primary_addr(char *out, size_t cap);

/* Listens on host:port (port 0: the kernel picks; host "" or "*": every
 * address, IPv6 dual-stack falling back to IPv4).  *bound_port gets the
 * port actually bound. */
int rally__tcp_listen(const char *host, int port, int backlog, int *fd, int *bound_port,
                      struct rally__err *e);

/* Connects to host:port before deadline, trying every resolved address. */
int rally__tcp_connect(const char *host, int port, int64_t deadline, int *fd, struct rally__err *e);

/* Starts a non-blocking connect to host:port's first address: *done is 1
 * when it connected at once, else wait for POLLOUT and call
 * rally__tcp_connect_done.  A peer that cannot be reached now (refused, no
 * route, the network down) is RALLY_EPEER, which recovery repairs.  what
 * names the peer in messages ("rank 3 at [fd00::3]:41234"; NULL: the
 * address). */
int rally__tcp_connect_start(const char *host, int port, const char *what, int *fd, int *done,
                             struct rally__err *e);
/* After POLLOUT on a connect in progress: RALLY_OK, or why it failed
 * (RALLY_EPEER when the peer cannot be reached now, as above). */
int rally__tcp_connect_done(int fd, const char *what, struct rally__err *e);

/* Bounds how long a connection may go without its data or keepalive probes
 * being acknowledged (TCP_USER_TIMEOUT, with keepalive probes on an idle
 * connection): a peer whose link is cut is found within about timeout_ms,
 * and the next send or receive fails.  0 or less: the kernel's defaults. */
void rally__sock_link_timeout(int fd, int64_t timeout_ms);

/* Accepts one connection before deadline; peer_host (may be NULL) gets the
 * peer's numeric address. */
int rally__tcp_accept(int lfd, int64_t deadline, int *fd, char *peer_host, size_t cap,
                      struct rally__err *e);

/* The numeric host and port of a socket address (v4-mapped shown as v4). */
void rally__addr_str(const struct sockaddr *sa, char *host, size_t cap, int *port);

/* 1 when host names this machine's loopback (127.x.x.x, ::1, localhost). */
int rally__host_is_loopback(const char *host);

/* Which machine an address-book host is on, as a key: two ranks share a
 * machine when their keys are equal (the same address, or both loopback,
 * which is "").  The mesh's choice of shared memory and the hierarchy's
 * hosts both go by it. */
const char *rally__host_key(const char *host);

/* Waits (in poll) for fd to become writable (out) or readable before the
 * deadline: 1 ready, 0 at the deadline, -1 on a poll failure (errno). */
int rally__fd_wait(int fd, int out, int64_t deadline);

/* TCP_NODELAY for every connection. */
void rally__sock_tune(int fd);

/* Fixes fd's send and receive buffers at nbytes each (the kernel doubles
 * the figure for its bookkeeping), which turns off its autotuning. */
int rally__sock_bufs(int fd, int nbytes, struct rally__err *e);

/* The socket buffer size for a job's peer links: want (rally_sock_buf_bytes)
 * when it is >= 0, else (auto) RALLY__SOCK_BUF_SHARED when the whole job
 * runs on one host with more workers than CPUs, else 0 (the kernel's
 * autotuning).  Processes that take turns on a core do better with small
 * buffers: a sender cannot run far ahead, so what it sends is still in the
 * cache when the receiver copies it (docs/config.md has the figures). */
#define RALLY__SOCK_BUF_SHARED (64 << 10)
int64_t rally__sock_buf_choice(int64_t want, int world, int one_host, long ncpu);

/* The CPUs this process may run on (its affinity mask, which follows
 * cpusets and taskset), else those online. */
long rally__usable_cpus(void);

/* --- moving bytes (tcp.c) --------------------------------------------------- */

/* Blocks (in poll) until all n bytes are sent / received, or fails with
 * RALLY_ETIMEDOUT at the deadline, RALLY_EPEER when the peer closed or reset.
 * what names the peer in messages ("tracker 127.0.0.1:9000"). */
int rally__send_all(int fd, const void *buf, size_t n, int64_t deadline, const char *what,
                    struct rally__err *e);
int rally__recv_all(int fd, void *buf, size_t n, int64_t deadline, const char *what,
                    struct rally__err *e);

/* One non-blocking attempt: returns bytes moved (>= 0; 0 means would block),
 * or -1 with e set (RALLY_EPEER on EOF/reset). */
long rally__send_some(int fd, const void *buf, size_t n, const char *what, struct rally__err *e);
long rally__recv_some(int fd, void *buf, size_t n, const char *what, struct rally__err *e);
/* The same over two pieces (a header and a payload) in one system call. */
long rally__send2_some(int fd, const void *a, size_t an, const void *b, size_t bn,
                       const char *what, struct rally__err *e);
long rally__recv2_some(int fd, void *a, size_t an, void *b, size_t bn, const char *what,
                       struct rally__err *e);

#endif
