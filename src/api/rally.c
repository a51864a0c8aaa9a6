/*
 * rally.c — the public API (include/rally/rally.h) over the layers below.
 *
 * Public calls validate their arguments and describe the collective as an
 * operation (src/robust): its signature, how to run it on the links, and how
 * to install a result that recovery served instead.  A call that fails for
 * good leaves the handle spent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "coll/coll.h"
#include "robust/robust.h"
#include "util/config.h"
#include "util/wire.h"

#define NREDUCERS 256

struct rally {
    struct rally__err err;
    struct rally__config cfg;
    struct rally__robust rb;
    int spent; /* a call failed for good: the error that did it */
    char spent_msg[RALLY__ERR_MSG_MAX];
    struct rally__reducer reducers[NREDUCERS];
    char host[RALLY__HOST_MAX];
};

struct rally__robust *rally__api_robust(rally_t *r)
{
    return &r->rb;
}

int rally_init(rally_t **out, int *argc, char ***argv)
{
    struct rally *r = calloc(1, sizeof *r);
    *out = r;
    if (r == NULL)
        return RALLY_ENOMEM;
    if (gethostname(r->host, sizeof r->host) != 0)
        strcpy(r->host, "localhost");
    r->host[sizeof r->host - 1] = '\0';
    if (rally__config_load(&r->cfg, argc, argv, &r->err) != RALLY_OK ||
        rally__robust_init(&r->rb, &r->cfg, r->host, &r->err) != RALLY_OK) {
        r->spent = r->err.code;
        snprintf(r->spent_msg, sizeof r->spent_msg, "%s", r->err.msg);
        return r->err.code;
    }
    return RALLY_OK;
}

int rally_finalize(rally_t *r)
{
    if (r == NULL)
        return RALLY_OK;
    int rc = RALLY_OK;
    if (!r->spent) {
        rally__err_clear(&r->err);
        rc = rally__robust_finalize(&r->rb);
    }
    rally__robust_free(&r->rb);
    free(r);
    return rc;
}

const char *rally_errmsg(const rally_t *r)
{
    if (r == NULL)
        return "out of memory: could not allocate the rally handle";
    return r->err.msg;
}

const char *rally_strstatus(int status)
{
    static const char *const names[] = {
        "RALLY_OK",       "RALLY_EINVAL",    "RALLY_ENOMEM",    "RALLY_ESYS",
        "RALLY_ECONFIG",  "RALLY_EAUTH",     "RALLY_EPROTO",    "RALLY_ETIMEDOUT",
        "RALLY_EPEER",    "RALLY_EMISMATCH", "RALLY_ESTATE"};
    if (status < 0 || status > RALLY_ESTATE)
        return "RALLY_UNKNOWN";
    return names[status];
}

int rally_rank(const rally_t *r)
{
    return r ? r->rb.rank : 0;
}

int rally_world_size(const rally_t *r)
{
    return r ? r->rb.world : 1;
}

int rally_processor_name(rally_t *r, char *name, size_t cap)
{
    rally__err_clear(&r->err);
    size_t n = strlen(r->host);
    if (name == NULL || n >= cap)
        return rally__fail(&r->err, RALLY_EINVAL, "processor name needs %zu bytes, got %zu",
                           n + 1, cap);
    memcpy(name, r->host, n + 1);
    return RALLY_OK;
}

int rally_tracker_print(rally_t *r, const char *msg)
{
    rally__err_clear(&r->err);
    if (msg == NULL)
        return rally__fail(&r->err, RALLY_EINVAL, "rally_tracker_print: msg is NULL");
    if (!r->rb.distributed) {
        printf("%s\n", msg);
        fflush(stdout);
        return RALLY_OK;
    }
    if (r->rb.tc.fd < 0)
        return rally__fail(&r->err, RALLY_ESTATE, "not connected to the tracker");
    return rally__tclient_print(&r->rb.tc, msg, &r->err);
}

void rally_free(void *p)
{
    free(p);
}

