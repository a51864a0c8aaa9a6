/*
 * snapjob.c — the snapshot layer's subscriber to checkpoints, over any
 * engine (api/engine.h): it turns committed checkpoint versions into
 * durable snapshots (src/snapshot); resume.c resumes a job from one.
 *
 * The cut is agreed inside the checkpoint's acknowledgement: a trigger
 * (every K versions, every T ms on rank 0's clock, the end) raises
 * RALLY__REQ_SNAPSHOT, and on the commit whose agreed flags carry it every
 * rank hands an immutable copy of that version to the background writer
 * (rank 0 the global model, each rank its own local model when the job has
 * them; a lazy model is serialized there and then: the engine lends the
 * bytes until the writer gives them back).  At the next checkpoint (or in
 * rally_finalize: the engine's turns) every rank waits for its write and
 * the ranks report what they wrote — status, size and checksum of each
 * file — in the turn's agreement, an operation like any other: the robust
 * engine caches it and serves it to a restarted worker, so every rank
 * takes part identically.  Only when every
 * rank reported success does rank 0 write the manifest, then apply
 * retention.  Whether a snapshot is pending is decided only by agreed
 * words (the commit's flags, the report's result), so every rank, also one
 * restarted in between, knows it alike: a restarted worker is served the
 * commit again in rally_load_checkpoint, and since it died before the
 * report, it reports its part lost: a rank that dies first voids the
 * snapshot, which is said and skipped (the tier refused nothing, so
 * rally_snapshot_required does not fail the job for it).
 * The subscriber is driven only by the engine: its commit hook, request
 * bits, and the turns in which it runs the report.  tier2.c copies each
 * reported snapshot to the second tier (rally_snapshot_copy).  What
 * becomes of each snapshot rank 0 commits, it says on stderr and tells
 * the launcher's observers (a REPORT: rally__snapjob_tell).
 */
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapjob/snapjob.h"
#include "util/clock.h"
#include "util/wire.h"

/* u64 per rank in the report: status, local size and sum, global size and
 * sum, the version (0 from a rank that does not know it), whether it has an
 * input fingerprint, the fingerprint */
#define SLOT 8

/* a rank's status in the report: LOST when it died and was restarted
 * before the report, so it cannot vouch for its part (the tier refused
 * nothing), FAILED when its write failed */
enum { ST_NONE = 0, ST_OK = 1, ST_FAILED = 2, ST_BUSY = 4, ST_LOST = 8 };

/* sj->failed: why this rank's part of the snapshot pending is void */
enum { PART_FAILED = 1, PART_LOST = 2 };

#define NONE RALLY__SNAP_NONE
#define UNKNOWN RALLY__SNAP_UNKNOWN
#define E (&rally__engine)

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

/* SIGUSR1 arrived: the request bit for the commit of version v. */
static void heed_usr1(struct rally__snapjob *sj, uint64_t v)
{
    if (!asked)
        return;
    asked = 0;
    E->request(sj->en, RALLY__REQ_SNAPSHOT);
    rally__snapjob_say(sj, "asked for one (SIGUSR1): version %" PRIu64 " will be taken", v);
}

/* Raises the request bit for the commit after v when a trigger says so. */
static void trigger(struct rally__snapjob *sj, uint64_t v)
{
    const struct rally__config *c = sj->cfg;
    if (c->snapshot_every > 0 && (v + 1) % (uint64_t)c->snapshot_every == 0)
        E->request(sj->en, RALLY__REQ_SNAPSHOT);
    heed_usr1(sj, v + 1);
}

/* Every T ms, asked at the start of a checkpoint for that checkpoint's own
 * commit: the first checkpoint begun T ms or more after the last snapshot
 * (asked at the commit before, it took the one after that). */
static void heed_clock(struct rally__snapjob *sj)
{
    int64_t t = sj->cfg->snapshot_every_ms;
    if (t > 0 && sj->rank == 0 && rally__now_ms() - sj->last_ms >= t)
        E->request(sj->en, RALLY__REQ_SNAPSHOT);
}

