/*
 * mesh.c — connects and authenticates a worker's links in one poll loop,
 * picking each one's transport from the table below.
 *
 * The loop holds the outgoing connections (struct out: connecting, then the
 * connector's handshake) and the accepted ones still authenticating (struct
 * pend), each with a small frame reader that takes exactly one frame's bytes
 * at a time, so nothing a transport's setup sends after WELCOME is eaten.
 * A connection that completes its handshake is handed to make_link(), whose
 * setup blocks briefly with the peer (both ends enter it together: the
 * acceptor as it sends WELCOME, the connector as it reads it; a setup only
 * ever waits for a higher rank to enter, so no cycle).
 */
#include "net/mesh.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/frame.h"
#include "net/sock.h"
#include "net/transport.h"
#include "util/clock.h"
#include "util/wire.h"

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
            return rally__fail(e, RALLY_EAUTH, "rank %d incarnation %u is stale (current: %u)",
                               (int)p->rank, p->incarnation, q->incarnation);
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

/* One handshake frame at a time: a header, then exactly its body. */
struct hs_in {
    unsigned char b[RALLY__FRAME_HDR + RALLY__AUTH_OUT_MAX];
    size_t got;
};

/* Reads what fd has of the current frame: 1 when it is whole (type, body,
 * nbytes; the caller then sets f->got = 0), 0 for more, -1 with e set. */
static int hs_feed(struct hs_in *f, int fd, const char *what, struct rally__err *e)
{
    for (;;) {
        size_t need = RALLY__FRAME_HDR;
        if (f->got >= RALLY__FRAME_HDR) {
            uint32_t n = rally__get_u32(f->b);
            if (n > RALLY__AUTH_OUT_MAX) {
                rally__fail(e, RALLY_EPROTO, "%s sent a %u-byte handshake frame", what, n);
                return -1;
            }
            need += n;
        }
        if (f->got >= RALLY__FRAME_HDR && f->got == need)
            return 1;
        long k = rally__recv_some(fd, f->b + f->got, need - f->got, what, e);
        if (k < 0)
            return -1;
        if (k == 0)
            return 0;
        f->got += (size_t)k;
    }
}

static uint16_t hs_type(const struct hs_in *f)
{
    return rally__get_u16(f->b + 4);
}

static size_t hs_nbytes(const struct hs_in *f)
{
    return rally__get_u32(f->b);
}

enum { O_CONNECTING, O_AUTH, O_DONE };

struct out { /* to a lower-ranked peer */
    int fd, state, i;
    struct rally__auth_cli c;
    struct hs_in in;
    char what[RALLY__HOST_MAX + 32]; /* "rank 3 at [fd00::3]:41234" */
};

struct pend { /* accepted, not yet authenticated */
    int fd;
    int64_t deadline;
    struct rally__auth_srv a;
    struct hs_in in;
    char host[RALLY__HOST_MAX];
};

struct wiring {
    struct pend pends[RALLY__MESH_PENDING_MAX];
    int nouts, npends;
    struct out *outs;   /* npeers */
    struct pollfd *pfd; /* 2 + npeers + RALLY__MESH_PENDING_MAX */
};

static void drop_pend(struct wiring *w, int j)
{
    if (w->pends[j].fd >= 0)
        close(w->pends[j].fd);
    w->pends[j] = w->pends[--w->npends];
}

/* Takes every connection waiting on the listening socket; when the table is
 * full the oldest pending one (a stranger, most likely) makes room. */
static int take_new(const struct rally__mesh_opts *o, struct wiring *w, struct rally__err *e)
{
    for (;;) {
        int fd;
        char host[RALLY__HOST_MAX];
        struct rally__err ae = {0, ""};
        if (rally__tcp_accept(o->listen_fd, 0, &fd, host, sizeof host, &ae) != RALLY_OK) {
            if (ae.code == RALLY_ETIMEDOUT)
                return RALLY_OK; /* nothing more waiting */
            return rally__fail(e, ae.code, "rank %d: %s", o->rank, ae.msg);
        }
        if (w->npends == RALLY__MESH_PENDING_MAX) {
            int oldest = 0;
            for (int j = 1; j < w->npends; j++)
                if (w->pends[j].deadline < w->pends[oldest].deadline)
                    oldest = j;
            drop_pend(w, oldest);
        }
        struct pend *p = &w->pends[w->npends++];
        struct rally__ident me = {RALLY__ROLE_PEER, o->rank, o->incarnation};
        p->fd = fd;
        p->deadline = rally__now_ms() + o->handshake_ms;
        p->in.got = 0;
        rally__auth_srv_init(&p->a, o->secret, &me);
        snprintf(p->host, sizeof p->host, "%s", host);
    }
}

