/*
 * http.c — a small read-only HTTP/1.1 server in someone else's poll loop
 * (http.h).
 *
 * A connection is a slot: its request is read into a fixed buffer until the
 * blank line ends the headers, the answer (status line, headers, body) is
 * built in the slot's output buffer, which the slot keeps for the next
 * connection, and written as the socket takes it; then the connection is
 * closed.  Nothing here waits: accept, recv and send are non-blocking, and
 * each slot has a deadline.
 */
#include "watch/http.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/sock.h"
#include "util/clock.h"

#define REQ_MAX 8192 /* a request's line and headers */

struct conn {
    int fd;      /* -1: a free slot */
    int writing; /* the answer is built; sending it */
    int64_t deadline;
    char in[REQ_MAX];
    size_t inlen;
    char *out; /* kept across connections */
    size_t outlen, outoff, outcap;
};

struct rally__http {
    int lfd, port;
    char token[128]; /* "": none asked for */
    int max;
    int64_t timeout_ms;
    rally__http_fn handler;
    void *arg;
    struct conn *c;
    int nopen;
    int *slot_of; /* the conn each pollfd slot after the listener holds */
};

int rally__http_new(struct rally__http **out, const struct rally__http_opts *o, char *why,
                    size_t cap)
{
    struct rally__http *h = calloc(1, sizeof *h);
    int max = o->max_conns > 0 ? o->max_conns : 256;
    if (h == NULL || (h->c = calloc((size_t)max, sizeof *h->c)) == NULL ||
        (h->slot_of = calloc((size_t)max, sizeof *h->slot_of)) == NULL) {
        if (h)
            free(h->c);
        free(h);
        snprintf(why, cap, "out of memory");
        return ENOMEM;
    }
    h->max = max;
    for (int i = 0; i < max; i++)
        h->c[i].fd = -1;
    h->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 10000;
    h->handler = o->handler;
    h->arg = o->arg;
    snprintf(h->token, sizeof h->token, "%s", o->token ? o->token : "");
    struct rally__err e = {0};
    if (rally__tcp_listen(o->host, o->port, 128, &h->lfd, &h->port, &e) != RALLY_OK) {
        snprintf(why, cap, "%s", e.msg);
        free(h->slot_of);
        free(h->c);
        free(h);
        return EADDRNOTAVAIL;
    }
    fcntl(h->lfd, F_SETFL, fcntl(h->lfd, F_GETFL) | O_NONBLOCK);
    *out = h;
    return 0;
}

static void drop(struct rally__http *h, struct conn *c)
{
    close(c->fd);
    c->fd = -1;
    c->writing = 0;
    c->inlen = c->outlen = c->outoff = 0;
    h->nopen--;
}

void rally__http_free(struct rally__http *h)
{
    if (h == NULL)
        return;
    for (int i = 0; i < h->max; i++) {
        if (h->c[i].fd >= 0)
            drop(h, &h->c[i]);
        free(h->c[i].out);
    }
    close(h->lfd);
    free(h->slot_of);
    free(h->c);
    free(h);
}

int rally__http_port(const struct rally__http *h)
{
    return h->port;
}

int rally__http_open(const struct rally__http *h)
{
    return h->nopen;
}

size_t rally__http_npoll(const struct rally__http *h)
{
    return 1 + (size_t)h->max;
}

size_t rally__http_fill(struct rally__http *h, struct pollfd *p, size_t cap)
{
    size_t n = 0;
    if (cap == 0)
        return 0;
    p[n++] = (struct pollfd){.fd = h->lfd, .events = POLLIN};
    for (int i = 0; i < h->max && n < cap; i++) {
        if (h->c[i].fd < 0)
            continue;
        h->slot_of[n - 1] = i;
        p[n++] = (struct pollfd){.fd = h->c[i].fd, .events = h->c[i].writing ? POLLOUT : POLLIN};
    }
    return n;
}

int64_t rally__http_deadline(const struct rally__http *h)
{
    int64_t d = RALLY__NEVER;
    for (int i = 0; i < h->max; i++)
        if (h->c[i].fd >= 0 && h->c[i].deadline < d)
            d = h->c[i].deadline;
    return d;
}

static int reserve(struct conn *c, size_t n)
{
    if (n <= c->outcap)
        return 0;
    size_t cap = c->outcap ? c->outcap : 4096;
    while (cap < n)
        cap *= 2;
    char *p = realloc(c->out, cap);
    if (p == NULL)
        return -1;
    c->out = p;
    c->outcap = cap;
    return 0;
}

static const char *reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 431:
        return "Request Header Fields Too Large";
    case 503:
        return "Service Unavailable";
    default:
        return "Internal Server Error";
    }
}

