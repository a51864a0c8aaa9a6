/*
 * snapshot_format_test.c — the format of durable snapshots (snapshot_rig.h).
 *
 * Golden: the snapshot committed under tests/snapshot_golden (format
 * version 1) loads, and the writer reproduces its bytes exactly from the
 * same inputs.  Damage: a truncated file, a flipped byte, a missing file, a
 * malformed manifest, a symlink in place of a file each give an error
 * naming the problem; a manifest breaking any of its rules is refused,
 * naming the rule.
 *
 *   snapshot_format_test GOLDEN_DIR            run the tests
 *   snapshot_format_test --write-golden DIR    write the golden snapshot into DIR
 */
#include "snapshot_rig.h"

/* --- making snapshots ------------------------------------------------------------ */

static const struct spec golden_spec = {
    "demo", RUN_A, "2026-11-30T12:00:00.000000Z", "2026-11-30T12:03:07.512301Z", 7, 2, 1, 100, 24};

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)len + 1);
    if (fread(p, 1, (size_t)len, f) != (size_t)len) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return p;
}

/* --- golden ------------------------------------------------------------------------- */

static void golden_loads(void **state)
{
    char p[512];
    struct rally__err e = {0};
    struct rally__snap *s = NULL;
    snap_path(p, sizeof p, golden_dir, "demo", 7);
    assert_int_equal(rally__snap_open(p, &e, &s), RALLY_OK);
    const struct rally__snap_manifest *m = rally__snap_manifest(s);
    assert_int_equal(m->format_version, 1);
    assert_string_equal(m->job, "demo");
    assert_string_equal(m->run_id, RUN_A);
    assert_string_equal(m->snapshot_id, SNAP_ID);
    assert_string_equal(m->created, golden_spec.created);
    assert_int_equal(m->version, 7);
    assert_int_equal(m->world, 2);
    assert_string_equal(m->hosts[1], "node-b");
    assert_string_equal(m->settings[1].key, "rally_local_replica");
    assert_string_equal(m->app_config, "--k 3 --iters 20");
    assert_string_equal(m->partitioning, "hash");
    assert_string_equal(m->fingerprints[1], "fedcba9876543210");
    assert_int_equal(m->nfiles, 3);
    assert_true(rally__snap_has_local(s));
    for (int r = -1; r < 2; r++) {
        void *b = NULL;
        uint64_t n = 0;
        uint64_t want_n = r < 0 ? golden_spec.global_nbytes : golden_spec.local_nbytes;
        unsigned char *want = model(r, 7, want_n);
        assert_int_equal(rally__snap_read(s, r, &e, &b, &n), RALLY_OK);
        assert_int_equal(n, want_n);
        assert_memory_equal(b, want, want_n);
        free(b);
        free(want);
    }
    rally__snap_close(s);
}

static void golden_reproduced(void **state)
{
    struct rally__err e = {0};
    assert_int_equal(write_snapshot(tmp_root, &golden_spec, &e), RALLY_OK);
    const char *names[] = {"MANIFEST.json", "global.bin", "local-0000.bin", "local-0001.bin"};
    for (int i = 0; i < 4; i++) {
        char a[512], b[512];
        size_t na = 0, nb = 0;
        snprintf(a, sizeof a, "%s/demo/snap-00000007/%s", golden_dir, names[i]);
        snprintf(b, sizeof b, "%s/demo/snap-00000007/%s", tmp_root, names[i]);
        unsigned char *pa = slurp(a, &na), *pb = slurp(b, &nb);
        assert_non_null(pa);
        assert_non_null(pb);
        if (na != nb || memcmp(pa, pb, na) != 0)
            fail_msg("%s differs from the golden %s (%zu vs %zu bytes): the format drifted", b, a,
                     nb, na);
        free(pa);
        free(pb);
    }
}

/* --- damage ---------------------------------------------------------------------------- */

enum { D_TRUNCATE, D_FLIP, D_FLIP_HEADER, D_MISSING, D_BAD_JSON, D_SYMLINK, D_FORMAT2, D_NONE };

struct damage_case {
    const char *name;
    int how;
    const char *file;
    const char *want; /* in the error */
};

