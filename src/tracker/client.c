/*
 * client.c — a worker's side of the tracker protocol (client.h, proto.h).
 *
 * Every byte from the tracker is read through one incremental frame reader,
 * t->in.  The blocking calls (join, ready, rejoin, shutdown) wait for a frame
 * with next_frame(), which polls t->fd until the reader holds a whole frame
 * or the deadline passes; rally__tclient_check() feeds the same reader once
 * and returns, so a partial frame left by one call is completed by the next
 * and a collective polling t->fd never blocks here.  An ABORT is the
 * tracker's verdict and becomes the caller's error verbatim; a RESET is
 * recorded (t->reset_epoch) and becomes RALLY__ERESET where the caller can
 * act on it; any frame the current step does not expect is RALLY_EPROTO.
 *
 * Every frame leaves through send_frame(), under t->send_mu: the heartbeat
 * thread (hb_main) sends HEARTBEAT on the same socket.  It uses trylock and
 * a single non-blocking attempt, so it never waits on the caller or on a
 * full socket; the caller's sends wait at most until their deadline, but
 * a REPORT's, which takes the lock and then gives up like a beat does.
 */
#include "tracker/client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tracker/proto.h"
#include "util/clock.h"
#include "util/wire.h"

#define SEND_TIMEOUT_MS 10000 /* PRINT, REJOIN: the tracker always reads, so this is slack */
#define REPORT_TIMEOUT_MS 1000
#define JOIN_RETRY_MS 100     /* a join whose connection was dropped tries again after */
#define HB_FINISH_MS 1000     /* a heartbeat that went out in part gets this long to finish */
#define FAIL_START_MS 5000    /* rally__tclient_fail_start waits at most this long in all */

static const char *type_name(uint16_t type)
{
    switch (type) {
    case RALLY__T_ASSIGN:
    case RALLY__T_GO:
    case RALLY__T_BYE:
    case RALLY__T_ABORT:
    case RALLY__T_RESET: return rally__msg_name(type);
    default: return "an unknown type"; /* as before: a worker never expects the others */
    }
}

/* --- sending --------------------------------------------------------------- */

/* How send_frame waits: for the socket until the deadline; not at all (the
 * heartbeat: give up at once, sending nothing, when the lock is taken or
 * the socket is full); or for the lock only (a REPORT). */
enum { SEND_WAIT = 0, SEND_TRY = 1, SEND_TRY_SOCKET = 2 };

/* Sends one frame under send_mu, waiting as try says (SEND_*).  A frame
 * begun is finished (a try gets HB_FINISH_MS for it); a frame cut short
 * shuts the socket down: the stream is unusable after it. */
static int send_frame(struct rally__tclient *t, uint16_t type, const void *body, size_t nbytes,
                      int64_t deadline, int try, struct rally__err *e)
{
    unsigned char h[RALLY__FRAME_HDR];
    rally__frame_hdr(h, type, nbytes);
    if (t->send_mu_ok) {
        if (try != SEND_TRY)
            pthread_mutex_lock(&t->send_mu);
        else if (pthread_mutex_trylock(&t->send_mu) != 0)
            return RALLY_OK;
    }
    size_t total = sizeof h + nbytes, done = 0;
    int rc = RALLY_OK;
    while (done < total) {
        long m;
        if (done < sizeof h)
            m = rally__send2_some(t->fd, h + done, sizeof h - done, body, nbytes, t->what, e);
        else
            m = rally__send_some(t->fd, (const unsigned char *)body + (done - sizeof h),
                                 total - done, t->what, e);
        if (m < 0) {
            rc = e->code;
            break;
        }
        done += (size_t)m;
        if (done == total || (m > 0))
            continue;
        if (done == 0 && try)
            break; /* the socket is full: skip this beat */
        struct pollfd p = {.fd = t->fd, .events = POLLOUT};
        int k = poll(&p, 1, rally__ms_left(try ? rally__deadline(HB_FINISH_MS) : deadline));
        if (k == 0) {
            rc = rally__fail(e, RALLY_ETIMEDOUT, "timed out sending to %s", t->what);
            break;
        }
        if (k < 0 && errno != EINTR) {
            rc = rally__fail_errno(e, RALLY_ESYS, errno, "poll failed");
            break;
        }
    }
    if (rc != RALLY_OK && done > 0 && done < total)
        shutdown(t->fd, SHUT_RDWR);
    if (t->send_mu_ok)
        pthread_mutex_unlock(&t->send_mu);
    return rc;
}

