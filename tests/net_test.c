/*
 * net_test.c — unit tests of util, net and coll/topo (cmocka).
 *
 * Settings: defaults, environment, arguments, unknown keys, sizes.
 * Addresses: host:port forms, IPv6 with brackets, bad forms and their errors;
 * rally_interface's choice of a worker's address; an unreachable peer named
 * with the address tried; a peer with no route to it (in a network
 * namespace of the test's own) is a lost peer (RALLY_EPEER), not fatal.
 * Frames: a good frame, an oversized one, unknown flags, a truncated one.
 * Mesh: a worker wiring its links while strangers hit its port (garbage
 * bytes, a HELLO under the wrong secret, a silent connection, a stale
 * incarnation) still wires exactly its real neighbours, with TCP links
 * that carry bytes both ways; a connector whose peer authenticates but
 * answers in a stale incarnation fails (RALLY_EAUTH naming both).
 * Topology: for N = 1..70 the pre-order tree and ring invariants.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/place.h"
#include "coll/topo.h"
#include "net/auth.h"
#include "net/frame.h"
#include "net/link.h"
#include "net/mesh.h"
#include "net/sock.h"
#include "util/clock.h"
#include "util/config.h"

static void config_layers(void **state)
{
    struct rally__config c;
    struct rally__err e = {0, ""};
    setenv("RALLY_TIMEOUT_MS", "1234", 1);
    setenv("RALLY_CHUNK_BYTES", "64K", 1);
    char *args[] = {"prog", "a", "rally_chunk_bytes=1M", "b", NULL};
    int argc = 4;
    char **argv = args;
    assert_int_equal(rally__config_load(&c, &argc, &argv, &e), RALLY_OK);
    assert_int_equal(c.timeout_ms, 1234);     /* env over default */
    assert_int_equal(c.chunk_bytes, 1 << 20); /* argument over env */
    assert_int_equal(c.ring_threshold_bytes, 256 << 10);
    assert_int_equal(c.sock_buf_bytes, -1); /* "auto" */
    assert_int_equal(argc, 3);
    assert_string_equal(argv[1], "a");
    assert_string_equal(argv[2], "b");
    assert_null(argv[3]);
    /* rally__config_get writes each value as it is spelled (the manifest's
     * settings): a word-valued key as its word, not its index */
    char key[64], val[256];
    int seen = 0;
    for (size_t i = 0; rally__config_get(&c, i, key, sizeof key, val, sizeof val); i++) {
        if (strcmp(key, "rally_transport") == 0)
            assert_string_equal(val, "auto"), seen++;
        if (strcmp(key, "rally_timeout_ms") == 0)
            assert_string_equal(val, "1234"), seen++;
    }
    assert_int_equal(seen, 2);
    unsetenv("RALLY_TIMEOUT_MS");
    unsetenv("RALLY_CHUNK_BYTES");
}

static void config_errors(void **state)
{
    struct rally__config c;
    const char *bad[] = {"rally_chunk_bytes=lots", "rally_timeout_ms=-5", "rally_tracker_uri=x",
                         "rally_timeout_ms=12x", "rally_chunk_bytes=auto"};
    const char *want[] = {"not a size", "out of range", "not a known", "not an integer",
                          "not a size"};
    for (int i = 0; i < 5; i++) {
        struct rally__err e = {0, ""};
        char *args[] = {"prog", (char *)bad[i], NULL};
        int argc = 2;
        char **argv = args;
        assert_int_equal(rally__config_load(&c, &argc, &argv, &e), RALLY_ECONFIG);
        assert_non_null(strstr(e.msg, want[i]));
    }
    int64_t v;
    assert_int_equal(rally__parse_size("2G", &v), 0);
    assert_int_equal(v, 2LL << 30);
    assert_int_equal(rally__parse_size("", &v), -1);
}