static const struct damage_case DAMAGE_CASES[] = {
    {"truncated", D_TRUNCATE, "global.bin", "global.bin is 371 bytes, the manifest says 372"},
    {"flipped_payload_byte", D_FLIP, "local-0001.bin", "local-0001.bin's checksum is"},
    {"flipped_header_byte", D_FLIP_HEADER, "global.bin", "the manifest says"},
    {"missing", D_MISSING, "local-0000.bin", "local-0000.bin is missing"},
    {"malformed_manifest", D_BAD_JSON, "MANIFEST.json", "not valid JSON"},
    {"symlink", D_SYMLINK, "global.bin", "global.bin is a symbolic link"},
    {"manifest_symlink", D_SYMLINK, "MANIFEST.json", "MANIFEST.json is a symbolic link"},
    {"format_version_2", D_FORMAT2, "MANIFEST.json", "format version 2, this rally reads 1"},
    {"no_manifest", D_MISSING, "MANIFEST.json", "incomplete: it has no MANIFEST.json"},
};

static void damage(const char *dir, const struct damage_case *c)
{
    char p[700], q[800];
    snprintf(p, sizeof p, "%s/%s", dir, c->file);
    size_t n = 0;
    unsigned char *b = slurp(p, &n);
    assert_non_null(b);
    FILE *f;
    switch (c->how) {
    case D_TRUNCATE:
        assert_int_equal(truncate(p, (off_t)n - 1), 0);
        break;
    case D_FLIP:
    case D_FLIP_HEADER:
        b[c->how == D_FLIP ? n - 3 : 30] ^= 0x10;
        f = fopen(p, "wb");
        fwrite(b, 1, n, f);
        fclose(f);
        break;
    case D_MISSING:
        assert_int_equal(unlink(p), 0);
        break;
    case D_BAD_JSON:
        f = fopen(p, "wb");
        fwrite(b, 1, n / 2, f);
        fclose(f);
        break;
    case D_SYMLINK:
        snprintf(q, sizeof q, "%s.elsewhere", p);
        assert_int_equal(rename(p, q), 0);
        assert_int_equal(symlink(q, p), 0); /* a link to the very same bytes */
        break;
    case D_FORMAT2: {
        char *at = strstr((char *)b, "\"format_version\": 1");
        assert_non_null(at);
        at[18] = '2';
        f = fopen(p, "wb");
        fwrite(b, 1, n, f);
        fclose(f);
        break;
    }
    }
    free(b);
}

static void damaged_snapshots(void **state)
{
    for (size_t i = 0; i < sizeof DAMAGE_CASES / sizeof DAMAGE_CASES[0]; i++) {
        const struct damage_case *c = &DAMAGE_CASES[i];
        char root[512], dir[700], job[600];
        struct rally__err e = {0};
        snprintf(root, sizeof root, "%s/%s", tmp_root, c->name);
        snprintf(job, sizeof job, "%s/job", root);
        struct spec s = simple(RUN_A, "2026-11-30T12:00:00.000000Z", 1);
        assert_int_equal(write_snapshot(root, &s, &e), RALLY_OK);
        snap_path(dir, sizeof dir, root, "job", 1);
        assert_int_equal(loads(root, "job", 1, &e), RALLY_OK); /* it loaded before */
        damage(dir, c);
        rally__err_clear(&e);
        int rc = loads(root, "job", 1, &e);
        if (rc != RALLY_EPROTO || strstr(e.msg, c->want) == NULL)
            fail_msg("%s: got %d '%s', want RALLY_EPROTO with '%s'", c->name, rc, e.msg, c->want);
        /* A listing never calls it complete, and nothing is "latest". */
        struct rally__snap_entry *v = NULL;
        size_t n = 0;
        assert_int_equal(rally__snap_list(job, &e, &v, &n), RALLY_OK);
        assert_int_equal(n, 1);
        int checksum_only = c->how == D_FLIP || c->how == D_FLIP_HEADER;
        if (!checksum_only) { /* a listing checks sizes, not checksums */
            assert_int_not_equal(v[0].state, RALLY__SNAP_COMPLETE);
            assert_int_equal(rally__snap_latest(v, n), -1);
        }
        free(v);
    }
}

