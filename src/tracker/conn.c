/*
 * conn.c — the tracker's connections: accept, handshake, frames in, queues
 * out, reported one at a time (conn.h).
 *
 * Connections sit in s->conns in accept order; slot i + 1 of the pollfd
 * slice is conns[i] (slot 0 is the listening socket).  A closed connection
 * is only marked (gone, fd -1) during a round and freed when the round ends,
 * so the slice stays valid throughout.  rally__conns_next() is a resumable
 * walk over the stages IO, TIMERS, FLUSH and ACCEPT: s->cur says where it
 * stands.  Output waits in a queue of chunks per connection; a chunk owns
 * its bytes or points into a shared book.  Strangers (not yet
 * authenticated) are counted in s->nstrangers (recounted at each sweep);
 * past max_strangers, accept_some() makes room by closing one (give_way).
 */
#include "tracker/conn.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/wire.h"

#define FRAMES_PER_WAKE 64 /* fairness: frames read from one conn per round */
#define CLOSE_LINGER_MS 2000 /* time a refused connection gets to read why */
#define GIVE_WAY_LOG_MS 1000 /* at most one line per second about strangers dropped for room */

enum { ST_PENDING, ST_IO, ST_TIMERS, ST_FLUSH, ST_ACCEPT, ST_END };

struct rally__conn_book {
    int refs;
    size_t nbytes;
    unsigned char b[];
};

struct rally__conn_chunk {
    struct rally__conn_chunk *next;
    const unsigned char *p;
    size_t n, off;
    struct rally__conn_book *book; /* holds a reference when p points into it */
    unsigned char own[];
};

struct rally__conns {
    struct rally__conns_opts o;
    int lfd, port;
    struct rally__conn **conns;
    size_t nconns, cap;
    struct rally__conn *pending; /* BAD reports waiting (a frame could not be queued) */
    size_t nstrangers;           /* connections not authenticated (closed ones excluded) */
    unsigned long gave_way;      /* strangers closed to make room, ever */
    int64_t gave_way_logged;     /* ms: the last line about it */
    struct {
        struct pollfd *p;
        size_t cap;
    } fresh; /* refresh()'s, reused */
    /* the round */
    int stage;
    size_t cur, nslots;
    short lrev; /* the listening socket's revents */
    int64_t timers_at;
    int refreshed;
    int accepts_left;
    int64_t now;
    char line[RALLY__ERR_MSG_MAX + 128]; /* a LOG report's text */
};

struct rally__conn_book *rally__conn_book_new(const void *bytes, size_t nbytes)
{
    struct rally__conn_book *b = malloc(sizeof *b + nbytes);
    if (b != NULL) {
        b->refs = 1;
        b->nbytes = nbytes;
        if (nbytes)
            memcpy(b->b, bytes, nbytes);
    }
    return b;
}

void rally__conn_book_unref(struct rally__conn_book *b)
{
    if (b != NULL && --b->refs == 0)
        free(b);
}

static struct rally__conn_chunk *chunk_new(size_t own)
{
    struct rally__conn_chunk *k = malloc(sizeof *k + own);
    if (k != NULL) {
        k->next = NULL;
        k->p = k->own;
        k->n = own;
        k->off = 0;
        k->book = NULL;
    }
    return k;
}

static void chunk_free(struct rally__conn_chunk *k)
{
    rally__conn_book_unref(k->book);
    free(k);
}

static void push(struct rally__conn *c, struct rally__conn_chunk *k)
{
    if (c->out_tail)
        c->out_tail->next = k;
    else
        c->out_head = k;
    c->out_tail = k;
}

void rally__conn_close(struct rally__conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->gone = 1;
    while (c->out_head) {
        struct rally__conn_chunk *k = c->out_head;
        c->out_head = k->next;
        chunk_free(k);
    }
    c->out_tail = NULL;
    rally__frame_in_free(&c->in);
}

