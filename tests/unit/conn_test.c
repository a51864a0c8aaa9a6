/*
 * conn_test.c — the tracker against strangers and a stalled loop: what an
 * unauthenticated peer may cost it, and that frames which arrived are read
 * before a timer judges their sender.
 *
 * Unlike tracker_test.c (tracker_rig.h) the test drives the tracker's poll
 * loop itself, in its own thread (spin() below), so a test can hold the
 * loop between a poll and the handling of its result, as a launcher
 * blocked in a write would.
 * Workers that must block (rally__tclient_join) run in threads of their own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/auth.h"
#include "net/frame.h"
#include "net/sock.h"
#include "tracker/client.h"
#include "tracker/proto.h"
#include "tracker/server.h"
#include "util/clock.h"
#include "util/wire.h"

#define WAIT_MS 10000

static struct fixture {
    struct rally__tracker *t;
    struct pollfd *p;
    size_t cap;
    char log[65536];
    int rank_failed, go;
    char dir[64], secret_path[128], addr[64];
    struct rally__secret s;
} fx;

static void on_event(void *arg, const struct rally__tracker_event *ev)
{
    (void)arg;
    if (ev->kind == RALLY__TEV_RANK_FAILED)
        fx.rank_failed++;
    if (ev->kind == RALLY__TEV_GO)
        fx.go++;
    size_t n = strlen(fx.log);
    snprintf(fx.log + n, sizeof fx.log - n, "[%d %d] %s\n", ev->kind, ev->rank, ev->text);
}

static void start(int world, int64_t heartbeat_ms)
{
    struct rally__err e = {0, ""};
    memset(&fx, 0, sizeof fx);
    snprintf(fx.dir, sizeof fx.dir, "/tmp/rally-ct-XXXXXX");
    assert_non_null(mkdtemp(fx.dir));
    snprintf(fx.secret_path, sizeof fx.secret_path, "%s/secret", fx.dir);
    assert_int_equal(rally__secret_create(fx.secret_path, &fx.s, &e), RALLY_OK);
    struct rally__tracker_opts o = {.world = world,
                                    .host = "127.0.0.1",
                                    .secret = &fx.s,
                                    .startup_timeout_ms = WAIT_MS,
                                    .handshake_timeout_ms = WAIT_MS,
                                    .event = on_event};
    assert_int_equal(rally__tracker_new(&fx.t, &o, &e), RALLY_OK);
    rally__tracker_set_heartbeat_timeout(fx.t, heartbeat_ms);
    snprintf(fx.addr, sizeof fx.addr, "127.0.0.1:%d", rally__tracker_port(fx.t));
}

static void stop(void)
{
    rally__tracker_free(fx.t);
    free(fx.p);
    unlink(fx.secret_path);
    rmdir(fx.dir);
    memset(&fx, 0, sizeof fx);
}

/* The first half of a loop turn: fill and poll (up to wait_ms); returns n. */
static size_t poll_half(int wait_ms)
{
    size_t want = rally__tracker_npoll(fx.t);
    if (want > fx.cap) {
        fx.p = realloc(fx.p, want * sizeof *fx.p);
        assert_non_null(fx.p);
        fx.cap = want;
    }
    size_t n = rally__tracker_fill(fx.t, fx.p, fx.cap);
    int ms = rally__ms_left(rally__tracker_deadline(fx.t));
    poll(fx.p, n, ms < 0 || ms > wait_ms ? wait_ms : ms);
    return n;
}

/* One whole loop turn. */
static void spin(void)
{
    size_t n = poll_half(20);
    rally__tracker_handle(fx.t, fx.p, n);
}

/* Spins the loop until *flag is set (by a thread) or WAIT_MS passed; 1 when set. */
static int spin_until(atomic_int *flag)
{
    int64_t deadline = rally__deadline(WAIT_MS);
    while (!atomic_load(flag) && rally__ms_left(deadline) > 0)
        spin();
    return atomic_load(flag) != 0;
}