/* Both values named: the manifest's checksum against the bytes'. */
static void checksum_error_names_both(void **state)
{
    char root[512], dir[700];
    struct rally__err e = {0};
    snprintf(root, sizeof root, "%s/both", tmp_root);
    struct spec s = simple(RUN_A, "2026-11-30T12:00:00.000000Z", 4);
    assert_int_equal(write_snapshot(root, &s, &e), RALLY_OK);
    snap_path(dir, sizeof dir, root, "job", 4);
    struct rally__snap_manifest *m = NULL;
    assert_int_equal(rally__snap_read_manifest(dir, &e, &m), RALLY_OK);
    char want[32];
    snprintf(want, sizeof want, "says %016llx", (unsigned long long)m->files[0].xxh3);
    rally__snap_manifest_free(m);
    damage(dir, &DAMAGE_CASES[1]);
    const struct damage_case g = {"g", D_FLIP, "global.bin", ""};
    damage(dir, &g);
    assert_int_equal(loads(root, "job", 4, &e), RALLY_EPROTO);
    assert_non_null(strstr(e.msg, "global.bin's checksum is "));
    assert_non_null(strstr(e.msg, want));
}

/* --- manifests --------------------------------------------------------------------------- */

struct manifest_case {
    const char *name;
    const char *from, *to; /* replace in a good manifest */
    const char *want;
};

static const struct manifest_case MANIFEST_CASES[] = {
    {"not_an_object", NULL, "[1, 2]", "the top level is not an object"},
    {"wrong_format", "\"rally-snapshot\"", "\"jubatus\"", "\"format\" is \"jubatus\""},
    {"world_zero", "\"world_size\": 2", "\"world_size\": 0", "\"world_size\" is 0, want 1"},
    {"world_vs_members", "\"world_size\": 2", "\"world_size\": 3",
     "\"membership\" has 2 entries, \"world_size\" is 3"},
    {"bad_uuid", RUN_A, "not-a-uuid", "is not a lowercase UUID"},
    {"bad_time", "2026-11-30T12:00:00.000000Z", "yesterday", "is not YYYY-MM-DD"},
    {"absolute_name", "\"global.bin\"", "\"/etc/passwd\"", "not global.bin or local-NNNN.bin"},
    {"dotdot_name", "\"local-0001.bin\"", "\"../local-0001.bin\"", "not global.bin or local"},
    {"uncanonical_name", "\"local-0001.bin\"", "\"local-001.bin\"", "not global.bin or local"},
    {"duplicate_key", "\"job\": \"job\"", "\"job\": \"job\", \"job\": \"other\"", "not valid JSON"},
    {"config_hash", "\"config\": \"--k 3 --iters 20\"", "\"config\": \"--k 4 --iters 20\"",
     "the config hashes to"},
    {"negative_version", "\"checkpoint_version\": 5", "\"checkpoint_version\": -5",
     "\"checkpoint_version\" is -5"},
    {"bad_checksum_text", "\"xxh3_64\": \"", "\"xxh3_64\": \"XY", "16 lowercase hex digits"},
    {"job_with_slash", "\"job\": \"job\"", "\"job\": \"../job\"", "\"job\" is \"../job\""},
    {"changes_not_array", "\"checkpoint_version\": 5",
     "\"checkpoint_version\": 5, \"world_changes\": 1", "\"world_changes\" is not a non-empty"},
    {"changes_last_world", "\"checkpoint_version\": 5",
     "\"checkpoint_version\": 5, \"world_changes\": [{\"version\": 0, \"world_size\": 3}]",
     "the last of \"world_changes\" has world_size 3, the snapshot 2"},
    {"changes_future", "\"checkpoint_version\": 5",
     "\"checkpoint_version\": 5, \"world_changes\": [{\"version\": 9, \"world_size\": 2}]",
     "world_changes[0].\"version\" is 9, want 0 to 5"},
    {"changes_order", "\"checkpoint_version\": 5",
     "\"checkpoint_version\": 5, \"world_changes\": [{\"version\": 3, \"world_size\": 3}, "
     "{\"version\": 1, \"world_size\": 2}]",
     "world_changes[1].version 1 is older than the one before"},
};