/* --- calls -------------------------------------------------------------------- */

/* Common entry: clears the error, refuses a spent handle. */
static int enter(struct rally *r)
{
    rally__err_clear(&r->err);
    if (r->spent)
        return rally__fail(&r->err, RALLY_ESTATE,
                           "this handle cannot run collectives after an earlier failure (%s)",
                           r->spent_msg);
    return RALLY_OK;
}

/* Common exit: a call that failed for good spends the handle. */
static int leave(struct rally *r, int rc)
{
    if (rc != RALLY_OK && rc != RALLY_EINVAL && !r->spent) {
        r->spent = rc;
        snprintf(r->spent_msg, sizeof r->spent_msg, "%s", r->err.msg);
    }
    return rc;
}

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

/* In-place calls whose whole result is one buffer of known size. */
struct inplace {
    void *buf;
    size_t nbytes;
    size_t count;
    const struct rally__reducer *rd;
    int root;
    const void *send; /* allgather: this rank's block */
};

static int deliver_inplace(struct rally__robust *rb, struct rally__op *op, const unsigned char *res,
                           uint64_t n)
{
    struct inplace *c = op->ctx;
    if (n != c->nbytes)
        return rally__fail(rb->err, RALLY_EPROTO,
                           "recovery served %llu bytes for a call expecting %zu",
                           (unsigned long long)n, c->nbytes);
    if (n)
        memcpy(c->buf, res, (size_t)n);
    return RALLY_OK;
}

/* The allreduce reads the caller's buffer and writes a cache buffer, so the
 * input survives a failed attempt and the result is cached: one copy, back
 * to the caller, is all fault tolerance adds. */
static int run_allreduce(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                         uint64_t *res_nbytes)
{
    struct inplace *c = op->ctx;
    unsigned char *slot = rally__robust_buf(rb, c->nbytes);
    if (slot == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory for a %zu-byte allreduce",
                           c->nbytes);
    int rc = rally__allreduce(&rb->comm, c->buf, slot, c->count, c->rd, &op->sig);
    if (rc != RALLY_OK) {
        rally__robust_unbuf(rb, slot);
        return rc;
    }
    if (c->nbytes)
        memcpy(c->buf, slot, c->nbytes);
    *res = slot;
    *res_nbytes = c->nbytes;
    return RALLY_OK;
}

static int allreduce_op(struct rally *r, void *buf, size_t count, const struct rally__reducer *rd,
                        struct rally__sig sig, rally_prepare_fn prepare, void *arg)
{
    if (buf == NULL && count > 0)
        return rally__fail(&r->err, RALLY_EINVAL, "allreduce: buf is NULL with count %zu", count);
    if (count > SIZE_MAX / rd->elem_nbytes)
        return rally__fail(&r->err, RALLY_EINVAL, "allreduce: count %zu overflows", count);
    struct inplace c = {buf, count * rd->elem_nbytes, count, rd, -1, NULL};
    struct rally__op op = {sig, prepare, arg, run_allreduce, deliver_inplace, &c};
    return leave(r, rally__robust_op(&r->rb, &op));
}

int rally_allreduce(rally_t *r, void *buf, size_t count, int dtype, int op,
                    rally_prepare_fn prepare, void *prepare_arg)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    if (!rally__op_valid(dtype, op))
        return rally__fail(&r->err, RALLY_EINVAL,
                           "allreduce: operator %d on type %d is not supported (types 0..9, "
                           "operators max/min/sum/bitor; bitor on integers only)",
                           op, dtype);
    struct rally__reducer rd;
    rally__reducer_builtin(&rd, dtype, op);
    struct rally__sig sig = {RALLY__C_ALLREDUCE, (uint8_t)dtype, (uint8_t)op, -1, count, 0};
    return allreduce_op(r, buf, count, &rd, sig, prepare, prepare_arg);
}

