/*
 * threads_test.c — whole jobs inside one process: the embedded tracker runs
 * in one thread, N workers in N more, each with its own rally handle.  Fast,
 * and the form the thread sanitizer checks.
 *
 *   threads_test            every case below at N = 1, 2, 3, 5, 8
 *
 * Cases: allreduce (tree and ring) against the serial model, broadcast from
 * every root, allgather; mismatched calls (count, type, op, root, kind) make
 * every rank fail with RALLY_EMISMATCH or the tracker's ABORT naming the
 * mismatch, never a hang; an unknown rally_* argument; no tracker at all
 * (rank 0 of 1), where rally_report checks its arguments and does nothing
 * else; observers (issue 24): every rank's reports reach the tracker's
 * owner at the version they were made in, rank 0 tells it of every
 * snapshot it committed (tier, version, bytes, path), and each rank's
 * heartbeats carry the collectives it completed and their bytes to
 * rally__tracker_rank_info.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model.h"
#include "net/auth.h"
#include "rally/rally.h"
#include "tracker/server.h"
#include "util/clock.h"

static int failures;
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            __atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);                                    \
        }                                                                                          \
    } while (0)

struct job;
typedef void (*work_fn)(struct job *j, rally_t *r, int task);

struct job {
    int world;
    char addr[64], secret_path[128];
    struct rally__tracker *t;
    int stop; /* atomic */
    work_fn work;
    int mismatch_at; /* which task misbehaves, for mismatch cases */
    int kind;        /* which mismatch */
    pthread_barrier_t past_first; /* mismatch cases: every rank out of the good collective */
    /* observers: what the tracker's loop saw (under mu) */
    pthread_mutex_t mu;
    struct rally__tracker_rank seen[64]; /* rally__tracker_rank_info after each turn */
    int nvalues, ntotals, nbad;          /* REPORT events, and those not as expected */
    int nsnaps;                          /* ... SNAPSHOT ones (versions 1, 2, 3 expected) */
    int ncopies;                         /* ... of the second tier (at least version 3) */
    uint32_t copied;                     /* ... the newest version copied */
    char snapdir[128];                   /* rally_snapshot_dir for the observed case */
};

static void *tracker_loop(void *arg)
{
    struct job *j = arg;
    while (!__atomic_load_n(&j->stop, __ATOMIC_ACQUIRE)) {
        struct pollfd p[256];
        size_t n = rally__tracker_fill(j->t, p, 256);
        int ms = rally__ms_left(rally__tracker_deadline(j->t));
        poll(p, n, ms < 0 || ms > 50 ? 50 : ms);
        rally__tracker_handle(j->t, p, n);
        pthread_mutex_lock(&j->mu);
        for (int r = 0; r < j->world && r < 64; r++)
            rally__tracker_rank_info(j->t, r, &j->seen[r]);
        pthread_mutex_unlock(&j->mu);
        if (rally__tracker_state(j->t, NULL, NULL) != RALLY__TRACKER_RUNNING &&
            rally__tracker_flushed(j->t))
            break;
    }
    return NULL;
}

struct wargs {
    struct job *j;
    int task;
};

static void work_mismatch(struct job *j, rally_t *r, int task);

static void *worker(void *arg)
{
    struct wargs *w = arg;
    struct job *j = w->j;
    char a1[96], a2[160], a3[48], a4[160], a5[160];
    snprintf(a1, sizeof a1, "rally_tracker=%s", j->addr);
    snprintf(a2, sizeof a2, "rally_secret_file=%s", j->secret_path);
    snprintf(a3, sizeof a3, "rally_task_id=%d", w->task);
    char *args[] = {"worker",
                    a1,
                    a2,
                    a3,
                    "rally_ring_threshold_bytes=512",
                    "rally_hd_threshold_bytes=4000",
                    "rally_rd_threshold_bytes=64",
                    "rally_chunk_bytes=256",
                    "rally_connect_timeout_ms=20000",
                    "rally_timeout_ms=20000",
                    "rally_heartbeat_ms=20",
                    NULL,
                    NULL,
                    NULL,
                    NULL,
                    NULL};
    int argc = 11;
    if (j->snapdir[0]) { /* every version snapshotted */
        snprintf(a4, sizeof a4, "rally_snapshot_dir=%s", j->snapdir);
        args[argc++] = a4;
        args[argc++] = "rally_snapshot_every=1";
        snprintf(a5, sizeof a5, "rally_snapshot_copy=%s/copy", j->snapdir);
        args[argc++] = a5;
        args[argc++] = "rally_snapshot_keep=10"; /* each still there when the tracker looks */
    }
    char **argv = args;
    rally_t *r;
    int rc = rally_init(&r, &argc, &argv);
    EXPECT(rc == RALLY_OK, "task %d: init: %s", w->task, rally_errmsg(r));
    EXPECT(argc == 1 && argv[1] == NULL, "init left %d arguments", argc);
    if (rc == RALLY_OK)
        j->work(j, r, w->task);
    else if (j->work == work_mismatch) /* the others wait for it there */
        pthread_barrier_wait(&j->past_first);
    rally_finalize(r);
    return NULL;
}

