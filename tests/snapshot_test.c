/*
 * snapshot_test.c — unit tests of durable snapshots (src/snapshot; cmocka).
 *
 * Golden: the snapshot committed under tests/snapshot_golden (format
 * version 1) loads, and the writer reproduces its bytes exactly from the
 * same inputs.  Order: the durable write's system calls, recorded through
 * the syscall table, are write -> fsync -> rename -> fsync(dir) for every
 * file, the manifest last.  Torture: a write stopped after N bytes, before
 * the rename, before the directory fsync, or failed with ENOSPC leaves the
 * previous snapshot loadable and the torn one never loads.  Damage: a
 * truncated file, a flipped byte, a missing file, a malformed manifest, a
 * symlink in place of a file each give an error naming the problem.
 * Listing: "latest" is the newest run's newest snapshot, never the highest
 * version across runs; retention keeps K of one run and touches nothing
 * else; a fresh start into a directory with snapshots is refused; the
 * job directory's lock fences an older run's orphans.  The background writer: the caller stalls
 * only for the copy, one snapshot in flight, results (or errors) collected by poll.  Resuming: a
 * job that differs from the snapshot is refused, naming both values, unless forced where that is
 * safe.
 *
 *   snapshot_test GOLDEN_DIR            run the tests
 *   snapshot_test --write-golden DIR    write the golden snapshot into DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "rally/snapshot.h"
#include "snapshot/snapshot.h"
#include "snapshot/store.h"
#include "snapshot/sys.h"
#include "util/config.h"

#include "snapshot_spec.h"

static const char *golden_dir;

/* --- making snapshots ------------------------------------------------------------ */

static const struct spec golden_spec = {
    "demo", RUN_A, "2026-11-30T12:00:00.000000Z", "2026-11-30T12:03:07.512301Z", 7, 2, 1, 100, 24};

static int setup(void **state)
{
    return tmp_setup();
}

static int teardown(void **state)
{
    return tmp_teardown();
}

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

static int write_golden(const char *dir)
{
    struct rally__err e = {0};
    if (write_snapshot(dir, &golden_spec, &e) != RALLY_OK) {
        fprintf(stderr, "snapshot_test: %s\n", e.msg);
        return 1;
    }
    printf("wrote %s/demo/snap-00000007\n", dir);
    return 0;
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

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write-golden") == 0)
        return write_golden(argv[2]);
    if (argc != 2) {
        fprintf(stderr, "usage: snapshot_test GOLDEN_DIR | --write-golden DIR\n");
        return 2;
    }
    golden_dir = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(golden_loads, setup, teardown),
        cmocka_unit_test_setup_teardown(golden_reproduced, setup, teardown),
        cmocka_unit_test_setup_teardown(write_order_pinned, setup, teardown),
        cmocka_unit_test_setup_teardown(fault_points, setup, teardown),
        cmocka_unit_test_setup_teardown(damaged_snapshots, setup, teardown),
        cmocka_unit_test_setup_teardown(checksum_error_names_both, setup, teardown),
        cmocka_unit_test_setup_teardown(manifest_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(writer_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(latest_is_newest_run, setup, teardown),
        cmocka_unit_test_setup_teardown(retention_keeps_k_of_one_run, setup, teardown),
        cmocka_unit_test_setup_teardown(retention_races_another_rank, setup, teardown),
        cmocka_unit_test_setup_teardown(fresh_start_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(lock_fences_orphans, setup, teardown),
        cmocka_unit_test_setup_teardown(lock_refuses_planted_links, setup, teardown),
        cmocka_unit_test_setup_teardown(background_writer, setup, teardown),
        cmocka_unit_test(resume_compatibility),
        cmocka_unit_test(uuid_and_time),
        cmocka_unit_test(busy_setting),
        cmocka_unit_test_setup_teardown(background_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(public_reader, setup, teardown),
        cmocka_unit_test_setup_teardown(copier_copies, setup, teardown),
        cmocka_unit_test_setup_teardown(copy_verifies_where_it_lands, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
