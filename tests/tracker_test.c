/*
 * tracker_test.c — the embedded tracker (src/tracker/server.c) against fake
 * and real clients (src/tracker/client.c), all in one process: what needs
 * sockets and threads — the handshake and its refusals, connections (a
 * silent one, malformed frames, a crash seen as a hang-up, a fake tracker),
 * a recovery, heartbeats, a grow and what observers see (reports, a rank's
 * counters) through real workers.  The job's other
 * transitions are pure cases in tests/job_*_test.c.
 *
 * Each test starts a tracker whose poll loop runs in its own thread (loop()
 * below; a pipe stops it) and talks to it over 127.0.0.1: through
 * rally__tclient_join for well-behaved workers, or through raw sockets that
 * send exactly the bytes a test wants.  The tracker is not thread-safe, so
 * the loop holds fx.mu while it touches it and the test takes fx.mu to read
 * its state or the event log it writes (fx.log, fx.prints).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/auth.h"
#include "net/frame.h"
#include "net/sock.h"
#include "tracker/client.h"
#include "tracker/proto.h"
#include "tracker/server.h"
#include "util/clock.h"
#include "util/wire.h"

#define WAIT_MS 5000

static struct fixture {
    struct rally__tracker *t;
    pthread_t th;
    int stop[2];
    pthread_mutex_t mu;
    char log[32768];
    char prints[4096];
    int nprints;
    char dir[64], secret_path[128], addr[64];
    struct rally__secret s;
} fx;

static void on_event(void *arg, const struct rally__tracker_event *ev)
{
    size_t n = strlen(fx.log);
    if (ev->kind == RALLY__TEV_REPORT) /* every field, in one line */
        snprintf(fx.log + n, sizeof fx.log - n,
                 "[%d %d %s] report %d key %s value %g version %u nbytes %llu: %s\n", ev->kind,
                 ev->rank, ev->task_id, ev->report, ev->key, ev->value, ev->version,
                 (unsigned long long)ev->nbytes, ev->text);
    else
        snprintf(fx.log + n, sizeof fx.log - n, "[%d %d %s] %s\n", ev->kind, ev->rank, ev->task_id,
                 ev->text);
}

static void on_print(void *arg, int rank, const char *msg)
{
    fx.nprints++;
    size_t n = strlen(fx.prints);
    snprintf(fx.prints + n, sizeof fx.prints - n, "%d:%s\n", rank, msg);
}

static void *loop(void *arg)
{
    for (;;) {
        struct pollfd p[256];
        pthread_mutex_lock(&fx.mu);
        size_t n = rally__tracker_fill(fx.t, p, 255);
        int ms = rally__ms_left(rally__tracker_deadline(fx.t));
        pthread_mutex_unlock(&fx.mu);
        p[n] = (struct pollfd){.fd = fx.stop[0], .events = POLLIN};
        poll(p, n + 1, ms < 0 || ms > 50 ? 50 : ms);
        if (p[n].revents)
            return NULL;
        pthread_mutex_lock(&fx.mu);
        rally__tracker_handle(fx.t, p, n);
        pthread_mutex_unlock(&fx.mu);
    }
}

static void start(int world, int64_t startup_ms, int64_t handshake_ms)
{
    struct rally__err e = {0, ""};
    memset(fx.log, 0, sizeof fx.log);
    memset(fx.prints, 0, sizeof fx.prints);
    fx.nprints = 0;
    snprintf(fx.dir, sizeof fx.dir, "/tmp/rally-tt-XXXXXX");
    assert_non_null(mkdtemp(fx.dir));
    snprintf(fx.secret_path, sizeof fx.secret_path, "%s/secret", fx.dir);
    assert_int_equal(rally__secret_create(fx.secret_path, &fx.s, &e), RALLY_OK);
    struct rally__tracker_opts o = {.world = world,
                                    .host = "127.0.0.1",
                                    .secret = &fx.s,
                                    .startup_timeout_ms = startup_ms,
                                    .handshake_timeout_ms = handshake_ms,
                                    .print = on_print,
                                    .event = on_event};
    assert_int_equal(rally__tracker_new(&fx.t, &o, &e), RALLY_OK);
    snprintf(fx.addr, sizeof fx.addr, "127.0.0.1:%d", rally__tracker_port(fx.t));
    assert_int_equal(pipe(fx.stop), 0);
    pthread_mutex_init(&fx.mu, NULL);
    assert_int_equal(pthread_create(&fx.th, NULL, loop, NULL), 0);
}

