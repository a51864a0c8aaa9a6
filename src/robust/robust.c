/*
 * robust.c — operations, the result cache, epochs and agreement rounds.
 *
 * An operation runs straight on the links while the job is in step.  If it
 * fails because the job lost a worker (the tracker's RESET arrives on the
 * alarm line, or a link breaks or stalls), reset() re-wires this worker in
 * the tracker's next epoch, and the operation is retried through recover():
 * agreement rounds, each a small allreduce, that serve the workers that are
 * behind (the checkpoint to one in load_checkpoint, cached results to the
 * others) until every worker stands at the same position, at which point
 * the operation runs normally.  Every worker goes through the same rounds in
 * the same order, because each round's decision is the allreduced summary.
 */
#include "robust/robust.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/mesh.h"
#include "net/sock.h"
#include "tracker/proto.h"
#include "util/clock.h"
#include "util/wire.h"

/* Collective kinds of the robust layer's own traffic (src/coll carries them). */
enum {
    K_AGREE = 20,
    K_HOLDER = 21,
    K_XFER_HEAD = 22,
    K_XFER_DATA = 23,
    K_ACK = 24,
    K_FINAL = 25,
    K_REPLICATE = 26,
    K_LOCAL_NEED = 27
};

enum { SERVED = 1000, EXECUTE = 1001 }; /* recover() outcomes */

#define NONE UINT64_MAX
#define BUF_HEAD 64 /* a result buffer's capacity lives just before it */
#define POOL_MAX 64

/* --- buffers and the cache -------------------------------------------------- */

static uint64_t buf_cap(const unsigned char *p)
{
    uint64_t c;
    memcpy(&c, p - BUF_HEAD, sizeof c);
    return c;
}

unsigned char *rally__robust_buf(struct rally__robust *rb, uint64_t nbytes)
{
    /* the smallest spare that fits, if it is not far larger: a small result
     * must not take the big buffer the next big allreduce will want */
    int best = -1;
    for (int i = 0; i < rb->npool; i++) {
        uint64_t cap = buf_cap(rb->pool[i]);
        if (cap >= nbytes && cap / 2 <= nbytes + 4096 &&
            (best < 0 || cap < buf_cap(rb->pool[best])))
            best = i;
    }
    if (best >= 0) {
        unsigned char *p = rb->pool[best];
        rb->pool[best] = rb->pool[--rb->npool];
        return p;
    }
    if (nbytes > SIZE_MAX - BUF_HEAD)
        return NULL;
    unsigned char *p = malloc((size_t)nbytes + BUF_HEAD);
    if (p == NULL)
        return NULL;
    memcpy(p, &nbytes, sizeof nbytes);
    return p + BUF_HEAD;
}

void rally__robust_unbuf(struct rally__robust *rb, unsigned char *p)
{
    if (p == NULL)
        return;
    if (rb->pool == NULL)
        rb->pool = calloc(POOL_MAX, sizeof *rb->pool);
    if (rb->pool != NULL && rb->npool < POOL_MAX) {
        rb->pool[rb->npool++] = p;
        return;
    }
    free(p - BUF_HEAD);
}

