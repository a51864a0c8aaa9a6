/*
 * shm_test.c — unit tests of the shared-memory link (net/shm.c) through the
 * link seam (cmocka).
 *
 * Two ends made in one process (rally__shm_pair, 4 KiB rings): bytes move
 * both ways in two pieces and split differently on the other side; a ring
 * wraps around without losing or reordering a byte; a send into a ring with
 * less room than asked moves what fits, a full ring and an empty one would
 * block; a waiting reader that is asleep is woken by the writer's bytes and
 * a waiting writer by the reader's, while nobody rings a doorbell when
 * nobody sleeps (nor for a reader that spins, yielding the core or not); a peer that closes is
 * RALLY_EPEER naming it, after the bytes it sent before are read, also for a reader already asleep;
 * a wait with nothing coming ends at its deadline; the mesh picks shm for a loopback peer under
 * rally_transport=shm and auto, TCP under tcp; and a set-up the other end refuses (or a stranger
 * with the wrong token) leaves the link on TCP under auto, the stream intact, and fails it under
 * shm; a same-user stranger connected to the acceptor's socket that never speaks neither delays the
 * real connector nor outlives the set-up, and with handshake_ms set it is dropped while the
 * acceptor still waits.
 */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "net/link.h"
#include "net/mesh.h"
#include "net/sock.h"
#include "net/transport.h"
#include "util/clock.h"

#define RING 4096

static void mkpair(struct rally__link *a, struct rally__link *b)
{
    struct rally__err e = {0, ""};
    assert_int_equal(rally__shm_pair(a, 1, b, 0, RING, &e), RALLY_OK);
    assert_string_equal(a->ops->name, "shm");
    assert_string_equal(a->what, "rank 1");
    assert_string_equal(b->what, "rank 0");
}

/* 1 when the doorbell of l (its first handle) has been rung. */
static int rung(const struct rally__link *l)
{
    struct rally__handle h[RALLY__LINK_HANDLES];
    assert_int_equal(l->ops->handles(l, RALLY__WANT_IN, h), 2);
    struct pollfd p = {.fd = h[0].fd, .events = POLLIN};
    return poll(&p, 1, 0) == 1;
}

static void two_pieces_and_wrap_around(void **state)
{
    (void)state;
    struct rally__link a, b;
    struct rally__err e = {0, ""};
    mkpair(&a, &b);

    assert_int_equal(rally__link_send(&a, "head", 4, "payload", 7, &e), 11);
    char h[6], p[5];
    assert_int_equal(rally__link_recv(&b, h, 6, p, 5, &e), 11);
    assert_memory_equal(h, "headpa", 6);
    assert_memory_equal(p, "yload", 5);
    /* the other way */
    assert_int_equal(rally__link_send(&b, "xy", 2, NULL, 0, &e), 2);
    assert_int_equal(rally__link_recv(&a, h, 1, p, 4, &e), 2);
    assert_memory_equal(h, "x", 1);
    assert_memory_equal(p, "y", 1);

    /* many odd-sized messages, so the ring wraps at every offset; each byte
     * is its position's pattern, read back in pieces of another size */
    static unsigned char out[3 * RING], in[3 * RING];
    for (size_t i = 0; i < sizeof out; i++)
        out[i] = (unsigned char)(i * 7 + i / 251);
    uint64_t sent = 11, got = 11;
    for (int round = 0; round < 200; round++) {
        size_t n = 1000 + (size_t)round * 37 % 3000; /* < RING */
        size_t cut = (size_t)round % 17;
        assert_int_equal(rally__link_send(&a, out, cut, out + cut, n - cut, &e), (long)n);
        sent += n;
        size_t have = 0;
        while (have < n) {
            size_t want = n - have < 333 ? n - have : 333;
            long k = rally__link_recv(&b, in + have, want / 2, in + have + want / 2,
                                      want - want / 2, &e);
            assert_int_equal(k, (long)want);
            have += (size_t)k;
        }
        got += n;
        assert_memory_equal(in, out, n);
    }
    assert_true(sent == got);
    assert_true(sent > 100 * RING); /* the counters went around many times */
    rally__link_close(&a);
    rally__link_close(&b);
    assert_null(a.ops);
}

