/*
 * snapshot_s3_test.c — snapshots on an object store (src/snapshot/store_s3.c)
 * against a real S3 API: the Swift that tests/jobs/snapshot_s3_test.sh starts on
 * loopback (cmocka).  The torture cases of the directory, on objects: a
 * writer killed with -9 in the middle of a part's upload and of the
 * manifest's, a truncated object, an altered byte, a missing part, a stale
 * manifest; retention, the clean-up after success, the fresh-start check;
 * a copy from a directory and back, byte for byte; and the errors a user
 * meets first (no credentials, a wrong secret, no bucket, no lock).
 *
 *   snapshot_s3_test s3://BUCKET/PREFIX   (AWS_* variables name the store)
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "snapshot/snapshot.h"
#include "snapshot/store.h"
#include "snapshot/sys.h"

#include "snapshot_spec.h"

static const char *base; /* s3://BUCKET/PREFIX */
static char root[512];   /* base/<test>: each test its own prefix */

static int setup(void **state)
{
    static int n;
    snprintf(root, sizeof root, "%s/t%d-%ld", base, ++n, (long)getpid());
    return tmp_setup();
}

static int teardown(void **state)
{
    return tmp_teardown();
}

static void job_dir(char *out, size_t cap)
{
    snprintf(out, cap, "%s/job", root);
}

/* The listing of root/job (*n entries, the caller's to free). */
static struct rally__snap_entry *listing(size_t *n)
{
    char jobdir[600];
    struct rally__err e = {0};
    struct rally__snap_entry *x = NULL;
    job_dir(jobdir, sizeof jobdir);
    if (rally__snap_list(jobdir, &e, &x, n) != RALLY_OK)
        fail_msg("listing %s: %s", jobdir, e.msg);
    return x;
}

/* The state of version v in root/job (-1 when not listed), why in why[cap]. */
static int state_of(uint64_t v, char *why, size_t cap)
{
    size_t n = 0;
    struct rally__snap_entry *x = listing(&n);
    int st = -1;
    for (size_t i = 0; i < n; i++)
        if (x[i].version == v) {
            st = x[i].state;
            if (why != NULL)
                snprintf(why, cap, "%s", x[i].why);
        }
    free(x);
    return st;
}

/* Version of "latest" in root/job (0: none). */
static uint64_t latest_version(void)
{
    size_t n = 0;
    struct rally__snap_entry *x = listing(&n);
    long at = rally__snap_latest(x, n);
    uint64_t v = at < 0 ? 0 : x[at].version;
    free(x);
    return v;
}

/* Puts bytes as root/job/snap-v/name through the store, over what is there. */
static void put_object(uint64_t v, const char *name, const void *p, size_t n)
{
    char dir[128];
    struct rally__err e = {0};
    struct rally__store *st = NULL;
    snprintf(dir, sizeof dir, "job/snap-%08llu", (unsigned long long)v);
    assert_int_equal(rally__store_open(root, &e, &st), RALLY_OK);
    struct rally__snap_chunk c = {p, n};
    if (st->ops->put(st, dir, name, &c, 1, &e, NULL) != RALLY_OK)
        fail_msg("put %s/%s: %s", dir, name, e.msg);
    rally__store_close(st);
}

/* root/job/snap-v/name's bytes, fetched through the store (*n its size). */
static int grow(void *arg, const void *p, size_t n)
{
    struct {
        unsigned char *p;
        size_t n;
    } *b = arg;
    b->p = realloc(b->p, b->n + n + 1);
    memcpy(b->p + b->n, p, n);
    b->n += n;
    return 0;
}

static unsigned char *get_object(uint64_t v, const char *name, size_t *n)
{
    char dir[128];
    struct rally__err e = {0};
    struct rally__store *st = NULL;
    struct {
        unsigned char *p;
        size_t n;
    } b = {NULL, 0};
    snprintf(dir, sizeof dir, "job/snap-%08llu", (unsigned long long)v);
    assert_int_equal(rally__store_open(root, &e, &st), RALLY_OK);
    if (st->ops->get(st, dir, name, UINT64_MAX, grow, &b, &e, NULL) != RALLY_OK)
        fail_msg("get %s/%s: %s", dir, name, e.msg);
    rally__store_close(st);
    *n = b.n;
    return b.p;
}

