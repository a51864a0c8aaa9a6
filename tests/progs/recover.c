/*
 * recover.c — an iterative job for the recovery tests (the intent of rabit's
 * model_recover, in our own code).
 *
 *   rally-run -n N recover [n] [iters] [diverge|local|diverge_local|lazy|SLEEP_MS]... [rally_mock=...]
 *
 * Before load_checkpoint: a MAX allreduce of the ranks (must be N-1) and a
 * SUM allreduce of order-sensitive doubles (data statistics).  Then, per
 * iteration (one checkpoint version each), with seq numbers within the
 * version:
 *   seq 0          allreduce MAX of ints derived from the model (exact check)
 *   seq 1..B       broadcasts from roots 0, s, 2s, ... (s = max(N/3, 1))
 *   seq B+1        allreduce SUM of doubles spanning 2^-30..2^30 from the
 *                  model, through a prepare callback (the model follows it)
 *   seq B+2        allgatherv of a rank-dependent slice of the model
 *   checkpoint     at seq B+3
 * Every result is checked where it can be exactly; the model is the running
 * double vector.  The last line is "result: model_digest=<hex> ..." with no
 * timing; rank 0 prints it.  Each rank prints "pid <rank> <pid>" at start
 * so tests can tell survivors (one line) from restarted ranks.
 *
 * "diverge": a restarted worker (load_checkpoint returned a version) makes
 * its first MAX allreduce one element longer than the original run did —
 * the recovery must stop the job with an error, not hang.  "diverge_local":
 * "local", and a restarted worker passes its first checkpoint a local
 * model other than its predecessor's.  A number: sleep
 * that many milliseconds per iteration (long enough to stop a worker).
 * "lag=R,V,S,MS": rank R, if it started from scratch, sleeps MS ms before
 * its call number S of checkpoint version V (numbered as above, as the
 * rally_mock points are) — a worker made slow on purpose, so a test can
 * hold the ranks behind it inside a collective while others go on.
 * "startup=MS": a replacement (rally_attempt > 0) sleeps MS ms before its
 * first collective, as a trainer reading its shard does.
 * "local": each rank also keeps a local model (its own vector, feeding the
 * sum), checkpointed and replicated on the ring; the digest covers every
 * rank's local model.  "lazy": the global model is checkpointed lazily; it
 * changes only after the iteration's last collective, as the contract says.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "rally/rally.h"

static rally_t *R;
static int rank = -1, N;

static void die(const char *what, int rc)
{
    fprintf(stderr, "recover: rank %d: %s failed: %s (%s)\n", rank, what, rally_errmsg(R),
            rally_strstatus(rc));
    exit(1);
}

#define CALL(expr, what)                                                                           \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ != RALLY_OK)                                                                       \
            die(what, rc_);                                                                        \
    } while (0)

struct prep {
    double *out;
    const double *model, *local;
    size_t n;
    uint64_t iter;
    int calls;
};

static void prepare_sum(void *arg)
{
    struct prep *p = arg;
    p->calls++;
    for (size_t i = 0; i < p->n; i++) {
        uint64_t h = model_mix(((uint64_t)rank << 40) ^ (p->iter << 20) ^ i);
        double x = ldexp((double)(h >> 11) / 9007199254740992.0, (int)(h % 61) - 30);
        p->out[i] = (h & 128 ? -x : x) + p->model[i] * 1e-3 + p->local[i] * 1e-6;
    }
}

static size_t model_n;

/* lag=R,V,S,MS (see above); lag_rank -1: none */
static int lag_rank = -1;
static unsigned long long lag_version, lag_seq;
static long lag_ms;

static void lag(uint64_t loaded, uint64_t seq)
{
    if (rank == lag_rank && loaded == 0 && rally_checkpoint_version(R) == lag_version &&
        seq == lag_seq) {
        printf("rank %d lags %ld ms before seq %" PRIu64 "\n", rank, lag_ms, seq);
        fflush(stdout);
        usleep((useconds_t)lag_ms * 1000);
    }
}

