/*
 * mesh.h — wiring a worker to its neighbours, one link per peer.
 *
 * Of every pair of neighbours the higher rank connects and the lower rank
 * accepts.  Every connection is authenticated (auth.h): the connector proves
 * it knows the secret and says who it is; the acceptor checks that identity
 * against the address book (an expected, not yet connected neighbour with
 * the current incarnation) and refuses anything else.  The authenticated
 * connection then becomes a link of the transport the mesh picks for that
 * peer (transport.h).
 *
 * Wiring is one poll loop: every outgoing connection and every accepted
 * handshake advances as its bytes arrive, so a stranger idling on the port
 * delays nobody; an accepted connection that has not authenticated within
 * handshake_ms is dropped (as is the oldest when RALLY__MESH_PENDING_MAX are
 * pending).  The loop also watches watch_fd (the tracker line): when it is
 * readable it calls watch(), and any status but RALLY_OK ends the wiring at
 * once with that status (a newer RESET, an ABORT), so a worker never sits out
 * a deadline for a peer the tracker already knows is gone.
 */
#ifndef RALLY_NET_MESH_H
#define RALLY_NET_MESH_H

#define RALLY__MESH_PENDING_MAX 32

#include <stdint.h>

#include "net/auth.h"
#include "net/link.h"
#include "util/config.h"
#include "util/err.h"

struct rally__mesh_peer {
    int rank;
    const char *host;
    int port;
    uint32_t incarnation;
};

struct rally__mesh_opts {
    int listen_fd;
    const struct rally__secret *secret;
    int rank, world;
    uint32_t incarnation;
    const char *host;        /* this rank's, as the address book has it */
    int one_host;            /* every rank's host is a loopback address */
    int64_t sock_buf_bytes;  /* rally_sock_buf_bytes: -1 auto (sock.h) */
    int64_t deadline;        /* for the whole wiring */
    int64_t handshake_ms;    /* bounds each accepted handshake */
    int transport;           /* RALLY__TRANSPORT_* (util/config.h), every rank alike */
    int cma;                 /* rally_cma: shm links may read the peer's memory */
    int64_t link_timeout_ms; /* TCP links: rally__sock_link_timeout (0: kernel default) */
    int watch_fd;            /* looked at only when watch is set */
    int (*watch)(void *arg, struct rally__err *e); /* NULL: none */
    void *watch_arg;
};

/* Connects to every peer of lower rank and accepts every peer of higher rank
 * on o->listen_fd, before o->deadline; links[i] becomes the link to
 * peers[i].  Fails with RALLY_EPEER when a peer refuses or drops its
 * connection (it died), RALLY_ETIMEDOUT naming the missing ranks at the
 * deadline, or whatever o->watch returned.  On failure every link opened
 * here is closed again. */
int rally__mesh_connect(const struct rally__mesh_opts *o, const struct rally__mesh_peer *peers,
                        int npeers, struct rally__link *links, struct rally__err *e);

#endif
