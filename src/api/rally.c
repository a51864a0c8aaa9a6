/*
 * rally.c — the public API (include/rally/rally.h) over the layers below.
 *
 * A handle owns the configuration, the tracker connection (the job's alarm
 * line), the peer links and the collective state.  Public calls validate
 * their arguments, build the collective's signature and hand over to
 * src/coll; a collective that fails leaves the handle spent, because its
 * links may hold half a message (recovery, which resets them, comes with
 * the robust layer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/coll.h"
#include "net/mesh.h"
#include "net/sock.h"
#include "tracker/client.h"
#include "util/clock.h"
#include "util/config.h"
#include "util/wire.h"

#define NREDUCERS 256

struct rally {
    struct rally__err err;
    struct rally__config cfg;
    int rank, world;
    int distributed;
    int spent;                 /* a collective failed: the error that did it */
    char spent_msg[RALLY__ERR_MSG_MAX];
    int listen_fd;
    struct rally__tclient tc;
    struct rally__comm comm;
    struct rally__reducer reducers[NREDUCERS];
    char host[RALLY__HOST_MAX];
};

static int on_alarm(void *arg, struct rally__err *e)
{
    struct rally *r = arg;
    return rally__tclient_check(&r->tc, e);
}

static void on_report(void *arg, int code, const char *msg)
{
    struct rally *r = arg;
    rally__tclient_report(&r->tc, code, msg);
}

static int is_loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
           strcmp(host, "localhost") == 0;
}

static int join(struct rally *r)
{
    struct rally__err *e = &r->err;
    const struct rally__config *c = &r->cfg;
    if (c->secret_file[0] == '\0')
        return rally__fail(e, RALLY_ECONFIG,
                           "rally_tracker is set but rally_secret_file is not; start workers "
                           "with rally-run, or export what rally-tracker printed");
    char thost[RALLY__HOST_MAX];
    int tport;
    if (rally__hostport_split(c->tracker, thost, sizeof thost, &tport, e) != RALLY_OK)
        return e->code;
    int port;
    if (rally__tcp_listen(is_loopback(thost) ? thost : "", 0, 128, &r->listen_fd, &port, e) !=
        RALLY_OK)
        return e->code;
    struct rally__tclient_opts o = {c->tracker, c->secret_file, c->task_id, port, r->host,
                                    c->connect_timeout_ms};
    if (rally__tclient_join(&r->tc, &o, e) != RALLY_OK)
        return e->code;
    r->rank = r->tc.rank;
    r->world = r->tc.world;

    struct rally__comm *cm = &r->comm;
    rally__comm_init(cm, r->rank, r->world, e);
    struct rally__mesh_peer peers[RALLY__MAX_NEIGHBOURS];
    int n = cm->topo.nneighbours;
    for (int i = 0; i < n; i++) {
        const struct rally__peer_addr *a = &r->tc.peers[cm->topo.neighbours[i]];
        peers[i] = (struct rally__mesh_peer){cm->topo.neighbours[i], a->host, a->port,
                                             a->incarnation, -1};
    }
    int64_t deadline = rally__deadline(c->connect_timeout_ms);
    if (rally__mesh_connect(r->listen_fd, &r->tc.secret, r->rank, r->tc.incarnation, peers, n,
                            deadline, 10000, e) != RALLY_OK)
        return e->code;
    for (int i = 0; i < n; i++) {
        struct rally__link *l = &cm->links[cm->nlinks++];
        l->peer = peers[i].rank;
        l->fd = peers[i].fd;
        snprintf(l->what, sizeof l->what, "rank %d", l->peer);
    }
    cm->timeout_ms = c->timeout_ms;
    cm->ring_threshold = (size_t)c->ring_threshold_bytes;
    cm->chunk = (size_t)c->chunk_bytes;
    cm->abort_fd = r->tc.fd;
    cm->on_alarm = on_alarm;
    cm->report = on_report;
    cm->hook_arg = r;
    return rally__tclient_ready(&r->tc, deadline, e);
}