static uint64_t serialize(void *arg, void *buf, uint64_t cap)
{
    uint64_t need = model_n * sizeof(double);
    if (cap >= need && buf != NULL)
        memcpy(buf, arg, (size_t)need);
    return need;
}

static uint64_t digest(const void *p, size_t n)
{
    return rally_digest64(p, n);
}

/* The job: its settings (the command line) and its buffers. */
struct job {
    size_t n;       /* the models' length */
    uint64_t iters; /* checkpoint versions to reach */
    int diverge, diverge_local, use_local, lazy;
    long sleep_ms, startup_ms;
    uint64_t version;      /* load_checkpoint's: 0 from scratch */
    double *model, *local; /* the global model; the rank's local one */
    double *sum;           /* the SUM's result, the next model */
    int32_t *ints;         /* the MAX's */
    char *text;            /* the broadcasts' */
    int prepare_calls;     /* calls of prepare_sum: skipped when results are replayed */
};

/* The words after rally's own: [n] [iters] and those the comment at the
 * top lists.  0, or 2 when a lag= does not parse (said on stderr). */
static int parse_args(struct job *j, int argc, char **argv)
{
    j->n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;
    j->iters = argc > 2 ? strtoull(argv[2], NULL, 10) : 3;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "diverge") == 0)
            j->diverge = 1;
        else if (strcmp(argv[i], "local") == 0)
            j->use_local = 1;
        else if (strcmp(argv[i], "diverge_local") == 0)
            j->use_local = j->diverge_local = 1;
        else if (strcmp(argv[i], "lazy") == 0)
            j->lazy = 1;
        else if (strncmp(argv[i], "startup=", 8) == 0)
            j->startup_ms = strtol(argv[i] + 8, NULL, 10);
        else if (strncmp(argv[i], "lag=", 4) != 0)
            j->sleep_ms = strtol(argv[i], NULL, 10);
        else if (sscanf(argv[i] + 4, "%d,%llu,%llu,%ld", &lag_rank, &lag_version, &lag_seq,
                        &lag_ms) != 4) {
            fprintf(stderr, "recover: %s is not lag=rank,version,seq,ms\n", argv[i]);
            return 2;
        }
    }
    return 0;
}

/* Data statistics, before load_checkpoint, as a trainer computes them from
 * its shard: collectives a replacement recovers too, their results kept all
 * job.  A MAX of the ranks (checked: N - 1), and an order-sensitive SUM
 * into stats.  0, or 1 with the reason on stderr. */
static int bootstrap(double stats[16])
{
    int mx = rank;
    CALL(rally_allreduce(R, &mx, 1, RALLY_INT32, RALLY_MAX, NULL, NULL), "bootstrap max");
    if (mx != N - 1) {
        fprintf(stderr, "recover: bootstrap max %d, want %d\n", mx, N - 1);
        return 1;
    }
    for (int i = 0; i < 16; i++)
        stats[i] = ldexp(1.0 + rank, (rank * 7 + i) % 40 - 20);
    CALL(rally_allreduce(R, stats, 16, RALLY_DOUBLE, RALLY_SUM, NULL, NULL), "bootstrap sum");
    return 0;
}

/* The models: what load_checkpoint returns when it returns a version (its
 * sizes checked), else the global model from stats and the local one from
 * the rank.  0, or 1 with the reason on stderr. */
