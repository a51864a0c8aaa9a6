/*
 * snapshot_jobdir_test.c — a job's directory of snapshots (snapshot_rig.h).
 *
 * Listing: "latest" is the newest run's newest snapshot, never the highest
 * version across runs; retention keeps K of one run and touches nothing
 * else, also when another rank removes one first; a fresh start into a
 * directory with snapshots is refused; the job directory's lock fences an
 * older run's orphans and refuses planted links.
 */
#include "snapshot_rig.h"

/* --- listing, latest, retention --------------------------------------------------------------- */

static void mkdir_p(const char *p)
{
    assert_int_equal(mkdir(p, 0755), 0);
}

static void latest_is_newest_run(void **state)
{
    char root[512], job[600];
    struct rally__err e = {0};
    snprintf(root, sizeof root, "%s/latest", tmp_root);
    snprintf(job, sizeof job, "%s/job", root);
    /* An old run (B) left versions 5..8; a newer run (A) is at version 2. */
    for (uint64_t v = 5; v <= 8; v++) {
        struct spec s = simple(RUN_B, "2026-11-29T08:00:00.000000Z", v);
        assert_int_equal(write_snapshot(root, &s, &e), RALLY_OK);
    }
    for (uint64_t v = 1; v <= 2; v++) {
        struct spec s = simple(RUN_A, "2026-11-30T09:00:00.000000Z", v);
        assert_int_equal(write_snapshot(root, &s, &e), RALLY_OK);
    }
    struct rally__snap_entry *v = NULL;
    size_t n = 0;
    assert_int_equal(rally__snap_list(job, &e, &v, &n), RALLY_OK);
    assert_int_equal(n, 6);
    long at = rally__snap_latest(v, n);
    assert_true(at >= 0);
    assert_int_equal(v[at].version, 2);
    assert_string_equal(v[at].run_id, RUN_A);
    free(v);
    /* A's newer but torn version 3 changes nothing. */
    struct spec s3 = simple(RUN_A, "2026-11-30T09:00:00.000000Z", 3);
    struct rally__snap_manifest m;
    struct rally__snap_file files[8];
    assert_int_equal(write_parts(root, &s3, &m, files, &e), RALLY_OK);
    assert_int_equal(rally__snap_list(job, &e, &v, &n), RALLY_OK);
    at = rally__snap_latest(v, n);
    assert_int_equal(v[at].version, 2);
    assert_int_equal(n, 7);
    assert_int_equal(v[2].version, 3); /* 1 2 3 5 6 7 8 */
    assert_int_equal(v[2].state, RALLY__SNAP_INCOMPLETE);
    assert_string_equal(v[2].run_id, RUN_A); /* attributed from its headers */
    free(v);
    /* what --resume latest takes; any other word is a path */
    char path[700], want[700];
    assert_int_equal(rally__snap_resolve(job, NULL, "latest", &e, path, sizeof path), RALLY_OK);
    snprintf(want, sizeof want, "%s/snap-00000002", job);
    assert_string_equal(path, want);
    assert_int_equal(rally__snap_resolve(job, NULL, "/some/where", &e, path, sizeof path), RALLY_OK);
    assert_string_equal(path, "/some/where");
    char empty[600];
    snprintf(empty, sizeof empty, "%s/empty", root);
    mkdir_p(empty);
    assert_int_equal(rally__snap_resolve(empty, NULL, "latest", &e, path, sizeof path), RALLY_EINVAL);
    assert_non_null(strstr(e.msg, "holds no complete snapshot to resume from (0 incomplete"));
    /* latest-if-any: latest where there is one, else "" (a fresh start),
     * but never for a tier that could not be listed */
    assert_int_equal(rally__snap_resolve(job, NULL, "latest-if-any", &e, path, sizeof path),
                     RALLY_OK);
    assert_string_equal(path, want);
    char gone[600], notdir[600];
    snprintf(gone, sizeof gone, "%s/gone", root);
    assert_int_equal(rally__snap_resolve(empty, gone, "latest-if-any", &e, path, sizeof path),
                     RALLY_OK);
    assert_string_equal(path, "");
    snprintf(notdir, sizeof notdir, "%s/notdir", root);
    FILE *f = fopen(notdir, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(rally__snap_resolve(empty, notdir, "latest-if-any", &e, path, sizeof path),
                     RALLY_EINVAL);
    assert_non_null(strstr(e.msg, "holds no complete snapshot to resume from"));
}

/* Another rank on the same disk (--snapshot-local) removes a snapshot
 * between this rank's listing and its removal: gone is removed, not an
 * error ("cannot open the directory snap-...: No such file or directory"). */
static char race_dir[700];
static int race_unlinkat(int dirfd, const char *name, int flags)
{
    if (race_dir[0] != '\0') { /* the other rank: the whole directory, at once */
        char cmd[800];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", race_dir);
        race_dir[0] = '\0';
        if (system(cmd) != 0)
            return -1;
    }
    return rally__snap_sys_real.unlinkat(dirfd, name, flags);
}

static void retention_races_another_rank(void **state)
{
    (void)state;
    char root[512], job[600];
    struct rally__err e = {0};
    snprintf(root, sizeof root, "%s/race", tmp_root);
    snprintf(job, sizeof job, "%s/job", root);
    for (uint64_t v = 1; v <= 3; v++) {
        struct spec s = simple(RUN_A, "2026-11-30T09:00:00.000000Z", v);
        assert_int_equal(write_snapshot(root, &s, &e), RALLY_OK);
    }
    snprintf(race_dir, sizeof race_dir, "%s/snap-00000002", job);
    rally__snap_sys.unlinkat = race_unlinkat;
    int removed = -1;
    int rc = rally__snap_retain(job, RUN_A, 1, &e, &removed);
    rally__snap_sys = rally__snap_sys_real;
    assert_string_equal(e.msg, "");
    assert_int_equal(rc, RALLY_OK);
    assert_int_equal(removed, 2); /* 2, which the other rank took, and 1 */
    struct rally__snap_entry *v = NULL;
    size_t n = 0;
    assert_int_equal(rally__snap_list(job, &e, &v, &n), RALLY_OK);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].version, 3);
    free(v);
}

