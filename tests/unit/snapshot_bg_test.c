/*
 * snapshot_bg_test.c — the background writer and committer of snapshots
 * (snapshot_rig.h): the caller stalls only for the copy, one snapshot in
 * flight, results (or errors) collected by poll; rank 0's commit and
 * retention off the training thread; rally_snapshot_busy.
 */
#include "snapshot_rig.h"

/* --- the background writer ---------------------------------------------------------------- */

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_waiting;
static int gate_fd = -1;

static int g_openat(int d, const char *name, int flags, mode_t mode)
{
    int fd = rally__snap_sys_real.openat(d, name, flags, mode);
    if (strcmp(name, ".global.bin.tmp") == 0)
        gate_fd = fd;
    return fd;
}

/* global.bin's first write waits until the test opens the gate. */
static ssize_t g_write(int fd, const void *p, size_t n)
{
    if (fd == gate_fd) {
        pthread_mutex_lock(&gate_mu);
        gate_waiting = 1;
        pthread_cond_broadcast(&gate_cv);
        while (!gate_open)
            pthread_cond_wait(&gate_cv, &gate_mu);
        pthread_mutex_unlock(&gate_mu);
    }
    return rally__snap_sys_real.write(fd, p, n);
}

static ssize_t nospace_write(int fd, const void *p, size_t n)
{
    errno = ENOSPC;
    return -1;
}

static void background_writer(void **state)
{
    char root[512];
    struct rally__err e = {0}, res = {0};
    struct rally__snap_bg *w = NULL;
    struct rally__snap_file files[RALLY__SNAP_PARTS_MAX];
    int accepted = -1, done = -2;
    snprintf(root, sizeof root, "%s/bg", tmp_root);
    unsigned char *global = model(-1, 1, 5000), *want = model(-1, 1, 5000);
    unsigned char *local = model(0, 1, 300); /* handed over: the writer frees it */
    gate_open = gate_waiting = 0;
    rally__snap_sys.openat = g_openat;
    rally__snap_sys.write = g_write;
    assert_int_equal(rally__snap_bg_start(&e, &w), RALLY_OK);
    assert_int_equal(rally__snap_bg_poll(w, 0, &done, &res, files), RALLY_OK);
    assert_int_equal(done, -1); /* nothing submitted */

    struct rally__snap_target t = {root, "job", RUN_A, 1, 1, NULL};
    struct rally__snap_part parts[2] = {{-1, global, 5000, 0}, {0, local, 300, 1}};
    uint64_t opens = __atomic_load_n(&rally__store_opens, __ATOMIC_RELAXED);
    assert_int_equal(rally__snap_bg_submit(w, &t, parts, 2, 0, &e, &accepted), RALLY_OK);
    assert_int_equal(accepted, 1);
    /* submit returned while the write is held at the gate: the caller
     * stalled only for the copy, and the copy is what gets written */
    pthread_mutex_lock(&gate_mu);
    while (!gate_waiting)
        pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
    memset(global, 0xee, 5000);
    assert_int_equal(rally__snap_bg_poll(w, 0, &done, &res, files), RALLY_OK);
    assert_int_equal(done, 0);
    assert_int_equal(rally__snap_bg_poll(w, 20, &done, &res, files), RALLY_OK);
    assert_int_equal(done, 0); /* timed out, still writing */
    /* at most one in flight: the next is refused without waiting */
    struct rally__snap_target t2 = {root, "job", RUN_A, 2, 1, NULL};
    accepted = -1;
    assert_int_equal(rally__snap_bg_submit(w, &t2, parts, 1, 0, &e, &accepted), RALLY_OK);
    assert_int_equal(accepted, 0);

    pthread_mutex_lock(&gate_mu);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
    assert_int_equal(rally__snap_bg_poll(w, -1, &done, &res, files), RALLY_OK);
    assert_int_equal(done, 1);
    assert_int_equal(res.code, RALLY_OK);
    assert_string_equal(files[0].name, "global.bin");
    assert_int_equal(files[0].nbytes, 5000 + RALLY__SNAP_HEADER_NBYTES);
    assert_string_equal(files[1].name, "local-0000.bin");
    /* both parts through one store: an object store's connection and
     * credentials once a snapshot, not once a file */
    assert_int_equal(__atomic_load_n(&rally__store_opens, __ATOMIC_RELAXED) - opens, 1);
    rally__snap_sys = rally__snap_sys_real;

    /* the reported sizes and checksums commit a snapshot that loads */
    struct rally__snap_manifest m = {0};
    m.format_version = RALLY__SNAP_FORMAT;
    strcpy(m.rally_version, "0.1.0");
    strcpy(m.job, "job");
    strcpy(m.snapshot_id, SNAP_ID);
    strcpy(m.run_id, RUN_A);
    strcpy(m.run_started, "2026-11-30T12:00:00.000000Z");
    strcpy(m.created, "2026-11-30T12:00:01.000000Z");
    m.version = 1;
    m.world = 1;
    m.hosts = hosts2;
    m.app_name = "bg";
    m.app_config = "";
    m.partitioning = "none";
    m.files = files;
    m.nfiles = 2;
    assert_int_equal(rally__snap_commit(root, &m, &e, NULL, 0), RALLY_OK);
    char p[600];
    struct rally__snap *s = NULL;
    void *b = NULL;
    uint64_t n = 0;
    snap_path(p, sizeof p, root, "job", 1);
    assert_int_equal(rally__snap_open(p, &e, &s), RALLY_OK);
    assert_int_equal(rally__snap_read(s, -1, &e, &b, &n), RALLY_OK);
    assert_int_equal(n, 5000);
    assert_memory_equal(b, want, 5000);
    free(b);
    rally__snap_close(s);

    /* a failed write comes back as the result, with its message */
    rally__snap_sys.write = nospace_write;
    accepted = -1;
    assert_int_equal(rally__snap_bg_submit(w, &t2, parts, 1, 1, &e, &accepted), RALLY_OK);
    assert_int_equal(accepted, 1);
    assert_int_equal(rally__snap_bg_poll(w, -1, &done, &res, files), RALLY_OK);
    rally__snap_sys = rally__snap_sys_real;
    assert_int_equal(done, 1);
    assert_int_equal(res.code, RALLY_ESYS);
    assert_non_null(strstr(res.msg, "no space left writing"));
    /* an uncollected result blocks the next submit */
    assert_int_equal(rally__snap_bg_submit(w, &t2, parts, 1, 1, &e, &accepted), RALLY_OK);
    assert_int_equal(rally__snap_bg_submit(w, &t2, parts, 1, 1, &e, &accepted), RALLY_EINVAL);
    rally__snap_bg_stop(w); /* waits for the one in flight */
    assert_int_equal(loads(root, "job", 1, &e), RALLY_OK);
    free(global);
    free(want);
}

