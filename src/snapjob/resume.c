/*
 * resume.c — the run a job's snapshots belong to, and resuming from one.
 *
 * A launcher (rally-run) names the run (rally_run_id, rally_run_started),
 * holds the job directory's lock, resolves --resume and verifies the
 * snapshot before any worker starts, and cleans up after success.  A job
 * started by anything else — mpirun with librally_mpi, a tracker without
 * rally-run — owns its run: rank 0 names it, takes the lock, makes the
 * fresh-start check, resolves rally_resume (latest, or a path) and verifies
 * that snapshot, and broadcasts the outcome, so every rank starts from the
 * same name and snapshot or fails with rank 0's sentence; after a
 * successful finalize rank 0 removes the run's snapshots unless kept.
 *
 * Resuming is the engine's fresh hook: only when the whole job starts
 * afresh (no worker holds a checkpoint) does a rank read the snapshot,
 * verifying each file as it reads it, check it is this job's, and hand the
 * engine the version to adopt.  A worker that replaces one that died is
 * served the newest checkpoint by the others instead.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapjob/snapjob.h"
#include "util/records.h"

#define E (&rally__engine)

/* What rank 0 tells the others about the run it named. */
struct run_word {
    uint32_t code; /* RALLY_OK, or rank 0's failure, msg its sentence */
    char msg[RALLY__ERR_MSG_MAX];
    char run_id[RALLY__SNAP_UUID_LEN + 1];
    char run_started[RALLY__SNAP_TIME_LEN + 1];
    char resume[PATH_MAX];
};

/* e's sentence after "rally_resume=...: " (or a note), as RALLY_ECONFIG:
 * the job's settings are what is wrong. */
static int refuse(struct rally__err *e, const char *setting, const char *value, const char *tail)
{
    char was[RALLY__ERR_MSG_MAX];
    snprintf(was, sizeof was, "%s", e->msg);
    return rally__fail_over(e, RALLY_ECONFIG, "%s=%s: %s%s", setting, value, was, tail);
}

/* sj->rs.jobdir: rally_snapshot_dir/job, absolute. */
static int job_dir(struct rally__snapjob *sj)
{
    const char *d = sj->cfg->snapshot_dir;
    char abs[PATH_MAX];
    if (realpath(d, abs) == NULL)
        return rally__fail(sj->err, RALLY_ESYS, "rally_snapshot_dir=%s: %s", d, strerror(errno));
    if (snprintf(sj->rs.jobdir, sizeof sj->rs.jobdir, "%s/%s", abs, sj->job) >=
        (int)sizeof sj->rs.jobdir)
        return rally__fail(sj->err, RALLY_ECONFIG, "rally_snapshot_dir=%s: the path is too long",
                           d);
    const char *cp = sj->cfg->snapshot_copy;
    struct rally__err ce = {0, ""};
    if (cp[0] != '\0' && rally__snap_absolute(cp, 0, abs, sizeof abs, &ce) != RALLY_OK)
        return rally__fail(sj->err, RALLY_ECONFIG, "rally_snapshot_copy=%s: %s", cp, ce.msg);
    if (cp[0] != '\0' && snprintf(sj->rs.copy_jobdir, sizeof sj->rs.copy_jobdir, "%s/%s", abs,
                                  sj->job) >= (int)sizeof sj->rs.copy_jobdir)
        return rally__fail(sj->err, RALLY_ECONFIG, "rally_snapshot_copy=%s: the path is too long",
                           cp);
    return RALLY_OK;
}

/* Rank 0 of a job that owns its run: the name, the lock, the fresh-start
 * check and the snapshot to resume from, resolved and verified. */