static void work_observed(struct job *j, rally_t *r, int task);

/* The bytes of the files in dir but its manifest (0: none, or no dir). */
static uint64_t files_nbytes(const char *dir)
{
    uint64_t n = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL) {
        char path[512];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (strcmp(de->d_name, "MANIFEST.json") != 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode))
            n += (uint64_t)st.st_size;
    }
    if (d != NULL)
        closedir(d);
    return n;
}

/* The tracker's events, on its loop's thread: the observed case's REPORTs
 * are counted, and any that is not what work_observed sent. */
static void on_event(void *arg, const struct rally__tracker_event *ev)
{
    struct job *j = arg;
    if (ev->kind != RALLY__TEV_REPORT)
        return;
    pthread_mutex_lock(&j->mu);
    if (ev->report == RALLY__REPORT_TOTAL) {
        j->ntotals++;
        j->nbad += ev->value != 3 || ev->key[0] != '\0';
    } else if (ev->report == RALLY__REPORT_SNAPSHOT && strcmp(ev->key, "copy") == 0) {
        /* the second tier: as many bytes there, the newest last */
        j->ncopies++;
        j->nbad += ev->rank != 0 || ev->nbytes <= 32 || ev->nbytes != files_nbytes(ev->text) ||
                   strstr(ev->text, "/copy/worker/snap-") == NULL || ev->version <= j->copied;
        j->copied = ev->version;
    } else if (ev->report == RALLY__REPORT_SNAPSHOT) {
        /* rank 0's commit of version v, in its directory, whose files (all
         * but the manifest) hold nbytes (a global model of 4 doubles, and
         * the file's own header) */
        char name[32];
        snprintf(name, sizeof name, "/snap-%08u", ev->version);
        j->nsnaps++;
        j->nbad += ev->rank != 0 || strcmp(ev->key, "dir") != 0 || ev->nbytes <= 32 ||
                   ev->nbytes != files_nbytes(ev->text) || ev->version != (uint32_t)j->nsnaps ||
                   strstr(ev->text, j->snapdir) != ev->text || strstr(ev->text, name) == NULL;
    } else {
        j->nvalues++;
        /* version v's objective: the sum over ranks of rank + v */
        double want = (double)j->world * (j->world - 1) / 2 + (double)j->world * ev->version;
        j->nbad += ev->report != RALLY__REPORT_VALUE || strcmp(ev->key, "objective") != 0 ||
                   ev->value != want || ev->version > 2;
    }
    pthread_mutex_unlock(&j->mu);
}

