/*
 * http_test.c — unit tests of rally-run's status server (tools/watch/http.h)
 * on loopback, its poll loop in a thread of the test: it answers GET and
 * HEAD, refuses a request without the token (401) and takes it as a bearer
 * header or a query parameter, answers beside 200 idle connections, keeps
 * serving while a client that stopped reading holds a large answer, closes
 * idle and stalled connections at their deadline, and refuses one
 * connection over its limit with 503.  The loop's turns are counted: a turn
 * that took longer than a second would mean the server waited.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
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
#include <unistd.h>

#include <cmocka.h>

#include "watch/http.h"
#include "util/clock.h"

#define BIG (8u << 20) /* an answer no socket buffer holds */

struct server {
    struct rally__http *h;
    pthread_t thread;
    volatile int stop;
    volatile int64_t longest_turn_ms;
    char *big;
};

static void handler(void *arg, const char *path, struct rally__http_resp *r)
{
    struct server *s = arg;
    if (strcmp(path, "/hello") == 0)
        *r = (struct rally__http_resp){200, "text/plain", "hello\n", 6};
    else if (strcmp(path, "/big") == 0)
        *r = (struct rally__http_resp){200, "application/octet-stream", s->big, BIG};
}

static void *loop(void *arg)
{
    struct server *s = arg;
    size_t cap = rally__http_npoll(s->h);
    struct pollfd *p = calloc(cap, sizeof *p);
    while (!s->stop) {
        size_t n = rally__http_fill(s->h, p, cap);
        int64_t d = rally__http_deadline(s->h);
        int ms = d == RALLY__NEVER ? 50 : (int)rally__ms_left(d);
        poll(p, n, ms < 50 ? ms : 50);
        int64_t t0 = rally__now_ms();
        rally__http_handle(s->h, p, n, rally__now_ms());
        int64_t took = rally__now_ms() - t0;
        if (took > s->longest_turn_ms)
            s->longest_turn_ms = took;
    }
    free(p);
    return NULL;
}

static struct server *start(const char *token, int max_conns, int64_t timeout_ms)
{
    struct server *s = calloc(1, sizeof *s);
    s->big = malloc(BIG);
    memset(s->big, 'x', BIG);
    struct rally__http_opts o = {.host = "127.0.0.1",
                                 .token = token,
                                 .max_conns = max_conns,
                                 .timeout_ms = timeout_ms,
                                 .handler = handler,
                                 .arg = s};
    char why[256];
    assert_int_equal(rally__http_new(&s->h, &o, why, sizeof why), 0);
    assert_int_equal(pthread_create(&s->thread, NULL, loop, s), 0);
    return s;
}

static void stop(struct server *s)
{
    s->stop = 1;
    pthread_join(s->thread, NULL);
    assert_true(s->longest_turn_ms < 1000);
    rally__http_free(s->h);
    free(s->big);
    free(s);
}

static int dial(struct server *s)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(rally__http_port(s->h))};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

/* Sends req, reads the whole answer into buf; the status code. */
static int ask(struct server *s, const char *req, char *buf, size_t cap)
{
    int fd = dial(s);
    assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
    size_t n = 0;
    ssize_t k;
    while (n + 1 < cap && (k = recv(fd, buf + n, cap - 1 - n, 0)) > 0)
        n += (size_t)k;
    buf[n] = '\0';
    close(fd);
    int code = 0;
    sscanf(buf, "HTTP/1.1 %d", &code);
    return code;
}