static int name_run(struct rally__snapjob *sj, struct run_word *w)
{
    const struct rally__config *c = sj->cfg;
    struct rally__err *e = sj->err;
    if (rally__snap_uuid(w->run_id, e) != RALLY_OK)
        return e->code;
    rally__snap_now(w->run_started);
    if (c->snapshot_dir[0] != '\0') {
        if (rally__snap_lock_take(c->snapshot_dir, sj->job, w->run_id, e, &sj->rs.lock) !=
                RALLY_OK ||
            job_dir(sj) != RALLY_OK)
            return e->code;
        if (c->snapshot_copy[0] != '\0' &&
            rally__snap_probe(c->snapshot_copy, w->run_id, e) != RALLY_OK)
            return refuse(e, "rally_snapshot_copy", c->snapshot_copy, " (it cannot take a write)");
        if (c->resume[0] == '\0' && !c->overwrite &&
            rally__snap_check_fresh_tiers(sj->rs.jobdir, sj->rs.copy_jobdir, "rally_resume=latest",
                                          "rally_overwrite=1", e) != RALLY_OK)
            return e->code = RALLY_ECONFIG;
    }
    if (c->resume[0] == '\0')
        return RALLY_OK;
    if ((strcmp(c->resume, "latest") == 0 || strcmp(c->resume, RALLY__SNAP_IF_ANY) == 0) &&
        sj->rs.jobdir[0] == '\0')
        return rally__fail(e, RALLY_ECONFIG, "rally_resume=%s needs rally_snapshot_dir",
                           c->resume);
    char path[PATH_MAX];
    struct rally__snap *sn = NULL;
    const char *copydir = sj->rs.copy_jobdir[0] ? sj->rs.copy_jobdir : NULL;
    if (rally__snap_resolve(sj->rs.jobdir, copydir, c->resume, e, path, sizeof path) != RALLY_OK)
        return refuse(e, "rally_resume", c->resume, "");
    if (path[0] == '\0') { /* latest-if-any, and none */
        rally__snapjob_say(sj, "rally_resume=%s: no complete snapshot in %s%s%s: a fresh start",
                           c->resume, sj->rs.jobdir, copydir ? " nor " : "",
                           copydir ? copydir : "");
        return RALLY_OK;
    }
    if (rally__snap_open(path, e, &sn) != RALLY_OK) {
        char older[PATH_MAX], hint[2 * PATH_MAX + 128] = "";
        uint64_t v = 0;
        if ((strcmp(c->resume, "latest") == 0 || strcmp(c->resume, RALLY__SNAP_IF_ANY) == 0) &&
            rally__snap_older(sj->rs.jobdir, copydir, path, older, sizeof older, &v))
            snprintf(hint, sizeof hint,
                     "; the newest snapshot before it that verifies is %s (checkpoint version "
                     "%" PRIu64 "): rally_resume=%s takes it",
                     older, v, older);
        return refuse(e, "rally_resume", c->resume, hint);
    }
    const struct rally__snap_manifest *m = rally__snap_manifest(sn);
    struct rally__snap_expect x = {sj->world, NULL, NULL, NULL, NULL, "rally_resume_force=1", -1};
    char note[512];
    int rc = rally__snap_compatible(m, &x, (int)c->resume_force, e, note, sizeof note);
    if (rc == RALLY_OK)
        rc = rally__snap_absolute(path, 1, w->resume, sizeof w->resume, e);
    rally__snap_close(sn);
    return rc == RALLY_OK ? RALLY_OK : refuse(e, "rally_resume", c->resume, "");
}