int rally_init(rally_t **out, int *argc, char ***argv)
{
    struct rally *r = calloc(1, sizeof *r);
    *out = r;
    if (r == NULL)
        return RALLY_ENOMEM;
    r->listen_fd = -1;
    r->tc.fd = -1;
    r->world = 1;
    rally__comm_init(&r->comm, 0, 1, &r->err);
    if (gethostname(r->host, sizeof r->host) != 0)
        strcpy(r->host, "localhost");
    r->host[sizeof r->host - 1] = '\0';
    if (rally__config_load(&r->cfg, argc, argv, &r->err) != RALLY_OK)
        goto fail;
    r->comm.timeout_ms = r->cfg.timeout_ms;
    if (r->cfg.tracker[0] == '\0')
        return RALLY_OK; /* no launcher: rank 0 of 1 */
    r->distributed = 1;
    if (join(r) != RALLY_OK)
        goto fail;
    return RALLY_OK;
fail:
    r->spent = r->err.code;
    snprintf(r->spent_msg, sizeof r->spent_msg, "%s", r->err.msg);
    return r->err.code;
}

int rally_finalize(rally_t *r)
{
    if (r == NULL)
        return RALLY_OK;
    int rc = RALLY_OK;
    if (r->distributed && r->tc.fd >= 0 && !r->spent) {
        rally__err_clear(&r->err);
        rc = rally__tclient_shutdown(&r->tc, rally__deadline(r->cfg.connect_timeout_ms), &r->err);
    }
    for (int i = 0; i < r->comm.nlinks; i++)
        close(r->comm.links[i].fd);
    rally__comm_free(&r->comm);
    rally__tclient_close(&r->tc);
    if (r->listen_fd >= 0)
        close(r->listen_fd);
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
        "RALLY_OK",       "RALLY_EINVAL",   "RALLY_ENOMEM",    "RALLY_ESYS",
        "RALLY_ECONFIG",  "RALLY_EAUTH",    "RALLY_EPROTO",    "RALLY_ETIMEDOUT",
        "RALLY_EPEER",    "RALLY_EMISMATCH", "RALLY_ESTATE"};
    if (status < 0 || status > RALLY_ESTATE)
        return "RALLY_UNKNOWN";
    return names[status];
}

int rally_rank(const rally_t *r)
{
    return r ? r->rank : 0;
}

int rally_world_size(const rally_t *r)
{
    return r ? r->world : 1;
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
    if (!r->distributed) {
        printf("%s\n", msg);
        fflush(stdout);
        return RALLY_OK;
    }
    if (r->tc.fd < 0)
        return rally__fail(&r->err, RALLY_ESTATE, "not connected to the tracker");
    return rally__tclient_print(&r->tc, msg, &r->err);
}

void rally_free(void *p)
{
    free(p);
}

/* --- collectives ------------------------------------------------------------ */

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

/* Common exit: a failed collective spends the handle. */
static int leave(struct rally *r, int rc)
{
    if (rc != RALLY_OK && rc != RALLY_EINVAL && rc != RALLY_ENOMEM && !r->spent) {
        r->spent = rc;
        snprintf(r->spent_msg, sizeof r->spent_msg, "%s", r->err.msg);
    }
    return rc;
}

static int run_allreduce(struct rally *r, void *buf, size_t count, const struct rally__reducer *rd,
                         const struct rally__sig *sig, rally_prepare_fn prepare, void *arg)
{
    if (buf == NULL && count > 0)
        return rally__fail(&r->err, RALLY_EINVAL, "allreduce: buf is NULL with count %zu", count);
    if (count > SIZE_MAX / rd->elem_nbytes)
        return rally__fail(&r->err, RALLY_EINVAL, "allreduce: count %zu overflows", count);
    if (prepare != NULL)
        prepare(arg);
    return leave(r, rally__allreduce(&r->comm, buf, count, rd, sig));
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
    return run_allreduce(r, buf, count, &rd, &sig, prepare, prepare_arg);
}

