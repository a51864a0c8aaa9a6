/*
 * dmlc.c — the worker's side of the dmlc tracker protocol: one request per
 * TCP connection (start, recover, print, shutdown), the tracker-directed
 * wiring of its tree and ring links, and rally's address exchange around
 * that ring (dmlc.h; docs/protocol-dmlc.md has the bytes).
 *
 * Every integer on these connections is a 32-bit signed little-endian
 * number (the dmlc tracker packs them in the machine's order; every machine
 * it runs on is little-endian); a string is such a length followed by that
 * many bytes, no terminator.  Every wait is bounded by the caller's deadline.
 */
#include "tracker/dmlc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/wire.h"

#define RETRY_MS 100       /* between attempts to reach a tracker not yet listening */
#define HANDSHAKE_MS 10000 /* bounds one accepted peer's rank exchange */
#define ENTRY_HEAD 22      /* magic, rank, incarnation, flags, port (u32), host length (u16) */

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* --- integers and strings ------------------------------------------------ */

static int send_i32(int fd, int32_t v, int64_t deadline, const char *what, struct rally__err *e)
{
    unsigned char b[4];
    rally__put_u32(b, (uint32_t)v);
    return rally__send_all(fd, b, sizeof b, deadline, what, e);
}

static int recv_i32(int fd, int32_t *v, int64_t deadline, const char *what, struct rally__err *e)
{
    unsigned char b[4];
    if (rally__recv_all(fd, b, sizeof b, deadline, what, e) != RALLY_OK)
        return e->code;
    *v = (int32_t)rally__get_u32(b);
    return RALLY_OK;
}

static int send_str(int fd, const char *s, int64_t deadline, const char *what, struct rally__err *e)
{
    size_t n = strlen(s);
    if (send_i32(fd, (int32_t)n, deadline, what, e) != RALLY_OK)
        return e->code;
    return n ? rally__send_all(fd, s, n, deadline, what, e) : RALLY_OK;
}

/* A string of fewer than cap bytes, terminated here. */
static int recv_str(int fd, char *s, size_t cap, int64_t deadline, const char *what,
                    struct rally__err *e)
{
    int32_t n = 0;
    if (recv_i32(fd, &n, deadline, what, e) != RALLY_OK)
        return e->code;
    if (n < 0 || (size_t)n >= cap)
        return rally__fail(e, RALLY_EPROTO, "%s sent a string of %d bytes (at most %zu expected)",
                           what, (int)n, cap - 1);
    if (n > 0 && rally__recv_all(fd, s, (size_t)n, deadline, what, e) != RALLY_OK)
        return e->code;
    s[n] = '\0';
    return RALLY_OK;
}

/* --- one request ---------------------------------------------------------- */

int rally__dmlc_init(struct rally__dmlc *d, const char *host, int port, const char *task_id,
                     int64_t connect_timeout_ms, struct rally__err *e)
{
    memset(d, 0, sizeof *d);
    d->rank = d->world = d->parent = d->prev = d->next = -1;
    if (strlen(host) >= sizeof d->host || host[0] == '\0')
        return rally__fail(e, RALLY_ECONFIG, "the dmlc tracker's address '%s' is empty or too long",
                           host);
    if (port <= 0 || port > 65535)
        return rally__fail(e, RALLY_ECONFIG, "the dmlc tracker's port %d is not a TCP port", port);
    if (strlen(task_id) >= sizeof d->task_id)
        return rally__fail(e, RALLY_ECONFIG, "the task id is longer than %zu bytes",
                           sizeof d->task_id - 1);
    snprintf(d->host, sizeof d->host, "%s", host);
    d->port = port;
    char hp[RALLY__HOST_MAX + 16];
    rally__hostport_fmt(host, port, hp, sizeof hp);
    snprintf(d->what, sizeof d->what, "dmlc tracker %s", hp);
    snprintf(d->task_id, sizeof d->task_id, "%s", task_id[0] ? task_id : "NULL");
    d->connect_timeout_ms = connect_timeout_ms;
    return RALLY_OK;
}

/* Connects (retrying while the tracker is not listening yet), checks the
 * magic and sends rank, world, task id and cmd. */