static void manifest_rules(void **state)
{
    char root[512], dir[700], p[800];
    struct rally__err e = {0};
    snprintf(root, sizeof root, "%s/manifests", tmp_root);
    struct spec s = simple(RUN_A, "2026-11-30T12:00:00.000000Z", 5);
    assert_int_equal(write_snapshot(root, &s, &e), RALLY_OK);
    snap_path(dir, sizeof dir, root, "job", 5);
    snprintf(p, sizeof p, "%s/MANIFEST.json", dir);
    size_t n = 0;
    char *good = (char *)slurp(p, &n);
    assert_non_null(good);
    good[n] = '\0';
    struct rally__snap_manifest *m = NULL;
    assert_int_equal(rally__snap_manifest_parse(good, n, &e, &m), RALLY_OK);
    /* encode(parse(x)) == x: the writer's bytes are the reader's. */
    char *again = NULL;
    size_t n2 = 0;
    assert_int_equal(rally__snap_manifest_encode(m, &e, &again, &n2), RALLY_OK);
    assert_int_equal(n2, n);
    assert_memory_equal(again, good, n);
    free(again);
    rally__snap_manifest_free(m);
    { /* an elastic job's changes of its workers, kept through a round trip */
        char with[8192];
        const char *at = strstr(good, "\"checkpoint_version\": 5");
        assert_non_null(at);
        snprintf(with, sizeof with, "%.*s\"world_changes\": [{\"version\": 0, \"world_size\": 3}, "
                 "{\"version\": 4, \"world_size\": 2}], %s", (int)(at - good), good, at);
        assert_int_equal(rally__snap_manifest_parse(with, strlen(with), &e, &m), RALLY_OK);
        assert_int_equal(m->nchanges, 2);
        assert_int_equal(m->changes[1].version, 4);
        assert_int_equal(m->changes[1].world, 2);
        assert_int_equal(rally__snap_manifest_encode(m, &e, &again, &n2), RALLY_OK);
        rally__snap_manifest_free(m);
        assert_int_equal(rally__snap_manifest_parse(again, n2, &e, &m), RALLY_OK);
        assert_int_equal(m->nchanges, 2);
        assert_int_equal(m->changes[0].world, 3);
        rally__snap_manifest_free(m);
        free(again);
    }
    for (size_t i = 0; i < sizeof MANIFEST_CASES / sizeof MANIFEST_CASES[0]; i++) {
        const struct manifest_case *c = &MANIFEST_CASES[i];
        char bad[8192];
        if (c->from == NULL) {
            snprintf(bad, sizeof bad, "%s", c->to);
        } else {
            char *at = strstr(good, c->from);
            if (at == NULL)
                fail_msg("%s: '%s' is not in the manifest", c->name, c->from);
            snprintf(bad, sizeof bad, "%.*s%s%s", (int)(at - good), good, c->to,
                     at + strlen(c->from));
        }
        rally__err_clear(&e);
        m = NULL;
        int rc = rally__snap_manifest_parse(bad, strlen(bad), &e, &m);
        rally__snap_manifest_free(m);
        if (rc != RALLY_EPROTO || strstr(e.msg, c->want) == NULL)
            fail_msg("%s: got %d '%s', want RALLY_EPROTO with '%s'", c->name, rc, e.msg, c->want);
    }
    free(good);
}

static int write_golden(const char *dir)
{
    struct rally__err e = {0};
    if (write_snapshot(dir, &golden_spec, &e) != RALLY_OK) {
        fprintf(stderr, "snapshot_format_test: %s\n", e.msg);
        return 1;
    }
    printf("wrote %s/demo/snap-00000007\n", dir);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write-golden") == 0)
        return write_golden(argv[2]);
    if (golden_args(argc, argv) != 0)
        return 2;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(golden_loads, setup, teardown),
        cmocka_unit_test_setup_teardown(golden_reproduced, setup, teardown),
        cmocka_unit_test_setup_teardown(damaged_snapshots, setup, teardown),
        cmocka_unit_test_setup_teardown(checksum_error_names_both, setup, teardown),
        cmocka_unit_test_setup_teardown(manifest_rules, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