static void partial_and_would_block(void **state)
{
    (void)state;
    struct rally__link a, b;
    struct rally__err e = {0, ""};
    mkpair(&a, &b);
    static unsigned char big[2 * RING], back[2 * RING];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (unsigned char)(i ^ (i >> 8));

    /* empty: would block; a wait for IN ends at its deadline, after spinning */
    char c;
    assert_int_equal(rally__link_recv(&b, &c, 1, NULL, 0, &e), 0);
    struct rally__interest wi = {&b, RALLY__WANT_IN};
    int alarmed = -1;
    int64_t t0 = rally__now_ms();
    assert_int_equal(rally__link_wait(&wi, 1, NULL, 100, 0, rally__deadline(50), &alarmed, &e), 0);
    assert_true(rally__now_ms() - t0 >= 40);
    assert_int_equal(alarmed, 0);

    /* more than fits: what fits moves (header and part of the payload) */
    assert_int_equal(rally__link_send(&a, big, 100, big + 100, sizeof big - 100, &e), RING);
    assert_int_equal(rally__link_send(&a, big, 1, NULL, 0, &e), 0); /* full */
    struct rally__interest wo = {&a, RALLY__WANT_OUT};
    assert_int_equal(rally__link_wait(&wo, 1, NULL, 0, 0, rally__deadline(30), &alarmed, &e), 0);
    /* a partial read frees room for exactly that many bytes */
    assert_int_equal(rally__link_recv(&b, back, 10, NULL, 0, &e), 10);
    assert_int_equal(rally__link_wait(&wo, 1, NULL, 0, 0, rally__deadline(5000), &alarmed, &e), 1);
    assert_int_equal(rally__link_send(&a, big + RING, 50, NULL, 0, &e), 10);
    /* and asking for more than is there gives what is there */
    assert_int_equal(rally__link_recv(&b, back + 10, sizeof back, NULL, 0, &e), RING);
    assert_memory_equal(back, big, RING + 10);
    assert_int_equal(rally__link_recv(&b, back, 1, NULL, 0, &e), 0);
    /* nothing asked, nothing moved */
    assert_int_equal(rally__link_send(&a, NULL, 0, NULL, 0, &e), 0);
    assert_int_equal(rally__link_recv(&b, NULL, 0, NULL, 0, &e), 0);
    rally__link_close(&a);
    rally__link_close(&b);
}

struct waiter {
    struct rally__link *l;
    int want;
    int64_t spin_us;
    int rc, alarmed;
    int64_t waited_ms;
    struct rally__err e;
};

static void *wait_main(void *arg)
{
    struct waiter *w = arg;
    struct rally__interest i = {w->l, w->want};
    int64_t t0 = rally__now_ms();
    w->e = (struct rally__err){0, ""};
    w->rc =
        rally__link_wait(&i, 1, NULL, w->spin_us, 0, rally__deadline(10000), &w->alarmed, &w->e);
    w->waited_ms = rally__now_ms() - t0;
    return NULL;
}

