/*
 * tier2.c — the second tier (rally_snapshot_copy), the snapshot layer's
 * part that copies each reported snapshot there.  Once a snapshot is reported,
 * every rank hands the files it wrote to its own copier, which copies them
 * from its own first tier (a directory private to its host will do) and
 * verifies them there.  At each checkpoint every rank raises, in the
 * request bits, COPY_OUT and whether its files are still being copied or
 * could not be.  The commit whose agreed flags carry COPY_OUT alone tells every
 * rank that all files are there: rank 0's copier commits the copy (the
 * manifest, last).  One copy is outstanding at a time; the newest snapshot
 * reported meanwhile waits and is copied next (so copies keep pace with
 * the copier, not with the snapshots).  In finalize every rank drains its
 * copier and an agreement settles the copy outstanding (a second one the
 * copy that waited).  A restarted worker served COPY_OUT with the copy
 * still busy, or with COPY_NEXT (the copy that waited starts), lost its
 * files of that copy: it raises COPY_LOST, which voids it.  Rank 0
 * tells observers what became of each copy (rally__snapjob_tell, tier
 * "copy"): committed, given up, or void because a rank's files are not
 * there.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapjob/snapjob.h"

/* finalize's copy word only: a newer copy waits for the one outstanding */
#define COPY_NEXT (UINT64_C(1) << 63)

#define NONE RALLY__SNAP_NONE
#define UNKNOWN RALLY__SNAP_UNKNOWN
#define E (&rally__engine)

static void copy_submit(struct rally__snapjob *sj, uint64_t v, const struct rally__snap_file *f,
                        int n);
static void man_take(struct rally__snapjob *sj);

void rally__snapjob_tier2_init(struct rally__snapjob *sj)
{
    sj->t2.copy_v = sj->t2.copy_void = sj->t2.next_v = NONE;
    sj->t2.man_v[0] = sj->t2.man_v[1] = NONE;
}

int rally__snapjob_tier2_open(struct rally__snapjob *sj)
{
    const struct rally__config *c = sj->cfg;
    if (rally__snap_absolute(c->snapshot_dir, 0, sj->t2.src, sizeof sj->t2.src, sj->err) !=
            RALLY_OK ||
        rally__snap_copier_start(c->snapshot_copy, (int)c->snapshot_keep, sj->err,
                                 &sj->t2.copier) != RALLY_OK)
        return sj->err->code;
    return RALLY_OK;
}

void rally__snapjob_tier2_free(struct rally__snapjob *sj)
{
    rally__snap_copier_stop(sj->t2.copier);
    free(sj->t2.man[0]);
    free(sj->t2.man[1]);
}

int rally__snapjob_copy_manifest(struct rally__snapjob *sj, const struct rally__snap_manifest *m,
                                 uint64_t version, struct rally__err *e)
{
    free(sj->t2.man[1]);
    sj->t2.man[1] = NULL;
    sj->t2.man_v[1] = NONE;
    int rc = rally__snap_manifest_encode(m, e, &sj->t2.man[1], &sj->t2.man_n[1]);
    if (rc == RALLY_OK)
        sj->t2.man_v[1] = version;
    return rc;
}

/* Rank 0: the first tier's retention leaves the snapshot being copied in
 * place, however many newer ones it keeps meanwhile (every rank copies its
 * files from there); it goes at the first commit after its copy settled. */
static void spare(struct rally__snapjob *sj)
{
    if (sj->cbg != NULL)
        rally__snap_bg_spare(sj->cbg, sj->t2.copy_v == UNKNOWN ? NONE : sj->t2.copy_v);
}

/* Rank 0 says, and tells the observers, why version v was not copied. */
static void not_copied(struct rally__snapjob *sj, uint64_t v, const char *why, const char *then)
{
    if (sj->rank != 0)
        return;
    rally__snapjob_say(sj, "version %" PRIu64 " not copied to %s: %s%s", v, sj->cfg->snapshot_copy,
                       why, then);
    rally__snapjob_tell(sj, RALLY__TIER_COPY, 0, v, 0, why);
}

/* What the agreed copy bits mean for the copy outstanding: every rank's
 * files there (rank 0 commits it), one that could not, or still busy. */
