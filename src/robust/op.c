/*
 * op.c — the op driver: each operation runs straight on the links while the
 * job is in step, and through recovery after an epoch began; checkpoint,
 * load_checkpoint and finalize are operations of their own.
 *
 * An operation that fails because the job lost a worker re-wires this
 * worker in the next epoch (membership.c) and is retried through agreement
 * rounds (recovery.c), which serve the workers that are behind, until every
 * worker stands at the same position; then the operation runs normally.
 */
#include <stdlib.h>
#include <string.h>

#include "net/sock.h"
#include "robust/robust.h"
#include "util/clock.h"
#include "util/digest.h"
#include "util/wire.h"

enum { SERVED = RALLY__SERVED, EXECUTE = RALLY__EXECUTE };

static uint64_t here(const struct rally__robust *rb)
{
    return rb->pos.loaded ? RALLY__KEY_OP(rb->pos.version, rb->pos.q)
                          : RALLY__KEY_BOOT(rb->pos.boot);
}

static void advance(struct rally__robust *rb)
{
    if (rb->pos.loaded)
        rb->pos.q++;
    else
        rb->pos.boot++;
}

/* Where this worker stands, for the tracker's progress watch (client.h):
 * inside the operation at key (what: its kind), or, what == NULL, in the
 * user's code before the next one. */
static int64_t stand(struct rally__robust *rb, uint64_t key, const char *what)
{
    return rally__tclient_position(&rb->tc, what ? key : here(rb), what != NULL,
                                   what ? what : "");
}

static int run_op(struct rally__robust *rb, struct rally__op *op, uint64_t key);

/* One more call into the window: it waited w ms inside and spanned span
 * ms; the oldest leaves once the window is full. */
static void late_push(struct rally__robust *rb, int64_t w, int64_t span)
{
    int cap = (int)rb->cfg->lateness_window;
    if (cap <= 0)
        return;
    if (rb->late.n == cap) {
        rb->late.wait_sum -= rb->late.wait_ms[rb->late.at];
        rb->late.span_sum -= rb->late.span_ms[rb->late.at];
    } else {
        rb->late.n++;
    }
    /* a span is at most a call's bound (rally_timeout_ms): clamped, not wrapped */
    rb->late.wait_ms[rb->late.at] = w < UINT32_MAX ? (uint32_t)w : UINT32_MAX;
    rb->late.span_ms[rb->late.at] = span < UINT32_MAX ? (uint32_t)span : UINT32_MAX;
    rb->late.wait_sum += rb->late.wait_ms[rb->late.at];
    rb->late.span_sum += rb->late.span_ms[rb->late.at];
    rb->late.at = rb->late.at + 1 == cap ? 0 : rb->late.at + 1;
}

void rally__robust_count(struct rally__robust *rb, uint64_t nbytes)
{
    rb->pos.calls++;
    rb->pos.nbytes += nbytes;
    /* the first call has no end before it to span from */
    if (rb->late.last_end != 0 && rb->late.last_end <= rb->late.end)
        late_push(rb, rb->late.waited, rb->late.end - rb->late.last_end);
    rb->late.last_end = rb->late.end;
    rb->late.waited = 0;
    rally__tclient_counters(&rb->tc, rb->pos.calls, rb->pos.nbytes, (uint32_t)rb->late.n,
                            rb->late.wait_sum, rb->late.span_sum);
}

int rally__robust_op(struct rally__robust *rb, struct rally__op *op)
{
    uint64_t key = here(rb);
    /* the mock's straggler: its own code, before the call */
    if (op->sig.kind < RALLY__K_AGREE && rb->mock.n > 0) {
        int64_t lag = rally__mock_lag(&rb->mock, rb->launch_rank, rb->pos.version,
                                      rally__robust_user_seq(rb), rally__robust_ndeath(rb));
        if (lag > 0)
            rally__sleep_ms(lag);
    }
    /* the two stamps of the position are the straggler measure's clock: a
     * late worker waits least inside (no clock of another host is read) */
    int64_t in = stand(rb, key, rally__kind_name(op->sig.kind));
    int rc = run_op(rb, op, key);
    rb->partial.buf = NULL;
    rb->late.end = stand(rb, 0, NULL);
    rb->late.waited += rb->late.end - in;
    return rc;
}