static void sleeping_reader_and_writer_are_woken(void **state)
{
    (void)state;
    struct rally__link a, b;
    struct rally__err e = {0, ""};
    mkpair(&a, &b);

    /* nobody asleep: bytes move and no doorbell rings */
    for (int i = 0; i < 100; i++) {
        char c = (char)i, d;
        assert_int_equal(rally__link_send(&a, &c, 1, NULL, 0, &e), 1);
        assert_int_equal(rally__link_recv(&b, &d, 1, NULL, 0, &e), 1);
        assert_int_equal(d, c);
    }
    assert_false(rung(&a));
    assert_false(rung(&b));

    /* a reader that blocked (no spin) wakes when the writer's byte lands */
    struct waiter w = {&b, RALLY__WANT_IN, 0, -2, -1, 0, {0, ""}};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, wait_main, &w), 0);
    rally__sleep_ms(150);
    assert_int_equal(rally__link_send(&a, "!", 1, NULL, 0, &e), 1);
    pthread_join(t, NULL);
    assert_int_equal(w.rc, 1);
    assert_int_equal(w.alarmed, 0);
    assert_true(w.waited_ms >= 100 && w.waited_ms < 5000);
    char c;
    assert_int_equal(rally__link_recv(&b, &c, 1, NULL, 0, &e), 1);
    assert_int_equal(c, '!');
    assert_false(rung(&b)); /* the wake-up was drained */

    /* a writer that blocked on a full ring wakes when the reader frees room */
    static unsigned char big[RING];
    assert_int_equal(rally__link_send(&a, big, sizeof big, NULL, 0, &e), RING);
    w = (struct waiter){&a, RALLY__WANT_OUT, 0, -2, -1, 0, {0, ""}};
    assert_int_equal(pthread_create(&t, NULL, wait_main, &w), 0);
    rally__sleep_ms(150);
    assert_int_equal(rally__link_recv(&b, big, 100, NULL, 0, &e), 100);
    pthread_join(t, NULL);
    assert_int_equal(w.rc, 1);
    assert_true(w.waited_ms >= 100 && w.waited_ms < 5000);
    assert_int_equal(rally__link_send(&a, big, sizeof big, NULL, 0, &e), 100);

    /* a reader that spins first also sees bytes that come while it spins */
    assert_int_equal(rally__link_recv(&b, big, sizeof big, NULL, 0, &e), RING);
    w = (struct waiter){&b, RALLY__WANT_IN, 200000, -2, -1, 0, {0, ""}};
    assert_int_equal(pthread_create(&t, NULL, wait_main, &w), 0);
    rally__sleep_ms(20);
    assert_int_equal(rally__link_send(&a, "?", 1, NULL, 0, &e), 1);
    pthread_join(t, NULL);
    assert_int_equal(w.rc, 1);
    assert_true(w.waited_ms < 5000);
    assert_false(rung(&b)); /* it never slept: nobody rang */
    assert_int_equal(rally__link_recv(&b, &c, 1, NULL, 0, &e), 1);

    /* the same for a link whose waits spin without yielding the core */
    b.spin_alone = 1;
    w = (struct waiter){&b, RALLY__WANT_IN, 200000, -2, -1, 0, {0, ""}};
    assert_int_equal(pthread_create(&t, NULL, wait_main, &w), 0);
    rally__sleep_ms(20);
    assert_int_equal(rally__link_send(&a, "?", 1, NULL, 0, &e), 1);
    pthread_join(t, NULL);
    assert_int_equal(w.rc, 1);
    assert_true(w.waited_ms < 5000);
    assert_false(rung(&b));
    assert_int_equal(rally__link_recv(&b, &c, 1, NULL, 0, &e), 1);
    /* ... and which, with nothing coming, stop spinning and block to the deadline */
    struct rally__interest wi = {&b, RALLY__WANT_IN};
    int64_t t0 = rally__now_ms();
    assert_int_equal(rally__link_wait(&wi, 1, NULL, 2000, 0, rally__deadline(60), &w.alarmed, &e),
                     0);
    assert_true(rally__now_ms() - t0 >= 50);
    rally__link_close(&a);
    rally__link_close(&b);
}

static void peer_death(void **state)
{
    (void)state;
    struct rally__link a, b;
    struct rally__err e = {0, ""};
    int alarmed;
    mkpair(&a, &b);

    /* bytes sent before the close are read first, then the peer is gone */
    assert_int_equal(rally__link_send(&b, "bye", 3, NULL, 0, &e), 3);
    rally__link_close(&b);
    char h[3];
    assert_int_equal(rally__link_recv(&a, h, 3, NULL, 0, &e), 3);
    assert_memory_equal(h, "bye", 3);
    assert_int_equal(rally__link_recv(&a, h, 1, NULL, 0, &e), 0); /* not seen yet */
    struct rally__interest w = {&a, RALLY__WANT_IN};
    int64_t t0 = rally__now_ms();
    assert_int_equal(rally__link_wait(&w, 1, NULL, 50, 0, rally__deadline(5000), &alarmed, &e), 1);
    assert_true(rally__now_ms() - t0 < 4000);
    assert_int_equal(rally__link_recv(&a, h, 1, NULL, 0, &e), -1);
    assert_int_equal(e.code, RALLY_EPEER);
    assert_non_null(strstr(e.msg, "rank 1"));
    struct rally__err e2 = {0, ""};
    assert_int_equal(rally__link_send(&a, "x", 1, NULL, 0, &e2), -1);
    assert_int_equal(e2.code, RALLY_EPEER);
    assert_non_null(strstr(e2.msg, "rank 1"));
    rally__link_close(&a);

    /* a reader already asleep wakes when its peer goes, and fails */
    mkpair(&a, &b);
    struct waiter wt = {&b, RALLY__WANT_IN, 0, -2, -1, 0, {0, ""}};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, wait_main, &wt), 0);
    rally__sleep_ms(150);
    rally__link_close(&a);
    pthread_join(t, NULL);
    assert_int_equal(wt.rc, 1);
    assert_true(wt.waited_ms < 5000);
    struct rally__err e3 = {0, ""};
    assert_int_equal(rally__link_recv(&b, h, 1, NULL, 0, &e3), -1);
    assert_int_equal(e3.code, RALLY_EPEER);
    assert_non_null(strstr(e3.msg, "rank 0"));
    rally__link_close(&b);
}

