/*
 * rally.c — the public API (include/rally/rally.h) over an engine.
 *
 * Public calls validate their arguments and hand the call to the engine
 * this library was linked with (api/engine.h); the reducer registry and the
 * handle's error live here.  A call that fails for good leaves the handle
 * spent.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "api/engine.h"
#include "api/exact.h"
#include "snapjob/snapjob.h"
#include "snapshot/snapshot.h"
#include "util/config.h"

#define NREDUCERS 256
#define HOST_MAX 256 /* a host name, as gethostname() fills it */

/* The one door a status leaves by: an internal one (a layer's RALLY__E*,
 * such as the tracker's reset, 100) becomes RALLY_EPEER, its sentence kept,
 * so no user ever sees RALLY_UNKNOWN (tests/unit/api_status_test.c). */
static int public_status(struct rally__err *e, int rc)
{
    if (rc >= RALLY_OK && rc <= RALLY_ERESIZED)
        return rc;
    e->code = RALLY_EPEER;
    return RALLY_EPEER;
}

struct rally {
    struct rally__err err;
    struct rally__config cfg;
    struct rally__engine *en;  /* NULL when init failed */
    struct rally__snapjob *sj; /* durable snapshots (snapjob.c), NULL: none */
    int spent;                 /* a call failed for good: the error that did it */
    char spent_msg[RALLY__ERR_MSG_MAX];
    struct rally__reducer reducers[NREDUCERS];
    struct rally__xs_wire xs; /* RALLY_SUM_EXACT's buffers */
    char host[HOST_MAX];
};

struct rally__engine *rally__api_engine(rally_t *r)
{
    return r->en;
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
    int rc = rally__config_load(&r->cfg, argc, argv, &r->err);
    if (rc != RALLY_OK && rally__engine.start_failed != NULL) {
        struct rally__config reach;
        rally__config_contact(&reach);
        rally__engine.start_failed(&reach, r->host, &r->err);
    }
    const char *prog = argv && *argv && argc && *argc > 0 ? (*argv)[0] : "";
    if (rc != RALLY_OK || rally__engine.init(&r->cfg, r->host, &r->err, &r->en) != RALLY_OK ||
        rally__snapjob_start(r->en, &r->cfg, prog, &r->err, &r->sj) != RALLY_OK) {
        rally__snapjob_free(r->sj); /* before the engine whose bytes it borrows */
        r->sj = NULL;
        rally__engine.free(r->en);
        r->en = NULL;
        r->spent = public_status(&r->err, r->err.code);
        snprintf(r->spent_msg, sizeof r->spent_msg, "%s", r->err.msg);
        return r->err.code;
    }
    return RALLY_OK;
}

/* The handle of the last rally_finalize that failed: every program checks
 * a status with rally_errmsg(r), so its sentence stays readable until the
 * next one fails; the rest of it is freed. */
static pthread_mutex_t failed_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rally *failed_handle;

int rally_finalize(rally_t *r)
{
    if (r == NULL)
        return RALLY_OK;
    int rc = RALLY_OK;
    if (!r->spent) {
        rally__err_clear(&r->err);
        rc = public_status(&r->err, rally__engine.finalize(r->en));
        if (rc == RALLY_OK)
            rally__snapjob_done(r->sj);
    }
    rally__snapjob_free(r->sj); /* before the engine whose bytes it borrows */
    r->sj = NULL;
    rally__engine.free(r->en);
    r->en = NULL;
    rally__xs_wire_free(&r->xs);
    if (rc == RALLY_OK) {
        free(r);
        return rc;
    }
    r->spent = rc;
    snprintf(r->spent_msg, sizeof r->spent_msg, "%s", r->err.msg);
    pthread_mutex_lock(&failed_lock);
    struct rally *old = failed_handle;
    failed_handle = r;
    pthread_mutex_unlock(&failed_lock);
    free(old);
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
    static const char *const names[] = {"RALLY_OK",        "RALLY_EINVAL",    "RALLY_ENOMEM",
                                        "RALLY_ESYS",      "RALLY_ECONFIG",   "RALLY_EAUTH",
                                        "RALLY_EPROTO",    "RALLY_ETIMEDOUT", "RALLY_EPEER",
                                        "RALLY_EMISMATCH", "RALLY_ESTATE",   "RALLY_ERESIZED"};
    if (status < 0 || status > RALLY_ERESIZED)
        return "RALLY_UNKNOWN";
    return names[status];
}