static void stop(void)
{
    assert_int_equal(write(fx.stop[1], "x", 1), 1);
    pthread_join(fx.th, NULL);
    rally__tracker_free(fx.t);
    fx.t = NULL;
    close(fx.stop[0]);
    close(fx.stop[1]);
    pthread_mutex_destroy(&fx.mu);
    unlink(fx.secret_path);
    rmdir(fx.dir);
}

static int state(const char **sentence)
{
    static char copy[RALLY__ERR_MSG_MAX];
    const char *s;
    pthread_mutex_lock(&fx.mu);
    int st = rally__tracker_state(fx.t, &s, NULL);
    snprintf(copy, sizeof copy, "%s", s);
    pthread_mutex_unlock(&fx.mu);
    if (sentence)
        *sentence = copy;
    return st;
}

/* 1 once fx.log (or fx.prints) contains what, within WAIT_MS. */
static int logged(const char *buf, const char *what)
{
    int64_t deadline = rally__deadline(WAIT_MS);
    for (;;) {
        pthread_mutex_lock(&fx.mu);
        int found = strstr(buf, what) != NULL;
        pthread_mutex_unlock(&fx.mu);
        if (found)
            return 1;
        if (rally__ms_left(deadline) == 0) {
            print_message("log so far:\n%s\nwanted: %s\n", fx.log, what);
            return 0;
        }
        rally__sleep_ms(10);
    }
}

static int joinc(struct rally__tclient *c, const char *task, const char *secret_path,
                 struct rally__err *e)
{
    struct rally__tclient_opts o = {.tracker = fx.addr,
                                    .secret_file = secret_path ? secret_path : fx.secret_path,
                                    .task_id = task,
                                    .listen_port = 4000 + atoi(task),
                                    .processor_name = "test-host",
                                    .connect_timeout_ms = WAIT_MS};
    return rally__tclient_join(c, &o, e);
}

struct async_join {
    pthread_t th;
    const char *task;
    struct rally__tclient c;
    struct rally__err e;
    int rc;
};

static void *join_main(void *arg)
{
    struct async_join *j = arg;
    j->rc = joinc(&j->c, j->task, NULL, &j->e);
    return NULL;
}

static void join_start(struct async_join *j, const char *task)
{
    memset(j, 0, sizeof *j);
    j->task = task;
    assert_int_equal(pthread_create(&j->th, NULL, join_main, j), 0);
}

static int join_end(struct async_join *j)
{
    pthread_join(j->th, NULL);
    return j->rc;
}

static int raw_connect(void)
{
    struct rally__err e = {0, ""};
    int fd;
    assert_int_equal(rally__tcp_connect("127.0.0.1", rally__tracker_port(fx.t),
                                        rally__deadline(WAIT_MS), &fd, &e),
                     RALLY_OK);
    return fd;
}

/* A connection that passed the handshake, as a worker would. */
static int raw_authed(void)
{
    struct rally__err e = {0, ""};
    int fd = raw_connect();
    struct rally__ident me = {RALLY__ROLE_WORKER, -1, 0}, peer;
    assert_int_equal(
        rally__auth_connect(fd, &fx.s, &me, -1, &peer, rally__deadline(WAIT_MS), "tracker", &e),
        RALLY_OK);
    return fd;
}