static int session(struct rally__dmlc *d, const char *cmd, int64_t deadline, int *out,
                   struct rally__err *e)
{
    int fd = -1;
    for (;;) {
        struct rally__err ce = {0, ""};
        if (rally__tcp_connect(d->host, d->port, deadline, &fd, &ce) == RALLY_OK)
            break;
        int left = rally__ms_left(deadline);
        if (ce.code != RALLY_ESYS || (left >= 0 && left <= RETRY_MS))
            return rally__fail(e, ce.code, "%s: %s", d->what, ce.msg);
        rally__sleep_ms(RETRY_MS);
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        rally__addr_str((struct sockaddr *)&ss, d->self_host, sizeof d->self_host, NULL);
    int32_t magic = 0;
    if (send_i32(fd, RALLY__DMLC_MAGIC, deadline, d->what, e) != RALLY_OK ||
        recv_i32(fd, &magic, deadline, d->what, e) != RALLY_OK)
        goto fail;
    if (magic != RALLY__DMLC_MAGIC) {
        rally__fail(e, RALLY_EPROTO, "%s answered magic %#x, not %#x: is it a dmlc tracker?",
                    d->what, (unsigned)magic, RALLY__DMLC_MAGIC);
        goto fail;
    }
    if (send_i32(fd, d->rank, deadline, d->what, e) != RALLY_OK ||
        send_i32(fd, d->world, deadline, d->what, e) != RALLY_OK ||
        send_str(fd, d->task_id, deadline, d->what, e) != RALLY_OK ||
        send_str(fd, cmd, deadline, d->what, e) != RALLY_OK)
        goto fail;
    *out = fd;
    return RALLY_OK;
fail:
    close(fd);
    return e->code;
}

static int link_index(const struct rally__dmlc *d, int rank)
{
    for (int i = 0; i < d->nlinks; i++)
        if (d->links[i] == rank)
            return i;
    return -1;
}

static void add_link(struct rally__dmlc *d, int rank)
{
    if (rank >= 0 && rank != d->rank && link_index(d, rank) < 0)
        d->links[d->nlinks++] = rank;
}

/* rank, parent, world, the tree neighbours, ring prev and next. */
static int read_assignment(struct rally__dmlc *d, int fd, int64_t deadline, struct rally__err *e)
{
    int32_t rank = -1, parent = -1, world = 0, nnb = 0, prev = -1, next = -1;
    int32_t nb[RALLY__DMLC_MAX_LINKS];
    if (recv_i32(fd, &rank, deadline, d->what, e) != RALLY_OK ||
        recv_i32(fd, &parent, deadline, d->what, e) != RALLY_OK ||
        recv_i32(fd, &world, deadline, d->what, e) != RALLY_OK ||
        recv_i32(fd, &nnb, deadline, d->what, e) != RALLY_OK)
        return e->code;
    if (world < 1 || world > RALLY__DMLC_MAX_WORLD || rank < 0 || rank >= world)
        return rally__fail(e, RALLY_EPROTO, "%s assigned rank %d of %d", d->what, (int)rank,
                           (int)world);
    if ((d->rank >= 0 && rank != d->rank) || (d->world >= 0 && world != d->world))
        return rally__fail(e, RALLY_EPROTO, "%s assigned rank %d of %d to rank %d of %d", d->what,
                           (int)rank, (int)world, d->rank, d->world);
    if (nnb < 0 || nnb > RALLY__DMLC_MAX_LINKS - 2)
        return rally__fail(e, RALLY_EPROTO, "%s named %d tree neighbours (at most %d)", d->what,
                           (int)nnb, RALLY__DMLC_MAX_LINKS - 2);
    for (int i = 0; i < nnb; i++)
        if (recv_i32(fd, &nb[i], deadline, d->what, e) != RALLY_OK)
            return e->code;
    if (recv_i32(fd, &prev, deadline, d->what, e) != RALLY_OK ||
        recv_i32(fd, &next, deadline, d->what, e) != RALLY_OK)
        return e->code;
    d->rank = rank;
    d->world = world;
    d->parent = parent;
    d->prev = prev;
    d->next = next;
    d->nlinks = 0;
    for (int i = 0; i < nnb; i++) {
        if (nb[i] < 0 || nb[i] >= world || nb[i] == rank)
            return rally__fail(e, RALLY_EPROTO, "%s named rank %d a neighbour of rank %d of %d",
                               d->what, (int)nb[i], (int)rank, (int)world);
        add_link(d, nb[i]);
    }
    if (parent < -1 || parent >= world || (parent >= 0 && link_index(d, parent) < 0))
        return rally__fail(e, RALLY_EPROTO, "%s named parent %d, not a tree neighbour", d->what,
                           (int)parent);
    if (world > 1 && (prev < 0 || prev >= world || next < 0 || next >= world))
        return rally__fail(e, RALLY_EPROTO, "%s gave rank %d of %d ring neighbours %d and %d",
                           d->what, (int)rank, (int)world, (int)prev, (int)next);
    add_link(d, prev);
    add_link(d, next);
    return RALLY_OK;
}

/* Both ends send their rank, then read the other's (rabit's link greeting). */
static int greet(int fd, int rank, int want, int64_t deadline, int *got, struct rally__err *e)
{
    char what[48];
    snprintf(what, sizeof what, want >= 0 ? "rank %d" : "a connecting worker", want);
    int32_t r = -1;
    if (send_i32(fd, rank, deadline, what, e) != RALLY_OK ||
        recv_i32(fd, &r, deadline, what, e) != RALLY_OK)
        return e->code;
    if (want >= 0 && r != want)
        return rally__fail(e, RALLY_EPROTO, "the worker at rank %d's address says it is rank %d",
                           want, (int)r);
    *got = r;
    return RALLY_OK;
}

/* The tracker's loop: report the links held, connect where it says, report
 * the failures; then send the port that the others connect to. */
static int wire_links(struct rally__dmlc *d, int tfd, int *fds, int lport, int64_t deadline,
                      int *naccept_out, struct rally__err *e)
{
    char last[RALLY__ERR_MSG_MAX] = "";
    for (;;) {
        int32_t ngood = 0, nconn = 0, naccept = 0, nerr = 0;
        for (int i = 0; i < d->nlinks; i++)
            ngood += fds[i] >= 0;
        if (send_i32(tfd, ngood, deadline, d->what, e) != RALLY_OK)
            return e->code;
        for (int i = 0; i < d->nlinks; i++)
            if (fds[i] >= 0 && send_i32(tfd, d->links[i], deadline, d->what, e) != RALLY_OK)
                return e->code;
        if (recv_i32(tfd, &nconn, deadline, d->what, e) != RALLY_OK ||
            recv_i32(tfd, &naccept, deadline, d->what, e) != RALLY_OK)
            return e->code;
        if (nconn < 0 || naccept < 0 || nconn + naccept + ngood != d->nlinks)
            return rally__fail(e, RALLY_EPROTO,
                               "%s said connect to %d and accept %d of rank %d's %d links (%d "
                               "held)",
                               d->what, (int)nconn, (int)naccept, d->rank, d->nlinks, (int)ngood);
        for (int32_t i = 0; i < nconn; i++) {
            char host[RALLY__HOST_MAX];
            int32_t port = 0, rank = -1;
            if (recv_str(tfd, host, sizeof host, deadline, d->what, e) != RALLY_OK ||
                recv_i32(tfd, &port, deadline, d->what, e) != RALLY_OK ||
                recv_i32(tfd, &rank, deadline, d->what, e) != RALLY_OK)
                return e->code;
            char hp[RALLY__HOST_MAX + 16];
            rally__hostport_fmt(host, (int)port, hp, sizeof hp);
            int j = link_index(d, rank);
            if (j < 0 || fds[j] >= 0 || port <= 0 || port > 65535)
                return rally__fail(e, RALLY_EPROTO,
                                   "%s said connect to rank %d at %s, not a missing link of "
                                   "rank %d",
                                   d->what, (int)rank, hp, d->rank);
            struct rally__err ce = {0, ""};
            int fd = -1, got;
            int64_t cd = min64(deadline, rally__deadline(d->connect_timeout_ms));
            if (rally__tcp_connect(host, port, cd, &fd, &ce) != RALLY_OK ||
                greet(fd, d->rank, rank, cd, &got, &ce) != RALLY_OK) {
                if (fd >= 0)
                    close(fd);
                snprintf(last, sizeof last, "rank %d at %s: %.200s", (int)rank, hp, ce.msg);
                nerr++;
                continue;
            }
            fds[j] = fd;
        }
        if (send_i32(tfd, nerr, deadline, d->what, e) != RALLY_OK)
            return e->code;
        if (nerr == 0)
            break;
        if (rally__ms_left(deadline) == 0)
            return rally__fail(e, RALLY_EPEER, "rank %d could not connect to %s", d->rank, last);
        rally__sleep_ms(RETRY_MS); /* the tracker names the same peers again at once */
    }
    if (send_i32(tfd, lport, deadline, d->what, e) != RALLY_OK)
        return e->code;
    *naccept_out = 0;
    for (int i = 0; i < d->nlinks; i++)
        *naccept_out += fds[i] < 0;
    return RALLY_OK;
}

/* Accepts the links the tracker sends this way; strangers are refused. */
static int accept_links(struct rally__dmlc *d, int lfd, int *fds, int naccept, int64_t deadline,
                        struct rally__err *e)
{
    while (naccept > 0) {
        int fd, got;
        char host[RALLY__HOST_MAX];
        struct rally__err ae = {0, ""};
        if (rally__tcp_accept(lfd, deadline, &fd, host, sizeof host, &ae) != RALLY_OK) {
            char who[96] = "";
            size_t len = 0;
            for (int i = 0; i < d->nlinks && len < sizeof who - 16; i++)
                if (fds[i] < 0)
                    len += (size_t)snprintf(who + len, sizeof who - len, "%s%d", len ? ", " : "",
                                            d->links[i]);
            return rally__fail(e, ae.code == RALLY_ETIMEDOUT ? RALLY_EPEER : ae.code,
                               "rank %d: %d of its dmlc links never connected (from rank%s %s): "
                               "%s",
                               d->rank, naccept, naccept == 1 ? "" : "s", who, ae.msg);
        }
        struct rally__err he = {0, ""};
        int j = -1;
        if (greet(fd, d->rank, -1, min64(deadline, rally__deadline(HANDSHAKE_MS)), &got, &he) ==
            RALLY_OK)
            j = link_index(d, got);
        if (j < 0 || fds[j] >= 0) {
            fprintf(stderr, "rally: rank %d refused a dmlc link from %s: %s\n", d->rank, host,
                    he.code ? he.msg : "not a neighbour it waits for");
            close(fd);
            continue;
        }
        fds[j] = fd;
        naccept--;
    }
    return RALLY_OK;
}

/* --- the address exchange --------------------------------------------------- */

static size_t put_entry(unsigned char *b, size_t cap, int rank, const char *host, int port,
                        uint32_t incarnation, uint32_t flags)
{
    struct rally__wbuf w = {b, 0, cap, 0};
    size_t n = strlen(host);
    rally__w_u32(&w, RALLY__DMLC_BOOK_MAGIC);
    rally__w_u32(&w, (uint32_t)rank);
    rally__w_u32(&w, incarnation);
    rally__w_u32(&w, flags);
    rally__w_u32(&w, (uint32_t)port);
    rally__w_u16(&w, (uint16_t)n);
    rally__w_bytes(&w, host, n);
    return w.bad ? 0 : w.len;
}

/* Reads one entry from the ring predecessor into b (its bytes, to pass on)
 * and book. */
static int get_entry(struct rally__dmlc *d, int fd, int64_t deadline, unsigned char *b, size_t *nb,
                     struct rally__peer_addr *book, unsigned char *seen, uint32_t *flags,
                     struct rally__err *e)
{
    char what[32];
    snprintf(what, sizeof what, "rank %d", d->prev);
    if (rally__recv_all(fd, b, ENTRY_HEAD, deadline, what, e) != RALLY_OK)
        return e->code;
    struct rally__rbuf r = {b, ENTRY_HEAD, 0, 0};
    uint32_t magic = rally__r_u32(&r), rank = rally__r_u32(&r), inc = rally__r_u32(&r);
    uint32_t fl = rally__r_u32(&r), port = rally__r_u32(&r);
    uint16_t hn = rally__r_u16(&r);
    if (magic != RALLY__DMLC_BOOK_MAGIC)
        return rally__fail(e, RALLY_EPROTO,
                           "rank %d (ring predecessor of rank %d) sent no rally address entry: "
                           "is every worker of this job a rally worker?",
                           d->prev, d->rank);
    if (rank >= (uint32_t)d->world || seen[rank] || hn == 0 || hn >= RALLY__HOST_MAX || port == 0 ||
        port > 65535)
        return rally__fail(e, RALLY_EPROTO,
                           "rank %d passed a bad address entry (rank %u, port %u, %u-byte "
                           "host)",
                           d->prev, rank, port, hn);
    if (rally__recv_all(fd, b + ENTRY_HEAD, hn, deadline, what, e) != RALLY_OK)
        return e->code;
    struct rally__peer_addr *a = &book[rank];
    memcpy(a->host, b + ENTRY_HEAD, hn);
    a->host[hn] = '\0';
    a->port = (int)port;
    a->incarnation = inc;
    seen[rank] = 1;
    *flags |= fl;
    *nb = ENTRY_HEAD + hn;
    return RALLY_OK;
}

/* world - 1 rounds: send the newest entry to next, read one from prev. */
static int exchange(struct rally__dmlc *d, const int *fds, const struct rally__dmlc_self *me,
                    int64_t deadline, struct rally__peer_addr *book, uint32_t *flags,
                    struct rally__err *e)
{
    unsigned char cur[ENTRY_HEAD + RALLY__HOST_MAX], in[ENTRY_HEAD + RALLY__HOST_MAX];
    unsigned char *seen = calloc((size_t)d->world, 1);
    int rc = RALLY_OK;
    if (seen == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory for an address book of %d", d->world);
    struct rally__peer_addr *mine = &book[d->rank];
    snprintf(mine->host, sizeof mine->host, "%s", d->self_host);
    mine->port = me->listen_port;
    mine->incarnation = me->incarnation;
    seen[d->rank] = 1;
    *flags = me->flags;
    size_t n = put_entry(cur, sizeof cur, d->rank, d->self_host, me->listen_port, me->incarnation,
                         me->flags);
    if (n == 0 || d->self_host[0] == '\0') {
        rc = rally__fail(e, RALLY_ESYS, "rank %d does not know its own address", d->rank);
        goto cleanup;
    }
    if (d->world == 1)
        goto cleanup;
    int pfd = fds[link_index(d, d->prev)], nfd = fds[link_index(d, d->next)];
    char what[32];
    snprintf(what, sizeof what, "rank %d", d->next);
    for (int i = 0; i + 1 < d->world; i++) {
        size_t m = 0;
        if ((rc = rally__send_all(nfd, cur, n, deadline, what, e)) != RALLY_OK ||
            (rc = get_entry(d, pfd, deadline, in, &m, book, seen, flags, e)) != RALLY_OK)
            goto cleanup;
        memcpy(cur, in, m);
        n = m;
    }
    for (int r = 0; r < d->world; r++)
        if (!seen[r]) {
            rc = rally__fail(e, RALLY_EPROTO, "the ring of %s never brought rank %d's address",
                             d->what, r);
            goto cleanup;
        }
cleanup:
    free(seen);
    return rc;
}

/* --- the calls ------------------------------------------------------------- */

int rally__dmlc_join(struct rally__dmlc *d, const char *cmd, const struct rally__dmlc_self *me,
                     int64_t deadline, struct rally__peer_addr **book, uint32_t *flags,
                     struct rally__err *e)
{
    int tfd = -1, lfd = -1, lport = 0, naccept = 0, fds[RALLY__DMLC_MAX_LINKS];
    struct rally__peer_addr *b = NULL;
    uint32_t fl = 0;
    int ok = 0;
    for (int i = 0; i < RALLY__DMLC_MAX_LINKS; i++)
        fds[i] = -1;
    if (session(d, cmd, deadline, &tfd, e) != RALLY_OK ||
        read_assignment(d, tfd, deadline, e) != RALLY_OK)
        goto cleanup;
    /* a tracker on loopback means a one-host job: listen there only */
    if (rally__tcp_listen(rally__host_is_loopback(d->host) ? d->host : "", 0, 64, &lfd, &lport,
                          e) != RALLY_OK ||
        wire_links(d, tfd, fds, lport, deadline, &naccept, e) != RALLY_OK)
        goto cleanup;
    close(tfd);
    tfd = -1;
    if (accept_links(d, lfd, fds, naccept, deadline, e) != RALLY_OK)
        goto cleanup;
    b = calloc((size_t)d->world, sizeof *b);
    if (b == NULL) {
        rally__fail(e, RALLY_ENOMEM, "out of memory for an address book of %d", d->world);
        goto cleanup;
    }
    if (exchange(d, fds, me, deadline, b, &fl, e) != RALLY_OK)
        goto cleanup;
    *book = b;
    b = NULL;
    *flags = fl;
    ok = 1;
cleanup:
    free(b);
    if (tfd >= 0)
        close(tfd);
    if (lfd >= 0)
        close(lfd);
    for (int i = 0; i < RALLY__DMLC_MAX_LINKS; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return ok ? RALLY_OK : e->code;
}

int rally__dmlc_print(struct rally__dmlc *d, const char *msg, struct rally__err *e)
{
    int fd;
    int64_t deadline = rally__deadline(d->connect_timeout_ms);
    if (session(d, "print", deadline, &fd, e) != RALLY_OK)
        return e->code;
    int rc = send_str(fd, msg, deadline, d->what, e);
    close(fd);
    return rc;
}

int rally__dmlc_shutdown(struct rally__dmlc *d, struct rally__err *e)
{
    int fd;
    if (d->rank < 0)
        return rally__fail(e, RALLY_ESTATE, "shutdown before the dmlc tracker assigned a rank");
    if (session(d, "shutdown", rally__deadline(d->connect_timeout_ms), &fd, e) != RALLY_OK)
        return e->code;
    close(fd);
    return RALLY_OK;
}