void rally__snapjob_copy_agreed(struct rally__snapjob *sj, uint64_t flags)
{
    if (!(flags & RALLY__REQ_COPY_OUT))
        return;
    if (flags & RALLY__REQ_COPY_BUSY) {
        if (sj->t2.copy_v == NONE) /* a restarted worker: its predecessor's copy is lost */
            sj->t2.copy_v = UNKNOWN;
        return;
    }
    uint64_t v = sj->t2.copy_v;
    sj->t2.copy_v = NONE;
    struct rally__err e = {0, ""};
    if (v == NONE || v == UNKNOWN) {
        /* a restarted worker, served a settled copy */
    } else if (flags & RALLY__REQ_COPY_FAILED) {
        not_copied(sj, v, "a rank could not copy its files (its log says why)", "");
        sj->t2.copy_void = v;
    } else if (flags & RALLY__REQ_COPY_LOST) { /* void, but the tier took what it was given */
        not_copied(sj, v, "a rank was restarted while it copied its files",
                   "; the next snapshot reported is copied");
    } else {
        if (sj->rank == 0 && sj->t2.man_v[0] == v &&
            rally__snap_copier_commit(sj->t2.copier, sj->t2.man[0], sj->t2.man_n[0], v, &e) !=
                RALLY_OK) {
            rally__snapjob_say(sj, "version %" PRIu64 " not copied: %s", v, e.msg);
            rally__snapjob_tell(sj, RALLY__TIER_COPY, 0, v, 0, e.msg);
        }
        if (sj->cfg->snapshot_local) { /* its files of older ones are of no use now */
            char jobdir[PATH_MAX + RALLY__SNAP_JOB_MAX + 2];
            snprintf(jobdir, sizeof jobdir, "%s/%s", sj->t2.src, sj->job);
            rally__snap_copier_prune(sj->t2.copier, jobdir, sj->run_id, v);
        }
    }
    if (sj->t2.next_v != NONE) { /* the newest reported one waited for this one */
        man_take(sj);
        copy_submit(sj, sj->t2.next_v, sj->t2.next_f, sj->t2.next_n);
        sj->t2.next_v = NONE;
    } else if (flags & RALLY__REQ_COPY_NEXT) {
        /* a restarted worker: one waited (reported before its death), the
         * other ranks copy it now, and its predecessor's files of it are
         * lost */
        sj->t2.copy_v = UNKNOWN;
    }
    spare(sj);
}

/* What the copier did since the last look, said; with
 * rally_snapshot_required a copy that failed fails the job: on every rank
 * one the flags said failed, on rank 0 a commit given up. */
int rally__snapjob_copies(struct rally__snapjob *sj)
{
    char line[RALLY__ERR_MSG_MAX + 300];
    if (sj->t2.copier == NULL)
        return RALLY_OK;
    while (rally__snap_copier_said(sj->t2.copier, line, sizeof line))
        rally__snapjob_say(sj, "%s", line);
    int ok;
    uint64_t cv, nbytes;
    if (rally__snap_copier_outcome(sj->t2.copier, &ok, &cv, &nbytes, line, sizeof line))
        rally__snapjob_tell(sj, RALLY__TIER_COPY, ok, cv, nbytes, line);
    uint64_t v = sj->t2.copy_void;
    sj->t2.copy_void = NONE;
    if (v != NONE && sj->cfg->snapshot_required) {
        snprintf(line, sizeof line,
                 "could not copy version %" PRIu64 " to %s: a rank could not copy its files (its "
                 "log says why)",
                 v, sj->cfg->snapshot_copy);
        if (sj->rank == 0)
            rally__snapjob_say(sj, "rally_snapshot_required: the job fails: %s", line);
        return rally__fail(sj->err, RALLY_ESYS, "rally_snapshot_required: %s", line);
    }
    if (!rally__snap_copier_gave_up(sj->t2.copier, line, sizeof line) ||
        !sj->cfg->snapshot_required)
        return RALLY_OK;
    /* said here too: in rally_finalize the application may not say it */
    rally__snapjob_say(sj, "rally_snapshot_required: the job fails: %s", line);
    return rally__fail(sj->err, RALLY_ESYS, "rally_snapshot_required: %s", line);
}

/* Rank 0: the manifest waiting (slot 1, made at its report) becomes the
 * copy outstanding's (slot 0). */
static void man_take(struct rally__snapjob *sj)
{
    free(sj->t2.man[0]);
    sj->t2.man[0] = sj->t2.man[1];
    sj->t2.man_n[0] = sj->t2.man_n[1];
    sj->t2.man_v[0] = sj->t2.man_v[1];
    sj->t2.man[1] = NULL;
    sj->t2.man_v[1] = NONE;
}

/* This rank's files of version v to its copier: the copy outstanding. */
static void copy_submit(struct rally__snapjob *sj, uint64_t v, const struct rally__snap_file *f,
                        int n)
{
    struct rally__err e = {0, ""};
    struct rally__snap_target t = {NULL, sj->job, sj->run_id, v, sj->world, NULL};
    sj->t2.copy_v = v;
    sj->t2.copy_n = n;
    sj->t2.copy_said = 0;
    spare(sj);
    if (n > 0 && rally__snap_copier_submit(sj->t2.copier, sj->t2.src, &t, f, n, &e) != RALLY_OK) {
        rally__snapjob_say(sj, "could not copy its files of version %" PRIu64 ": %s", v, e.msg);
        sj->t2.copy_said = 1;
        sj->t2.copy_n = -1;
    }
}

/* The snapshot of version v is reported: this rank's files of it are
 * copied now, or once the copy outstanding is settled (the newest
 * reported one waits; every rank knows alike which). */
