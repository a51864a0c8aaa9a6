/*
 * rally-snapshot — looks at durable snapshots without running a job: lists
 * them, shows and verifies one, dumps its models, removes one
 * (docs/snapshot-format.md; the reader in src/snapshot/snapshot.h).
 *
 *   rally-snapshot ls DIR | show SNAP | verify SNAP
 *                  | dump SNAP [--rank R] [--app PROG] | cp SNAP DIR | rm SNAP
 *                  | request DIR [--timeout-ms MS]
 *
 * Exit codes: 0 done; 1 the snapshot is incomplete, damaged or refused;
 * 2 a usage error; 3 a system error (cannot read, out of memory);
 * 4 the --app printer failed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "rally/snapshot.h"
#include "snapshot/snapshot.h"
#include "util/clock.h"

#define PROG "rally-snapshot"
enum { EXIT_BAD = 1, EXIT_USAGE = 2, EXIT_SYS = 3, EXIT_APP = 4 };

static void usage(FILE *f)
{
    fprintf(f, "usage: rally-snapshot ls DIR\n"
               "       rally-snapshot show SNAP\n"
               "       rally-snapshot verify SNAP\n"
               "       rally-snapshot dump SNAP [--rank R] [--app PROG]\n"
               "       rally-snapshot cp SNAP DIR\n"
               "       rally-snapshot rm SNAP\n"
               "       rally-snapshot request DIR [--timeout-ms MS]\n"
               "Looks at the durable snapshots of rally jobs (DIR/JOB/snap-NNNNNNNN/).\n"
               "DIR may be a directory or an object store, s3://BUCKET/PREFIX (the AWS\n"
               "variables and files say where and as whom; docs/snapshot-format.md).\n"
               "For show, verify and dump, SNAP may be DIR/JOB/latest: the snapshot\n"
               "--resume latest would take.\n"
               "  ls DIR       the snapshots of a job directory (DIR/JOB), or of every job\n"
               "               under a snapshot directory: state, version, world, size, run;\n"
               "               '*' marks the one --resume latest would take\n"
               "  show SNAP    what the snapshot's manifest says (reads no model)\n"
               "  verify SNAP  checks every file's size, checksum and header\n"
               "  dump SNAP    verifies, prints the metadata and the global model (or rank\n"
               "               R's local model) in hex; with --app PROG, runs\n"
               "               'PROG --show FILE' with FILE holding the model's bytes exactly\n"
               "               as the application checkpointed them, so the application's\n"
               "               own printer shows it (rally-kmeans --show prints centroids)\n"
               "  cp SNAP DIR  copies a snapshot to DIR/JOB/snap-NNNNNNNN (another directory\n"
               "               or an object store), the manifest last, and verifies the copy\n"
               "  rm SNAP      removes a snapshot (the manifest first); refuses a directory\n"
               "               that holds a file that is not a snapshot's\n"
               "  request DIR  asks the job running in the job directory DIR (the rally-run\n"
               "               holding its lock) for a snapshot now, waits until it is\n"
               "               committed (at most MS ms, default 600000) and prints its path\n"
               "Exit status: 0 done, 1 incomplete, damaged or refused, 2 usage error,\n"
               "3 system error, 4 the --app printer failed.\n");
}

static int fail(const struct rally__err *e)
{
    fprintf(stderr, PROG ": %s\n", e->msg);
    return e->code == RALLY_ESYS || e->code == RALLY_ENOMEM ? EXIT_SYS : EXIT_BAD;
}

/* A public call's failure (rally/snapshot.h): its sentence, the exit code. */
static int failed(int rc, const char *err)
{
    fprintf(stderr, PROG ": %s\n", err);
    return rc == RALLY_ESYS || rc == RALLY_ENOMEM ? EXIT_SYS : EXIT_BAD;
}

static const char *state_name(int s)
{
    return s == RALLY_SNAPSHOT_COMPLETE     ? "complete"
           : s == RALLY_SNAPSHOT_INCOMPLETE ? "incomplete"
                                            : "damaged";
}