static const struct rally__entry *cache_find(const struct rally__robust *rb, uint64_t key)
{
    int lo = 0, hi = rb->ncache;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (rb->cache[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < rb->ncache && rb->cache[lo].key == key ? &rb->cache[lo] : NULL;
}

/* Takes ownership of data. Keys only grow, so appending keeps the cache sorted. */
static int cache_put(struct rally__robust *rb, uint64_t key, const struct rally__sig *sig,
                     unsigned char *data, uint64_t nbytes)
{
    if (!rb->distributed || (rb->ncache > 0 && rb->cache[rb->ncache - 1].key >= key)) {
        rally__robust_unbuf(rb, data); /* nobody to serve, or already there */
        return RALLY_OK;
    }
    if (rb->cache_nbytes + nbytes > (uint64_t)rb->cfg->cache_max_bytes) {
        char where[96];
        rally__position_str(key, where, sizeof where);
        rally__robust_unbuf(rb, data);
        return rally__fail(rb->err, RALLY_ENOMEM,
                           "the recovery cache would hold %llu bytes after %s; "
                           "rally_cache_max_bytes is %lld: checkpoint more often or raise it",
                           (unsigned long long)(rb->cache_nbytes + nbytes), where,
                           (long long)rb->cfg->cache_max_bytes);
    }
    if (rb->ncache == rb->capcache) {
        int cap = rb->capcache ? 2 * rb->capcache : 64;
        struct rally__entry *c = realloc(rb->cache, (size_t)cap * sizeof *c);
        if (c == NULL) {
            rally__robust_unbuf(rb, data);
            return rally__fail(rb->err, RALLY_ENOMEM, "out of memory growing the result cache");
        }
        rb->cache = c;
        rb->capcache = cap;
    }
    rb->cache[rb->ncache++] = (struct rally__entry){key, *sig, data, nbytes};
    rb->cache_nbytes += nbytes;
    return RALLY_OK;
}

/* Drops cached op results of versions below v (bootstrap results stay). */
static void cache_drop_below(struct rally__robust *rb, uint64_t v)
{
    int out = 0;
    for (int i = 0; i < rb->ncache; i++) {
        struct rally__entry *c = &rb->cache[i];
        if (c->key >= RALLY__KEY_OP(0, 0) && c->key < RALLY__KEY_OP(v, 0)) {
            rb->cache_nbytes -= c->nbytes;
            rally__robust_unbuf(rb, c->data);
        } else {
            rb->cache[out++] = *c;
        }
    }
    rb->ncache = out;
}

static uint64_t here(const struct rally__robust *rb)
{
    return rb->loaded ? RALLY__KEY_OP(rb->version, rb->q) : RALLY__KEY_BOOT(rb->boot);
}

static void advance(struct rally__robust *rb)
{
    if (rb->loaded)
        rb->q++;
    else
        rb->boot++;
}

/* The user-visible (version, seq) of a position, for the mock. */
static uint64_t user_seq(const struct rally__robust *rb)
{
    return rb->loaded ? (uint64_t)rb->q - 1 : rb->boot;
}

static uint32_t ndeath(const struct rally__robust *rb)
{
    return rb->tc.incarnation > 0 ? rb->tc.incarnation - 1 : 0;
}

/* --- links and epochs ------------------------------------------------------- */

static int on_alarm(void *arg, struct rally__err *e)
{
    struct rally__robust *rb = arg;
    int rc = rally__tclient_check(&rb->tc, e);
    if (rc != RALLY_OK && rc != RALLY__ERESET)
        rb->fatal = rc;
    return rc;
}

/* A failure recovery cannot repair: tell the tracker, and wait (briefly)
 * for its ABORT, so the job is failed before this process can exit — else
 * the launcher could see an exit first and restart the worker. */
static void fatal_report(struct rally__robust *rb, int code, const char *msg)
{
    rb->fatal = code;
    if (!rb->distributed || rb->tc.fd < 0)
        return;
    rally__tclient_report(&rb->tc, code, msg);
    int64_t deadline = rally__deadline(5000);
    struct pollfd p = {.fd = rb->tc.fd, .events = POLLIN};
    while (poll(&p, 1, rally__ms_left(deadline)) > 0) {
        struct rally__err v = {0, ""};
        int rc = rally__tclient_check(&rb->tc, &v);
        if (rc != RALLY_OK && rc != RALLY__ERESET)
            return;
    }
}

static void on_report(void *arg, int code, const char *msg)
{
    struct rally__robust *rb = arg;
    /* a stall may be a dead link: let the tracker start an epoch instead */
    if (code == RALLY_ETIMEDOUT && rb->distributed)
        return;
    fatal_report(rb, code, msg);
}

static void close_links(struct rally__robust *rb)
{
    for (int i = 0; i < rb->comm.nlinks; i++)
        close(rb->comm.links[i].fd);
    rb->comm.nlinks = 0;
}

/* The CPUs this process may run on (its affinity mask, which follows
 * cpusets and taskset), else those online. */
static long usable_cpus(void)
{
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof s, &s) == 0 && CPU_COUNT(&s) > 0)
        return CPU_COUNT(&s);
    return sysconf(_SC_NPROCESSORS_ONLN);
}

/* Wires this worker to its neighbours from the tracker's address book. */
static int wire(struct rally__robust *rb)
{
    struct rally__comm *cm = &rb->comm;
    struct rally__mesh_peer peers[RALLY__MAX_NEIGHBOURS];
    int n = cm->topo.nneighbours;
    for (int i = 0; i < n; i++) {
        const struct rally__peer_addr *a = &rb->tc.peers[cm->topo.neighbours[i]];
        peers[i] = (struct rally__mesh_peer){cm->topo.neighbours[i], a->host, a->port,
                                             a->incarnation, -1};
    }
    int64_t deadline = rally__deadline(rb->cfg->connect_timeout_ms);
    if (rally__mesh_connect(rb->listen_fd, &rb->tc.secret, rb->rank, rb->tc.incarnation, peers, n,
                            deadline, 10000, rb->err) != RALLY_OK)
        return rb->err->code;
    int one_host = 1;
    for (int r = 0; r < rb->world; r++)
        one_host &= rally__host_is_loopback(rb->tc.peers[r].host);
    int64_t bufs =
        rally__sock_buf_choice(rb->cfg->sock_buf_bytes, rb->world, one_host, usable_cpus());
    int rc = RALLY_OK;
    for (int i = 0; i < n; i++) {
        struct rally__link *l = &cm->links[cm->nlinks++];
        l->peer = peers[i].rank;
        l->fd = peers[i].fd;
        snprintf(l->what, sizeof l->what, "rank %d", l->peer);
        if (bufs > 0 && rc == RALLY_OK)
            rc = rally__sock_bufs(l->fd, (int)bufs, rb->err);
    }
    if (rc != RALLY_OK)
        return rc;
    cm->seq = 0; /* every worker counts collectives afresh in each epoch */
    return RALLY_OK;
}