/* The writer is done with this rank's parts (its poll said so): the
 * engine may reuse their buffers. */
static void give_back(struct rally__snapjob *sj)
{
    for (int i = 0; i < sj->nlent; i++)
        E->release(sj->en, sj->lent[i]);
    sj->nlent = 0;
}

/* Borrows rank's bytes of version v for the writer (not copied). */
static int borrow(struct rally__snapjob *sj, uint64_t v, int rank, struct rally__snap_part *part)
{
    const void *p;
    uint64_t n;
    if (E->lend(sj->en, v, rank, &p, &n) != RALLY_OK)
        return sj->err->code;
    sj->lent[sj->nlent++] = p;
    *part = (struct rally__snap_part){rank, p, n, RALLY__SNAP_BORROWED};
    return RALLY_OK;
}

/* Hands this rank's parts of version v to the background writer. */
static void take(struct rally__snapjob *sj, uint64_t v)
{
    struct rally__snap_part parts[RALLY__SNAP_PARTS_MAX];
    struct rally__err saved = *sj->err, e = {0, ""};
    if (sj->nparts > 0 || sj->nlent > 0) {
        /* a voided snapshot's write still running: let it end */
        struct rally__snap_file f[RALLY__SNAP_PARTS_MAX];
        struct rally__err res = {0, ""};
        int done = 0;
        rally__snap_bg_poll(sj->bg, -1, &done, &res, f);
        give_back(sj);
    }
    /* V's bytes are lent, not copied: the engine neither writes nor reuses
     * a lent buffer, however many checkpoints the write outlives
     * (rally_snapshot_busy=skip), until give_back. */
    sj->pending = sj->last = v;
    sj->last_ms = rally__now_ms();
    sj->nparts = 0;
    sj->failed = sj->logged = 0;
    memset(sj->files, 0, sizeof sj->files);
    sj->why[0] = '\0';
    if ((sj->rank == 0 && borrow(sj, v, -1, &parts[sj->nparts++]) != RALLY_OK) ||
        (E->has_local(sj->en) && borrow(sj, v, sj->rank, &parts[sj->nparts++]) != RALLY_OK)) {
        snprintf(sj->why, sizeof sj->why, "%s", sj->err->msg);
        *sj->err = saved;
        give_back(sj);
        sj->nparts = 0;
        sj->failed = PART_FAILED;
        return;
    }
    if (sj->nparts == 0)
        return;
    struct rally__snap_target t = {sj->cfg->snapshot_dir, sj->job, sj->run_id, v, sj->world, NULL};
    int accepted = 0;
    if (rally__snap_bg_submit(sj->bg, &t, parts, sj->nparts, 1, &e, &accepted) != RALLY_OK ||
        !accepted) {
        give_back(sj); /* the writer holds none of them */
        snprintf(sj->why, sizeof sj->why, "%s", e.code ? e.msg : "the writer took nothing");
        sj->nparts = 0;
        sj->failed = PART_FAILED;
    }
}

static int on_turn(void *arg, int when);

/* What commit v with the agreed flags means for the snapshot pending or
 * asked for. */