/* Prints one job directory's listing v (n entries). */
static void print_job(const char *jobdir, const rally_snapshot_entry_t *v, size_t n)
{
    printf("%s:\n", jobdir);
    if (n == 0)
        printf("  (no snapshots)\n");
    else
        printf("    %-14s %-10s %8s %5s %12s  %-8s  %s\n", "NAME", "STATE", "VERSION", "WORLD",
               "BYTES", "RUN", "CREATED");
    for (size_t i = 0; i < n; i++) {
        const rally_snapshot_entry_t *x = &v[i];
        char world[16] = "-", bytes[24] = "-";
        if (x->world > 0)
            snprintf(world, sizeof world, "%d", x->world);
        if (x->state == RALLY_SNAPSHOT_COMPLETE)
            snprintf(bytes, sizeof bytes, "%" PRIu64, x->nbytes);
        printf("  %c %-14s %-10s %8" PRIu64 " %5s %12s  %-8.8s  %s\n", x->latest ? '*' : ' ',
               x->name, state_name(x->state), x->version, world, bytes,
               x->run_id[0] ? x->run_id : "-", x->created[0] ? x->created : "-");
        if (x->state != RALLY_SNAPSHOT_COMPLETE)
            printf("      %s\n", x->why);
    }
}

/* Lists and prints one job directory; returns 0 or an exit code. */
static int list_job(const char *jobdir)
{
    char err[512];
    rally_snapshot_entry_t *v = NULL;
    size_t n = 0;
    int rc = rally_snapshot_list(jobdir, &v, &n, err, sizeof err);
    if (rc != RALLY_OK)
        return failed(rc, err);
    print_job(jobdir, v, n);
    rally_free(v);
    return 0;
}

/* rally-snapshot request DIR: SIGUSR1 to the launcher that holds the job
 * directory's lock (it asks rank 0, which raises the request bit at its
 * next commit), then the first complete snapshot of that run newer than
 * every snapshot directory there when it asked: the one requested (a
 * snapshot already being written then is not it). */
static int cmd_request(const char *jobdir, int64_t timeout_ms)
{
    struct rally__err e = {0};
    char run[RALLY__SNAP_UUID_LEN + 1], name[RALLY__SNAP_NAME_MAX];
    long pid;
    uint64_t before, top;
    if (rally__snap_lock_holder(jobdir, &e, run, &pid) != RALLY_OK)
        return fail(&e);
    if (rally__snap_newer(jobdir, run, UINT64_MAX, &before, name, &e) < 0)
        return fail(&e);
    if (kill((pid_t)pid, SIGUSR1) != 0) {
        fprintf(stderr, PROG ": cannot signal rally-run (pid %ld) of run %s: %s\n", pid, run,
                strerror(errno));
        return EXIT_SYS;
    }
    fprintf(stderr, PROG ": asked run %s (rally-run, pid %ld) for a snapshot\n", run, pid);
    int64_t deadline = rally__now_ms() + timeout_ms;
    for (;;) {
        int found = rally__snap_newer(jobdir, run, before, &top, name, &e);
        if (found < 0)
            return fail(&e);
        if (found) {
            printf("%s/%s\n", jobdir, name);
            return 0;
        }
        char now[RALLY__SNAP_UUID_LEN + 1];
        long p2;
        struct rally__err quiet = {0};
        if (rally__snap_lock_holder(jobdir, &quiet, now, &p2) != RALLY_OK ||
            strcmp(now, run) != 0) {
            /* the run ended: one last look, then say so */
            if (rally__snap_newer(jobdir, run, before, &top, name, &e) > 0) {
                printf("%s/%s\n", jobdir, name);
                return 0;
            }
            fprintf(stderr,
                    PROG ": run %s ended before the snapshot was committed (or, having "
                         "succeeded, removed it: rally-run --keep-snapshots keeps them)\n",
                    run);
            return EXIT_BAD;
        }
        if (rally__now_ms() >= deadline) {
            fprintf(stderr, PROG ": no snapshot of run %s was committed in %" PRId64 " ms\n", run,
                    timeout_ms);
            return EXIT_BAD;
        }
        rally__sleep_ms(20);
    }
}

