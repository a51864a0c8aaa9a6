/*
 * snapshot_reader_test.c — what a reader of a snapshot sees (snapshot_rig.h).
 *
 * Resuming: a job that differs from the snapshot is refused, naming both
 * values, unless forced where that is safe.  The public reader
 * (rally/snapshot.h) lists, opens, reads and verifies.
 */
#include "snapshot_rig.h"

/* --- resuming: compatibility --------------------------------------------------------------- */

struct compat_case {
    const char *name;
    int world, force;
    const char *app_name, *app_config, *partitioning;
    int fp_changed;
    int global_only;
    const char *want; /* "" for OK; else in the error; "note:" prefix for a note */
    int records;      /* the snapshot's local models are records, and the job's */
};

static const struct compat_case COMPAT_CASES[] = {
    {"same", 2, 0, "golden", "--k 3 --iters 20", "hash", 0, 0, "", 0},
    {"unchecked_fields", 2, 0, NULL, NULL, NULL, 0, 0, "", 0},
    {"world_with_locals", 3, 0, NULL, NULL, NULL, 0, 0,
     "taken by 2 workers and holds a local model per rank; this job has 3 workers", 0},
    {"world_with_locals_forced", 3, 1, NULL, NULL, NULL, 0, 0, "cannot be redistributed", 0},
    {"app_name", 2, 0, "other", NULL, NULL, 0, 0, "application \"golden\", this job is \"other\"", 0},
    {"app_config", 2, 0, NULL, "--k 4 --iters 20", NULL, 0, 0,
     "configuration is \"--k 3 --iters 20\" (xxh3-64 58eaae854f74840f), this job's is \"--k 4", 0},
    {"app_config_forced", 2, 1, "other", "--k 4", "range", 1, 0, "", 0},
    {"partitioning", 2, 0, NULL, NULL, "range", 0, 0, "by \"hash\", this job's by \"range\"", 0},
    {"fingerprint", 2, 0, NULL, NULL, NULL, 1, 0,
     "rank 1's input fingerprint was fedcba9876543210 in the snapshot and is 1111111111111111", 0},
    {"global_only_other_world", 5, 0, NULL, NULL, NULL, 1, 1, "note:not bit-identical", 0},
    /* records move whole to the rank owning their id: no claim of other bits */
    {"records_other_world", 5, 0, NULL, NULL, NULL, 1, 0,
     "note:resuming the records of 2 workers on 5: each record goes to the rank that owns its id",
     1},
};

static void resume_compatibility(void **state)
{
    char p[512];
    struct rally__err e = {0};
    struct rally__snap_manifest *m = NULL;
    snap_path(p, sizeof p, golden_dir, "demo", 7);
    assert_int_equal(rally__snap_read_manifest(p, &e, &m), RALLY_OK);
    char *fps[] = {"0123456789abcdef", "fedcba9876543210", "", "", ""};
    char *fps_changed[] = {"0123456789abcdef", "1111111111111111", "", "", ""};
    for (size_t i = 0; i < sizeof COMPAT_CASES / sizeof COMPAT_CASES[0]; i++) {
        const struct compat_case *c = &COMPAT_CASES[i];
        struct rally__snap_expect x = {c->world, c->app_name, c->app_config, c->partitioning,
                                       c->fp_changed ? fps_changed : fps, NULL, c->records};
        size_t nfiles = m->nfiles;
        int records = m->records;
        m->records = c->records;
        if (c->global_only)
            m->nfiles = 1;
        char note[256] = "x";
        rally__err_clear(&e);
        int rc = rally__snap_compatible(m, &x, c->force, &e, note, sizeof note);
        m->nfiles = nfiles;
        m->records = records;
        int want_ok = c->want[0] == '\0' || strncmp(c->want, "note:", 5) == 0;
        if (want_ok ? rc != RALLY_OK : rc != RALLY_EMISMATCH || strstr(e.msg, c->want) == NULL)
            fail_msg("%s: got %d '%s', want %s", c->name, rc, e.msg, c->want);
        if (strncmp(c->want, "note:", 5) == 0 ? strstr(note, c->want + 5) == NULL
                                              : rc == RALLY_OK && note[0] != '\0')
            fail_msg("%s: note '%s', want '%s'", c->name, note, c->want);
    }
    /* another rally: 0.x releases differ by minor, later ones by major */
    struct rally__snap_expect same = {2, NULL, NULL, NULL, NULL, "rally_resume_force=1", 0};
    snprintf(m->rally_version, sizeof m->rally_version, "0.2.5");
    rally__err_clear(&e);
    assert_int_equal(rally__snap_compatible(m, &same, 0, &e, NULL, 0), RALLY_EMISMATCH);
    assert_non_null(strstr(e.msg, "(rally_resume_force=1 resumes anyway)")); /* its spelling */
    assert_non_null(strstr(e.msg, "written by rally 0.2.5, this is rally " RALLY_VERSION_STRING));
    assert_int_equal(rally__snap_compatible(m, &same, 1, &e, NULL, 0), RALLY_OK);
    snprintf(m->rally_version, sizeof m->rally_version, "0.1.9");
    assert_int_equal(rally__snap_compatible(m, &same, 0, &e, NULL, 0), RALLY_OK);
    rally__snap_manifest_free(m);
}

/* The public reader (rally/snapshot.h): a listing with latest marked, a
 * snapshot opened by JOBDIR/latest, its manifest's fields, hosts,
 * fingerprints and settings, its models read byte for byte; a flipped
 * byte is found by verify and by the read of that file, named. */