static void raw_send(int fd, uint16_t type, const void *body, size_t n)
{
    struct rally__err e = {0, ""};
    assert_int_equal(rally__frame_send(fd, type, body, n, rally__deadline(WAIT_MS), "tracker", &e),
                     RALLY_OK);
}

/* Reads frames until the tracker closes fd; returns 1 on EOF within WAIT_MS.
 * *last_type (may be NULL) gets the type of the last frame seen (0: none). */
static int closed_by_tracker(int fd, uint16_t *last_type)
{
    unsigned char *body = malloc(RALLY__FRAME_MAX);
    int64_t deadline = rally__deadline(WAIT_MS);
    int eof = 0;
    uint16_t last = 0;
    for (;;) {
        struct rally__err e = {0, ""};
        uint16_t type;
        size_t n;
        if (rally__frame_recv(fd, &type, body, RALLY__FRAME_MAX, &n, deadline, "tracker", &e) !=
            RALLY_OK) {
            eof = e.code == RALLY_EPEER;
            break;
        }
        last = type;
    }
    free(body);
    close(fd);
    if (last_type)
        *last_type = last;
    return eof;
}

static size_t register_body(unsigned char *b, size_t cap, const char *task, uint32_t world_hint)
{
    struct rally__wbuf w = {b, 0, cap, 0};
    rally__w_str(&w, task);
    rally__w_u32(&w, (uint32_t)-1);
    rally__w_u32(&w, world_hint);
    rally__w_u16(&w, 4000);
    rally__w_str(&w, "");
    rally__w_str(&w, "raw");
    rally__w_str(&w, ""); /* no domain */
    return w.len;
}

/* A secret file with the fixture's job id and a different key, or (other_job)
 * a fresh secret altogether. */
static void foreign_secret(char *path, size_t cap, int other_job)
{
    struct rally__err e = {0, ""};
    struct rally__secret s;
    snprintf(path, cap, "%s/foreign", fx.dir);
    assert_int_equal(rally__secret_create(path, &s, &e), RALLY_OK);
    if (other_job)
        return;
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "rally-secret 1 %016llx ", (unsigned long long)fx.s.job_id);
    for (int i = 0; i < RALLY__KEY_NBYTES; i++)
        fprintf(f, "%02x", (unsigned)(fx.s.key[i] ^ 0x5a));
    fprintf(f, "\n");
    fclose(f);
}

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

/* --- recovery ------------------------------------------------------------- */

/* A blocking client call on its own thread. */
enum { OP_JOIN, OP_READY, OP_REJOIN };
struct op {
    pthread_t th;
    int kind;
    const char *task;
    struct rally__tclient *c;
    struct rally__err e;
    int rc;
};

/* docs/protocol.md: phase 2, version 3, q = 8 (user collective seq 7) */
#define POS_V3_S7 RALLY__KEY_OP(3, 8) /* version 3, user seq 7 */

static void *op_main(void *arg)
{
    struct op *o = arg;
    if (o->kind == OP_JOIN)
        o->rc = joinc(o->c, o->task, NULL, &o->e);
    else if (o->kind == OP_READY)
        o->rc = rally__tclient_ready(o->c, rally__deadline(WAIT_MS), &o->e);
    else
        o->rc = rally__tclient_rejoin(o->c, POS_V3_S7 - (o->c->rank == 0), 3,
                                      rally__deadline(WAIT_MS), &o->e);
    return NULL;
}

static void op_start(struct op *o, int kind, struct rally__tclient *c, const char *task)
{
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->c = c;
    o->task = task;
    assert_int_equal(pthread_create(&o->th, NULL, op_main, o), 0);
}

static int op_end(struct op *o)
{
    pthread_join(o->th, NULL);
    if (o->rc != RALLY_OK)
        print_message("op %d: %s\n", o->kind, o->e.msg);
    return o->rc;
}

