/*
 * tcp.c — the TCP link, on the sends and receives of net/io.c (sock.h),
 * and its row of the mesh's transport table (transport.h).
 */
#include <stdio.h>
#include <unistd.h>

#include "net/sock.h"
#include "net/transport.h"

static long tcp_send(struct rally__link *l, const void *a, size_t an, const void *b, size_t bn,
                     struct rally__err *e)
{
    return rally__send2_some(l->t.fd, a, an, b, bn, l->what, e);
}

static long tcp_recv(struct rally__link *l, void *a, size_t an, void *b, size_t bn,
                     struct rally__err *e)
{
    return rally__recv2_some(l->t.fd, a, an, b, bn, l->what, e);
}

static int tcp_handles(const struct rally__link *l, int want, struct rally__handle *h)
{
    h[0] = (struct rally__handle){l->t.fd, want};
    return 1;
}

static void tcp_close(struct rally__link *l)
{
    close(l->t.fd);
    l->t.fd = -1;
}

static const struct rally__link_ops tcp_ops = {
    .name = "tcp", .send = tcp_send, .recv = tcp_recv, .handles = tcp_handles, .close = tcp_close};

void rally__tcp_link(struct rally__link *l, int fd, int peer)
{
    l->ops = &tcp_ops;
    l->peer = peer;
    l->spin_alone = 0;
    snprintf(l->what, sizeof l->what, "rank %d", peer);
    l->t.fd = fd;
}

static int tcp_can_use(const struct rally__mesh_opts *o, const struct rally__mesh_peer *q)
{
    (void)o;
    (void)q;
    return 1;
}

/* The socket keeps being the link, with the job's buffer policy (sock.h). */
static int tcp_setup(const struct rally__mesh_opts *o, const struct rally__mesh_peer *q, int fd,
                     int connector, struct rally__link *l, struct rally__err *e)
{
    (void)q;
    (void)connector;
    int64_t bufs =
        rally__sock_buf_choice(o->sock_buf_bytes, o->world, o->one_host, rally__usable_cpus());
    if (bufs > 0 && rally__sock_bufs(fd, (int)bufs, e) != RALLY_OK) {
        close(fd);
        return e->code;
    }
    rally__sock_link_timeout(fd, o->link_timeout_ms);
    l->t.fd = fd;
    return RALLY_OK;
}

const struct rally__transport rally__tcp_transport = {"tcp", tcp_can_use, tcp_setup, &tcp_ops};