static size_t count_objects(uint64_t v)
{
    char dir[128];
    struct rally__err e = {0};
    struct rally__store *st = NULL;
    char **names = NULL;
    size_t n = 0;
    snprintf(dir, sizeof dir, "job/snap-%08llu", (unsigned long long)v);
    assert_int_equal(rally__store_open(root, &e, &st), RALLY_OK);
    assert_int_equal(st->ops->list(st, dir, &e, NULL, &names, &n), RALLY_OK);
    rally__store_free_names(names, n);
    rally__store_close(st);
    return n;
}

/* --- round trip ------------------------------------------------------------------- */

static void round_trip(void **state)
{
    struct rally__err e = {0};
    struct spec s = simple(RUN_A, "2026-11-30T12:00:00.000000Z", 3);
    s.world = 3;
    s.global_nbytes = (3u << 20) + 17; /* pieces of more than one read */
    if (write_snapshot(root, &s, &e) != RALLY_OK)
        fail_msg("writing to %s: %s", root, e.msg);
    assert_int_equal(loads(root, "job", 3, &e), RALLY_OK);
    assert_int_equal(state_of(3, NULL, 0), RALLY__SNAP_COMPLETE);
    assert_int_equal(latest_version(), 3);
    char p[600];
    struct rally__snap *sn = NULL;
    snap_path(p, sizeof p, root, "job", 3);
    assert_int_equal(rally__snap_open(p, &e, &sn), RALLY_OK);
    for (int r = -1; r < 3; r++) {
        void *b = NULL;
        uint64_t n = 0;
        uint64_t want_n = r < 0 ? s.global_nbytes : s.local_nbytes;
        unsigned char *want = model(r, 3, want_n);
        assert_int_equal(rally__snap_read(sn, r, &e, &b, &n), RALLY_OK);
        assert_int_equal(n, want_n);
        assert_memory_equal(b, want, want_n);
        free(b);
        free(want);
    }
    rally__snap_close(sn);
    /* the job is found under the root, as rally-snapshot ls finds it */
    char **jobs = NULL;
    size_t nj = 0;
    assert_int_equal(rally__snap_jobs(root, &e, &jobs, &nj), RALLY_OK);
    assert_int_equal(nj, 1);
    assert_string_equal(jobs[0], "job");
    rally__snap_names_free(jobs, nj);
    /* committed once: never written into again */
    struct rally__snap_target t = {root, "job", RUN_A, 3, 3, NULL};
    struct rally__snap_file f;
    assert_int_equal(rally__snap_write_part(&t, 0, "x", 1, &e, &f), RALLY_EINVAL);
    assert_non_null(strstr(e.msg, "already committed"));
}

/* A directory's snapshot copied to the store and back is the same bytes. */
static void copy_both_ways(void **state)
{
    struct rally__err e = {0};
    struct spec s = simple(RUN_A, "2026-11-30T12:00:00.000000Z", 5);
    char src[600], there[700], back[700], local2[600];
    assert_int_equal(write_snapshot(tmp_root, &s, &e), RALLY_OK);
    snap_path(src, sizeof src, tmp_root, "job", 5);
    if (rally__snap_copy(src, root, &e, there, sizeof there) != RALLY_OK)
        fail_msg("copy to %s: %s", root, e.msg);
    assert_non_null(strstr(there, "s3://"));
    /* again: copied before, it counts when it verifies */
    assert_int_equal(rally__snap_copy(src, root, &e, there, sizeof there), RALLY_OK);
    snprintf(local2, sizeof local2, "%s/back", tmp_root);
    assert_int_equal(rally__snap_copy(there, local2, &e, back, sizeof back), RALLY_OK);
    const char *names[] = {"MANIFEST.json", "global.bin", "local-0000.bin", "local-0001.bin"};
    for (int i = 0; i < 4; i++) {
        char a[800], b[800], cmd[1800];
        snprintf(a, sizeof a, "%s/%s", src, names[i]);
        snprintf(b, sizeof b, "%s/%s", back, names[i]);
        snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
        if (system(cmd) != 0)
            fail_msg("%s differs from %s after a round trip through %s", b, a, root);
    }
}