/* n clients join (task ids "0".."n-1") and pass READY/GO together. */
static void job(struct rally__tclient *c, int n)
{
    static const char *ids[] = {"0", "1", "2", "3"};
    struct op o[4];
    for (int i = 0; i < n; i++)
        op_start(&o[i], OP_JOIN, &c[i], ids[i]);
    for (int i = 0; i < n; i++)
        assert_int_equal(op_end(&o[i]), RALLY_OK);
    for (int i = 0; i < n; i++)
        op_start(&o[i], OP_READY, &c[i], NULL);
    for (int i = 0; i < n; i++)
        assert_int_equal(op_end(&o[i]), RALLY_OK);
}

/* Polls c's alarm line until check says something; returns that. */
static int alarm_rc(struct rally__tclient *c, struct rally__err *e)
{
    int64_t deadline = rally__deadline(WAIT_MS);
    for (;;) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, rally__ms_left(deadline)) != 1)
            return RALLY_ETIMEDOUT;
        rally__err_clear(e);
        int rc = rally__tclient_check(c, e);
        if (rc != RALLY_OK)
            return rc;
    }
}

/* 1 when nothing arrives on c's alarm line within ms. */
static int quiet(struct rally__tclient *c, int ms)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    return poll(&p, 1, ms) == 0;
}

static void recover_rank_drops_after_go(void **state_)
{
    start(3, 10000, 0);
    struct rally__tclient c[3];
    struct rally__err e = {0, ""};
    job(c, 3);
    assert_int_equal(c[0].epoch, 0); /* the job's first ASSIGN */
    rally__tclient_close(&c[1]);     /* rank 1 "crashes" */
    for (int i = 0; i < 3; i += 2) {
        assert_int_equal(alarm_rc(&c[i], &e), RALLY__ERESET);
        assert_string_equal(e.msg, "the tracker ordered recovery (epoch 2): rank 1 "
                                   "disconnected without finalizing");
        assert_int_equal(c[i].reset_epoch, 2);
    }
    assert_true(logged(fx.log, "[7 1 1] rank 1 disconnected without finalizing"));
    assert_int_equal(state(NULL), RALLY__TRACKER_RUNNING);
    struct op o[3];
    op_start(&o[0], OP_REJOIN, &c[0], NULL);
    op_start(&o[2], OP_REJOIN, &c[2], NULL);
    rally__sleep_ms(50);
    op_start(&o[1], OP_JOIN, &c[1], "1"); /* the restarted rank 1 */
    for (int i = 0; i < 3; i++)
        assert_int_equal(op_end(&o[i]), RALLY_OK);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(c[i].rank, i);
        assert_int_equal(c[i].epoch, 2);
        assert_int_equal(c[i].peers[1].incarnation, 2);
        assert_int_equal(c[i].peers[0].incarnation, 1);
    }
    assert_int_equal(c[1].incarnation, 2);
    assert_int_equal(c[0].incarnation, 1);
    for (int i = 0; i < 3; i++)
        op_start(&o[i], OP_READY, &c[i], NULL);
    for (int i = 0; i < 3; i++)
        assert_int_equal(op_end(&o[i]), RALLY_OK);
    /* GO went out (the event with it), but the job is back in step only
     * when every rank says so */
    pthread_mutex_lock(&fx.mu);
    assert_null(strstr(fx.log, "back in step"));
    pthread_mutex_unlock(&fx.mu);
    for (int i = 0; i < 3; i++)
        rally__tclient_in_step(&c[i]);
    /* rank 2 stands at version 3 seq 7, rank 0 one step behind */
    assert_true(logged(fx.log, "] epoch 2: job back in step "));
    assert_true(logged(fx.log, "s after the failure; furthest survivor: version 3, seq 7 (rank 2, "
                               "checkpoint version 3)"));
    for (int i = 0; i < 3; i++)
        assert_int_equal(rally__tclient_shutdown(&c[i], rally__deadline(WAIT_MS), &e), RALLY_OK);
    assert_int_equal(state(NULL), RALLY__TRACKER_DONE);
    for (int i = 0; i < 3; i++)
        rally__tclient_close(&c[i]);
    stop();
}

