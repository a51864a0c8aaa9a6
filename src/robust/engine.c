/*
 * engine.c — the robust engine's ops table: each public call described as
 * an operation (its signature, how to run it on the links, how to install a
 * result that recovery served instead) for the op driver.
 *
 * Calls whose result only some ranks can size (broadcast_alloc, allgatherv)
 * run two collectives, sizes then data, as one operation: the cache keeps
 * the whole result, so a recovering worker is served both at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/engine.h"
#include "robust/robust.h"
#include "util/copy.h"
#include "util/wire.h"
#include "util/xor.h"

struct rally__engine {
    struct rally__robust rb;
};

/* Copies the result into a cache buffer. */
static int keep(struct rally__robust *rb, const void *src, uint64_t n, unsigned char **res,
                uint64_t *res_nbytes)
{
    unsigned char *b = rally__robust_buf(rb, n);
    if (b == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory caching a %llu-byte result",
                           (unsigned long long)n);
    if (n)
        memcpy(b, src, (size_t)n);
    *res = b;
    *res_nbytes = n;
    return RALLY_OK;
}

static int allreduce(struct rally__engine *en, void *buf, size_t count, int dtype, int op,
                     rally_prepare_fn prepare, void *prepare_arg)
{
    struct rally__reducer rd;
    rally__reducer_builtin(&rd, dtype, op);
    struct rally__sig sig = {RALLY__C_ALLREDUCE, (uint8_t)dtype, (uint8_t)op, -1, count, 0};
    return rally__robust_allreduce(&en->rb, buf, count, &rd, sig, prepare, prepare_arg);
}

static int allreduce_custom(struct rally__engine *en, void *buf, size_t count, int reducer_id,
                            const struct rally__reducer *rd, rally_prepare_fn prepare,
                            void *prepare_arg)
{
    struct rally__sig sig = {
        RALLY__C_ALLREDUCE_CUSTOM, (uint8_t)rd->elem_nbytes, (uint8_t)reducer_id, -1, count, 0};
    return rally__robust_allreduce(&en->rb, buf, count, rd, sig, prepare, prepare_arg);
}

/* The root's buffer is only read, the others' only written: run in place. */
static int run_broadcast(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                         uint64_t *res_nbytes)
{
    struct rally__inplace *c = op->ctx;
    int rc = rally__broadcast(&rb->comm, c->buf, c->nbytes, c->root, &op->sig);
    if (rc != RALLY_OK)
        return rc;
    rally__robust_arrived(rb, c->buf, c->nbytes);
    return keep(rb, c->buf, c->nbytes, res, res_nbytes);
}

static int broadcast(struct rally__engine *en, void *buf, size_t nbytes, int root)
{
    struct rally__inplace c = {.buf = buf, .nbytes = nbytes, .count = nbytes, .root = root};
    struct rally__op op = {.sig = {RALLY__C_BROADCAST, 0, 0, root, nbytes, 0},
                           .run = run_broadcast,
                           .deliver = rally__robust_deliver_inplace,
                           .ctx = &c};
    return rally__robust_op(&en->rb, &op);
}

/* Calls whose result size only some ranks know. */
struct sized {
    const void *in; /* root's data / this rank's block */
    size_t in_nbytes;
    int root;
    unsigned char *out; /* malloc'd result for the caller */
    uint64_t out_nbytes;
    uint64_t *sizes; /* allgatherv: world entries */
};

