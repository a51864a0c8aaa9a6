/*
 * mesh.h — wiring a worker to its neighbours.
 *
 * Of every pair of neighbours the higher rank connects and the lower rank
 * accepts, so waits only ever point down the ranks and cannot form a cycle.
 * Every link is authenticated (auth.h): the connector proves it knows the
 * secret and says who it is; the acceptor checks that identity against the
 * address book (an expected, not yet connected neighbour with the current
 * incarnation) and refuses anything else, then keeps accepting.  A stranger
 * on the port costs at most one handshake deadline, never the job.
 */
#ifndef RALLY_NET_MESH_H
#define RALLY_NET_MESH_H

#include <stdint.h>

#include "net/auth.h"
#include "util/err.h"

struct rally__mesh_peer {
    int rank;
    const char *host;
    int port;
    uint32_t incarnation;
    int fd; /* out: the connected link, -1 before */
};

/* Connects to every peer of lower rank and accepts every peer of higher rank
 * on listen_fd, before deadline.  handshake_ms bounds each handshake.  On
 * failure every fd opened here is closed again. */
int rally__mesh_connect(int listen_fd, const struct rally__secret *s, int rank,
                        uint32_t incarnation, struct rally__mesh_peer *peers, int npeers,
                        int64_t deadline, int64_t handshake_ms, struct rally__err *e);

#endif