static void public_reader(void **state)
{
    (void)state;
    struct rally__err e = {0};
    char err[512], job[600], latest[620];
    for (uint64_t v = 3; v <= 4; v++) {
        struct spec s = simple(RUN_A, "2026-11-30T09:00:00.000000Z", v);
        assert_int_equal(write_snapshot(tmp_root, &s, &e), RALLY_OK);
    }
    snprintf(job, sizeof job, "%s/job", tmp_root);
    rally_snapshot_entry_t *v = NULL;
    size_t n = 0;
    assert_int_equal(rally_snapshot_list(job, &v, &n, err, sizeof err), RALLY_OK);
    assert_int_equal(n, 2);
    assert_string_equal(v[1].name, "snap-00000004");
    assert_int_equal(v[1].state, RALLY_SNAPSHOT_COMPLETE);
    assert_true(v[1].latest && !v[0].latest);
    assert_string_equal(v[1].run_id, RUN_A);
    rally_free(v);
    rally_snapshot_t *sn = NULL;
    snprintf(latest, sizeof latest, "%s/latest", job);
    assert_int_equal(rally_snapshot_open(latest, &sn, err, sizeof err), RALLY_OK);
    assert_non_null(strstr(rally_snapshot_path(sn), "snap-00000004"));
    assert_int_equal(rally_snapshot_version(sn), 4);
    assert_int_equal(rally_snapshot_world(sn), 2);
    assert_true(rally_snapshot_has_local(sn));
    assert_string_equal(rally_snapshot_field(sn, "app_name"), "golden");
    assert_string_equal(rally_snapshot_field(sn, "app_config"), "--k 3 --iters 20");
    assert_string_equal(rally_snapshot_field(sn, "run_id"), RUN_A);
    assert_string_equal(rally_snapshot_field(sn, "format_version"), "1");
    assert_null(rally_snapshot_field(sn, "no_such_field"));
    assert_string_equal(rally_snapshot_host(sn, 1), "node-b");
    assert_null(rally_snapshot_host(sn, 2));
    assert_string_equal(rally_snapshot_fingerprint(sn, 0), "0123456789abcdef");
    assert_string_equal(rally_snapshot_setting(sn, "rally_local_replica"), "2");
    assert_null(rally_snapshot_setting(sn, "rally_nothing"));
    const char *key, *value;
    assert_int_equal(rally_snapshot_setting_at(sn, 0, &key, &value), RALLY_OK);
    assert_string_equal(key, "rally_timeout_ms");
    assert_int_equal(rally_snapshot_setting_at(sn, 2, &key, &value), RALLY_EINVAL);
    assert_int_equal(rally_snapshot_nfiles(sn), 3);
    assert_int_equal(rally_snapshot_verify(sn, err, sizeof err), RALLY_OK);
    for (int r = -1; r < 2; r++) {
        void *b = NULL;
        uint64_t nb = 0;
        uint64_t want = r < 0 ? 300 : 40;
        assert_int_equal(rally_snapshot_read(sn, r, &b, &nb, err, sizeof err), RALLY_OK);
        unsigned char *m = model(r, 4, want);
        assert_int_equal(nb, want);
        assert_memory_equal(b, m, want);
        free(m);
        rally_free(b);
    }
    void *b = NULL;
    uint64_t nb = 0;
    assert_int_equal(rally_snapshot_read(sn, 2, &b, &nb, err, sizeof err), RALLY_EINVAL);
    assert_non_null(strstr(err, "rank 2 is not in this snapshot's world of 2"));
    rally_snapshot_close(sn);
    /* a flipped byte in rank 1's file */
    char f[700];
    snprintf(f, sizeof f, "%s/snap-00000004/local-0001.bin", job);
    FILE *fp = fopen(f, "r+b");
    assert_non_null(fp);
    fseek(fp, RALLY__SNAP_HEADER_NBYTES + 3, SEEK_SET);
    fputc(0xee, fp);
    fclose(fp);
    assert_int_equal(rally_snapshot_open(latest, &sn, err, sizeof err), RALLY_OK); /* sizes hold */
    assert_int_not_equal(rally_snapshot_verify(sn, err, sizeof err), RALLY_OK);
    assert_non_null(strstr(err, "local-0001.bin"));
    assert_int_equal(rally_snapshot_read(sn, 0, &b, &nb, err, sizeof err), RALLY_OK);
    rally_free(b);
    assert_int_not_equal(rally_snapshot_read(sn, 1, &b, &nb, err, sizeof err), RALLY_OK);
    assert_non_null(strstr(err, "local-0001.bin"));
    rally_snapshot_close(sn);
    snprintf(f, sizeof f, "%s/none", tmp_root);
    assert_int_not_equal(rally_snapshot_open(f, &sn, err, sizeof err), RALLY_OK);
    assert_non_null(strstr(err, f));
    assert_non_null(strstr(err, "does not exist"));
    /* an empty directory is there: an incomplete snapshot, not a missing one */
    assert_int_equal(mkdir(f, 0755), 0);
    assert_int_not_equal(rally_snapshot_open(f, &sn, err, sizeof err), RALLY_OK);
    assert_non_null(strstr(err, "is incomplete"));
}

int main(int argc, char **argv)
{
    if (golden_args(argc, argv) != 0)
        return 2;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resume_compatibility),
        cmocka_unit_test_setup_teardown(public_reader, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