static int run_op(struct rally__robust *rb, struct rally__op *op, uint64_t key)
{
    rally__robust_mock(rb, rb->pos.version, rally__robust_user_seq(rb), RALLY__MOCK_OP);
    int prepared = 0, retried = 0;
    for (;;) {
        int rc;
        unsigned char *res = NULL;
        uint64_t n = 0;
        if (rally__robust_recovering(rb)) {
            rc = rally__robust_recover(rb, key, &op->sig, &res, &n);
            if (rc == SERVED) {
                if ((rc = op->deliver(rb, op, res, n)) != RALLY_OK) {
                    rally__robust_unbuf(rb, res);
                    return rc;
                }
                rally__robust_verify_result(rb, op, key, res, n);
                if ((rc = rally__robust_cache_put(rb, key, &op->sig, res, n, NULL)) == RALLY_OK)
                    advance(rb);
                return rc;
            }
            if (rc == EXECUTE)
                retried = 1;
            if (rc != EXECUTE) {
                if (!rally__robust_repairable(rb, rc))
                    return rc;
                if ((rc = rally__robust_reset(rb, rc, key)) != RALLY_OK)
                    return rc;
                continue;
            }
        }
        if (!prepared && op->prepare != NULL) {
            op->prepare(op->prepare_arg);
            prepared = 1;
        }
        rally__robust_verify_begin(rb, &op->sig);
        rb->pos.retried = retried;
        op->part.copies = 0;
        op->whole = NULL;
        rc = op->run(rb, op, &res, &n);
        rb->pos.retried = 0;
        if (rc == RALLY_OK && (rc = rally__robust_verify_check(rb)) != RALLY_OK)
            rally__robust_unbuf(rb, res);
        if (rc == RALLY_OK) {
            int part = op->part.copies != 0;
            rally__robust_verify_result(rb, op, key, part ? op->whole : res,
                                        part ? op->part.whole : n);
            if ((rc = rally__robust_cache_put(rb, key, &op->sig, res, n,
                                              part ? &op->part : NULL)) == RALLY_OK)
                advance(rb);
            return rc;
        }
        if (!rally__robust_repairable(rb, rc))
            return rc;
        if ((rc = rally__robust_reset(rb, rc, key)) != RALLY_OK)
            return rc;
    }
}

static int deliver_nothing(struct rally__robust *rb, struct rally__op *op, const unsigned char *res,
                           uint64_t n)
{
    return RALLY_OK;
}

/* The acknowledgement: this worker's digest of the global model it stored
 * (util/digest.h; none for a lazy one), the newest verified result's
 * (verify.c; none when there is none or this worker was served the
 * checkpoint and cannot know it) and, once agreed, the request bits. */
struct ack {
    uint64_t flags;
    uint64_t pair[2];  /* (d, ~d), or (0, 0) */
    uint64_t ncalls;   /* verify.c's count: the same on every rank that knows it, else 0 */
    uint64_t vpair[2]; /* the verified result's (d, ~d), or (0, 0) */
    int ran;           /* this worker ran it (it was not served from a cache) */
};

/* flags, d, ~d, ncalls, vd, ~vd: six words OR-ed over the job */
#define ACK_WORDS 6
#define ACK_NBYTES (8 * ACK_WORDS)

/* Only when the digests disagree: every rank's two pairs, gathered in rank
 * order, to name who passed which model, or whose verified result differs
 * (named first: it is the cause); then the job stops. */