static void run_job(int world, work_fn work, int mismatch_at, int kind)
{
    struct job *j = calloc(1, sizeof *j);
    pthread_mutex_init(&j->mu, NULL);
    j->world = world;
    j->work = work;
    j->mismatch_at = mismatch_at;
    j->kind = kind;
    pthread_barrier_init(&j->past_first, NULL, (unsigned)world);
    char dir[] = "/tmp/rally-threads-XXXXXX";
    if (mkdtemp(dir) == NULL)
        abort();
    snprintf(j->secret_path, sizeof j->secret_path, "%s/secret", dir);
    struct rally__err e = {0, ""};
    struct rally__secret s;
    if (rally__secret_create(j->secret_path, &s, &e) != RALLY_OK) {
        fprintf(stderr, "%s\n", e.msg);
        abort();
    }
    struct rally__tracker_opts o = {world, "127.0.0.1", 0, &s, 30000, 0, NULL, on_event, j};
    if (rally__tracker_new(&j->t, &o, &e) != RALLY_OK) {
        fprintf(stderr, "%s\n", e.msg);
        abort();
    }
    snprintf(j->addr, sizeof j->addr, "127.0.0.1:%d", rally__tracker_port(j->t));
    if (work == work_observed)
        snprintf(j->snapdir, sizeof j->snapdir, "%s/snap", dir);
    pthread_t tt, wt[64];
    struct wargs wa[64];
    pthread_create(&tt, NULL, tracker_loop, j);
    for (int i = 0; i < world; i++) {
        wa[i] = (struct wargs){j, i};
        pthread_create(&wt[i], NULL, worker, &wa[i]);
    }
    for (int i = 0; i < world; i++)
        pthread_join(wt[i], NULL);
    __atomic_store_n(&j->stop, 1, __ATOMIC_RELEASE);
    pthread_join(tt, NULL);
    if (work == work_observed) {
        EXPECT(j->nvalues == 3 * world && j->ntotals == world && j->nsnaps == 3 &&
                   j->ncopies >= 1 && j->copied == 3 && j->nbad == 0,
               "N=%d: %d values (want %d), %d totals (want %d), %d snapshots (want 3), %d copies "
               "(the newest %u, want 3), %d not as sent",
               world, j->nvalues, 3 * world, j->ntotals, world, j->nsnaps, j->ncopies, j->copied,
               j->nbad);
        EXPECT(j->seen[0].finalized, "N=%d: rank 0 not finalized", world);
    }
    pthread_mutex_destroy(&j->mu);
    pthread_barrier_destroy(&j->past_first);
    rally__tracker_free(j->t);
    unlink(j->secret_path);
    if (j->snapdir[0]) { /* the snapshots, under dir */
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", j->snapdir);
        EXPECT(system(cmd) == 0, "%s", cmd);
    }
    rmdir(dir);
    free(j);
}

/* --- cases ----------------------------------------------------------------- */

static void sum_fn(void *a, const void *b, void *arg)
{
    model_op1(a, b, RALLY_DOUBLE, RALLY_SUM);
}

static void work_collectives(struct job *j, rally_t *r, int task)
{
    int rank = rally_rank(r), N = rally_world_size(r);
    EXPECT(N == j->world, "world %d, want %d", N, j->world);
    EXPECT(rank == task, "task %d got rank %d", task, rank);
    size_t counts[] = {0, 1, 5, 63, 64 + 3, 1000};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        size_t n = counts[c];
        unsigned char **in = malloc((size_t)N * sizeof *in);
        for (int i = 0; i < N; i++) {
            in[i] = malloc(n * 8 + 1);
            model_fill(in[i], n, RALLY_DOUBLE, i, 77 + n);
        }
        unsigned char *want = malloc(n * 8 + 1), *got = malloc(n * 8 + 1);
        int ring = n * 8 > 512 && n >= (size_t)N, hd = ring && n * 8 <= 4000;
        hd |= n > 0 && n * 8 <= 64 && N >= 2 && (N & (N - 1)) == 0; /* recursive doubling */
        for (size_t i = 0; i < n; i++) {
            if (hd)
                model_hd(want + i * 8, in, N, i, 8, sum_fn, NULL);
            else if (ring)
                model_ring(want + i * 8, in, N, n, i, 8, sum_fn, NULL);
            else
                model_tree(want + i * 8, in, 0, N, i, 8, sum_fn, NULL);
        }
        memcpy(got, in[rank], n * 8);
        int rc = rally_allreduce(r, got, n, RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
        EXPECT(rc == RALLY_OK, "allreduce: %s", rally_errmsg(r));
        EXPECT(memcmp(got, want, n * 8) == 0, "allreduce n=%zu N=%d differs from the model", n, N);
        for (int i = 0; i < N; i++)
            free(in[i]);
        free(in);
        free(want);
        free(got);
    }
    for (int root = 0; root < N; root++) {
        char buf[3000];
        for (size_t i = 0; i < sizeof buf; i++)
            buf[i] = rank == root ? (char)(i * 31 + root) : 0;
        EXPECT(rally_broadcast(r, buf, sizeof buf, root) == RALLY_OK, "bcast: %s", rally_errmsg(r));
        int ok = 1;
        for (size_t i = 0; i < sizeof buf; i++)
            ok &= buf[i] == (char)(i * 31 + root);
        EXPECT(ok, "broadcast from %d: wrong bytes at rank %d", root, rank);
    }
    int mine[3] = {rank, rank * 2, -rank}, all[3 * 64];
    EXPECT(rally_allgather(r, mine, sizeof mine, all) == RALLY_OK, "allgather: %s",
           rally_errmsg(r));
    for (int i = 0; i < N; i++)
        EXPECT(all[3 * i] == i && all[3 * i + 1] == 2 * i && all[3 * i + 2] == -i,
               "allgather slot %d", i);
}