/* Waits on the alarm line for the tracker's RESET (or its ABORT). */
static int await_reset(struct rally__robust *rb)
{
    int64_t deadline = rally__deadline(rb->cfg->timeout_ms);
    for (;;) {
        struct pollfd p = {.fd = rb->tc.fd, .events = POLLIN};
        int n = poll(&p, 1, rally__ms_left(deadline));
        if (n == 0)
            return rally__fail_over(rb->err, RALLY_ETIMEDOUT,
                                    "a link failed and the tracker ordered no recovery within "
                                    "%lld ms (rally_timeout_ms)",
                                    (long long)rb->cfg->timeout_ms);
        if (n < 0 && errno != EINTR)
            return rally__fail_errno(rb->err, RALLY_ESYS, errno, "poll failed");
        struct rally__err v = {0, ""};
        int rc = on_alarm(rb, &v);
        if (rc == RALLY__ERESET)
            return RALLY__ERESET;
        if (rc != RALLY_OK)
            return rally__fail_over(rb->err, rc, "%s", v.msg);
    }
}

/* 1 for failures that a new epoch can repair. */
static int repairable(const struct rally__robust *rb, int rc)
{
    return rb->distributed && !rb->fatal &&
           (rc == RALLY__ERESET || rc == RALLY_EPEER || rc == RALLY_ETIMEDOUT);
}

/* The job lost a worker (or a link): join the tracker's next epoch. */
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
        if ((rc = rally__tclient_rejoin(&rb->tc, key, (uint32_t)rb->version, deadline, rb->err)) !=
            RALLY_OK) {
            rb->fatal = rc;
            return rc;
        }
        if ((rc = wire(rb)) != RALLY_OK) {
            close_links(rb);
            continue; /* a peer died while wiring: report, wait for the next epoch */
        }
        rc = rally__tclient_ready(&rb->tc, deadline, rb->err);
        if (rc == RALLY__ERESET)
            continue;
        if (rc != RALLY_OK) {
            rb->fatal = rc;
            return rc;
        }
        rally__err_clear(rb->err);
        rb->recovering = 1;
        return RALLY_OK;
    }
}

/* --- checkpoint stores ------------------------------------------------------ */

static void set_clear(struct rally__localset *ls)
{
    for (int j = 0; j <= RALLY__MAX_REPLICA; j++)
        free(ls->data[j]);
    memset(ls, 0, sizeof *ls);
}

/* The valid local set of version v, or NULL. */
static struct rally__localset *set_of(struct rally__robust *rb, uint64_t v)
{
    for (int i = 0; i < 2; i++)
        if (rb->loc[i].valid && rb->loc[i].version == v)
            return &rb->loc[i];
    return NULL;
}

/* A set to fill for version v: never the valid one of the current version. */
static struct rally__localset *set_spare(struct rally__robust *rb)
{
    struct rally__localset *keep = set_of(rb, rb->version);
    struct rally__localset *ls = keep == &rb->loc[0] ? &rb->loc[1] : &rb->loc[0];
    set_clear(ls);
    return ls;
}

static unsigned char *dup_bytes(const void *p, uint64_t n)
{
    if (n > SIZE_MAX)
        return NULL;
    unsigned char *d = malloc(n ? (size_t)n : 1);
    if (d != NULL && n)
        memcpy(d, p, (size_t)n);
    return d;
}

/* The newest global model's bytes: stored, or serialized now (lazy).  *owned
 * says whether the caller frees them. */
static int global_bytes(struct rally__robust *rb, const unsigned char **p, uint64_t *n,
                        unsigned char **owned)
{
    *owned = NULL;
    if (rb->lazy == NULL) {
        *p = rb->ckpt;
        *n = rb->ckpt_nbytes;
        return RALLY_OK;
    }
    uint64_t m = rb->lazy(rb->lazy_arg, NULL, 0);
    unsigned char *b = m == UINT64_MAX || m > SIZE_MAX ? NULL : malloc(m ? (size_t)m : 1);
    if (b == NULL || rb->lazy(rb->lazy_arg, b, m) != m) {
        free(b);
        rally__fail(rb->err, RALLY_EINVAL,
                    "the lazy checkpoint's serialize callback failed while a recovering worker "
                    "needed the model");
        fatal_report(rb, RALLY_EINVAL, rb->err->msg);
        return RALLY_EINVAL;
    }
    *p = *owned = b;
    *n = m;
    return RALLY_OK;
}

/* --- agreement rounds ------------------------------------------------------- */

/* A worker's summary: reduced element-wise with min, max, max, min, max. */
enum { S_MIN, S_MAX, S_NEED, S_BEST, S_LOCAL, S_N };

static void reduce_summary(void *inout, const void *in, size_t count, void *arg)
{
    for (size_t i = 0; i < count; i++) {
        unsigned char *a = (unsigned char *)inout + i * 8 * S_N;
        const unsigned char *b = (const unsigned char *)in + i * 8 * S_N;
        uint64_t x[S_N], y[S_N];
        for (int k = 0; k < S_N; k++) {
            x[k] = rally__get_u64(a + 8 * k);
            y[k] = rally__get_u64(b + 8 * k);
        }
        x[S_MIN] = y[S_MIN] < x[S_MIN] ? y[S_MIN] : x[S_MIN];
        x[S_MAX] = y[S_MAX] > x[S_MAX] ? y[S_MAX] : x[S_MAX];
        x[S_NEED] = y[S_NEED] > x[S_NEED] ? y[S_NEED] : x[S_NEED];
        x[S_BEST] = y[S_BEST] < x[S_BEST] ? y[S_BEST] : x[S_BEST];
        x[S_LOCAL] = y[S_LOCAL] > x[S_LOCAL] ? y[S_LOCAL] : x[S_LOCAL];
        for (int k = 0; k < S_N; k++)
            rally__put_u64(a + 8 * k, x[k]);
    }
}