static int cmd_ls(const char *dir)
{
    char err[512];
    rally_snapshot_entry_t *v = NULL;
    size_t n = 0;
    /* A job directory holds snap-* entries; a snapshot directory, jobs. */
    int rc = rally_snapshot_list(dir, &v, &n, err, sizeof err);
    if (rc != RALLY_OK)
        return failed(rc, err);
    if (n > 0) { /* listed once, printed as it is */
        print_job(dir, v, n);
        rally_free(v);
        return 0;
    }
    rally_free(v);
    char **jobs = NULL;
    size_t njobs = 0;
    int status = 0;
    struct rally__err e = {0};
    if (rally__snap_jobs(dir, &e, &jobs, &njobs) != RALLY_OK)
        return fail(&e);
    for (size_t i = 0; i < njobs; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, jobs[i]);
        int st = list_job(path);
        if (st != 0 && status == 0)
            status = st;
    }
    rally__snap_names_free(jobs, njobs);
    if (njobs == 0)
        printf("%s: no snapshots\n", dir);
    return status;
}

/* Opens SNAP (JOBDIR/latest: the one --resume latest would take, named on
 * stderr); 0, or the exit code after the reason. */
static int open_snap(const char *arg, rally_snapshot_t **s)
{
    char err[512];
    int rc = rally_snapshot_open(arg, s, err, sizeof err);
    if (rc != RALLY_OK)
        return failed(rc, err);
    if (strcmp(rally_snapshot_path(*s), arg) != 0)
        fprintf(stderr, PROG ": latest is %s\n", rally_snapshot_path(*s));
    return 0;
}

static void print_manifest(const rally_snapshot_t *s, int full)
{
#define F(name) rally_snapshot_field(s, name)
    const char *app = F("app_name");
    printf("snapshot          %s\n", rally_snapshot_path(s));
    printf("format version    %s\n", F("format_version"));
    printf("rally version     %s\n", F("rally_version"));
    printf("job               %s\n", F("job"));
    printf("snapshot id       %s\n", F("snapshot_id"));
    printf("run id            %s\n", F("run_id"));
    printf("run started       %s\n", F("run_started"));
    printf("checkpoint        version %" PRIu64 "\n", rally_snapshot_version(s));
    printf("created           %s\n", F("created"));
    printf("world size        %d\n", rally_snapshot_world(s));
    if (rally_snapshot_has_local(s))
        printf("local models      %s\n", rally_snapshot_local_records(s)
                                             ? "records (resume on any number of workers)"
                                             : "opaque (resume on the same number of workers)");
    uint64_t cv;
    int cw;
    for (size_t i = 0; rally_snapshot_world_change(s, i, &cv, &cw) == RALLY_OK; i++)
        printf("workers           %d from version %" PRIu64 "\n", cw, cv);
    printf("app               %s\n", app[0] ? app : "(none registered)");
    printf("app config        %s\n", F("app_config"));
    printf("app config hash   xxh3-64 %s\n", F("app_config_xxh3"));
    printf("partitioning      %s\n", F("partitioning"));
#undef F
    if (full) {
        for (int r = 0; r < rally_snapshot_world(s); r++) {
            const char *fp = rally_snapshot_fingerprint(s, r);
            printf("rank %-5d        host %s%s%s\n", r, rally_snapshot_host(s, r),
                   fp[0] ? "  input " : "", fp);
        }
        const char *key, *value;
        for (size_t i = 0; rally_snapshot_setting_at(s, i, &key, &value) == RALLY_OK; i++)
            printf("setting           %s=%s\n", key, value);
    }
    for (size_t i = 0; i < rally_snapshot_nfiles(s); i++) {
        const char *name;
        uint64_t nbytes, xxh3;
        rally_snapshot_file(s, i, &name, &nbytes, &xxh3);
        printf("file              %-16s %12" PRIu64 " bytes  xxh3-64 %016" PRIx64 "\n", name,
               nbytes, xxh3);
    }
}

static int cmd_show(const char *path)
{
    rally_snapshot_t *s = NULL;
    int st = open_snap(path, &s);
    if (st != 0)
        return st;
    print_manifest(s, 1);
    printf("(the models were not read: rally-snapshot verify checks every byte)\n");
    rally_snapshot_close(s);
    return 0;
}