static void hostport_forms(void **state)
{
    char h[64];
    int p;
    struct rally__err e = {0, ""};
    assert_int_equal(rally__hostport_split("127.0.0.1:9000", h, sizeof h, &p, &e), RALLY_OK);
    assert_string_equal(h, "127.0.0.1");
    assert_int_equal(p, 9000);
    assert_int_equal(rally__hostport_split("[::1]:0", h, sizeof h, &p, &e), RALLY_OK);
    assert_string_equal(h, "::1");
    assert_int_equal(p, 0);
    assert_int_equal(rally__hostport_split("[fd00::3]:41234", h, sizeof h, &p, &e), RALLY_OK);
    assert_string_equal(h, "fd00::3");
    assert_int_equal(p, 41234);
    assert_int_equal(rally__hostport_split("[fe80::1%lo]:9", h, sizeof h, &p, &e), RALLY_OK);
    assert_string_equal(h, "fe80::1%lo");
    assert_int_equal(rally__hostport_split("node-a:1", h, sizeof h, &p, &e), RALLY_OK);
    assert_string_equal(h, "node-a");
    /* each bad form, and the words its error must carry */
    const struct {
        const char *s, *want;
    } bad[] = {{"nocolon", "not host:port"},
               {"[::1]80", "not [host]:port"},
               {"host:", "no valid port"},
               {"host:70000", "no valid port"},
               {"host:12ab", "no valid port"},
               {"fd00::3:9000", "in brackets: [fd00::3]:9000"},
               {"::1:9000", "in brackets: [::1]:9000"},
               {"[]:80", "no host"},
               {":80", "no host"},
               {"[::1", "not [host]:port"},
               {"[::1]", "not [host]:port"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rally__err_clear(&e);
        assert_int_equal(rally__hostport_split(bad[i].s, h, sizeof h, &p, &e), RALLY_ECONFIG);
        if (strstr(e.msg, bad[i].want) == NULL)
            fail_msg("'%s': got \"%s\", want \"%s\"", bad[i].s, e.msg, bad[i].want);
    }
    /* formatting brackets an IPv6 host, and split reads back what fmt wrote */
    const char *hosts[] = {"127.0.0.1", "fd00::3", "::1", "fe80::1%lo", "node-a"};
    const char *want[] = {"127.0.0.1:41234", "[fd00::3]:41234", "[::1]:41234", "[fe80::1%lo]:41234",
                          "node-a:41234"};
    for (int i = 0; i < 5; i++) {
        char s[128];
        rally__hostport_fmt(hosts[i], 41234, s, sizeof s);
        assert_string_equal(s, want[i]);
        rally__err_clear(&e);
        assert_int_equal(rally__hostport_split(s, h, sizeof h, &p, &e), RALLY_OK);
        assert_string_equal(h, hosts[i]);
        assert_int_equal(p, 41234);
    }
}

/* rally_interface: an interface name, an address of this host, or "" (the
 * local end of the connection to the tracker); anything else is a clear
 * RALLY_ECONFIG. */
static void peer_address_choice(void **state)
{
    struct rally__err e = {0, ""};
    int lfd, port, fd;
    char a[RALLY__HOST_MAX];
    assert_int_equal(rally__tcp_listen("127.0.0.1", 0, 4, &lfd, &port, &e), RALLY_OK);
    assert_int_equal(rally__tcp_connect("127.0.0.1", port, rally__deadline(2000), &fd, &e),
                     RALLY_OK);
    assert_int_equal(rally__sock_choose_addr(fd, "", a, sizeof a, &e), RALLY_OK);
    assert_string_equal(a, "127.0.0.1");
    assert_int_equal(rally__sock_choose_addr(fd, "lo", a, sizeof a, &e), RALLY_OK);
    assert_string_equal(a, "127.0.0.1");
    assert_int_equal(rally__sock_choose_addr(fd, "127.0.0.1", a, sizeof a, &e), RALLY_OK);
    assert_string_equal(a, "127.0.0.1");
    const struct {
        const char *spec, *want;
    } bad[] = {{"nosuch0", "no interface named 'nosuch0'"},
               {"198.18.254.254", "198.18.254.254 is not an address of this host"},
               {"fe80::1", "link-local"},
               {"[::1", "not an interface name or an address"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rally__err_clear(&e);
        assert_int_equal(rally__sock_choose_addr(fd, bad[i].spec, a, sizeof a, &e), RALLY_ECONFIG);
        if (strstr(e.msg, bad[i].want) == NULL)
            fail_msg("'%s': got \"%s\", want \"%s\"", bad[i].spec, e.msg, bad[i].want);
    }
    close(fd);
    close(lfd);
    rally__err_clear(&e);
    if (rally__tcp_listen("::1", 0, 4, &lfd, &port, &e) != RALLY_OK)
        fail_msg("no IPv6 loopback here: %s", e.msg);
    assert_int_equal(rally__tcp_connect("::1", port, rally__deadline(2000), &fd, &e), RALLY_OK);
    assert_int_equal(rally__sock_choose_addr(fd, "", a, sizeof a, &e), RALLY_OK);
    assert_string_equal(a, "::1");
    assert_int_equal(rally__sock_choose_addr(fd, "[::1]", a, sizeof a, &e), RALLY_OK);
    assert_string_equal(a, "::1");
    close(fd);
    close(lfd);
}

/* A worker that cannot reach a peer names the rank and the address it tried. */
static void mesh_names_unreachable_peer(void **state)
{
    struct rally__err e = {0, ""};
    struct rally__secret s;
    char path[] = "/tmp/rally-net-test-XXXXXX";
    assert_non_null(mkdtemp(path));
    char sf[64];
    snprintf(sf, sizeof sf, "%s/secret", path);
    assert_int_equal(rally__secret_create(sf, &s, &e), RALLY_OK);
    int gone, port, lfd1, port1;
    assert_int_equal(rally__tcp_listen("::1", 0, 4, &gone, &port, &e), RALLY_OK);
    close(gone); /* nobody listens on [::1]:port now */
    assert_int_equal(rally__tcp_listen("::1", 0, 4, &lfd1, &port1, &e), RALLY_OK);
    struct rally__mesh_peer p[1] = {{0, "::1", port, 1}};
    struct rally__link l[1];
    struct rally__mesh_opts o = {
        lfd1, &s, 1,    2,   1, "::1", 1, -1, rally__deadline(5000), 300, RALLY__TRANSPORT_TCP,
        0,    -1, NULL, NULL};
    assert_int_equal(rally__mesh_connect(&o, p, 1, l, &e), RALLY_EPEER);
    char want[128];
    snprintf(want, sizeof want, "cannot connect to rank 0 at [::1]:%d: Connection refused", port);
    if (strstr(e.msg, want) == NULL)
        fail_msg("got \"%s\", want \"%s\"", e.msg, want);
    close(lfd1);
    unlink(sf);
    rmdir(path);
}

/* In a child in a network namespace of its own where 198.18.77.0/24 is
 * unreachable: wiring to a peer there fails as a lost peer, which recovery
 * repairs (a cable that came back), naming the address and the cause.  The
 * exit status: 0 passed, 2 the namespace could not be made, 1 failed. */
static int unroutable_child(void)
{
    if (unshare(CLONE_NEWNET) != 0 ||
        system("ip link set lo up && ip route add unreachable 198.18.77.0/24") != 0)
        return 2;
    struct rally__err e = {0, ""};
    struct rally__secret s;
    char path[] = "/tmp/rally-net-test-XXXXXX";
    if (mkdtemp(path) == NULL)
        return 2;
    char sf[64];
    snprintf(sf, sizeof sf, "%s/secret", path);
    int lfd, port, rc = 1;
    if (rally__secret_create(sf, &s, &e) != RALLY_OK ||
        rally__tcp_listen("127.0.0.1", 0, 4, &lfd, &port, &e) != RALLY_OK)
        goto out;
    struct rally__mesh_peer p[1] = {{0, "198.18.77.1", 9, 1}};
    struct rally__link l[1];
    struct rally__mesh_opts o = {
        lfd, &s, 1,    2,   1, "127.0.0.1", 1, -1, rally__deadline(5000), 300, RALLY__TRANSPORT_TCP,
        0,   -1, NULL, NULL};
    int got = rally__mesh_connect(&o, p, 1, l, &e);
    if (got == RALLY_EPEER && strstr(e.msg, "198.18.77.1:9") && strstr(e.msg, "No route to host"))
        rc = 0;
    else
        fprintf(stderr, "got %d \"%s\", want RALLY_EPEER naming 198.18.77.1:9 and no route\n", got,
                e.msg);
    close(lfd);
out:
    unlink(sf);
    rmdir(path);
    return rc;
}

static void mesh_unroutable_peer_is_lost(void **state)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(unroutable_child());
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 2)
        fail_msg("needs root and the ip tool: cannot make a network namespace");
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void frames(void **state)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    struct rally__err e = {0, ""};
    int64_t d = rally__deadline(2000);
    assert_int_equal(rally__frame_send(sv[0], 42, "hello", 5, d, "test", &e), RALLY_OK);
    unsigned char body[16];
    uint16_t type;
    size_t n;
    assert_int_equal(rally__frame_recv(sv[1], &type, body, sizeof body, &n, d, "test", &e),
                     RALLY_OK);
    assert_int_equal(type, 42);
    assert_int_equal(n, 5);
    assert_memory_equal(body, "hello", 5);

    /* larger than the reader's buffer */
    assert_int_equal(rally__frame_send(sv[0], 1, "0123456789abcdefXYZ", 19, d, "test", &e),
                     RALLY_OK);
    assert_int_equal(rally__frame_recv(sv[1], &type, body, sizeof body, &n, d, "test", &e),
                     RALLY_EPROTO);
    assert_non_null(strstr(e.msg, "19-byte frame"));
    close(sv[0]);
    close(sv[1]);

    /* unknown flags; then a header announcing 4 GiB */
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    unsigned char h1[8] = {0, 0, 0, 0, 1, 0, 1, 0}, h2[8] = {0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0};
    rally__err_clear(&e);
    assert_int_equal(write(sv[0], h1, 8), 8);
    assert_int_equal(rally__frame_recv(sv[1], &type, body, sizeof body, &n, d, "test", &e),
                     RALLY_EPROTO);
    assert_non_null(strstr(e.msg, "flags"));
    rally__err_clear(&e);
    assert_int_equal(write(sv[0], h2, 8), 8);
    struct rally__frame_in in = {0};
    assert_int_equal(rally__frame_in_feed(&in, sv[1], "test", &e), -1);
    assert_int_equal(e.code, RALLY_EPROTO);

    /* truncated: the peer goes away mid-body */
    rally__err_clear(&e);
    unsigned char h3[10] = {8, 0, 0, 0, 1, 0, 0, 0, 'a', 'b'};
    assert_int_equal(write(sv[0], h3, sizeof h3), (ssize_t)sizeof h3);
    close(sv[0]);
    assert_int_equal(rally__frame_recv(sv[1], &type, body, sizeof body, &n, d, "test", &e),
                     RALLY_EPEER);
    close(sv[1]);
    rally__frame_in_free(&in);
}

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