int rally_rank(const rally_t *r)
{
    return r && r->en ? rally__engine.rank(r->en) : 0;
}

int rally_world_size(const rally_t *r)
{
    return r && r->en ? rally__engine.world(r->en) : 1;
}

int rally_processor_name(rally_t *r, char *name, size_t cap)
{
    rally__err_clear(&r->err);
    size_t n = strlen(r->host);
    if (name == NULL || n >= cap)
        return rally__fail(&r->err, RALLY_EINVAL, "processor name needs %zu bytes, got %zu", n + 1,
                           cap);
    memcpy(name, r->host, n + 1);
    return RALLY_OK;
}

int rally_tracker_print(rally_t *r, const char *msg)
{
    rally__err_clear(&r->err);
    if (msg == NULL)
        return rally__fail(&r->err, RALLY_EINVAL, "rally_tracker_print: msg is NULL");
    if (r->en == NULL) { /* init failed: there is nobody to tell but stdout */
        printf("%s\n", msg);
        fflush(stdout);
        return RALLY_OK;
    }
    return public_status(&r->err, rally__engine.tracker_print(r->en, msg));
}

int rally_report(rally_t *r, const char *key, double value)
{
    if (r == NULL)
        return RALLY_EINVAL;
    rally__err_clear(&r->err);
    if (key == NULL)
        return rally__fail(&r->err, RALLY_EINVAL, "rally_report: key is NULL");
    if (!rally__report_key_ok(key))
        return rally__fail(&r->err, RALLY_EINVAL,
                           "rally_report: the key \"%.80s\" is not 1 to 64 bytes of A-Z a-z 0-9 "
                           "_ . : -",
                           key);
    if (!isfinite(value))
        return rally__fail(&r->err, RALLY_EINVAL,
                           "rally_report: %s's value %g is not a finite number (observers write "
                           "JSON, which has no NaN nor infinity)",
                           key, value);
    if (r->en != NULL) /* else init failed: there is nobody to tell */
        rally__engine.report(r->en, RALLY__REPORT_VALUE, key, value, rally__engine.version(r->en), 0,
                             "");
    return RALLY_OK;
}

int rally_report_total(rally_t *r, uint64_t iterations)
{
    if (r == NULL)
        return RALLY_EINVAL;
    rally__err_clear(&r->err);
    if (r->en != NULL)
        rally__engine.report(r->en, RALLY__REPORT_TOTAL, "", (double)iterations,
                             rally__engine.version(r->en), 0, "");
    return RALLY_OK;
}

void rally_free(void *p)
{
    free(p);
}

int rally_abort(rally_t *r, int code, const char *msg)
{
    if (r == NULL)
        return RALLY_EINVAL;
    rally__err_clear(&r->err);
    if (msg == NULL)
        return rally__fail(&r->err, RALLY_EINVAL, "rally_abort: msg is NULL");
    if (r->en == NULL)
        return rally__fail(&r->err, RALLY_ESTATE,
                           "rally_abort: this handle never joined a job (%s)", r->spent_msg);
    char sentence[RALLY__ERR_MSG_MAX - 64];
    snprintf(sentence, sizeof sentence, "%s (rally_abort code %d)", msg, code);
    /* also on a spent handle: the earlier failure may have been this rank's alone */
    rally__engine.abort_job(r->en, code, sentence);
    r->spent = RALLY_EPEER;
    snprintf(r->spent_msg, sizeof r->spent_msg, "%s", r->err.msg);
    rally__err_clear(&r->err);
    return RALLY_OK;
}

