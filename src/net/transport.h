/*
 * transport.h — what a transport gives the mesh: one row of its table.
 *
 * Every link begins as an authenticated TCP connection (mesh.h).  The mesh
 * then takes the first row of its table (mesh.c, transports[]) whose
 * can_use() accepts the peer, and hands that row's setup() the connection;
 * setup() turns it into a link whose ops are the row's, or, when the two
 * ends agreed over the connection that it cannot (shm.c with
 * rally_transport=auto), into a link of a later row, setting l->ops.  Both ends must pick
 * the same row, so can_use() may look only at what both ends know alike (the
 * job's options and the peer's entry in the address book).
 *
 * To add a transport: write src/net/X.c defining a row, declare it here, and
 * add it to transports[] in mesh.c above the rows it should win over.  TCP,
 * the last row, accepts every peer.
 */
#ifndef RALLY_NET_TRANSPORT_H
#define RALLY_NET_TRANSPORT_H

#include "net/link.h"
#include "net/mesh.h"
#include "util/err.h"

struct rally__transport {
    const char *name;
    /* 1 when this transport can carry the link between o->rank and q. */
    int (*can_use)(const struct rally__mesh_opts *o, const struct rally__mesh_peer *q);
    /* Makes l the link to q from fd, the authenticated connection, which it
     * owns from here on (it closes fd on failure); connector is 1 on the end
     * that connected (the higher rank).  Fills l->t (and l->ops only when
     * it hands the link to another row): the mesh sets l->ops, l->peer and
     * l->what. */
    int (*setup)(const struct rally__mesh_opts *o, const struct rally__mesh_peer *q, int fd,
                 int connector, struct rally__link *l, struct rally__err *e);
    const struct rally__link_ops *ops;
};

extern const struct rally__transport rally__shm_transport; /* transports/shm.c */
extern const struct rally__transport rally__tcp_transport; /* transports/tcp.c */

/* Each direction's ring in a shared-memory link (a power of two).  Measured
 * at N = 4 on 2 cores, plain allreduce, 16 MiB: 256 KiB rings 11 ms, 1 MiB
 * 9-10 ms (a sender runs further ahead of a receiver that is not running). */
#define RALLY__SHM_RING_NBYTES ((size_t)1 << 20)

/* A TCP link over a connected stream socket fd (any family: tests use
 * socketpair()), owning fd from here on. */
void rally__tcp_link(struct rally__link *l, int fd, int peer);

/* Two ends of a shared-memory link within one process (for tests), with
 * rings of ring_nbytes (a power of two, at least 4096); the connection that
 * stands for liveness is a socketpair.  a is rank peer_b's link to peer_a. */
int rally__shm_pair(struct rally__link *a, int peer_a, struct rally__link *b, int peer_b,
                    size_t ring_nbytes, struct rally__err *e);

#endif