static void ipv6_loopback(void **state)
{
    struct rally__err e = {0, ""};
    int lfd, port, fd, afd;
    if (rally__tcp_listen("::1", 0, 4, &lfd, &port, &e) != RALLY_OK) {
        /* a host without IPv6 loopback: then "::1" must fail clearly, and v4 work */
        assert_int_equal(e.code, RALLY_ESYS);
        rally__err_clear(&e);
        assert_int_equal(rally__tcp_listen("127.0.0.1", 0, 4, &lfd, &port, &e), RALLY_OK);
        close(lfd);
        return;
    }
    assert_int_equal(rally__tcp_connect("::1", port, rally__deadline(2000), &fd, &e), RALLY_OK);
    char host[64];
    assert_int_equal(rally__tcp_accept(lfd, rally__deadline(2000), &afd, host, sizeof host, &e),
                     RALLY_OK);
    assert_string_equal(host, "::1");
    close(fd);
    close(afd);
    close(lfd);
    /* a dual-stack listener shows v4 clients as plain v4, not ::ffff:127.0.0.1 */
    assert_int_equal(rally__tcp_listen("", 0, 4, &lfd, &port, &e), RALLY_OK);
    assert_int_equal(rally__tcp_connect("127.0.0.1", port, rally__deadline(2000), &fd, &e),
                     RALLY_OK);
    assert_int_equal(rally__tcp_accept(lfd, rally__deadline(2000), &afd, host, sizeof host, &e),
                     RALLY_OK);
    assert_string_equal(host, "127.0.0.1");
    close(fd);
    close(afd);
    close(lfd);
}