static void retention_keeps_k_of_one_run(void **state)
{
    char root[512], job[600], p[800];
    struct rally__err e = {0};
    snprintf(root, sizeof root, "%s/retain", tmp_root);
    snprintf(job, sizeof job, "%s/job", root);
    for (uint64_t v = 1; v <= 5; v++) { /* A: complete 1..5 */
        struct spec s = simple(RUN_A, "2026-11-30T09:00:00.000000Z", v);
        assert_int_equal(write_snapshot(root, &s, &e), RALLY_OK);
    }
    for (uint64_t v = 10; v <= 11; v++) { /* B: complete 10, 11 */
        struct spec s = simple(RUN_B, "2026-11-30T10:00:00.000000Z", v);
        assert_int_equal(write_snapshot(root, &s, &e), RALLY_OK);
    }
    struct rally__snap_manifest m;
    struct rally__snap_file files[8];
    struct spec a6 = simple(RUN_A, "2026-11-30T09:00:00.000000Z", 6); /* A: torn 6 */
    assert_int_equal(write_parts(root, &a6, &m, files, &e), RALLY_OK);
    struct spec b12 = simple(RUN_B, "2026-11-30T10:00:00.000000Z", 12); /* B: torn 12 */
    assert_int_equal(write_parts(root, &b12, &m, files, &e), RALLY_OK);
    snprintf(p, sizeof p, "%s/snap-00000007", job); /* nobody's: empty */
    mkdir_p(p);
    snprintf(p, sizeof p, "%s/snap-00000008", job); /* holds a stranger's file */
    mkdir_p(p);
    snprintf(p, sizeof p, "%s/snap-00000008/notes.txt", job);
    FILE *f = fopen(p, "w");
    fputs("mine\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/README", job); /* an unknown name in the job directory */
    f = fopen(p, "w");
    fputs("hands off\n", f);
    fclose(f);

    int removed = -1;
    assert_int_equal(rally__snap_retain(job, RUN_A, 2, &e, &removed), RALLY_OK);
    assert_int_equal(removed, 5); /* A's 1, 2, 3; A's torn 6; nobody's 7 */
    struct rally__snap_entry *v = NULL;
    size_t n = 0;
    assert_int_equal(rally__snap_list(job, &e, &v, &n), RALLY_OK);
    const uint64_t want[] = {4, 5, 8, 10, 11, 12};
    assert_int_equal(n, 6);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(v[i].version, want[i]);
    free(v);
    assert_int_equal(access(p, F_OK), 0);
    snprintf(p, sizeof p, "%s/snap-00000008/notes.txt", job);
    assert_int_equal(access(p, F_OK), 0);
    /* rm refuses the directory with a stranger's file */
    assert_int_equal(rally__snap_remove(job, "snap-00000008", &e), RALLY_EINVAL);
    assert_non_null(strstr(e.msg, "notes.txt"));
    rally__err_clear(&e);
    assert_int_equal(rally__snap_retain(job, RUN_A, -1, &e, NULL), RALLY_EINVAL);
    /* keep 0: a successful run cleans up after itself, and only itself */
    assert_int_equal(rally__snap_retain(job, RUN_A, 0, &e, &removed), RALLY_OK);
    assert_int_equal(removed, 2);
    assert_int_equal(rally__snap_list(job, &e, &v, &n), RALLY_OK);
    const uint64_t left[] = {8, 10, 11, 12};
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(v[i].version, left[i]);
    free(v);
}

