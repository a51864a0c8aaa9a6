/*
 * membership.c — this worker's place in the job: the tracker client, the
 * mesh and the links to its neighbours (join, wire, reset, rejoin).
 *
 * An operation that fails because the job lost a worker (the tracker's
 * RESET arrives on the alarm line, or a link breaks or stalls) comes here:
 * reset() re-wires this worker in the tracker's next epoch, and the op
 * driver retries the operation through recovery.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/mesh.h"
#include "net/sock.h"
#include "robust/robust.h"
#include "tracker/proto.h"
#include "util/clock.h"
#include "util/place.h"
#include "util/xor.h"

static int on_alarm(void *arg, struct rally__err *e)
{
    struct rally__robust *rb = arg;
    int rc = rally__tclient_check(&rb->tc, e);
    if (rc != RALLY_OK && rc != RALLY__ERESET)
        rb->fatal = rc;
    return rc;
}

static void on_report(void *arg, int code, const char *msg)
{
    struct rally__robust *rb = arg;
    /* a stall may be a dead link: let the tracker start an epoch instead */
    if (code == RALLY_ETIMEDOUT && rb->distributed)
        return;
    rally__robust_fatal(rb, code, msg);
}

static void close_links(struct rally__robust *rb)
{
    for (int i = 0; i < rb->comm.nlinks; i++)
        rally__link_close(&rb->comm.links[i]);
    rb->comm.nlinks = 0;
}

/* Each accepted peer connection must authenticate within this: a real peer
 * answers in milliseconds, and strangers are handled side by side anyway
 * (net/mesh.h), so this only frees their slots. */
#define HANDSHAKE_MS 3000

/* A rank's host (rally__host_key, as the mesh decides on shared memory),
 * or its rack. */
struct hostkey {
    const char *host;
    int rank;
};