int rally_register_reducer(rally_t *r, int id, size_t elem_nbytes, int commutative,
                           rally_reduce_fn fn, void *fn_arg)
{
    rally__err_clear(&r->err);
    if (id < 0 || id >= NREDUCERS || elem_nbytes == 0 || fn == NULL)
        return rally__fail(&r->err, RALLY_EINVAL,
                           "register_reducer: needs id in 0..255, elem_nbytes > 0 and a function");
    r->reducers[id] = (struct rally__reducer){elem_nbytes, commutative != 0, fn, fn_arg, NULL};
    return RALLY_OK;
}

int rally_allreduce_custom(rally_t *r, void *buf, size_t count, int reducer_id,
                           rally_prepare_fn prepare, void *prepare_arg)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    if (reducer_id < 0 || reducer_id >= NREDUCERS || r->reducers[reducer_id].fn == NULL)
        return rally__fail(&r->err, RALLY_EINVAL,
                           "allreduce_custom: no reducer registered under id %d", reducer_id);
    const struct rally__reducer *rd = &r->reducers[reducer_id];
    struct rally__sig sig = {RALLY__C_ALLREDUCE_CUSTOM, (uint8_t)rd->elem_nbytes,
                             (uint8_t)reducer_id, -1, count, 0};
    return allreduce_op(r, buf, count, rd, sig, prepare, prepare_arg);
}

static int check_root(struct rally *r, int root, const char *what)
{
    if (root < 0 || root >= r->rb.world)
        return rally__fail(&r->err, RALLY_EINVAL, "%s: root %d is not a rank (world size %d)",
                           what, root, r->rb.world);
    return RALLY_OK;
}

/* The root's buffer is only read, the others' only written: run in place. */
static int run_broadcast(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                         uint64_t *res_nbytes)
{
    struct inplace *c = op->ctx;
    int rc = rally__broadcast(&rb->comm, c->buf, c->nbytes, c->root, &op->sig);
    return rc != RALLY_OK ? rc : keep(rb, c->buf, c->nbytes, res, res_nbytes);
}