/* The auto choice, and buffers that really are fixed at what was asked. */
static void socket_buffers(void **state)
{
    assert_int_equal(rally__sock_buf_choice(0, 8, 1, 2), 0);              /* asked: the kernel's */
    assert_int_equal(rally__sock_buf_choice(1 << 20, 2, 0, 64), 1 << 20); /* asked: fixed */
    assert_int_equal(rally__sock_buf_choice(-1, 4, 1, 2), RALLY__SOCK_BUF_SHARED);
    assert_int_equal(rally__sock_buf_choice(-1, 2, 1, 2), 0);  /* a core each */
    assert_int_equal(rally__sock_buf_choice(-1, 8, 0, 2), 0);  /* several hosts */
    assert_int_equal(rally__sock_buf_choice(-1, 8, 1, -1), 0); /* CPUs unknown */

    struct rally__err e = {0, ""};
    int lfd, port, fd;
    assert_int_equal(rally__tcp_listen("127.0.0.1", 0, 4, &lfd, &port, &e), RALLY_OK);
    assert_int_equal(rally__tcp_connect("127.0.0.1", port, rally__deadline(2000), &fd, &e),
                     RALLY_OK);
    assert_int_equal(rally__sock_bufs(fd, 96 << 10, &e), RALLY_OK);
    int v[2];
    socklen_t n = sizeof v[0];
    assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v[0], &n), 0);
    assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v[1], &n), 0);
    assert_int_equal(v[0], 2 * (96 << 10)); /* socket(7): the kernel doubles the value */
    assert_int_equal(v[1], 2 * (96 << 10));
    close(fd);
    close(lfd);
}