void rally__conn_send(struct rally__conns *s, struct rally__conn *c, uint16_t type,
                      const void *body, size_t nbytes, struct rally__conn_book *b,
                      const void *tail, size_t tail_nbytes)
{
    if (c->gone)
        return;
    size_t book_nbytes = b ? b->nbytes : 0;
    struct rally__conn_chunk *k = chunk_new(RALLY__FRAME_HDR + nbytes);
    struct rally__conn_chunk *x = b ? chunk_new(0) : NULL;
    struct rally__conn_chunk *y = tail_nbytes ? chunk_new(tail_nbytes) : NULL;
    if (k == NULL || (b && x == NULL) || (tail_nbytes && y == NULL)) {
        free(k);
        free(x);
        free(y);
        rally__conn_close(c);
        snprintf(c->why, sizeof c->why, "%s: out of memory queueing a frame", c->name);
        c->bad_pending = 1;
        c->pending_next = s->pending;
        s->pending = c;
        return;
    }
    rally__frame_hdr(k->own, type, nbytes + book_nbytes + tail_nbytes);
    if (nbytes)
        memcpy(k->own + RALLY__FRAME_HDR, body, nbytes);
    push(c, k);
    if (x) {
        x->p = b->b;
        x->n = b->nbytes;
        x->book = b;
        b->refs++;
        push(c, x);
    }
    if (y) {
        memcpy(y->own, tail, tail_nbytes);
        push(c, y);
    }
}

void rally__conn_admit(struct rally__conn *c)
{
    c->deadline = RALLY__NEVER;
}

void rally__conn_linger(struct rally__conn *c, int64_t now_ms)
{
    c->closing = 1;
    c->deadline = now_ms + CLOSE_LINGER_MS;
}

/* --- reports --------------------------------------------------------------- */

static int log_line(struct rally__conns *s, struct rally__conn_report *r, const char *fmt, ...)
    RALLY__PRINTF(3, 4);
static int log_line(struct rally__conns *s, struct rally__conn_report *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->line, sizeof s->line, fmt, ap);
    va_end(ap);
    *r = (struct rally__conn_report){.kind = RALLY__CONN_LOG, .text = s->line};
    return 1;
}

/* c failed: an authenticated one is reported (kind), a stranger logged. */
static int failed(struct rally__conns *s, struct rally__conn *c, int kind, const char *why,
                  struct rally__conn_report *r)
{
    snprintf(c->why, sizeof c->why, "%s", why);
    rally__conn_close(c);
    if (!c->authed)
        return log_line(s, r, "dropping %s", c->why);
    *r = (struct rally__conn_report){.kind = kind, .c = c, .text = c->why};
    return 1;
}

/* Writes what c's queue holds until the socket is full; 1 with a report
 * when the connection broke. */
static int flush(struct rally__conns *s, struct rally__conn *c, struct rally__conn_report *r)
{
    while (c->out_head && !c->gone) {
        struct rally__conn_chunk *k = c->out_head;
        struct rally__err e = {0, ""};
        long m = rally__send_some(c->fd, k->p + k->off, k->n - k->off, c->name, &e);
        if (m < 0)
            return failed(s, c, RALLY__CONN_LOST, e.msg, r);
        if (m == 0)
            return 0;
        k->off += (size_t)m;
        if (k->off == k->n) {
            c->out_head = k->next;
            if (c->out_head == NULL)
                c->out_tail = NULL;
            chunk_free(k);
        }
    }
    if (c->closing && c->out_head == NULL && !c->gone)
        rally__conn_close(c);
    return 0;
}

/* One frame through the handshake; 1 with a report when there is one. */
static int handshake(struct rally__conns *s, struct rally__conn *c, struct rally__conn_report *r)
{
    struct rally__err e = {0, ""};
    unsigned char out[RALLY__AUTH_OUT_MAX];
    uint16_t ot;
    size_t on;
    c->hs_frames++;
    int rc = rally__auth_srv_step(&c->auth, rally__get_u16(c->hs + 4), c->hs + RALLY__FRAME_HDR,
                                  c->hs_got - RALLY__FRAME_HDR, &ot, out, &on, &e);
    if (rc == 1 && c->auth.peer.role != s->o.role) {
        rally__fail(&e, RALLY_EAUTH, "the tracker takes workers only (role %u)",
                    c->auth.peer.role);
        ot = RALLY__F_REFUSE;
        on = rally__auth_refusal(out, sizeof out, e.code, e.msg);
        rc = -1;
    }
    rally__conn_send(s, c, ot, out, on, NULL, NULL, 0);
    if (rc < 0) {
        rally__conn_linger(c, s->now);
        return log_line(s, r, "refusing %s: %s", c->name, e.msg);
    }
    if (rc == 1) {
        c->authed = 1;
        if (s->nstrangers > 0)
            s->nstrangers--;
        *r = (struct rally__conn_report){.kind = RALLY__CONN_AUTHED, .c = c};
        return 1;
    }
    return 0;
}

/* Reads c's next handshake frame into c->hs, never allocating: a header
 * that announces more than RALLY__CONN_HS_MAX bytes is refused at once.  1
 * when a whole frame is there, 0 when more bytes are needed, -1 (e set). */