int rally_broadcast(rally_t *r, void *buf, size_t nbytes, int root)
{
    if (enter(r) != RALLY_OK || check_root(r, root, "broadcast") != RALLY_OK)
        return r->err.code;
    if (buf == NULL && nbytes > 0)
        return rally__fail(&r->err, RALLY_EINVAL, "broadcast: buf is NULL with nbytes %zu", nbytes);
    struct inplace c = {buf, nbytes, nbytes, NULL, root, NULL};
    struct rally__op op = {{RALLY__C_BROADCAST, 0, 0, root, nbytes, 0}, NULL, NULL, run_broadcast,
                           deliver_inplace, &c};
    return leave(r, rally__robust_op(&r->rb, &op));
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
    struct rally__sig s1 = {RALLY__C_BROADCAST_SIZE, 0, 0, c->root, 0, 0};
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

int rally_broadcast_alloc(rally_t *r, void **buf, size_t *nbytes, int root)
{
    if (enter(r) != RALLY_OK || check_root(r, root, "broadcast_alloc") != RALLY_OK)
        return r->err.code;
    if (buf == NULL || nbytes == NULL || (r->rb.rank == root && *buf == NULL && *nbytes > 0))
        return rally__fail(&r->err, RALLY_EINVAL, "broadcast_alloc: bad buffer arguments");
    struct sized c = {r->rb.rank == root ? *buf : NULL, r->rb.rank == root ? *nbytes : 0, root,
                      NULL, 0, NULL};
    struct rally__op op = {{RALLY__C_BROADCAST_SIZE, 0, 0, root, 0, 0}, NULL, NULL,
                           run_broadcast_alloc, deliver_alloc, &c};
    int rc = leave(r, rally__robust_op(&r->rb, &op));
    if (rc == RALLY_OK && r->rb.rank != root) {
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
    struct inplace *c = op->ctx;
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
    return rc != RALLY_OK ? rc : keep(rb, c->buf, c->nbytes, res, res_nbytes);
}

int rally_allgather(rally_t *r, const void *sendbuf, size_t nbytes, void *recvbuf)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    if ((sendbuf == NULL || recvbuf == NULL) && nbytes > 0)
        return rally__fail(&r->err, RALLY_EINVAL, "allgather: NULL buffer with nbytes %zu", nbytes);
    if (nbytes > SIZE_MAX / (size_t)r->rb.world)
        return rally__fail(&r->err, RALLY_EINVAL, "allgather: nbytes %zu overflows", nbytes);
    struct inplace c = {recvbuf, nbytes * (size_t)r->rb.world, nbytes, NULL, -1, sendbuf};
    struct rally__op op = {{RALLY__C_ALLGATHER, 0, 0, -1, nbytes, 0}, NULL, NULL, run_allgather,
                           deliver_inplace, &c};
    return leave(r, rally__robust_op(&r->rb, &op));
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
    struct rally__sig s1 = {RALLY__C_ALLGATHERV_SIZES, 0, 0, -1, 8, 0};
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

int rally_allgatherv(rally_t *r, const void *sendbuf, size_t nbytes, void **recvbuf,
                     uint64_t *nbytes_per_rank)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    if ((sendbuf == NULL && nbytes > 0) || recvbuf == NULL || nbytes_per_rank == NULL)
        return rally__fail(&r->err, RALLY_EINVAL, "allgatherv: NULL argument");
    uint64_t *sizes = malloc((size_t)r->rb.world * sizeof *sizes);
    if (sizes == NULL)
        return rally__fail(&r->err, RALLY_ENOMEM, "allgatherv: out of memory");
    struct sized c = {sendbuf, nbytes, -1, NULL, 0, sizes};
    struct rally__op op = {{RALLY__C_ALLGATHERV_SIZES, 0, 0, -1, 8, 0}, NULL, NULL,
                           run_allgatherv, deliver_allgatherv, &c};
    int rc = leave(r, rally__robust_op(&r->rb, &op));
    if (rc == RALLY_OK) {
        memcpy(nbytes_per_rank, sizes, (size_t)r->rb.world * sizeof *sizes);
        *recvbuf = c.out;
    } else {
        free(c.out);
    }
    free(sizes);
    return rc;
}

/* --- checkpoints ------------------------------------------------------------- */

int rally_load_checkpoint(rally_t *r, void **global, uint64_t *global_nbytes, void **local,
                          uint64_t *local_nbytes, uint64_t *version)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    if (global == NULL || global_nbytes == NULL || version == NULL)
        return rally__fail(&r->err, RALLY_EINVAL, "load_checkpoint: NULL argument");
    if ((local == NULL) != (local_nbytes == NULL))
        return rally__fail(&r->err, RALLY_EINVAL,
                           "load_checkpoint: pass local and local_nbytes together, or neither");
    return leave(r, rally__robust_load(&r->rb, global, global_nbytes, local, local_nbytes, version));
}

int rally_checkpoint(rally_t *r, const void *global, uint64_t global_nbytes, const void *local,
                     uint64_t local_nbytes)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    if ((global == NULL && global_nbytes > 0) || (local == NULL && local_nbytes > 0))
        return rally__fail(&r->err, RALLY_EINVAL, "checkpoint: a NULL model with a non-zero size");
    static const unsigned char empty;
    return leave(r, rally__robust_checkpoint(&r->rb, global ? global : &empty, global_nbytes, NULL,
                                             NULL, local, local_nbytes));
}

int rally_lazy_checkpoint(rally_t *r, rally_serialize_fn serialize, void *arg)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    if (serialize == NULL)
        return rally__fail(&r->err, RALLY_EINVAL, "lazy_checkpoint: serialize is NULL");
    return leave(r, rally__robust_checkpoint(&r->rb, NULL, 0, serialize, arg, NULL, 0));
}

uint64_t rally_checkpoint_version(const rally_t *r)
{
    return r ? r->rb.version : 0;
}