/* --- the mesh's choice ------------------------------------------------------------ */

struct side {
    struct rally__mesh_opts o;
    struct rally__mesh_peer q;
    struct rally__link l;
    struct rally__err e;
    int rc;
};

static void *side_main(void *arg)
{
    struct side *s = arg;
    s->e = (struct rally__err){0, ""};
    s->rc = rally__mesh_connect(&s->o, &s->q, 1, &s->l, &s->e);
    return NULL;
}

/* Wires rank 1 to rank 0 over loopback with the given setting; returns the
 * transport's name both ends agree on. */
static const char *wire_with(int transport)
{
    static char name[8];
    struct rally__err e = {0, ""};
    char dir[] = "/tmp/rally-shm-test-XXXXXX", sf[64];
    assert_non_null(mkdtemp(dir));
    snprintf(sf, sizeof sf, "%s/secret", dir);
    struct rally__secret secret;
    assert_int_equal(rally__secret_create(sf, &secret, &e), RALLY_OK);
    struct side s[2];
    int port[2];
    for (int r = 0; r < 2; r++) {
        memset(&s[r], 0, sizeof s[r]);
        assert_int_equal(rally__tcp_listen("127.0.0.1", 0, 4, &s[r].o.listen_fd, &port[r], &e),
                         RALLY_OK);
        s[r].o.secret = &secret;
        s[r].o.rank = r;
        s[r].o.world = 2;
        s[r].o.incarnation = 1;
        s[r].o.host = "127.0.0.1";
        s[r].o.one_host = 1;
        s[r].o.sock_buf_bytes = -1;
        s[r].o.deadline = rally__deadline(10000);
        s[r].o.handshake_ms = 5000;
        s[r].o.transport = transport;
    }
    s[0].q = (struct rally__mesh_peer){1, "127.0.0.1", port[1], 1};
    s[1].q = (struct rally__mesh_peer){0, "127.0.0.1", port[0], 1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, side_main, &s[0]), 0);
    side_main(&s[1]);
    pthread_join(t, NULL);
    if (s[0].rc != RALLY_OK || s[1].rc != RALLY_OK)
        fail_msg("wiring failed: %s / %s", s[0].e.msg, s[1].e.msg);
    assert_string_equal(s[0].l.ops->name, s[1].l.ops->name);
    snprintf(name, sizeof name, "%s", s[0].l.ops->name);
    /* and the link works both ways */
    char c;
    assert_int_equal(rally__link_send(&s[1].l, "a", 1, NULL, 0, &e), 1);
    struct rally__interest w = {&s[0].l, RALLY__WANT_IN};
    int alarmed;
    assert_int_equal(rally__link_wait(&w, 1, NULL, 50, 0, rally__deadline(5000), &alarmed, &e), 1);
    assert_int_equal(rally__link_recv(&s[0].l, &c, 1, NULL, 0, &e), 1);
    assert_int_equal(c, 'a');
    for (int r = 0; r < 2; r++) {
        rally__link_close(&s[r].l);
        close(s[r].o.listen_fd);
    }
    unlink(sf);
    rmdir(dir);
    return name;
}

static void mesh_picks_the_transport(void **state)
{
    (void)state;
    assert_string_equal(wire_with(RALLY__TRANSPORT_SHM), "shm");
    assert_string_equal(wire_with(RALLY__TRANSPORT_AUTO), "shm");
    assert_string_equal(wire_with(RALLY__TRANSPORT_TCP), "tcp");
}

/* --- set-up refused: auto stays on TCP, shm fails ------------------------------------ */

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