static int hs_feed(struct rally__conn *c, struct rally__err *e)
{
    if (c->hs_ready) {
        c->hs_ready = 0;
        c->hs_got = 0;
    }
    for (;;) {
        size_t want = RALLY__FRAME_HDR;
        if (c->hs_got >= RALLY__FRAME_HDR) {
            uint32_t len = rally__get_u32(c->hs);
            uint16_t type = rally__get_u16(c->hs + 4), flags = rally__get_u16(c->hs + 6);
            if (flags != 0 || len > RALLY__CONN_HS_MAX) {
                rally__fail(e, RALLY_EPROTO,
                            "%s sent a %u-byte frame of type %u (flags 0x%x) before "
                            "authenticating; the handshake takes at most %d bytes",
                            c->name, len, type, flags, RALLY__CONN_HS_MAX);
                return -1;
            }
            want += len;
            if (c->hs_got == want) {
                c->hs_ready = 1;
                return 1;
            }
        }
        long k = rally__recv_some(c->fd, c->hs + c->hs_got, want - c->hs_got, c->name, e);
        if (k <= 0)
            return (int)k;
        c->hs_got += (size_t)k;
    }
}

/* Reads c's next frames; 1 with a report, 0 when nothing more is to be read. */
static int read_some(struct rally__conns *s, struct rally__conn *c, struct rally__conn_report *r)
{
    while (c->reads_left > 0 && !c->gone && !c->closing) {
        c->reads_left--;
        struct rally__err e = {0, ""};
        int k = c->authed ? rally__frame_in_feed(&c->in, c->fd, c->name, &e) : hs_feed(c, &e);
        if (k == 0)
            break;
        if (k < 0) {
            if (e.code == RALLY_EPEER && !c->authed) {
                char why[RALLY__ERR_MSG_MAX];
                snprintf(why, sizeof why, "%s: closed during the handshake", c->name);
                return failed(s, c, RALLY__CONN_LOST, why, r);
            }
            return failed(s, c, e.code == RALLY_EPEER ? RALLY__CONN_LOST : RALLY__CONN_BAD,
                          e.msg, r);
        }
        if (!c->authed) {
            if (handshake(s, c, r))
                return 1;
            continue;
        }
        *r = (struct rally__conn_report){.kind = RALLY__CONN_FRAME,
                                         .c = c,
                                         .type = c->in.type,
                                         .body = c->in.body,
                                         .nbytes = c->in.nbytes};
        return 1;
    }
    c->reads_left = 0;
    return 0;
}

static int io(struct rally__conns *s, struct rally__conn_report *r)
{
    for (; s->cur < s->nslots && s->cur < s->nconns; s->cur++) {
        struct rally__conn *c = s->conns[s->cur];
        if (c->gone || c->rev == 0)
            continue;
        if (c->rev & POLLOUT) {
            c->rev = (short)(c->rev & ~POLLOUT);
            if (flush(s, c, r))
                return 1;
        }
        if (!c->gone && !c->closing && (c->rev & (POLLIN | POLLHUP | POLLERR))) {
            if (read_some(s, c, r))
                return 1; /* this conn again on the next call */
        } else if (!c->gone && c->closing && (c->rev & (POLLHUP | POLLERR))) {
            rally__conn_close(c);
        }
        c->rev = 0;
    }
    return 0;
}

static int timers(struct rally__conns *s, struct rally__conn_report *r)
{
    for (; s->cur < s->nconns; s->cur++) {
        struct rally__conn *c = s->conns[s->cur];
        if (c->gone || s->now < c->deadline)
            continue;
        if (c->closing) {
            rally__conn_close(c);
            continue;
        }
        char why[RALLY__ERR_MSG_MAX];
        snprintf(why, sizeof why, "%s: no handshake and REGISTER within %lld ms", c->name,
                 (long long)s->o.handshake_ms);
        s->cur++;
        return failed(s, c, RALLY__CONN_BAD, why, r);
    }
    return 0;
}

static int flush_all(struct rally__conns *s, struct rally__conn_report *r)
{
    for (; s->cur < s->nconns; s->cur++) {
        struct rally__conn *c = s->conns[s->cur];
        if (c->out_head && flush(s, c, r)) {
            s->cur++;
            return 1;
        }
    }
    return 0;
}

/* Frees the closed conns, keeping the others in order. */
static void sweep(struct rally__conns *s)
{
    size_t k = 0;
    s->nstrangers = 0;
    for (size_t i = 0; i < s->nconns; i++) {
        struct rally__conn *c = s->conns[i];
        if (c->gone && !c->bad_pending) {
            free(c->user);
            free(c);
        } else {
            s->conns[k++] = c;
            s->nstrangers += !c->gone && !c->authed;
        }
    }
    s->nconns = k;
}

