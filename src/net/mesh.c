/*
 * mesh.c — connects and authenticates a worker's links, picking each one's
 * transport from the table below.
 */
#include "net/mesh.h"

#include <stdio.h>
#include <unistd.h>

#include "net/sock.h"
#include "net/transport.h"
#include "util/clock.h"

/* The transports, best first: a peer gets the first whose can_use() says
 * yes (transport.h).  TCP takes every peer. */
static const struct rally__transport *const transports[] = {
    &rally__shm_transport,
    &rally__tcp_transport,
};

struct vet {
    const struct rally__mesh_peer *peers;
    const struct rally__link *links;
    int npeers, rank;
};

/* Accepts only a higher-ranked neighbour that is not yet connected, in its
 * current incarnation. */
static int vet_peer(const struct rally__ident *p, void *arg, struct rally__err *e)
{
    struct vet *v = arg;
    if (p->role != RALLY__ROLE_PEER)
        return rally__fail(e, RALLY_EAUTH, "only peer workers may connect here");
    for (int i = 0; i < v->npeers; i++) {
        const struct rally__mesh_peer *q = &v->peers[i];
        if (q->rank != p->rank || q->rank < v->rank)
            continue;
        if (v->links[i].ops != NULL)
            return rally__fail(e, RALLY_EPROTO, "rank %d is already connected", (int)p->rank);
        if (q->incarnation != p->incarnation)
            return rally__fail(e, RALLY_EAUTH,
                               "rank %d incarnation %u is stale (current: %u)", (int)p->rank,
                               p->incarnation, q->incarnation);
        return RALLY_OK;
    }
    return rally__fail(e, RALLY_EAUTH, "rank %d is not a neighbour of rank %d that connects here",
                       (int)p->rank, v->rank);
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Turns the authenticated connection fd to q into link l over the first
 * transport that takes q; fd is consumed either way. */
static int make_link(const struct rally__mesh_opts *o, const struct rally__mesh_peer *q, int fd,
                     int connector, struct rally__link *l, struct rally__err *e)
{
    size_t i = 0;
    while (i + 1 < sizeof transports / sizeof transports[0] && !transports[i]->can_use(o, q))
        i++;
    const struct rally__transport *t = transports[i];
    l->spin_alone = 0;
    if (t->setup(o, q, fd, connector, l, e) != RALLY_OK)
        return e->code;
    if (l->ops == NULL) /* else setup handed the link to another row */
        l->ops = t->ops;
    l->peer = q->rank;
    snprintf(l->what, sizeof l->what, "rank %d", q->rank);
    return RALLY_OK;
}

int rally__mesh_connect(const struct rally__mesh_opts *o, const struct rally__mesh_peer *peers,
                        int npeers, struct rally__link *links, struct rally__err *e)
{
    int rank = o->rank;
    struct rally__ident me = {RALLY__ROLE_PEER, rank, o->incarnation};
    int waiting = 0;
    for (int i = 0; i < npeers; i++) {
        links[i].ops = NULL;
        waiting += peers[i].rank > rank;
    }
    for (int i = 0; i < npeers; i++) {
        const struct rally__mesh_peer *q = &peers[i];
        if (q->rank > rank)
            continue;
        char what[64];
        snprintf(what, sizeof what, "rank %d", q->rank);
        int fd;
        struct rally__ident got;
        if (rally__tcp_connect(q->host, q->port, o->deadline, &fd, e) != RALLY_OK)
            goto fail;
        if (rally__auth_connect(fd, o->secret, &me, q->rank, &got, o->deadline, what, e) !=
            RALLY_OK) {
            close(fd);
            goto fail;
        }
        if (got.incarnation != q->incarnation) {
            close(fd);
            rally__fail(e, RALLY_EAUTH, "rank %d answered in incarnation %u, expected %u",
                        q->rank, got.incarnation, q->incarnation);
            goto fail;
        }
        if (make_link(o, q, fd, 1, &links[i], e) != RALLY_OK)
            goto fail;
    }
    struct vet v = {peers, links, npeers, rank};
    while (waiting > 0) {
        int fd;
        char host[RALLY__HOST_MAX];
        if (rally__tcp_accept(o->listen_fd, o->deadline, &fd, host, sizeof host, e) != RALLY_OK) {
            if (e->code == RALLY_ETIMEDOUT) {
                char missing[128] = "";
                size_t n = 0;
                for (int i = 0; i < npeers && n < sizeof missing - 12; i++)
                    if (peers[i].rank > rank && links[i].ops == NULL)
                        n += (size_t)snprintf(missing + n, sizeof missing - n, " %d", peers[i].rank);
                rally__fail_over(e, RALLY_ETIMEDOUT,
                                 "rank %d: neighbours did not connect in time (missing ranks:%s)",
                                 rank, missing);
            }
            goto fail;
        }
        struct rally__ident p;
        struct rally__err he = {0, ""};
        int64_t hd = min64(o->deadline, rally__now_ms() + o->handshake_ms);
        if (rally__auth_accept(fd, o->secret, &me, vet_peer, &v, &p, hd, host, &he) != RALLY_OK) {
            fprintf(stderr, "rally: rank %d refused a connection from %s: %s\n", rank, host, he.msg);
            close(fd);
            continue;
        }
        int i = 0;
        while (peers[i].rank != p.rank) /* vet_peer found it */
            i++;
        if (make_link(o, &peers[i], fd, 0, &links[i], e) != RALLY_OK)
            goto fail;
        waiting--;
    }
    return RALLY_OK;
fail:
    for (int i = 0; i < npeers; i++)
        rally__link_close(&links[i]);
    return e->code;
}