static int run_broadcast_alloc(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                               uint64_t *res_nbytes)
{
    struct sized *c = op->ctx;
    unsigned char sz[8];
    rally__put_u64(sz, rb->rank == c->root ? (uint64_t)c->in_nbytes : 0);
    /* the verified digest rides on the first step only: once per link */
    struct rally__sig s1 = {RALLY__C_BROADCAST_SIZE, 0, 0, c->root, 0, op->sig.sidecar};
    int rc = rally__broadcast(&rb->comm, sz, sizeof sz, c->root, &s1);
    if (rc != RALLY_OK)
        return rc;
    uint64_t n = rally__get_u64(sz);
    unsigned char *b = rally__robust_buf(rb, n);
    if (b == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "broadcast_alloc: cannot allocate %llu bytes",
                           (unsigned long long)n);
    if (rb->rank == c->root && n)
        memcpy(b, c->in, (size_t)n);
    struct rally__sig s2 = {RALLY__C_BROADCAST_DATA, 0, 0, c->root, n, 0};
    if ((rc = rally__broadcast(&rb->comm, b, (size_t)n, c->root, &s2)) != RALLY_OK) {
        rally__robust_unbuf(rb, b);
        return rc;
    }
    *res = b;
    *res_nbytes = n;
    return op->deliver(rb, op, b, n);
}

static int deliver_alloc(struct rally__robust *rb, struct rally__op *op, const unsigned char *res,
                         uint64_t n)
{
    struct sized *c = op->ctx;
    if (rb->rank == c->root)
        return RALLY_OK;
    if (n > SIZE_MAX || (c->out = malloc(n ? (size_t)n : 1)) == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "cannot allocate %llu bytes",
                           (unsigned long long)n);
    if (n)
        memcpy(c->out, res, (size_t)n);
    c->out_nbytes = n;
    return RALLY_OK;
}

static int broadcast_alloc(struct rally__engine *en, void **buf, size_t *nbytes, int root)
{
    struct rally__robust *rb = &en->rb;
    struct sized c = {
        rb->rank == root ? *buf : NULL, rb->rank == root ? *nbytes : 0, root, NULL, 0, NULL};
    struct rally__op op = {.sig = {RALLY__C_BROADCAST_SIZE, 0, 0, root, 0, 0},
                           .run = run_broadcast_alloc,
                           .deliver = deliver_alloc,
                           .ctx = &c};
    int rc = rally__robust_op(rb, &op);
    if (rc == RALLY_OK && rb->rank != root) {
        *buf = c.out_nbytes ? c.out : NULL;
        if (c.out_nbytes == 0)
            free(c.out);
        *nbytes = (size_t)c.out_nbytes;
    } else if (rc != RALLY_OK) {
        free(c.out);
    }
    return rc;
}

/* Ring allgather of blocks of len[i] bytes laid out back to back in buf. */
static int gather(struct rally__robust *rb, unsigned char *buf, const uint64_t *len,
                  const struct rally__sig *sig)
{
    size_t *off = malloc(2 * (size_t)rb->world * sizeof *off);
    if (off == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "allgather: out of memory");
    size_t *l = off + rb->world, pos = 0;
    for (int i = 0; i < rb->world; i++) {
        off[i] = pos;
        l[i] = (size_t)len[i];
        pos += l[i];
    }
    int rc = rally__allgather(&rb->comm, buf, off, l, sig);
    free(off);
    return rc;
}

static int run_allgather(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                         uint64_t *res_nbytes)
{
    struct rally__inplace *c = op->ctx;
    size_t each = c->nbytes / (size_t)rb->world;
    unsigned char *dst = c->buf;
    if (each)
        memmove(dst + (size_t)rb->rank * each, c->send, each);
    uint64_t *len = malloc((size_t)rb->world * sizeof *len);
    if (len == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "allgather: out of memory");
    for (int i = 0; i < rb->world; i++)
        len[i] = each;
    int rc = gather(rb, dst, len, &op->sig);
    free(len);
    if (rc != RALLY_OK)
        return rc;
    rally__robust_arrived(rb, c->buf, c->nbytes);
    return keep(rb, c->buf, c->nbytes, res, res_nbytes);
}

static int allgather(struct rally__engine *en, const void *sendbuf, size_t nbytes, void *recvbuf)
{
    struct rally__robust *rb = &en->rb;
    struct rally__inplace c = {.buf = recvbuf,
                        .nbytes = nbytes * (size_t)rb->world,
                        .count = nbytes,
                        .root = -1,
                        .send = sendbuf};
    struct rally__op op = {.sig = {RALLY__C_ALLGATHER, 0, 0, -1, nbytes, 0},
                           .run = run_allgather,
                           .deliver = rally__robust_deliver_inplace,
                           .ctx = &c};
    return rally__robust_op(rb, &op);
}