enum { MM_COUNT, MM_TYPE, MM_OP, MM_ROOT, MM_KIND };

static void work_mismatch(struct job *j, rally_t *r, int task)
{
    int rank = rally_rank(r);
    double v[40] = {0};
    int odd = rank == j->mismatch_at;
    int rc;
    /* one good collective first, so the mismatch is collective #1 */
    rc = rally_allreduce(r, v, 4, RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
    EXPECT(rc == RALLY_OK, "first allreduce: %s", rally_errmsg(r));
    /* every rank out of it before any enters #1: the odd rank's report of
     * the mismatch fails whatever collective a rank is in when it arrives
     * (docs/errors.md), and a rank still waiting for the first one's result
     * would fail there (1 run in 5 beside a CPU hog) */
    pthread_barrier_wait(&j->past_first);
    switch (j->kind) {
    case MM_COUNT:
        rc = rally_allreduce(r, v, odd ? 11 : 10, RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
        break;
    case MM_TYPE:
        rc = rally_allreduce(r, v, 10, odd ? RALLY_INT64 : RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
        break;
    case MM_OP:
        rc = rally_allreduce(r, v, 10, RALLY_DOUBLE, odd ? RALLY_MAX : RALLY_SUM, NULL, NULL);
        break;
    case MM_ROOT:
        rc = rally_broadcast(r, v, 80, odd ? 1 : 0);
        break;
    default:
        rc = odd ? rally_broadcast(r, v, 80, 0)
                 : rally_allreduce(r, v, 10, RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
        break;
    }
    /* A broadcast only carries data away from the root, so ranks upstream
     * of the disagreement may finish it; they must learn of the failure by
     * their next collective at the latest (docs/errors.md). */
    if (j->kind == MM_ROOT && rc == RALLY_OK)
        rc = rally_allreduce(r, v, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
    EXPECT(rc == RALLY_EMISMATCH, "kind %d: rank %d got %s (%s), want RALLY_EMISMATCH", j->kind,
           rank, rally_strstatus(rc), rally_errmsg(r));
    EXPECT(strstr(rally_errmsg(r), "collectives differ") != NULL, "rank %d message: %s", rank,
           rally_errmsg(r));
    /* the handle is spent */
    rc = rally_allreduce(r, v, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
    EXPECT(rc == RALLY_ESTATE, "after a mismatch: %s", rally_strstatus(rc));
}

/* Three iterations of allreduce (4 doubles), broadcast (10 bytes) and
 * allgather (8 bytes a rank), each reported and checkpointed; then the
 * tracker must see this rank's 9 collectives and their bytes. */
static void work_observed(struct job *j, rally_t *r, int task)
{
    void *g = NULL;
    uint64_t gn = 0, version = 0;
    int rc = rally_load_checkpoint(r, &g, &gn, NULL, NULL, &version);
    EXPECT(rc == RALLY_OK, "task %d: load: %s", task, rally_errmsg(r));
    rally_free(g);
    EXPECT(rally_report_total(r, 3) == RALLY_OK, "task %d: report_total", task);
    unsigned char b[10] = {0}, all[8 * 64];
    uint64_t mine = (uint64_t)task;
    for (int it = 0; it < 3 && rc == RALLY_OK; it++) {
        double v[4] = {(double)task + it, 0, 0, 0};
        rc = rally_allreduce(r, v, 4, RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
        if (rc == RALLY_OK)
            rc = rally_broadcast(r, b, sizeof b, 0);
        if (rc == RALLY_OK)
            rc = rally_allgather(r, &mine, sizeof mine, all);
        if (rc == RALLY_OK)
            rc = rally_report(r, "objective", v[0]);
        if (rc == RALLY_OK)
            rc = rally_checkpoint(r, v, sizeof v, NULL, 0);
    }
    EXPECT(rc == RALLY_OK, "task %d: %s", task, rally_errmsg(r));
    uint64_t want = 3 * (4 * 8 + 10 + 8 * (uint64_t)j->world);
    struct rally__tracker_rank seen = {0};
    int64_t deadline = rally__deadline(10000);
    while (rally__ms_left(deadline) > 0) { /* until a beat carries the counts */
        pthread_mutex_lock(&j->mu);
        seen = j->seen[task];
        pthread_mutex_unlock(&j->mu);
        if (seen.calls == 9 && seen.nbytes == want)
            break;
        rally__sleep_ms(10);
    }
    EXPECT(seen.calls == 9 && seen.nbytes == want && seen.present && seen.heartbeats &&
               seen.incarnation == 1 && strcmp(seen.host, "127.0.0.1") == 0,
           "task %d: the tracker saw %llu calls and %llu bytes (want 9 and %llu), present %d, "
           "heartbeats %d, incarnation %u, host %s",
           task, (unsigned long long)seen.calls, (unsigned long long)seen.nbytes,
           (unsigned long long)want, seen.present, seen.heartbeats, seen.incarnation, seen.host);
}

static void test_single_process(void)
{
    rally_t *r;
    char *args[] = {"prog", "rally_ring_threshold_bytes=1K", "keep", NULL};
    int argc = 3;
    char **argv = args;
    unsetenv("RALLY_TRACKER");
    int rc = rally_init(&r, &argc, &argv);
    EXPECT(rc == RALLY_OK && rally_rank(r) == 0 && rally_world_size(r) == 1, "standalone init");
    EXPECT(argc == 2 && strcmp(argv[1], "keep") == 0 && argv[2] == NULL, "argv not compacted");
    double v[3] = {1, 2, 3};
    EXPECT(rally_allreduce(r, v, 3, RALLY_DOUBLE, RALLY_SUM, NULL, NULL) == RALLY_OK && v[0] == 1 &&
               v[2] == 3,
           "standalone allreduce");
    EXPECT(rally_allreduce(r, v, 3, RALLY_DOUBLE, RALLY_BITOR, NULL, NULL) == RALLY_EINVAL,
           "bitor on double must be EINVAL");
    EXPECT(rally_broadcast(r, v, 8, 1) == RALLY_EINVAL, "root 1 of 1 must be EINVAL");
    /* alone, a report has nobody to go to: checked, and nothing else */
    EXPECT(rally_report_total(r, 10) == RALLY_OK, "standalone report_total");
    EXPECT(rally_report(r, "objective", 0.5) == RALLY_OK, "standalone report");
    EXPECT(rally_report(r, "no spaces", 0.5) == RALLY_EINVAL, "a key with a space must be EINVAL");
    EXPECT(rally_report(r, "objective", v[0] / 0.0) == RALLY_EINVAL, "an infinity must be EINVAL");
    EXPECT(rally_allreduce(r, v, 3, RALLY_DOUBLE, RALLY_SUM, NULL, NULL) == RALLY_OK,
           "a refused report spends nothing");
    rally_finalize(r);

    char *bad[] = {"prog", "rally_no_such_key=1", NULL};
    argc = 2;
    argv = bad;
    rc = rally_init(&r, &argc, &argv);
    EXPECT(rc == RALLY_ECONFIG && strstr(rally_errmsg(r), "rally_no_such_key") != NULL,
           "unknown key: %s", rally_errmsg(r));
    rally_finalize(r);
}

int main(void)
{
    test_single_process();
    int worlds[] = {1, 2, 3, 5, 8};
    for (size_t i = 0; i < sizeof worlds / sizeof worlds[0]; i++)
        run_job(worlds[i], work_collectives, -1, 0);
    int oworlds[] = {1, 3};
    for (size_t i = 0; i < sizeof oworlds / sizeof oworlds[0]; i++)
        run_job(oworlds[i], work_observed, -1, 0);
    int mworlds[] = {2, 5};
    for (size_t i = 0; i < 2; i++)
        for (int kind = MM_COUNT; kind <= MM_KIND; kind++)
            run_job(mworlds[i], work_mismatch, mworlds[i] - 1, kind);
    printf("threads_test: %s (%d failures)\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