int rally__snapjob_run(struct rally__snapjob *sj)
{
    const struct rally__config *c = sj->cfg;
    struct rally__err *e = sj->err;
    if (c->run_started[0] != '\0' && strlen(c->run_started) != RALLY__SNAP_TIME_LEN)
        return rally__fail(e, RALLY_ECONFIG,
                           "rally_run_started=%.80s is not a time like "
                           "2026-11-30T12:00:00.000000Z",
                           c->run_started);
    if (c->run_id[0] != '\0') { /* the launcher's run: it resolved and verified the snapshot */
        if (strlen(c->run_id) != RALLY__SNAP_UUID_LEN)
            return rally__fail(e, RALLY_ECONFIG,
                               "rally_run_id=%.80s is not a UUID (8-4-4-4-12 hex digits)",
                               c->run_id);
        memcpy(sj->run_id, c->run_id, RALLY__SNAP_UUID_LEN + 1);
        if (c->run_started[0] != '\0')
            memcpy(sj->run_started, c->run_started, RALLY__SNAP_TIME_LEN + 1);
        else
            rally__snap_now(sj->run_started);
        snprintf(sj->rs.resume, sizeof sj->rs.resume, "%s", c->resume);
        return RALLY_OK;
    }
    sj->rs.owner = 1;
    struct run_word *w = calloc(1, sizeof *w);
    if (w == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory");
    /* a rank 0 that replaces one that died is served the name its
     * predecessor broadcast (the robust engine keeps bootstrap results) */
    int again = E->attempt(sj->en) > 0;
    if (sj->rank == 0 && !again && name_run(sj, w) != RALLY_OK) {
        w->code = (uint32_t)e->code;
        snprintf(w->msg, sizeof w->msg, "%s", e->msg);
    }
    int rc = sj->world > 1 ? E->broadcast(sj->en, w, sizeof *w, 0) : RALLY_OK;
    if (rc == RALLY_OK && w->code == RALLY_OK && sj->rank == 0 && again &&
        c->snapshot_dir[0] != '\0' &&
        (rally__snap_lock_take(c->snapshot_dir, sj->job, w->run_id, e, &sj->rs.lock) != RALLY_OK ||
         job_dir(sj) != RALLY_OK)) {
        rally__snapjob_say(sj, "restarted, could not take the job directory's lock again: %s",
                           e->msg);
        rally__err_clear(e);
    }
    if (rc == RALLY_OK && w->code != RALLY_OK)
        rc = sj->rank == 0 ? (int)w->code : rally__fail(e, (int)w->code, "rank 0: %s", w->msg);
    if (rc == RALLY_OK) {
        memcpy(sj->run_id, w->run_id, sizeof sj->run_id);
        memcpy(sj->run_started, w->run_started, sizeof sj->run_started);
        memcpy(sj->rs.resume, w->resume, sizeof sj->rs.resume);
        if (sj->rank == 0 && sj->rs.resume[0] != '\0')
            rally__snapjob_say(sj, "resuming from %s (rally_resume=%s, verified)", sj->rs.resume,
                               c->resume);
    }
    free(w);
    return rc;
}

void rally__snapjob_run_free(struct rally__snapjob *sj)
{
    rally__snap_lock_release(sj->rs.lock);
    sj->rs.lock = NULL;
}

void rally__snapjob_done(struct rally__snapjob *sj)
{
    const struct rally__config *c = sj ? sj->cfg : NULL;
    if (sj == NULL || !sj->rs.owner || sj->rank != 0 || sj->rs.jobdir[0] == '\0' ||
        c->keep_snapshots ||
        c->snapshot_final)
        return;
    char say[RALLY__ERR_MSG_MAX + 64];
    rally__snap_clean_run(sj->rs.jobdir, sj->run_id, "rally_keep_snapshots=1", say, sizeof say);
    if (say[0])
        rally__snapjob_say(sj, "%s", say);
    if (sj->rs.copy_jobdir[0] == '\0')
        return;
    rally__snap_clean_run(sj->rs.copy_jobdir, sj->run_id, "rally_keep_snapshots=1", say,
                          sizeof say);
    if (say[0])
        rally__snapjob_say(sj, "%s: %s", sj->cfg->snapshot_copy, say);
}

/* Local models as records, resumed on any number of workers: every old
 * rank's file is read (and verified) once, and slot j gets the records
 * rank a->slot_rank[j] owns now, in id order. */
static int read_records(struct rally__snapjob *sj, struct rally__snap *sn, int old_world,
                        struct rally__adopt *a)
{
    void **file = calloc((size_t)old_world, sizeof *file);
    uint64_t *fn = calloc((size_t)old_world, sizeof *fn);
    struct rally__recs recs = {0};
    int rc = RALLY_OK;
    if (file == NULL || fn == NULL) {
        rc = rally__fail(sj->err, RALLY_ENOMEM, "out of memory");
        goto out;
    }
    for (int r = 0; r < old_world; r++) {
        if ((rc = rally__snap_read(sn, r, sj->err, &file[r], &fn[r])) != RALLY_OK)
            goto out;
        struct rally__rec rec;
        uint64_t at = 0;
        int k;
        while ((k = rally__rec_next(file[r], fn[r], &at, &rec)) == 1) {
            int own = sj->rec_owner(rec.id, sj->world, sj->rec_arg);
            if (own < 0 || own >= sj->world) {
                rc = rally__fail(sj->err, RALLY_EINVAL,
                                 "rally_set_local_records' owner gave rank %d for record %016llx "
                                 "in a job of %d",
                                 own, (unsigned long long)rec.id, sj->world);
                goto out;
            }
            rec.slot = a->nlocal;
            for (int j = 0; j < a->nlocal; j++)
                rec.slot = a->slot_rank[j] == own ? j : rec.slot;
            if (rec.slot < a->nlocal && rally__recs_push(&recs, &rec) != 0) {
                rc = rally__fail(sj->err, RALLY_ENOMEM, "out of memory");
                goto out;
            }
        }
        if (k < 0) {
            rc = rally__fail(sj->err, RALLY_EPROTO,
                             "the snapshot's local model of rank %d is not records (at byte "
                             "%llu)",
                             r, (unsigned long long)at);
            goto out;
        }
    }
    rally__recs_sort(&recs);
    for (int j = 0; j < a->nlocal; j++) {
        uint64_t n = 0;
        for (size_t i = 0; i < recs.n; i++)
            if (recs.v[i].slot == j)
                n += recs.v[i].n;
        unsigned char *b = malloc(n ? (size_t)n : 1);
        if (b == NULL) {
            rc = rally__fail(sj->err, RALLY_ENOMEM, "out of memory");
            goto out;
        }
        a->local[j] = b;
        a->local_nbytes[j] = n;
        for (size_t i = 0, at = 0; i < recs.n; i++)
            if (recs.v[i].slot == j) {
                memcpy(b + at, recs.v[i].p, (size_t)recs.v[i].n);
                at += (size_t)recs.v[i].n;
            }
    }
out:
    for (int r = 0; file != NULL && r < old_world; r++)
        free(file[r]);
    free(file);
    free(fn);
    rally__recs_free(&recs);
    return rc;
}

/* The snapshot's global model and the local models this rank holds (slot
 * j: rank a->slot_rank[j]'s), each file verified as it is read. */
static int read_models(struct rally__snapjob *sj, struct rally__snap *sn, struct rally__adopt *a)
{
    void *g = NULL;
    if (rally__snap_read(sn, -1, sj->err, &g, &a->global_nbytes) != RALLY_OK)
        return sj->err->code;
    a->global = g ? g : malloc(1);
    if (a->global == NULL)
        return rally__fail(sj->err, RALLY_ENOMEM, "out of memory");
    if (!rally__snap_has_local(sn))
        return RALLY_OK;
    a->has_local = 1;
    const struct rally__snap_manifest *m = rally__snap_manifest(sn);
    if (m->records && sj->rec_owner != NULL)
        return read_records(sj, sn, m->world, a);
    for (int j = 0; j < a->nlocal; j++) {
        int r = a->slot_rank[j];
        void *b = NULL;
        if (rally__snap_read(sn, r, sj->err, &b, &a->local_nbytes[j]) != RALLY_OK)
            return sj->err->code;
        if ((a->local[j] = b ? b : malloc(1)) == NULL)
            return rally__fail(sj->err, RALLY_ENOMEM, "out of memory");
    }
    return RALLY_OK;
}

int rally__snapjob_fresh(void *arg, struct rally__adopt *a)
{
    struct rally__snapjob *sj = arg;
    if (sj->rs.resume[0] == '\0')
        return RALLY_OK; /* nothing to resume: a fresh start */
    struct rally__snap *sn = NULL;
    char note[512], mine[17], **fps = NULL;
    /* the launcher (or rank 0) verified every file; this rank verifies each
     * file it reads as it reads it, all of them before the application
     * gets a byte */
    int rc = rally__snap_open_sizes(sj->rs.resume, sj->err, &sn);
    if (rc != RALLY_OK)
        goto out;
    const struct rally__snap_manifest *m = rally__snap_manifest(sn);
    struct rally__snap_expect x = {sj->world,
                                   sj->app_name,
                                   sj->app_config,
                                   sj->scheme[0] ? sj->scheme : NULL,
                                   NULL,
                                   sj->rs.owner ? "rally_resume_force=1" : "--force",
                                   sj->rec_owner != NULL};
    if (sj->has_fp && m->fingerprints != NULL && m->world == sj->world) {
        /* this rank knows its own input only: the others' entries are the
         * snapshot's own, so the check is this rank's */
        if ((fps = malloc((size_t)m->world * sizeof *fps)) == NULL) {
            rc = rally__fail(sj->err, RALLY_ENOMEM, "out of memory");
            goto out;
        }
        memcpy(fps, m->fingerprints, (size_t)m->world * sizeof *fps);
        snprintf(mine, sizeof mine, "%016" PRIx64, sj->fp);
        fps[sj->rank] = mine;
        x.fingerprints = fps;
    }
    if (rally__snap_compatible(m, &x, (int)sj->cfg->resume_force, sj->err, note, sizeof note) !=
        RALLY_OK) {
        /* the job's arguments or input, not a worker, are wrong: the job's
         * error, which no restart repairs */
        rc = sj->err->code = RALLY_ECONFIG;
        goto out;
    }
    if (note[0] && sj->rank == 0)
        rally__snapjob_say(sj, "%s", note);
    if ((rc = read_models(sj, sn, a)) != RALLY_OK)
        goto out;
    if (sj->rank == 0)
        rally__snapjob_say(sj,
                           "resuming from %s: checkpoint version %" PRIu64 " of run %s, %d "
                           "workers",
                           sj->rs.resume, m->version, m->run_id, m->world);
    sj->last = m->version; /* it is on disk already */
    sj->resumed = 1;
    a->version = m->version;
out:
    free(fps);
    rally__snap_close(sn);
    return rc;
}