int rally_attempt(const rally_t *r)
{
    return r && r->en ? rally__engine.attempt(r->en) : 0;
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

/* Common exit: a call that failed for good spends the handle (a bad
 * argument and a membership change do not). */
static int leave(struct rally *r, int rc)
{
    rc = public_status(&r->err, rc);
    if (rc != RALLY_OK && rc != RALLY_EINVAL && rc != RALLY_ERESIZED && !r->spent) {
        r->spent = rc;
        snprintf(r->spent_msg, sizeof r->spent_msg, "%s", r->err.msg);
    }
    return rc;
}

/* The exit of a public collective: one that completed is counted, with
 * its result's bytes, for the launcher's observers (the engine's count). */
static int leave_counted(struct rally *r, int rc, uint64_t nbytes)
{
    if (rc == RALLY_OK)
        rally__engine.count(r->en, nbytes);
    return leave(r, rc);
}

static int check_count(struct rally *r, void *buf, size_t count, size_t elem_nbytes)
{
    if (buf == NULL && count > 0)
        return rally__fail(&r->err, RALLY_EINVAL, "allreduce: buf is NULL with count %zu", count);
    if (count > SIZE_MAX / elem_nbytes)
        return rally__fail(&r->err, RALLY_EINVAL, "allreduce: count %zu overflows", count);
    return RALLY_OK;
}

int rally_allreduce(rally_t *r, void *buf, size_t count, int dtype, int op,
                    rally_prepare_fn prepare, void *prepare_arg)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    int exact = op == RALLY_SUM_EXACT && (dtype == RALLY_FLOAT || dtype == RALLY_DOUBLE);
    if (op == RALLY_SUM_EXACT && !exact)
        op = RALLY_SUM; /* integer sums are exact already */
    if (!exact && !rally__op_valid(dtype, op))
        return rally__fail(&r->err, RALLY_EINVAL,
                           "allreduce: operator %d on type %d is not supported (types 0..9, "
                           "operators max/min/sum/bitor/sum_exact; bitor on integers only)",
                           op, dtype);
    if (check_count(r, buf, count, rally__dtype_size(dtype)) != RALLY_OK)
        return r->err.code;
    uint64_t nbytes = (uint64_t)count * rally__dtype_size(dtype);
    if (exact)
        return leave_counted(r,
                             rally__xs_allreduce(r->en, &r->err, &r->xs, buf, count, dtype, NULL,
                                                 prepare, prepare_arg),
                             nbytes);
    return leave_counted(
        r, rally__engine.allreduce(r->en, buf, count, dtype, op, prepare, prepare_arg), nbytes);
}

int rally_allreduce_xsum(rally_t *r, rally_xsum_t *s, int dtype, void *out,
                         rally_prepare_fn prepare, void *prepare_arg)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    if (s == NULL || (dtype != RALLY_FLOAT && dtype != RALLY_DOUBLE))
        return rally__fail(&r->err, RALLY_EINVAL,
                           "allreduce_xsum: needs an accumulator and RALLY_FLOAT or RALLY_DOUBLE");
    size_t count = rally__xs_count(s);
    if (check_count(r, out, count, rally__dtype_size(dtype)) != RALLY_OK)
        return r->err.code;
    return leave_counted(
        r, rally__xs_allreduce(r->en, &r->err, &r->xs, out, count, dtype, s, prepare, prepare_arg),
        (uint64_t)count * rally__dtype_size(dtype));
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
    if (check_count(r, buf, count, rd->elem_nbytes) != RALLY_OK)
        return r->err.code;
    return leave_counted(
        r, rally__engine.allreduce_custom(r->en, buf, count, reducer_id, rd, prepare, prepare_arg),
        (uint64_t)count * rd->elem_nbytes);
}

static int check_root(struct rally *r, int root, const char *what)
{
    int world = rally__engine.world(r->en);
    if (root < 0 || root >= world)
        return rally__fail(&r->err, RALLY_EINVAL, "%s: root %d is not a rank (world size %d)", what,
                           root, world);
    return RALLY_OK;
}

int rally_broadcast(rally_t *r, void *buf, size_t nbytes, int root)
{
    if (enter(r) != RALLY_OK || check_root(r, root, "broadcast") != RALLY_OK)
        return r->err.code;
    if (buf == NULL && nbytes > 0)
        return rally__fail(&r->err, RALLY_EINVAL, "broadcast: buf is NULL with nbytes %zu", nbytes);
    return leave_counted(r, rally__engine.broadcast(r->en, buf, nbytes, root), nbytes);
}

int rally_broadcast_alloc(rally_t *r, void **buf, size_t *nbytes, int root)
{
    if (enter(r) != RALLY_OK || check_root(r, root, "broadcast_alloc") != RALLY_OK)
        return r->err.code;
    int is_root = rally__engine.rank(r->en) == root;
    if (buf == NULL || nbytes == NULL || (is_root && *buf == NULL && *nbytes > 0))
        return rally__fail(&r->err, RALLY_EINVAL, "broadcast_alloc: bad buffer arguments");
    int rc = rally__engine.broadcast_alloc(r->en, buf, nbytes, root);
    return leave_counted(r, rc, rc == RALLY_OK ? *nbytes : 0);
}