static int cmd_verify(const char *path)
{
    char err[512];
    rally_snapshot_t *s = NULL;
    int st = open_snap(path, &s);
    if (st != 0)
        return st;
    int rc = rally_snapshot_verify(s, err, sizeof err);
    if (rc != RALLY_OK) {
        rally_snapshot_close(s);
        return failed(rc, err);
    }
    uint64_t total = 0, n = 0;
    for (size_t i = 0; rally_snapshot_file(s, i, NULL, &n, NULL) == RALLY_OK; i++)
        total += n;
    printf("%s: ok: checkpoint version %" PRIu64 ", %zu files, %" PRIu64
           " bytes, every size, checksum and header verified\n",
           rally_snapshot_path(s), rally_snapshot_version(s), rally_snapshot_nfiles(s), total);
    rally_snapshot_close(s);
    return 0;
}

static void hexdump(const unsigned char *p, uint64_t n)
{
    for (uint64_t off = 0; off < n; off += 16) {
        printf("%08" PRIx64 " ", off);
        for (uint64_t i = off; i < off + 16; i++) {
            if (i < n)
                printf(" %02x", p[i]);
            else
                printf("   ");
        }
        printf("  |");
        for (uint64_t i = off; i < off + 16 && i < n; i++)
            putchar(p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '.');
        printf("|\n");
    }
}

/* Writes the model to a private temporary file and runs app --show FILE. */
static int run_app(const char *app, const void *bytes, uint64_t nbytes)
{
    const char *tmpdir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/rally-snapshot-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        fprintf(stderr, PROG ": cannot create a temporary file for --app: %s\n", strerror(errno));
        return EXIT_SYS;
    }
    const unsigned char *p = bytes;
    uint64_t left = nbytes;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            fprintf(stderr, PROG ": cannot write %s: %s\n", path, strerror(errno));
            close(fd);
            unlink(path);
            return EXIT_SYS;
        }
        p += w;
        left -= (uint64_t)w;
    }
    close(fd);
    fflush(stdout);
    int status = 0;
    pid_t pid = fork();
    if (pid == 0) {
        execlp(app, app, "--show", path, (char *)NULL);
        fprintf(stderr, PROG ": cannot run %s: %s\n", app, strerror(errno));
        _exit(127);
    }
    int rc = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0) {
        fprintf(stderr, PROG ": cannot run %s: %s\n", app, strerror(errno));
        rc = EXIT_SYS;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, PROG ": %s --show failed (%s %d)\n", app,
                WIFEXITED(status) ? "exit status" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        rc = EXIT_APP;
    }
    unlink(path);
    return rc;
}

static int cmd_dump(const char *path, int rank, const char *app)
{
    char err[512];
    rally_snapshot_t *s = NULL;
    void *bytes = NULL;
    uint64_t nbytes = 0;
    int st = open_snap(path, &s);
    if (st != 0)
        return st;
    int rc = rally_snapshot_verify(s, err, sizeof err);
    if (rc == RALLY_OK)
        rc = rally_snapshot_read(s, rank, &bytes, &nbytes, err, sizeof err);
    if (rc != RALLY_OK) {
        rally_snapshot_close(s);
        return failed(rc, err);
    }
    print_manifest(s, 0);
    printf("verified          every size, checksum and header\n");
    if (rank < 0)
        printf("global model      %" PRIu64 " bytes\n", nbytes);
    else
        printf("local model       rank %d, %" PRIu64 " bytes\n", rank, nbytes);
    if (app != NULL)
        rc = run_app(app, bytes, nbytes);
    else
        hexdump(bytes, nbytes);
    rally_free(bytes);
    rally_snapshot_close(s);
    return rc;
}

/* rally-snapshot cp SNAP ROOT: a verified copy at ROOT/JOB/snap-N. */
static int cmd_cp(const char *snap, const char *root)
{
    char path[1200];
    struct rally__err e = {0};
    rally_snapshot_t *s = NULL;
    int st = open_snap(snap, &s); /* resolves JOBDIR/latest */
    if (st != 0)
        return st;
    int rc = rally__snap_copy(rally_snapshot_path(s), root, &e, path, sizeof path);
    rally_snapshot_close(s);
    if (rc != RALLY_OK)
        return fail(&e);
    printf("copied to %s (verified)\n", path);
    return 0;
}