struct fake {
    int fd;       /* its end of the connection */
    int role;     /* 0: a fake acceptor, 1: a fake connector */
    int stranger; /* fake connector: present a wrong token to the acceptor's socket */
    unsigned char got[64];
    int ok;
};

/* The other end of a set-up, playing by the messages of docs/protocol.md
 * but refusing (or, as a stranger, offering a wrong token); then it says
 * "hi" over the connection, which must arrive as the stream's first bytes. */
static void *fake_main(void *arg)
{
    struct fake *f = arg;
    struct rally__err e = {0, ""};
    unsigned char m[64] = {0};
    int64_t d = rally__deadline(5000);
    f->ok = 0;
    if (f->role == 0) { /* an offer naming a socket nobody listens on */
        put32(m, 0x5253484d);
        m[4] = 1;
        m[5] = 12;
        memcpy(m + 25, "rally-nobody", 11); /* m[24] = 0: abstract */
        if (rally__send_all(f->fd, m, 64, d, "t", &e) != RALLY_OK ||
            rally__recv_all(f->fd, f->got, 8, d, "t", &e) != RALLY_OK)
            return NULL;
    } else {
        if (rally__recv_all(f->fd, f->got, 64, d, "t", &e) != RALLY_OK)
            return NULL;
        if (f->stranger) { /* knock with a wrong token, then claim to have sent */
            struct sockaddr_un a = {.sun_family = AF_UNIX};
            size_t n = f->got[5];
            memcpy(a.sun_path, f->got + 24, n);
            int u = socket(AF_UNIX, SOCK_STREAM, 0);
            if (u < 0 || connect(u, (struct sockaddr *)&a,
                                 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)) != 0)
                return NULL;
            unsigned char bad[16] = {0};
            if (write(u, bad, sizeof bad) != (ssize_t)sizeof bad)
                return NULL;
            close(u);
        }
        memset(m, 0, 8);
        put32(m, 0x5253484d);
        m[4] = (unsigned char)f->stranger;
        if (rally__send_all(f->fd, m, 8, d, "t", &e) != RALLY_OK)
            return NULL;
        if (f->stranger && rally__recv_all(f->fd, m, 8, d, "t", &e) != RALLY_OK)
            return NULL;
    }
    f->ok = rally__send_all(f->fd, "hi", 2, d, "t", &e) == RALLY_OK;
    return NULL;
}

/* Runs our end's set-up against a fake other end; returns its status and
 * leaves the link in l. */
static int setup_against(int transport, int role, int stranger, struct rally__link *l,
                         struct fake *f, struct rally__err *e)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    struct rally__mesh_opts o;
    memset(&o, 0, sizeof o);
    o.rank = role == 0 ? 1 : 0;
    o.world = 2;
    o.host = "127.0.0.1";
    o.one_host = 1;
    o.deadline = rally__deadline(stranger ? 700 : 5000);
    o.transport = transport;
    struct rally__mesh_peer q = {role == 0 ? 0 : 1, "127.0.0.1", 0, 1};
    *f = (struct fake){.fd = sv[1], .role = role, .stranger = stranger};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fake_main, f), 0);
    memset(l, 0, sizeof *l);
    assert_true(rally__shm_transport.can_use(&o, &q));
    int rc = rally__shm_transport.setup(&o, &q, sv[0], role == 0, l, e);
    if (rc == RALLY_OK && l->ops == NULL)
        l->ops = rally__shm_transport.ops; /* what the mesh does */
    if (rc == RALLY_OK)
        snprintf(l->what, sizeof l->what, "rank %d", q.rank);
    pthread_join(t, NULL);
    close(sv[1]);
    return rc;
}