/* The cached result of allgatherv: world u64 sizes, then the blocks. */
static int run_allgatherv(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                          uint64_t *res_nbytes)
{
    struct sized *c = op->ctx;
    int N = rb->world;
    uint64_t *len = calloc((size_t)N, sizeof *len);
    unsigned char *sizes = calloc((size_t)N, 8);
    unsigned char *b = NULL;
    int rc;
    if (len == NULL || sizes == NULL) {
        rc = rally__fail(rb->err, RALLY_ENOMEM, "allgatherv: out of memory");
        goto done;
    }
    rally__put_u64(sizes + (size_t)rb->rank * 8, c->in_nbytes);
    for (int i = 0; i < N; i++)
        len[i] = 8;
    /* the verified digest rides on the first step only: once per link */
    struct rally__sig s1 = {RALLY__C_ALLGATHERV_SIZES, 0, 0, -1, 8, op->sig.sidecar};
    if ((rc = gather(rb, sizes, len, &s1)) != RALLY_OK)
        goto done;
    uint64_t total = 0, mine = 0;
    for (int i = 0; i < N; i++) {
        len[i] = rally__get_u64(sizes + (size_t)i * 8);
        if (len[i] > SIZE_MAX / 2 - total) {
            rc = rally__fail(rb->err, RALLY_EPROTO, "allgatherv: sizes overflow");
            goto done;
        }
        if (i < rb->rank)
            mine += len[i];
        total += len[i];
    }
    uint64_t head = (uint64_t)N * 8;
    if ((b = rally__robust_buf(rb, head + total)) == NULL) {
        rc = rally__fail(rb->err, RALLY_ENOMEM, "allgatherv: cannot allocate %llu bytes",
                         (unsigned long long)total);
        goto done;
    }
    memcpy(b, sizes, (size_t)head);
    if (c->in_nbytes)
        memcpy(b + head + mine, c->in, c->in_nbytes);
    struct rally__sig s2 = {RALLY__C_ALLGATHERV_DATA, 0, 0, -1, total, 0};
    if ((rc = gather(rb, b + head, len, &s2)) != RALLY_OK)
        goto done;
    rally__robust_arrived(rb, b + head, (size_t)total);
    if ((rc = op->deliver(rb, op, b, head + total)) != RALLY_OK)
        goto done;
    *res = b;
    *res_nbytes = head + total;
    b = NULL;
done:
    rally__robust_unbuf(rb, b);
    free(sizes);
    free(len);
    return rc;
}

static int deliver_allgatherv(struct rally__robust *rb, struct rally__op *op,
                              const unsigned char *res, uint64_t n)
{
    struct sized *c = op->ctx;
    uint64_t head = (uint64_t)rb->world * 8, total = 0;
    if (n < head)
        return rally__fail(rb->err, RALLY_EPROTO, "allgatherv: a recovered result is too short");
    for (int i = 0; i < rb->world; i++) {
        c->sizes[i] = rally__get_u64(res + (size_t)i * 8);
        total += c->sizes[i];
    }
    if (total != n - head)
        return rally__fail(rb->err, RALLY_EPROTO, "allgatherv: a recovered result is inconsistent");
    if ((c->out = malloc(total ? (size_t)total : 1)) == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "allgatherv: cannot allocate %llu bytes",
                           (unsigned long long)total);
    if (total)
        memcpy(c->out, res + head, (size_t)total);
    c->out_nbytes = total;
    return RALLY_OK;
}