/* Splits ".../JOBDIR/snap-N" into the job directory and the name. */
static int cmd_rm(const char *path)
{
    char buf[4096], jobdir[4096];
    struct rally__err e = {0};
    snprintf(buf, sizeof buf, "%s", path);
    size_t n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/')
        buf[--n] = '\0';
    char *slash = strrchr(buf, '/');
    const char *name = slash ? slash + 1 : buf;
    if (slash == NULL)
        snprintf(jobdir, sizeof jobdir, ".");
    else if (slash == buf)
        snprintf(jobdir, sizeof jobdir, "/");
    else
        snprintf(jobdir, sizeof jobdir, "%.*s", (int)(slash - buf), buf);
    if (rally__snap_remove(jobdir, name, &e) != RALLY_OK)
        return fail(&e);
    printf("removed %s\n", path);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {{"app", required_argument, 0, 'a'},
                                             {"rank", required_argument, 0, 'r'},
                                             {"timeout-ms", required_argument, 0, 't'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    const char *app = NULL;
    if (cli_version(PROG, argc, argv))
        return 0;
    int rank = -1, c;
    int64_t timeout_ms = -1;
    if (argc < 2)
        return cli_usage_error(PROG, "a command is needed: ls, show, verify, dump, cp, rm or request");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    const char *cmd = argv[1];
    int ac = argc - 1;
    char **av = argv + 1;
    opterr = 0;
    while ((c = getopt_long(ac, av, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'a':
            app = optarg;
            break;
        case 'r': {
            int64_t r;
            if (rally__parse_int(optarg, 0, RALLY__SNAP_WORLD_MAX - 1, &r) != 0)
                return cli_usage_error(PROG, "--rank '%s' is not a rank (0 to %d)", optarg,
                                       RALLY__SNAP_WORLD_MAX - 1);
            rank = (int)r;
            break;
        }
        case 't':
            if (rally__parse_int(optarg, 1, INT64_MAX / 4, &timeout_ms) != 0)
                return cli_usage_error(PROG, "--timeout-ms '%s' is not a positive number", optarg);
            break;
        case 'h':
            usage(stdout);
            return 0;
        case ':':
            return cli_usage_error(PROG, "%s needs a value", av[optind - 1]);
        default:
            return cli_usage_error(PROG, "unknown option '%s'", av[optind - 1]);
        }
    }
    if (strcmp(cmd, "cp") == 0) {
        if (ac - optind != 2)
            return cli_usage_error(PROG, "cp takes a SNAP and a DIR, got %d arguments",
                                   ac - optind);
        if (app != NULL || rank >= 0 || timeout_ms > 0)
            return cli_usage_error(PROG, "cp takes no options");
        return cmd_cp(av[optind], av[optind + 1]);
    }
    if (ac - optind != 1)
        return cli_usage_error(
            PROG, "%s takes exactly one %s, got %d", cmd,
            strcmp(cmd, "ls") == 0 || strcmp(cmd, "request") == 0 ? "DIR" : "SNAP", ac - optind);
    const char *arg = av[optind];
    int is_dump = strcmp(cmd, "dump") == 0;
    if (!is_dump && (app != NULL || rank >= 0))
        return cli_usage_error(PROG, "--app and --rank belong to dump, not %s", cmd);
    if (timeout_ms > 0 && strcmp(cmd, "request") != 0)
        return cli_usage_error(PROG, "--timeout-ms belongs to request, not %s", cmd);
    if (strcmp(cmd, "request") == 0)
        return cmd_request(arg, timeout_ms > 0 ? timeout_ms : 600000);
    if (strcmp(cmd, "ls") == 0)
        return cmd_ls(arg);
    if (strcmp(cmd, "rm") == 0)
        return cmd_rm(arg); /* by its name only, never "latest" */
    if (strcmp(cmd, "show") == 0)
        return cmd_show(arg);
    if (strcmp(cmd, "verify") == 0)
        return cmd_verify(arg);
    if (is_dump)
        return cmd_dump(arg, rank, app);
    return cli_usage_error(PROG, "unknown command '%s' (ls, show, verify, dump, cp, rm, request)", cmd);
}