int rally_allgather(rally_t *r, const void *sendbuf, size_t nbytes, void *recvbuf)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    if ((sendbuf == NULL || recvbuf == NULL) && nbytes > 0)
        return rally__fail(&r->err, RALLY_EINVAL, "allgather: NULL buffer with nbytes %zu", nbytes);
    if (nbytes > SIZE_MAX / (size_t)rally__engine.world(r->en))
        return rally__fail(&r->err, RALLY_EINVAL, "allgather: nbytes %zu overflows", nbytes);
    return leave_counted(r, rally__engine.allgather(r->en, sendbuf, nbytes, recvbuf),
                         (uint64_t)nbytes * (uint64_t)rally__engine.world(r->en));
}

int rally_allgatherv(rally_t *r, const void *sendbuf, size_t nbytes, void **recvbuf,
                     uint64_t *nbytes_per_rank)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    if ((sendbuf == NULL && nbytes > 0) || recvbuf == NULL || nbytes_per_rank == NULL)
        return rally__fail(&r->err, RALLY_EINVAL, "allgatherv: NULL argument");
    int rc = rally__engine.allgatherv(r->en, sendbuf, nbytes, recvbuf, nbytes_per_rank);
    uint64_t total = 0;
    for (int i = 0; rc == RALLY_OK && i < rally__engine.world(r->en); i++)
        total += nbytes_per_rank[i];
    return leave_counted(r, rc, total);
}

/* --- checkpoints ------------------------------------------------------------- */

int rally_set_app(rally_t *r, const char *name, const char *config)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    if (name == NULL || config == NULL)
        return rally__fail(&r->err, RALLY_EINVAL, "set_app: NULL argument");
    if (name[0] == '\0' || strlen(name) > 4096)
        return rally__fail(&r->err, RALLY_EINVAL,
                           "set_app: the application's name must be 1 to 4096 bytes");
    return leave(r, r->sj ? rally__snapjob_set_app(r->sj, name, config) : RALLY_OK);
}

int rally_set_input(rally_t *r, const char *scheme, const char *fingerprint)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    if (scheme == NULL || fingerprint == NULL)
        return rally__fail(&r->err, RALLY_EINVAL, "set_input: NULL argument");
    size_t n = strlen(scheme);
    uint64_t fp;
    if (n == 0 || n > 64 ||
        strspn(scheme, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                       "0123456789._:/-") != n)
        return rally__fail(&r->err, RALLY_EINVAL,
                           "set_input: the scheme \"%.80s\" is not 1 to 64 bytes of A-Z a-z 0-9 "
                           ". _ : / -",
                           scheme);
    if (rally__snap_hex16(fingerprint, &fp) != 0) /* a manifest keeps it so */
        return rally__fail(&r->err, RALLY_EINVAL,
                           "set_input: the fingerprint \"%.80s\" is not 16 lowercase hex digits",
                           fingerprint);
    if (r->sj != NULL) /* kept in snapshots and checked when resuming */
        rally__snapjob_set_input(r->sj, scheme, fp);
    if (rally__engine.set_input == NULL)
        return leave(r, RALLY_OK);
    return leave(r, rally__engine.set_input(r->en, scheme, fingerprint));
}

int rally_set_local_records(rally_t *r, rally_owner_fn owner, void *arg)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    if (owner == NULL)
        return rally__fail(&r->err, RALLY_EINVAL, "rally_set_local_records: owner is NULL");
    rally__snapjob_set_records(r->sj, owner, arg);
    if (rally__engine.local_records == NULL)
        return RALLY_OK;
    return leave(r, rally__engine.local_records(r->en, owner, arg));
}

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
    return leave(r, rally__engine.load(r->en, global, global_nbytes, local, local_nbytes, version));
}

int rally_checkpoint(rally_t *r, const void *global, uint64_t global_nbytes, const void *local,
                     uint64_t local_nbytes)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    if ((global == NULL && global_nbytes > 0) || (local == NULL && local_nbytes > 0))
        return rally__fail(&r->err, RALLY_EINVAL, "checkpoint: a NULL model with a non-zero size");
    return leave(r, rally__engine.checkpoint(r->en, global, global_nbytes, local, local_nbytes));
}

int rally_lazy_checkpoint(rally_t *r, rally_serialize_fn serialize, void *arg)
{
    if (enter(r) != RALLY_OK)
        return r->err.code;
    if (serialize == NULL)
        return rally__fail(&r->err, RALLY_EINVAL, "lazy_checkpoint: serialize is NULL");
    return leave(r, rally__engine.lazy_checkpoint(r->en, serialize, arg));
}

uint64_t rally_checkpoint_version(const rally_t *r)
{
    return r && r->en ? rally__engine.version(r->en) : 0;
}
