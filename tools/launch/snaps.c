/*
 * snaps.c — a run's durable snapshots as rally-run owns them (snaps.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snaps.h"

/* The program a command runs: for a Python interpreter its script
 * ("python3 -u train.py": train.py) or module ("python3 -m pkg.train"), so
 * that two scripts do not share one job directory; else argv[0]. */
static const char *program_of(char **argv)
{
    const char *b = strrchr(argv[0], '/');
    if (strncmp(b ? b + 1 : argv[0], "python", 6) != 0)
        return argv[0];
    for (int i = 1; argv[i] != NULL; i++) {
        if (strcmp(argv[i], "-m") == 0)
            return argv[i + 1] ? argv[i + 1] : argv[0];
        if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "-") == 0)
            return argv[0];
        if (argv[i][0] != '-')
            return argv[i];
        if ((strcmp(argv[i], "-W") == 0 || strcmp(argv[i], "-X") == 0) && argv[i + 1])
            i++; /* an option with its value */
    }
    return argv[0];
}

/* The job's name: --job, or the program's file name made safe. */
static int job_name(struct rally__launch_snaps *s, char **argv)
{
    const char *p = s->job_opt;
    if (p == NULL) {
        rally__snap_job_from(program_of(argv), s->job);
        return 0;
    }
    if (!rally__snap_job_ok(p)) {
        fprintf(stderr,
                "rally-run: --job %s is not a job name (1 to %d bytes of A-Z a-z 0-9 . _ -, "
                "not starting with '.')\n",
                p, RALLY__SNAP_JOB_MAX);
        return 2;
    }
    memcpy(s->job, p, strlen(p) + 1);
    return 0;
}

/* The run's UUID, start time, job name and the settings' strings; 0 or the
 * exit status. */
static int names(struct rally__launch_snaps *s, char **argv, int dry_run)
{
    struct rally__err e = {0, ""};
    if (rally__snap_uuid(s->run_id, &e) != RALLY_OK) {
        fprintf(stderr, "rally-run: %s\n", e.msg);
        return 1;
    }
    rally__snap_now(s->run_started);
    snprintf(s->every_s, sizeof s->every_s, "%lld", (long long)s->every);
    snprintf(s->every_ms_s, sizeof s->every_ms_s, "%lld", (long long)s->every_ms);
    snprintf(s->keep_s, sizeof s->keep_s, "%lld", (long long)s->keep);
    if (dry_run && s->dir != NULL && realpath(s->dir, s->abs) == NULL)
        snprintf(s->abs, sizeof s->abs, "%s", s->dir);
    return job_name(s, argv);
}

