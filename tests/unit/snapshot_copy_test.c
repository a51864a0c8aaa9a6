/*
 * snapshot_copy_test.c — copies of snapshots to a second tier (snapshot_rig.h):
 * the copiers, one per rank, and copies that count once they verify where
 * they land.
 */
#include "snapshot_rig.h"

/* Rank r's files of version v of a 2-rank job with local models, written
 * into its own root (rank 0: global.bin and local-0000.bin), as the
 * background writer does; the manifest's bytes for rank 0 in *text. */
static int rank_files(const char *root, int r, uint64_t v, struct rally__snap_file *f, int *n,
                      char **text, size_t *tn, struct rally__err *e)
{
    struct spec s = simple(RUN_A, "2026-11-30T12:00:00.000000Z", v);
    struct rally__snap_target t = {root, s.job, s.run, v, s.world, NULL};
    struct rally__snap_file all[3];
    *n = 0;
    for (int k = -1; k < s.world; k++) {
        uint64_t nb = k < 0 ? s.global_nbytes : s.local_nbytes;
        unsigned char *p = model(k, v, nb);
        struct rally__snap_file got;
        /* every rank's file is made (for the manifest), only r's is kept */
        char other[600];
        snprintf(other, sizeof other, "%s-elsewhere", root);
        struct rally__snap_target o = t;
        int mine = k == r || (r == 0 && k < 0);
        if (!mine)
            o.dir = other;
        int rc = rally__snap_write_part(&o, k, p, nb, e, &got);
        free(p);
        if (rc != RALLY_OK)
            return rc;
        all[k + 1] = got;
        if (mine)
            f[(*n)++] = got;
    }
    struct rally__snap_manifest m;
    struct rally__snap_file dummy[3];
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s-spec", root);
    int rc = write_parts(tmp, &s, &m, dummy, e); /* the manifest's other fields */
    if (rc != RALLY_OK)
        return rc;
    m.files = all;
    m.nfiles = 3;
    return rally__snap_manifest_encode(&m, e, text, tn);
}

/* The second tier's copiers, one per rank, each rank's files in a root of
 * its own (a directory private to each host): each rank's files copied and
 * verified there, rank 0's commit of the copy then loads, retention keeps
 * 2 there, pruning keeps a rank's newest files; a commit before every
 * file is there, a damaged file and a root that cannot be written are
 * tried three times and given up, saying why; stop does not wait for
 * retries. */