static const struct rally__reducer summary_reducer = {8 * S_N, 1, reduce_summary, NULL, NULL};

static int agree(struct rally__robust *rb, uint64_t v[S_N], int kind)
{
    unsigned char b[8 * S_N];
    for (int k = 0; k < S_N; k++)
        rally__put_u64(b + 8 * k, v[k]);
    struct rally__sig sig = {(uint8_t)kind, 0, 0, -1, 1, 0};
    int rc = rally__allreduce(&rb->comm, b, b, 1, &summary_reducer, &sig);
    if (rc != RALLY_OK)
        return rc;
    for (int k = 0; k < S_N; k++)
        v[k] = rally__get_u64(b + 8 * k);
    return RALLY_OK;
}

/* Broadcasts (sig, bytes) from root; every worker takes part, and *out (a
 * rally__robust_buf) receives the bytes on workers that want them. */
static int transfer(struct rally__robust *rb, int root, struct rally__sig *sig,
                    const unsigned char *data, uint64_t nbytes, int want, unsigned char **out,
                    uint64_t *out_nbytes)
{
    /* the head is sig itself, in its wire form, its sidecar carrying nbytes */
    unsigned char head[RALLY__SIG_NBYTES];
    struct rally__sig sent = *sig;
    sent.sidecar = nbytes;
    rally__sig_encode(head, &sent, 0);
    struct rally__sig hs = {K_XFER_HEAD, 0, 0, root, sizeof head, 0};
    int rc = rally__broadcast(&rb->comm, head, sizeof head, root, &hs);
    if (rc != RALLY_OK)
        return rc;
    uint32_t unused;
    if (rally__sig_decode(head, sig, &unused) != 0)
        return rally__fail(rb->err, RALLY_EPROTO, "a recovery transfer began with a bad header");
    uint64_t n = sig->sidecar;
    sig->sidecar = 0;
    unsigned char *buf = rb->rank == root ? (unsigned char *)data : rally__robust_buf(rb, n);
    if (buf == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory for a %llu-byte recovery transfer",
                           (unsigned long long)n);
    struct rally__sig ds = {K_XFER_DATA, 0, 0, root, n, 0};
    rc = rally__broadcast(&rb->comm, buf, (size_t)n, root, &ds);
    if (rb->rank == root)
        return rc;
    if (rc == RALLY_OK && want) {
        *out = buf;
        *out_nbytes = n;
    } else {
        rally__robust_unbuf(rb, buf);
    }
    return rc;
}

static int same_sig(const struct rally__sig *a, const struct rally__sig *b)
{
    return a->kind == b->kind && a->dtype == b->dtype && a->op == b->op && a->root == b->root &&
           a->count == b->count;
}

/* After the global model of version v reached the workers in
 * load_checkpoint (want), every rank's local model of version v goes where
 * it belongs: to its own rank and its k ring successors, from the
 * lowest-ranked worker that still holds it.  Every worker takes part. */
static int recover_locals(struct rally__robust *rb, uint64_t v, int want)
{
    int N = rb->world, k = rb->k, rc = RALLY_OK;
    unsigned char *need = calloc((size_t)N, 1);
    size_t *off = calloc(2 * (size_t)N, sizeof *off);
    char lost[256] = "";
    size_t nlost = 0;
    if (need == NULL || off == NULL) {
        rc = rally__fail(rb->err, RALLY_ENOMEM, "out of memory recovering local models");
        goto done;
    }
    for (int i = 0; i < N; i++) {
        off[i] = (size_t)i;
        off[N + i] = 1;
    }
    need[rb->rank] = want ? (unsigned char)((1u << (k + 1)) - 1) : 0;
    struct rally__sig ns = {K_LOCAL_NEED, 0, 0, -1, 1, 0};
    if ((rc = rally__allgather(&rb->comm, need, off, off + N, &ns)) != RALLY_OK)
        goto done;
    struct rally__localset *mine = want ? set_spare(rb) : set_of(rb, v);
    if (want)
        mine->version = v;
    for (int q = 0; q < N; q++) {
        int needed = 0;
        for (int j = 0; j <= k; j++)
            needed |= need[(q + j) % N] >> j & 1;
        if (!needed)
            continue;
        int j_me = (rb->rank - q + N) % N;
        int hold = !want && mine != NULL && j_me <= k && mine->data[j_me] != NULL;
        uint64_t h[S_N] = {hold ? (uint64_t)rb->rank : NONE, 0, 0, NONE, 0};
        if ((rc = agree(rb, h, K_HOLDER)) != RALLY_OK)
            goto done;
        if (h[S_MIN] == NONE) {
            if (nlost < sizeof lost - 12)
                nlost += (size_t)snprintf(lost + nlost, sizeof lost - nlost, "%s%d",
                                          nlost ? ", " : "", q);
            continue;
        }
        struct rally__sig sig = {K_LOCAL_NEED, 0, 0, -1, (uint64_t)q, 0};
        unsigned char *res = NULL;
        uint64_t n = 0;
        int take = want && j_me <= k;
        rc = transfer(rb, (int)h[S_MIN], &sig, hold ? mine->data[j_me] : NULL,
                      hold ? mine->nbytes[j_me] : 0, take, &res, &n);
        if (rc != RALLY_OK)
            goto done;
        if (take) {
            mine->data[j_me] = dup_bytes(res, n);
            mine->nbytes[j_me] = n;
            rally__robust_unbuf(rb, res);
            if (mine->data[j_me] == NULL) {
                rc = rally__fail(rb->err, RALLY_ENOMEM, "out of memory for a local model");
                goto done;
            }
        }
    }
    if (nlost > 0) {
        rc = rally__fail(rb->err, RALLY_EPEER,
                         "cannot recover: the local models of ranks %s are lost (each lived on "
                         "%d workers, all of which died; rally_local_replica=%d)",
                         lost, k + 1, k);
        fatal_report(rb, RALLY_EPEER, rb->err->msg);
        goto done;
    }
    if (want)
        mine->valid = 1;
done:
    free(need);
    free(off);
    return rc;
}