static int by_host(const void *a, const void *b)
{
    const struct hostkey *x = a, *y = b;
    int c = strcmp(x->host, y->host);
    return c != 0 ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

/* Numbers the names k[r].host into id[r] (equal names, equal ids in
 * [0, N)), by sorting them, so every rank numbers them alike. */
static void number(struct hostkey *k, int N, int *id)
{
    qsort(k, (size_t)N, sizeof *k, by_host);
    for (int i = 0, n = 0; i < N; i++) {
        n += i > 0 && strcmp(k[i].host, k[i - 1].host) != 0;
        id[k[i].rank] = n;
    }
}

/* Every rank's host (rally_host_group's groups, else the address book's
 * hosts) and, when some rank names one (rally_domain), its rack (else
 * *racks 0): ids in [0, N).  NULL book: one host. */
static void domains(struct rally__robust *rb, struct hostkey *k, int *host, int *rack, int *racks)
{
    const struct rally__config *cfg = rb->cfg;
    const struct rally__peer_addr *book = rb->tc.peers;
    int N = rb->world;
    *racks = 0;
    for (int r = 0; r < N; r++) {
        host[r] = cfg->host_group > 0 ? r / (int)cfg->host_group : 0;
        *racks |= book != NULL && book[r].domain[0] != '\0';
    }
    if (cfg->host_group == 0 && book != NULL) {
        for (int r = 0; r < N; r++)
            k[r] = (struct hostkey){rally__host_key(book[r].host), r};
        number(k, N, host);
    }
    if (*racks) {
        for (int r = 0; r < N; r++)
            k[r] = (struct hostkey){book[r].domain, r};
        number(k, N, rack);
    }
}

/* How many failure domains dom[] (ids in [0, N)) names; work: N ints. */
static int count_domains(int N, const int *dom, int *work)
{
    int n = 0;
    memset(work, 0, (size_t)N * sizeof *work);
    for (int r = 0; r < N; r++)
        n += work[dom[r]]++ == 0;
    return n;
}

/* The topology for this epoch: the tree and the ring, the halving-doubling
 * partners when a threshold uses them, the hierarchy when rally_hier
 * allows it and the hosts have one, and the placement ring over the
 * failure domains (util/place.h, its neighbours added when it is not rank
 * order). */
static int topology(struct rally__robust *rb)
{
    const struct rally__config *cfg = rb->cfg;
    struct rally__topo *t = &rb->comm.topo;
    int N = rb->world, racks;
    rally__topo_build(t, rb->rank, N);
    if (cfg->hd_threshold_bytes > cfg->ring_threshold_bytes || cfg->rd_threshold_bytes > 0)
        rally__topo_add_hd(t); /* partners are links too */
    if (N > rb->place.cap) {
        int *o = realloc(rb->place.order, 2 * (size_t)N * sizeof *o);
        if (o == NULL)
            return rally__fail(rb->err, RALLY_ENOMEM, "out of memory for the hosts of %d ranks", N);
        rb->place.order = o;
        rb->place.cap = N;
    }
    rb->place.pos = rb->place.order + N;
    struct hostkey *k = malloc((size_t)N * sizeof *k);
    int *host = malloc(3 * (size_t)N * sizeof *host), *rack = host + N;
    if (k == NULL || host == NULL) {
        free(k);
        free(host);
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory for the hosts of %d ranks", N);
    }
    domains(rb, k, host, rack, &racks);
    if (cfg->hier != RALLY__HIER_OFF && N >= 3)
        rally__topo_add_hier(t, host, host + 2 * N);
    int by_rack = cfg->spread == RALLY__SPREAD_RACK ||
                  (cfg->spread == RALLY__SPREAD_AUTO && racks);
    if (rally__place_order(N, host, racks ? rack : NULL, by_rack, rb->place.order) != 0) {
        free(k);
        free(host);
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory for the hosts of %d ranks", N);
    }
    for (int i = 0; i < N; i++)
        rb->place.pos[rb->place.order[i]] = i;
    int me = rb->place.pos[rb->rank];
    int prev = rb->place.order[(me + N - 1) % N], next = rb->place.order[(me + 1) % N];
    if (prev != t->ring_prev || next != t->ring_next)
        rally__topo_add_place(t, prev, next);
    rb->place.xor_g = 0;
    rb->place.local_xor = cfg->local_scheme == RALLY__LOCAL_XOR && N >= 2;
    if ((cfg->local_scheme == RALLY__LOCAL_XOR || cfg->result_scheme == RALLY__LOCAL_XOR) &&
        N >= 2) {
        int nd = count_domains(N, by_rack && racks ? rack : host, host + 2 * N);
        rb->place.xor_g = rally__xor_size((int)cfg->xor_set, N, nd);
    }
    if (rb->place.local_xor) { /* the parity of local models goes round each set */
        int first, size, index, i;
        rally__robust_xor_set(rb, rb->rank, &first, &size, &index, &i);
        int xp = rally__robust_at(rb, first + (i + size - 1) % size);
        int xn = rally__robust_at(rb, first + (i + 1) % size);
        if (xp != prev || xn != next) /* a set's two ends, or a set of two */
            rally__topo_add_xor(t, xp, xn);
    }
    free(k);
    free(host);
    return RALLY_OK;
}

/* Wires this worker to its neighbours from the tracker's address book,
 * watching the tracker line meanwhile: a newer RESET ends the wiring at once
 * with RALLY__ERESET.  The worker's own bound is half of
 * rally_connect_timeout_ms, so a peer that vanished without the tracker
 * knowing is reported (LINK_FAILED, a new epoch) well before the tracker's
 * start-up window (rally-run --startup-timeout-ms, by default as long as
 * rally_connect_timeout_ms) would fail the job. */
static int wire(struct rally__robust *rb)
{
    struct rally__comm *cm = &rb->comm;
    struct rally__mesh_peer peers[RALLY__MAX_NEIGHBOURS];
    if (topology(rb) != RALLY_OK)
        return rb->err->code;
    int n = cm->topo.nneighbours, one_host = 1;
    for (int i = 0; i < n; i++) {
        const struct rally__peer_addr *a = &rb->tc.peers[cm->topo.neighbours[i]];
        peers[i] =
            (struct rally__mesh_peer){cm->topo.neighbours[i], a->host, a->port, a->incarnation};
    }
    for (int r = 0; r < rb->world; r++)
        one_host &= rally__host_is_loopback(rb->tc.peers[r].host);
    struct rally__mesh_opts o = {.listen_fd = rb->mem.listen_fd,
                                 .secret = &rb->tc.secret,
                                 .rank = rb->rank,
                                 .world = rb->world,
                                 .incarnation = rb->tc.incarnation,
                                 .host = rb->tc.peers[rb->rank].host,
                                 .one_host = one_host,
                                 .sock_buf_bytes = rb->cfg->sock_buf_bytes,
                                 .deadline = rally__deadline(rb->cfg->connect_timeout_ms / 2),
                                 .handshake_ms = HANDSHAKE_MS,
                                 .transport = (int)rb->cfg->transport,
                                 .cma = (int)rb->cfg->cma,
                                 .link_timeout_ms = rb->cfg->link_timeout_ms,
                                 .watch_fd = rb->tc.fd,
                                 .watch = on_alarm,
                                 .watch_arg = rb};
    if (rally__mesh_connect(&o, peers, n, cm->links, rb->err) != RALLY_OK)
        return rb->err->code;
    cm->nlinks = n;
    cm->seq = 0; /* every worker counts collectives afresh in each epoch */
    return RALLY_OK;
}

/* 1 when a failed wiring (or wait for GO) is the job's churn, answered by
 * the next epoch: a newer RESET, a peer that died, refused, answered as
 * someone else (its port reused) or did not come in time.  The tracker's
 * ABORT, a broken tracker line and local faults (memory, descriptors) are
 * not. */
static int wiring_repairable(const struct rally__robust *rb, int rc)
{
    return rally__robust_repairable(rb, rc) ||
           (rb->distributed && !rb->fatal && (rc == RALLY_EAUTH || rc == RALLY_EPROTO));
}

/* Waits on the alarm line for the tracker's RESET (or its ABORT). */
static int await_reset(struct rally__robust *rb)
{
    int64_t deadline = rally__deadline(rb->cfg->timeout_ms);
    for (;;) {
        int n = rb->tc.reset_held ? 1 : rally__fd_wait(rb->tc.fd, 0, deadline);
        if (n == 0)
            return rally__fail_over(rb->err, RALLY_ETIMEDOUT,
                                    "a link failed and the tracker ordered no recovery within "
                                    "%lld ms (rally_timeout_ms)",
                                    (long long)rb->cfg->timeout_ms);
        if (n < 0)
            return rally__fail_errno(rb->err, RALLY_ESYS, errno, "poll failed");
        struct rally__err v = {0, ""};
        int rc = on_alarm(rb, &v);
        if (rc == RALLY__ERESET)
            return RALLY__ERESET;
        if (rc != RALLY_OK)
            return rally__fail_over(rb->err, rc, "%s", v.msg);
    }
}

void rally__robust_in_step(struct rally__robust *rb)
{
    /* the tracker's RECOVERED waits for every rank's word */
    if (rb->mem.recovering && rb->mem.kind != NULL && rb->mem.kind->in_step != NULL)
        rb->mem.kind->in_step(rb);
    rb->mem.recovering = 0;
}

static void in_step(struct rally__robust *rb)
{
    rally__tclient_in_step(&rb->tc); /* (it checks the connection itself) */
}

void rally__robust_resize_done(struct rally__robust *rb)
{
    rb->mem.resized = 0;
}

int rally__robust_repairable(const struct rally__robust *rb, int rc)
{
    return rb->distributed && !rb->fatal &&
           (rc == RALLY__ERESET || rc == RALLY_EPEER || rc == RALLY_ETIMEDOUT);
}

/* The job goes on with other workers (docs/recovery.md, "Elastic jobs"):
 * this worker went back to its newest committed checkpoint; every result it
 * cached belongs to the old world, and the program starts again from where
 * it read its input, with its new rank, its collectives before
 * load_checkpoint included. */
static int went_on(struct rally__robust *rb)
{
    rb->tc.resized = 0;
    const char *why = NULL;
    int lost = 0; /* what a resume at the first world mends (--auto-resume) */
    if (rally__robust_has_local(rb) && !rally__robust_records_declared(rb)) {
        why = "the job checkpoints local models as opaque bytes (rally_checkpoint's local "
              "argument), which rally cannot divide among other workers; declare them as "
              "records (rally_set_local_records)";
        lost = 1;
    } else if (rally__robust_store_back(rb) != RALLY_OK) {
        why = rb->err->msg;
    }
    if (why != NULL) {
        char msg[RALLY__ERR_MSG_MAX + 64];
        snprintf(msg, sizeof msg, "cannot go on with %d workers: %s", rb->world, why);
        rally__err_clear(rb->err);
        rally__fail(rb->err, RALLY_ECONFIG, "%s", msg);
        rally__robust_fatal(rb, lost ? RALLY__ELOST : RALLY_ECONFIG, msg);
        return RALLY_ECONFIG;
    }
    rally__robust_store_spare_prev(rb);
    rally__robust_records_changed(rb, 0); /* the records move at the load */
    rally__robust_cache_clear(rb);
    rally__robust_pos_restart(rb);
    rb->mem.resized = 1;
    rally__robust_verify_forget(rb);
    rally__robust_requests_spent(rb); /* they were for a commit of the old world */
    rally__robust_store_resized(rb);
    return rally__fail(rb->err, RALLY_ERESIZED,
                       "the job goes on with %d workers from checkpoint version %llu; this "
                       "worker is rank %d now: read its input again and call "
                       "rally_load_checkpoint",
                       rb->world, (unsigned long long)rally__robust_version(rb), rb->rank);
}

int rally__robust_reset(struct rally__robust *rb, int cause, uint64_t key)
{
    int rc = rb->mem.kind->reset(rb, cause, key); /* only a distributed job resets */
    if (rc != RALLY_OK || !rb->tc.resized)
        return rc;
    if (rb->tc.assign_flags & RALLY__ASSIGN_FINISHING) {
        /* a survivor stood in finalize: every result is computed, and the
         * ones behind are served from the caches as in any recovery */
        rb->tc.resized = 0;
        rally__robust_records_changed(rb, 1);
        rally__robust_store_resized(rb);
        return RALLY_OK;
    }
    return went_on(rb);
}

int rally__robust_grow(struct rally__robust *rb, uint64_t key)
{
    if (rb->mem.kind != &rally__tracker_rally)
        return RALLY_OK;
    int rc = rally__tclient_grow_ready(&rb->tc, rb->err);
    if (rc == RALLY_OK)
        rc = await_reset(rb);
    if (rc != RALLY__ERESET && !rally__robust_repairable(rb, rc))
        return rc;
    return rally__robust_reset(rb, rc, key);
}

/* A renumbered worker's collective layer: its new rank, world and
 * topology, the same alarm line and scratch buffer. */
static void renumber(struct rally__robust *rb)
{
    struct rally__comm was = rb->comm;
    rally__robust_records_world(rb);
    rally__robust_comm_setup(rb, was.report, rb->err);
    rb->comm.alarm = was.alarm;
    rb->comm.on_alarm = was.on_alarm;
    rb->comm.scratch = was.scratch;
    rb->comm.scratch_nbytes = was.scratch_nbytes;
}

/* rally's tracker: report the failure, await its RESET, rejoin, re-wire. */
static int reset(struct rally__robust *rb, int cause, uint64_t key)
{
    int rc = cause;
    for (;;) {
        if (rc != RALLY__ERESET) {
            rally__tclient_link_failed(&rb->tc, rb->err->msg);
            if ((rc = await_reset(rb)) != RALLY__ERESET)
                return rc;
        }
        close_links(rb);
        rally__err_clear(rb->err);
        /* The tracker bounds an epoch's assembly and aborts the job past it;
         * this worker only needs a backstop beyond that. */
        int64_t deadline = rally__deadline(rb->cfg->connect_timeout_ms + rb->cfg->timeout_ms);
        if ((rc = rally__tclient_rejoin(&rb->tc, key, (uint32_t)rally__robust_committed(rb),
                                        deadline, rb->err)) != RALLY_OK) {
            rb->fatal = rc;
            return rc;
        }
        if (rb->tc.resized)
            renumber(rb);
        /* a worker waiting to join is asked for again at this epoch's GO */
        rb->tc.grow_asked = 0;
        rally__robust_mock(rb, rally__robust_version(rb), rally__robust_user_seq(rb),
                           RALLY__MOCK_WIRE);
        if ((rc = wire(rb)) != RALLY_OK) {
            close_links(rb);
            if (!wiring_repairable(rb, rc))
                return rc; /* the tracker's ABORT, a broken tracker line, a local fault */
            continue;      /* a newer RESET, or a peer died while wiring: report, next epoch */
        }
        rc = rally__tclient_ready(&rb->tc, deadline, rb->err);
        if (rc == RALLY__ERESET)
            continue;
        if (rc != RALLY_OK) {
            rb->fatal = rc;
            return rc;
        }
        rally__err_clear(rb->err);
        rb->mem.recovering = 1;
        return RALLY_OK;
    }
}

int rally__robust_input(struct rally__robust *rb, const char *scheme, const char *fingerprint)
{
    if (rb->mem.kind == NULL || rb->mem.kind->input == NULL || !rb->cfg->input_check)
        return RALLY_OK;
    return rb->mem.kind->input(rb, scheme, fingerprint);
}

static int input(struct rally__robust *rb, const char *scheme, const char *fingerprint)
{
    /* (tclient_input refuses a closed connection itself) */
    return rally__tclient_input(&rb->tc, scheme, strtoull(fingerprint, NULL, 16), rb->err);
}

/* The user's line to the tracker's log (stdout alone). */
int rally__robust_print(struct rally__robust *rb, const char *msg)
{
    if (rb->mem.kind != NULL)
        return rb->mem.kind->print(rb, msg);
    printf("%s\n", msg);
    fflush(stdout);
    return RALLY_OK;
}

static int print(struct rally__robust *rb, const char *msg)
{
    if (rb->tc.fd < 0)
        return rally__fail(rb->err, RALLY_ESTATE, "not connected to the tracker");
    return rally__tclient_print(&rb->tc, msg, rb->err);
}

void rally__robust_report(struct rally__robust *rb, const struct rally__msg_report *m)
{
    if (rb->mem.kind != NULL && rb->mem.kind->report != NULL)
        rb->mem.kind->report(rb, m);
}

static void send_report(struct rally__robust *rb, const struct rally__msg_report *m)
{
    rally__tclient_send_report(&rb->tc, m); /* (it checks the connection itself) */
}

int rally__robust_leave(struct rally__robust *rb)
{
    return rb->mem.kind->leave(rb);
}

static int leave(struct rally__robust *rb)
{
    rally__tclient_heartbeat_stop(&rb->tc);
    return rally__tclient_shutdown(&rb->tc, rally__deadline(rb->cfg->connect_timeout_ms), rb->err);
}

const struct rally__tracker_kind rally__tracker_rally = {
    .name = "rally",
    .reset = reset,
    .input = input,
    .print = print,
    .report = send_report,
    .in_step = in_step,
    .leave = leave,
    .free = NULL, /* its client closes with the engine (rally__robust_mem_free) */
};

/* --- life cycle --------------------------------------------------------------- */

void rally__robust_comm_setup(struct rally__robust *rb,
                              void (*report)(void *arg, int code, const char *msg),
                              struct rally__err *e)
{
    const struct rally__config *cfg = rb->cfg;
    rb->rank = rb->tc.rank;
    rb->world = rb->tc.world;
    rb->k = (int)cfg->local_replica < rb->world - 1 ? (int)cfg->local_replica : rb->world - 1;
    if (cfg->local_scheme == RALLY__LOCAL_XOR)
        rb->k = 0; /* no copies: parity (rb->place.xor_g) */
    struct rally__comm *cm = &rb->comm;
    rally__comm_init(cm, rb->rank, rb->world, e);
    cm->timeout_ms = cfg->timeout_ms;
    cm->ring_threshold = (size_t)cfg->ring_threshold_bytes;
    cm->hd_threshold = (size_t)cfg->hd_threshold_bytes;
    cm->rd_threshold = (size_t)cfg->rd_threshold_bytes; /* its partners: topology(), wiring */
    cm->chunk = (size_t)cfg->chunk_bytes;
    cm->spin_us = cfg->spin_us;
    cm->spin_alone_us = cfg->spin_alone_us;
    cm->report = report;
    cm->on_sidecar = rally__robust_on_sidecar;
    cm->hook_arg = rb;
}

void rally__robust_start_failed(const struct rally__config *cfg, const char *host,
                                const struct rally__err *e)
{
    if (cfg->tracker[0] == '\0' || cfg->secret_file[0] == '\0')
        return; /* alone, or under the dmlc tracker: nobody to tell */
    struct rally__tclient_opts o = {.tracker = cfg->tracker,
                                    .secret_file = cfg->secret_file,
                                    .task_id = cfg->task_id,
                                    .processor_name = host,
                                    .connect_timeout_ms = cfg->connect_timeout_ms};
    rally__tclient_fail_start(&o, RALLY_ECONFIG, e->msg);
}

/* The rank a worker was launched as: its task id where that is a rank
 * (rally-run's), else the rank it joined with. */
static int launch_rank(const char *task_id, int rank)
{
    int64_t v;
    return rally__parse_int(task_id, 0, RALLY__WORLD_MAX - 1, &v) == 0 ? (int)v : rank;
}

/* Joins the job through rally's tracker (cfg->tracker is set, the settings
 * checked): the tracker client, the mesh, READY. */
int rally__robust_join(struct rally__robust *rb, struct rally__err *e)
{
    const struct rally__config *cfg = rb->cfg;
    const char *host = rb->host;
    rb->distributed = 1;
    rb->mem.kind = &rally__tracker_rally;
    if (cfg->secret_file[0] == '\0')
        return rally__fail(e, RALLY_ECONFIG,
                           "rally_tracker is set but rally_secret_file is not; start workers "
                           "with rally-run, or export what rally-tracker printed");
    /* Peers reach this worker at rally_interface's address, by default the
     * local end of its connection to the tracker: the join listens there
     * only (on a one-host job, loopback), not on every interface. */
    struct rally__tclient_opts o = {cfg->tracker,
                                    cfg->secret_file,
                                    cfg->task_id,
                                    0,
                                    host,
                                    cfg->connect_timeout_ms,
                                    cfg->connect_timeout_ms + cfg->timeout_ms,
                                    cfg->link_timeout_ms,
                                    cfg->interface,
                                    &rb->mem.listen_fd,
                                    cfg->domain};
    if (rally__tclient_join(&rb->tc, &o, e) != RALLY_OK)
        return e->code;
    /* the tracker watches this worker's liveness from its ASSIGN on */
    if (rally__tclient_heartbeat_start(&rb->tc, cfg->heartbeat_ms, e) != RALLY_OK)
        return e->code;
    rally__robust_comm_setup(rb, on_report, e);
    rb->launch_rank = launch_rank(cfg->task_id, rb->rank);
    rb->comm.alarm = rally__handle_fd(rb->tc.fd);
    rb->comm.on_alarm = on_alarm;
    /* joined in a later epoch: this worker replaces one that died, or joins
     * at a membership change, where every worker loads again */
    rb->mem.recovering = rb->tc.epoch > 0;
    rb->mem.resized = (rb->tc.assign_flags & RALLY__ASSIGN_CHANGED) != 0;
    /* Until GO the tracker decides (it bounds the start-up and aborts past
     * it); this worker's wait is only a backstop beyond that. */
    int rc = wire(rb);
    if (rc == RALLY_OK)
        rc = rally__tclient_ready(&rb->tc,
                                  rally__deadline(cfg->connect_timeout_ms + cfg->timeout_ms), e);
    if (rc != RALLY_OK) {
        /* a death or a newer epoch while joining: follow it like any worker */
        close_links(rb);
        if (!wiring_repairable(rb, rc))
            return e->code;
        rc = rally__robust_reset(rb, rc, RALLY__KEY_BOOT(0));
        if (rc == RALLY_ERESIZED) /* renumbered before its program began: nothing to redo */
            rally__err_clear(e);
        else if (rc != RALLY_OK)
            return e->code;
    }
    return RALLY_OK;
}


/* Leaves the mesh and the tracker: the kind's own state, the links, the
 * client, the listening socket. */
void rally__robust_mem_free(struct rally__robust *rb)
{
    if (rb->mem.kind != NULL && rb->mem.kind->free != NULL)
        rb->mem.kind->free(rb);
    close_links(rb);
    rally__tclient_close(&rb->tc);
    if (rb->mem.listen_fd >= 0)
        close(rb->mem.listen_fd);
    rb->mem.listen_fd = -1;
}

/* --- for membership_dmlc.c (the dmlc tracker) ------------------------------ */

int rally__robust_wire(struct rally__robust *rb)
{
    return wire(rb);
}

void rally__robust_unwire(struct rally__robust *rb)
{
    close_links(rb);
}