static void copier_copies(void **state)
{
    (void)state;
    struct rally__err e = {0};
    char src[2][512], dst[600], path[700], line[RALLY__ERR_MSG_MAX + 300];
    struct rally__snap_copier *c[2] = {NULL, NULL};
    struct rally__snap_file f[2][2];
    int n[2];
    char *text = NULL, *unused = NULL;
    size_t tn = 0, un = 0;
    snprintf(dst, sizeof dst, "%s/tier2", tmp_root);
    for (int r = 0; r < 2; r++) {
        snprintf(src[r], sizeof src[r], "%s/host%d", tmp_root, r);
        assert_int_equal(rally__snap_copier_start(dst, 2, &e, &c[r]), RALLY_OK);
    }
    for (uint64_t v = 1; v <= 3; v++) {
        free(text);
        free(unused);
        if (rank_files(src[0], 0, v, f[0], &n[0], &text, &tn, &e) != RALLY_OK ||
            rank_files(src[1], 1, v, f[1], &n[1], &unused, &un, &e) != RALLY_OK)
            fail_msg("%s", e.msg);
        struct rally__snap_target t = {NULL, "job", RUN_A, v, 2, NULL};
        for (int r = 0; r < 2; r++) {
            assert_int_equal(rally__snap_copier_submit(c[r], src[r], &t, f[r], n[r], &e), RALLY_OK);
            rally__snap_copier_drain(c[r]);
            assert_int_equal(rally__snap_copier_state(c[r], v), RALLY__SNAP_COPY_OK);
            assert_int_equal(rally__snap_copier_said(c[r], line, sizeof line), 0);
        }
        assert_int_equal(rally__snap_copier_commit(c[0], text, tn, v, &e), RALLY_OK);
        rally__snap_copier_drain(c[0]);
        assert_int_equal(rally__snap_copier_said(c[0], line, sizeof line), 1);
        snap_path(path, sizeof path, dst, "job", v);
        if (strstr(line, "copied to ") == NULL || strstr(line, path) == NULL)
            fail_msg("version %llu: the copier said \"%s\"", (unsigned long long)v, line);
        assert_int_equal(loads(dst, "job", v, &e), RALLY_OK);
    }
    assert_int_equal(rally__snap_copier_gave_up(c[0], line, sizeof line), 0);
    /* retention there: 2 and 3 kept, 1 gone */
    snap_path(path, sizeof path, dst, "job", 1);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(loads(dst, "job", 2, &e), RALLY_OK);
    /* pruning rank 1's own directory: its files of 1 and 2 go, 3's stay */
    snprintf(path, sizeof path, "%s/job", src[1]);
    rally__snap_copier_prune(c[1], path, RUN_A, 3);
    rally__snap_copier_drain(c[1]);
    assert_int_equal(rally__snap_copier_said(c[1], line, sizeof line), 0);
    for (uint64_t v = 1; v <= 3; v++) {
        snap_path(path, sizeof path, src[1], "job", v);
        assert_int_equal(access(path, F_OK), v < 3 ? -1 : 0);
    }

    /* version 4: rank 1's file damaged in its directory, so it is never
     * copied; rank 0's commit finds it missing there and gives up */
    free(text);
    free(unused);
    assert_int_equal(rank_files(src[0], 0, 4, f[0], &n[0], &text, &tn, &e), RALLY_OK);
    assert_int_equal(rank_files(src[1], 1, 4, f[1], &n[1], &unused, &un, &e), RALLY_OK);
    snap_path(path, sizeof path, src[1], "job", 4);
    strcat(path, "/local-0001.bin");
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    fseek(fp, 100, SEEK_SET);
    fputc(0x5a, fp);
    fclose(fp);
    struct rally__snap_target t4 = {NULL, "job", RUN_A, 4, 2, NULL};
    for (int r = 0; r < 2; r++) {
        assert_int_equal(rally__snap_copier_submit(c[r], src[r], &t4, f[r], n[r], &e), RALLY_OK);
        rally__snap_copier_drain(c[r]);
    }
    assert_int_equal(rally__snap_copier_state(c[0], 4), RALLY__SNAP_COPY_OK);
    assert_int_equal(rally__snap_copier_state(c[1], 4), RALLY__SNAP_COPY_FAILED);
    assert_int_equal(rally__snap_copier_state(c[1], 5), RALLY__SNAP_COPY_NONE);
    int tries = 0, said = 0;
    while (rally__snap_copier_said(c[1], line, sizeof line)) {
        tries += strstr(line, "failed (try ") != NULL;
        said += strstr(line, "(3 tries)") != NULL && strstr(line, "damaged") != NULL;
    }
    assert_int_equal(tries, 2);
    assert_int_equal(said, 1);
    assert_int_equal(rally__snap_copier_commit(c[0], text, tn, 4, &e), RALLY_OK);
    rally__snap_copier_drain(c[0]);
    assert_int_equal(rally__snap_copier_gave_up(c[0], line, sizeof line), 1);
    if (strstr(line, "(3 tries)") == NULL || strstr(line, "local-0001.bin is missing") == NULL)
        fail_msg("the commit gave up saying \"%s\"", line);
    assert_int_equal(rally__snap_copier_gave_up(c[0], line, sizeof line), 0); /* said once */
    assert_int_not_equal(loads(dst, "job", 4, &e), RALLY_OK);
    for (int r = 0; r < 2; r++)
        rally__snap_copier_stop(c[r]);

    /* a root whose job directory is a file: every try fails */
    snprintf(dst, sizeof dst, "%s/bad", tmp_root);
    mkdir(dst, 0755);
    snprintf(path, sizeof path, "%s/job", dst);
    fclose(fopen(path, "w"));
    assert_int_equal(rally__snap_copier_start(dst, 2, &e, &c[0]), RALLY_OK);
    assert_int_equal(rally__snap_copier_submit(c[0], src[0], &t4, f[0], n[0], &e), RALLY_OK);
    rally__snap_copier_drain(c[0]);
    tries = 0;
    while (rally__snap_copier_said(c[0], line, sizeof line))
        tries += strstr(line, "failed (try ") != NULL;
    assert_int_equal(tries, 2);
    assert_int_equal(rally__snap_copier_state(c[0], 4), RALLY__SNAP_COPY_FAILED);
    /* stop with one just submitted (in flight or waiting): the thread ends
     * cleanly, without its retries (ASan and TSan watch this path) */
    assert_int_equal(rally__snap_copier_submit(c[0], src[0], &t4, f[0], n[0], &e), RALLY_OK);
    assert_int_equal(rally__snap_copier_commit(c[0], text, tn, 4, &e), RALLY_OK);
    rally__snap_copier_stop(c[0]);
    free(text);
    free(unused);
}