/* The committer's thread (rank 0's manifest and retention off the training
 * thread): a commit succeeds and names its path; retention then keeps the
 * newest of the run up to the committed version and leaves a newer
 * snapshot being written alone; a commit whose part is missing fails,
 * naming the file. */
static void background_commit(void **state)
{
    struct rally__err e = {0}, res = {0};
    struct rally__snap_bg *w = NULL;
    struct rally__snap_manifest m;
    struct rally__snap_file files[8], none[RALLY__SNAP_PARTS_MAX];
    char path[4096], note[RALLY__ERR_MSG_MAX], p[512];
    int done = 0;
    struct spec s2 = simple(RUN_A, "2026-11-30T12:00:00.000000Z", 2);
    struct spec s3 = simple(RUN_A, "2026-11-30T12:00:00.000000Z", 3);
    assert_int_equal(write_snapshot(tmp_root, &s2, &e), RALLY_OK);
    assert_int_equal(write_parts(tmp_root, &s3, &m, files, &e), RALLY_OK);
    struct rally__snap_target t4 = {tmp_root, "job", RUN_A, 4, 2, NULL};
    struct rally__snap_file f4;
    unsigned char *g = model(-1, 4, 300); /* snap-4: a part written, not committed */
    assert_int_equal(rally__snap_write_part(&t4, -1, g, 300, &e, &f4), RALLY_OK);
    free(g);
    assert_int_equal(rally__snap_bg_start(&e, &w), RALLY_OK);
    assert_int_equal(rally__snap_bg_commit(w, tmp_root, &m, 1, &e), RALLY_OK);
    assert_int_equal(rally__snap_bg_poll(w, -1, &done, &res, none), RALLY_OK);
    assert_int_equal(done, 1);
    if (res.code != RALLY_OK)
        fail_msg("commit: %s", res.msg);
    rally__snap_bg_commit_info(w, path, sizeof path, note, sizeof note);
    snap_path(p, sizeof p, tmp_root, "job", 3);
    assert_string_equal(path, p);
    assert_string_equal(note, "");
    struct stat st;
    snap_path(p, sizeof p, tmp_root, "job", 2);
    assert_int_equal(lstat(p, &st), -1); /* kept 1: snap-2 went */
    snap_path(p, sizeof p, tmp_root, "job", 4);
    assert_int_equal(lstat(p, &st), 0); /* newer, being written: left alone */
    /* a commit whose listed file is missing */
    struct spec s5 = simple(RUN_A, "2026-11-30T12:00:00.000000Z", 5);
    assert_int_equal(write_parts(tmp_root, &s5, &m, files, &e), RALLY_OK);
    snap_path(p, sizeof p, tmp_root, "job", 5);
    strcat(p, "/global.bin");
    assert_int_equal(unlink(p), 0);
    assert_int_equal(rally__snap_bg_commit(w, tmp_root, &m, 1, &e), RALLY_OK);
    assert_int_equal(rally__snap_bg_poll(w, -1, &done, &res, none), RALLY_OK);
    assert_int_equal(done, 1);
    assert_int_equal(res.code, RALLY_EPROTO);
    assert_non_null(strstr(res.msg, "global.bin is missing"));
    rally__snap_bg_stop(w);
}

/* rally_snapshot_busy is a choice of two words, checked where settings are
 * read, and the manifest records the word. */
static void busy_setting(void **state)
{
    struct rally__config c;
    struct rally__err e = {0};
    char a0[] = "prog", a1[] = "rally_snapshot_busy=later", *av[] = {a0, a1, NULL}, **argv = av;
    int argc = 2;
    unsetenv("RALLY_SNAPSHOT_BUSY");
    assert_int_equal(rally__config_load(&c, &argc, &argv, &e), RALLY_ECONFIG);
    assert_non_null(strstr(e.msg, "rally_snapshot_busy=later is not one of wait, skip"));
    char b1[] = "rally_snapshot_busy=skip", *bv[] = {a0, b1, NULL};
    argv = bv;
    argc = 2;
    rally__err_clear(&e);
    assert_int_equal(rally__config_load(&c, &argc, &argv, &e), RALLY_OK);
    assert_int_equal(c.snapshot_busy, RALLY__SNAP_BUSY_SKIP);
    char key[64], val[64];
    int seen = 0;
    for (size_t i = 0; rally__config_get(&c, i, key, sizeof key, val, sizeof val); i++)
        if (strcmp(key, "rally_snapshot_busy") == 0)
            seen = strcmp(val, "skip") == 0;
    assert_true(seen);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(background_writer, setup, teardown),
        cmocka_unit_test_setup_teardown(background_commit, setup, teardown),
        cmocka_unit_test(busy_setting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
