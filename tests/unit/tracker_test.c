/*
 * tracker_test.c — the embedded tracker (src/tracker/server.c) against
 * fake and real clients (src/tracker/client.c), all in one process
 * (tests/unit/tracker_rig.h): what needs sockets and threads at the start — the
 * handshake and its refusals, connections (a silent one, malformed frames,
 * a crash seen as a hang-up, a fake tracker).  Recovery, heartbeats, a grow
 * and observers are tests/unit/tracker_recover_test.c; the job's other
 * transitions are pure cases in tests/job_*_test.c.
 */
#include "tracker_rig.h"

/* --- the tests ------------------------------------------------------------ */

static void good_client_runs_whole_protocol(void **state_)
{
    start(1, 10000, 0);
    struct rally__tclient c;
    struct rally__err e = {0, ""};
    assert_int_equal(joinc(&c, "0", NULL, &e), RALLY_OK);
    assert_int_equal(c.rank, 0);
    assert_int_equal(c.world, 1);
    assert_int_equal(c.incarnation, 1);
    assert_string_equal(c.peers[0].host, "127.0.0.1");
    assert_int_equal(c.peers[0].port, 4000);
    assert_int_equal(rally__tclient_ready(&c, rally__deadline(WAIT_MS), &e), RALLY_OK);
    assert_int_equal(rally__tclient_print(&c, "hello tracker", &e), RALLY_OK);
    assert_int_equal(rally__tclient_check(&c, &e), RALLY_OK);
    assert_true(logged(fx.prints, "0:hello tracker"));
    assert_int_equal(rally__tclient_shutdown(&c, rally__deadline(WAIT_MS), &e), RALLY_OK);
    assert_int_equal(state(NULL), RALLY__TRACKER_DONE);
    rally__tclient_close(&c);
    stop();
}

static void wrong_secret_is_refused(void **state_)
{
    start(1, 10000, 0);
    char path[160];
    struct rally__tclient c;
    struct rally__err e = {0, ""};
    foreign_secret(path, sizeof path, 0); /* same job id, wrong key */
    assert_int_equal(joinc(&c, "0", path, &e), RALLY_EAUTH);
    assert_non_null(strstr(e.msg, "does not know this job's secret"));
    unlink(path);
    rally__err_clear(&e);
    foreign_secret(path, sizeof path, 1); /* another job */
    assert_int_equal(joinc(&c, "0", path, &e), RALLY_EAUTH);
    assert_non_null(strstr(e.msg, "refused the connection"));
    unlink(path);
    assert_true(logged(fx.log, "refusing connection from 127.0.0.1"));
    /* The job goes on. */
    rally__err_clear(&e);
    assert_int_equal(joinc(&c, "0", NULL, &e), RALLY_OK);
    assert_int_equal(rally__tclient_shutdown(&c, rally__deadline(WAIT_MS), &e), RALLY_OK);
    rally__tclient_close(&c);
    stop();
}

static void silent_client_does_not_stall_others(void **state_)
{
    start(1, 10000, 700);
    int silent = raw_connect();
    int half = raw_connect(); /* half a header, then nothing */
    assert_int_equal(write(half, "\x38\0\0", 3), 3);
    struct rally__tclient c;
    struct rally__err e = {0, ""};
    int64_t t0 = rally__now_ms();
    assert_int_equal(joinc(&c, "0", NULL, &e), RALLY_OK);
    assert_int_equal(rally__tclient_ready(&c, rally__deadline(WAIT_MS), &e), RALLY_OK);
    assert_true(rally__now_ms() - t0 < 500);
    assert_true(closed_by_tracker(silent, NULL));
    assert_true(closed_by_tracker(half, NULL));
    assert_true(logged(fx.log, "no handshake and REGISTER within 700 ms"));
    assert_int_equal(rally__tclient_shutdown(&c, rally__deadline(WAIT_MS), &e), RALLY_OK);
    rally__tclient_close(&c);
    stop();
}

/* A man in the middle records a good handshake, then replays it. */
struct relay {
    int fd; /* the client's end of a socketpair */
    int rc;
    struct rally__err e;
};

static void *relay_client(void *arg)
{
    struct relay *r = arg;
    struct rally__ident me = {RALLY__ROLE_WORKER, -1, 0}, peer;
    r->rc =
        rally__auth_connect(r->fd, &fx.s, &me, -1, &peer, rally__deadline(WAIT_MS), "relay", &r->e);
    return NULL;
}

static void relay_one(int from, int to, unsigned char *rec, size_t *rec_n, uint16_t *rec_type)
{
    struct rally__err e = {0, ""};
    unsigned char b[RALLY__AUTH_OUT_MAX];
    uint16_t type;
    size_t n;
    assert_int_equal(
        rally__frame_recv(from, &type, b, sizeof b, &n, rally__deadline(WAIT_MS), "x", &e),
        RALLY_OK);
    raw_send(to, type, b, n);
    if (rec) {
        memcpy(rec, b, n);
        *rec_n = n;
        *rec_type = type;
    }
}

