/*
 * mesh_test.c — a worker wiring its links (src/net/mesh.c, cmocka) while strangers
 * hit its port (garbage bytes, a HELLO under the wrong secret, a silent
 * connection, a stale incarnation) still wires exactly its real neighbours,
 * with TCP links that carry bytes both ways; a connector whose peer
 * authenticates but answers in a stale incarnation fails (RALLY_EAUTH naming
 * both); idle strangers delay nobody; the watch ends a wiring.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "net/auth.h"
#include "net/link.h"
#include "net/mesh.h"
#include "net/sock.h"
#include "util/clock.h"

/* --- mesh with strangers ----------------------------------------------------- */

struct meshjob {
    char dir[32], secret_file[64]; /* the secret's temporary directory */
    struct rally__secret s;
    int port0;
    int listen0;
    int rc0, rc1;
    struct rally__err e0, e1;
    struct rally__mesh_peer p0[1], p1[1];
    struct rally__link l0[1], l1[1];
};

static struct rally__mesh_opts mesh_opts(struct meshjob *m, int listen_fd, int rank)
{
    return (struct rally__mesh_opts){listen_fd,
                                     &m->s,
                                     rank,
                                     2,
                                     1,
                                     "127.0.0.1",
                                     1,
                                     -1,
                                     rally__deadline(10000),
                                     300,
                                     RALLY__TRANSPORT_TCP,
                                     0,
                                     0,
                                     -1,
                                     NULL,
                                     NULL};
}

/* A job of two ranks: the secret in a temporary directory, rank 0's port
 * listening with the given backlog. */
static struct meshjob *meshjob_new(int backlog)
{
    struct meshjob *m = calloc(1, sizeof *m);
    struct rally__err e = {0, ""};
    assert_non_null(m);
    strcpy(m->dir, "/tmp/rally-net-test-XXXXXX");
    assert_non_null(mkdtemp(m->dir));
    snprintf(m->secret_file, sizeof m->secret_file, "%s/secret", m->dir);
    assert_int_equal(rally__secret_create(m->secret_file, &m->s, &e), RALLY_OK);
    assert_int_equal(rally__tcp_listen("127.0.0.1", 0, backlog, &m->listen0, &m->port0, &e),
                     RALLY_OK);
    return m;
}

static void meshjob_free(struct meshjob *m)
{
    close(m->listen0);
    unlink(m->secret_file);
    rmdir(m->dir);
    free(m);
}

static void *stranger_garbage(void *arg)
{
    struct meshjob *m = arg;
    int fd;
    struct rally__err e = {0, ""};
    if (rally__tcp_connect("127.0.0.1", m->port0, rally__deadline(2000), &fd, &e) == RALLY_OK) {
        const char junk[] = "GET / HTTP/1.0\r\n\r\n";
        rally__send_all(fd, junk, sizeof junk, rally__deadline(1000), "w", &e);
        char b[256];
        rally__recv_all(fd, b, sizeof b, rally__deadline(1000), "w", &e);
        close(fd);
    }
    return NULL;
}

static void *stranger_wrong_secret(void *arg)
{
    struct meshjob *m = arg;
    int fd;
    struct rally__err e = {0, ""};
    struct rally__secret bad = m->s;
    bad.key[0] ^= 1;
    struct rally__ident me = {RALLY__ROLE_PEER, 1, 1}, peer;
    if (rally__tcp_connect("127.0.0.1", m->port0, rally__deadline(2000), &fd, &e) == RALLY_OK) {
        int rc = rally__auth_connect(fd, &bad, &me, 0, &peer, rally__deadline(2000), "rank 0", &e);
        close(fd);
        if (rc != RALLY_EAUTH || strstr(e.msg, "does not know") == NULL)
            fprintf(stderr, "wrong secret: unexpected %d %s\n", rc, e.msg);
        m->rc1 = rc == RALLY_EAUTH ? 0 : -1; /* checked by the test */
    }
    return NULL;
}

static void *stranger_stale(void *arg)
{
    struct meshjob *m = arg;
    int fd;
    struct rally__err e = {0, ""};
    struct rally__ident me = {RALLY__ROLE_PEER, 1, 99}, peer; /* wrong incarnation */
    if (rally__tcp_connect("127.0.0.1", m->port0, rally__deadline(2000), &fd, &e) == RALLY_OK) {
        int rc = rally__auth_connect(fd, &m->s, &me, 0, &peer, rally__deadline(2000), "rank 0", &e);
        close(fd);
        if (rc == RALLY_OK || strstr(e.msg, "stale") == NULL)
            fprintf(stderr, "stale incarnation was not refused: %d %s\n", rc, e.msg);
        m->rc0 = rc == RALLY_OK ? -1 : 0;
    }
    return NULL;
}