static void answers_get_and_head(void **state)
{
    (void)state;
    struct server *s = start(NULL, 0, 0);
    char buf[4096];
    assert_int_equal(ask(s, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n", buf, sizeof buf), 200);
    assert_non_null(strstr(buf, "Content-Length: 6\r\n"));
    assert_non_null(strstr(buf, "\r\n\r\nhello\n"));
    assert_int_equal(ask(s, "HEAD /hello HTTP/1.1\r\n\r\n", buf, sizeof buf), 200);
    assert_null(strstr(buf, "hello\n"));
    assert_int_equal(ask(s, "GET /nothing HTTP/1.1\r\n\r\n", buf, sizeof buf), 404);
    assert_int_equal(ask(s, "POST /hello HTTP/1.1\r\n\r\n", buf, sizeof buf), 405);
    assert_int_equal(ask(s, "nonsense\r\n\r\n", buf, sizeof buf), 400);
    stop(s);
}

static void refuses_without_the_token(void **state)
{
    (void)state;
    struct server *s = start("s3cret", 0, 0);
    char buf[4096];
    assert_int_equal(ask(s, "GET /hello HTTP/1.1\r\n\r\n", buf, sizeof buf), 401);
    assert_null(strstr(buf, "hello\n"));
    assert_non_null(strstr(buf, "WWW-Authenticate: Bearer"));
    assert_int_equal(ask(s, "GET /hello?token=s3cre HTTP/1.1\r\n\r\n", buf, sizeof buf), 401);
    assert_int_equal(ask(s, "GET /hello?token=s3cret0 HTTP/1.1\r\n\r\n", buf, sizeof buf), 401);
    assert_int_equal(
        ask(s, "GET /hello HTTP/1.1\r\nAuthorization: Bearer wrong\r\n\r\n", buf, sizeof buf), 401);
    assert_int_equal(ask(s, "GET /hello?a=1&token=s3cret HTTP/1.1\r\n\r\n", buf, sizeof buf), 200);
    assert_int_equal(
        ask(s, "GET /hello HTTP/1.1\r\nauthorization: bearer s3cret\r\n\r\n", buf, sizeof buf),
        200);
    stop(s);
}

static void idle_and_stalled_clients_cost_nothing(void **state)
{
    (void)state;
    struct server *s = start(NULL, 256, 1500);
    int idle[200];
    for (int i = 0; i < 200; i++)
        idle[i] = dial(s);
    /* a client that asks for a large answer and stops reading */
    int stalled = dial(s);
    const char *req = "GET /big HTTP/1.1\r\n\r\n";
    assert_int_equal(send(stalled, req, strlen(req), 0), (ssize_t)strlen(req));
    char buf[4096];
    for (int i = 0; i < 20; i++)
        assert_int_equal(ask(s, "GET /hello HTTP/1.1\r\n\r\n", buf, sizeof buf), 200);
    int64_t until = rally__now_ms() + 5000; /* the last answer's close may lag its EOF */
    while (rally__http_open(s->h) != 201 && rally__now_ms() < until)
        usleep(1000);
    assert_int_equal(rally__http_open(s->h), 201);
    /* past the deadline every one of them is closed */
    until = rally__now_ms() + 10000;
    while (rally__http_open(s->h) > 0 && rally__now_ms() < until)
        usleep(20000);
    assert_int_equal(rally__http_open(s->h), 0);
    char c;
    assert_int_equal(recv(idle[0], &c, 1, 0), 0); /* EOF */
    for (int i = 0; i < 200; i++)
        close(idle[i]);
    close(stalled);
    stop(s);
}

static void over_the_limit_is_refused(void **state)
{
    (void)state;
    struct server *s = start(NULL, 4, 0);
    int held[4];
    for (int i = 0; i < 4; i++)
        held[i] = dial(s);
    int64_t until = rally__now_ms() + 5000;
    while (rally__http_open(s->h) < 4 && rally__now_ms() < until)
        usleep(10000);
    char buf[4096];
    assert_int_equal(ask(s, "GET /hello HTTP/1.1\r\n\r\n", buf, sizeof buf), 503);
    close(held[0]);
    until = rally__now_ms() + 5000;
    while (rally__http_open(s->h) > 3 && rally__now_ms() < until)
        usleep(10000);
    assert_int_equal(ask(s, "GET /hello HTTP/1.1\r\n\r\n", buf, sizeof buf), 200);
    for (int i = 1; i < 4; i++)
        close(held[i]);
    stop(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(answers_get_and_head),
        cmocka_unit_test(refuses_without_the_token),
        cmocka_unit_test(idle_and_stalled_clients_cost_nothing),
        cmocka_unit_test(over_the_limit_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