static void recover_heartbeat_silence_fails_the_rank(void **state_)
{
    start(2, 10000, 0);
    pthread_mutex_lock(&fx.mu);
    rally__tracker_set_heartbeat_timeout(fx.t, 1000);
    pthread_mutex_unlock(&fx.mu);
    struct rally__tclient c[2];
    struct rally__err e = {0, ""};
    job(c, 2);
    /* watched from their ASSIGN on, as the library's workers beat from then */
    assert_int_equal(rally__tclient_heartbeat_start(&c[0], 50, &e), RALLY_OK);
    assert_int_equal(rally__tclient_heartbeat_start(&c[1], 50, &e), RALLY_OK);
    rally__sleep_ms(1500); /* beats keep both alive */
    assert_int_equal(state(NULL), RALLY__TRACKER_RUNNING);
    assert_true(quiet(&c[0], 0));
    int64_t t0 = rally__now_ms();
    rally__tclient_heartbeat_stop(&c[1]); /* rank 1 hangs */
    assert_int_equal(alarm_rc(&c[0], &e), RALLY__ERESET);
    assert_true(rally__now_ms() - t0 >= 300);
    assert_non_null(strstr(e.msg, "rank 1 sent no heartbeat for "));
    assert_true(logged(fx.log, "[7 1 1] rank 1 sent no heartbeat for "));
    assert_int_equal(alarm_rc(&c[1], &e), RALLY_EPEER);
    rally__tclient_close(&c[0]);
    rally__tclient_close(&c[1]);
    stop();
}

static void recover_launcher_reports_death(void **state_)
{
    start(2, 10000, 0);
    struct rally__tclient c[2];
    struct rally__err e = {0, ""};
    job(c, 2);
    pthread_mutex_lock(&fx.mu);
    assert_int_equal(rally__tracker_recoverable(fx.t), 1);
    rally__tracker_rank_died(fx.t, 1, "killed by signal 9");
    assert_int_equal(rally__tracker_epoch(fx.t), 2);
    rally__tracker_rank_died(fx.t, 1, "killed by signal 9"); /* known: nothing more */
    assert_int_equal(rally__tracker_epoch(fx.t), 2);
    pthread_mutex_unlock(&fx.mu);
    assert_true(logged(fx.log, "[7 1 1] the launcher reported rank 1 dead: killed by signal 9"));
    assert_int_equal(alarm_rc(&c[1], &e), RALLY_EPEER);
    assert_int_equal(alarm_rc(&c[0], &e), RALLY__ERESET);
    rally__tclient_close(&c[0]);
    rally__tclient_close(&c[1]);
    stop();
}

/* The heartbeat thread and the caller share the socket: no frame may tear. */
/* Growth through real sockets: a worker with a new task id waits; GROW
 * reaches every rank ahead of an INPUT_OK (the worker waiting for that
 * takes it for its next checkpoint, it is no protocol error) and on the
 * alarm line; one GROW_READY takes the waiting worker in as rank 2 of 3,
 * and every rank's rejoin is renumbered. */