/* The RFC's trap: a new run into a directory with snapshots is refused,
 * naming them; an empty or missing job directory is fine. */
static void fresh_start_refused(void **state)
{
    char root[512], job[600];
    struct rally__err e = {0};
    snprintf(root, sizeof root, "%s/fresh", tmp_root);
    snprintf(job, sizeof job, "%s/job", root);
    assert_int_equal(rally__snap_check_fresh(job, "--resume latest", "--overwrite", &e),
                     RALLY_OK); /* not there yet */
    struct spec s = simple(RUN_A, "2026-11-30T09:00:00.000000Z", 8);
    assert_int_equal(write_snapshot(root, &s, &e), RALLY_OK);
    struct rally__snap_manifest m;
    struct rally__snap_file files[8];
    struct spec s9 = simple(RUN_A, "2026-11-30T09:00:00.000000Z", 9);
    assert_int_equal(write_parts(root, &s9, &m, files, &e), RALLY_OK);
    assert_int_equal(rally__snap_check_fresh(job, "--resume latest", "--overwrite", &e),
                     RALLY_EINVAL);
    assert_non_null(strstr(e.msg, "already holds 2 snapshots: snap-00000008 (complete), "
                                  "snap-00000009 (incomplete); continue it with --resume"));
    char other[600];
    snprintf(other, sizeof other, "%s/other", root);
    mkdir_p(other);
    rally__err_clear(&e);
    assert_int_equal(rally__snap_check_fresh(other, "--resume latest", "--overwrite", &e),
                     RALLY_OK);
}

/* One run owns the job directory; an orphan of another run can neither
 * write, commit nor clean up there, and the lock dies with its holder. */
