/*
 * s3_status_test.c — what the S3 store (src/snapshot/store_s3.c) makes of
 * each class of HTTP status, against a server on 127.0.0.1 that answers
 * every request with one chosen status and body and counts the requests
 * (cmocka; no S3 needed):
 *
 *   2xx          the bytes, once
 *   5xx          tried again, 3 tries in all, then a failure naming the
 *                tries and S3's code and message (RALLY_ESYS)
 *   other 4xx    never tried again: 403 "access denied" naming the
 *                credentials, 404 NoSuchBucket "the bucket ... does not
 *                exist", 404 of an object "is missing" (RALLY_EPROTO, and
 *                the caller hears it is missing), 400 with S3's reason
 *                (InvalidBucketName); 416 of a read is an empty object
 *   a HEAD       its answer has no body: a refusal (400, 403, 409) asks
 *                again with a GET of the first byte, whose body names the
 *                reason (two requests); a 404 is a missing object (one)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
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

#include "snapshot/store.h"
#include "util/err.h"

/* The server: one answer for every request, and the requests counted. */
static struct {
    int fd, port, stop;
    int status;
    const char *body;
    int requests;
    pthread_mutex_t mu;
} srv = {.fd = -1, .mu = PTHREAD_MUTEX_INITIALIZER};

static void *serve(void *arg)
{
    (void)arg;
    for (;;) {
        int c = accept(srv.fd, NULL, NULL);
        if (c < 0)
            continue;
        pthread_mutex_lock(&srv.mu);
        int stop = srv.stop, status = srv.status;
        const char *body = srv.body;
        pthread_mutex_unlock(&srv.mu);
        if (stop) {
            close(c);
            return NULL;
        }
        /* the request's head (these requests carry no body) */
        char req[8192];
        size_t n = 0;
        while (n < sizeof req - 1) {
            ssize_t k = read(c, req + n, sizeof req - 1 - n);
            if (k <= 0)
                break;
            n += (size_t)k;
            req[n] = '\0';
            if (strstr(req, "\r\n\r\n") != NULL)
                break;
        }
        pthread_mutex_lock(&srv.mu);
        srv.requests++;
        pthread_mutex_unlock(&srv.mu);
        char head[256];
        int hn = snprintf(head, sizeof head,
                          "HTTP/1.1 %d X\r\nContent-Type: application/xml\r\n"
                          "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                          status, strlen(body));
        if (write(c, head, (size_t)hn) != hn || write(c, body, strlen(body)) < 0)
            fprintf(stderr, "s3_status_test: a reply was cut short\n");
        close(c);
    }
}

static pthread_t thread;

static int start(void **state)
{
    (void)state;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if ((srv.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        bind(srv.fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(srv.fd, 16) != 0 ||
        getsockname(srv.fd, (struct sockaddr *)&a, &al) != 0)
        return -1;
    srv.port = ntohs(a.sin_port);
    char ep[64];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%d", srv.port);
    setenv("AWS_ENDPOINT_URL", ep, 1);
    unsetenv("AWS_ENDPOINT_URL_S3");
    setenv("AWS_ACCESS_KEY_ID", "id", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
    setenv("AWS_REGION", "us-east-1", 1);
    unsetenv("AWS_SESSION_TOKEN");
    return pthread_create(&thread, NULL, serve, NULL) == 0 ? 0 : -1;
}

static int stop(void **state)
{
    (void)state;
    pthread_mutex_lock(&srv.mu);
    srv.stop = 1;
    pthread_mutex_unlock(&srv.mu);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)srv.port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); /* wakes the accept */
    if (c >= 0 && connect(c, (struct sockaddr *)&a, sizeof a) == 0)
        pthread_join(thread, NULL);
    if (c >= 0)
        close(c);
    close(srv.fd);
    return 0;
}

static int sink(void *arg, const void *p, size_t n)
{
    strncat(arg, p, n);
    return 0;
}

/* A read of s3://bucket/p/dir/obj answered with status and body: its
 * status, *requests the requests it made, *missing, the message in e. */
static int read_obj(int status, const char *body, int *requests, int *missing, char *got,
                    struct rally__err *e)
{
    pthread_mutex_lock(&srv.mu);
    srv.status = status;
    srv.body = body;
    srv.requests = 0;
    pthread_mutex_unlock(&srv.mu);
    struct rally__store *st = NULL;
    rally__err_clear(e);
    int rc = rally__store_open("s3://bucket/p", e, &st);
    assert_int_equal(rc, RALLY_OK);
    *missing = 0;
    got[0] = '\0';
    rc = st->ops->get(st, "dir", "obj", 1 << 20, sink, got, e, missing);
    rally__store_close(st);
    pthread_mutex_lock(&srv.mu);
    *requests = srv.requests;
    pthread_mutex_unlock(&srv.mu);
    return rc;
}

/* A look (HEAD, the store's size) at s3://bucket/p/dir/obj answered with
 * status and body: its status, *requests the requests it made, *missing,
 * the message in e. */
static int look_obj(int status, const char *body, int *requests, int *missing,
                    struct rally__err *e)
{
    pthread_mutex_lock(&srv.mu);
    srv.status = status;
    srv.body = body;
    srv.requests = 0;
    pthread_mutex_unlock(&srv.mu);
    struct rally__store *st = NULL;
    rally__err_clear(e);
    int rc = rally__store_open("s3://bucket/p", e, &st);
    assert_int_equal(rc, RALLY_OK);
    uint64_t nbytes = 0;
    *missing = 0;
    rc = st->ops->size(st, "dir", "obj", e, missing, &nbytes);
    rally__store_close(st);
    pthread_mutex_lock(&srv.mu);
    *requests = srv.requests;
    pthread_mutex_unlock(&srv.mu);
    return rc;
}

#define S3_ERR(code, msg) "<Error><Code>" code "</Code><Message>" msg "</Message></Error>"

static void statuses(void **state)
{
    (void)state;
    struct rally__err e = {0};
    int n, missing;
    char got[256];
    /* 2xx: the bytes, once */
    assert_int_equal(read_obj(200, "abc", &n, &missing, got, &e), RALLY_OK);
    assert_int_equal(n, 1);
    assert_string_equal(got, "abc");
    /* 5xx: three tries, then the failure names them and S3's reason */
    assert_int_equal(read_obj(503, S3_ERR("SlowDown", "Reduce your request rate."), &n,
                              &missing, got, &e),
                     RALLY_ESYS);
    assert_int_equal(n, 3);
    assert_non_null(strstr(e.msg, "(3 tries): HTTP 503 SlowDown: Reduce your request rate."));
    assert_string_equal(got, ""); /* an error's body is no object's bytes */
    assert_int_equal(read_obj(500, S3_ERR("InternalError", "We encountered an internal error."),
                              &n, &missing, got, &e),
                     RALLY_ESYS);
    assert_int_equal(n, 3);
    /* 4xx: once, each with its own sentence */
    assert_int_equal(read_obj(403, S3_ERR("SignatureDoesNotMatch", "The signature differs."), &n,
                              &missing, got, &e),
                     RALLY_ESYS);
    assert_int_equal(n, 1);
    assert_non_null(strstr(e.msg, "access denied (HTTP 403 SignatureDoesNotMatch"));
    assert_non_null(strstr(e.msg, "check the AWS credentials"));
    assert_int_equal(read_obj(404, S3_ERR("NoSuchBucket", "The bucket does not exist."), &n,
                              &missing, got, &e),
                     RALLY_ESYS);
    assert_int_equal(n, 1);
    assert_non_null(strstr(e.msg, "the bucket bucket does not exist"));
    assert_int_equal(missing, 0); /* a missing bucket is no missing object */
    assert_int_equal(read_obj(404, S3_ERR("NoSuchKey", "The key does not exist."), &n, &missing,
                              got, &e),
                     RALLY_EPROTO);
    assert_int_equal(n, 1);
    assert_int_equal(missing, 1);
    assert_non_null(strstr(e.msg, "is missing"));
    assert_int_equal(read_obj(400, S3_ERR("InvalidBucketName", "The bucket name is invalid."),
                              &n, &missing, got, &e),
                     RALLY_ESYS);
    assert_int_equal(n, 1);
    assert_non_null(strstr(e.msg, "HTTP 400 InvalidBucketName: The bucket name is invalid."));
    /* 416 of a read: a range of an empty object, no bytes */
    assert_int_equal(read_obj(416, S3_ERR("InvalidRange", "none"), &n, &missing, got, &e),
                     RALLY_OK);
    assert_int_equal(n, 1);
}

static void head_refusals(void **state)
{
    (void)state;
    struct rally__err e = {0};
    int n, missing;
    assert_int_equal(look_obj(400, S3_ERR("InvalidBucketName", "The bucket name is invalid."), &n,
                              &missing, &e),
                     RALLY_ESYS);
    assert_int_equal(n, 2);
    assert_non_null(strstr(e.msg, "the bucket name bucket is not valid (HTTP 400 "
                                  "InvalidBucketName: The bucket name is invalid."));
    assert_int_equal(look_obj(403, S3_ERR("SignatureDoesNotMatch", "The signature differs."), &n,
                              &missing, &e),
                     RALLY_ESYS);
    assert_int_equal(n, 2);
    assert_non_null(strstr(e.msg, "access denied (HTTP 403 SignatureDoesNotMatch: The signature"));
    assert_int_equal(look_obj(409, S3_ERR("OperationAborted", "Try again."), &n, &missing, &e),
                     RALLY_ESYS);
    assert_int_equal(n, 2);
    assert_non_null(strstr(e.msg, "HTTP 409 OperationAborted: Try again."));
    /* a missing object is no refusal: looked at before every write, once */
    assert_int_equal(look_obj(404, "", &n, &missing, &e), RALLY_EPROTO);
    assert_int_equal(n, 1);
    assert_int_equal(missing, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(statuses),
        cmocka_unit_test(head_refusals),
    };
    return cmocka_run_group_tests(tests, start, stop);
}
