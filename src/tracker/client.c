/*
 * client.c — a worker's side of the tracker protocol (client.h, proto.h).
 *
 * Every byte from the tracker is read through one incremental frame reader,
 * t->in.  The blocking calls (join, ready, shutdown) wait for a frame with
 * next_frame(), which polls t->fd until the reader holds a whole frame or the
 * deadline passes; rally__tclient_check() feeds the same reader once and
 * returns, so a partial frame left by one call is completed by the next and
 * a collective polling t->fd never blocks here.  An ABORT is the tracker's
 * verdict and becomes the caller's error verbatim; any frame the current
 * step does not expect is RALLY_EPROTO.
 */
#include "tracker/client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracker/proto.h"
#include "util/clock.h"
#include "util/wire.h"

#define SEND_TIMEOUT_MS 10000 /* PRINT: the tracker always reads, so this is slack */
#define REPORT_TIMEOUT_MS 1000

static const char *type_name(uint16_t type)
{
    switch (type) {
    case RALLY__T_ASSIGN: return "ASSIGN";
    case RALLY__T_GO: return "GO";
    case RALLY__T_BYE: return "BYE";
    case RALLY__T_ABORT: return "ABORT";
    default: return "an unknown type";
    }
}

/* Turns the ABORT in t->in into e. */
static int aborted(struct rally__tclient *t, struct rally__err *e)
{
    struct rally__rbuf r = {t->in.body, t->in.nbytes, 0, 0};
    char sentence[RALLY__ERR_MSG_MAX];
    uint32_t code = rally__r_u32(&r);
    rally__r_str(&r, sentence, sizeof sentence);
    if (r.bad || r.pos != r.len)
        return rally__fail(e, RALLY_EPROTO, "%s sent a malformed ABORT (%zu bytes)", t->what,
                           t->in.nbytes);
    if (code == RALLY_OK || code > RALLY_ESTATE)
        code = RALLY_EPEER;
    return rally__fail(e, (int)code, "%s", sentence);
}

/* Waits until t->in holds a whole frame, or the deadline. */
static int next_frame(struct rally__tclient *t, int64_t deadline, struct rally__err *e)
{
    for (;;) {
        int k = rally__frame_in_feed(&t->in, t->fd, t->what, e);
        if (k > 0)
            return RALLY_OK;
        if (k < 0)
            return e->code;
        struct pollfd p = {.fd = t->fd, .events = POLLIN};
        int n = poll(&p, 1, rally__ms_left(deadline));
        if (n == 0)
            return rally__fail(e, RALLY_ETIMEDOUT, "timed out waiting for %s", t->what);
        if (n < 0 && errno != EINTR)
            return rally__fail_errno(e, RALLY_ESYS, errno, "poll failed");
    }
}

/* Waits for a frame of the given type; ABORT is the tracker's error. */
static int expect(struct rally__tclient *t, uint16_t type, int64_t deadline, struct rally__err *e)
{
    if (next_frame(t, deadline, e) != RALLY_OK)
        return e->code;
    if (t->in.type == RALLY__T_ABORT)
        return aborted(t, e);
    if (t->in.type != type)
        return rally__fail(e, RALLY_EPROTO, "%s sent frame type %u (%s) where %s was due", t->what,
                           t->in.type, type_name(t->in.type), type_name(type));
    if ((type == RALLY__T_GO || type == RALLY__T_BYE) && t->in.nbytes != 0)
        return rally__fail(e, RALLY_EPROTO, "%s sent a %s with a %zu-byte body", t->what,
                           type_name(type), t->in.nbytes);
    return RALLY_OK;
}

