/*
 * membership_dmlc.c — this worker's place in a job run by the classic dmlc
 * tracker: join, re-wire after a failure, print and shutdown through
 * tracker/dmlc.h instead of rally's own tracker.
 *
 * The dmlc tracker keeps no connection to a worker, sends no RESET and no
 * heartbeat reaches it.  A worker learns of a death only when a link fails
 * (RALLY_EPEER) or stalls (RALLY_ETIMEDOUT, rally_timeout_ms); then, as
 * rabit does, it closes every link, which fails its neighbours' links in
 * turn, so the failure reaches every worker, and each goes back to the
 * tracker with "recover".  The restarted worker comes with "start" and its
 * task id.  Once everybody has passed through the tracker the address
 * exchange completes (tracker/dmlc.h) and the mesh is wired as usual; the
 * op driver then retries through agreement rounds (recovery.c), exactly as
 * after an epoch of rally's own tracker.
 *
 * The links are not authenticated: their handshake runs with a fixed,
 * public key, so it names a peer (rank, incarnation) but proves nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/sock.h"
#include "robust/robust.h"
#include "tracker/dmlc.h"
#include "util/clock.h"

/* A collective's report: a stall may be a dead peer, and a link failure is
 * handled by its caller; anything else fails the job (no tracker to tell). */
static void on_report(void *arg, int code, const char *msg)
{
    struct rally__robust *rb = arg;
    (void)msg;
    if (code != RALLY_ETIMEDOUT)
        rb->fatal = code;
}

/* How long a worker waits for its peers: rally_timeout_ms, bounded by
 * rally_progress_timeout_ms (no tracker watches progress here). */
static int64_t wait_ms(const struct rally__config *cfg)
{
    int64_t p = cfg->progress_timeout_ms;
    return p > 0 && p < cfg->timeout_ms ? p : cfg->timeout_ms;
}

static int64_t join_timeout_ms(const struct rally__config *cfg)
{
    return cfg->connect_timeout_ms + wait_ms(cfg);
}

/* Asks the tracker and the ring for the address book; fills rb->tc. */
static int join(struct rally__robust *rb, const char *cmd, uint32_t flags, uint32_t *all_flags)
{
    struct rally__dmlc_self me = {rb->mem.dmlc_port, rb->tc.incarnation, flags};
    struct rally__peer_addr *book;
    int64_t deadline = rally__deadline(join_timeout_ms(rb->cfg));
    if (rally__dmlc_join(rb->mem.dmlc, cmd, &me, deadline, &book, all_flags, rb->err) != RALLY_OK)
        return rb->err->code;
    free(rb->tc.peers);
    rb->tc.peers = book;
    rb->tc.rank = rb->mem.dmlc->rank;
    rb->tc.world = rb->mem.dmlc->world;
    rb->tc.epoch++;
    return RALLY_OK;
}

int rally__robust_dmlc_init(struct rally__robust *rb, const char *host, struct rally__err *e)
{
    const struct rally__config *cfg = rb->cfg;
    (void)host; /* the address book carries what the tracker connection shows */
    rb->distributed = 1;
    rb->mem.kind = &rally__tracker_dmlc;
    rb->mem.dmlc = calloc(1, sizeof *rb->mem.dmlc);
    if (rb->mem.dmlc == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory");
    if (rally__dmlc_init(rb->mem.dmlc, cfg->dmlc_tracker_uri, (int)cfg->dmlc_tracker_port,
                         cfg->task_id, cfg->connect_timeout_ms, e) != RALLY_OK)
        return e->code;
    if (cfg->dmlc_num_attempt > 0 && strcmp(rb->mem.dmlc->task_id, "NULL") == 0)
        return rally__fail(e, RALLY_ECONFIG,
                           "attempt %lld of a worker without a task id: the dmlc tracker finds "
                           "a restarted worker's rank by DMLC_TASK_ID (or rally_task_id)",
                           (long long)cfg->dmlc_num_attempt);
    /* a tracker on loopback means a one-host job: listen there only */
    const char *uri = cfg->dmlc_tracker_uri;
    if (rally__tcp_listen(rally__host_is_loopback(uri) ? uri : "", 0, 128, &rb->mem.listen_fd,
                          &rb->mem.dmlc_port, e) != RALLY_OK)
        return e->code;
    rb->tc.incarnation = (uint32_t)cfg->dmlc_num_attempt + 1;
    memset(&rb->tc.secret, 0, sizeof rb->tc.secret); /* public: names, proves nothing */
    uint32_t flags;
    if (join(rb, "start", cfg->dmlc_num_attempt > 0 ? RALLY__DMLC_F_RECOVERING : 0, &flags) !=
        RALLY_OK)
        return e->code;
    rb->tc.epoch = 0;
    /* the exchanged book names every rank: halving-doubling partners too */
    rally__robust_comm_setup(rb, on_report, e);
    rb->launch_rank = rb->rank;            /* the dmlc tracker never renumbers */
    rb->comm.alarm = rally__handle_none(); /* no tracker line: links alone tell of a death */
    rb->comm.timeout_ms = wait_ms(cfg);
    if (rally__robust_wire(rb) != RALLY_OK)
        return e->code;
    /* someone restarted before the job got going: everyone agrees first */
    rb->mem.recovering = (flags & RALLY__DMLC_F_RECOVERING) != 0;
    return RALLY_OK;
}

static int dmlc_reset(struct rally__robust *rb, int cause, uint64_t key)
{
    (void)cause;
    (void)key;
    int64_t deadline = rally__deadline(join_timeout_ms(rb->cfg));
    for (;;) {
        rally__robust_unwire(rb); /* every neighbour now sees the failure too */
        rally__err_clear(rb->err);
        uint32_t flags;
        int rc = join(rb, "recover", RALLY__DMLC_F_RECOVERING, &flags);
        if (rc == RALLY_OK && (rc = rally__robust_wire(rb)) == RALLY_OK) {
            rally__err_clear(rb->err);
            rb->mem.recovering = 1;
            return RALLY_OK;
        }
        /* a peer died again while re-wiring: back to the tracker */
        if ((rc != RALLY_EPEER && rc != RALLY_ETIMEDOUT) || rally__ms_left(deadline) == 0) {
            rb->fatal = rc;
            return rc;
        }
    }
}

static int dmlc_print(struct rally__robust *rb, const char *msg)
{
    return rally__dmlc_print(rb->mem.dmlc, msg, rb->err);
}

static int dmlc_leave(struct rally__robust *rb)
{
    return rally__dmlc_shutdown(rb->mem.dmlc, rb->err);
}

static void dmlc_free(struct rally__robust *rb)
{
    free(rb->mem.dmlc);
    rb->mem.dmlc = NULL;
}

const struct rally__tracker_kind rally__tracker_dmlc = {
    .name = "dmlc",
    .reset = dmlc_reset,
    .input = NULL, /* its protocol has no such message: only a resume checks the input */
    .print = dmlc_print,
    .report = NULL, /* nor for observers */
    .in_step = NULL, /* nor for the end of a recovery */
    .leave = dmlc_leave,
    .free = dmlc_free,
};