/* Advances accepted connection j; 1 when it authenticated as an expected
 * peer (its fd is then *fd_out and peer index *i_out), 0 otherwise. */
static int step_pend(const struct rally__mesh_opts *o, struct wiring *w, int j, struct vet *v,
                     int *fd_out, int *i_out)
{
    struct pend *p = &w->pends[j];
    struct rally__err he = {0, ""};
    int k = hs_feed(&p->in, p->fd, p->host, &he);
    if (k < 0) {
        drop_pend(w, j);
        return 0;
    }
    if (k == 0)
        return 0;
    unsigned char out[RALLY__AUTH_OUT_MAX];
    uint16_t ot;
    size_t on;
    int rc = rally__auth_srv_step(&p->a, hs_type(&p->in), p->in.b + RALLY__FRAME_HDR,
                                  hs_nbytes(&p->in), &ot, out, &on, &he);
    p->in.got = 0;
    if (rc == 1 && vet_peer(&p->a.peer, v, &he) != RALLY_OK) {
        ot = RALLY__F_REFUSE;
        on = rally__auth_refusal(out, sizeof out, he.code, he.msg);
        rc = -1;
    }
    struct rally__err se = {0, ""};
    if (rally__frame_send(p->fd, ot, out, on, rally__now_ms() + o->handshake_ms, p->host, &se) !=
            RALLY_OK ||
        rc < 0) {
        if (rc < 0)
            fprintf(stderr, "rally: rank %d refused a connection from %s: %s\n", o->rank, p->host,
                    he.msg);
        drop_pend(w, j);
        return 0;
    }
    if (rc == 0)
        return 0;
    int i = 0;
    while (v->peers[i].rank != p->a.peer.rank) /* vet_peer found it */
        i++;
    *fd_out = p->fd;
    *i_out = i;
    p->fd = -1;
    drop_pend(w, j);
    return 1;
}

/* Advances outgoing connection x; RALLY_OK (still going, or linked: state
 * O_DONE) or the failure that ends the wiring. */
static int step_out(const struct rally__mesh_opts *o, const struct rally__mesh_peer *peers,
                    struct rally__link *links, struct out *x, struct rally__err *e)
{
    const struct rally__mesh_peer *q = &peers[x->i];
    unsigned char out[RALLY__AUTH_OUT_MAX];
    size_t on;
    int64_t hd = min64(o->deadline, rally__now_ms() + o->handshake_ms);
    if (x->state == O_CONNECTING) {
        if (rally__tcp_connect_done(x->fd, x->what, e) != RALLY_OK)
            return e->code;
        struct rally__ident me = {RALLY__ROLE_PEER, o->rank, o->incarnation};
        rally__auth_cli_init(&x->c, o->secret, &me, q->rank, out, &on);
        x->state = O_AUTH;
        return rally__frame_send(x->fd, RALLY__F_HELLO, out, on, hd, x->what, e);
    }
    int k = hs_feed(&x->in, x->fd, x->what, e);
    if (k <= 0)
        return k < 0 ? e->code : RALLY_OK;
    int rc = rally__auth_cli_step(&x->c, hs_type(&x->in), x->in.b + RALLY__FRAME_HDR,
                                  hs_nbytes(&x->in), out, &on, x->what, e);
    x->in.got = 0;
    if (rc < 0)
        return e->code;
    if (rc == 0)
        return rally__frame_send(x->fd, RALLY__F_PROOF, out, on, hd, x->what, e);
    if (x->c.peer.incarnation != q->incarnation)
        return rally__fail(e, RALLY_EAUTH, "rank %d answered in incarnation %u, expected %u",
                           q->rank, x->c.peer.incarnation, q->incarnation);
    int fd = x->fd;
    x->fd = -1;
    x->state = O_DONE;
    return make_link(o, q, fd, 1, &links[x->i], e);
}

static int missing(const struct rally__mesh_opts *o, const struct rally__mesh_peer *peers,
                   int npeers, const struct rally__link *links, struct rally__err *e)
{
    char miss[128] = "";
    size_t n = 0;
    for (int i = 0; i < npeers && n < sizeof miss - 12; i++)
        if (links[i].ops == NULL)
            n += (size_t)snprintf(miss + n, sizeof miss - n, " %d", peers[i].rank);
    return rally__fail(e, RALLY_ETIMEDOUT,
                       "rank %d: links to neighbours were not wired in time (missing ranks:%s)",
                       o->rank, miss);
}

static void wiring_free(struct wiring *w)
{
    if (w == NULL)
        return;
    for (int k = 0; w->outs != NULL && k < w->nouts; k++)
        if (w->outs[k].state != O_DONE && w->outs[k].fd >= 0)
            close(w->outs[k].fd);
    for (int j = w->npends - 1; j >= 0; j--)
        drop_pend(w, j);
    free(w->outs);
    free(w->pfd);
    free(w);
}