/* Agreement rounds at position key until every worker is there (EXECUTE),
 * or this worker was served: its result in *res (SERVED).  In
 * load_checkpoint (key LOAD) "served" means the checkpoint arrived, or that
 * there is none (*res NULL). */
static int recover(struct rally__robust *rb, uint64_t key, const struct rally__sig *mine,
                   unsigned char **res, uint64_t *res_nbytes)
{
    for (;;) {
        uint64_t best = rb->version > 0 && (rb->ckpt != NULL || rb->lazy != NULL)
                            ? ((uint64_t)(UINT32_MAX - (uint32_t)rb->version) << 32) | (uint32_t)rb->rank
                            : NONE;
        uint64_t s[S_N] = {key, key, key == RALLY__KEY_LOAD, best, rb->use_local};
        int rc = agree(rb, s, K_AGREE);
        if (rc != RALLY_OK)
            return rc;
        if (s[S_MIN] == s[S_MAX] && !s[S_NEED]) {
            rb->recovering = 0;
            return EXECUTE;
        }
        if (key > s[S_MIN])
            rally__mock_check(&rb->mock, rb->rank, rb->version, user_seq(rb), ndeath(rb),
                              RALLY__MOCK_RECOVERY);
        if (s[S_MIN] == RALLY__KEY_LOAD && s[S_NEED]) {
            /* workers in load_checkpoint get the newest checkpoint, if any */
            int want = key == RALLY__KEY_LOAD;
            if (s[S_BEST] == NONE) {
                if (want) {
                    *res = NULL;
                    *res_nbytes = 0;
                    return SERVED;
                }
                continue;
            }
            int root = (int)(s[S_BEST] & 0xffffffffu);
            uint64_t version = UINT32_MAX - (s[S_BEST] >> 32);
            struct rally__sig sig = {K_ACK, 0, 0, -1, version, 0};
            if (want)
                rally__mock_check(&rb->mock, rb->rank, 0, 0, ndeath(rb), RALLY__MOCK_LOAD);
            const unsigned char *g = NULL;
            uint64_t gn = 0;
            unsigned char *owned = NULL;
            if (rb->rank == root && (rc = global_bytes(rb, &g, &gn, &owned)) != RALLY_OK)
                return rc;
            rc = transfer(rb, root, &sig, g, gn, want, res, res_nbytes);
            free(owned);
            if (rc == RALLY_OK && s[S_LOCAL])
                rc = recover_locals(rb, version, want);
            if (rc != RALLY_OK) {
                if (want)
                    rally__robust_unbuf(rb, *res);
                return rc;
            }
            if (want) {
                rb->version = sig.count;
                rb->use_local = (int)s[S_LOCAL];
                return SERVED;
            }
            continue;
        }
        /* the workers furthest behind get that result from the lowest-ranked holder */
        uint64_t at = s[S_MIN];
        const struct rally__entry *have = cache_find(rb, at);
        uint64_t h[S_N] = {have ? (uint64_t)rb->rank : NONE, 0, 0, NONE};
        if ((rc = agree(rb, h, K_HOLDER)) != RALLY_OK)
            return rc;
        if (h[S_MIN] == NONE) {
            char where[96];
            rally__position_str(at, where, sizeof where);
            rally__fail(rb->err, RALLY_EPEER,
                        "cannot recover: the result of %s is lost (every worker that had it "
                        "died)",
                        where);
            fatal_report(rb, RALLY_EPEER, rb->err->msg);
            return RALLY_EPEER;
        }
        struct rally__sig sig = have ? have->sig : (struct rally__sig){0};
        int want = key == at;
        rc = transfer(rb, (int)h[S_MIN], &sig, have ? have->data : NULL, have ? have->nbytes : 0,
                      want, res, res_nbytes);
        if (rc != RALLY_OK)
            return rc;
        if (!want)
            continue;
        if (!same_sig(&sig, mine)) {
            char a[160], b[160], where[96];
            rally__sig_str(mine, a, sizeof a);
            rally__sig_str(&sig, b, sizeof b);
            rally__position_str(key, where, sizeof where);
            rally__robust_unbuf(rb, *res);
            rally__fail(rb->err, RALLY_EMISMATCH,
                        "rank %d diverged after its restart: at %s it called %s, but the job "
                        "called %s there before",
                        rb->rank, where, a, b);
            fatal_report(rb, RALLY_EMISMATCH, rb->err->msg);
            return RALLY_EMISMATCH;
        }
        return SERVED;
    }
}