int rally_register_reducer(rally_t *r, int id, size_t elem_nbytes, int commutative,
                           rally_reduce_fn fn, void *fn_arg)
{
    rally__err_clear(&r->err);
    if (id < 0 || id >= NREDUCERS || elem_nbytes == 0 || fn == NULL)
        return rally__fail(&r->err, RALLY_EINVAL,
                           "register_reducer: needs id in 0..255, elem_nbytes > 0 and a function");
    r->reducers[id] = (struct rally__reducer){elem_nbytes, commutative != 0, fn, fn_arg};
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
    return run_allreduce(r, buf, count, rd, &sig, prepare, prepare_arg);
}

static int check_root(struct rally *r, int root, const char *what)
{
    if (root < 0 || root >= r->world)
        return rally__fail(&r->err, RALLY_EINVAL, "%s: root %d is not a rank (world size %d)",
                           what, root, r->world);
    return RALLY_OK;
}

int rally_broadcast(rally_t *r, void *buf, size_t nbytes, int root)
{
    if (enter(r) != RALLY_OK || check_root(r, root, "broadcast") != RALLY_OK)
        return r->err.code;
    if (buf == NULL && nbytes > 0)
        return rally__fail(&r->err, RALLY_EINVAL, "broadcast: buf is NULL with nbytes %zu", nbytes);
    struct rally__sig sig = {RALLY__C_BROADCAST, 0, 0, root, nbytes, 0};
    return leave(r, rally__broadcast(&r->comm, buf, nbytes, root, &sig));
}

int rally_broadcast_alloc(rally_t *r, void **buf, size_t *nbytes, int root)
{
    if (enter(r) != RALLY_OK || check_root(r, root, "broadcast_alloc") != RALLY_OK)
        return r->err.code;
    if (buf == NULL || nbytes == NULL || (r->rank == root && *buf == NULL && *nbytes > 0))
        return rally__fail(&r->err, RALLY_EINVAL, "broadcast_alloc: bad buffer arguments");
    unsigned char sz[8];
    rally__put_u64(sz, r->rank == root ? (uint64_t)*nbytes : 0);
    struct rally__sig s1 = {RALLY__C_BROADCAST_SIZE, 0, 0, root, 0, 0};
    if (leave(r, rally__broadcast(&r->comm, sz, sizeof sz, root, &s1)) != RALLY_OK)
        return r->err.code;
    uint64_t n = rally__get_u64(sz);
    if (n > SIZE_MAX)
        return leave(r, rally__fail(&r->err, RALLY_EPROTO, "broadcast_alloc: size %llu too large",
                                    (unsigned long long)n));
    void *p = r->rank == root ? *buf : NULL;
    if (r->rank != root && n > 0 && (p = malloc((size_t)n)) == NULL)
        return leave(r, rally__fail(&r->err, RALLY_ENOMEM,
                                    "broadcast_alloc: cannot allocate %llu bytes",
                                    (unsigned long long)n));
    struct rally__sig s2 = {RALLY__C_BROADCAST_DATA, 0, 0, root, n, 0};
    if (leave(r, rally__broadcast(&r->comm, p, (size_t)n, root, &s2)) != RALLY_OK) {
        if (r->rank != root)
            free(p);
        return r->err.code;
    }
    if (r->rank != root) {
        *buf = p;
        *nbytes = (size_t)n;
    }
    return RALLY_OK;
}