static int parse_assign(struct rally__tclient *t, struct rally__err *e)
{
    struct rally__rbuf r = {t->in.body, t->in.nbytes, 0, 0};
    int32_t rank = (int32_t)rally__r_u32(&r);
    uint32_t world = rally__r_u32(&r);
    uint32_t inc = rally__r_u32(&r);
    if (r.bad || world < 1 || world > RALLY__WORLD_MAX || rank < 0 || (uint32_t)rank >= world)
        return rally__fail(e, RALLY_EPROTO, "%s sent a malformed ASSIGN (rank %d of %u)", t->what,
                           (int)rank, world);
    struct rally__peer_addr *p = calloc(world, sizeof *p);
    if (p == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory for an address book of %u", world);
    for (uint32_t i = 0; i < world; i++) {
        rally__r_str(&r, p[i].host, sizeof p[i].host);
        p[i].port = rally__r_u16(&r);
        p[i].incarnation = rally__r_u32(&r);
    }
    if (r.bad || r.pos != r.len) {
        free(p);
        return rally__fail(e, RALLY_EPROTO, "%s sent a malformed ASSIGN (%zu bytes for %u workers)",
                           t->what, t->in.nbytes, world);
    }
    t->rank = rank;
    t->world = (int)world;
    t->incarnation = inc;
    t->peers = p;
    return RALLY_OK;
}

int rally__tclient_join(struct rally__tclient *t, const struct rally__tclient_opts *o,
                        struct rally__err *e)
{
    char host[RALLY__HOST_MAX];
    int port;
    memset(t, 0, sizeof *t);
    t->fd = -1;
    t->rank = -1;
    if (rally__hostport_split(o->tracker, host, sizeof host, &port, e) != RALLY_OK)
        goto cleanup;
    snprintf(t->what, sizeof t->what, "tracker %s:%d", host, port);
    int64_t deadline = rally__deadline(o->connect_timeout_ms);
    if (rally__secret_load(o->secret_file, &t->secret, e) != RALLY_OK ||
        rally__tcp_connect(host, port, deadline, &t->fd, e) != RALLY_OK)
        goto cleanup;
    struct rally__ident me = {RALLY__ROLE_WORKER, -1, 0}, peer;
    if (rally__auth_connect(t->fd, &t->secret, &me, -1, &peer, deadline, t->what, e) != RALLY_OK)
        goto cleanup;

    unsigned char b[3 * (4 + RALLY__HOST_MAX) + 16];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    const char *task = o->task_id ? o->task_id : "";
    const char *proc = o->processor_name ? o->processor_name : "";
    if (strlen(task) >= RALLY__HOST_MAX || strlen(proc) >= RALLY__HOST_MAX) {
        rally__fail(e, RALLY_EINVAL, "task id or processor name longer than %d bytes",
                    RALLY__HOST_MAX - 1);
        goto cleanup;
    }
    rally__w_str(&w, task);
    rally__w_u32(&w, (uint32_t)-1); /* want_rank: any */
    rally__w_u32(&w, 0);            /* world_hint: unknown */
    rally__w_u16(&w, (uint16_t)o->listen_port);
    rally__w_str(&w, ""); /* listen_host: the address the tracker sees */
    rally__w_str(&w, proc);
    if (rally__frame_send(t->fd, RALLY__T_REGISTER, b, w.len, deadline, t->what, e) != RALLY_OK ||
        expect(t, RALLY__T_ASSIGN, deadline, e) != RALLY_OK || parse_assign(t, e) != RALLY_OK)
        goto cleanup;
    return RALLY_OK;
cleanup:
    rally__tclient_close(t);
    return e->code;
}

int rally__tclient_ready(struct rally__tclient *t, int64_t deadline, struct rally__err *e)
{
    if (t->fd < 0)
        return rally__fail(e, RALLY_ESTATE, "not connected to the tracker");
    if (rally__frame_send(t->fd, RALLY__T_READY, NULL, 0, deadline, t->what, e) != RALLY_OK)
        return e->code;
    return expect(t, RALLY__T_GO, deadline, e);
}

int rally__tclient_print(struct rally__tclient *t, const char *msg, struct rally__err *e)
{
    if (t->fd < 0)
        return rally__fail(e, RALLY_ESTATE, "not connected to the tracker");
    size_t n = strlen(msg);
    if (n > RALLY__PRINT_MAX)
        n = RALLY__PRINT_MAX;
    unsigned char b[4 + RALLY__PRINT_MAX];
    rally__put_u32(b, (uint32_t)n);
    memcpy(b + 4, msg, n);
    return rally__frame_send(t->fd, RALLY__T_PRINT, b, 4 + n, rally__deadline(SEND_TIMEOUT_MS),
                             t->what, e);
}

void rally__tclient_report(struct rally__tclient *t, int code, const char *msg)
{
    if (t->fd < 0)
        return;
    unsigned char b[8 + RALLY__ERR_MSG_MAX];
    size_t n = strlen(msg);
    if (n > RALLY__ERR_MSG_MAX - 1)
        n = RALLY__ERR_MSG_MAX - 1;
    rally__put_u32(b, (uint32_t)code);
    rally__put_u32(b + 4, (uint32_t)n);
    memcpy(b + 8, msg, n);
    struct rally__err ignore = {0, ""};
    rally__frame_send(t->fd, RALLY__T_ERROR, b, 8 + n, rally__deadline(REPORT_TIMEOUT_MS), t->what,
                      &ignore);
}

int rally__tclient_check(struct rally__tclient *t, struct rally__err *e)
{
    if (t->fd < 0)
        return rally__fail(e, RALLY_ESTATE, "not connected to the tracker");
    int k = rally__frame_in_feed(&t->in, t->fd, t->what, e);
    if (k < 0)
        return e->code;
    if (k == 0)
        return RALLY_OK;
    if (t->in.type == RALLY__T_ABORT)
        return aborted(t, e);
    return rally__fail(e, RALLY_EPROTO, "%s sent an unexpected frame (type %u)", t->what,
                       t->in.type);
}

int rally__tclient_shutdown(struct rally__tclient *t, int64_t deadline, struct rally__err *e)
{
    if (t->fd < 0)
        return rally__fail(e, RALLY_ESTATE, "not connected to the tracker");
    if (rally__frame_send(t->fd, RALLY__T_SHUTDOWN, NULL, 0, deadline, t->what, e) != RALLY_OK)
        return e->code;
    return expect(t, RALLY__T_BYE, deadline, e);
}

void rally__tclient_close(struct rally__tclient *t)
{
    if (t == NULL)
        return;
    /* A zeroed struct has fd 0 but no name: join names it before opening. */
    if (t->fd >= 0 && t->what[0] != '\0')
        close(t->fd);
    t->fd = -1;
    free(t->peers);
    t->peers = NULL;
    rally__frame_in_free(&t->in);
    memset(&t->in, 0, sizeof t->in);
    memset(&t->secret, 0, sizeof t->secret);
}