static void committed(struct rally__snapjob *sj, uint64_t v, uint64_t flags)
{
    if (rally__snapjob_copying(sj))
        rally__snapjob_copy_agreed(sj, flags);
    if ((flags & RALLY__REQ_SNAP_PENDING) && sj->pending == NONE) {
        /* a restarted worker served a commit made while an older snapshot
         * was still being written: it died first, which voids it */
        sj->pending = UNKNOWN;
        sj->failed = PART_LOST;
        sj->logged = 0;
        sj->nparts = 0;
        memset(sj->files, 0, sizeof sj->files);
        snprintf(sj->why, sizeof sj->why,
                 "this worker died and was restarted while the snapshot was being written; a "
                 "rank that dies first voids the snapshot");
    }
    if (!(flags & RALLY__REQ_SNAPSHOT) || v == 0)
        return;
    if (sj->checkpoints == 0 && !sj->resumed && sj->pending == NONE) {
        /* a commit served in rally_load_checkpoint to a restarted worker:
         * the snapshot of v was taken and not yet reported (its report
         * comes at the next checkpoint, which nobody has passed: v is the
         * newest version), so this rank died first, and that voids it.
         * Were the report done before the death, this worker is served the
         * report too, and that (agreed) word is what counts. */
        sj->pending = sj->last = v;
        sj->failed = PART_LOST;
        sj->logged = sj->nparts = 0;
        memset(sj->files, 0, sizeof sj->files);
        snprintf(sj->why, sizeof sj->why,
                 "this worker died and was restarted before the snapshot of version %" PRIu64
                 " was reported; a rank that dies first voids the snapshot",
                 v);
        return;
    }
    if (sj->pending != NONE) { /* skip mode: one in flight */
        if (sj->rank == 0)
            rally__snapjob_say(sj,
                               "version %" PRIu64 " skipped: an older one is still being written "
                               "(rally_snapshot_busy=skip)",
                               v);
        return;
    }
    int64_t t0 = rally__now_us();
    take(sj, v);
    sj->stall_us = rally__now_us() - t0;
}

/* The job went on with other workers from committed version v (an
 * elastic job): a snapshot still pending was of the old world, and every
 * rank voids it alike; the next ones are the new world's. */
static void on_resized(void *arg, uint64_t v, int rank, int world)
{
    struct rally__snapjob *sj = arg;
    if (sj->pending != NONE) {
        if (sj->nparts > 0 || sj->nlent > 0) { /* let this rank's write end */
            struct rally__snap_file f[RALLY__SNAP_PARTS_MAX];
            struct rally__err res = {0, ""};
            int done = 0;
            rally__snap_bg_poll(sj->bg, -1, &done, &res, f);
            give_back(sj);
        }
        if (sj->rank == 0)
            rally__snapjob_say(sj,
                               "version %" PRIu64 " void: the job went on with %d workers from "
                               "version %" PRIu64 " before it was reported",
                               sj->pending, world, v);
        sj->pending = NONE;
        sj->nparts = 0;
        sj->failed = sj->logged = 0;
    }
    /* the manifests from now on say so: the world before, then this one */
    size_t n = sj->nchanges ? sj->nchanges + 1 : 2;
    struct rally__snap_change *c = realloc(sj->changes, n * sizeof *c);
    if (c != NULL) {
        if (sj->nchanges == 0)
            c[0] = (struct rally__snap_change){0, sj->world};
        c[n - 1] = (struct rally__snap_change){v, world};
        sj->changes = c;
        sj->nchanges = n;
    } else { /* out of memory: the manifests say nothing rather than something wrong */
        free(sj->changes);
        sj->changes = NULL;
        sj->nchanges = 0;
    }
    sj->rank = rank;
    sj->world = world;
    rally__snapjob_copy_resized(sj, v, world);
}

/* The commit hook: the commit first, then the triggers for the next one
 * (the clock's is asked at the next checkpoint's turn: heed_clock). */
static void on_commit(void *arg, uint64_t v, uint64_t flags)
{
    struct rally__snapjob *sj = arg;
    committed(sj, v, flags);
    trigger(sj, v);
}

/* The job's name: rally_snapshot_job, or the program's (prog), its
 * characters outside A-Z a-z 0-9 . _ - replaced. */
static int job_name(struct rally__snapjob *sj, const char *prog)
{
    const char *j = sj->cfg->snapshot_job;
    if (j[0] == '\0') {
        rally__snap_job_from(prog, sj->job);
        return RALLY_OK;
    }
    if (!rally__snap_job_ok(j))
        return rally__fail(sj->err, RALLY_ECONFIG,
                           "rally_snapshot_job=%.80s is not a job name (1 to %d bytes of "
                           "A-Z a-z 0-9 . _ -, not starting with '.')",
                           j, RALLY__SNAP_JOB_MAX);
    memcpy(sj->job, j, strlen(j) + 1); /* job_ok: it fits */
    return RALLY_OK;
}