static int name_mismatch(struct rally__robust *rb, struct rally__op *op, const struct ack *c,
                         int verified)
{
    int N = rb->world;
    unsigned char *all = malloc((size_t)N * 32);
    size_t *off = malloc(2 * (size_t)N * sizeof *off);
    uint64_t *pairs = malloc(2 * (size_t)N * sizeof *pairs);
    int rc;
    if (all == NULL || off == NULL || pairs == NULL) {
        rc = rally__fail(rb->err, RALLY_ENOMEM, "out of memory comparing checkpoint digests");
        goto done;
    }
    size_t *len = off + N;
    for (int i = 0; i < N; i++) {
        off[i] = (size_t)i * 32;
        len[i] = 32;
    }
    unsigned char *mine = all + (size_t)rb->rank * 32;
    rally__put_u64(mine, c->pair[0]);
    rally__put_u64(mine + 8, c->pair[1]);
    rally__put_u64(mine + 16, c->vpair[0]);
    rally__put_u64(mine + 24, c->vpair[1]);
    struct rally__sig s = op->sig;
    s.dtype = 1; /* the acknowledgement's second step */
    if ((rc = rally__allgather(&rb->comm, all, off, len, &s)) != RALLY_OK)
        goto done;
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 2; k++)
            pairs[2 * i + k] = rally__get_u64(all + (size_t)i * 32 + (verified ? 16 : 0) + 8 * k);
    rc = verified ? rally__robust_verify_fail(rb, pairs)
                  : rally__digest_fail(rb->err, rb->pos.version, pairs, N);
    rally__robust_fatal(rb, rc, rb->err->msg);
done:
    free(pairs);
    free(off);
    free(all);
    return rc;
}

int rally__robust_wait_reset(struct rally__robust *rb)
{
    int64_t deadline = rally__deadline(rb->cfg->timeout_ms);
    for (;;) {
        int k = rb->tc.reset_held ? 1 : rally__fd_wait(rb->tc.fd, 0, deadline);
        if (k <= 0)
            return rally__fail(rb->err, RALLY_ETIMEDOUT,
                               "rally mock: no RESET came within %lld ms (rally_timeout_ms) "
                               "for the ack or cut point at version %llu",
                               (long long)rb->cfg->timeout_ms,
                               (unsigned long long)rb->pos.version);
        int rc = rb->comm.on_alarm(rb->comm.hook_arg, rb->err);
        if (rc != RALLY_OK)
            return rc;
    }
}