/* --- kill -9 in the middle of an upload ------------------------------------------- */

static const char *kill_file;
static uint64_t kill_after;

static int kill_at(int point, const char *name, uint64_t nbytes)
{
    if (point == RALLY__SNAP_AT_WRITE && strcmp(name, kill_file) == 0 && nbytes >= kill_after)
        kill(getpid(), SIGKILL);
    return 0;
}

/* Writes version v in a child killed -9 once after bytes of file went out. */
static void killed_writer(uint64_t v, const char *file, uint64_t after)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rally__err e = {0};
        struct spec s = simple(RUN_A, "2026-11-30T12:00:00.000000Z", v);
        s.global_nbytes = 4u << 20;
        kill_file = file;
        kill_after = after;
        rally__snap_sys.fault = kill_at;
        write_snapshot(root, &s, &e);
        _exit(0); /* not killed: the test fails below */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        fail_msg("the writer of version %llu was not killed in %s's upload",
                 (unsigned long long)v, file);
}

static void kill9_mid_upload(void **state)
{
    struct rally__err e = {0};
    char why[512];
    struct spec v1 = simple(RUN_A, "2026-11-30T12:00:00.000000Z", 1);
    assert_int_equal(write_snapshot(root, &v1, &e), RALLY_OK);

    /* half of a 4 MiB global.bin sent: no object at all, nothing listed */
    killed_writer(2, "global.bin", 2u << 20);
    assert_int_equal(count_objects(2), 0);
    assert_int_equal(state_of(2, NULL, 0), -1);
    assert_int_equal(latest_version(), 1);
    assert_int_equal(loads(root, "job", 1, &e), RALLY_OK);

    /* every part there, the manifest cut after 100 bytes: incomplete */
    killed_writer(3, "MANIFEST.json", 100);
    assert_int_equal(count_objects(3), 3);
    assert_int_equal(state_of(3, why, sizeof why), RALLY__SNAP_INCOMPLETE);
    assert_non_null(strstr(why, "never committed"));
    assert_int_equal(latest_version(), 1);
    assert_int_not_equal(loads(root, "job", 3, &e), RALLY_OK);
    assert_non_null(strstr(e.msg, "incomplete"));

    /* retention takes the torn one (its parts name the run), keeps v1 */
    char jobdir[600];
    int removed = -1;
    job_dir(jobdir, sizeof jobdir);
    assert_int_equal(rally__snap_retain(jobdir, RUN_A, 1, &e, &removed), RALLY_OK);
    assert_int_equal(removed, 1);
    assert_int_equal(count_objects(3), 0);
    assert_int_equal(loads(root, "job", 1, &e), RALLY_OK);
}

/* --- damage ----------------------------------------------------------------------- */

static void write_two(void)
{
    struct rally__err e = {0};
    for (uint64_t v = 1; v <= 2; v++) {
        struct spec s = simple(RUN_A, "2026-11-30T12:00:00.000000Z", v);
        if (write_snapshot(root, &s, &e) != RALLY_OK)
            fail_msg("writing version %llu: %s", (unsigned long long)v, e.msg);
    }
    assert_int_equal(latest_version(), 2);
}

/* "latest" refused, rally__snap_older names version 1. */
static void older_is_one(void)
{
    char jobdir[600], p[700], older[700];
    uint64_t v = 0;
    job_dir(jobdir, sizeof jobdir);
    snap_path(p, sizeof p, root, "job", 2);
    assert_int_equal(rally__snap_older(jobdir, NULL, p, older, sizeof older, &v), 1);
    assert_int_equal(v, 1);
}