/* Makes room for one more stranger: closes a refused one still lingering,
 * else the oldest that has sent no frame, else the oldest.  A worker that
 * knows the secret is past its HELLO within one round trip, so a flood of
 * idle connections gives way before it does.  1 with a LOG report (at most
 * one a second). */
static int give_way(struct rally__conns *s, struct rally__conn_report *r)
{
    struct rally__conn *refused = NULL, *idle = NULL, *oldest = NULL;
    for (size_t i = 0; i < s->nconns && refused == NULL; i++) {
        struct rally__conn *c = s->conns[i];
        if (c->gone || c->authed)
            continue;
        if (c->closing)
            refused = c;
        else if (idle == NULL && c->hs_frames == 0 && c->hs_got == 0)
            idle = c;
        else if (oldest == NULL)
            oldest = c;
    }
    struct rally__conn *v = refused ? refused : idle ? idle : oldest;
    if (v == NULL)
        return 0;
    rally__conn_close(v);
    s->nstrangers--;
    s->gave_way++;
    if (s->gave_way > 1 && s->now - s->gave_way_logged < GIVE_WAY_LOG_MS)
        return 0;
    s->gave_way_logged = s->now;
    return log_line(s, r,
                    "dropping %s to make room: %zu unauthenticated connections are open, the "
                    "limit (%lu dropped so far)",
                    v->name, s->o.max_strangers, s->gave_way);
}

static int grow(struct rally__conns *s)
{
    if (s->nconns < s->cap)
        return 0;
    size_t cap = s->cap ? 2 * s->cap : 16;
    struct rally__conn **v = realloc(s->conns, cap * sizeof *v);
    if (v == NULL)
        return -1;
    s->conns = v;
    s->cap = cap;
    return 0;
}

static int accept_some(struct rally__conns *s, struct rally__conn_report *r)
{
    while (s->accepts_left > 0) {
        s->accepts_left--;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            s->accepts_left = 0;
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
                errno != ECONNABORTED)
                return log_line(s, r, "accept failed: %s", strerror(errno));
            return 0;
        }
        char host[RALLY__HOST_MAX], hp[RALLY__HOST_MAX + 8];
        int port;
        rally__addr_str((struct sockaddr *)&ss, host, sizeof host, &port);
        rally__hostport_fmt(host, port, hp, sizeof hp);
        struct rally__conn *c = NULL;
        if (grow(s) != 0 || (c = calloc(1, sizeof *c)) == NULL) {
            close(fd);
            return log_line(s, r, "refusing a connection from %s: out of memory", hp);
        }
        c->fd = fd;
        c->deadline = rally__now_ms() + s->o.handshake_ms;
        snprintf(c->peer, sizeof c->peer, "%s", host);
        snprintf(c->what, sizeof c->what, "connection from %s", hp);
        c->name = c->what;
        struct rally__ident me = {s->o.role, -1, 0};
        rally__auth_srv_init(&c->auth, s->o.secret, &me);
        s->conns[s->nconns++] = c;
        if (++s->nstrangers > s->o.max_strangers && give_way(s, r))
            return 1;
    }
    return 0;
}

/* Polls every connection without waiting and adds what it sees to the
 * round's revents (the owner's poll may be old by now). */
static void refresh(struct rally__conns *s)
{
    if (s->nconns > s->fresh.cap) {
        struct pollfd *p = realloc(s->fresh.p, s->nconns * sizeof *p);
        if (p == NULL)
            return; /* the owner's revents stand; the next round looks again */
        s->fresh.p = p;
        s->fresh.cap = s->nconns;
    }
    for (size_t i = 0; i < s->nconns; i++) {
        const struct rally__conn *c = s->conns[i];
        s->fresh.p[i] = (struct pollfd){.fd = c->gone || c->closing ? -1 : c->fd,
                                        .events = POLLIN};
    }
    if (poll(s->fresh.p, s->nconns, 0) <= 0)
        return;
    for (size_t i = 0; i < s->nconns; i++) {
        struct rally__conn *c = s->conns[i];
        if (s->fresh.p[i].revents && !c->gone) {
            c->rev = (short)(c->rev | s->fresh.p[i].revents);
            c->reads_left = FRAMES_PER_WAKE;
            if (i >= s->nslots)
                s->nslots = i + 1;
        }
    }
}