/* 48 bytes OR-ed over the job: the request bits, the digest pairs and the count. */
static int run_ack(struct rally__robust *rb, struct rally__op *op, unsigned char **res, uint64_t *n)
{
    struct ack *c = op->ctx;
    unsigned char *b = rally__robust_buf(rb, ACK_NBYTES);
    if (b == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory");
    uint64_t w[ACK_WORDS] = {
        rally__robust_requests(rb), c->pair[0], c->pair[1], c->ncalls, c->vpair[0], c->vpair[1]};
    for (int i = 0; i < ACK_WORDS; i++)
        rally__put_u64(b + 8 * i, w[i]);
    struct rally__reducer rd;
    rally__reducer_builtin(&rd, RALLY_UINT64, RALLY_BITOR);
    int rc = rally__allreduce(&rb->comm, b, b, ACK_WORDS, &rd, &op->sig);
    if (rc == RALLY_OK && rb->mock.n > 0 && rb->mem.kind == &rally__tracker_rally &&
        (rally__get_u64(b) & RALLY__REQ_GROW) &&
        rally__mock_ack(&rb->mock, rb->launch_rank, rb->pos.version, rally__robust_ndeath(rb)))
        rc = rally__robust_wait_reset(rb);
    uint64_t ored[2] = {rally__get_u64(b + 8), rally__get_u64(b + 16)};
    uint64_t vored[2] = {rally__get_u64(b + 32), rally__get_u64(b + 40)};
    if (rc == RALLY_OK && (rally__digest_disagree(vored) || rally__digest_disagree(ored)))
        rc = name_mismatch(rb, op, c, rally__digest_disagree(vored));
    if (rc != RALLY_OK) {
        rally__robust_unbuf(rb, b);
        return rc;
    }
    c->flags = rally__get_u64(b);
    c->ncalls = rally__get_u64(b + 24);
    c->ran = 1;
    *res = b;
    *n = ACK_NBYTES;
    return RALLY_OK;
}

/* Served from another worker's cache: the words the job agreed then.  This
 * worker's model must have the digest the job agreed on. */
static int deliver_ack(struct rally__robust *rb, struct rally__op *op, const unsigned char *res,
                       uint64_t n)
{
    struct ack *c = op->ctx;
    if (n != ACK_NBYTES)
        return rally__fail(rb->err, RALLY_EPROTO,
                           "recovery served %llu bytes for a checkpoint's acknowledgement",
                           (unsigned long long)n);
    uint64_t agreed = rally__get_u64(res + 8), none = rally__get_u64(res + 16);
    if ((c->pair[0] | c->pair[1]) != 0 && (agreed | none) != 0 && agreed != c->pair[0]) {
        rally__fail(rb->err, RALLY_EMISMATCH,
                    "checkpoint version %llu: rank %d (restarted) passed a global model with "
                    "digest %016llx to rally_checkpoint, but the job agreed on digest %016llx "
                    "(rally_digest64 of its bytes)",
                    (unsigned long long)rb->pos.version, rb->rank, (unsigned long long)c->pair[0],
                    (unsigned long long)agreed);
        rally__robust_fatal(rb, RALLY_EMISMATCH, rb->err->msg);
        return RALLY_EMISMATCH;
    }
    c->flags = rally__get_u64(res);
    c->ncalls = rally__get_u64(res + 24);
    return RALLY_OK;
}

/* After a checkpoint (or loading one): the acknowledgement at (V, 0).  Once
 * it completes every worker has stored version V, so nobody will ask for an
 * older result again: V is committed, with the request bits of every
 * worker OR-ed.  This worker's own requests are spent, whether they went
 * into the word or it was served a word the job agreed without them. */
static int acknowledge(struct rally__robust *rb, int counted)
{
    rb->pos.q = 0;
    struct ack c = {0};
    /* a worker served the checkpoint lost count, and the verified digest */
    c.ncalls = counted ? rally__robust_verify_ncalls(rb) : 0;
    rally__digest_pair(c.vpair, counted && rally__robust_verify_digest(rb) != 0,
                       rally__robust_verify_digest(rb));
    uint64_t d = 0;
    int copied = rally__robust_global_digest(rb, &d);
    rally__digest_pair(c.pair, copied, d);
    struct rally__op ack = {.sig = {RALLY__K_ACK, 0, 0, -1, rb->pos.version, 0},
                            .run = run_ack,
                            .deliver = deliver_ack,
                            .ctx = &c};
    int rc = rally__robust_op(rb, &ack);
    if (rc != RALLY_OK)
        return rc;
    rally__robust_cache_drop_below(rb, rb->pos.version);
    rally__robust_requests_spent(rb);
    rally__robust_verify_commit(rb, c.ncalls);
    rally__robust_commit(rb, rb->pos.version, c.flags);
    /* The job takes the workers waiting to join in here.  Every worker that
     * ran the acknowledgement tells the tracker, in the epoch it ran in; one
     * served it ran it in a later epoch, the one that took them in or one a
     * failure began (then the tracker asks again at its GO). */
    if ((c.flags & RALLY__REQ_GROW) && c.ran)
        return rally__robust_grow(rb, RALLY__KEY_OP(rb->pos.version, rb->pos.q));
    return RALLY_OK;
}

int rally__robust_checkpoint(struct rally__robust *rb, const void *global, uint64_t nbytes,
                             rally_serialize_fn lazy, void *lazy_arg, const void *local,
                             uint64_t local_nbytes)
{
    rally__robust_mock(rb, rb->pos.version, rally__robust_user_seq(rb), RALLY__MOCK_OP);
    uint64_t seq = rally__robust_user_seq(rb);
    if (rb->pos.version > 0 && (local != NULL) != rally__robust_has_local(rb))
        return rally__fail(rb->err, RALLY_EINVAL,
                           "checkpoint: a job passes a local model always or never (this call %s "
                           "one, earlier ones %s)",
                           local ? "passes" : "does not pass",
                           rally__robust_has_local(rb) ? "did" : "did not");
    rb->pos.loaded = 1;
    int rc;
    if (local != NULL) {
        rally__robust_set_has_local(rb, 1);
        struct rally__replicate c = {local, local_nbytes, NULL};
        struct rally__op rep;
        rally__robust_replicate_op(rb, &c, &rep);
        rc = rally__robust_op(rb, &rep);
        if (rc != RALLY_OK)
            return rc;
    }
    /* subscribers settle what a previous commit began (a snapshot's report) */
    rc = rally__robust_turn(rb, RALLY__TURN_CHECKPOINT);
    if (rc != RALLY_OK)
        return rc;
    if (rally__robust_store_global(rb, global, nbytes, lazy, lazy_arg) != RALLY_OK)
        return rb->err->code;
    uint64_t was = rb->pos.version;
    rb->pos.version++;
    rally__robust_mock(rb, was, seq, RALLY__MOCK_CHECKPOINT);
    if (!rb->distributed) {
        rally__robust_cache_drop_below(rb, rb->pos.version);
        rb->pos.q = 1;
        uint64_t flags = rally__robust_requests(rb);
        rally__robust_requests_spent(rb);
        rally__robust_commit(rb, rb->pos.version, flags);
        return RALLY_OK;
    }
    if (rb->tc.grow_asked) { /* a worker waits to join: this version takes it in */
        rb->tc.grow_asked = 0;
        rally__robust_request(rb, RALLY__REQ_GROW);
    }
    return acknowledge(rb, 1);
}

static int load(struct rally__robust *rb, void **global, uint64_t *global_nbytes, void **local,
                uint64_t *local_nbytes, uint64_t *version);

/* The version load_checkpoint found (served, or adopted) is committed:
 * acknowledged by the job, or alone its commit. */
static int commit_loaded(struct rally__robust *rb, int adopted)
{
    if (rb->distributed)
        return acknowledge(rb, adopted); /* a worker served lost the count, one adopting has it */
    rb->pos.q = 1;
    uint64_t flags = rally__robust_requests(rb);
    rally__robust_requests_spent(rb);
    rally__robust_commit(rb, rb->pos.version, flags);
    return RALLY_OK;
}

int rally__robust_load(struct rally__robust *rb, void **global, uint64_t *global_nbytes,
                       void **local, uint64_t *local_nbytes, uint64_t *version)
{
    stand(rb, RALLY__KEY_LOAD, "rally_load_checkpoint");
    int rc = load(rb, global, global_nbytes, local, local_nbytes, version);
    stand(rb, 0, NULL);
    return rc;
}

static int load(struct rally__robust *rb, void **global, uint64_t *global_nbytes, void **local,
                uint64_t *local_nbytes, uint64_t *version)
{
    if (rb->pos.loaded)
        return rally__fail(rb->err, RALLY_ESTATE,
                           "rally_load_checkpoint must be called once, before the first "
                           "rally_checkpoint");
    for (;;) {
        unsigned char *res = NULL;
        uint64_t n = 0;
        int rc = EXECUTE;
        struct rally__sig none = {0};
        if (rally__robust_recovering(rb) || rally__robust_resized(rb))
            rc = rally__robust_recover(rb, RALLY__KEY_LOAD, &none, &res, &n);
        int adopted = 0;
        if (rc == EXECUTE || (rc == SERVED && res == NULL)) {
            /* a fresh start, or everyone is loading and nobody has a
             * checkpoint: a subscriber may give it one (a snapshot) */
            if ((rc = rally__robust_fresh(rb)) != RALLY_OK)
                return rc;
            rb->pos.loaded = 1;
            rally__robust_resize_done(rb);
            rb->pos.q = 1;
            *version = rb->pos.version;
            if (rb->pos.version == 0)
                return RALLY_OK;
            res = (unsigned char *)rally__robust_global(rb, &n); /* adopted: committed below */
            rc = SERVED;
            adopted = 1;
        }
        if (rc == SERVED) {
            /* res is the store's model now (recover() adopted it): the caller's copy */
            struct rally__localset *ls =
                rally__robust_has_local(rb) ? rally__robust_set_of(rb, rb->pos.version) : NULL;
            unsigned char *g = rally__robust_dup(res, n), *l = NULL;
            if (ls != NULL && local != NULL)
                l = rally__robust_dup(ls->data[0], ls->nbytes[0]);
            if (g == NULL || (ls != NULL && local != NULL && l == NULL)) {
                free(g);
                free(l);
                return rally__fail(rb->err, RALLY_ENOMEM, "out of memory loading a checkpoint");
            }
            rb->pos.loaded = 1; /* rb->pos.version was set by recover(), or adopted */
            rally__robust_resize_done(rb);
            if ((rc = commit_loaded(rb, adopted)) != RALLY_OK) {
                free(g);
                free(l);
                return rc;
            }
            *global = g;
            *global_nbytes = n;
            if (local != NULL) {
                *local = l;
                if (local_nbytes != NULL)
                    *local_nbytes = ls != NULL ? ls->nbytes[0] : 0;
            }
            *version = rb->pos.version;
            return RALLY_OK;
        }
        if (!rally__robust_repairable(rb, rc))
            return rc;
        if ((rc = rally__robust_reset(rb, rc, RALLY__KEY_LOAD)) != RALLY_OK)
            return rc;
    }
}

/* The mock's kill points of this rank that never fired, named once. */
static void unfired(const struct rally__robust *rb)
{
    rally__mock_unfired(&rb->mock, rb->launch_rank, rally__robust_ndeath(rb), rb->pos.version,
                        rally__robust_user_seq(rb));
}

/* A restarted worker, before its program runs: its local-model copies
 * come back now, not at its load_checkpoint, which may be a long read of
 * its input away (recovery.c, rally__robust_rejoin_locals). */
int rally__robust_rejoined(struct rally__robust *rb)
{
    if (!rb->distributed || !rally__robust_recovering(rb))
        return RALLY_OK;
    for (;;) {
        int rc = rally__robust_rejoin_locals(rb);
        if (rc == RALLY_OK || !rally__robust_repairable(rb, rc))
            return rc;
        rc = rally__robust_reset(rb, rc, RALLY__KEY_BOOT(0));
        if (rc == RALLY_ERESIZED) { /* renumbered before its program began */
            rally__err_clear(rb->err);
            return RALLY_OK;
        }
        if (rc != RALLY_OK)
            return rc;
    }
}

int rally__robust_finalize(struct rally__robust *rb)
{
    rally__robust_mock(rb, rb->pos.version, rally__robust_user_seq(rb), RALLY__MOCK_OP);
    /* subscribers' last operations (a snapshot's report) before anybody leaves */
    int src = rally__robust_turn(rb, RALLY__TURN_FINALIZE);
    if (src != RALLY_OK)
        return src;
    if (!rb->distributed) {
        unfired(rb);
        return RALLY_OK;
    }
    /* nobody leaves while a peer may still need its cached results */
    uint64_t key = RALLY__KEY_FINAL;
    struct rally__sig sig = {RALLY__K_FINAL, 0, 0, -1, 1, 0};
    stand(rb, key, rally__kind_name(RALLY__K_FINAL));
    for (;;) {
        unsigned char *res = NULL;
        uint64_t n = 0;
        int rc = RALLY_OK;
        if (rally__robust_recovering(rb))
            rc = rally__robust_recover(rb, key, &sig, &res, &n);
        if (rc == RALLY_OK || rc == EXECUTE) {
            struct rally__op fin = {
                .sig = sig, .run = rally__robust_run_barrier, .deliver = deliver_nothing};
            rally__robust_verify_begin(rb, &fin.sig); /* the last verified result too */
            rc = rally__robust_run_barrier(rb, &fin, &res, &n);
            if (rc == RALLY_OK) {
                rally__robust_unbuf(rb, res);
                if ((rc = rally__robust_verify_check(rb)) == RALLY_OK)
                    break;
            }
        }
        if (!rally__robust_repairable(rb, rc))
            return rc;
        if ((rc = rally__robust_reset(rb, rc, key)) != RALLY_OK)
            return rc;
    }
    unfired(rb); /* past the last point that could fire: serving a recovery */
    return rally__robust_leave(rb);
}