static void replayed_handshake_is_refused(void **state_)
{
    start(2, 10000, 0);
    int sp[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sp), 0);
    struct relay r = {sp[0], -1, {0, ""}};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, relay_client, &r), 0);
    int up = raw_connect();
    unsigned char hello[128], proof[128];
    size_t hn, pn;
    uint16_t ht, pt;
    relay_one(sp[1], up, hello, &hn, &ht);  /* HELLO */
    relay_one(up, sp[1], NULL, NULL, NULL); /* CHALLENGE */
    relay_one(sp[1], up, proof, &pn, &pt);  /* PROOF */
    relay_one(up, sp[1], NULL, NULL, NULL); /* WELCOME */
    pthread_join(th, NULL);
    assert_int_equal(r.rc, RALLY_OK); /* positive control: the relayed one passed */

    int again = raw_connect();
    struct rally__err e = {0, ""};
    unsigned char b[RALLY__AUTH_OUT_MAX];
    uint16_t type;
    size_t n;
    raw_send(again, ht, hello, hn);
    assert_int_equal(
        rally__frame_recv(again, &type, b, sizeof b, &n, rally__deadline(WAIT_MS), "tracker", &e),
        RALLY_OK);
    assert_int_equal(type, RALLY__F_CHALLENGE);
    raw_send(again, pt, proof, pn);
    uint16_t last;
    assert_true(closed_by_tracker(again, &last));
    assert_int_equal(last, RALLY__F_REFUSE);
    assert_true(logged(fx.log, "does not know the job's secret"));
    close(up);
    close(sp[0]);
    close(sp[1]);
    stop();
}

static void unknown_protocol_version_is_refused(void **state_)
{
    start(2, 10000, 0);
    unsigned char b[RALLY__AUTH_OUT_MAX];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__w_u32(&w, RALLY__AUTH_MAGIC);
    rally__w_u16(&w, RALLY__WIRE_VERSION + 1);
    rally__w_u16(&w, RALLY__ROLE_WORKER);
    rally__w_u64(&w, fx.s.job_id);
    rally__w_u32(&w, (uint32_t)-1);
    rally__w_u32(&w, 0);
    unsigned char nonce[RALLY__NONCE_NBYTES] = {0};
    rally__w_bytes(&w, nonce, sizeof nonce);
    int fd = raw_connect();
    raw_send(fd, RALLY__F_HELLO, b, w.len);
    struct rally__err e = {0, ""};
    uint16_t type;
    size_t n;
    assert_int_equal(
        rally__frame_recv(fd, &type, b, sizeof b, &n, rally__deadline(WAIT_MS), "tracker", &e),
        RALLY_OK);
    assert_int_equal(type, RALLY__F_REFUSE);
    struct rally__rbuf r = {b, n, 0, 0};
    char reason[256];
    assert_int_equal(rally__r_u32(&r), RALLY_EPROTO);
    rally__r_str(&r, reason, sizeof reason);
    assert_non_null(strstr(reason, "protocol version 2"));
    assert_true(closed_by_tracker(fd, NULL));
    stop();
}

static void malformed_frames_are_dropped_and_job_goes_on(void **state_)
{
    start(2, 10000, 0);
    unsigned char b[1024];
    size_t n = register_body(b, sizeof b, "7", 0);
    int fd;

    fd = raw_authed(); /* truncated REGISTER body */
    raw_send(fd, RALLY__T_REGISTER, b, n - 2);
    assert_true(closed_by_tracker(fd, NULL));
    assert_true(logged(fx.log, "malformed REGISTER"));

    fd = raw_authed(); /* trailing bytes */
    b[n] = 0;
    raw_send(fd, RALLY__T_REGISTER, b, n + 1);
    assert_true(closed_by_tracker(fd, NULL));

    fd = raw_authed(); /* a string length past the end */
    unsigned char lie[8] = {0xff, 0xff, 0xff, 0x7f, 'a', 'b', 'c', 'd'};
    raw_send(fd, RALLY__T_REGISTER, lie, sizeof lie);
    assert_true(closed_by_tracker(fd, NULL));

    fd = raw_authed(); /* oversized frame header */
    unsigned char h[8];
    rally__put_u32(h, RALLY__FRAME_MAX + 1);
    rally__put_u16(h + 4, RALLY__T_REGISTER);
    rally__put_u16(h + 6, 0);
    assert_int_equal(write(fd, h, sizeof h), (ssize_t)sizeof h);
    assert_true(closed_by_tracker(fd, NULL));
    assert_true(logged(fx.log, "the limit here is"));

    fd = raw_authed(); /* unknown flags */
    rally__put_u32(h, 0);
    rally__put_u16(h + 6, 1);
    assert_int_equal(write(fd, h, sizeof h), (ssize_t)sizeof h);
    assert_true(closed_by_tracker(fd, NULL));
    assert_true(logged(fx.log, "unknown flags"));

    fd = raw_authed(); /* unknown frame type before REGISTER */
    raw_send(fd, 99, NULL, 0);
    assert_true(closed_by_tracker(fd, NULL));
    assert_true(logged(fx.log, "frame type 99 before REGISTER"));

    fd = raw_authed(); /* a frame cut short by a close */
    rally__put_u32(h, 100);
    rally__put_u16(h + 4, RALLY__T_REGISTER);
    rally__put_u16(h + 6, 0);
    assert_int_equal(write(fd, h, sizeof h), (ssize_t)sizeof h);
    assert_int_equal(write(fd, b, 10), 10);
    close(fd);

    fd = raw_connect(); /* garbage instead of HELLO */
    raw_send(fd, RALLY__F_PROOF, "xyz", 3);
    uint16_t last;
    assert_true(closed_by_tracker(fd, &last));
    assert_int_equal(last, RALLY__F_REFUSE);
    assert_true(logged(fx.log, "expected a rally HELLO"));

    fd = raw_authed(); /* the wrong world */
    n = register_body(b, sizeof b, "5", 9);
    raw_send(fd, RALLY__T_REGISTER, b, n);
    assert_true(closed_by_tracker(fd, &last));
    assert_int_equal(last, RALLY__T_ABORT);
    assert_true(logged(fx.log, "expects 9 workers, this job has 2"));

    /* None of that hurt the job: two good workers still run it to the end. */
    assert_int_equal(state(NULL), RALLY__TRACKER_RUNNING);
    struct async_join a, c;
    join_start(&a, "0");
    join_start(&c, "1");
    assert_int_equal(join_end(&a), RALLY_OK);
    assert_int_equal(join_end(&c), RALLY_OK);
    assert_int_equal(a.c.rank, 0);
    assert_int_equal(c.c.rank, 1);
    struct rally__err e = {0, ""};
    assert_int_equal(rally__tclient_shutdown(&a.c, rally__deadline(WAIT_MS), &e), RALLY_OK);
    assert_int_equal(rally__tclient_shutdown(&c.c, rally__deadline(WAIT_MS), &e), RALLY_OK);
    assert_int_equal(state(NULL), RALLY__TRACKER_DONE);
    rally__tclient_close(&a.c);
    rally__tclient_close(&c.c);
    stop();
}

