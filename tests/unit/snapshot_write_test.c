/*
 * snapshot_write_test.c — the durable write of snapshots (snapshot_rig.h).
 *
 * Order: the durable write's system calls, recorded through the syscall
 * table, are write -> fsync -> rename -> fsync(dir) for every file, the
 * manifest last.  Torture: a write stopped after N bytes, before the
 * rename, before the directory fsync, or failed with ENOSPC leaves the
 * previous snapshot loadable and the torn one never loads.  The writer
 * refuses a committed snapshot, bad names, a linked job directory and files
 * whose sizes are not the manifest's; its ids and times are well formed.
 */
#include "snapshot_rig.h"

/* --- the order of system calls ------------------------------------------------------ */

#define TRACE_MAX 256
static char trace[TRACE_MAX][96];
static int ntrace;
static char fd_names[1024][48];

static void note(const char *fmt, ...)
{
    va_list ap;
    if (ntrace >= TRACE_MAX)
        return;
    va_start(ap, fmt);
    vsnprintf(trace[ntrace++], sizeof trace[0], fmt, ap);
    va_end(ap);
}

static int t_openat(int d, const char *name, int flags, mode_t mode)
{
    int fd = rally__snap_sys_real.openat(d, name, flags, mode);
    note("open %s", name);
    if (fd >= 0 && fd < 1024)
        snprintf(fd_names[fd], sizeof fd_names[fd], "%s", name);
    return fd;
}

static ssize_t t_write(int fd, const void *p, size_t n)
{
    note("write %s", fd_names[fd]);
    return rally__snap_sys_real.write(fd, p, n);
}

static int t_fsync(int fd)
{
    if (fd < 1024 && fd_names[fd][0])
        note("fsync %s", fd_names[fd]);
    else
        note("fsync dir");
    return rally__snap_sys_real.fsync(fd);
}

static int t_close(int fd)
{
    if (fd < 1024)
        fd_names[fd][0] = '\0';
    return rally__snap_sys_real.close(fd);
}

static int t_renameat(int a, const char *from, int b, const char *to)
{
    note("rename %s %s", from, to);
    return rally__snap_sys_real.renameat(a, from, b, to);
}

static int t_unlinkat(int d, const char *name, int flags)
{
    note("unlink %s", name);
    return rally__snap_sys_real.unlinkat(d, name, flags);
}

static void trace_on(void)
{
    ntrace = 0;
    memset(fd_names, 0, sizeof fd_names);
    rally__snap_sys.openat = t_openat;
    rally__snap_sys.write = t_write;
    rally__snap_sys.fsync = t_fsync;
    rally__snap_sys.close = t_close;
    rally__snap_sys.renameat = t_renameat;
    rally__snap_sys.unlinkat = t_unlinkat;
}

static int find(int from, const char *what)
{
    for (int i = from; i < ntrace; i++)
        if (strcmp(trace[i], what) == 0)
            return i;
    return -1;
}

static void write_order_pinned(void **state)
{
    struct rally__err e = {0};
    struct spec s = simple(RUN_A, "2026-11-30T12:00:00.000000Z", 3);
    trace_on();
    assert_int_equal(write_snapshot(tmp_root, &s, &e), RALLY_OK);
    const char *files[] = {"global.bin", "local-0000.bin", "local-0001.bin", "MANIFEST.json"};
    int last_end = -1;
    for (int f = 0; f < 4; f++) {
        char tmp[64], ev[6][96];
        snprintf(tmp, sizeof tmp, ".%s.tmp", files[f]);
        snprintf(ev[0], sizeof ev[0], "unlink %s", tmp);
        snprintf(ev[1], sizeof ev[1], "open %s", tmp);
        snprintf(ev[2], sizeof ev[2], "write %s", tmp);
        snprintf(ev[3], sizeof ev[3], "fsync %s", tmp);
        snprintf(ev[4], sizeof ev[4], "rename %s %s", tmp, files[f]);
        snprintf(ev[5], sizeof ev[5], "fsync dir");
        int at = find(0, ev[0]);
        assert_true(at > last_end); /* files in order; the manifest after every part */
        for (int k = 1; k < 6; k++) {
            int next = find(at + 1, ev[k]);
            if (next < 0)
                fail_msg("%s: no '%s' after '%s'", files[f], ev[k], trace[at]);
            /* nothing but more writes of the same file may sit between */
            for (int j = at + 1; j < next; j++)
                if (strcmp(trace[j], ev[2]) != 0)
                    fail_msg("%s: '%s' between '%s' and '%s'", files[f], trace[j], trace[at],
                             ev[k]);
            at = next;
        }
        last_end = at;
    }
    /* The commit's directory fsync is the very last call. */
    assert_int_equal(last_end, ntrace - 1);

    /* Removal: the manifest goes first, then the directory is fsync'd. */
    char job[512];
    snprintf(job, sizeof job, "%s/job", tmp_root);
    trace_on();
    assert_int_equal(rally__snap_remove(job, "snap-00000003", &e), RALLY_OK);
    assert_string_equal(trace[0], "unlink MANIFEST.json");
    assert_string_equal(trace[1], "fsync dir");
    assert_string_equal(trace[ntrace - 2], "unlink snap-00000003");
}

