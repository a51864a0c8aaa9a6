/*
 * tracker_rig.c — the embedded tracker's test rig (tracker_rig.h).
 */
#include "tracker_rig.h"

struct fixture fx;

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

void start(int world, int64_t startup_ms, int64_t handshake_ms)
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

void stop(void)
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

int state(const char **sentence)
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
int logged(const char *buf, const char *what)
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

int joinc(struct rally__tclient *c, const char *task, const char *secret_path,
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


static void *join_main(void *arg)
{
    struct async_join *j = arg;
    j->rc = joinc(&j->c, j->task, NULL, &j->e);
    return NULL;
}

void join_start(struct async_join *j, const char *task)
{
    memset(j, 0, sizeof *j);
    j->task = task;
    assert_int_equal(pthread_create(&j->th, NULL, join_main, j), 0);
}

int join_end(struct async_join *j)
{
    pthread_join(j->th, NULL);
    return j->rc;
}

int raw_connect(void)
{
    struct rally__err e = {0, ""};
    int fd;
    assert_int_equal(rally__tcp_connect("127.0.0.1", rally__tracker_port(fx.t),
                                        rally__deadline(WAIT_MS), &fd, &e),
                     RALLY_OK);
    return fd;
}

/* A connection that passed the handshake, as a worker would. */
int raw_authed(void)
{
    struct rally__err e = {0, ""};
    int fd = raw_connect();
    struct rally__ident me = {RALLY__ROLE_WORKER, -1, 0}, peer;
    assert_int_equal(
        rally__auth_connect(fd, &fx.s, &me, -1, &peer, rally__deadline(WAIT_MS), "tracker", &e),
        RALLY_OK);
    return fd;
}

void raw_send(int fd, uint16_t type, const void *body, size_t n)
{
    struct rally__err e = {0, ""};
    assert_int_equal(rally__frame_send(fd, type, body, n, rally__deadline(WAIT_MS), "tracker", &e),
                     RALLY_OK);
}

/* Reads frames until the tracker closes fd; returns 1 on EOF within WAIT_MS.
 * *last_type (may be NULL) gets the type of the last frame seen (0: none). */
int closed_by_tracker(int fd, uint16_t *last_type)
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

size_t register_body(unsigned char *b, size_t cap, const char *task, uint32_t world_hint)
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
void foreign_secret(char *path, size_t cap, int other_job)
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