/* A write that lands other bytes than it was given (a disk or a mount that
 * corrupts in flight): one byte in the middle of each payload flipped. */
static ssize_t flip_write(int fd, const void *p, size_t n)
{
    if (n < 64)
        return rally__snap_sys_real.write(fd, p, n);
    unsigned char *q = malloc(n);
    if (q == NULL)
        return -1;
    memcpy(q, p, n);
    q[n / 2] ^= 0x20;
    ssize_t k = rally__snap_sys_real.write(fd, q, n);
    free(q);
    return k;
}

/* A copy counts once it verifies where it landed: rank 0's files copied to
 * a second tier (rally__snap_copy_files), and a whole snapshot
 * (rally__snap_copy), through a write that lands other bytes than it was
 * given, fail naming the damage; the same copies through honest writes
 * succeed and load there. */
static void copy_verifies_where_it_lands(void **state)
{
    (void)state;
    struct rally__err e = {0};
    char src[512], dst[600], whole[600], path[700], there[1200];
    struct rally__snap_file f[2];
    int n = 0;
    char *text = NULL;
    size_t tn = 0;
    void *buf = NULL;
    size_t room = 0;
    snprintf(src, sizeof src, "%s/host0", tmp_root);
    snprintf(dst, sizeof dst, "%s/tier2", tmp_root);
    snprintf(whole, sizeof whole, "%s/whole", tmp_root);
    if (rank_files(src, 0, 1, f, &n, &text, &tn, &e) != RALLY_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(n, 2);
    struct rally__snap_target t = {dst, "job", RUN_A, 1, 2, NULL};
    rally__snap_sys.write = flip_write;
    int rc = rally__snap_copy_files(src, &t, f, n, &buf, &room, &e);
    rally__snap_sys = rally__snap_sys_real;
    assert_int_not_equal(rc, RALLY_OK);
    if (strstr(e.msg, "global.bin") == NULL)
        fail_msg("the damaged copy said \"%s\"", e.msg);
    rally__err_clear(&e);
    uint64_t opens = __atomic_load_n(&rally__store_opens, __ATOMIC_RELAXED);
    assert_int_equal(rally__snap_copy_files(src, &t, f, n, &buf, &room, &e), RALLY_OK);
    /* the two files are read through one store and written through one */
    assert_int_equal(__atomic_load_n(&rally__store_opens, __ATOMIC_RELAXED) - opens, 2);
    free(buf);
    free(text);
    /* a whole snapshot: its copy is verified there after the commit */
    struct spec s = simple(RUN_A, "2026-11-30T12:00:00.000000Z", 1);
    s.job = "job2";
    assert_int_equal(write_snapshot(src, &s, &e), RALLY_OK);
    snap_path(path, sizeof path, src, "job2", 1);
    rally__snap_sys.write = flip_write;
    rc = rally__snap_copy(path, whole, &e, there, sizeof there);
    rally__snap_sys = rally__snap_sys_real;
    assert_int_not_equal(rc, RALLY_OK);
    rally__err_clear(&e);
    strcat(whole, "-again");
    assert_int_equal(rally__snap_copy(path, whole, &e, there, sizeof there), RALLY_OK);
    assert_int_equal(loads(whole, "job2", 1, &e), RALLY_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(copier_copies, setup, teardown),
        cmocka_unit_test_setup_teardown(copy_verifies_where_it_lands, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