/* --- receiving ------------------------------------------------------------- */

/* Turns the ABORT in t->in into e. */
static int aborted(struct rally__tclient *t, struct rally__err *e)
{
    char sentence[RALLY__ERR_MSG_MAX];
    uint32_t code;
    if (rally__msg_fail_get(t->in.body, t->in.nbytes, &code, sentence, sizeof sentence) != 0)
        return rally__fail(e, RALLY_EPROTO, "%s sent a malformed ABORT (%zu bytes)", t->what,
                           t->in.nbytes);
    if (code == RALLY_OK || code > RALLY_ESTATE)
        code = RALLY_EPEER;
    return rally__fail(e, (int)code, "%s", sentence);
}

/* Records the RESET in t->in; RALLY__ERESET with e filled, or RALLY_EPROTO. */
static int got_reset(struct rally__tclient *t, struct rally__err *e)
{
    char reason[sizeof t->reset_reason];
    uint32_t epoch;
    if (rally__msg_reset_get(t->in.body, t->in.nbytes, &epoch, reason, sizeof reason) != 0)
        return rally__fail(e, RALLY_EPROTO, "%s sent a malformed RESET (%zu bytes)", t->what,
                           t->in.nbytes);
    if (epoch <= t->epoch || epoch < t->reset_epoch)
        return rally__fail(e, RALLY_EPROTO, "%s sent a RESET to epoch %u after epoch %u", t->what,
                           epoch, epoch <= t->epoch ? t->epoch : t->reset_epoch);
    t->reset_epoch = epoch;
    memcpy(t->reset_reason, reason, sizeof reason);
    return rally__fail(e, RALLY__ERESET, "the tracker ordered recovery (epoch %u): %s", epoch,
                       reason);
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

/* REJOIN for the newest RESET, with the position rally__tclient_rejoin holds. */
static int send_rejoin(struct rally__tclient *t, int64_t deadline, struct rally__err *e)
{
    unsigned char b[16];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_rejoin_put(&w, t->reset_epoch, t->rejoin_position, t->rejoin_version);
    return send_frame(t, RALLY__T_REJOIN, b, w.len, deadline, 0, e);
}

/* What expect() does with a RESET that arrives while it waits. */
enum { RESET_SKIP, RESET_RETURN, RESET_REJOIN };

/* Waits for a frame of the given type; ABORT is the tracker's error.  A
 * RESET is recorded, then skipped, returned as RALLY__ERESET, or answered
 * with a new REJOIN, as on_reset says. */
static int expect(struct rally__tclient *t, uint16_t type, int on_reset, int64_t deadline,
                  struct rally__err *e)
{
    for (;;) {
        if (next_frame(t, deadline, e) != RALLY_OK)
            return e->code;
        if (t->in.type == RALLY__T_ABORT)
            return aborted(t, e);
        if (t->in.type == RALLY__T_RESET) {
            struct rally__err v = {0, ""};
            int rc = got_reset(t, &v);
            if (rc != RALLY__ERESET || on_reset == RESET_RETURN)
                return rally__fail(e, rc, "%s", v.msg);
            if (on_reset == RESET_REJOIN && send_rejoin(t, deadline, e) != RALLY_OK)
                return e->code;
            continue;
        }
        if (t->in.type == RALLY__T_GROW && type != RALLY__T_GROW) {
            t->grow_asked = 1; /* for the next checkpoint (robust/op.c) */
            continue;
        }
        if (t->in.type != type)
            return rally__fail(e, RALLY_EPROTO, "%s sent frame type %u (%s) where %s was due",
                               t->what, t->in.type, type_name(t->in.type), type_name(type));
        if ((type == RALLY__T_GO || type == RALLY__T_BYE) &&
            rally__msg_empty_get(t->in.body, t->in.nbytes) != 0)
            return rally__fail(e, RALLY_EPROTO, "%s sent a %s with a %zu-byte body", t->what,
                               type_name(type), t->in.nbytes);
        return RALLY_OK;
    }
}

/* Reads the ASSIGN in t->in: rank, world, incarnation, the address book
 * (*peers, world entries, the caller frees) and the epoch. */
static int parse_assign(struct rally__tclient *t, int *rank_out, int *world_out, uint32_t *inc_out,
                        struct rally__peer_addr **peers, uint32_t *epoch_out,
                        uint32_t *members_out, uint32_t *flags_out, struct rally__err *e)
{
    struct rally__msg_assign m;
    int k = rally__msg_assign_get(t->in.body, t->in.nbytes, &m);
    if (k == -1)
        return rally__fail(e, RALLY_EPROTO, "%s sent a malformed ASSIGN (rank %d of %u)", t->what,
                           (int)m.rank, m.world);
    if (k == -2)
        return rally__fail(e, RALLY_ENOMEM, "out of memory for an address book of %u", m.world);
    if (k != 0)
        return rally__fail(e, RALLY_EPROTO, "%s sent a malformed ASSIGN (%zu bytes for %u workers)",
                           t->what, t->in.nbytes, m.world);
    *rank_out = m.rank;
    *world_out = (int)m.world;
    *inc_out = m.incarnation;
    *peers = m.peers;
    *epoch_out = m.epoch;
    *members_out = m.members;
    *flags_out = m.flags;
    return RALLY_OK;
}

/* --- the calls ------------------------------------------------------------- */

/* Listens for peer links on the address peers should use (client.h) and
 * writes it and the port into m. */
static int listen_peers(struct rally__tclient *t, const struct rally__tclient_opts *o,
                        struct rally__msg_register *m, int *lfd, struct rally__err *e)
{
    const char *spec = o->interface ? o->interface : "";
    int port;
    struct rally__err ce = {0, ""};
    if (rally__sock_choose_addr(t->fd, spec, m->listen_host, sizeof m->listen_host, &ce) !=
        RALLY_OK)
        return rally__fail(e, ce.code, "%s%s%s: %s", spec[0] ? "rally_interface=" : "",
                           spec[0] ? spec : "the peer address",
                           spec[0] ? "" : " (rally_interface unset)", ce.msg);
    if (rally__tcp_listen(m->listen_host, 0, 128, lfd, &port, e) != RALLY_OK)
        return e->code;
    m->listen_port = (uint16_t)port;
    return RALLY_OK;
}

/* Connects, authenticates and sends REGISTER (join's first half, and
 * rally__tclient_fail_start's).  On failure t is closed and *lfd is -1. */
static int open_register(struct rally__tclient *t, const struct rally__tclient_opts *o, int *lfd,
                         int64_t deadline, struct rally__err *e)
{
    char host[RALLY__HOST_MAX];
    int port;
    memset(t, 0, sizeof *t);
    t->fd = -1;
    t->rank = -1;
    t->hb_stop[0] = t->hb_stop[1] = -1;
    *lfd = -1;
    if (pthread_mutex_init(&t->send_mu, NULL) != 0)
        return rally__fail(e, RALLY_ESYS, "cannot create a mutex");
    t->send_mu_ok = 1;
    if (rally__hostport_split(o->tracker, host, sizeof host, &port, e) != RALLY_OK)
        goto cleanup;
    char hp[RALLY__HOST_MAX + 8];
    rally__hostport_fmt(host, port, hp, sizeof hp);
    snprintf(t->what, sizeof t->what, "tracker %s", hp);
    if (rally__secret_load(o->secret_file, &t->secret, e) != RALLY_OK)
        goto cleanup;
    struct rally__ident me = {RALLY__ROLE_WORKER, -1, 0}, peer;
    /* a tracker flooded by strangers may drop a connection before its
     * handshake (docs/security.md): try again while the deadline allows */
    while (rally__tcp_connect(host, port, deadline, &t->fd, e) != RALLY_OK ||
           rally__auth_connect(t->fd, &t->secret, &me, -1, &peer, deadline, t->what, e) !=
               RALLY_OK) {
        if (e->code != RALLY_EPEER || rally__ms_left(deadline) <= JOIN_RETRY_MS)
            goto cleanup;
        close(t->fd);
        t->fd = -1;
        rally__err_clear(e);
        rally__sleep_ms(JOIN_RETRY_MS);
    }
    rally__sock_link_timeout(t->fd, o->link_timeout_ms);

    unsigned char b[3 * (4 + RALLY__HOST_MAX) + 4 + RALLY__DOMAIN_MAX + 16];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    const char *task = o->task_id ? o->task_id : "";
    const char *proc = o->processor_name ? o->processor_name : "";
    const char *domain = o->domain ? o->domain : "";
    if (strlen(task) >= RALLY__TASK_MAX || strlen(proc) >= RALLY__TASK_MAX) {
        rally__fail(e, RALLY_EINVAL, "task id or processor name longer than %d bytes",
                    RALLY__TASK_MAX - 1);
        goto cleanup;
    }
    if (strlen(domain) >= RALLY__DOMAIN_MAX) {
        rally__fail(e, RALLY_ECONFIG, "rally_domain=%.40s... is longer than %d bytes", domain,
                    RALLY__DOMAIN_MAX - 1);
        goto cleanup;
    }
    /* want_rank any, world unknown; listen_host "": the address the tracker sees */
    struct rally__msg_register m = {.want_rank = -1, .listen_port = (uint16_t)o->listen_port};
    if (o->listen_fd != NULL && listen_peers(t, o, &m, lfd, e) != RALLY_OK)
        goto cleanup;
    snprintf(m.task_id, sizeof m.task_id, "%s", task);
    snprintf(m.processor, sizeof m.processor, "%s", proc);
    snprintf(m.domain, sizeof m.domain, "%s", domain);
    rally__msg_register_put(&w, &m);
    if (send_frame(t, RALLY__T_REGISTER, b, w.len, deadline, 0, e) != RALLY_OK)
        goto cleanup;
    return RALLY_OK;
cleanup:
    if (*lfd >= 0)
        close(*lfd);
    *lfd = -1;
    rally__tclient_close(t);
    return e->code;
}

int rally__tclient_join(struct rally__tclient *t, const struct rally__tclient_opts *o,
                        struct rally__err *e)
{
    int lfd = -1;
    if (o->listen_fd != NULL)
        *o->listen_fd = -1;
    int64_t deadline = rally__deadline(o->connect_timeout_ms);
    if (open_register(t, o, &lfd, deadline, e) != RALLY_OK)
        return e->code;
    if (expect(t, RALLY__T_ASSIGN, RESET_SKIP,
               o->assign_timeout_ms > 0 ? rally__deadline(o->assign_timeout_ms) : deadline,
               e) != RALLY_OK ||
        parse_assign(t, &t->rank, &t->world, &t->incarnation, &t->peers, &t->epoch,
                     &t->members, &t->assign_flags, e) != RALLY_OK)
        goto cleanup;
    t->reset_epoch = 0; /* a RESET before ASSIGN was for an epoch this ASSIGN ends */
    t->reset_reason[0] = '\0';
    if (o->listen_fd != NULL)
        *o->listen_fd = lfd;
    return RALLY_OK;
cleanup:
    if (lfd >= 0)
        close(lfd);
    rally__tclient_close(t);
    return e->code;
}

void rally__tclient_fail_start(const struct rally__tclient_opts *o, int code, const char *msg)
{
    struct rally__tclient t;
    struct rally__tclient_opts q = *o;
    struct rally__err e = {0, ""};
    int lfd;
    q.listen_fd = NULL;
    q.listen_port = 0;
    int64_t wait = q.connect_timeout_ms < FAIL_START_MS ? q.connect_timeout_ms : FAIL_START_MS;
    int64_t deadline = rally__deadline(wait);
    if (open_register(&t, &q, &lfd, deadline, &e) != RALLY_OK)
        return;
    rally__tclient_report(&t, code, msg);
    /* the ABORT (to this worker too) says the job failed: only then exit,
     * so the launcher sees the job's failure before this worker's exit */
    while (next_frame(&t, deadline, &e) == RALLY_OK && t.in.type != RALLY__T_ABORT)
        ;
    rally__tclient_close(&t);
}

int rally__tclient_ready(struct rally__tclient *t, int64_t deadline, struct rally__err *e)
{
    if (t->fd < 0)
        return rally__fail(e, RALLY_ESTATE, "not connected to the tracker");
    if (send_frame(t, RALLY__T_READY, NULL, 0, deadline, 0, e) != RALLY_OK)
        return e->code;
    return expect(t, RALLY__T_GO, RESET_RETURN, deadline, e);
}

int rally__tclient_rejoin(struct rally__tclient *t, uint64_t position, uint32_t version,
                          int64_t deadline, struct rally__err *e)
{
    if (t->fd < 0)
        return rally__fail(e, RALLY_ESTATE, "not connected to the tracker");
    if (t->reset_epoch == 0)
        return rally__fail(e, RALLY_ESTATE, "rejoin without a RESET from %s", t->what);
    t->rejoin_position = position;
    t->rejoin_version = version;
    if (send_rejoin(t, deadline, e) != RALLY_OK ||
        expect(t, RALLY__T_ASSIGN, RESET_REJOIN, deadline, e) != RALLY_OK)
        return e->code;
    int rank, world;
    uint32_t inc, epoch, members, flags;
    struct rally__peer_addr *peers;
    if (parse_assign(t, &rank, &world, &inc, &peers, &epoch, &members, &flags, e) != RALLY_OK)
        return e->code;
    int renumbered = members != t->members;
    if ((!renumbered && (rank != t->rank || world != t->world)) || epoch != t->reset_epoch) {
        free(peers);
        return rally__fail(e, RALLY_EPROTO,
                           "%s assigned rank %d of %d in epoch %u to rank %d of %d rejoining "
                           "epoch %u",
                           t->what, rank, world, epoch, t->rank, t->world, t->reset_epoch);
    }
    free(t->peers);
    t->peers = peers;
    t->incarnation = inc;
    t->epoch = epoch;
    if (renumbered) {
        t->rank = rank;
        t->world = world;
        t->members = members;
        t->assign_flags = flags;
        t->resized = 1;
    }
    return RALLY_OK;
}

int rally__tclient_print(struct rally__tclient *t, const char *msg, struct rally__err *e)
{
    if (t->fd < 0)
        return rally__fail(e, RALLY_ESTATE, "not connected to the tracker");
    size_t n = strlen(msg);
    if (n > RALLY__PRINT_MAX)
        n = RALLY__PRINT_MAX;
    unsigned char b[4 + RALLY__PRINT_MAX];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_print_put(&w, msg);
    return send_frame(t, RALLY__T_PRINT, b, w.len, rally__deadline(SEND_TIMEOUT_MS), 0, e);
}

int rally__tclient_input(struct rally__tclient *t, const char *scheme, uint64_t fingerprint,
                         struct rally__err *e)
{
    if (t->fd < 0)
        return rally__fail(e, RALLY_ESTATE, "not connected to the tracker");
    unsigned char b[4 + RALLY__SCHEME_MAX + 8];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_input_put(&w, scheme, fingerprint);
    int64_t deadline = rally__deadline(SEND_TIMEOUT_MS);
    if (send_frame(t, RALLY__T_INPUT, b, w.len, deadline, 0, e) != RALLY_OK)
        return e->code;
    for (;;) {
        if (next_frame(t, deadline, e) != RALLY_OK)
            return e->code;
        if (t->in.type == RALLY__T_INPUT_OK && t->in.nbytes == 0)
            return RALLY_OK;
        if (t->in.type == RALLY__T_ABORT)
            return aborted(t, e);
        if (t->in.type == RALLY__T_GROW) { /* for the next checkpoint (robust/op.c) */
            t->grow_asked = 1;
            continue;
        }
        if (t->in.type != RALLY__T_RESET)
            return rally__fail(e, RALLY_EPROTO, "%s sent frame type %u where INPUT_OK was due",
                               t->what, t->in.type);
        struct rally__err v = {0, ""};
        if (got_reset(t, &v) != RALLY__ERESET)
            return rally__fail(e, v.code, "%s", v.msg);
        t->reset_held = 1;
    }
}

void rally__tclient_send_report(struct rally__tclient *t, const struct rally__msg_report *m)
{
    if (t->fd < 0 || !t->send_mu_ok)
        return;
    unsigned char b[RALLY__REPORT_MAX];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_report_put(&w, m);
    struct rally__err ignore = {0, ""};
    if (!w.bad)
        send_frame(t, RALLY__T_REPORT, b, w.len, 0, SEND_TRY_SOCKET, &ignore);
}

/* u32 head, then str sentence (cut to fit) as a best-effort frame. */
static void send_sentence(struct rally__tclient *t, uint16_t type, uint32_t head, const char *msg)
{
    if (t->fd < 0)
        return;
    unsigned char b[8 + RALLY__ERR_MSG_MAX];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    if (type == RALLY__T_ERROR)
        rally__msg_fail_put(&w, head, msg);
    else
        rally__msg_link_failed_put(&w, head, msg);
    struct rally__err ignore = {0, ""};
    send_frame(t, type, b, w.len, rally__deadline(REPORT_TIMEOUT_MS), 0, &ignore);
}

void rally__tclient_report(struct rally__tclient *t, int code, const char *msg)
{
    send_sentence(t, RALLY__T_ERROR, (uint32_t)code, msg);
}

void rally__tclient_link_failed(struct rally__tclient *t, const char *sentence)
{
    send_sentence(t, RALLY__T_LINK_FAILED, t->epoch, sentence);
}

int rally__tclient_check(struct rally__tclient *t, struct rally__err *e)
{
    if (t->fd < 0)
        return rally__fail(e, RALLY_ESTATE, "not connected to the tracker");
    if (t->reset_held) {
        t->reset_held = 0;
        return rally__fail(e, RALLY__ERESET, "the tracker ordered recovery (epoch %u): %s",
                           t->reset_epoch, t->reset_reason);
    }
    for (;;) {
        int k = rally__frame_in_feed(&t->in, t->fd, t->what, e);
        if (k < 0)
            return e->code;
        if (k == 0)
            return RALLY_OK;
        if (t->in.type == RALLY__T_ABORT)
            return aborted(t, e);
        if (t->in.type == RALLY__T_RESET)
            return got_reset(t, e);
        if (t->in.type != RALLY__T_GROW || rally__msg_empty_get(t->in.body, t->in.nbytes) != 0)
            return rally__fail(e, RALLY_EPROTO, "%s sent an unexpected frame (type %u)",
                               t->what, t->in.type);
        t->grow_asked = 1; /* and read on: a RESET may follow */
    }
}

int rally__tclient_grow_ready(struct rally__tclient *t, struct rally__err *e)
{
    if (t->fd < 0)
        return rally__fail(e, RALLY_ESTATE, "not connected to the tracker");
    unsigned char b[4];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_u32_put(&w, t->epoch);
    return send_frame(t, RALLY__T_GROW_READY, b, w.len, rally__deadline(1000), 0, e);
}

void rally__tclient_in_step(struct rally__tclient *t)
{
    if (t->fd < 0)
        return;
    unsigned char b[4];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_u32_put(&w, t->epoch);
    struct rally__err ignore = {0, ""};
    send_frame(t, RALLY__T_IN_STEP, b, w.len, rally__deadline(REPORT_TIMEOUT_MS), 0, &ignore);
}

int rally__tclient_shutdown(struct rally__tclient *t, int64_t deadline, struct rally__err *e)
{
    if (t->fd < 0)
        return rally__fail(e, RALLY_ESTATE, "not connected to the tracker");
    if (send_frame(t, RALLY__T_SHUTDOWN, NULL, 0, deadline, 0, e) != RALLY_OK)
        return e->code;
    return expect(t, RALLY__T_BYE, RESET_SKIP, deadline, e);
}

/* --- heartbeats ------------------------------------------------------------ */

int64_t rally__tclient_position(struct rally__tclient *t, uint64_t position, int waiting,
                                const char *what)
{
    /* twice per collective, so the tick's clock: a beat reads the stamp in
     * milliseconds, and one at most a tick early only lengthens for_ms by
     * that much (the exact clock's two reads were a tenth of an 8-byte
     * allreduce over shared memory) */
    int64_t now = rally__now_ms_coarse();
    unsigned s = atomic_load_explicit(&t->pos.seq, memory_order_relaxed);
    atomic_store_explicit(&t->pos.seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&t->pos.position, position, memory_order_relaxed);
    atomic_store_explicit(&t->pos.waiting, waiting, memory_order_relaxed);
    atomic_store_explicit(&t->pos.since_ms, now, memory_order_relaxed);
    atomic_store_explicit(&t->pos.what, what, memory_order_relaxed);
    atomic_store_explicit(&t->pos.seq, s + 2, memory_order_release);
    return now;
}

void rally__tclient_counters(struct rally__tclient *t, uint64_t calls, uint64_t nbytes,
                             uint32_t win, uint64_t win_wait_ms, uint64_t win_span_ms)
{
    unsigned s = atomic_load_explicit(&t->pos.seq, memory_order_relaxed);
    atomic_store_explicit(&t->pos.seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&t->pos.calls, calls, memory_order_relaxed);
    atomic_store_explicit(&t->pos.nbytes, nbytes, memory_order_relaxed);
    atomic_store_explicit(&t->pos.win, win, memory_order_relaxed);
    atomic_store_explicit(&t->pos.win_wait_ms, win_wait_ms, memory_order_relaxed);
    atomic_store_explicit(&t->pos.win_span_ms, win_span_ms, memory_order_relaxed);
    atomic_store_explicit(&t->pos.seq, s + 2, memory_order_release);
}

/* The heartbeat's body: the position as it stands now (a consistent copy). */
static void hb_body(struct rally__tclient *t, struct rally__wbuf *w)
{
    struct rally__msg_heartbeat m = {.has_position = 1};
    const char *what;
    int64_t since;
    unsigned s1, s2;
    do {
        s1 = atomic_load_explicit(&t->pos.seq, memory_order_acquire);
        m.position = atomic_load_explicit(&t->pos.position, memory_order_relaxed);
        m.waiting = atomic_load_explicit(&t->pos.waiting, memory_order_relaxed);
        since = atomic_load_explicit(&t->pos.since_ms, memory_order_relaxed);
        what = atomic_load_explicit(&t->pos.what, memory_order_relaxed);
        m.calls = atomic_load_explicit(&t->pos.calls, memory_order_relaxed);
        m.nbytes = atomic_load_explicit(&t->pos.nbytes, memory_order_relaxed);
        m.win = atomic_load_explicit(&t->pos.win, memory_order_relaxed);
        m.win_wait_ms = atomic_load_explicit(&t->pos.win_wait_ms, memory_order_relaxed);
        m.win_span_ms = atomic_load_explicit(&t->pos.win_span_ms, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        s2 = atomic_load_explicit(&t->pos.seq, memory_order_relaxed);
    } while ((s1 & 1) || s1 != s2);
    int64_t now = rally__now_ms();
    m.for_ms = now > since ? (uint64_t)(now - since) : 0;
    snprintf(m.what, sizeof m.what, "%s", what ? what : "");
    rally__msg_heartbeat_put(w, &m);
}

static void *hb_main(void *arg)
{
    struct rally__tclient *t = arg;
    int64_t next = rally__now_ms() + t->hb_interval_ms;
    for (;;) {
        struct pollfd p = {.fd = t->hb_stop[0], .events = POLLIN};
        int n = poll(&p, 1, rally__ms_left(next));
        if (n > 0)
            return NULL;
        if (n < 0 && errno != EINTR)
            return NULL;
        if (rally__now_ms() < next)
            continue;
        struct rally__err ignore = {0, ""};
        unsigned char b[RALLY__HEARTBEAT_MAX];
        struct rally__wbuf w = {b, 0, sizeof b, 0};
        hb_body(t, &w);
        send_frame(t, RALLY__T_HEARTBEAT, b, w.len, 0, SEND_TRY, &ignore);
        next += t->hb_interval_ms;
        if (next < rally__now_ms()) /* we fell behind (a stopped process): no burst */
            next = rally__now_ms() + t->hb_interval_ms;
    }
}

int rally__tclient_heartbeat_start(struct rally__tclient *t, int64_t interval_ms,
                                   struct rally__err *e)
{
    if (t->fd < 0 || !t->send_mu_ok)
        return rally__fail(e, RALLY_ESTATE, "not connected to the tracker");
    if (interval_ms <= 0)
        return rally__fail(e, RALLY_EINVAL, "a heartbeat interval of %lld ms",
                           (long long)interval_ms);
    if (t->hb_running)
        return RALLY_OK;
    if (pipe2(t->hb_stop, O_CLOEXEC) != 0) {
        t->hb_stop[0] = t->hb_stop[1] = -1;
        return rally__fail_errno(e, RALLY_ESYS, errno, "cannot create the heartbeat's pipe");
    }
    t->hb_interval_ms = interval_ms;
    if (atomic_load(&t->pos.since_ms) == 0) /* in its own code since it joined */
        rally__tclient_position(t, atomic_load(&t->pos.position), 0, "");
    int rc = pthread_create(&t->hb_thread, NULL, hb_main, t);
    if (rc != 0) {
        close(t->hb_stop[0]);
        close(t->hb_stop[1]);
        t->hb_stop[0] = t->hb_stop[1] = -1;
        return rally__fail_errno(e, RALLY_ESYS, rc, "cannot start the heartbeat thread");
    }
    t->hb_running = 1;
    return RALLY_OK;
}

void rally__tclient_heartbeat_stop(struct rally__tclient *t)
{
    if (t == NULL || !t->hb_running)
        return;
    ssize_t w;
    do
        w = write(t->hb_stop[1], "x", 1);
    while (w < 0 && errno == EINTR);
    pthread_join(t->hb_thread, NULL);
    close(t->hb_stop[0]);
    close(t->hb_stop[1]);
    t->hb_stop[0] = t->hb_stop[1] = -1;
    t->hb_running = 0;
}

void rally__tclient_close(struct rally__tclient *t)
{
    if (t == NULL)
        return;
    rally__tclient_heartbeat_stop(t);
    /* A zeroed struct has fd 0 but no name: join names it before opening. */
    if (t->fd >= 0 && t->what[0] != '\0')
        close(t->fd);
    t->fd = -1;
    free(t->peers);
    t->peers = NULL;
    rally__frame_in_free(&t->in);
    memset(&t->in, 0, sizeof t->in);
    memset(&t->secret, 0, sizeof t->secret);
    if (t->send_mu_ok)
        pthread_mutex_destroy(&t->send_mu);
    t->send_mu_ok = 0;
}