static int load_models(struct job *j, const double stats[16])
{
    const size_t n = j->n;
    void *saved = NULL, *lsaved = NULL;
    uint64_t saved_n = 0, lsaved_n = 0;
    j->model = calloc(n, sizeof *j->model);
    j->local = calloc(n, sizeof *j->local);
    CALL(rally_load_checkpoint(R, &saved, &saved_n, j->use_local ? &lsaved : NULL,
                               j->use_local ? &lsaved_n : NULL, &j->version),
         "load_checkpoint");
    for (size_t i = 0; i < n; i++)
        j->local[i] = j->use_local ? 1.0 + rank : 0.0;
    if (j->version > 0 && j->use_local) {
        if (lsaved_n != n * sizeof *j->local) {
            fprintf(stderr, "recover: local checkpoint has %" PRIu64 " bytes, want %zu\n",
                    lsaved_n, n * sizeof *j->local);
            return 1;
        }
        memcpy(j->local, lsaved, lsaved_n);
        rally_free(lsaved);
    }
    if (j->version == 0) {
        for (size_t i = 0; i < n; i++)
            j->model[i] = stats[i % 16];
    } else {
        if (saved_n != n * sizeof *j->model) {
            fprintf(stderr, "recover: checkpoint has %" PRIu64 " bytes, want %zu\n", saved_n,
                    n * sizeof *j->model);
            return 1;
        }
        memcpy(j->model, saved, saved_n);
        rally_free(saved);
    }
    return 0;
}

/* seq 0: a MAX of ints derived from the model, checked exactly against
 * every rank's; one element longer in a "diverge" replacement's first
 * iteration.  0, or 1 with the first wrong element on stderr. */
static int max_step(struct job *j, uint64_t it, uint64_t *seq)
{
    const size_t n = j->n;
    const double *model = j->model;
    int32_t *ints = j->ints;
    for (size_t i = 0; i < n; i++)
        ints[i] = (int32_t)((i * (size_t)(rank + 1)) % (it + 111)) + (int32_t)(model[i] > 0);
    size_t count = n + (j->diverge && j->version > 0 && it == j->version);
    lag(j->version, (*seq)++);
    CALL(rally_allreduce(R, ints, count, RALLY_INT32, RALLY_MAX, NULL, NULL), "max");
    for (size_t i = 0; i < n; i++) {
        int32_t want = -1;
        for (int r = 0; r < N; r++) {
            int32_t v = (int32_t)((i * (size_t)(r + 1)) % (it + 111)) + (int32_t)(model[i] > 0);
            want = v > want ? v : want;
        }
        if (ints[i] != want) {
            fprintf(stderr, "recover: max[%zu] = %d, want %d\n", i, ints[i], want);
            return 1;
        }
    }
    return 0;
}

/* seq 1..B: broadcasts from roots 0, s, 2s, ... (s = max(N/3, 1)), each
 * checked.  0, or 1 with the root of a wrong one on stderr. */
static int broadcasts(struct job *j, uint64_t it, uint64_t *seq)
{
    const int step = N / 3 > 1 ? N / 3 : 1;
    char *text = j->text;
    for (int root = 0; root < N; root += step) {
        for (size_t i = 0; i < j->n; i++)
            text[i] = rank == root ? (char)(i % 126 + 1 + it) : 0;
        lag(j->version, (*seq)++);
        CALL(rally_broadcast(R, text, j->n, root), "broadcast");
        for (size_t i = 0; i < j->n; i++)
            if (text[i] != (char)(i % 126 + 1 + it)) {
                fprintf(stderr, "recover: broadcast from %d wrong at %zu\n", root, i);
                return 1;
            }
    }
    return 0;
}

/* seq B+1 and B+2: the order-sensitive SUM through prepare_sum, the
 * allgatherv of a slice of the model, and only then the models' update
 * (the model as it was is what a "lazy" checkpoint may still be asked for
 * until the iteration's last collective). */