static void grow_reaches_workers_and_takes_one_in(void **state_)
{
    start(2, 10000, 0);
    pthread_mutex_lock(&fx.mu);
    assert_int_equal(rally__tracker_set_max_world(fx.t, 3), RALLY_OK);
    pthread_mutex_unlock(&fx.mu);
    struct rally__tclient c[2];
    struct rally__err e = {0, ""};
    job(c, 2);
    struct async_join j;
    join_start(&j, "7");
    int64_t deadline = rally__deadline(WAIT_MS);
    for (;;) { /* until the tracker has it waiting: GROW is queued to both */
        pthread_mutex_lock(&fx.mu);
        int there = strstr(fx.log, "the worker with task id '7' waits to join") != NULL;
        pthread_mutex_unlock(&fx.mu);
        if (there)
            break;
        assert_true(rally__ms_left(deadline) > 0);
        usleep(1000);
    }
    /* GROW went out before this INPUT's answer */
    assert_int_equal(rally__tclient_input(&c[0], "range", 42, &e), RALLY_OK);
    assert_int_equal(c[0].grow_asked, 1);
    struct pollfd p = {.fd = c[1].fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, WAIT_MS), 1);
    assert_int_equal(rally__tclient_check(&c[1], &e), RALLY_OK);
    assert_int_equal(c[1].grow_asked, 1);
    assert_int_equal(rally__tclient_grow_ready(&c[0], &e), RALLY_OK);
    for (int i = 0; i < 2; i++)
        assert_int_equal(alarm_rc(&c[i], &e), RALLY__ERESET);
    struct op o[2];
    for (int i = 0; i < 2; i++)
        op_start(&o[i], OP_REJOIN, &c[i], NULL);
    for (int i = 0; i < 2; i++)
        assert_int_equal(op_end(&o[i]), RALLY_OK);
    assert_int_equal(join_end(&j), RALLY_OK);
    assert_int_equal(j.c.rank, 2);
    assert_int_equal(j.c.world, 3);
    assert_int_equal(j.c.assign_flags, RALLY__ASSIGN_CHANGED);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(c[i].world, 3);
        assert_int_equal(c[i].resized, 1);
        assert_int_equal(c[i].rank, i);
    }
    for (int i = 0; i < 2; i++)
        rally__tclient_close(&c[i]);
    rally__tclient_close(&j.c);
    stop();
}

static void heartbeat_thread_and_caller_send_together(void **state_)
{
    start(1, 10000, 0);
    pthread_mutex_lock(&fx.mu);
    rally__tracker_set_heartbeat_timeout(fx.t, 5000);
    pthread_mutex_unlock(&fx.mu);
    struct rally__tclient c;
    struct rally__err e = {0, ""};
    assert_int_equal(joinc(&c, "0", NULL, &e), RALLY_OK);
    assert_int_equal(rally__tclient_heartbeat_start(&c, 1, &e), RALLY_OK);
    assert_int_equal(rally__tclient_heartbeat_start(&c, 1, &e), RALLY_OK); /* harmless */
    assert_int_equal(rally__tclient_ready(&c, rally__deadline(WAIT_MS), &e), RALLY_OK);
    char msg[200];
    for (int i = 0; i < 3000; i++) {
        snprintf(msg, sizeof msg, "print %d %0*d", i, i % 150, 0);
        assert_int_equal(rally__tclient_print(&c, msg, &e), RALLY_OK);
    }
    rally__tclient_heartbeat_stop(&c);
    rally__tclient_heartbeat_stop(&c); /* harmless */
    assert_int_equal(rally__tclient_heartbeat_start(&c, 2, &e), RALLY_OK);
    rally__sleep_ms(20);
    assert_int_equal(rally__tclient_shutdown(&c, rally__deadline(WAIT_MS), &e), RALLY_OK);
    assert_int_equal(state(NULL), RALLY__TRACKER_DONE);
    pthread_mutex_lock(&fx.mu);
    assert_int_equal(fx.nprints, 3000);
    pthread_mutex_unlock(&fx.mu);
    rally__tclient_close(&c); /* stops the second thread */
    stop();
}

/* What observers see through a real worker: its REPORTs in the owner's
 * events (none answered, nothing else done), and, in rank_info, where it
 * stands and its counters from its heartbeats, with the job's phase. */