/* The placement ring: a permutation; rank order for one host; hosts of
 * equal size round-robin; no neighbours on one host while no host holds
 * more than half; racks first, then hosts within a rack. */
static void placement(void **state)
{
    (void)state;
    int host[64], rack[64], order[64];
    for (int r = 0; r < 6; r++)
        host[r] = 0;
    assert_int_equal(rally__place_order(6, host, NULL, 0, order), 0);
    for (int r = 0; r < 6; r++)
        assert_int_equal(order[r], r);
    for (int r = 0; r < 12; r++)
        host[r] = r / 4; /* 3 hosts x 4 ranks, filled in order */
    rally__place_order(12, host, NULL, 0, order);
    static const int rr[12] = {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11};
    for (int i = 0; i < 12; i++)
        assert_int_equal(order[i], rr[i]);
    for (int d = 0; d < 3; d++) {
        assert_int_equal(rally__place_lost(12, order, host, d, 2), 0);
        assert_int_equal(rally__place_lost(12, order, host, d, 1), 4);
    }
    /* one host of 4 beside one of 1: k = 1 cannot cover it, and says so */
    int h5[5] = {0, 0, 0, 0, 1};
    rally__place_order(5, h5, NULL, 0, order);
    assert_int_equal(order[1], 4); /* 0 4 1 2 3 */
    assert_int_equal(rally__place_lost(5, order, h5, 0, 2), 3);
    assert_int_equal(rally__place_lost(5, order, h5, 0, 4), 1);
    assert_int_equal(rally__place_lost(5, order, h5, 0, 5), 0);
    assert_int_equal(rally__place_lost(5, order, h5, 1, 2), 0);
    /* random layouts: a permutation, and no host twice in a row when the
     * largest holds at most half */
    unsigned seed = 7;
    for (int t = 0; t < 2000; t++) {
        seed = seed * 1103515245u + 12345u;
        int N = 2 + (int)(seed >> 16) % 40, H = 1 + (int)(seed >> 8) % 6, big = 0;
        H = H < N ? H : N; /* domain ids below the world */
        int size[64] = {0}, seen[64] = {0};
        for (int r = 0; r < N; r++) {
            seed = seed * 1103515245u + 12345u;
            host[r] = (int)(seed >> 16) % H;
            big = ++size[host[r]] > big ? size[host[r]] : big;
        }
        assert_int_equal(rally__place_order(N, host, NULL, 0, order), 0);
        for (int i = 0; i < N; i++)
            seen[order[i]]++;
        for (int r = 0; r < N; r++)
            assert_int_equal(seen[r], 1);
        for (int h = 0; h < H; h++) { /* a host's ranks in rank order */
            int last = -1;
            for (int i = 0; i < N; i++)
                if (host[order[i]] == h) {
                    assert_true(order[i] > last);
                    last = order[i];
                }
        }
        if (2 * big <= N)
            for (int h = 0; h < H; h++)
                assert_int_equal(rally__place_lost(N, order, host, h, 2), 0);
    }
    /* 2 racks x 2 hosts x 2 ranks: neighbours in other racks, a rack's
     * places alternating its hosts */
    for (int r = 0; r < 8; r++) {
        host[r] = r / 2;
        rack[r] = r / 4;
    }
    rally__place_order(8, host, rack, 1, order);
    for (int i = 0; i < 8; i++)
        assert_int_not_equal(rack[order[i]], rack[order[(i + 1) % 8]]);
    for (int i = 0; i < 8; i++)
        assert_int_not_equal(host[order[i]], host[order[(i + 2) % 8]]);
    for (int d = 0; d < 2; d++)
        assert_int_equal(rally__place_lost(8, order, rack, d, 2), 0);
    /* by host, the racks ignored: round-robin over the 4 hosts */
    rally__place_order(8, host, rack, 0, order);
    static const int h4[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    for (int i = 0; i < 8; i++)
        assert_int_equal(order[i], h4[i]);
}

static void topology(void **state)
{
    for (int N = 1; N <= 70; N++) {
        int parent_of[70], depth_max = 0;
        for (int r = 0; r < N; r++) {
            struct rally__topo t;
            rally__topo_build(&t, r, N);
            parent_of[r] = t.parent;
            assert_true(r == 0 ? t.parent == -1 : t.parent >= 0 && t.parent < r);
            assert_int_equal(t.ring_next, (r + 1) % N);
            assert_int_equal(t.ring_prev, (r + N - 1) % N);
            /* children ascending, first child r+1, subtrees contiguous and covering */
            int end = r + 1;
            for (int i = 0; i < t.nchildren; i++) {
                assert_int_equal(t.children[i], end);
                struct rally__topo c;
                rally__topo_build(&c, t.children[i], N);
                assert_int_equal(c.parent, r);
                end = c.subtree_end;
            }
            assert_int_equal(end, t.subtree_end);
            /* walking toward any root reaches it */
            for (int root = 0; root < N; root++) {
                int at = r, hops = 0;
                while (at != root && hops <= N) {
                    struct rally__topo u;
                    rally__topo_build(&u, at, N);
                    at = rally__topo_toward(&u, root);
                    hops++;
                }
                assert_int_equal(at, root);
            }
        }
        for (int r = 0; r < N; r++) {
            int d = 0;
            for (int a = r; parent_of[a] >= 0; a = parent_of[a])
                d++;
            depth_max = d > depth_max ? d : depth_max;
        }
        int log2n = 0;
        while ((1 << log2n) < N)
            log2n++;
        assert_true(depth_max <= log2n);
    }
}

/* Halving-doubling partners are mutual (the mesh wires each pair once) and
 * fit the link table; past 10 rounds the topology declines them. */
static void topology_hd(void **state)
{
    static struct rally__topo t[2100];
    for (int N = 1; N <= 2100; N += N < 80 ? 1 : 61) {
        for (int r = 0; r < N; r++) {
            rally__topo_build(&t[r], r, N);
            assert_int_equal(rally__topo_add_hd(&t[r]), N >= 2 && N < 2048 ? 0 : -1);
            assert_true(t[r].nneighbours <= RALLY__MAX_NEIGHBOURS);
        }
        for (int r = 0; r < N; r++)
            for (int i = 0; i < t[r].nneighbours; i++) {
                int q = t[r].neighbours[i], mutual = 0;
                for (int j = 0; j < t[q].nneighbours; j++)
                    mutual |= t[q].neighbours[j] == r;
                assert_true(mutual);
            }
    }
}

/* The hierarchy for a layout (host of each rank): every rank's chain
 * neighbours are mutual and within its host in rank order, a leader is its
 * host's lowest rank, the leaders' ring is mutual and in rank order, every
 * neighbour fits the table and is mutual, and a layout without two hosts
 * or without a shared host has none. */
static void hier_layout(const int *host, int N, int want_hosts)
{
    static struct rally__topo t[64];
    int work[64];
    for (int r = 0; r < N; r++) {
        rally__topo_build(&t[r], r, N);
        rally__topo_add_hd(&t[r]);
        assert_int_equal(rally__topo_add_hier(&t[r], host, work), want_hosts > 0);
        assert_int_equal(t[r].hier_hosts, want_hosts);
        assert_true(t[r].nneighbours <= RALLY__MAX_NEIGHBOURS);
    }
    if (want_hosts == 0)
        return;
    for (int r = 0; r < N; r++) {
        int lead = r;
        for (int q = 0; q < r; q++)
            if (host[q] == host[r] && q < lead)
                lead = q;
        assert_int_equal(t[r].hier_leader, lead);
        int up = -1, down = -1;
        for (int q = 0; q < N; q++) {
            if (host[q] == host[r] && q < r)
                up = q;
            if (host[q] == host[r] && q > r && down < 0)
                down = q;
        }
        assert_int_equal(t[r].hier_up, up);
        assert_int_equal(t[r].hier_down, down);
        if (lead == r) {
            assert_int_equal(t[t[r].hier_next].hier_prev, r);
            assert_int_equal(t[t[r].hier_next].hier_index, (t[r].hier_index + 1) % want_hosts);
        } else {
            assert_int_equal(t[r].hier_prev, -1);
            assert_int_equal(t[r].hier_index, t[lead].hier_index);
        }
        for (int i = 0; i < t[r].nneighbours; i++) {
            int q = t[r].neighbours[i], mutual = 0;
            for (int j = 0; j < t[q].nneighbours; j++)
                mutual |= t[q].neighbours[j] == r;
            assert_true(mutual);
        }
    }
}

static void topology_hier(void **state)
{
    (void)state;
    static const int block[] = {0, 0, 1, 1, 2, 2, 3, 3};
    static const int cyclic[] = {0, 1, 0, 1, 0, 1};
    static const int uneven[] = {2, 2, 2, 0, 1, 1, 3}; /* a host of one, ids in any order */
    static const int scattered[] = {1, 0, 1, 1, 0, 2, 2, 0, 1};
    static const int alone[] = {0, 1, 2, 3}; /* no host shared: no hierarchy */
    static const int one[] = {0, 0, 0, 0};   /* one host: none */
    hier_layout(block, 8, 4);
    hier_layout(cyclic, 6, 2);
    hier_layout(uneven, 7, 4);
    hier_layout(scattered, 9, 3);
    hier_layout(alone, 4, 0);
    hier_layout(one, 4, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(config_layers),
        cmocka_unit_test(config_errors),
        cmocka_unit_test(hostport_forms),
        cmocka_unit_test(frames),
        cmocka_unit_test(peer_address_choice),
        cmocka_unit_test(mesh_names_unreachable_peer),
        cmocka_unit_test(mesh_unroutable_peer_is_lost),
        cmocka_unit_test(mesh_refuses_strangers),
        cmocka_unit_test(mesh_refuses_stale_acceptor),
        cmocka_unit_test(ipv6_loopback),
        cmocka_unit_test(mesh_idle_strangers_delay_nobody),
        cmocka_unit_test(mesh_watch_ends_wiring),
        cmocka_unit_test(socket_buffers),
        cmocka_unit_test(topology),
        cmocka_unit_test(placement),
        cmocka_unit_test(topology_hd),
        cmocka_unit_test(topology_hier),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