/* The answer into c's output buffer; head: no body (HEAD). */
static void answer(struct conn *c, int status, const char *type, const char *body, size_t nbytes,
                   int head, int64_t deadline)
{
    char hdr[512];
    int n = snprintf(hdr, sizeof hdr,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n%s"
                     "Connection: close\r\n\r\n",
                     status, reason(status), type, nbytes,
                     status == 401 ? "WWW-Authenticate: Bearer realm=\"rally\"\r\n" : "");
    size_t total = (size_t)n + (head ? 0 : nbytes);
    c->writing = 1;
    c->outoff = 0;
    c->deadline = deadline;
    if (reserve(c, total) != 0) {
        static const char oom[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                  "Connection: close\r\n\r\n";
        c->outlen = 0;
        if (reserve(c, sizeof oom) == 0) {
            memcpy(c->out, oom, sizeof oom - 1);
            c->outlen = sizeof oom - 1;
        }
        return;
    }
    memcpy(c->out, hdr, (size_t)n);
    if (!head && nbytes > 0)
        memcpy(c->out + n, body, nbytes);
    c->outlen = total;
}

/* b[0..bn) is the token t: its length is no secret, its bytes are compared
 * in constant time. */
static int same(const char *t, const char *b, size_t bn)
{
    return bn == strlen(t) && sodium_memcmp(t, b, bn) == 0;
}

/* The token from "Authorization: Bearer T" or the query's token=T. */
static int authorized(const struct rally__http *h, const char *query, const char *headers)
{
    if (!h->token[0])
        return 1;
    for (const char *q = query; q && *q;) {
        const char *end = strchr(q, '&');
        size_t n = end ? (size_t)(end - q) : strlen(q);
        if (n > 6 && strncmp(q, "token=", 6) == 0 && same(h->token, q + 6, n - 6))
            return 1;
        q = end ? end + 1 : NULL;
    }
    for (const char *l = headers; l && *l;) {
        const char *end = strstr(l, "\r\n");
        size_t n = end ? (size_t)(end - l) : strlen(l);
        if (n > 21 && strncasecmp(l, "Authorization:", 14) == 0) {
            const char *v = l + 14;
            while (*v == ' ' || *v == '\t')
                v++;
            size_t vn = n - (size_t)(v - l);
            if (vn > 7 && strncasecmp(v, "Bearer ", 7) == 0 && same(h->token, v + 7, vn - 7))
                return 1;
        }
        l = end ? end + 2 : NULL;
    }
    return 0;
}

/* c's request is whole: build the answer. */
static void serve(struct rally__http *h, struct conn *c, int64_t now_ms)
{
    int64_t deadline = now_ms + h->timeout_ms;
    char *eol = strstr(c->in, "\r\n");
    *eol = '\0';
    char *headers = eol + 2;
    char method[8], target[2048];
    if (sscanf(c->in, "%7s %2047s HTTP/1.%*c", method, target) != 2 || target[0] != '/') {
        answer(c, 400, "text/plain", "bad request\n", 12, 0, deadline);
        return;
    }
    int head = strcmp(method, "HEAD") == 0;
    if (!head && strcmp(method, "GET") != 0) {
        answer(c, 405, "text/plain", "only GET and HEAD\n", 18, 0, deadline);
        return;
    }
    char *query = strchr(target, '?');
    if (query)
        *query++ = '\0';
    if (!authorized(h, query, headers)) {
        static const char no[] = "this job's status needs its token: Authorization: Bearer TOKEN "
                                 "or ?token=TOKEN (rally-run printed it at the start)\n";
        answer(c, 401, "text/plain", no, sizeof no - 1, head, deadline);
        return;
    }
    struct rally__http_resp r = {404, "text/plain", "not found\n", 10};
    h->handler(h->arg, target, &r);
    answer(c, r.status, r.type, r.body, r.nbytes, head, deadline);
}

static void on_read(struct rally__http *h, struct conn *c, int64_t now_ms)
{
    for (;;) {
        if (c->inlen == REQ_MAX - 1) {
            answer(c, 431, "text/plain", "request too large\n", 18, 0, now_ms + h->timeout_ms);
            return;
        }
        ssize_t k = recv(c->fd, c->in + c->inlen, REQ_MAX - 1 - c->inlen, MSG_DONTWAIT);
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        if (k <= 0) {
            drop(h, c);
            return;
        }
        c->inlen += (size_t)k;
        c->in[c->inlen] = '\0';
        if (strstr(c->in, "\r\n\r\n") != NULL) {
            serve(h, c, now_ms);
            return;
        }
    }
}

static void on_write(struct rally__http *h, struct conn *c)
{
    while (c->outoff < c->outlen) {
        ssize_t k =
            send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        if (k <= 0) {
            drop(h, c);
            return;
        }
        c->outoff += (size_t)k;
    }
    shutdown(c->fd, SHUT_WR);
    drop(h, c);
}

static void on_accept(struct rally__http *h, int64_t now_ms)
{
    for (;;) {
        int fd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN, or out of descriptors: the next turn tries again */
        int i = 0;
        while (i < h->max && h->c[i].fd >= 0)
            i++;
        if (i == h->max) { /* full: refused at once */
            static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                       "Connection: close\r\n\r\n";
            (void)!send(fd, busy, sizeof busy - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
            close(fd);
            continue;
        }
        struct conn *c = &h->c[i];
        c->fd = fd;
        c->writing = 0;
        c->inlen = c->outlen = c->outoff = 0;
        c->deadline = now_ms + h->timeout_ms;
        h->nopen++;
    }
}

void rally__http_handle(struct rally__http *h, const struct pollfd *p, size_t n, int64_t now_ms)
{
    for (size_t k = 1; k < n; k++) {
        struct conn *c = &h->c[h->slot_of[k - 1]];
        if (c->fd != p[k].fd || p[k].revents == 0)
            continue;
        if (c->writing)
            on_write(h, c);
        else
            on_read(h, c, now_ms);
        if (c->fd >= 0 && c->writing) /* answered now: send what the socket takes */
            on_write(h, c);
    }
    if (n > 0 && (p[0].revents & POLLIN))
        on_accept(h, now_ms);
    for (int i = 0; i < h->max; i++)
        if (h->c[i].fd >= 0 && now_ms >= h->c[i].deadline)
            drop(h, &h->c[i]);
}