static void truncated_object(void **state)
{
    struct rally__err e = {0};
    char why[512];
    size_t n = 0;
    write_two();
    unsigned char *b = get_object(2, "global.bin", &n);
    put_object(2, "global.bin", b, n - 10);
    free(b);
    assert_int_equal(state_of(2, why, sizeof why), RALLY__SNAP_DAMAGED);
    assert_non_null(strstr(why, "global.bin is 362 bytes, the manifest says 372"));
    assert_int_equal(latest_version(), 1);
    assert_int_equal(loads(root, "job", 2, &e), RALLY_EPROTO);
    older_is_one();
}

static void altered_byte(void **state)
{
    struct rally__err e = {0};
    size_t n = 0;
    write_two();
    unsigned char *b = get_object(2, "local-0001.bin", &n);
    b[n - 1] ^= 0x40;
    put_object(2, "local-0001.bin", b, n);
    free(b);
    /* the sizes agree: listed complete, refused when read */
    assert_int_equal(state_of(2, NULL, 0), RALLY__SNAP_COMPLETE);
    assert_int_equal(loads(root, "job", 2, &e), RALLY_EPROTO);
    assert_non_null(strstr(e.msg, "local-0001.bin's checksum is"));
    assert_non_null(strstr(e.msg, "the file is damaged"));
    older_is_one();
}

static void missing_part(void **state)
{
    struct rally__err e = {0};
    char why[512], dir[64];
    struct rally__store *st = NULL;
    write_two();
    snprintf(dir, sizeof dir, "job/snap-%08d", 2);
    assert_int_equal(rally__store_open(root, &e, &st), RALLY_OK);
    assert_int_equal(st->ops->remove(st, dir, "local-0000.bin", 1, &e), RALLY_OK);
    rally__store_close(st);
    assert_int_equal(state_of(2, why, sizeof why), RALLY__SNAP_DAMAGED);
    assert_non_null(strstr(why, "local-0000.bin is missing"));
    assert_int_equal(latest_version(), 1);
    older_is_one();
}

static void stale_manifest(void **state)
{
    char why[512];
    size_t n = 0;
    write_two();
    unsigned char *b = get_object(1, RALLY__SNAP_MANIFEST, &n);
    put_object(2, RALLY__SNAP_MANIFEST, b, n);
    free(b);
    assert_int_equal(state_of(2, why, sizeof why), RALLY__SNAP_DAMAGED);
    assert_non_null(strstr(why, "says checkpoint version 1, the directory's name 2"));
    assert_int_equal(latest_version(), 1);
}

/* --- retention, clean-up, a fresh start ------------------------------------------- */

static void retention_and_cleanup(void **state)
{
    struct rally__err e = {0};
    char jobdir[600], say[512];
    int removed = -1;
    job_dir(jobdir, sizeof jobdir);
    for (uint64_t v = 1; v <= 4; v++) {
        struct spec s = simple(RUN_A, "2026-11-30T12:00:00.000000Z", v);
        assert_int_equal(write_snapshot(root, &s, &e), RALLY_OK);
    }
    struct spec other = simple(RUN_B, "2026-11-29T12:00:00.000000Z", 9);
    assert_int_equal(write_snapshot(root, &other, &e), RALLY_OK);
    /* keep 2 of run A: 1 and 2 go, every object of them; run B stays */
    assert_int_equal(rally__snap_retain(jobdir, RUN_A, 2, &e, &removed), RALLY_OK);
    assert_int_equal(removed, 2);
    assert_int_equal(count_objects(1), 0);
    assert_int_equal(count_objects(2), 0);
    assert_int_equal(state_of(3, NULL, 0), RALLY__SNAP_COMPLETE);
    assert_int_equal(state_of(4, NULL, 0), RALLY__SNAP_COMPLETE);
    /* a fresh start there is refused, naming what is there */
    assert_int_equal(rally__snap_check_fresh(jobdir, "--resume latest", "--overwrite", &e),
                     RALLY_EINVAL);
    assert_non_null(strstr(e.msg, "snap-00000003 (complete)"));
    /* the run succeeded: its snapshots go, the other run's stay */
    rally__snap_clean_run(jobdir, RUN_A, "--keep-snapshots", say, sizeof say);
    assert_non_null(strstr(say, "removed its 2 snapshots"));
    assert_int_equal(count_objects(3) + count_objects(4), 0);
    assert_int_equal(state_of(9, NULL, 0), RALLY__SNAP_COMPLETE);
    char gone[700];
    snprintf(gone, sizeof gone, "%s/other", root);
    assert_int_equal(rally__snap_check_fresh(gone, "--resume latest", "--overwrite", &e),
                     RALLY_OK);
}

