/*
 * net_test.c — unit tests of util and net (cmocka).
 *
 * Settings: defaults, environment, arguments, unknown keys, sizes.
 * Addresses: host:port forms, IPv6 with brackets, bad forms and their errors;
 * rally_interface's choice of a worker's address; an unreachable peer named
 * with the address tried; a peer with no route to it (in a network
 * namespace of the test's own) is a lost peer (RALLY_EPEER), not fatal.
 * Frames: a good frame, an oversized one, unknown flags, a truncated one.
 * IPv6 loopback links, and the sockets' buffers.  The mesh against
 * strangers is tests/unit/mesh_test.c; the placement and the topologies,
 * tests/unit/topo_test.c.
 */
#include <sched.h> /* unshare */
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
        lfd1, &s, 1,    2,   1, "::1", 1, -1, rally__deadline(5000), 300, RALLY__TRANSPORT_TCP, 0,
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
        lfd, &s, 1,    2,   1, "127.0.0.1", 1, -1, rally__deadline(5000), 300, RALLY__TRANSPORT_TCP, 0,
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
        cmocka_unit_test(ipv6_loopback),
        cmocka_unit_test(socket_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