static void *stranger_silent(void *arg)
{
    struct meshjob *m = arg;
    int fd;
    struct rally__err e = {0, ""};
    if (rally__tcp_connect("127.0.0.1", m->port0, rally__deadline(2000), &fd, &e) == RALLY_OK) {
        rally__sleep_ms(1500);
        close(fd);
    }
    return NULL;
}

static void *acceptor(void *arg)
{
    struct meshjob *m = arg;
    m->p0[0] = (struct rally__mesh_peer){1, "127.0.0.1", 0, 1};
    struct rally__mesh_opts o = mesh_opts(m, m->listen0, 0);
    m->rc0 = rally__mesh_connect(&o, m->p0, 1, m->l0, &m->e0);
    return NULL;
}

static void mesh_refuses_strangers(void **state)
{
    struct meshjob *m = meshjob_new(16);
    struct rally__err e = {0, ""};

    /* strangers first, one after another, while rank 0 is accepting */
    pthread_t acc, st;
    pthread_create(&acc, NULL, acceptor, m);
    int wrong = -2, stale = -2;
    pthread_create(&st, NULL, stranger_garbage, m);
    pthread_join(st, NULL);
    pthread_create(&st, NULL, stranger_silent, m);
    pthread_join(st, NULL);
    m->rc1 = -2;
    pthread_create(&st, NULL, stranger_wrong_secret, m);
    pthread_join(st, NULL);
    wrong = m->rc1;
    pthread_create(&st, NULL, stranger_stale, m);
    pthread_join(st, NULL);
    stale = m->rc0;

    /* then the real rank 1 */
    m->p1[0] = (struct rally__mesh_peer){0, "127.0.0.1", m->port0, 1};
    int lfd1, port1;
    assert_int_equal(rally__tcp_listen("127.0.0.1", 0, 16, &lfd1, &port1, &e), RALLY_OK);
    struct rally__mesh_opts o1 = mesh_opts(m, lfd1, 1);
    int rc1 = rally__mesh_connect(&o1, m->p1, 1, m->l1, &m->e1);
    pthread_join(acc, NULL);
    assert_int_equal(wrong, 0);
    assert_int_equal(stale, 0);
    assert_int_equal(rc1, RALLY_OK);
    assert_int_equal(m->rc0, RALLY_OK);
    /* each side has a TCP link to the other, and it works */
    assert_non_null(m->l0[0].ops);
    assert_non_null(m->l1[0].ops);
    assert_string_equal(m->l0[0].ops->name, "tcp");
    assert_int_equal(m->l0[0].peer, 1);
    assert_int_equal(m->l1[0].peer, 0);
    assert_string_equal(m->l1[0].what, "rank 0");
    assert_int_equal(rally__link_send(&m->l1[0], "x", 1, "yz", 2, &e), 3);
    struct rally__interest w = {&m->l0[0], RALLY__WANT_IN};
    int alarmed = -1;
    assert_int_equal(rally__link_wait(&w, 1, NULL, 0, 0, rally__deadline(1000), &alarmed, &e), 1);
    assert_int_equal(alarmed, 0);
    char c[3];
    assert_int_equal(rally__link_recv(&m->l0[0], c, 1, c + 1, 2, &e), 3);
    assert_memory_equal(c, "xyz", 3);
    rally__link_close(&m->l0[0]);
    rally__link_close(&m->l1[0]);
    rally__link_close(&m->l1[0]); /* a closed link is left alone */
    close(lfd1);
    meshjob_free(m);
}

/* Idle strangers on the port, then the real peer: handshakes run side by
 * side, so the peer is wired although no stranger ever speaks or is dropped
 * (handshake_ms far beyond the wiring's deadline). */
static void *acceptor_patient(void *arg)
{
    struct meshjob *m = arg;
    m->p0[0] = (struct rally__mesh_peer){1, "127.0.0.1", 0, 1};
    struct rally__mesh_opts o = mesh_opts(m, m->listen0, 0);
    o.handshake_ms = 600000;
    m->rc0 = rally__mesh_connect(&o, m->p0, 1, m->l0, &m->e0);
    return NULL;
}

static void mesh_idle_strangers_delay_nobody(void **state)
{
    (void)state;
    struct meshjob *m = meshjob_new(64);
    struct rally__err e = {0, ""};
    int idle[8];
    for (int i = 0; i < 8; i++) /* in the backlog before the wiring starts */
        assert_int_equal(
            rally__tcp_connect("127.0.0.1", m->port0, rally__deadline(2000), &idle[i], &e),
            RALLY_OK);
    pthread_t acc;
    pthread_create(&acc, NULL, acceptor_patient, m);
    m->p1[0] = (struct rally__mesh_peer){0, "127.0.0.1", m->port0, 1};
    int lfd1, port1;
    assert_int_equal(rally__tcp_listen("127.0.0.1", 0, 16, &lfd1, &port1, &e), RALLY_OK);
    struct rally__mesh_opts o1 = mesh_opts(m, lfd1, 1);
    int rc1 = rally__mesh_connect(&o1, m->p1, 1, m->l1, &m->e1);
    pthread_join(acc, NULL);
    if (m->rc0 != RALLY_OK)
        fprintf(stderr, "rank 0: %s\n", m->e0.msg);
    assert_int_equal(m->rc0, RALLY_OK);
    assert_int_equal(rc1, RALLY_OK);
    for (int i = 0; i < 8; i++)
        close(idle[i]);
    rally__link_close(&m->l0[0]);
    rally__link_close(&m->l1[0]);
    close(lfd1);
    meshjob_free(m);
}