static int allgatherv(struct rally__engine *en, const void *sendbuf, size_t nbytes, void **recvbuf,
                      uint64_t *nbytes_per_rank)
{
    struct rally__robust *rb = &en->rb;
    uint64_t *sizes = malloc((size_t)rb->world * sizeof *sizes);
    if (sizes == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "allgatherv: out of memory");
    struct sized c = {sendbuf, nbytes, -1, NULL, 0, sizes};
    struct rally__op op = {.sig = {RALLY__C_ALLGATHERV_SIZES, 0, 0, -1, 8, 0},
                           .run = run_allgatherv,
                           .deliver = deliver_allgatherv,
                           .ctx = &c};
    int rc = rally__robust_op(rb, &op);
    if (rc == RALLY_OK) {
        memcpy(nbytes_per_rank, sizes, (size_t)rb->world * sizeof *sizes);
        *recvbuf = c.out;
    } else {
        free(c.out);
    }
    free(sizes);
    return rc;
}

/* --- checkpoints, life cycle ---------------------------------------------------- */

static int load(struct rally__engine *en, void **global, uint64_t *global_nbytes, void **local,
                uint64_t *local_nbytes, uint64_t *version)
{
    return rally__robust_load(&en->rb, global, global_nbytes, local, local_nbytes, version);
}

static int checkpoint(struct rally__engine *en, const void *global, uint64_t global_nbytes,
                      const void *local, uint64_t local_nbytes)
{
    static const unsigned char empty;
    return rally__robust_checkpoint(&en->rb, global ? global : &empty, global_nbytes, NULL, NULL,
                                    local, local_nbytes);
}

static int lazy_checkpoint(struct rally__engine *en, rally_serialize_fn serialize, void *arg)
{
    return rally__robust_checkpoint(&en->rb, NULL, 0, serialize, arg, NULL, 0);
}

/* The worker's engine state, and its place in the job: joined through the
 * tracker its settings name (rally's, or the classic dmlc tracker), or rank
 * 0 of 1 alone.  Settings that cannot work are refused here, before the
 * join, and told to rally-run's tracker so the job fails once. */
static int start(struct rally__robust *rb, const struct rally__config *cfg, const char *host,
                 struct rally__err *e)
{
    memset(rb, 0, sizeof *rb);
    rb->err = e;
    rb->cfg = cfg;
    rb->host = host;
    rb->world = 1;
    rb->mem.listen_fd = -1;
    rb->tc.fd = -1;
    rally__comm_init(&rb->comm, 0, 1, e);
    rb->comm.timeout_ms = cfg->timeout_ms;
    if (rally__mock_parse(&rb->mock, cfg, e) != RALLY_OK) {
        rally__robust_start_failed(cfg, host, e);
        return e->code;
    }
    if (cfg->tracker[0] == '\0' && cfg->dmlc_tracker_uri[0] != '\0') /* dmlc tracker */
        return rally__robust_dmlc_init(rb, host, e);
    if (cfg->tracker[0] == '\0')
        return RALLY_OK; /* no launcher: rank 0 of 1 */
    if (cfg->sock_buf_bytes > 0 && cfg->sock_buf_bytes < 32 << 10) {
        rally__fail(e, RALLY_ECONFIG,
                    "rally_sock_buf_bytes=%lld is below 32K: the kernel's buffer (twice that) "
                    "would hold less than one 64K loopback segment, which stalls links; say 0 "
                    "for the kernel's choice",
                    (long long)cfg->sock_buf_bytes);
        rally__robust_start_failed(cfg, host, e);
        return e->code;
    }
    int xor = cfg->local_scheme == RALLY__LOCAL_XOR || cfg->result_scheme == RALLY__LOCAL_XOR;
    if ((xor && cfg->xor_set == 1) || (cfg->local_scheme == RALLY__LOCAL_XOR && cfg->elastic)) {
        if (cfg->xor_set == 1)
            rally__fail(e, RALLY_ECONFIG,
                        "rally_xor_set=1: a set of one rank has no parity to rebuild it from; "
                        "say 2 or more (0: one rank per host, up to 8)");
        else
            rally__fail(e, RALLY_ECONFIG,
                        "rally_local_scheme=xor does not cover elastic jobs (rally-run "
                        "--min-workers or --max-workers): its parity cannot be divided among "
                        "other workers; use rally_local_scheme=copies");
        rally__robust_start_failed(cfg, host, e);
        return e->code;
    }
    return rally__robust_join(rb, e);
}