/* --- torture: fault points ----------------------------------------------------------- */

static const char *fault_file; /* the file whose write fails */
static int fault_point;        /* RALLY__SNAP_AT_* */
static uint64_t fault_after;   /* for AT_WRITE and ENOSPC: bytes before it */
static uint64_t budget;        /* bytes the write override still lets through */
static int enospc;             /* fail the write with ENOSPC instead of stopping */
static int fault_fd = -1;

static int f_fault(int point, const char *name, uint64_t nbytes)
{
    if (enospc || strcmp(name, fault_file) != 0 || point != fault_point)
        return 0;
    return point != RALLY__SNAP_AT_WRITE || nbytes >= fault_after;
}

static int f_openat(int d, const char *name, int flags, mode_t mode)
{
    int fd = rally__snap_sys_real.openat(d, name, flags, mode);
    char tmp[64];
    snprintf(tmp, sizeof tmp, ".%s.tmp", fault_file);
    if (strcmp(name, tmp) == 0) {
        fault_fd = fd;
        budget = fault_after;
    }
    return fd;
}

/* Lets exactly fault_after bytes of the faulty file through: short writes,
 * then ENOSPC (when enospc) or the fault hook's stop. */
static ssize_t f_write(int fd, const void *p, size_t n)
{
    if (fd != fault_fd)
        return rally__snap_sys_real.write(fd, p, n);
    if (budget == 0 && enospc) {
        errno = ENOSPC;
        return -1;
    }
    if (n > budget && budget > 0)
        n = (size_t)budget;
    ssize_t w = rally__snap_sys_real.write(fd, p, n);
    if (w > 0)
        budget -= (uint64_t)w;
    return w;
}

struct fault_case {
    const char *name;
    const char *file;
    int point;
    uint64_t after;
    int enospc;
    int v2_loads; /* the new snapshot is complete after the fault */
};

static const struct fault_case FAULT_CASES[] = {
    {"global_after_1_byte", "global.bin", RALLY__SNAP_AT_WRITE, 1, 0, 0},
    {"global_after_71_bytes", "global.bin", RALLY__SNAP_AT_WRITE, 71, 0, 0},
    {"global_after_200_bytes", "global.bin", RALLY__SNAP_AT_WRITE, 200, 0, 0},
    {"global_before_rename", "global.bin", RALLY__SNAP_AT_RENAME, 0, 0, 0},
    {"global_before_dirsync", "global.bin", RALLY__SNAP_AT_DIRSYNC, 0, 0, 0},
    {"local_before_rename", "local-0001.bin", RALLY__SNAP_AT_RENAME, 0, 0, 0},
    {"global_enospc_at_100", "global.bin", 0, 100, 1, 0},
    {"local_enospc_at_0", "local-0000.bin", 0, 0, 1, 0},
    {"manifest_after_10_bytes", "MANIFEST.json", RALLY__SNAP_AT_WRITE, 10, 0, 0},
    {"manifest_before_rename", "MANIFEST.json", RALLY__SNAP_AT_RENAME, 0, 0, 0},
    {"manifest_enospc_at_500", "MANIFEST.json", 0, 500, 1, 0},
    /* renamed, not yet fsync'd: the manifest is there, so the snapshot is
     * complete as far as any reader can tell (not yet durable) */
    {"manifest_before_dirsync", "MANIFEST.json", RALLY__SNAP_AT_DIRSYNC, 0, 0, 1},
};