static void refused_setup(void **state)
{
    (void)state;
    struct rally__link l;
    struct fake f;
    for (int role = 0; role < 2; role++) {
        /* auto: both ends saw the refusal; the connection carries the stream */
        struct rally__err e = {0, ""};
        assert_int_equal(setup_against(RALLY__TRANSPORT_AUTO, role, 0, &l, &f, &e), RALLY_OK);
        assert_string_equal(l.ops->name, "tcp");
        assert_true(f.ok);
        if (role == 0)
            assert_int_equal(f.got[4], 0); /* our REPLY refused */
        char c[2];
        struct rally__interest w = {&l, RALLY__WANT_IN};
        int alarmed;
        assert_int_equal(rally__link_wait(&w, 1, NULL, 0, 0, rally__deadline(5000), &alarmed, &e),
                         1);
        assert_int_equal(rally__link_recv(&l, c, 2, NULL, 0, &e), 2);
        assert_memory_equal(c, "hi", 2);
        rally__link_close(&l);
        /* shm: the same refusal fails the link, saying why */
        e = (struct rally__err){0, ""};
        assert_int_not_equal(setup_against(RALLY__TRANSPORT_SHM, role, 0, &l, &f, &e), RALLY_OK);
        assert_non_null(strstr(e.msg, "rally_transport=shm"));
    }
    /* a stranger's connection to the acceptor's socket (a wrong token, no
     * segment) is not taken: the acceptor waits on for the real one, to the
     * deadline, then refuses (ACK 0) and the stream is intact */
    struct rally__err e = {0, ""};
    int64_t t0 = rally__now_ms();
    assert_int_equal(setup_against(RALLY__TRANSPORT_AUTO, 1, 1, &l, &f, &e), RALLY_OK);
    assert_true(rally__now_ms() - t0 >= 600);
    assert_string_equal(l.ops->name, "tcp");
    assert_true(f.ok);
    char c[2];
    struct rally__interest w = {&l, RALLY__WANT_IN};
    int alarmed;
    assert_int_equal(rally__link_wait(&w, 1, NULL, 0, 0, rally__deadline(5000), &alarmed, &e), 1);
    assert_int_equal(rally__link_recv(&l, c, 2, NULL, 0, &e), 2);
    assert_memory_equal(c, "hi", 2);
    rally__link_close(&l);
}

/* --- a same-user stranger idling on the acceptor's socket ---------------------------- */

struct end {
    int fd, connector;
    int64_t handshake_ms;
    struct rally__link l;
    struct rally__err e;
    int rc;
};

static void *end_main(void *arg)
{
    struct end *x = arg;
    struct rally__mesh_opts o;
    memset(&o, 0, sizeof o);
    o.rank = x->connector;
    o.world = 2;
    o.host = "127.0.0.1";
    o.one_host = 1;
    o.deadline = rally__deadline(10000);
    o.handshake_ms = x->handshake_ms;
    o.transport = RALLY__TRANSPORT_SHM; /* a set-up that fails says so */
    struct rally__mesh_peer q = {1 - x->connector, "127.0.0.1", 0, 1};
    memset(&x->l, 0, sizeof x->l);
    x->e = (struct rally__err){0, ""};
    x->rc = rally__shm_transport.setup(&o, &q, x->fd, x->connector, &x->l, &x->e);
    if (x->rc == RALLY_OK && x->l.ops == NULL)
        x->l.ops = rally__shm_transport.ops;
    return NULL;
}

/* Moves n bytes from fd a to fd b (the test relays the set-up); 0 or -1. */
static int relay(int a, int b, size_t n, unsigned char *m)
{
    struct rally__err e = {0, ""};
    return rally__recv_all(a, m, n, rally__deadline(20000), "t", &e) == RALLY_OK &&
                   rally__send_all(b, m, n, rally__deadline(20000), "t", &e) == RALLY_OK
               ? 0
               : -1;
}

/* The test's part between the acceptor (its end of the set-up: fd a) and
 * the connector (fd b), with the stranger u connected to the acceptor's
 * socket; NULL, or what went wrong. */