static void observers_see_reports_and_counters(void **state_)
{
    start(2, 10000, 0);
    struct rally__tclient c[2];
    struct rally__err e = {0, ""};
    struct rally__tracker_rank ri;
    pthread_mutex_lock(&fx.mu);
    assert_int_equal(rally__tracker_phase(fx.t), RALLY__TPHASE_JOINING);
    assert_int_equal(rally__tracker_rank_info(fx.t, 2, &ri), RALLY_EINVAL);
    pthread_mutex_unlock(&fx.mu);
    job(c, 2);
    pthread_mutex_lock(&fx.mu);
    assert_int_equal(rally__tracker_phase(fx.t), RALLY__TPHASE_RUNNING);
    pthread_mutex_unlock(&fx.mu);
    rally__tclient_position(&c[1], RALLY__KEY_OP(3, 5), 1, "allreduce");
    rally__tclient_counters(&c[1], 41, 1 << 20, 37, 120, 900);
    int64_t t0 = rally__now_ms();
    assert_int_equal(rally__tclient_heartbeat_start(&c[1], 20, &e), RALLY_OK);
    struct rally__msg_report r = {RALLY__REPORT_VALUE, 3, 0.5, 0, "objective", ""};
    rally__tclient_send_report(&c[1], &r);
    struct rally__msg_report s = {RALLY__REPORT_SNAPSHOT, 3, 0, 12345, "dir", "/s/snap-00000003"};
    rally__tclient_send_report(&c[0], &s);
    assert_true(logged(fx.log, "[11 1 1] report 1 key objective value 0.5 version 3 nbytes 0: \n"));
    assert_true(logged(fx.log, "[11 0 0] report 3 key dir value 0 version 3 nbytes 12345: "
                               "/s/snap-00000003\n"));
    int64_t deadline = rally__deadline(WAIT_MS);
    for (;;) { /* until a beat with the counters arrived */
        pthread_mutex_lock(&fx.mu);
        assert_int_equal(rally__tracker_rank_info(fx.t, 1, &ri), RALLY_OK);
        pthread_mutex_unlock(&fx.mu);
        if (ri.calls == 41 || rally__ms_left(deadline) == 0)
            break;
        rally__sleep_ms(10);
    }
    assert_true(ri.present);
    assert_false(ri.finalized);
    assert_string_equal(ri.host, "127.0.0.1");
    assert_string_equal(ri.task_id, "1");
    assert_int_equal(ri.incarnation, 1);
    assert_true(ri.heartbeats);
    assert_int_equal(ri.calls, 41);
    assert_int_equal(ri.nbytes, 1 << 20);
    assert_int_equal(ri.win, 37); /* the straggler window */
    assert_int_equal(ri.win_wait_ms, 120);
    assert_int_equal(ri.win_span_ms, 900);
    assert_int_equal(ri.position, RALLY__KEY_OP(3, 5));
    assert_true(ri.waiting);
    assert_string_equal(ri.what, "allreduce");
    /* times are rally__now_ms's, whoever reads them */
    int64_t now = rally__now_ms();
    assert_true(ri.last_rx_ms >= t0 && ri.last_rx_ms <= now);
    assert_true(ri.since_ms <= now && ri.since_ms >= t0 - 1000);
    assert_true(quiet(&c[1], 100)); /* a REPORT is never answered */
    rally__tclient_heartbeat_stop(&c[1]);
    for (int i = 0; i < 2; i++)
        assert_int_equal(rally__tclient_shutdown(&c[i], rally__deadline(WAIT_MS), &e), RALLY_OK);
    pthread_mutex_lock(&fx.mu);
    assert_int_equal(rally__tracker_phase(fx.t), RALLY__TPHASE_DONE);
    assert_int_equal(rally__tracker_rank_info(fx.t, 0, &ri), RALLY_OK);
    assert_true(ri.finalized);
    pthread_mutex_unlock(&fx.mu);
    for (int i = 0; i < 2; i++)
        rally__tclient_close(&c[i]);
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
        cmocka_unit_test(grow_reaches_workers_and_takes_one_in),
        cmocka_unit_test(recover_rank_drops_after_go),
        cmocka_unit_test(recover_heartbeat_silence_fails_the_rank),
        cmocka_unit_test(recover_launcher_reports_death),
        cmocka_unit_test(heartbeat_thread_and_caller_send_together),
        cmocka_unit_test(observers_see_reports_and_counters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