static void fault_points(void **state)
{
    for (size_t i = 0; i < sizeof FAULT_CASES / sizeof FAULT_CASES[0]; i++) {
        const struct fault_case *c = &FAULT_CASES[i];
        char root[512], job[600], tmp[700];
        struct rally__err e = {0};
        snprintf(root, sizeof root, "%s/%s", tmp_root, c->name);
        snprintf(job, sizeof job, "%s/job", root);
        rally__snap_sys = rally__snap_sys_real;
        struct spec v1 = simple(RUN_A, "2026-11-30T12:00:00.000000Z", 1);
        struct spec v2 = simple(RUN_A, "2026-11-30T12:00:00.000000Z", 2);
        assert_int_equal(write_snapshot(root, &v1, &e), RALLY_OK);

        fault_file = c->file;
        fault_point = c->point;
        fault_after = c->after;
        enospc = c->enospc;
        fault_fd = -1;
        rally__snap_sys.openat = f_openat;
        rally__snap_sys.write = f_write;
        rally__snap_sys.fault = f_fault;
        int rc = write_snapshot(root, &v2, &e);
        rally__snap_sys = rally__snap_sys_real;
        if (rc != RALLY_ESYS)
            fail_msg("%s: the faulty write returned %d (%s)", c->name, rc, e.msg);
        if (c->enospc) {
            assert_non_null(strstr(e.msg, "no space left"));
            snprintf(tmp, sizeof tmp, "%s/snap-00000002/.%s.tmp", job, c->file);
            assert_int_equal(access(tmp, F_OK), -1); /* the temporary is gone */
        } else {
            assert_non_null(strstr(e.msg, "injected fault"));
        }
        /* The previous snapshot stays loadable and stays "latest" unless the
         * new one is complete. */
        rally__err_clear(&e);
        if (loads(root, "job", 1, &e) != RALLY_OK)
            fail_msg("%s: the previous snapshot no longer loads: %s", c->name, e.msg);
        rally__err_clear(&e);
        int rc2 = loads(root, "job", 2, &e);
        if (c->v2_loads ? rc2 != RALLY_OK : rc2 == RALLY_OK)
            fail_msg("%s: the new snapshot %s", c->name,
                     c->v2_loads ? "does not load" : "loads after a torn write");
        struct rally__snap_entry *v = NULL;
        size_t n = 0;
        assert_int_equal(rally__snap_list(job, &e, &v, &n), RALLY_OK);
        assert_int_equal(n, 2);
        assert_int_equal(v[1].state, c->v2_loads ? RALLY__SNAP_COMPLETE : RALLY__SNAP_INCOMPLETE);
        assert_int_equal(v[rally__snap_latest(v, n)].version, c->v2_loads ? 2 : 1);
        free(v);
        /* The next successful snapshot's retention removes the torn one. */
        struct spec v3 = simple(RUN_A, "2026-11-30T12:00:00.000000Z", 3);
        int removed = 0;
        assert_int_equal(write_snapshot(root, &v3, &e), RALLY_OK);
        assert_int_equal(rally__snap_retain(job, RUN_A, 1, &e, &removed), RALLY_OK);
        assert_int_equal(removed, 2);
        assert_int_equal(rally__snap_list(job, &e, &v, &n), RALLY_OK);
        assert_int_equal(n, 1);
        assert_int_equal(v[0].version, 3);
        free(v);
    }
}

/* --- the writer's refusals ------------------------------------------------------------------ */

static void writer_refuses(void **state)
{
    char root[512], link[600], job[600];
    struct rally__err e = {0};
    snprintf(root, sizeof root, "%s/refuse", tmp_root);
    struct spec s = simple(RUN_A, "2026-11-30T12:00:00.000000Z", 6);
    assert_int_equal(write_snapshot(root, &s, &e), RALLY_OK);
    /* a committed snapshot is never written into again */
    struct rally__snap_target t = {root, "job", RUN_A, 6, 2, NULL};
    struct rally__snap_file f;
    assert_int_equal(rally__snap_write_part(&t, 0, "x", 1, &e, &f), RALLY_EINVAL);
    assert_non_null(strstr(e.msg, "already committed"));
    /* bad names */
    struct rally__snap_target bad = {root, "../up", RUN_A, 7, 2, NULL};
    rally__err_clear(&e);
    assert_int_equal(rally__snap_write_part(&bad, 0, "x", 1, &e, &f), RALLY_EINVAL);
    assert_non_null(strstr(e.msg, "job name"));
    /* a job directory that is a link is not followed */
    snprintf(job, sizeof job, "%s/job", root);
    snprintf(link, sizeof link, "%s/linked", root);
    assert_int_equal(symlink(job, link), 0);
    struct rally__snap_target viaLink = {root, "linked", RUN_A, 8, 2, NULL};
    rally__err_clear(&e);
    assert_int_equal(rally__snap_write_part(&viaLink, 0, "x", 1, &e, &f), RALLY_EPROTO);
    assert_non_null(strstr(e.msg, "symbolic link"));
    /* the commit checks the files' sizes */
    struct spec s9 = simple(RUN_A, "2026-11-30T12:00:00.000000Z", 9);
    struct rally__snap_manifest m;
    struct rally__snap_file files[8];
    assert_int_equal(write_parts(root, &s9, &m, files, &e), RALLY_OK);
    files[1].nbytes += 1;
    rally__err_clear(&e);
    assert_int_equal(rally__snap_commit(root, &m, &e, NULL, 0), RALLY_EPROTO);
    assert_non_null(strstr(e.msg, "local-0000.bin is 112 bytes, the manifest says 113"));
}

static void uuid_and_time(void **state)
{
    char a[RALLY__SNAP_UUID_LEN + 1], b[RALLY__SNAP_UUID_LEN + 1], t[RALLY__SNAP_TIME_LEN + 1];
    struct rally__err e = {0};
    assert_int_equal(rally__snap_uuid(a, &e), RALLY_OK);
    assert_int_equal(rally__snap_uuid(b, &e), RALLY_OK);
    assert_string_not_equal(a, b);
    assert_int_equal(strlen(a), 36);
    assert_int_equal(a[14], '4');
    rally__snap_now(t);
    assert_int_equal(strlen(t), 27);
    assert_int_equal(t[26], 'Z');
    assert_int_equal(t[19], '.');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(write_order_pinned, setup, teardown),
        cmocka_unit_test_setup_teardown(fault_points, setup, teardown),
        cmocka_unit_test_setup_teardown(writer_refuses, setup, teardown),
        cmocka_unit_test(uuid_and_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