/* Frees what start() and the job's calls made (also after a failed start). */
static void stop(struct rally__robust *rb)
{
    rally__robust_mem_free(rb);
    rally__comm_free(&rb->comm);
    rally__robust_cache_free(rb);
    rally__robust_store_free(rb);
    free(rb->place.order);
    rally__mock_free(&rb->mock);
    free(rb->spans.v);
    rb->spans.v = NULL;
}

static int init(const struct rally__config *cfg, const char *host, struct rally__err *e,
                struct rally__engine **out)
{
    struct rally__engine *en = malloc(sizeof *en);
    if (en == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory for the rally engine");
    int rc = start(&en->rb, cfg, host, e);
    /* (an elastic job's points name workers as launched, perhaps more than now) */
    if (rc == RALLY_OK && !cfg->elastic &&
        rally__mock_check_world(&en->rb.mock, en->rb.world, e) != RALLY_OK)
        rally__robust_fatal(&en->rb, e->code, e->msg); /* the same on every rank: fail the job */
    if (e->code != RALLY_OK || rally__robust_rejoined(&en->rb) != RALLY_OK) {
        stop(&en->rb);
        free(en);
        return e->code;
    }
    *out = en;
    return RALLY_OK;
}

static void engine_free(struct rally__engine *en)
{
    if (en == NULL)
        return;
    stop(&en->rb);
    free(en);
}

static int finalize(struct rally__engine *en)
{
    return rally__robust_finalize(&en->rb);
}

static int rank(const struct rally__engine *en)
{
    return en->rb.rank;
}

static int world(const struct rally__engine *en)
{
    return en->rb.world;
}

static uint64_t version(const struct rally__engine *en)
{
    return rally__robust_version(&en->rb);
}

static void request(struct rally__engine *en, uint64_t bits)
{
    rally__robust_request(&en->rb, bits);
}

static int subscribe(struct rally__engine *en, const struct rally__subscriber *s)
{
    return rally__robust_subscribe(&en->rb, s);
}

/* A subscriber's agreement in its turn: words OR-ed over the job, cached
 * and served like any other operation. */
struct agree {
    uint64_t *words;
    size_t n;
};

static int run_agree(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                     uint64_t *n)
{
    struct agree *c = op->ctx;
    uint64_t nbytes = (uint64_t)c->n * 8;
    unsigned char *b = rally__robust_buf(rb, nbytes);
    if (b == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory");
    memcpy(b, c->words, (size_t)nbytes);
    struct rally__reducer rd;
    rally__reducer_builtin(&rd, RALLY_UINT64, RALLY_BITOR);
    int rc = rally__allreduce(&rb->comm, b, b, c->n, &rd, &op->sig);
    if (rc != RALLY_OK) {
        rally__robust_unbuf(rb, b);
        return rc;
    }
    memcpy(c->words, b, (size_t)nbytes);
    *res = b;
    *n = nbytes;
    return RALLY_OK;
}

static int deliver_agree(struct rally__robust *rb, struct rally__op *op, const unsigned char *res,
                         uint64_t n)
{
    struct agree *c = op->ctx;
    if (n != (uint64_t)c->n * 8)
        return rally__fail(rb->err, RALLY_EPROTO,
                           "recovery served %llu bytes for a checkpoint turn's agreement of %llu",
                           (unsigned long long)n, (unsigned long long)c->n * 8);
    memcpy(c->words, res, (size_t)n);
    return RALLY_OK;
}

static int agree(struct rally__engine *en, uint64_t *words, size_t n)
{
    struct rally__robust *rb = &en->rb;
    struct agree c = {words, n};
    struct rally__op op = {.sig = {RALLY__K_TURN, 0, 0, -1, (uint64_t)n, 0},
                           .run = run_agree,
                           .deliver = deliver_agree,
                           .ctx = &c};
    return rally__robust_op(rb, &op); /* alone too: positions count alike */
}

static int lend(struct rally__engine *en, uint64_t version, int rank, const void **bytes,
                uint64_t *nbytes)
{
    const unsigned char *p;
    int rc = rally__robust_lend(&en->rb, version, rank, &p, nbytes);
    if (rc == RALLY_OK)
        *bytes = p;
    return rc;
}

static void release(struct rally__engine *en, const void *bytes)
{
    rally__robust_release(&en->rb, bytes);
}

static int has_local(const struct rally__engine *en)
{
    return rally__robust_has_local(&en->rb);
}

static const char *host(const struct rally__engine *en, int rank)
{
    const struct rally__robust *rb = &en->rb;
    if (rb->tc.peers != NULL && rank >= 0 && rank < rb->world)
        return rb->tc.peers[rank].host;
    return rb->host && rb->host[0] ? rb->host : "localhost";
}

static int set_input(struct rally__engine *en, const char *scheme, const char *fingerprint)
{
    return rally__robust_input(&en->rb, scheme, fingerprint);
}

static int local_records(struct rally__engine *en, rally_owner_fn owner, void *arg)
{
    rally__robust_records_owner(&en->rb, owner, arg);
    return RALLY_OK;
}

static int tracker_print(struct rally__engine *en, const char *msg)
{
    return rally__robust_print(&en->rb, msg);
}

static void count(struct rally__engine *en, uint64_t nbytes)
{
    rally__robust_count(&en->rb, nbytes);
}

static void report(struct rally__engine *en, int kind, const char *key, double value,
                   uint64_t version, uint64_t nbytes, const char *text)
{
    struct rally__msg_report m = {
        .kind = kind, .version = version, .value = value, .nbytes = nbytes};
    snprintf(m.key, sizeof m.key, "%s", key ? key : "");
    snprintf(m.text, sizeof m.text, "%s", text ? text : "");
    rally__robust_report(&en->rb, &m);
}

/* The ERROR frame the tracker turns into the job's ABORT "rank R failed:
 * sentence"; this worker waits for that ABORT (a few seconds at most) so
 * the job is failed before the process can exit and be restarted. */
static int abort_job(struct rally__engine *en, int code, const char *sentence)
{
    struct rally__robust *rb = &en->rb;
    rally__err_clear(rb->err);
    rally__fail(rb->err, RALLY_EPEER, "rank %d failed: %s", rb->rank, sentence);
    rally__robust_fatal(rb, RALLY_EPEER, sentence);
    return RALLY_EPEER;
}

static int attempt(const struct rally__engine *en)
{
    return (int)rally__robust_ndeath(&en->rb);
}

static int plain_allreduce(struct rally__engine *en, const void *in, void *out, size_t count,
                           int dtype, int op)
{
    struct rally__reducer rd;
    rally__reducer_builtin(&rd, dtype, op);
    struct rally__sig sig = {RALLY__C_ALLREDUCE, (uint8_t)dtype, (uint8_t)op, -1, count, 0};
    return rally__allreduce(&en->rb.comm, in, out, count, &rd, &sig);
}

const struct rally__engine_ops rally__engine = {
    .name = "robust",
    .init = init,
    .free = engine_free,
    .start_failed = rally__robust_start_failed,
    .finalize = finalize,
    .rank = rank,
    .world = world,
    .version = version,
    .allreduce = allreduce,
    .allreduce_custom = allreduce_custom,
    .broadcast = broadcast,
    .broadcast_alloc = broadcast_alloc,
    .allgather = allgather,
    .allgatherv = allgatherv,
    .load = load,
    .checkpoint = checkpoint,
    .lazy_checkpoint = lazy_checkpoint,
    .request = request,
    .subscribe = subscribe,
    .agree = agree,
    .lend = lend,
    .release = release,
    .has_local = has_local,
    .host = host,
    .set_input = set_input,
    .local_records = local_records,
    .tracker_print = tracker_print,
    .count = count,
    .report = report,
    .abort_job = abort_job,
    .attempt = attempt,
    .plain_allreduce = plain_allreduce,
};