static void update(struct job *j, uint64_t it, uint64_t *seq)
{
    const size_t n = j->n;
    double *model = j->model, *local = j->local, *sum = j->sum;
    /* SUM through prepare: order-sensitive */
    struct prep p = {sum, model, local, n, it, 0};
    lag(j->version, (*seq)++);
    CALL(rally_allreduce(R, sum, n, RALLY_DOUBLE, RALLY_SUM, prepare_sum, &p), "sum");
    j->prepare_calls += p.calls;
    /* allgatherv of a slice (of the model as it was: see "lazy") */
    size_t k = (size_t)(rank + 1) * n / (size_t)(N + 1);
    void *all = NULL;
    uint64_t *sizes = malloc((size_t)N * sizeof *sizes);
    lag(j->version, (*seq)++);
    CALL(rally_allgatherv(R, model, k * sizeof *model, &all, sizes), "allgatherv");
    size_t total = 0;
    for (int r = 0; r < N; r++)
        total += sizes[r];
    /* the model changes only here, after the iteration's last collective */
    memcpy(model, sum, n * sizeof *model);
    for (size_t i = 0; i < total / sizeof(double) && i < n; i++)
        model[i] += ((double *)all)[i] * 0x1p-40;
    for (size_t i = 0; i < n && j->use_local; i++)
        local[i] = local[i] * 0.5 + sum[i] * (1 + rank);
    if (j->diverge_local && j->version > 0 && it == j->version)
        local[0] += 1.0;
    rally_free(all);
    free(sizes);
}

/* seq B+3: the iteration's checkpoint, lazy or with the models' bytes. */
static void checkpoint(struct job *j, uint64_t *seq)
{
    lag(j->version, (*seq)++);
    if (j->lazy)
        CALL(rally_lazy_checkpoint(R, serialize, j->model), "lazy_checkpoint");
    else
        CALL(rally_checkpoint(R, j->model, j->n * sizeof *j->model,
                              j->use_local ? j->local : NULL,
                              j->use_local ? j->n * sizeof *j->local : 0),
             "checkpoint");
}

/* The last lines: the global model's digest with every rank's local model
 * folded in (rank 0 prints it), and each rank's count of prepare calls. */
static void report(const struct job *j)
{
    uint64_t d = digest(j->model, j->n * sizeof *j->model);
    if (j->use_local) { /* fold in every rank's local model */
        uint64_t *ld = calloc((size_t)N, sizeof *ld);
        uint64_t mine = digest(j->local, j->n * sizeof *j->local);
        CALL(rally_allgather(R, &mine, sizeof mine, ld), "allgather");
        d ^= digest(ld, (size_t)N * sizeof *ld);
        free(ld);
    }
    if (rank == 0)
        printf("result: model_digest=%016" PRIx64 " version=%" PRIu64 "\n", d,
               rally_checkpoint_version(R));
    printf("rank %d prepare_calls=%d\n", rank, j->prepare_calls);
}

int main(int argc, char **argv)
{
    struct job j = {0};
    double stats[16];
    CALL(rally_init(&R, &argc, &argv), "rally_init");
    rank = rally_rank(R);
    N = rally_world_size(R);
    int rc = parse_args(&j, argc, argv);
    if (rc != 0)
        return rc;
    model_n = j.n;
    printf("pid %d %ld\n", rank, (long)getpid());
    fflush(stdout);
    if (j.startup_ms > 0 && rally_attempt(R) > 0) /* a replacement reading its input */
        usleep((useconds_t)j.startup_ms * 1000);
    if (bootstrap(stats) != 0 || load_models(&j, stats) != 0)
        return 1;
    /* a replacement has its checkpoint (and the copies it keeps for its
     * neighbours) once load_checkpoint returned: tests wait for this line */
    if (rally_attempt(R) > 0)
        printf("rank %d restarted at version %" PRIu64 "\n", rank, j.version);

    j.sum = malloc(j.n * sizeof *j.sum);
    j.ints = malloc((j.n + 1) * sizeof *j.ints);
    j.text = malloc(j.n + 1);
    for (uint64_t it = j.version; it < j.iters; it++) {
        uint64_t seq = 0;
        if (j.sleep_ms > 0)
            usleep((useconds_t)j.sleep_ms * 1000);
        if (max_step(&j, it, &seq) != 0 || broadcasts(&j, it, &seq) != 0)
            return 1;
        update(&j, it, &seq);
        checkpoint(&j, &seq);
    }
    report(&j);
    free(j.model);
    free(j.local);
    free(j.sum);
    free(j.ints);
    free(j.text);
    return rally_finalize(R) == RALLY_OK ? 0 : 1;
}
