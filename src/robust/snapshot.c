/*
 * snapshot.c — the robust engine's snapshot subscriber: it turns committed
 * checkpoint versions into durable snapshots (src/snapshot) and resumes a
 * job from one.
 *
 * The cut is agreed inside the checkpoint's acknowledgement: a trigger
 * (every K versions, every T ms on rank 0's clock, the end) raises
 * RALLY__REQ_SNAPSHOT, and on the commit whose agreed flags carry it every
 * rank hands an immutable copy of that version to the background writer
 * (rank 0 the global model, each rank its own local model when the job has
 * them; a lazy model is serialized there and then).  At the next checkpoint
 * (or in rally_finalize) every rank waits for its write and the ranks
 * report what they wrote — status, size and checksum of each file — in one
 * small allreduce, an operation like any other: cached, and served to a
 * restarted worker, so every rank takes part identically.  Only when every
 * rank reported success does rank 0 write the manifest, then apply
 * retention.  Whether a snapshot is pending is decided only by agreed
 * words (the commit's flags, the report's result), so every rank, also one
 * restarted in between, knows it alike: a restarted worker is served the
 * commit again in rally_load_checkpoint, and since it died before the
 * report, it reports a failure: a rank that dies first voids the snapshot.
 * The subscriber is driven only by the store: its commit hook, request
 * bits, and the turns (rally__robust_turn) in which it runs the report.
 */
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "robust/robust.h"
#include "snapshot/snapshot.h"
#include "util/clock.h"
#include "util/wire.h"

/* u64 per rank in the report: status, local size and sum, global size and
 * sum, the version (0 from a rank that does not know it), whether it has an
 * input fingerprint, the fingerprint */
#define SLOT 8

enum { ST_NONE = 0, ST_OK = 1, ST_FAILED = 2, ST_BUSY = 4 };

#define UNKNOWN (RALLY__NONE - 1) /* pending, version unknown: a restarted rank */

struct rally__rsnap {
    struct rally__snap_bg *bg;
    char job[RALLY__SNAP_JOB_MAX + 1];
    char run_id[RALLY__SNAP_UUID_LEN + 1];
    char run_started[RALLY__SNAP_TIME_LEN + 1];
    char host[RALLY__SNAP_HOST_MAX + 1];
    uint64_t pending;           /* the version whose parts are being written, or RALLY__NONE */
    uint64_t last;              /* the newest version a snapshot was taken of, or RALLY__NONE */
    int64_t last_ms;            /* rank 0: when the last one was taken (or the start) */
    int nparts;                 /* parts submitted and not yet collected from the writer */
    int failed;                 /* this rank's part of pending failed (or is lost) */
    int logged;                 /* ... and it said so */
    int skip;                   /* rally_snapshot_busy=skip */
    int checkpoints;            /* checkpoint turns this process took (0: none yet) */
    struct rally__snap_bg *cbg; /* rank 0: the committer (manifest, retention) */
    uint64_t committing;        /* ... the version it is committing, or RALLY__NONE */
    /* the training thread's stall: in the snapshot pending (take, and the
     * checkpoints' reports), and over the snapshots reported at checkpoints */
    int64_t stall_us, stall_sum_us, stall_max_us;
    int64_t report_us; /* the last report's allreduce (waiting for the slowest rank) */
    int stalls;
    int resumed;       /* this process started from a snapshot */
    uint64_t files[4]; /* what it wrote: local size and sum, global size and sum */
    char why[RALLY__ERR_MSG_MAX];
    char *app_name, *app_config;
    char scheme[65]; /* rally_set_input: the partitioning scheme, "" none */
    int has_fp;      /* ... and this rank's input fingerprint */
    uint64_t fp;
    const unsigned char *lent[RALLY__SNAP_PARTS_MAX]; /* the store's buffers the writer reads */
    int nlent;
    unsigned char *lazy; /* a lazy model serialized for the writer: a store spare after it */
    uint64_t lazy_nbytes;
};

/* SIGUSR1 (rally-run forwards it to rank 0): a snapshot at the next commit.
 * The one process-wide state here: a signal has no other way in. */
static volatile sig_atomic_t asked;

static void on_usr1(int sig)
{
    (void)sig;
    asked = 1;
}

