/*
 * http.h — a small read-only HTTP/1.1 server for someone else's poll loop
 * (rally-run --status): GET and HEAD, one request per connection
 * (Connection: close), the body made by the owner's handler.
 *
 * It never blocks the loop it lives in.  Every socket is non-blocking; a
 * connection that has not sent its whole request, or has not taken its
 * whole response, within timeout_ms is closed; at most max_conns are open
 * (one more is accepted and closed at once), so idle or stalled clients cost
 * a descriptor each for a while, never the job.  Like the tracker
 * (src/tracker/server.h): fill the pollfds it asks for, poll, hand it the
 * revents and the time.
 *
 * A token (given when the server is bound off loopback): every request must
 * carry it, as "Authorization: Bearer TOKEN" or a "token=TOKEN" query
 * parameter (the page's own requests carry the one in its address); without
 * it the answer is 401 and the handler is not called.
 */
#ifndef RALLY_TOOLS_LAUNCH_HTTP_H
#define RALLY_TOOLS_LAUNCH_HTTP_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

/* What the handler answers: status (200, 404, ...), a content type and the
 * body (the handler's storage, valid until the handler is called again). */
struct rally__http_resp {
    int status;
    const char *type;
    const char *body;
    size_t nbytes;
};

/* path: the request's path without its query ("/status.json"). */
typedef void (*rally__http_fn)(void *arg, const char *path, struct rally__http_resp *resp);

struct rally__http_opts {
    const char *host;   /* the address to bind ("127.0.0.1", "::1", "198.18.0.1", "*") */
    int port;           /* 0: the kernel picks */
    const char *token;  /* NULL: none asked for */
    int max_conns;      /* 0: 256 */
    int64_t timeout_ms; /* per request and per response; 0: 10000 */
    rally__http_fn handler;
    void *arg;
};

struct rally__http;

/* Binds and listens.  0, or errno with why[cap] saying what failed. */
int rally__http_new(struct rally__http **out, const struct rally__http_opts *o, char *why,
                    size_t cap);
void rally__http_free(struct rally__http *h); /* NULL is fine */
int rally__http_port(const struct rally__http *h);

/* The pollfd slots fill may need: 1 + max_conns. */
size_t rally__http_npoll(const struct rally__http *h);
size_t rally__http_fill(struct rally__http *h, struct pollfd *p, size_t cap);
/* Handles exactly the slice fill wrote, and every deadline passed by now_ms. */
void rally__http_handle(struct rally__http *h, const struct pollfd *p, size_t n, int64_t now_ms);
/* The earliest moment handle must run without I/O (INT64_MAX: none). */
int64_t rally__http_deadline(const struct rally__http *h);
/* Connections open now (for tests and the status page). */
int rally__http_open(const struct rally__http *h);

#endif