/* The other direction: rank 1 connects to a rank 0 that knows the secret
 * but answers in a stale incarnation (a process of rank 0's previous life
 * still on the port).  Its proof is good, so only the connector's
 * incarnation check stands between rank 1 and a link to the wrong process:
 * the wiring fails with RALLY_EAUTH naming both incarnations. */
struct stale_acceptor {
    struct meshjob *m;
    int rc;
};

static void *acceptor_stale(void *arg)
{
    struct stale_acceptor *a = arg;
    struct rally__err e = {0, ""};
    struct rally__ident me = {RALLY__ROLE_PEER, 0, 6}, peer; /* rank 0 is in incarnation 7 */
    int fd = -1;
    a->rc = rally__tcp_accept(a->m->listen0, rally__deadline(5000), &fd, NULL, 0, &e);
    if (a->rc == RALLY_OK)
        a->rc = rally__auth_accept(fd, &a->m->s, &me, NULL, NULL, &peer, rally__deadline(5000),
                                   "rank 1", &e);
    if (fd >= 0)
        close(fd);
    return NULL;
}

static void mesh_refuses_stale_acceptor(void **state)
{
    (void)state;
    struct meshjob *m = meshjob_new(4);
    struct rally__err e = {0, ""};
    struct stale_acceptor a = {m, -1};
    pthread_t t;
    pthread_create(&t, NULL, acceptor_stale, &a);
    m->p1[0] = (struct rally__mesh_peer){0, "127.0.0.1", m->port0, 7};
    int lfd1, port1;
    assert_int_equal(rally__tcp_listen("127.0.0.1", 0, 4, &lfd1, &port1, &e), RALLY_OK);
    struct rally__mesh_opts o1 = mesh_opts(m, lfd1, 1);
    int rc1 = rally__mesh_connect(&o1, m->p1, 1, m->l1, &m->e1);
    pthread_join(t, NULL);
    assert_int_equal(a.rc, RALLY_OK); /* the stale rank 0 authenticated rank 1 */
    assert_int_equal(rc1, RALLY_EAUTH);
    const char *want = "rank 0 answered in incarnation 6, expected 7";
    if (strstr(m->e1.msg, want) == NULL)
        fail_msg("got \"%s\", want \"%s\"", m->e1.msg, want);
    assert_null(m->l1[0].ops);
    close(lfd1);
    meshjob_free(m);
}

/* The watched descriptor (the tracker line) becomes readable while a peer
 * is missing: the wiring ends at once with the watch's status instead of
 * waiting out its deadline. */
static int watch_says_reset(void *arg, struct rally__err *e)
{
    int *fd = arg;
    char c;
    if (read(*fd, &c, 1) != 1)
        return RALLY_OK;
    return rally__fail(e, RALLY_EPEER, "the tracker ordered recovery (test)");
}

static void mesh_watch_ends_wiring(void **state)
{
    (void)state;
    struct meshjob *m = calloc(1, sizeof *m);
    struct rally__err e = {0, ""};
    assert_int_equal(rally__tcp_listen("127.0.0.1", 0, 16, &m->listen0, &m->port0, &e), RALLY_OK);
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    m->p0[0] = (struct rally__mesh_peer){1, "127.0.0.1", 0, 1}; /* never comes */
    struct rally__mesh_opts o = mesh_opts(m, m->listen0, 0);
    o.deadline = rally__deadline(60000); /* ctest's timeout ends the test first */
    o.watch_fd = pfd[0];
    o.watch = watch_says_reset;
    o.watch_arg = &pfd[0];
    assert_int_equal(write(pfd[1], "r", 1), 1);
    int rc = rally__mesh_connect(&o, m->p0, 1, m->l0, &e);
    assert_int_equal(rc, RALLY_EPEER);
    assert_non_null(strstr(e.msg, "ordered recovery"));
    assert_null(m->l0[0].ops);
    close(pfd[0]);
    close(pfd[1]);
    close(m->listen0);
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mesh_refuses_strangers),
        cmocka_unit_test(mesh_refuses_stale_acceptor),
        cmocka_unit_test(mesh_idle_strangers_delay_nobody),
        cmocka_unit_test(mesh_watch_ends_wiring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