static void worker_crash_aborts_the_others(void **state_)
{
    start(2, 10000, 0);
    struct async_join a, c;
    join_start(&a, "0");
    join_start(&c, "1");
    assert_int_equal(join_end(&a), RALLY_OK);
    assert_int_equal(join_end(&c), RALLY_OK);
    rally__tclient_close(&c.c); /* rank 1 "crashes" */
    struct pollfd p = {.fd = a.c.fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, WAIT_MS), 1);
    struct rally__err e = {0, ""};
    assert_int_equal(rally__tclient_check(&a.c, &e), RALLY_EPEER);
    assert_string_equal(e.msg, "rank 1 disconnected without finalizing (did it crash?)");
    int rank;
    pthread_mutex_lock(&fx.mu);
    assert_int_equal(rally__tracker_state(fx.t, NULL, &rank), RALLY__TRACKER_FAILED);
    pthread_mutex_unlock(&fx.mu);
    assert_int_equal(rank, 1);
    rally__tclient_close(&a.c);
    stop();
}

/* A fake tracker that does not know the secret (same job id, other key). */
struct fake {
    int lfd;
    struct rally__secret s;
};

static void *fake_main(void *arg)
{
    struct fake *f = arg;
    struct rally__err e = {0, ""};
    struct rally__ident me = {RALLY__ROLE_WORKER, -1, 0}, peer;
    int fd;
    if (rally__tcp_accept(f->lfd, rally__deadline(WAIT_MS), &fd, NULL, 0, &e) == RALLY_OK) {
        rally__auth_accept(fd, &f->s, &me, NULL, NULL, &peer, rally__deadline(WAIT_MS), "w", &e);
        close(fd);
    }
    return NULL;
}

static void fake_tracker_is_rejected_by_join(void **state_)
{
    start(1, 10000, 0); /* only for its secret file and directory */
    struct fake f;
    struct rally__err e = {0, ""};
    int port;
    f.s = fx.s;
    f.s.key[0] ^= 1;
    assert_int_equal(rally__tcp_listen("127.0.0.1", 0, 4, &f.lfd, &port, &e), RALLY_OK);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, fake_main, &f), 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    struct rally__tclient c;
    struct rally__tclient_opts o = {.tracker = addr,
                                    .secret_file = fx.secret_path,
                                    .task_id = "0",
                                    .connect_timeout_ms = WAIT_MS};
    assert_int_equal(rally__tclient_join(&c, &o, &e), RALLY_EAUTH);
    assert_non_null(strstr(e.msg, "failed authentication"));
    pthread_join(th, NULL);
    close(f.lfd);
    stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_client_runs_whole_protocol),
        cmocka_unit_test(wrong_secret_is_refused),
        cmocka_unit_test(silent_client_does_not_stall_others),
        cmocka_unit_test(replayed_handshake_is_refused),
        cmocka_unit_test(unknown_protocol_version_is_refused),
        cmocka_unit_test(malformed_frames_are_dropped_and_job_goes_on),
        cmocka_unit_test(worker_crash_aborts_the_others),
        cmocka_unit_test(fake_tracker_is_rejected_by_join),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