/* Installs the handler unless the application has its own. */
static void listen_usr1(void)
{
    struct sigaction old, sa;
    if (sigaction(SIGUSR1, NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
        (old.sa_handler != SIG_IGN && old.sa_handler != SIG_DFL))
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
}

static void say(const struct rally__robust *rb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(const struct rally__robust *rb, const char *fmt, ...)
{
    char line[RALLY__ERR_MSG_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rally: rank %d: snapshot: %s\n", rb->rank, line);
}

/* Raises the request bit for the commit after v when a trigger says so. */
static void trigger(struct rally__robust *rb, uint64_t v)
{
    const struct rally__config *c = rb->cfg;
    if (c->snapshot_every > 0 && (v + 1) % (uint64_t)c->snapshot_every == 0)
        rally__robust_request(rb, RALLY__REQ_SNAPSHOT);
    if (c->snapshot_every_ms > 0 && rb->rank == 0 &&
        rally__now_ms() - rb->snap->last_ms >= c->snapshot_every_ms)
        rally__robust_request(rb, RALLY__REQ_SNAPSHOT);
    if (asked) {
        asked = 0;
        rally__robust_request(rb, RALLY__REQ_SNAPSHOT);
        say(rb, "asked for one (SIGUSR1): version %" PRIu64 " will be taken", v + 1);
    }
}

/* The writer is done with this rank's parts (its poll said so): the store
 * may reuse their buffers. */
static void give_back(struct rally__robust *rb)
{
    struct rally__rsnap *s = rb->snap;
    for (int i = 0; i < s->nlent; i++)
        rally__robust_unlend(rb, s->lent[i]);
    s->nlent = 0;
    rally__robust_sgive(rb, s->lazy, s->lazy_nbytes);
    s->lazy = NULL;
}

/* Lends p to the writer (a part borrowed, not copied). */
static int lend(struct rally__robust *rb, const unsigned char *p)
{
    struct rally__rsnap *s = rb->snap;
    if (rally__robust_lend(rb, p) != RALLY_OK)
        return rb->err->code;
    s->lent[s->nlent++] = p;
    return RALLY_OK;
}

/* Hands this rank's parts of version v to the background writer. */
static void take(struct rally__robust *rb, uint64_t v)
{
    struct rally__rsnap *s = rb->snap;
    struct rally__snap_part parts[RALLY__SNAP_PARTS_MAX];
    struct rally__err saved = *rb->err, e = {0, ""};
    unsigned char *owned = NULL; /* a lazy model's serialization */
    if (s->nparts > 0 || s->nlent > 0 || s->lazy != NULL) {
        /* a voided snapshot's write still running: let it end */
        struct rally__snap_file f[RALLY__SNAP_PARTS_MAX];
        struct rally__err res = {0, ""};
        int done = 0;
        rally__snap_bg_poll(s->bg, -1, &done, &res, f);
        give_back(rb);
    }
    /* V's bytes are lent, not copied: the store neither writes nor reuses
     * a lent buffer (store.c), however many checkpoints the write outlives
     * (rally_snapshot_busy=skip), until give_back. */
    s->pending = s->last = v;
    s->last_ms = rally__now_ms();
    s->nparts = 0;
    s->failed = s->logged = 0;
    memset(s->files, 0, sizeof s->files);
    s->why[0] = '\0';
    if (rb->rank == 0) {
        const unsigned char *p;
        uint64_t n;
        if (rally__robust_global_bytes(rb, v, &p, &n, &owned) != RALLY_OK ||
            (owned == NULL && lend(rb, p) != RALLY_OK))
            goto failed;
        s->lazy = owned; /* serialized into a store buffer: back to the store at give_back */
        s->lazy_nbytes = n;
        owned = NULL;
        parts[s->nparts++] = (struct rally__snap_part){-1, p, n, RALLY__SNAP_BORROWED};
    }
    if (rb->use_local) {
        const unsigned char *p;
        uint64_t n;
        if (rally__robust_local_bytes(rb, v, rb->rank, &p, &n) != RALLY_OK ||
            lend(rb, p) != RALLY_OK)
            goto failed;
        parts[s->nparts++] = (struct rally__snap_part){rb->rank, p, n, RALLY__SNAP_BORROWED};
    }
    if (s->nparts == 0)
        return;
    struct rally__snap_target t = {rb->cfg->snapshot_dir, s->job, s->run_id, v, rb->world};
    int accepted = 0;
    if (rally__snap_bg_submit(s->bg, &t, parts, s->nparts, 1, &e, &accepted) != RALLY_OK ||
        !accepted) {
        give_back(rb); /* the writer holds none of them */
        snprintf(s->why, sizeof s->why, "%s", e.code ? e.msg : "the writer took nothing");
        s->nparts = 0;
        s->failed = 1;
    }
    return;
failed:
    snprintf(s->why, sizeof s->why, "%s", rb->err->msg);
    *rb->err = saved;
    give_back(rb);
    s->nparts = 0;
    s->failed = 1;
}

static int on_turn(void *arg, int when);

/* The commit hook. */
static void on_commit(void *arg, uint64_t v, uint64_t flags)
{
    struct rally__robust *rb = arg;
    struct rally__rsnap *s = rb->snap;
    trigger(rb, v);
    if ((flags & RALLY__REQ_SNAP_PENDING) && s->pending == RALLY__NONE) {
        /* a restarted worker served a commit made while an older snapshot
         * was still being written: it died first, which voids it */
        s->pending = UNKNOWN;
        s->failed = 1;
        s->logged = 0;
        s->nparts = 0;
        memset(s->files, 0, sizeof s->files);
        snprintf(s->why, sizeof s->why,
                 "this worker died and was restarted while the snapshot was being written; a "
                 "rank that dies first voids the snapshot");
    }
    if (!(flags & RALLY__REQ_SNAPSHOT) || v == 0)
        return;
    if (s->checkpoints == 0 && !s->resumed && s->pending == RALLY__NONE) {
        /* a commit served in rally_load_checkpoint to a restarted worker:
         * the snapshot of v was taken and not yet reported (its report
         * comes at the next checkpoint, which nobody has passed: v is the
         * newest version), so this rank died first, and that voids it.
         * Were the report done before the death, this worker is served the
         * report too, and that (agreed) word is what counts. */
        s->pending = s->last = v;
        s->failed = 1;
        s->logged = s->nparts = 0;
        memset(s->files, 0, sizeof s->files);
        snprintf(s->why, sizeof s->why,
                 "this worker died and was restarted before the snapshot of version %" PRIu64
                 " was reported; a rank that dies first voids the snapshot",
                 v);
        return;
    }
    if (s->pending != RALLY__NONE) { /* skip mode: one in flight */
        if (rb->rank == 0)
            say(rb,
                "version %" PRIu64 " skipped: an older one is still being written "
                "(rally_snapshot_busy=skip)",
                v);
        return;
    }
    int64_t t0 = rally__now_us();
    take(rb, v);
    s->stall_us = rally__now_us() - t0;
}

int rally__robust_snap_start(struct rally__robust *rb, const char *host)
{
    const struct rally__config *c = rb->cfg;
    if (c->snapshot_dir[0] == '\0' && c->resume[0] == '\0')
        return RALLY_OK;
    struct rally__rsnap *s = calloc(1, sizeof *s);
    if (s == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory for the snapshot writer");
    rb->snap = s;
    s->pending = s->last = s->committing = RALLY__NONE;
    s->last_ms = rally__now_ms();
    snprintf(s->host, sizeof s->host, "%s", host && *host ? host : "localhost");
    s->skip = c->snapshot_busy == RALLY__SNAP_BUSY_SKIP;
    if (c->snapshot_dir[0] == '\0')
        return RALLY_OK; /* resume only */
    if (!rally__snap_job_ok(c->snapshot_job))
        return rally__fail(rb->err, RALLY_ECONFIG,
                           "rally_snapshot_job=%.80s is not a job name (1 to %d bytes of "
                           "A-Z a-z 0-9 . _ -, not starting with '.')",
                           c->snapshot_job, RALLY__SNAP_JOB_MAX);
    memcpy(s->job, c->snapshot_job, strlen(c->snapshot_job) + 1); /* job_ok: it fits */
    if (c->run_id[0] != '\0') {
        if (strlen(c->run_id) != RALLY__SNAP_UUID_LEN)
            return rally__fail(rb->err, RALLY_ECONFIG,
                               "rally_run_id=%.80s is not a UUID (8-4-4-4-12 hex digits)",
                               c->run_id);
        memcpy(s->run_id, c->run_id, RALLY__SNAP_UUID_LEN + 1);
    } else if (rb->world > 1) {
        return rally__fail(rb->err, RALLY_ECONFIG,
                           "rally_snapshot_dir is set but rally_run_id is not: every rank of a "
                           "job must name the same run (rally-run sets it)");
    } else if (rally__snap_uuid(s->run_id, rb->err) != RALLY_OK) {
        return rb->err->code;
    }
    if (c->run_started[0] != '\0' && strlen(c->run_started) != RALLY__SNAP_TIME_LEN)
        return rally__fail(rb->err, RALLY_ECONFIG,
                           "rally_run_started=%.80s is not a time like "
                           "2026-11-30T12:00:00.000000Z",
                           c->run_started);
    if (c->run_started[0] != '\0')
        memcpy(s->run_started, c->run_started, RALLY__SNAP_TIME_LEN + 1);
    else
        rally__snap_now(s->run_started);
    if (rally__snap_bg_start(rb->err, &s->bg) != RALLY_OK ||
        (rb->rank == 0 && rally__snap_bg_start(rb->err, &s->cbg) != RALLY_OK))
        return rb->err->code;
    if (c->snapshot_every == 1)
        rally__robust_request(rb, RALLY__REQ_SNAPSHOT); /* version 1 has no commit before it */
    listen_usr1();
    return rally__robust_subscribe_turns(rb, on_commit, on_turn, rb);
}

void rally__robust_snap_free(struct rally__robust *rb)
{
    struct rally__rsnap *s = rb->snap;
    if (s == NULL)
        return;
    rally__snap_bg_stop(s->bg); /* finishes the write in flight */
    rally__snap_bg_stop(s->cbg);
    give_back(rb);
    free(s->app_name);
    free(s->app_config);
    free(s);
    rb->snap = NULL;
}

int rally__robust_snap_set_app(struct rally__robust *rb, const char *name, const char *config)
{
    struct rally__rsnap *s = rb->snap;
    if (s == NULL)
        return RALLY_OK; /* no snapshots: nothing keeps or checks it */
    char *n = strdup(name), *c = strdup(config);
    if (n == NULL || c == NULL) {
        free(n);
        free(c);
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory");
    }
    free(s->app_name);
    free(s->app_config);
    s->app_name = n;
    s->app_config = c;
    return RALLY_OK;
}

/* 16 lowercase hex digits: 0 and *v; -1 otherwise. */
static int hex16(const char *s, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 16; i++) {
        int d = s[i] >= '0' && s[i] <= '9'   ? s[i] - '0'
                : s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10
                                             : -1;
        if (d < 0)
            return -1;
        x = x << 4 | (uint64_t)d;
    }
    if (s[16] != '\0')
        return -1;
    *v = x;
    return 0;
}

int rally__robust_snap_set_input(struct rally__robust *rb, const char *scheme,
                                 const char *fingerprint)
{
    struct rally__rsnap *s = rb->snap;
    size_t n = strlen(scheme);
    uint64_t fp;
    if (n == 0 || n > 64 ||
        strspn(scheme, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                       "0123456789._:/-") != n)
        return rally__fail(rb->err, RALLY_EINVAL,
                           "set_input: the scheme \"%.80s\" is not 1 to 64 bytes of A-Z a-z 0-9 "
                           ". _ : / -",
                           scheme);
    if (hex16(fingerprint, &fp) != 0)
        return rally__fail(rb->err, RALLY_EINVAL,
                           "set_input: the fingerprint \"%.80s\" is not 16 lowercase hex digits",
                           fingerprint);
    if (s == NULL)
        return RALLY_OK; /* no snapshots: nothing keeps or checks it */
    memcpy(s->scheme, scheme, n + 1);
    s->fp = fp;
    s->has_fp = 1;
    return RALLY_OK;
}

/* --- the report: every rank's files, agreed in one allreduce ------------------- */

struct report {
    unsigned char *mine; /* this rank's slot in a zeroed vector */
    uint64_t nbytes;
    unsigned char *all; /* the agreed vector */
};

static int run_report(struct rally__robust *rb, struct rally__op *op, unsigned char **res,
                      uint64_t *n)
{
    struct report *c = op->ctx;
    unsigned char *b = rally__robust_buf(rb, c->nbytes);
    if (b == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory");
    struct rally__reducer rd;
    rally__reducer_builtin(&rd, RALLY_UINT64, RALLY_BITOR);
    int rc = rally__allreduce(&rb->comm, c->mine, b, (size_t)(c->nbytes / 8), &rd, &op->sig);
    if (rc != RALLY_OK) {
        rally__robust_unbuf(rb, b);
        return rc;
    }
    memcpy(c->all, b, (size_t)c->nbytes);
    *res = b;
    *n = c->nbytes;
    return RALLY_OK;
}

static int deliver_report(struct rally__robust *rb, struct rally__op *op, const unsigned char *res,
                          uint64_t n)
{
    struct report *c = op->ctx;
    if (n != c->nbytes)
        return rally__fail(rb->err, RALLY_EPROTO,
                           "recovery served %llu bytes for a snapshot report of %llu",
                           (unsigned long long)n, (unsigned long long)c->nbytes);
    memcpy(c->all, res, (size_t)n);
    return RALLY_OK;
}

/* This rank's slot: its write collected (waiting for it when wait, and
 * saying so when loud), then status, files and the version. */
static void fill_slot(struct rally__robust *rb, unsigned char *slot, int wait, int loud)
{
    struct rally__rsnap *s = rb->snap;
    if (s->nparts > 0 && !s->failed) {
        struct rally__snap_file files[RALLY__SNAP_PARTS_MAX];
        struct rally__err res = {0, ""};
        int done = 0;
        rally__snap_bg_poll(s->bg, 0, &done, &res, files);
        if (done == 0 && wait) { /* one in flight: this call waits for it, and says so */
            int64_t t0 = rally__now_ms();
            rally__snap_bg_poll(s->bg, -1, &done, &res, files);
            if (loud)
                say(rb,
                    "the checkpoint waited %" PRId64 " ms for its part of version %" PRIu64
                    " to be written (rally_snapshot_busy=wait)",
                    rally__now_ms() - t0, s->pending);
        }
        if (done == 1) {
            give_back(rb);
            if (res.code != RALLY_OK) {
                snprintf(s->why, sizeof s->why, "%s", res.msg);
                s->failed = 1;
            }
            for (int i = 0; i < s->nparts && !s->failed; i++) {
                int global = strcmp(files[i].name, RALLY__SNAP_GLOBAL) == 0;
                s->files[global ? 2 : 0] = files[i].nbytes;
                s->files[global ? 3 : 1] = files[i].xxh3;
            }
            s->nparts = 0;
        }
    }
    uint64_t st = s->failed ? ST_FAILED : s->nparts > 0 ? ST_BUSY : ST_OK;
    rally__put_u64(slot, st);
    for (int i = 0; i < 4; i++)
        rally__put_u64(slot + 8 * (i + 1), st == ST_OK ? s->files[i] : 0);
    rally__put_u64(slot + 40, s->pending == UNKNOWN ? 0 : s->pending);
    rally__put_u64(slot + 48, (uint64_t)s->has_fp);
    rally__put_u64(slot + 56, s->fp);
    if (st == ST_FAILED && !s->logged) {
        s->logged = 1;
        say(rb, "could not write its part of the snapshot: %s", s->why);
    }
}

/* Settings worth keeping: not paths, secrets, placement (a host's interface)
 * or what names this run. */
static int kept_setting(const char *key)
{
    static const char *const skip[] = {"rally_tracker",     "rally_secret_file",  "rally_task_id",
                                       "rally_interface",   "rally_mock",         "rally_snapshot_dir",
                                       "rally_run_id",      "rally_run_started",  "rally_resume"};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (strcmp(key, skip[i]) == 0)
            return 0;
    return 1;
}

/* Rank 0, once every rank reported success: the manifest, then retention. */
static int commit(struct rally__robust *rb, const unsigned char *all, uint64_t version,
                  struct rally__err *e)
{
    struct rally__rsnap *s = rb->snap;
    struct rally__snap_manifest m;
    struct rally__snap_setting set[64];
    char keys[64][64], vals[64][RALLY__STR_MAX * 4];
    char **hosts = calloc((size_t)rb->world, sizeof *hosts);
    char **fps = NULL, *fptext = NULL;
    struct rally__snap_file *files = calloc((size_t)rb->world + 1, sizeof *files);
    int rc = RALLY_ENOMEM;
    if (hosts == NULL || files == NULL) {
        rally__fail(e, RALLY_ENOMEM, "out of memory");
        goto out;
    }
    memset(&m, 0, sizeof m);
    m.format_version = RALLY__SNAP_FORMAT;
    snprintf(m.rally_version, sizeof m.rally_version, "%s", RALLY_VERSION_STRING);
    snprintf(m.job, sizeof m.job, "%s", s->job);
    if ((rc = rally__snap_uuid(m.snapshot_id, e)) != RALLY_OK)
        goto out;
    memcpy(m.run_id, s->run_id, sizeof m.run_id);
    memcpy(m.run_started, s->run_started, sizeof m.run_started);
    m.version = version;
    rally__snap_now(m.created);
    m.world = rb->world;
    for (int r = 0; r < rb->world; r++)
        hosts[r] = rb->distributed && rb->tc.peers ? rb->tc.peers[r].host : s->host;
    m.hosts = hosts;
    size_t ns = 0;
    for (size_t i = 0; ns < 64 && rally__config_get(rb->cfg, i, keys[ns], sizeof keys[ns], vals[ns],
                                                    sizeof vals[ns]);
         i++)
        if (kept_setting(keys[ns])) {
            set[ns].key = keys[ns];
            set[ns].value = vals[ns];
            ns++;
        }
    m.settings = set;
    m.nsettings = ns;
    m.app_name = s->app_name ? s->app_name : "";
    m.app_config = s->app_config ? s->app_config : "";
    m.partitioning = s->scheme[0] ? s->scheme : "none";
    int any = 0;
    for (int r = 0; r < rb->world; r++)
        any |= rally__get_u64(all + ((size_t)r * SLOT + 6) * 8) != 0;
    if (any) { /* every rank's fingerprint, "" for a rank without */
        fps = calloc((size_t)rb->world, sizeof *fps);
        fptext = calloc((size_t)rb->world, 17);
        if (fps == NULL || fptext == NULL) {
            rc = rally__fail(e, RALLY_ENOMEM, "out of memory");
            goto out;
        }
        for (int r = 0; r < rb->world; r++) {
            const unsigned char *slot = all + (size_t)r * SLOT * 8;
            fps[r] = fptext + (size_t)r * 17;
            if (rally__get_u64(slot + 48) != 0)
                snprintf(fps[r], 17, "%016" PRIx64, rally__get_u64(slot + 56));
        }
        m.fingerprints = fps;
    }
    files[0].nbytes = rally__get_u64(all + 8 * 3);
    files[0].xxh3 = rally__get_u64(all + 8 * 4);
    rally__snap_file_name(-1, files[0].name);
    m.nfiles = 1;
    for (int r = 0; rb->use_local && r < rb->world; r++) {
        const unsigned char *slot = all + (size_t)r * SLOT * 8;
        struct rally__snap_file *f = &files[m.nfiles++];
        rally__snap_file_name(r, f->name);
        f->nbytes = rally__get_u64(slot + 8);
        f->xxh3 = rally__get_u64(slot + 16);
    }
    m.files = files;
    /* the manifest's fsyncs and retention's unlinks on the committer's
     * thread: collected (and logged) at a later turn */
    if ((rc = rally__snap_bg_commit(s->cbg, rb->cfg->snapshot_dir, &m, (int)rb->cfg->snapshot_keep,
                                    e)) == RALLY_OK)
        s->committing = version;
out:
    free(hosts);
    free(files);
    free(fps);
    free(fptext);
    return rc;
}

/* Rank 0: the commit in flight on the committer's thread, waiting for it
 * when wait; says what became of it.  RALLY_OK, or with
 * rally_snapshot_required a commit that failed. */
static int collect(struct rally__robust *rb, int wait)
{
    struct rally__rsnap *s = rb->snap;
    struct rally__snap_file none[RALLY__SNAP_PARTS_MAX];
    struct rally__err res = {0, ""};
    char path[PATH_MAX], note[RALLY__ERR_MSG_MAX];
    int done = 0;
    if (s == NULL || s->committing == RALLY__NONE)
        return RALLY_OK;
    rally__snap_bg_poll(s->cbg, wait ? -1 : 0, &done, &res, none);
    if (done != 1)
        return RALLY_OK;
    uint64_t v = s->committing;
    s->committing = RALLY__NONE;
    rally__snap_bg_commit_info(s->cbg, path, sizeof path, note, sizeof note);
    if (res.code != RALLY_OK) {
        say(rb, "version %" PRIu64 " not committed, the previous snapshot stays the newest: %s", v,
            res.msg);
        return rb->cfg->snapshot_required
                   ? rally__fail(rb->err, res.code, "rally_snapshot_required: %s", res.msg)
                   : RALLY_OK;
    }
    say(rb, "committed %s (checkpoint version %" PRIu64 ")", path, v);
    if (note[0])
        say(rb, "retention failed (the snapshots stay): %s", note);
    return RALLY_OK;
}

static int settle(struct rally__robust *rb, int wait)
{
    struct rally__rsnap *s = rb->snap;
    if (s == NULL || s->pending == RALLY__NONE)
        return RALLY_OK;
    uint64_t nbytes = (uint64_t)rb->world * SLOT * 8;
    struct report c = {calloc(1, (size_t)nbytes), nbytes, malloc((size_t)nbytes)};
    int rc = RALLY_OK;
    if (c.mine == NULL || c.all == NULL) {
        rc = rally__fail(rb->err, RALLY_ENOMEM, "out of memory for a snapshot report");
        goto out;
    }
    fill_slot(rb, c.mine + (size_t)rb->rank * SLOT * 8, wait || !s->skip, !wait);
    struct rally__op op = {{RALLY__K_SNAP_REPORT, 0, 0, -1, (uint64_t)rb->world * SLOT, 0},
                           NULL,
                           NULL,
                           run_report,
                           deliver_report,
                           &c};
    int64_t r0 = rally__now_us();
    rc = rally__robust_op(rb, &op);
    s->report_us = rally__now_us() - r0;
    if (rc != RALLY_OK)
        goto out;
    int bad = -1, busy = -1;
    uint64_t v = 0;
    for (int r = 0; r < rb->world; r++) {
        const unsigned char *slot = c.all + (size_t)r * SLOT * 8;
        uint64_t st = rally__get_u64(slot);
        v |= rally__get_u64(slot + 40);
        if (st & ST_FAILED && bad < 0)
            bad = r;
        else if (st != ST_OK && busy < 0)
            busy = r;
    }
    if (bad < 0 && busy >= 0) { /* skip mode: report again at the next checkpoint */
        rally__robust_request(rb, RALLY__REQ_SNAP_PENDING);
        if (rb->rank == 0)
            say(rb,
                "version %" PRIu64 ": rank %d is still writing its part; reported at the "
                "next checkpoint",
                v, busy);
        goto out;
    }
    struct rally__err e = {0, ""};
    if (bad >= 0) {
        snprintf(e.msg, sizeof e.msg,
                 "rank %d could not write its part (its log says why); the snapshot of "
                 "version %" PRIu64 " is void",
                 bad, v);
        e.code = RALLY_ESYS;
    } else if (rb->rank == 0 && (rc = collect(rb, 1)) == RALLY_OK) {
        commit(rb, c.all, v, &e); /* on the committer's thread */
    }
    if (rc != RALLY_OK)
        goto out;
    if (e.code != RALLY_OK && rb->rank == 0)
        say(rb, "version %" PRIu64 " not committed, the previous snapshot stays the newest: %s", v,
            e.msg);
    /* every rank fails alike only on what every rank knows: a failed part */
    if (bad >= 0 && rb->cfg->snapshot_required)
        rc = rally__fail(rb->err, RALLY_ESYS,
                         "rally_snapshot_required: rank %d could not write its part of the "
                         "snapshot of version %" PRIu64,
                         bad, v);
    else if (e.code != RALLY_OK && rb->rank == 0 && rb->cfg->snapshot_required)
        rc = rally__fail(rb->err, e.code, "rally_snapshot_required: %s", e.msg);
    s->pending = RALLY__NONE;
out:
    free(c.mine);
    free(c.all);
    return rc;
}

/* The store's turns: at each checkpoint, a snapshot pending since an
 * earlier commit is reported; in finalize nothing is left behind being
 * written, and the final snapshot (rally_snapshot_final) is taken. */
static int on_turn(void *arg, int when)
{
    struct rally__robust *rb = arg;
    struct rally__rsnap *s = rb->snap;
    if (when == RALLY__TURN_CHECKPOINT) {
        s->checkpoints = 1;
        int crc = collect(rb, 0);
        if (crc != RALLY_OK || s->pending == RALLY__NONE)
            return crc;
        int64_t t0 = rally__now_us();
        s->report_us = 0;
        int rc = settle(rb, 0);
        /* the report's allreduce waits for the slowest rank to arrive, as
         * the checkpoint's own acknowledgement would: not counted */
        s->stall_us += rally__now_us() - t0 - s->report_us;
        if (s->pending == RALLY__NONE) { /* reported: its stall is complete */
            s->stall_sum_us += s->stall_us;
            s->stall_max_us = s->stall_us > s->stall_max_us ? s->stall_us : s->stall_max_us;
            s->stalls++;
            s->stall_us = 0;
        }
        return rc;
    }
    if (s == NULL || s->bg == NULL)
        return RALLY_OK;
    if (rb->rank == 0 && s->stalls > 0)
        say(rb,
            "%d reported at checkpoints; each stalled the training thread %.1f ms on average "
            "(%.1f ms at most): its turn in the commit and in the next checkpoint's report, "
            "but for waiting in the report's allreduce",
            s->stalls, (double)s->stall_sum_us / s->stalls / 1000.0,
            (double)s->stall_max_us / 1000.0);
    int rc = settle(rb, 1);
    if (rc != RALLY_OK)
        return rc;
    if (rb->cfg->snapshot_final && rb->version > 0 && s->last != rb->version) {
        take(rb, rb->version);
        rc = settle(rb, 1);
    }
    int crc = collect(rb, 1); /* nothing is left behind being committed */
    return rc != RALLY_OK ? rc : crc;
}

/* --- resuming ------------------------------------------------------------------ */

int rally__robust_snap_resume(struct rally__robust *rb, unsigned char **global, uint64_t *gn,
                              unsigned char **local, uint64_t *ln, uint64_t *version)
{
    struct rally__rsnap *s = rb->snap;
    struct rally__snap *sn = NULL;
    void *g = NULL, *own = NULL;
    uint64_t gnb = 0, onb = 0;
    char note[512], **fps = NULL;
    /* rally-run verified every file; this rank verifies each file it reads
     * as it reads it, all of them before the application gets a byte */
    int rc = rally__snap_open_sizes(rb->cfg->resume, rb->err, &sn);
    if (rc != RALLY_OK)
        goto out;
    const struct rally__snap_manifest *m = rally__snap_manifest(sn);
    struct rally__snap_expect x = {rb->world, s && s->app_name ? s->app_name : NULL,
                                   s && s->app_config ? s->app_config : NULL,
                                   s && s->scheme[0] ? s->scheme : NULL, NULL};
    char mine[17];
    if (s != NULL && s->has_fp && m->fingerprints != NULL && m->world == rb->world) {
        /* this rank knows its own input only: the others' entries are the
         * snapshot's own, so the check is this rank's */
        if ((fps = malloc((size_t)m->world * sizeof *fps)) == NULL) {
            rc = rally__fail(rb->err, RALLY_ENOMEM, "out of memory");
            goto out;
        }
        memcpy(fps, m->fingerprints, (size_t)m->world * sizeof *fps);
        snprintf(mine, sizeof mine, "%016" PRIx64, s->fp);
        fps[rb->rank] = mine;
        x.fingerprints = fps;
    }
    if ((rc = rally__snap_compatible(m, &x, (int)rb->cfg->resume_force, rb->err, note,
                                     sizeof note)) != RALLY_OK) {
        /* the job's arguments or input, not a worker, are wrong: the job's
         * error, which no restart repairs (RALLY_ECONFIG to the tracker) */
        rally__robust_fatal(rb, RALLY_ECONFIG, rb->err->msg);
        goto out;
    }
    if (note[0] && rb->rank == 0)
        say(rb, "%s", note);
    if ((rc = rally__snap_read(sn, -1, rb->err, &g, &gnb)) != RALLY_OK)
        goto out;
    if (rally__snap_has_local(sn)) {
        struct rally__localset *ls = rally__robust_set_spare(rb);
        ls->version = m->version;
        for (int j = 0; j <= rb->k; j++) {
            int r = (rb->rank - j + rb->world) % rb->world;
            void *b = NULL;
            uint64_t n = 0;
            if ((rc = rally__snap_read(sn, r, rb->err, &b, &n)) != RALLY_OK)
                goto out;
            rally__robust_sgive(rb, ls->data[j], ls->cap[j]);
            ls->data[j] = b ? b : malloc(1);
            ls->nbytes[j] = ls->cap[j] = n;
            if (ls->data[j] == NULL) {
                rc = rally__fail(rb->err, RALLY_ENOMEM, "out of memory");
                goto out;
            }
        }
        ls->valid = 1;
        rb->use_local = 1;
        if ((own = rally__robust_dup(ls->data[0], ls->nbytes[0])) == NULL) {
            rc = rally__fail(rb->err, RALLY_ENOMEM, "out of memory");
            goto out;
        }
        onb = ls->nbytes[0];
    }
    unsigned char *keep = rally__robust_dup(g, gnb);
    if (keep == NULL) {
        rc = rally__fail(rb->err, RALLY_ENOMEM, "out of memory");
        goto out;
    }
    rally__robust_store_adopt(rb, keep, gnb, gnb);
    if (rb->rank == 0)
        say(rb, "resuming from %s: checkpoint version %" PRIu64 " of run %s, %d workers",
            rb->cfg->resume, m->version, m->run_id, m->world);
    if (s != NULL) {
        s->last = m->version; /* it is on disk already */
        s->resumed = 1;
    }
    *version = m->version;
    *global = g ? g : malloc(1);
    *gn = gnb;
    *local = own;
    *ln = onb;
    g = own = NULL;
out:
    free(fps);
    free(g);
    free(own);
    rally__snap_close(sn);
    return rc;
}