void rally__conns_begin(struct rally__conns *s, const struct pollfd *p, size_t n, int64_t now_ms,
                        int64_t timers_ms)
{
    s->now = now_ms;
    s->timers_at = timers_ms;
    s->refreshed = 0;
    s->stage = ST_PENDING;
    s->cur = 0;
    s->nslots = n > 0 ? n - 1 : 0;
    s->lrev = n > 0 ? p[0].revents : 0;
    s->accepts_left = FRAMES_PER_WAKE;
    for (size_t i = 0; i < s->nconns; i++) {
        struct rally__conn *c = s->conns[i];
        c->rev = 0;
        c->reads_left = FRAMES_PER_WAKE;
        if (i + 1 < n && !c->gone && p[i + 1].fd == c->fd)
            c->rev = p[i + 1].revents;
    }
}

int rally__conns_next(struct rally__conns *s, struct rally__conn_report *r)
{
    /* frames that could not be queued: reported at the first chance */
    if (s->pending != NULL) {
        struct rally__conn *c = s->pending;
        s->pending = c->pending_next;
        c->bad_pending = 0;
        if (!c->authed)
            return log_line(s, r, "dropping %s", c->why);
        *r = (struct rally__conn_report){.kind = RALLY__CONN_BAD, .c = c, .text = c->why};
        return 1;
    }
    switch (s->stage) {
    case ST_PENDING:
        s->stage = ST_IO;
        /* fall through */
    case ST_IO:
        if (io(s, r))
            return 1;
        if (!s->refreshed && s->timers_at != RALLY__NEVER && rally__now_ms() >= s->timers_at) {
            /* a timer will judge: first read what came since the poll */
            s->refreshed = 1;
            s->now = rally__now_ms();
            refresh(s);
            s->cur = 0;
            if (io(s, r))
                return 1;
        }
        s->stage = ST_TIMERS;
        s->cur = 0;
        /* fall through */
    case ST_TIMERS:
        if (timers(s, r))
            return 1;
        s->stage = ST_FLUSH;
        s->cur = 0;
        *r = (struct rally__conn_report){.kind = RALLY__CONN_TIMERS};
        return 1;
    case ST_FLUSH:
        if (flush_all(s, r))
            return 1;
        sweep(s);
        s->stage = ST_ACCEPT;
        if (!(s->lrev & POLLIN))
            s->accepts_left = 0;
        /* fall through */
    case ST_ACCEPT:
        if (accept_some(s, r))
            return 1;
        s->stage = ST_END;
        /* fall through */
    default:
        return 0;
    }
}

size_t rally__conns_npoll(const struct rally__conns *s)
{
    return 1 + s->nconns;
}

size_t rally__conns_fill(struct rally__conns *s, struct pollfd *p, size_t cap)
{
    size_t n = 0;
    if (n < cap)
        p[n++] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
    for (size_t i = 0; i < s->nconns && n < cap; i++) {
        struct rally__conn *c = s->conns[i];
        short ev = (short)((c->closing ? 0 : POLLIN) | (c->out_head ? POLLOUT : 0));
        p[n++] = (struct pollfd){.fd = c->fd, .events = ev};
    }
    return n;
}

int64_t rally__conns_deadline(const struct rally__conns *s)
{
    int64_t d = RALLY__NEVER;
    for (size_t i = 0; i < s->nconns; i++)
        if (!s->conns[i]->gone && s->conns[i]->deadline < d)
            d = s->conns[i]->deadline;
    return d;
}

int rally__conns_flushed(const struct rally__conns *s)
{
    for (size_t i = 0; i < s->nconns; i++)
        if (s->conns[i]->out_head)
            return 0;
    return 1;
}

int rally__conns_port(const struct rally__conns *s)
{
    return s->port;
}

int rally__conns_new(struct rally__conns **out, const struct rally__conns_opts *o,
                     struct rally__err *e)
{
    struct rally__conns *s = calloc(1, sizeof *s);
    if (s == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory creating the tracker");
    s->o = *o;
    s->o.host = NULL; /* not kept */
    s->lfd = -1;
    s->stage = ST_END;
    if (rally__tcp_listen(o->host ? o->host : "", o->port, o->backlog, &s->lfd, &s->port, e) !=
        RALLY_OK) {
        rally__conns_free(s);
        return e->code;
    }
    *out = s;
    return RALLY_OK;
}

void rally__conns_free(struct rally__conns *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->nconns; i++) {
        rally__conn_close(s->conns[i]);
        free(s->conns[i]->user);
        free(s->conns[i]);
    }
    if (s->lfd >= 0)
        close(s->lfd);
    free(s->fresh.p);
    free(s->conns);
    free(s);
}