static void lock_fences_orphans(void **state)
{
    char root[512], job[600];
    struct rally__err e = {0};
    struct rally__snap_lock *a = NULL, *b = NULL;
    snprintf(root, sizeof root, "%s/lock", tmp_root);
    snprintf(job, sizeof job, "%s/job", root);
    struct spec s1 = simple(RUN_A, "2026-11-30T09:00:00.000000Z", 1);
    assert_int_equal(rally__snap_lock_take(root, "job", RUN_A, &e, &a), RALLY_OK);
    assert_int_equal(write_snapshot(root, &s1, &e), RALLY_OK);
    /* a second holder is refused, naming the first */
    assert_int_equal(rally__snap_lock_take(root, "job", RUN_B, &e, &b), RALLY_EPEER);
    assert_non_null(strstr(e.msg, "is in use by run " RUN_A));
    /* A's parts of version 2 are written; then A's launcher dies (its lock
     * goes) and run B takes the job over */
    struct spec s2 = simple(RUN_A, "2026-11-30T09:00:00.000000Z", 2);
    struct rally__snap_manifest m;
    struct rally__snap_file files[8];
    assert_int_equal(write_parts(root, &s2, &m, files, &e), RALLY_OK);
    rally__snap_lock_release(a);
    rally__err_clear(&e);
    assert_int_equal(rally__snap_lock_take(root, "job", RUN_B, &e, &b), RALLY_OK);
    /* A's orphan: its commit, its next part and its clean-up are refused */
    assert_int_equal(rally__snap_commit(root, &m, &e, NULL, 0), RALLY_EPEER);
    assert_non_null(strstr(e.msg, "belongs to run " RUN_B " now, this is run " RUN_A));
    struct rally__snap_target t = {root, "job", RUN_A, 3, 2, NULL};
    struct rally__snap_file f;
    rally__err_clear(&e);
    assert_int_equal(rally__snap_write_part(&t, -1, "x", 1, &e, &f), RALLY_EPEER);
    rally__err_clear(&e);
    assert_int_equal(rally__snap_retain(job, RUN_A, 1, &e, NULL), RALLY_EPEER);
    /* B works as usual */
    struct spec b3 = simple(RUN_B, "2026-11-30T10:00:00.000000Z", 3);
    rally__err_clear(&e);
    assert_int_equal(write_snapshot(root, &b3, &e), RALLY_OK);
    assert_int_equal(loads(root, "job", 3, &e), RALLY_OK);
    assert_int_not_equal(loads(root, "job", 2, &e), RALLY_OK);
    rally__snap_lock_release(b);
    rally__snap_lock_release(NULL);

    /* kill -9 of the holder frees the lock */
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    if (pid == 0) {
        struct rally__err ce = {0};
        struct rally__snap_lock *c = NULL;
        char ok = rally__snap_lock_take(root, "job", RUN_A, &ce, &c) == RALLY_OK ? 'y' : 'n';
        if (write(ready[1], &ok, 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char ok = 0;
    assert_int_equal(read(ready[0], &ok, 1), 1);
    assert_int_equal(ok, 'y');
    rally__err_clear(&e);
    assert_int_equal(rally__snap_lock_take(root, "job", RUN_B, &e, &b), RALLY_EPEER);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_int_equal(rally__snap_lock_take(root, "job", RUN_B, &e, &b), RALLY_OK);
    rally__snap_lock_release(b);
    close(ready[0]);
    close(ready[1]);
}

/* A .lock planted as a hard link to another file of the user, or as a
 * symbolic link to it: the lock is refused with a sentence saying what to
 * remove, and the other file keeps its bytes (it was once truncated and
 * overwritten with the run id). */
static void lock_refuses_planted_links(void **state)
{
    (void)state;
    char root[512], job[600], lock[640], victim[600];
    struct rally__err e = {0};
    struct rally__snap_lock *l = NULL;
    snprintf(root, sizeof root, "%s/planted", tmp_root);
    snprintf(job, sizeof job, "%s/job", root);
    snprintf(lock, sizeof lock, "%s/.lock", job);
    snprintf(victim, sizeof victim, "%s/precious.txt", root);
    mkdir_p(root);
    mkdir_p(job);
    const char bytes[] = "precious bytes that are not a lock\n";
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    assert_int_equal(fputs(bytes, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    for (int kind = 0; kind < 2; kind++) {
        assert_int_equal(kind == 0 ? link(victim, lock) : symlink(victim, lock), 0);
        rally__err_clear(&e);
        assert_int_equal(rally__snap_lock_take(root, "job", RUN_A, &e, &l), RALLY_EPROTO);
        assert_null(l);
        const char *want = kind == 0 ? "has 2 hard links" : "is a symbolic link";
        if (strstr(e.msg, want) == NULL || strstr(e.msg, lock) == NULL ||
            strstr(e.msg, "remove it") == NULL)
            fail_msg("got \"%s\", want it to name %s, say \"%s\" and what to do", e.msg, lock,
                     want);
        char got[128] = "";
        f = fopen(victim, "r");
        assert_non_null(f);
        size_t n = fread(got, 1, sizeof got - 1, f);
        fclose(f);
        got[n] = '\0';
        assert_string_equal(got, bytes);
        assert_int_equal(unlink(lock), 0);
    }
    /* removed as the sentence says, the lock is taken */
    rally__err_clear(&e);
    assert_int_equal(rally__snap_lock_take(root, "job", RUN_A, &e, &l), RALLY_OK);
    rally__snap_lock_release(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(latest_is_newest_run, setup, teardown),
        cmocka_unit_test_setup_teardown(retention_keeps_k_of_one_run, setup, teardown),
        cmocka_unit_test_setup_teardown(retention_races_another_rank, setup, teardown),
        cmocka_unit_test_setup_teardown(fresh_start_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(lock_fences_orphans, setup, teardown),
        cmocka_unit_test_setup_teardown(lock_refuses_planted_links, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