/* --- operations ----------------------------------------------------------- */

int rally__robust_op(struct rally__robust *rb, struct rally__op *op)
{
    uint64_t key = here(rb);
    rally__mock_check(&rb->mock, rb->rank, rb->version, user_seq(rb), ndeath(rb), RALLY__MOCK_OP);
    int prepared = 0;
    for (;;) {
        int rc;
        unsigned char *res = NULL;
        uint64_t n = 0;
        if (rb->recovering) {
            rc = recover(rb, key, &op->sig, &res, &n);
            if (rc == SERVED) {
                if ((rc = op->deliver(rb, op, res, n)) != RALLY_OK) {
                    rally__robust_unbuf(rb, res);
                    return rc;
                }
                if ((rc = cache_put(rb, key, &op->sig, res, n)) == RALLY_OK)
                    advance(rb);
                return rc;
            }
            if (rc != EXECUTE) {
                if (!repairable(rb, rc))
                    return rc;
                if ((rc = reset(rb, rc, key)) != RALLY_OK)
                    return rc;
                continue;
            }
        }
        if (!prepared && op->prepare != NULL) {
            op->prepare(op->prepare_arg);
            prepared = 1;
        }
        rc = op->run(rb, op, &res, &n);
        if (rc == RALLY_OK) {
            if ((rc = cache_put(rb, key, &op->sig, res, n)) == RALLY_OK)
                advance(rb);
            return rc;
        }
        if (!repairable(rb, rc))
            return rc;
        if ((rc = reset(rb, rc, key)) != RALLY_OK)
            return rc;
    }
}