/* Ring allgather of blocks of len[i] bytes laid out back to back in buf. */
static int gather(struct rally *r, unsigned char *buf, const uint64_t *len,
                  const struct rally__sig *sig)
{
    size_t *off = malloc(2 * (size_t)r->world * sizeof *off);
    if (off == NULL)
        return rally__fail(&r->err, RALLY_ENOMEM, "allgather: out of memory");
    size_t *l = off + r->world, pos = 0;
    for (int i = 0; i < r->world; i++) {
        off[i] = pos;
        l[i] = (size_t)len[i];
        pos += l[i];
    }
    int rc = leave(r, rally__allgather(&r->comm, buf, off, l, sig));
    free(off);
    return rc;
}

int rally_allgather(rally_t *r, const void *sendbuf, size_t nbytes, void *recvbuf)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    if ((sendbuf == NULL || recvbuf == NULL) && nbytes > 0)
        return rally__fail(&r->err, RALLY_EINVAL, "allgather: NULL buffer with nbytes %zu", nbytes);
    if (nbytes > SIZE_MAX / (size_t)r->world)
        return rally__fail(&r->err, RALLY_EINVAL, "allgather: nbytes %zu overflows", nbytes);
    unsigned char *dst = recvbuf;
    if (nbytes > 0)
        memmove(dst + (size_t)r->rank * nbytes, sendbuf, nbytes);
    uint64_t *len = malloc((size_t)r->world * sizeof *len);
    if (len == NULL)
        return rally__fail(&r->err, RALLY_ENOMEM, "allgather: out of memory");
    for (int i = 0; i < r->world; i++)
        len[i] = nbytes;
    struct rally__sig sig = {RALLY__C_ALLGATHER, 0, 0, -1, nbytes, 0};
    int rc = gather(r, dst, len, &sig);
    free(len);
    return rc;
}

int rally_allgatherv(rally_t *r, const void *sendbuf, size_t nbytes, void **recvbuf,
                     uint64_t *nbytes_per_rank)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    if ((sendbuf == NULL && nbytes > 0) || recvbuf == NULL || nbytes_per_rank == NULL)
        return rally__fail(&r->err, RALLY_EINVAL, "allgatherv: NULL argument");
    int N = r->world;
    unsigned char *sizes = malloc((size_t)N * 8);
    uint64_t *len = calloc((size_t)N, sizeof *len);
    unsigned char *out = NULL;
    int rc = RALLY_OK;
    if (sizes == NULL || len == NULL) {
        rc = rally__fail(&r->err, RALLY_ENOMEM, "allgatherv: out of memory");
        goto done;
    }
    rally__put_u64(sizes + (size_t)r->rank * 8, nbytes);
    for (int i = 0; i < N; i++)
        len[i] = 8;
    struct rally__sig s1 = {RALLY__C_ALLGATHERV_SIZES, 0, 0, -1, 8, 0};
    if ((rc = gather(r, sizes, len, &s1)) != RALLY_OK)
        goto done;
    uint64_t total = 0;
    for (int i = 0; i < N; i++) {
        len[i] = rally__get_u64(sizes + (size_t)i * 8);
        if (len[i] > SIZE_MAX - total) {
            rc = leave(r, rally__fail(&r->err, RALLY_EPROTO, "allgatherv: sizes overflow"));
            goto done;
        }
        total += len[i];
    }
    if ((out = malloc(total ? (size_t)total : 1)) == NULL) {
        rc = rally__fail(&r->err, RALLY_ENOMEM, "allgatherv: cannot allocate %llu bytes",
                         (unsigned long long)total);
        goto done;
    }
    size_t mine = 0;
    for (int i = 0; i < r->rank; i++)
        mine += (size_t)len[i];
    if (nbytes > 0)
        memcpy(out + mine, sendbuf, nbytes);
    struct rally__sig s2 = {RALLY__C_ALLGATHERV_DATA, 0, 0, -1, total, 0};
    if ((rc = gather(r, out, len, &s2)) != RALLY_OK)
        goto done;
    memcpy(nbytes_per_rank, len, (size_t)N * sizeof *len);
    *recvbuf = out;
    out = NULL;
done:
    free(out);
    free(len);
    free(sizes);
    return rc;
}