int rally__snapjob_start(struct rally__engine *en, const struct rally__config *c, const char *prog,
                         struct rally__err *e, struct rally__snapjob **out)
{
    *out = NULL;
    if (c->snapshot_dir[0] == '\0' && c->resume[0] == '\0')
        return RALLY_OK;
    struct rally__snapjob *sj = calloc(1, sizeof *sj);
    if (sj == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory for the snapshot writer");
    *out = sj;
    sj->en = en;
    sj->cfg = c;
    sj->err = e;
    sj->rank = E->rank(en);
    sj->world = E->world(en);
    sj->pending = sj->last = sj->committing = NONE;
    rally__snapjob_tier2_init(sj);
    sj->last_ms = rally__now_ms();
    sj->skip = c->snapshot_busy == RALLY__SNAP_BUSY_SKIP;
    if (c->snapshot_local && c->snapshot_copy[0] == '\0')
        return rally__fail(e, RALLY_ECONFIG,
                           "rally_snapshot_local=1 needs rally_snapshot_copy: with a directory "
                           "private to each host, no host holds a whole snapshot, only the copy "
                           "does");
    if (job_name(sj, prog) != RALLY_OK || rally__snapjob_run(sj) != RALLY_OK)
        return e->code;
    struct rally__subscriber sub = {NULL, NULL, rally__snapjob_fresh, sj, NULL}; /* resume only */
    if (c->snapshot_dir[0] != '\0') {
        sub.commit = on_commit;
        sub.turn = on_turn;
        sub.resized = on_resized;
        if ((sj->report = calloc((size_t)sj->world * SLOT, 8)) == NULL)
            return rally__fail(e, RALLY_ENOMEM, "out of memory for the snapshot report");
        sj->report_world = sj->world;
        if (rally__snap_bg_start(e, &sj->bg) != RALLY_OK ||
            (sj->rank == 0 && rally__snap_bg_start(e, &sj->cbg) != RALLY_OK) ||
            (c->snapshot_copy[0] != '\0' && rally__snapjob_tier2_open(sj) != RALLY_OK))
            return e->code;
        /* version 1 has no commit before it; a resumed job's first commit
         * is of the version it resumed, on disk already */
        if (c->snapshot_every == 1 && !rally__snapjob_resuming(sj))
            E->request(en, RALLY__REQ_SNAPSHOT);
        listen_usr1();
    }
    return E->subscribe(en, &sub);
}

void rally__snapjob_free(struct rally__snapjob *sj)
{
    if (sj == NULL)
        return;
    rally__snap_bg_stop(sj->bg); /* finishes the write in flight */
    rally__snap_bg_stop(sj->cbg);
    rally__snapjob_tier2_free(sj);
    give_back(sj);
    rally__snapjob_run_free(sj);
    free(sj->changes);
    free(sj->report);
    free(sj->app_name);
    free(sj->app_config);
    free(sj);
}

int rally__snapjob_set_app(struct rally__snapjob *sj, const char *name, const char *config)
{
    char *n = strdup(name), *c = strdup(config);
    if (n == NULL || c == NULL) {
        free(n);
        free(c);
        return rally__fail(sj->err, RALLY_ENOMEM, "out of memory");
    }
    free(sj->app_name);
    free(sj->app_config);
    sj->app_name = n;
    sj->app_config = c;
    return RALLY_OK;
}

void rally__snapjob_set_input(struct rally__snapjob *sj, const char *scheme, uint64_t fp)
{
    snprintf(sj->scheme, sizeof sj->scheme, "%s", scheme);
    sj->fp = fp;
    sj->has_fp = 1;
}

void rally__snapjob_set_records(struct rally__snapjob *sj, rally_owner_fn owner, void *arg)
{
    if (sj == NULL)
        return;
    sj->rec_owner = owner;
    sj->rec_arg = arg;
}

/* --- the report: every rank's files, agreed in the turn's agreement --------- */

/* This rank's slot: its write collected (waiting for it when wait, and
 * saying so when loud), then status, files and the version. */
static void fill_slot(struct rally__snapjob *sj, unsigned char *slot, int wait, int loud)
{
    if (sj->nparts > 0 && !sj->failed) {
        struct rally__snap_file files[RALLY__SNAP_PARTS_MAX];
        struct rally__err res = {0, ""};
        int done = 0;
        rally__snap_bg_poll(sj->bg, 0, &done, &res, files);
        if (done == 0 && wait) { /* one in flight: this call waits for it, and says so */
            int64_t t0 = rally__now_ms();
            rally__snap_bg_poll(sj->bg, -1, &done, &res, files);
            if (loud)
                rally__snapjob_say(sj,
                                   "the checkpoint waited %" PRId64
                                   " ms for its part of version %" PRIu64
                                   " to be written (rally_snapshot_busy=wait)",
                                   rally__now_ms() - t0, sj->pending);
        }
        if (done == 1) {
            give_back(sj);
            if (res.code != RALLY_OK) {
                snprintf(sj->why, sizeof sj->why, "%s", res.msg);
                sj->failed = PART_FAILED;
            }
            for (int i = 0; i < sj->nparts && !sj->failed; i++) {
                int global = strcmp(files[i].name, RALLY__SNAP_GLOBAL) == 0;
                sj->files[global ? 2 : 0] = files[i].nbytes;
                sj->files[global ? 3 : 1] = files[i].xxh3;
            }
            sj->nparts = 0;
        }
    }
    uint64_t st = sj->failed == PART_LOST ? ST_LOST
                  : sj->failed            ? ST_FAILED
                  : sj->nparts > 0        ? ST_BUSY
                                          : ST_OK;
    rally__put_u64(slot, st);
    for (int i = 0; i < 4; i++)
        rally__put_u64(slot + 8 * (i + 1), st == ST_OK ? sj->files[i] : 0);
    rally__put_u64(slot + 40, sj->pending == UNKNOWN ? 0 : sj->pending);
    rally__put_u64(slot + 48, (uint64_t)sj->has_fp);
    rally__put_u64(slot + 56, sj->fp);
    if ((st == ST_FAILED || st == ST_LOST) && !sj->logged) {
        sj->logged = 1;
        rally__snapjob_say(sj, "could not write its part of the snapshot: %s", sj->why);
    }
}

/* Settings worth keeping: not paths, secrets, placement (a host's interface)
 * or what names this run. */
static int kept_setting(const char *key)
{
    static const char *const skip[] = {
        "rally_tracker", "rally_secret_file",  "rally_task_id",       "rally_interface",
        "rally_mock",    "rally_snapshot_dir", "rally_run_id",        "rally_run_started",
        "rally_resume",  "rally_overwrite",    "rally_keep_snapshots", "rally_snapshot_copy",
        "rally_snapshot_local", "rally_mock_deaths"};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (strcmp(key, skip[i]) == 0)
            return 0;
    return 1;
}

/* Rank 0, once every rank reported success: the manifest, then retention. */
static int commit(struct rally__snapjob *sj, const unsigned char *all, uint64_t version,
                  struct rally__err *e)
{
    struct rally__snap_manifest m;
    struct rally__snap_setting set[64];
    char keys[64][64], vals[64][RALLY__STR_MAX * 4];
    char **hosts = calloc((size_t)sj->world, sizeof *hosts);
    char **fps = NULL, *fptext = NULL;
    struct rally__snap_file *files = calloc((size_t)sj->world + 1, sizeof *files);
    int rc = RALLY_ENOMEM;
    if (hosts == NULL || files == NULL) {
        rally__fail(e, RALLY_ENOMEM, "out of memory");
        goto out;
    }
    memset(&m, 0, sizeof m);
    m.format_version = RALLY__SNAP_FORMAT;
    snprintf(m.rally_version, sizeof m.rally_version, "%s", RALLY_VERSION_STRING);
    snprintf(m.job, sizeof m.job, "%s", sj->job);
    if ((rc = rally__snap_uuid(m.snapshot_id, e)) != RALLY_OK)
        goto out;
    memcpy(m.run_id, sj->run_id, sizeof m.run_id);
    memcpy(m.run_started, sj->run_started, sizeof m.run_started);
    m.version = version;
    rally__snap_now(m.created);
    m.world = sj->world;
    for (int r = 0; r < sj->world; r++)
        hosts[r] = (char *)E->host(sj->en, r);
    m.hosts = hosts;
    size_t ns = 0;
    for (size_t i = 0; ns < 64 && rally__config_get(sj->cfg, i, keys[ns], sizeof keys[ns], vals[ns],
                                                    sizeof vals[ns]);
         i++)
        if (kept_setting(keys[ns])) {
            set[ns].key = keys[ns];
            set[ns].value = vals[ns];
            ns++;
        }
    m.settings = set;
    m.nsettings = ns;
    m.app_name = sj->app_name ? sj->app_name : "";
    m.app_config = sj->app_config ? sj->app_config : "";
    m.partitioning = sj->scheme[0] ? sj->scheme : "none";
    int any = 0;
    for (int r = 0; r < sj->world; r++)
        any |= rally__get_u64(all + ((size_t)r * SLOT + 6) * 8) != 0;
    if (any) { /* every rank's fingerprint, "" for a rank without */
        fps = calloc((size_t)sj->world, sizeof *fps);
        fptext = calloc((size_t)sj->world, 17);
        if (fps == NULL || fptext == NULL) {
            rc = rally__fail(e, RALLY_ENOMEM, "out of memory");
            goto out;
        }
        for (int r = 0; r < sj->world; r++) {
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
    for (int r = 0; E->has_local(sj->en) && r < sj->world; r++) {
        const unsigned char *slot = all + (size_t)r * SLOT * 8;
        struct rally__snap_file *f = &files[m.nfiles++];
        rally__snap_file_name(r, f->name);
        f->nbytes = rally__get_u64(slot + 8);
        f->xxh3 = rally__get_u64(slot + 16);
    }
    m.files = files;
    uint64_t nbytes = rally__snap_manifest_nbytes(&m);
    m.changes = sj->changes;
    m.nchanges = sj->nchanges;
    m.records = sj->rec_owner != NULL;
    if (rally__snapjob_copying(sj) &&
        (rc = rally__snapjob_copy_manifest(sj, &m, version, e)) != RALLY_OK)
        goto out;
    /* the manifest's fsyncs and retention's unlinks on the committer's
     * thread: collected (and logged) at a later turn; a directory private
     * to each host holds no whole snapshot: it is committed in the copy only.
     * A rank that became rank 0 when an elastic job lost the first starts
     * its committer now. */
    if (!sj->cfg->snapshot_local &&
        (sj->cbg != NULL || (rc = rally__snap_bg_start(e, &sj->cbg)) == RALLY_OK) &&
        (rc = rally__snap_bg_commit(sj->cbg, sj->cfg->snapshot_dir, &m, (int)sj->cfg->snapshot_keep,
                                    e)) == RALLY_OK) {
        sj->committing = version;
        sj->committing_nbytes = nbytes;
    }
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
static int collect(struct rally__snapjob *sj, int wait)
{
    struct rally__snap_file none[RALLY__SNAP_PARTS_MAX];
    struct rally__err res = {0, ""};
    char path[PATH_MAX], note[RALLY__ERR_MSG_MAX];
    int done = 0;
    if (sj->committing == NONE)
        return RALLY_OK;
    rally__snap_bg_poll(sj->cbg, wait ? -1 : 0, &done, &res, none);
    if (done != 1)
        return RALLY_OK;
    uint64_t v = sj->committing;
    sj->committing = NONE;
    rally__snap_bg_commit_info(sj->cbg, path, sizeof path, note, sizeof note);
    if (res.code != RALLY_OK) {
        rally__snapjob_say(
            sj, "version %" PRIu64 " not committed, the previous snapshot stays the newest: %s", v,
            res.msg);
        rally__snapjob_tell(sj, RALLY__TIER_DIR, 0, v, 0, res.msg);
        return sj->cfg->snapshot_required
                   ? rally__fail(sj->err, res.code, "rally_snapshot_required: %s", res.msg)
                   : RALLY_OK;
    }
    rally__snapjob_say(sj, "committed %s (checkpoint version %" PRIu64 ")", path, v);
    rally__snapjob_tell(sj, RALLY__TIER_DIR, 1, v, sj->committing_nbytes, path);
    if (note[0])
        rally__snapjob_say(sj, "retention failed (the snapshots stay): %s", note);
    return RALLY_OK;
}

static int settle(struct rally__snapjob *sj, int wait)
{
    if (sj->pending == NONE)
        return RALLY_OK;
    if (sj->world > sj->report_world) { /* the job took workers in */
        uint64_t *b = realloc(sj->report, (size_t)sj->world * SLOT * 8);
        if (b == NULL)
            return rally__fail(sj->err, RALLY_ENOMEM, "out of memory for the snapshot report");
        sj->report = b;
        sj->report_world = sj->world;
    }
    /* world slots of SLOT words, this rank's filled, the others zero */
    memset(sj->report, 0, (size_t)sj->world * SLOT * 8);
    unsigned char *all = (unsigned char *)sj->report;
    fill_slot(sj, all + (size_t)sj->rank * SLOT * 8, wait || !sj->skip, !wait);
    int64_t r0 = rally__now_us();
    int rc = E->agree(sj->en, sj->report, (size_t)sj->world * SLOT);
    sj->report_us = rally__now_us() - r0;
    if (rc != RALLY_OK)
        return rc;
    int bad = -1, lost = -1, busy = -1;
    uint64_t v = 0;
    for (int r = 0; r < sj->world; r++) {
        const unsigned char *slot = all + (size_t)r * SLOT * 8;
        uint64_t st = rally__get_u64(slot);
        v |= rally__get_u64(slot + 40);
        if (st == ST_FAILED)
            bad = bad < 0 ? r : bad;
        else if (st == ST_LOST)
            lost = lost < 0 ? r : lost;
        else if (st != ST_OK && busy < 0)
            busy = r;
    }
    if (bad < 0 && lost >= 0) {
        /* void by a death, not refused by the tier: said, and no job fails
         * for it (rally_snapshot_required); the next one is taken as usual */
        if (sj->rank == 0) {
            rally__snapjob_say(sj,
                               "version %" PRIu64 " void: rank %d died before it was reported (a "
                               "rank that dies first voids the snapshot); the previous snapshot "
                               "stays the newest, the next one is taken as usual",
                               v, lost);
            rally__snapjob_tell(sj, RALLY__TIER_DIR, 0, v, 0,
                                "a rank died before it was reported");
        }
        sj->pending = NONE;
        return RALLY_OK;
    }
    if (bad < 0 && busy >= 0) { /* skip mode: report again at the next checkpoint */
        E->request(sj->en, RALLY__REQ_SNAP_PENDING);
        if (sj->rank == 0)
            rally__snapjob_say(sj,
                               "version %" PRIu64
                               ": rank %d is still writing its part; reported at the "
                               "next checkpoint",
                               v, busy);
        return RALLY_OK;
    }
    struct rally__err e = {0, ""};
    if (bad >= 0) {
        snprintf(e.msg, sizeof e.msg,
                 "rank %d could not write its part (its log says why); the snapshot of "
                 "version %" PRIu64 " is void",
                 bad, v);
        e.code = RALLY_ESYS;
    } else if (sj->rank == 0 && (rc = collect(sj, 1)) == RALLY_OK) {
        commit(sj, all, v, &e); /* on the committer's thread */
    }
    if (rc != RALLY_OK)
        return rc;
    if (bad < 0 && rally__snapjob_copying(sj))
        rally__snapjob_copy_start(sj, v);
    if (e.code != RALLY_OK && sj->rank == 0) {
        rally__snapjob_say(
            sj, "version %" PRIu64 " not committed, the previous snapshot stays the newest: %s", v,
            e.msg);
        rally__snapjob_tell(sj, RALLY__TIER_DIR, 0, v, 0, e.msg);
    }
    /* every rank fails alike only on what every rank knows: a failed part */
    if (bad >= 0 && sj->cfg->snapshot_required)
        rc = rally__fail(sj->err, RALLY_ESYS,
                         "rally_snapshot_required: rank %d could not write its part of the "
                         "snapshot of version %" PRIu64,
                         bad, v);
    else if (e.code != RALLY_OK && sj->rank == 0 && sj->cfg->snapshot_required)
        rc = rally__fail(sj->err, e.code, "rally_snapshot_required: %s", e.msg);
    sj->pending = NONE;
    return rc;
}

/* The engine's turns: at each checkpoint, a snapshot pending since an
 * earlier commit is reported; in finalize nothing is left behind being
 * written, and the final snapshot (rally_snapshot_final) is taken. */
static int on_turn(void *arg, int when)
{
    struct rally__snapjob *sj = arg;
    if (when == RALLY__TURN_CHECKPOINT) {
        /* before this checkpoint's acknowledgement: a SIGUSR1 since the
         * last commit is heard in this one, not the next */
        heed_usr1(sj, E->version(sj->en) + 1);
        heed_clock(sj);
        sj->checkpoints = 1;
        int crc = collect(sj, 0);
        if (crc == RALLY_OK)
            crc = rally__snapjob_copies(sj);
        if (crc != RALLY_OK)
            return crc;
        if (sj->pending == NONE) {
            E->request(sj->en, rally__snapjob_copy_bits(sj));
            return RALLY_OK;
        }
        int64_t t0 = rally__now_us();
        sj->report_us = 0;
        int rc = settle(sj, 0);
        /* the report's agreement waits for the slowest rank to arrive, as
         * the checkpoint's own acknowledgement would: not counted */
        sj->stall_us += rally__now_us() - t0 - sj->report_us;
        if (sj->pending == NONE) { /* reported: its stall is complete */
            sj->stall_sum_us += sj->stall_us;
            sj->stall_max_us = sj->stall_us > sj->stall_max_us ? sj->stall_us : sj->stall_max_us;
            sj->stalls++;
            sj->stall_us = 0;
        }
        E->request(sj->en, rally__snapjob_copy_bits(sj));
        return rc;
    }
    if (sj->rank == 0 && sj->stalls > 0)
        rally__snapjob_say(
            sj,
            "%d reported at checkpoints; each stalled the training thread %.1f ms on average "
            "(%.1f ms at most): its turn in the commit and in the next checkpoint's report, "
            "but for waiting in the report's agreement",
            sj->stalls, (double)sj->stall_sum_us / sj->stalls / 1000.0,
            (double)sj->stall_max_us / 1000.0);
    int rc = settle(sj, 1);
    if (rc != RALLY_OK)
        return rc;
    uint64_t v = E->version(sj->en);
    if (sj->cfg->snapshot_final && v > 0 && sj->last != v) {
        take(sj, v);
        rc = settle(sj, 1);
    }
    int crc = collect(sj, 1); /* nothing is left behind being committed */
    if (rally__snapjob_copying(sj)) { /* nor being copied: the second tier holds the last one too */
        int prc = rally__snapjob_copy_last(sj);
        crc = crc != RALLY_OK ? crc : prc;
    }
    return rc != RALLY_OK ? rc : crc;
}