int rally__launch_snaps_setup(struct rally__launch_snaps *s, char **argv, int world, int dry_run)
{
    struct rally__err e = {0, ""};
    int st = names(s, argv, dry_run);
    if (st != 0 || dry_run)
        return st;
    if (s->dir != NULL) {
        if (rally__snap_lock_take(s->dir, s->job, s->run_id, &e, &s->lock) != RALLY_OK) {
            fprintf(stderr, "rally-run: %s\n", e.msg);
            return 1;
        }
        /* the workers may run elsewhere in the file system's view: an absolute path */
        if (realpath(s->dir, s->abs) == NULL) {
            fprintf(stderr, "rally-run: %s: %s\n", s->dir, strerror(errno));
            return 1;
        }
        snprintf(s->jobdir, sizeof s->jobdir, "%s/%s", s->abs, s->job);
        if (s->copy != NULL) {
            if (rally__snap_absolute(s->copy, 0, s->copy_abs, sizeof s->copy_abs, &e) != RALLY_OK) {
                fprintf(stderr, "rally-run: --snapshot-copy %s\n", e.msg);
                return 1;
            }
            snprintf(s->copy_jobdir, sizeof s->copy_jobdir, "%s/%s", s->copy_abs, s->job);
            /* wrong credentials or a missing bucket: said now, not found
             * out by every copy of the run */
            if (rally__snap_probe(s->copy_abs, s->run_id, &e) != RALLY_OK) {
                fprintf(stderr, "rally-run: --snapshot-copy %s cannot take a write: %s\n",
                        s->copy, e.msg);
                return 1;
            }
        }
        if (s->resume == NULL && !s->overwrite &&
            rally__snap_check_fresh_tiers(s->jobdir, s->copy_jobdir, "--resume latest",
                                          "--overwrite", &e) != RALLY_OK) {
            fprintf(stderr, "rally-run: %s\n", e.msg);
            return 1;
        }
    }
    if (s->resume == NULL)
        return 0;
    char path[PATH_MAX];
    const char *copydir = s->copy_jobdir[0] ? s->copy_jobdir : NULL;
    if (rally__snap_resolve(s->jobdir, copydir, s->resume, &e, path, sizeof path) != RALLY_OK) {
        fprintf(stderr, "rally-run: --resume %s: %s\n", s->resume, e.msg);
        return 1;
    }
    if (path[0] == '\0') { /* latest-if-any, and none: incomplete leftovers are written over */
        if (copydir != NULL)
            fprintf(stderr,
                    "rally-run: --resume %s: neither %s nor %s holds a complete snapshot: a "
                    "fresh start\n",
                    s->resume, s->jobdir, copydir);
        else
            fprintf(stderr, "rally-run: --resume %s: %s holds no complete snapshot: a fresh start\n",
                    s->resume, s->jobdir);
        return 0;
    }
    struct rally__snap *sn = NULL;
    if (rally__snap_open(path, &e, &sn) != RALLY_OK) {
        char older[PATH_MAX];
        uint64_t v = 0;
        fprintf(stderr, "rally-run: --resume %s: %s\n", path, e.msg);
        if ((strcmp(s->resume, "latest") == 0 || strcmp(s->resume, RALLY__SNAP_IF_ANY) == 0) &&
            rally__snap_older(s->jobdir, copydir, path, older, sizeof older, &v))
            fprintf(stderr,
                    "rally-run: the newest snapshot before it that verifies is %s (checkpoint "
                    "version %llu): --resume %s takes it\n",
                    older, (unsigned long long)v, older);
        return 1;
    }
    const struct rally__snap_manifest *m = rally__snap_manifest(sn);
    struct rally__snap_expect x = {world, NULL, NULL, NULL, NULL, NULL, -1};
    char note[512];
    int rc = rally__snap_compatible(m, &x, s->force, &e, note, sizeof note);
    if (rc == RALLY_OK)
        rc = rally__snap_absolute(path, 1, s->resume_path, sizeof s->resume_path, &e);
    if (rc == RALLY_OK) {
        int second = copydir != NULL && strncmp(path, copydir, strlen(copydir)) == 0;
        fprintf(stderr,
                "rally-run: resuming from %s%s: checkpoint version %llu of run %s (%d workers, "
                "verified)\n",
                s->resume_path, second ? " (the second tier, --snapshot-copy)" : "",
                (unsigned long long)m->version, m->run_id, m->world);
        if (note[0])
            fprintf(stderr, "rally-run: note: %s\n", note);
    } else {
        fprintf(stderr, "rally-run: --resume %s: %s\n", path, e.msg);
    }
    rally__snap_close(sn);
    return rc == RALLY_OK ? 0 : 1;
}

/* Where a snapshot is committed: the first tier, or with --snapshot-local
 * (no host holds a whole one) the second. */
static const char *committed_in(const struct rally__launch_snaps *s)
{
    return s->local ? s->copy_jobdir : s->jobdir;
}