static const char *drive(int a, int b, int64_t handshake_ms, int *u)
{
    struct rally__err e = {0, ""};
    unsigned char offer[64], m[8] = {0};
    if (rally__recv_all(a, offer, 64, rally__deadline(20000), "t", &e) != RALLY_OK || offer[4] != 1)
        return "the acceptor sent no offer";
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = offer[5];
    memcpy(sa.sun_path, offer + 24, n);
    *u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (*u < 0 || connect(*u, (struct sockaddr *)&sa,
                          (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)))
        return "the stranger could not connect to the acceptor's socket";
    if (handshake_ms == 0) {
        if (rally__send_all(b, offer, 64, rally__deadline(20000), "t", &e) != RALLY_OK ||
            relay(b, a, 8, m) != 0)
            return "relaying the offer and the reply failed";
    } else {
        /* the acceptor hears "sent" first, so it accepts the stranger while
         * the connector has not yet heard the name */
        put32(m, 0x5253484d);
        m[4] = 1;
        struct pollfd pu = {.fd = *u, .events = POLLIN};
        if (rally__send_all(a, m, 8, rally__deadline(20000), "t", &e) != RALLY_OK)
            return "the acceptor took no reply";
        if (poll(&pu, 1, 20000) != 1)
            return "the acceptor never dropped the idle stranger";
        if (rally__send_all(b, offer, 64, rally__deadline(20000), "t", &e) != RALLY_OK ||
            rally__recv_all(b, m, 8, rally__deadline(20000), "t", &e) != RALLY_OK || m[4] != 1)
            return "the connector did not hand its segment over";
    }
    if (relay(a, b, 8, m) != 0)
        return "the acceptor sent no confirmation";
    return NULL;
}

/* The real ends set up a link through the test, which reads the acceptor's
 * OFFER first and, before the connector hears of the name, connects a
 * stranger to the acceptor's socket that never says a word (any process of
 * the same user can find the name), so the acceptor accepts the stranger
 * first.  With handshake_ms 0 the stranger stays connected throughout: the
 * acceptor must take the real connection beside it.  With handshake_ms 100
 * the test tells the acceptor the segment is coming, waits until the
 * acceptor has closed the stranger, and only then lets the connector in.
 * Either way the link is shared memory, and the stranger sees its
 * connection closed. */
static void idle_stranger(int64_t handshake_ms)
{
    int a[2], b[2], u = -1;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b), 0);
    struct end acc = {.fd = a[0], .connector = 0, .handshake_ms = handshake_ms};
    struct end con = {.fd = b[0], .connector = 1, .handshake_ms = handshake_ms};
    pthread_t ta, tc;
    assert_int_equal(pthread_create(&ta, NULL, end_main, &acc), 0);
    assert_int_equal(pthread_create(&tc, NULL, end_main, &con), 0);
    const char *why = drive(a[1], b[1], handshake_ms, &u);
    if (why != NULL) { /* end both set-ups before failing */
        shutdown(a[1], SHUT_RDWR);
        shutdown(b[1], SHUT_RDWR);
    }
    pthread_join(ta, NULL);
    pthread_join(tc, NULL);
    if (why != NULL || acc.rc != RALLY_OK || con.rc != RALLY_OK)
        fail_msg("set-up beside an idle stranger: %s; acceptor \"%s\", connector \"%s\"",
                 why ? why : "failed", acc.e.msg, con.e.msg);
    assert_string_equal(acc.l.ops->name, "shm");
    assert_string_equal(con.l.ops->name, "shm");
    char c;
    struct pollfd pu = {.fd = u, .events = POLLIN};
    assert_int_equal(poll(&pu, 1, 20000), 1); /* the acceptor holds no stranger afterwards */
    assert_int_equal(read(u, &c, 1), 0);
    close(u);
    /* the link carries bytes */
    struct rally__err e = {0, ""};
    assert_int_equal(rally__link_send(&con.l, "z", 1, NULL, 0, &e), 1);
    struct rally__interest w = {&acc.l, RALLY__WANT_IN};
    int alarmed;
    assert_int_equal(rally__link_wait(&w, 1, NULL, 50, 0, rally__deadline(5000), &alarmed, &e), 1);
    assert_int_equal(rally__link_recv(&acc.l, &c, 1, NULL, 0, &e), 1);
    assert_int_equal(c, 'z');
    rally__link_close(&acc.l);
    rally__link_close(&con.l);
    close(a[1]);
    close(b[1]);
}

static void idle_stranger_delays_nobody(void **state)
{
    (void)state;
    idle_stranger(0);
}

static void idle_stranger_is_dropped(void **state)
{
    (void)state;
    idle_stranger(100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_pieces_and_wrap_around),
        cmocka_unit_test(partial_and_would_block),
        cmocka_unit_test(sleeping_reader_and_writer_are_woken),
        cmocka_unit_test(peer_death),
        cmocka_unit_test(mesh_picks_the_transport),
        cmocka_unit_test(refused_setup),
        cmocka_unit_test(idle_stranger_delays_nobody),
        cmocka_unit_test(idle_stranger_is_dropped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
