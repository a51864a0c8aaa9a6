#include "net/mesh.h"

#include <stdio.h>
#include <unistd.h>

#include "net/sock.h"
#include "util/clock.h"

struct vet {
    struct rally__mesh_peer *peers;
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
        struct rally__mesh_peer *q = &v->peers[i];
        if (q->rank != p->rank || q->rank < v->rank)
            continue;
        if (q->fd >= 0)
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

int rally__mesh_connect(int listen_fd, const struct rally__secret *s, int rank,
                        uint32_t incarnation, struct rally__mesh_peer *peers, int npeers,
                        int64_t deadline, int64_t handshake_ms, struct rally__err *e)
{
    struct rally__ident me = {RALLY__ROLE_PEER, rank, incarnation};
    int waiting = 0;
    for (int i = 0; i < npeers; i++) {
        peers[i].fd = -1;
        waiting += peers[i].rank > rank;
    }
    for (int i = 0; i < npeers; i++) {
        struct rally__mesh_peer *q = &peers[i];
        if (q->rank > rank)
            continue;
        char what[64];
        snprintf(what, sizeof what, "rank %d", q->rank);
        int fd;
        struct rally__ident got;
        if (rally__tcp_connect(q->host, q->port, deadline, &fd, e) != RALLY_OK)
            goto fail;
        if (rally__auth_connect(fd, s, &me, q->rank, &got, deadline, what, e) != RALLY_OK) {
            close(fd);
            goto fail;
        }
        if (got.incarnation != q->incarnation) {
            close(fd);
            rally__fail(e, RALLY_EAUTH, "rank %d answered in incarnation %u, expected %u",
                        q->rank, got.incarnation, q->incarnation);
            goto fail;
        }
        q->fd = fd;
    }
    struct vet v = {peers, npeers, rank};
    while (waiting > 0) {
        int fd;
        char host[RALLY__HOST_MAX];
        if (rally__tcp_accept(listen_fd, deadline, &fd, host, sizeof host, e) != RALLY_OK) {
            if (e->code == RALLY_ETIMEDOUT) {
                char missing[128] = "";
                size_t n = 0;
                for (int i = 0; i < npeers && n < sizeof missing - 12; i++)
                    if (peers[i].rank > rank && peers[i].fd < 0)
                        n += (size_t)snprintf(missing + n, sizeof missing - n, " %d", peers[i].rank);
                rally__fail_over(e, RALLY_ETIMEDOUT,
                                 "rank %d: neighbours did not connect in time (missing ranks:%s)",
                                 rank, missing);
            }
            goto fail;
        }
        struct rally__ident p;
        struct rally__err he = {0, ""};
        int64_t hd = min64(deadline, rally__now_ms() + handshake_ms);
        if (rally__auth_accept(fd, s, &me, vet_peer, &v, &p, hd, host, &he) != RALLY_OK) {
            fprintf(stderr, "rally: rank %d refused a connection from %s: %s\n", rank, host, he.msg);
            close(fd);
            continue;
        }
        for (int i = 0; i < npeers; i++)
            if (peers[i].rank == p.rank)
                peers[i].fd = fd;
        waiting--;
    }
    return RALLY_OK;
fail:
    for (int i = 0; i < npeers; i++) {
        if (peers[i].fd >= 0)
            close(peers[i].fd);
        peers[i].fd = -1;
    }
    return e->code;
}