void rally__launch_snaps_cleanup(struct rally__launch_snaps *s, int status)
{
    if (s->lock == NULL || s->jobdir[0] == '\0')
        return;
    struct rally__err e = {0, ""};
    struct rally__snap_entry *v = NULL;
    size_t n = 0;
    if (status == 0 && !s->keep_all && !s->final) {
        char say[RALLY__ERR_MSG_MAX + 64];
        rally__snap_clean_run(s->jobdir, s->run_id, "--keep-snapshots", say, sizeof say);
        if (say[0])
            fprintf(stderr, "rally-run: %s\n", say);
        if (s->copy_jobdir[0]) { /* retention is per tier, and so is the clean-up */
            rally__snap_clean_run(s->copy_jobdir, s->run_id, "--keep-snapshots", say, sizeof say);
            if (say[0])
                fprintf(stderr, "rally-run: %s: %s\n", s->copy_abs, say);
        }
        return;
    }
    if (rally__snap_list(committed_in(s), &e, &v, &n) != RALLY_OK)
        return;
    long i = rally__snap_latest(v, n);
    if (i >= 0 && strcmp(v[i].run_id, s->run_id) == 0)
        fprintf(stderr, "rally-run: newest snapshot: %s/%s (checkpoint version %llu)\n",
                committed_in(s), v[i].name, (unsigned long long)v[i].version);
    free(v);
}

int rally__launch_snaps_auto(struct rally__launch_snaps *s, int attempt, int max)
{
    struct rally__err e = {0, ""};
    char path[PATH_MAX] = "";
    const char *tiers[2] = {s->jobdir, s->copy_jobdir[0] ? s->copy_jobdir : NULL};
    /* this run's newest complete snapshot: here, else on the second tier */
    for (int t = 0; t < 2 && tiers[t] != NULL && !path[0]; t++) {
        struct rally__snap_entry *v = NULL;
        size_t n = 0;
        rally__err_clear(&e);
        if (rally__snap_list(tiers[t], &e, &v, &n) != RALLY_OK) {
            fprintf(stderr, "rally-run: auto-resume: %s\n", e.msg);
            continue;
        }
        for (size_t i = n; i-- > 0 && !path[0];)
            if (v[i].state == RALLY__SNAP_COMPLETE && strcmp(v[i].run_id, s->run_id) == 0 &&
                (size_t)snprintf(path, sizeof path, "%s/%s", tiers[t], v[i].name) >= sizeof path)
                path[0] = '\0';
        free(v);
    }
    if (!path[0] && s->resume_path[0])
        snprintf(path, sizeof path, "%s", s->resume_path);
    if (!path[0]) {
        fprintf(stderr, "rally-run: auto-resume: this run committed no snapshot yet; the job "
                        "cannot be restarted\n");
        return 0;
    }
    struct rally__snap *sn = NULL;
    if (rally__snap_open(path, &e, &sn) != RALLY_OK) {
        fprintf(stderr, "rally-run: auto-resume: %s\n", e.msg);
        return 0;
    }
    fprintf(stderr,
            "rally-run: auto-resume: restarting the whole job from %s (checkpoint version %llu, "
            "verified; job restart %d of %d)\n",
            path, (unsigned long long)rally__snap_manifest(sn)->version, attempt, max);
    rally__snap_close(sn);
    memcpy(s->resume_path, path, sizeof path);
    return 1;
}

void rally__launch_snaps_preempt(struct rally__launch_snaps *s, int64_t now, int64_t grace_ms)
{
    struct rally__err e = {0, ""};
    char name[RALLY__SNAP_NAME_MAX];
    if (rally__snap_newer(committed_in(s), s->run_id, UINT64_MAX, &s->preempt_top, name, &e) < 0)
        s->preempt_top = 0; /* no job directory yet */
    s->preempting = 1;
    s->preempt_look = now;
    s->preempt_until = now + grace_ms;
}

int rally__launch_snaps_preempted(struct rally__launch_snaps *s, int64_t now, char *path,
                                  size_t cap)
{
    if (now < s->preempt_look)
        return 0;
    s->preempt_look = now + 20;
    struct rally__err e = {0, ""};
    char name[RALLY__SNAP_NAME_MAX];
    uint64_t top = 0;
    if (rally__snap_newer(committed_in(s), s->run_id, s->preempt_top, &top, name, &e) > 0) {
        snprintf(path, cap, "%s/%s", committed_in(s), name);
        s->preempting = 0;
        return 1;
    }
    if (now < s->preempt_until)
        return 0;
    s->preempting = 0;
    return -1;
}

void rally__launch_snaps_free(struct rally__launch_snaps *s)
{
    rally__snap_lock_release(s->lock);
    s->lock = NULL;
}