/* A worker in a thread: join, then READY and wait for GO. */
struct worker {
    pthread_t th;
    char task[16];
    struct rally__tclient c;
    struct rally__err e;
    int rc;
    atomic_int joined, done; /* set by the worker thread, read by the loop's */
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct rally__tclient_opts o = {.tracker = fx.addr,
                                    .secret_file = fx.secret_path,
                                    .task_id = w->task,
                                    .listen_port = 4000,
                                    .processor_name = "test-host",
                                    .connect_timeout_ms = WAIT_MS};
    w->rc = rally__tclient_join(&w->c, &o, &w->e);
    atomic_store(&w->joined, 1);
    if (w->rc == RALLY_OK)
        w->rc = rally__tclient_ready(&w->c, rally__deadline(WAIT_MS), &w->e);
    atomic_store(&w->done, 1);
    return NULL;
}

static void worker_start(struct worker *w, int task)
{
    memset(w, 0, sizeof *w);
    snprintf(w->task, sizeof w->task, "%d", task);
    assert_int_equal(pthread_create(&w->th, NULL, worker_main, w), 0);
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

/* 1 when the tracker has closed fd (EOF or reset), without waiting. */
static int peer_closed(int fd)
{
    struct pollfd q = {.fd = fd, .events = POLLIN};
    if (poll(&q, 1, 0) <= 0)
        return 0;
    char b[64];
    ssize_t k = recv(fd, b, sizeof b, MSG_DONTWAIT);
    return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* Bytes the allocator holds right now (small blocks and mapped ones). */
static size_t heap_nbytes(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* A stranger announces a frame far larger than HELLO: the tracker drops it
 * from the header alone and allocates nothing for its body. */
static void large_header_before_auth_is_dropped_without_allocating(void **state_)
{
    (void)state_;
    enum { N = 16 };
    start(2, 0);
    spin();
    size_t before = heap_nbytes(), peak = before;
    int fd[N];
    for (int i = 0; i < N; i++) {
        fd[i] = raw_connect();
        unsigned char h[RALLY__FRAME_HDR + 4] = {0};
        rally__frame_hdr(h, RALLY__F_HELLO, RALLY__FRAME_MAX);
        assert_int_equal(send(fd[i], h, sizeof h, 0), (ssize_t)sizeof h);
    }
    int64_t deadline = rally__deadline(WAIT_MS / 2); /* under the handshake timeout */
    int closed = 0;
    while (closed < N && rally__ms_left(deadline) > 0) {
        spin();
        size_t now = heap_nbytes();
        if (now > peak)
            peak = now;
        closed = 0;
        for (int i = 0; i < N; i++)
            closed += fd[i] >= 0 && peer_closed(fd[i]);
    }
    print_message("heap before %zu, peak %zu bytes (%d strangers)\n", before, peak, N);
    assert_int_equal(closed, N);
    assert_true(peak - before < (size_t)N * 4096);
    if (strstr(fx.log, "before authenticating") == NULL)
        print_message("log:\n%s\n", fx.log);
    assert_non_null(strstr(fx.log, "before authenticating"));
    for (int i = 0; i < N; i++)
        close(fd[i]);
    stop();
}

/* More idle strangers than the tracker keeps: a worker that comes after
 * them still joins (the oldest idle stranger gives way). */
static void flood_of_strangers_does_not_lock_out_a_worker(void **state_)
{
    (void)state_;
    enum { N = 400 };
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < 3 * N) {
        rl.rlim_cur = rl.rlim_max < 3 * N ? rl.rlim_max : 3 * N;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < 2 * N + 64)
        skip();
    start(1, 0);
    int *fd = calloc(N, sizeof *fd);
    assert_non_null(fd);
    for (int i = 0; i < N; i++) {
        fd[i] = raw_connect();
        if (i % 32 == 31)
            spin(); /* the tracker takes them in as they come */
    }
    for (int i = 0; i < 8; i++)
        spin();
    struct worker w;
    worker_start(&w, 0);
    int joined = spin_until(&w.done);
    pthread_join(w.th, NULL);
    if (w.rc != RALLY_OK)
        print_message("join: %s\nlog:\n%.2000s\n", w.e.msg, fx.log);
    assert_true(joined);
    assert_int_equal(w.rc, RALLY_OK);
    assert_int_equal(fx.go, 1);
    rally__tclient_close(&w.c);
    for (int i = 0; i < N; i++)
        close(fd[i]);
    free(fd);
    stop();
}

/* The loop stalls between a poll and its handling for longer than the
 * heartbeat timeout, and a heartbeat arrives meanwhile: it is read before
 * the timer judges the worker, which is not fenced. */
static void stalled_loop_reads_heartbeats_before_judging(void **state_)
{
    (void)state_;
    enum { TIMEOUT_MS = 300 };
    start(1, TIMEOUT_MS);
    struct worker w;
    worker_start(&w, 0);
    assert_true(spin_until(&w.done));
    pthread_join(w.th, NULL);
    assert_int_equal(w.rc, RALLY_OK);
    struct rally__err e = {0, ""};
    /* the worker counts as heartbeating from here */
    assert_int_equal(rally__frame_send(w.c.fd, RALLY__T_HEARTBEAT, NULL, 0,
                                       rally__deadline(WAIT_MS), "tracker", &e),
                     RALLY_OK);
    for (int i = 0; i < 3; i++)
        spin();
    /* the stall: poll sees nothing, then the heartbeat comes, then the
     * timeout passes, and only then are the poll's results handled */
    size_t n = poll_half(0);
    assert_int_equal(rally__frame_send(w.c.fd, RALLY__T_HEARTBEAT, NULL, 0,
                                       rally__deadline(WAIT_MS), "tracker", &e),
                     RALLY_OK);
    rally__sleep_ms(2 * TIMEOUT_MS);
    rally__tracker_handle(fx.t, fx.p, n);
    if (fx.rank_failed)
        print_message("log:\n%s\n", fx.log);
    assert_int_equal(fx.rank_failed, 0);
    assert_int_equal(rally__tracker_state(fx.t, NULL, NULL), RALLY__TRACKER_RUNNING);
    /* and silence is still judged: nothing more comes, the rank fails */
    int64_t deadline = rally__deadline(WAIT_MS);
    while (fx.rank_failed == 0 && rally__ms_left(deadline) > 0)
        spin();
    assert_int_equal(fx.rank_failed, 1);
    rally__tclient_close(&w.c);
    stop();
}

/* A stranger that sends a HELLO for another job hears that it is refused,
 * and not which job this is. */
static void refusal_does_not_tell_a_stranger_the_job_id(void **state_)
{
    (void)state_;
    start(1, 0);
    int fd = raw_connect();
    unsigned char b[64];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__w_u32(&w, RALLY__AUTH_MAGIC);
    rally__w_u16(&w, RALLY__WIRE_VERSION);
    rally__w_u16(&w, RALLY__ROLE_WORKER);
    rally__w_u64(&w, fx.s.job_id ^ 1);
    rally__w_u32(&w, (uint32_t)-1);
    rally__w_u32(&w, 0);
    memset(rally__wbuf_take(&w, RALLY__NONCE_NBYTES), 7, RALLY__NONCE_NBYTES);
    struct rally__err e = {0, ""};
    assert_int_equal(rally__frame_send(fd, RALLY__F_HELLO, b, w.len, rally__deadline(WAIT_MS),
                                       "tracker", &e),
                     RALLY_OK);
    int64_t deadline = rally__deadline(WAIT_MS);
    struct pollfd q = {.fd = fd, .events = POLLIN};
    while (poll(&q, 1, 0) == 0 && rally__ms_left(deadline) > 0)
        spin();
    unsigned char body[RALLY__AUTH_OUT_MAX + 1];
    uint16_t type;
    size_t n;
    assert_int_equal(rally__frame_recv(fd, &type, body, sizeof body - 1, &n,
                                       rally__deadline(WAIT_MS), "tracker", &e),
                     RALLY_OK);
    body[n] = '\0';
    char ours[32];
    snprintf(ours, sizeof ours, "%016" PRIx64, fx.s.job_id);
    print_message("refusal: %s\n", (const char *)body + 8);
    assert_int_equal(type, RALLY__F_REFUSE);
    assert_null(strstr((const char *)body + 8, ours));
    assert_non_null(strstr((const char *)body + 8, "job"));
    close(fd);
    stop();
}

/* A secret file must belong to the user who reads it, not only be private. */
static void secret_of_another_user_is_refused(void **state_)
{
    (void)state_;
    if (geteuid() != 0)
        skip(); /* only root can give a file away */
    start(1, 0);
    struct rally__secret s;
    struct rally__err e = {0, ""};
    assert_int_equal(rally__secret_load(fx.secret_path, &s, &e), RALLY_OK);
    assert_int_equal(chown(fx.secret_path, 1, (gid_t)-1), 0);
    e = (struct rally__err){0, ""};
    assert_int_not_equal(rally__secret_load(fx.secret_path, &s, &e), RALLY_OK);
    print_message("%s\n", e.msg);
    assert_non_null(strstr(e.msg, "owned"));
    stop();
}

/* The first connection of a joining worker is dropped before its handshake
 * (as a flooded tracker may do): the worker tries again within its deadline
 * and joins. */
static void join_retries_a_dropped_connection(void **state_)
{
    (void)state_;
    struct rally__err e = {0, ""};
    int lfd, port;
    assert_int_equal(rally__tcp_listen("127.0.0.1", 0, 8, &lfd, &port, &e), RALLY_OK);
    memset(&fx, 0, sizeof fx);
    snprintf(fx.dir, sizeof fx.dir, "/tmp/rally-ct-XXXXXX");
    assert_non_null(mkdtemp(fx.dir));
    snprintf(fx.secret_path, sizeof fx.secret_path, "%s/secret", fx.dir);
    assert_int_equal(rally__secret_create(fx.secret_path, &fx.s, &e), RALLY_OK);
    snprintf(fx.addr, sizeof fx.addr, "127.0.0.1:%d", port);
    struct worker w;
    worker_start(&w, 0);
    int fd;
    assert_int_equal(rally__tcp_accept(lfd, rally__deadline(WAIT_MS), &fd, NULL, 0, &e),
                     RALLY_OK);
    close(fd); /* dropped before the handshake */
    close(lfd);
    struct rally__tracker_opts o = {.world = 1,
                                    .host = "127.0.0.1",
                                    .port = port,
                                    .secret = &fx.s,
                                    .startup_timeout_ms = WAIT_MS,
                                    .event = on_event};
    assert_int_equal(rally__tracker_new(&fx.t, &o, &e), RALLY_OK);
    int done = spin_until(&w.done);
    pthread_join(w.th, NULL);
    if (w.rc != RALLY_OK)
        print_message("join: %s\n", w.e.msg);
    assert_true(done);
    assert_int_equal(w.rc, RALLY_OK);
    rally__tclient_close(&w.c);
    stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(large_header_before_auth_is_dropped_without_allocating),
        cmocka_unit_test(flood_of_strangers_does_not_lock_out_a_worker),
        cmocka_unit_test(stalled_loop_reads_heartbeats_before_judging),
        cmocka_unit_test(refusal_does_not_tell_a_stranger_the_job_id),
        cmocka_unit_test(secret_of_another_user_is_refused),
        cmocka_unit_test(join_retries_a_dropped_connection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