void rally__snapjob_copy_start(struct rally__snapjob *sj, uint64_t v)
{
    struct rally__snap_file *f = sj->t2.next_f;
    int n = 0;
    if (sj->rank == 0) {
        rally__snap_file_name(-1, f[n].name);
        f[n].nbytes = sj->files[2];
        f[n++].xxh3 = sj->files[3];
    }
    if (E->has_local(sj->en)) {
        rally__snap_file_name(sj->rank, f[n].name);
        f[n].nbytes = sj->files[0];
        f[n++].xxh3 = sj->files[1];
    }
    sj->t2.next_n = n;
    sj->t2.next_v = v;
    if (sj->t2.copy_v == NONE) {
        sj->t2.next_v = NONE;
        man_take(sj);
        copy_submit(sj, v, f, n);
    }
}

/* This rank's word on the copy outstanding, in the next commit's request
 * bits (a word of the same bits for the agreement in finalize). */
uint64_t rally__snapjob_copy_bits(struct rally__snapjob *sj)
{
    if (sj->t2.copier == NULL || sj->t2.copy_v == NONE)
        return 0;
    uint64_t next = sj->t2.next_v != NONE ? RALLY__REQ_COPY_NEXT : 0;
    int st = RALLY__SNAP_COPY_FAILED;
    uint64_t bad = RALLY__REQ_COPY_LOST; /* not the tier's failure */
    const char *why = "this worker was restarted while its files were being copied";
    if (sj->t2.copy_v != UNKNOWN && sj->t2.copy_n >= 0) {
        bad = RALLY__REQ_COPY_FAILED;
        st = sj->t2.copy_n > 0 ? rally__snap_copier_state(sj->t2.copier, sj->t2.copy_v)
                            : RALLY__SNAP_COPY_OK;
        why = "its copier could not copy them (said above)";
        if (sj->rank == 0 && sj->t2.man_v[0] != sj->t2.copy_v) {
            st = RALLY__SNAP_COPY_FAILED;
            why = "its manifest could not be made (said above)";
        }
    }
    if (st == RALLY__SNAP_COPY_BUSY)
        return RALLY__REQ_COPY_OUT | RALLY__REQ_COPY_BUSY | next;
    if (st == RALLY__SNAP_COPY_OK)
        return RALLY__REQ_COPY_OUT | next;
    if (!sj->t2.copy_said) {
        sj->t2.copy_said = 1;
        rally__snapjob_say(sj, "its files of the copy to %s are not there: %s",
                           sj->cfg->snapshot_copy, why);
    }
    return RALLY__REQ_COPY_OUT | bad | next;
}

/* Finalize: this rank's files copied (drained), an agreement settles the
 * copy outstanding; a second one the copy that waited for it (when the
 * agreed word says one did); rank 0's commit done; what happened said. */
int rally__snapjob_copy_last(struct rally__snapjob *sj)
{
    for (int round = 0; round < 2; round++) {
        rally__snap_copier_drain(sj->t2.copier);
        uint64_t w = rally__snapjob_copy_bits(sj) | (sj->t2.next_v != NONE ? COPY_NEXT : 0);
        int rc = E->agree(sj->en, &w, 1);
        if (rc != RALLY_OK)
            return rc;
        rally__snapjob_copy_agreed(sj, w);
        if (!(w & COPY_NEXT))
            break;
    }
    rally__snap_copier_drain(sj->t2.copier);
    if (sj->rank == 0 && sj->cbg != NULL && !sj->cfg->snapshot_local) {
        /* every copy settled: a snapshot retention spared for its copy goes */
        char jobdir[PATH_MAX + RALLY__SNAP_JOB_MAX + 2];
        struct rally__err re = {0, ""};
        snprintf(jobdir, sizeof jobdir, "%s/%s", sj->t2.src, sj->job);
        if (rally__snap_retain(jobdir, sj->run_id, (int)sj->cfg->snapshot_keep, &re, NULL) !=
            RALLY_OK)
            rally__snapjob_say(sj, "retention failed (the snapshots stay): %s", re.msg);
    }
    return rally__snapjob_copies(sj);
}

void rally__snapjob_copy_resized(struct rally__snapjob *sj, uint64_t v, int world)
{
    if (sj->t2.copier == NULL)
        return;
    if (sj->rank == 0 && sj->t2.copy_v < UNKNOWN)
        rally__snapjob_say(sj,
                           "version %" PRIu64 " not copied to %s: the job went on with %d "
                           "workers from version %" PRIu64 " before every rank copied its files",
                           sj->t2.copy_v, sj->cfg->snapshot_copy, world, v);
    /* the copiers may still be at the old world's files: harmless, they are
     * never committed; the copy of the next reported snapshot starts anew */
    sj->t2.copy_v = sj->t2.next_v = NONE;
    for (int i = 0; i < 2; i++) {
        free(sj->t2.man[i]);
        sj->t2.man[i] = NULL;
        sj->t2.man_v[i] = NONE;
    }
    spare(sj);
}