/* A barrier: 8 bytes summed.  Its result is cached like any other. */
static int run_barrier(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                       uint64_t *n)
{
    unsigned char *b = rally__robust_buf(rb, 8);
    if (b == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory");
    rally__put_u64(b, 1);
    struct rally__reducer rd;
    rally__reducer_builtin(&rd, RALLY_UINT64, RALLY_SUM);
    int rc = rally__allreduce(&rb->comm, b, b, 1, &rd, &op->sig);
    if (rc != RALLY_OK) {
        rally__robust_unbuf(rb, b);
        return rc;
    }
    *res = b;
    *n = 8;
    return RALLY_OK;
}

static int deliver_nothing(struct rally__robust *rb, struct rally__op *op, const unsigned char *res,
                           uint64_t n)
{
    return RALLY_OK;
}

/* After a checkpoint (or loading one): the acknowledgement at (V, 0).  Once
 * it completes every worker has stored version V, so nobody will ask for an
 * older result again. */
static int acknowledge(struct rally__robust *rb)
{
    rb->q = 0;
    struct rally__op ack = {{K_ACK, 0, 0, -1, rb->version, 0}, NULL, NULL, run_barrier,
                            deliver_nothing, NULL};
    int rc = rally__robust_op(rb, &ack);
    if (rc == RALLY_OK)
        cache_drop_below(rb, rb->version);
    return rc;
}

/* A checkpoint's local models travel k hops along the ring, one hop per
 * shift: each worker passes on what it received the hop before.  The set is
 * valid once its own shifts are done; the barrier after them tells every
 * worker that all are. */
struct replicate {
    const void *local;
    uint64_t nbytes;
    struct rally__localset *ls;
};

static int run_replicate(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                         uint64_t *n)
{
    struct replicate *c = op->ctx;
    struct rally__localset *ls = c->ls = set_spare(rb);
    ls->version = rb->version + 1;
    if ((ls->data[0] = dup_bytes(c->local, c->nbytes)) == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory copying a local model");
    ls->nbytes[0] = c->nbytes;
    for (int j = 1; j <= rb->k; j++) {
        unsigned char out[8], in[8];
        rally__put_u64(out, ls->nbytes[j - 1]);
        struct rally__sig s1 = {RALLY__C_SHIFT, 0, 0, -1, (uint64_t)(2 * j), 0};
        int rc = rally__ring_shift(&rb->comm, out, 8, in, 8, &s1);
        if (rc != RALLY_OK)
            return rc;
        uint64_t m = rally__get_u64(in);
        if (m > SIZE_MAX || (ls->data[j] = malloc(m ? (size_t)m : 1)) == NULL)
            return rally__fail(rb->err, RALLY_ENOMEM, "out of memory for a %llu-byte local model",
                               (unsigned long long)m);
        ls->nbytes[j] = m;
        struct rally__sig s2 = {RALLY__C_SHIFT, 0, 0, -1, (uint64_t)(2 * j + 1), 0};
        rc = rally__ring_shift(&rb->comm, ls->data[j - 1], (size_t)ls->nbytes[j - 1], ls->data[j],
                               (size_t)m, &s2);
        if (rc != RALLY_OK)
            return rc;
    }
    ls->valid = 1;
    return run_barrier(rb, op, res, n);
}

/* Served: another worker finished the barrier, so every worker, this one
 * included, had finished its shifts. */
static int deliver_replicate(struct rally__robust *rb, struct rally__op *op,
                             const unsigned char *res, uint64_t n)
{
    struct replicate *c = op->ctx;
    if (c->ls == NULL || !c->ls->valid)
        return rally__fail(rb->err, RALLY_EPROTO,
                           "local models: recovery served a replication this worker never did");
    return RALLY_OK;
}

int rally__robust_checkpoint(struct rally__robust *rb, const void *global, uint64_t nbytes,
                             rally_serialize_fn lazy, void *lazy_arg, const void *local,
                             uint64_t local_nbytes)
{
    rally__mock_check(&rb->mock, rb->rank, rb->version, user_seq(rb), ndeath(rb), RALLY__MOCK_OP);
    uint64_t seq = user_seq(rb);
    if (rb->version > 0 && (local != NULL) != rb->use_local)
        return rally__fail(rb->err, RALLY_EINVAL,
                           "checkpoint: a job passes a local model always or never (this call %s "
                           "one, earlier ones %s)",
                           local ? "passes" : "does not pass", rb->use_local ? "did" : "did not");
    rb->loaded = 1;
    if (local != NULL) {
        rb->use_local = 1;
        struct replicate c = {local, local_nbytes, NULL};
        struct rally__op op = {{K_REPLICATE, 0, 0, -1, rb->version, 0}, NULL, NULL, run_replicate,
                               deliver_replicate, &c};
        int rc = rally__robust_op(rb, &op);
        if (rc != RALLY_OK)
            return rc;
    }
    unsigned char *copy = NULL;
    if (lazy == NULL && (copy = dup_bytes(global, nbytes)) == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "checkpoint: cannot copy a %llu-byte model",
                           (unsigned long long)nbytes);
    free(rb->ckpt);
    rb->ckpt = copy;
    rb->ckpt_nbytes = nbytes;
    rb->lazy = lazy;
    rb->lazy_arg = lazy_arg;
    uint64_t was = rb->version;
    rb->version++;
    rally__mock_check(&rb->mock, rb->rank, was, seq, ndeath(rb), RALLY__MOCK_CHECKPOINT);
    if (!rb->distributed) {
        cache_drop_below(rb, rb->version);
        rb->q = 1;
        return RALLY_OK;
    }
    return acknowledge(rb);
}

int rally__robust_load(struct rally__robust *rb, void **global, uint64_t *global_nbytes,
                       void **local, uint64_t *local_nbytes, uint64_t *version)
{
    if (rb->loaded)
        return rally__fail(rb->err, RALLY_ESTATE,
                           "rally_load_checkpoint must be called once, before the first "
                           "rally_checkpoint");
    for (;;) {
        unsigned char *res = NULL;
        uint64_t n = 0;
        int rc = EXECUTE;
        struct rally__sig none = {0};
        if (rb->recovering)
            rc = recover(rb, RALLY__KEY_LOAD, &none, &res, &n);
        if (rc == EXECUTE || (rc == SERVED && res == NULL)) {
            /* a fresh start, or everyone is loading and nobody has a checkpoint */
            rb->loaded = 1;
            rb->version = 0;
            rb->q = 1;
            *version = 0;
            return RALLY_OK;
        }
        if (rc == SERVED) {
            struct rally__localset *ls = rb->use_local ? set_of(rb, rb->version) : NULL;
            unsigned char *g = dup_bytes(res, n), *l = NULL;
            unsigned char *keep = dup_bytes(res, n);
            rally__robust_unbuf(rb, res);
            if (ls != NULL && local != NULL)
                l = dup_bytes(ls->data[0], ls->nbytes[0]);
            if (g == NULL || keep == NULL || (ls != NULL && local != NULL && l == NULL)) {
                free(g);
                free(keep);
                free(l);
                return rally__fail(rb->err, RALLY_ENOMEM, "out of memory loading a checkpoint");
            }
            free(rb->ckpt);
            rb->ckpt = keep;
            rb->ckpt_nbytes = n;
            rb->lazy = NULL;
            rb->loaded = 1; /* rb->version was set by recover() */
            if ((rc = acknowledge(rb)) != RALLY_OK) {
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
            *version = rb->version;
            return RALLY_OK;
        }
        if (!repairable(rb, rc))
            return rc;
        if ((rc = reset(rb, rc, RALLY__KEY_LOAD)) != RALLY_OK)
            return rc;
    }
}

int rally__robust_finalize(struct rally__robust *rb)
{
    rally__mock_check(&rb->mock, rb->rank, rb->version, user_seq(rb), ndeath(rb), RALLY__MOCK_OP);
    if (!rb->distributed)
        return RALLY_OK;
    /* nobody leaves while a peer may still need its cached results */
    uint64_t key = RALLY__KEY_FINAL;
    struct rally__sig sig = {K_FINAL, 0, 0, -1, 1, 0};
    for (;;) {
        unsigned char *res = NULL;
        uint64_t n = 0;
        int rc = RALLY_OK;
        if (rb->recovering)
            rc = recover(rb, key, &sig, &res, &n);
        if (rc == RALLY_OK || rc == EXECUTE) {
            struct rally__op fin = {sig, NULL, NULL, run_barrier, deliver_nothing, NULL};
            rc = run_barrier(rb, &fin, &res, &n);
            if (rc == RALLY_OK) {
                rally__robust_unbuf(rb, res);
                break;
            }
        }
        if (!repairable(rb, rc))
            return rc;
        if ((rc = reset(rb, rc, key)) != RALLY_OK)
            return rc;
    }
    rally__tclient_heartbeat_stop(&rb->tc);
    return rally__tclient_shutdown(&rb->tc, rally__deadline(rb->cfg->connect_timeout_ms), rb->err);
}

/* The user's line to the tracker's log (stdout alone). */
int rally__robust_print(struct rally__robust *rb, const char *msg)
{
    if (!rb->distributed) {
        printf("%s\n", msg);
        fflush(stdout);
        return RALLY_OK;
    }
    if (rb->tc.fd < 0)
        return rally__fail(rb->err, RALLY_ESTATE, "not connected to the tracker");
    return rally__tclient_print(&rb->tc, msg, rb->err);
}

/* --- life cycle --------------------------------------------------------------- */

int rally__robust_init(struct rally__robust *rb, const struct rally__config *cfg,
                       const char *host, struct rally__err *e)
{
    memset(rb, 0, sizeof *rb);
    rb->err = e;
    rb->cfg = cfg;
    rb->world = 1;
    rb->listen_fd = -1;
    rb->tc.fd = -1;
    rally__comm_init(&rb->comm, 0, 1, e);
    rb->comm.timeout_ms = cfg->timeout_ms;
    if (rally__mock_parse(&rb->mock, cfg->mock, e) != RALLY_OK)
        return e->code;
    if (cfg->tracker[0] == '\0')
        return RALLY_OK; /* no launcher: rank 0 of 1 */
    rb->distributed = 1;
    if (cfg->sock_buf_bytes > 0 && cfg->sock_buf_bytes < 32 << 10)
        return rally__fail(e, RALLY_ECONFIG,
                           "rally_sock_buf_bytes=%lld is below 32K: the kernel's buffer (twice "
                           "that) would hold less than one 64K loopback segment, which stalls "
                           "links; say 0 for the kernel's choice",
                           (long long)cfg->sock_buf_bytes);
    if (cfg->secret_file[0] == '\0')
        return rally__fail(e, RALLY_ECONFIG,
                           "rally_tracker is set but rally_secret_file is not; start workers "
                           "with rally-run, or export what rally-tracker printed");
    char thost[RALLY__HOST_MAX];
    int tport, port;
    if (rally__hostport_split(cfg->tracker, thost, sizeof thost, &tport, e) != RALLY_OK)
        return e->code;
    /* a tracker on loopback means a one-host job: listen there only */
    const char *lhost = rally__host_is_loopback(thost) ? thost : "";
    if (rally__tcp_listen(lhost, 0, 128, &rb->listen_fd, &port, e) != RALLY_OK)
        return e->code;
    struct rally__tclient_opts o = {cfg->tracker,    cfg->secret_file,
                                    cfg->task_id,    port,
                                    host,            cfg->connect_timeout_ms,
                                    cfg->connect_timeout_ms + cfg->timeout_ms};
    if (rally__tclient_join(&rb->tc, &o, e) != RALLY_OK)
        return e->code;
    rb->rank = rb->tc.rank;
    rb->world = rb->tc.world;
    rb->k = (int)cfg->local_replica < rb->world - 1 ? (int)cfg->local_replica : rb->world - 1;
    struct rally__comm *cm = &rb->comm;
    rally__comm_init(cm, rb->rank, rb->world, e);
    cm->timeout_ms = cfg->timeout_ms;
    cm->ring_threshold = (size_t)cfg->ring_threshold_bytes;
    cm->chunk = (size_t)cfg->chunk_bytes;
    cm->spin_us = cfg->spin_us;
    cm->abort_fd = rb->tc.fd;
    cm->on_alarm = on_alarm;
    cm->report = on_report;
    cm->hook_arg = rb;
    if (wire(rb) != RALLY_OK)
        return e->code;
    if (rally__tclient_ready(&rb->tc, rally__deadline(cfg->connect_timeout_ms), e) != RALLY_OK)
        return e->code;
    /* joined in a later epoch: this worker replaces one that died */
    rb->recovering = rb->tc.epoch > 0;
    return rally__tclient_heartbeat_start(&rb->tc, cfg->heartbeat_ms, e);
}

void rally__robust_free(struct rally__robust *rb)
{
    close_links(rb);
    rally__comm_free(&rb->comm);
    rally__tclient_close(&rb->tc);
    if (rb->listen_fd >= 0)
        close(rb->listen_fd);
    for (int i = 0; i < rb->ncache; i++)
        free(rb->cache[i].data - BUF_HEAD);
    free(rb->cache);
    for (int i = 0; i < rb->npool; i++)
        free(rb->pool[i] - BUF_HEAD);
    free(rb->pool);
    free(rb->ckpt);
    set_clear(&rb->loc[0]);
    set_clear(&rb->loc[1]);
    rally__mock_free(&rb->mock);
}