int rally__mesh_connect(const struct rally__mesh_opts *o, const struct rally__mesh_peer *peers,
                        int npeers, struct rally__link *links, struct rally__err *e)
{
    int rank = o->rank;
    for (int i = 0; i < npeers; i++)
        links[i].ops = NULL;
    struct wiring *w = calloc(1, sizeof *w);
    if (w != NULL) {
        w->outs = calloc((size_t)npeers + 1, sizeof *w->outs);
        w->pfd = calloc((size_t)npeers + 2 + RALLY__MESH_PENDING_MAX, sizeof *w->pfd);
    }
    if (w == NULL || w->outs == NULL || w->pfd == NULL) {
        rally__fail(e, RALLY_ENOMEM, "out of memory for wiring");
        goto fail;
    }
    struct vet v = {peers, links, npeers, rank};
    for (int i = 0; i < npeers; i++) {
        if (peers[i].rank > rank)
            continue;
        struct out *x = &w->outs[w->nouts++];
        int done;
        x->i = i;
        x->fd = -1;
        char hp[RALLY__HOST_MAX + 8];
        rally__hostport_fmt(peers[i].host, peers[i].port, hp, sizeof hp);
        snprintf(x->what, sizeof x->what, "rank %d at %s", peers[i].rank, hp);
        if (rally__tcp_connect_start(peers[i].host, peers[i].port, x->what, &x->fd, &done, e) !=
            RALLY_OK)
            goto fail;
        x->state = O_CONNECTING;
        if (done && step_out(o, peers, links, x, e) != RALLY_OK)
            goto fail;
    }
    for (;;) {
        int left = 0;
        for (int i = 0; i < npeers; i++)
            left += links[i].ops == NULL;
        if (left == 0)
            break;
        int64_t now = rally__now_ms();
        for (int j = w->npends - 1; j >= 0; j--)
            if (w->pends[j].deadline <= now)
                drop_pend(w, j); /* no handshake in time: a stranger, or a peer gone */
        if (now >= o->deadline) {
            missing(o, peers, npeers, links, e);
            goto fail;
        }
        int64_t until = o->deadline;
        int np = 0, iw = -1, il = -1, io = 0, ip;
        if (o->watch != NULL && o->watch_fd >= 0) {
            iw = np;
            w->pfd[np++] = (struct pollfd){.fd = o->watch_fd, .events = POLLIN};
        }
        il = np;
        w->pfd[np++] = (struct pollfd){.fd = o->listen_fd, .events = POLLIN};
        io = np;
        for (int k = 0; k < w->nouts; k++)
            w->pfd[np++] = (struct pollfd){
                .fd = w->outs[k].state == O_DONE ? -1 : w->outs[k].fd,
                .events = (short)(w->outs[k].state == O_CONNECTING ? POLLOUT : POLLIN)};
        ip = np;
        for (int j = 0; j < w->npends; j++) {
            w->pfd[np++] = (struct pollfd){.fd = w->pends[j].fd, .events = POLLIN};
            until = min64(until, w->pends[j].deadline);
        }
        int n = poll(w->pfd, (nfds_t)np, rally__ms_left(until));
        if (n < 0 && errno != EINTR) {
            rally__fail_errno(e, RALLY_ESYS, errno, "poll failed while wiring");
            goto fail;
        }
        if (n <= 0)
            continue;
        if (iw >= 0 && w->pfd[iw].revents) {
            struct rally__err we = {0, ""};
            int rc = o->watch(o->watch_arg, &we);
            if (rc != RALLY_OK) {
                rally__fail(e, rc, "%s", we.msg);
                goto fail;
            }
        }
        for (int k = 0; k < w->nouts; k++)
            if (w->pfd[io + k].revents && w->outs[k].state != O_DONE &&
                step_out(o, peers, links, &w->outs[k], e) != RALLY_OK)
                goto fail;
        /* pends move in the table as they leave: walk the poll entries by fd */
        int npolled = w->npends;
        for (int k = 0; k < npolled; k++) {
            if (!w->pfd[ip + k].revents)
                continue;
            int j = 0;
            while (j < w->npends && w->pends[j].fd != w->pfd[ip + k].fd)
                j++;
            int fd, i;
            if (j < w->npends && step_pend(o, w, j, &v, &fd, &i) &&
                make_link(o, &peers[i], fd, 0, &links[i], e) != RALLY_OK)
                goto fail;
        }
        if (w->pfd[il].revents && take_new(o, w, e) != RALLY_OK)
            goto fail;
    }
    wiring_free(w);
    return RALLY_OK;
fail:
    wiring_free(w);
    for (int i = 0; i < npeers; i++)
        rally__link_close(&links[i]);
    return e->code;
}