/* --- what a user meets first ------------------------------------------------------ */

static void errors_say_why(void **state)
{
    struct rally__err e = {0};
    struct rally__snap_entry *x = NULL;
    size_t n = 0;
    char jobdir[600], nobucket[600];
    struct rally__snap_lock *l = NULL;
    job_dir(jobdir, sizeof jobdir);
    /* an object store holds no lock */
    assert_int_equal(rally__snap_lock_take(root, "job", RUN_A, &e, &l), RALLY_EINVAL);
    assert_non_null(strstr(e.msg, "holds no lock"));
    /* another scheme */
    rally__err_clear(&e);
    assert_int_equal(rally__snap_list("gs://b/p", &e, &x, &n), RALLY_EINVAL);
    assert_non_null(strstr(e.msg, "unknown storage scheme"));
    /* no bucket */
    rally__err_clear(&e);
    const char *slash = strchr(base + 5, '/');
    snprintf(nobucket, sizeof nobucket, "s3://no-such-bucket-here%s", slash ? slash : "");
    assert_int_equal(rally__snap_list(nobucket, &e, &x, &n), RALLY_ESYS);
    assert_non_null(strstr(e.msg, "does not exist"));
    /* a wrong secret */
    rally__err_clear(&e);
    char *secret = strdup(getenv("AWS_SECRET_ACCESS_KEY"));
    setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret", 1);
    assert_int_equal(rally__snap_list(jobdir, &e, &x, &n), RALLY_ESYS);
    assert_non_null(strstr(e.msg, "access denied"));
    /* no credentials at all */
    rally__err_clear(&e);
    char *id = strdup(getenv("AWS_ACCESS_KEY_ID"));
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
    assert_int_equal(rally__snap_list(jobdir, &e, &x, &n), RALLY_EINVAL);
    assert_non_null(strstr(e.msg, "no AWS credentials"));
    /* the same credentials from a profile of a credentials file */
    char creds[400];
    snprintf(creds, sizeof creds, "%s/credentials", tmp_root);
    FILE *f = fopen(creds, "w");
    assert_non_null(f);
    fprintf(f, "[default]\naws_access_key_id = wrong\n\n[rig]\naws_access_key_id = %s\n"
               "aws_secret_access_key = %s\n",
            id, secret);
    fclose(f);
    setenv("AWS_SHARED_CREDENTIALS_FILE", creds, 1);
    setenv("AWS_PROFILE", "rig", 1);
    struct spec s = simple(RUN_A, "2026-11-30T12:00:00.000000Z", 1);
    rally__err_clear(&e);
    if (write_snapshot(root, &s, &e) != RALLY_OK)
        fail_msg("with profile rig of %s: %s", creds, e.msg);
    unsetenv("AWS_PROFILE");
    unsetenv("AWS_SHARED_CREDENTIALS_FILE");
    setenv("AWS_ACCESS_KEY_ID", id, 1);
    setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
    free(id);
    free(secret);
    assert_int_equal(loads(root, "job", 1, &e), RALLY_OK);
}

int main(int argc, char **argv)
{
    if (argc != 2 || strncmp(argv[1], "s3://", 5) != 0) {
        fprintf(stderr, "usage: snapshot_s3_test s3://BUCKET/PREFIX\n");
        return 2;
    }
    base = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(copy_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(kill9_mid_upload, setup, teardown),
        cmocka_unit_test_setup_teardown(truncated_object, setup, teardown),
        cmocka_unit_test_setup_teardown(altered_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(missing_part, setup, teardown),
        cmocka_unit_test_setup_teardown(stale_manifest, setup, teardown),
        cmocka_unit_test_setup_teardown(retention_and_cleanup, setup, teardown),
        cmocka_unit_test_setup_teardown(errors_say_why, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
