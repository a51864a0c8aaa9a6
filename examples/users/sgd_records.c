/*
 * sgd_records.c — logistic regression by SAG (stochastic average gradient)
 * with minibatches, written the way a user writes it from rally.h alone.
 *
 *   rally-run -n 4 sgd_records [--examples E] [--features F] [--steps S]
 *                              [--batch B] [--lr LR] [--seed SEED]
 *
 * The data are made in the program from the seed: example id has features
 * drawn from a hash of (seed, id, j) and a label from a fixed true weight
 * vector plus noise, so every run sees the same examples.  Rank r of N owns
 * the examples id with id * N / E == r.
 *
 * SAG keeps, for every example, the last gradient it computed for it: for
 * logistic regression that is one number, g_i = sigmoid(w . x_i) - y_i
 * (the gradient is g_i x_i).  Those are the local model, one record per
 * example (rally_set_local_records: id, then g_i and the example's last
 * loss), so a worker that dies gets its examples' state back.  The global
 * model is the step, the weights w and the sum d = sum_i g_i x_i.  Each
 * step every rank draws B of its examples, adds (g_new - g_old) x_i of
 * each to a change of d, and the changes are summed over the job; then
 * w -= lr * (d / E + lambda w), and the step is checkpointed.
 *
 * Rank 0 prints "step S loss L" every 10 steps (L: the mean of every
 * example's last loss, over the examples seen so far) and at the end
 * "loss L" and "digest HEX" (rally_digest64 of the weights).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rally/rally.h>

#define LAMBDA 1e-4

struct opts {
    uint64_t examples, steps, seed;
    int features, batch;
    double lr;
};

/* One example's state: the record's payload (little-endian doubles, as
 * this x86-64 machine stores them) and whether the example was drawn yet. */
struct state {
    double g, loss, seen;
};

static rally_t *r;
static struct opts o = {100000, 1000, 7, 64, 256, 0.5};

static void check(int rc, const char *what)
{
    if (rc != RALLY_OK) {
        fprintf(stderr, "sgd_records: rank %d: %s: %s\n", rally_rank(r), what, rally_errmsg(r));
        rally_finalize(r);
        exit(1);
    }
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* A number in [-1, 1) from a hash. */
static double unit(uint64_t h)
{
    return (double)(h >> 11) * 0x1.0p-52 - 1.0;
}

/* Example id's features into x, its label (0 or 1) returned. */
static double example(uint64_t id, double *x)
{
    double z = 0;
    for (int j = 0; j < o.features; j++) {
        x[j] = unit(mix(o.seed ^ mix(id * 1000003u + (uint64_t)j)));
        z += x[j] * unit(mix(o.seed * 31u + (uint64_t)j)); /* the true weights */
    }
    z += 0.3 * unit(mix(~id ^ o.seed)); /* noise */
    return z > 0 ? 1.0 : 0.0;
}

static int owner(uint64_t id, int world, void *arg)
{
    (void)arg;
    return (int)(id * (uint64_t)world / o.examples);
}

/* The records of ids lo, lo + 1, ...: id (8 bytes), length (4), state. */
static void pack(unsigned char *buf, uint64_t lo, const struct state *s, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        uint64_t id = lo + i;
        uint32_t len = sizeof s[i];
        memcpy(buf, &id, 8);
        memcpy(buf + 8, &len, 4);
        memcpy(buf + 12, &s[i], sizeof s[i]);
        buf += 12 + sizeof s[i];
    }
}

static void unpack(const unsigned char *buf, uint64_t nbytes, uint64_t lo, struct state *s,
                   uint64_t n)
{
    const uint64_t rec = 12 + sizeof *s;
    if (nbytes != n * rec) {
        fprintf(stderr, "sgd_records: rank %d: %" PRIu64 " bytes of records, want %" PRIu64 "\n",
                rally_rank(r), nbytes, n * rec);
        exit(1);
    }
    for (uint64_t i = 0; i < n; i++, buf += rec) {
        uint64_t id;
        memcpy(&id, buf, 8);
        if (id != lo + i) {
            fprintf(stderr, "sgd_records: rank %d: record %" PRIu64 " where %" PRIu64 " belongs\n",
                    rally_rank(r), id, lo + i);
            exit(1);
        }
        memcpy(&s[i], buf + 12, sizeof *s);
    }
}

/* The mean loss over the examples seen so far, every rank's summed. */
static double mean_loss(const struct state *s, uint64_t n)
{
    double sum[2] = {0, 0};
    for (uint64_t i = 0; i < n; i++) {
        sum[0] += s[i].loss;
        sum[1] += s[i].seen;
    }
    check(rally_allreduce(r, sum, 2, RALLY_DOUBLE, RALLY_SUM, NULL, NULL), "loss");
    return sum[1] > 0 ? sum[0] / sum[1] : 0;
}

static int options(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) { /* --flag value pairs */
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL)
            return -1;
        if (strcmp(argv[i], "--examples") == 0)
            o.examples = strtoull(v, NULL, 10);
        else if (strcmp(argv[i], "--features") == 0)
            o.features = atoi(v);
        else if (strcmp(argv[i], "--steps") == 0)
            o.steps = strtoull(v, NULL, 10);
        else if (strcmp(argv[i], "--batch") == 0)
            o.batch = atoi(v);
        else if (strcmp(argv[i], "--lr") == 0)
            o.lr = atof(v);
        else if (strcmp(argv[i], "--seed") == 0)
            o.seed = strtoull(v, NULL, 10);
        else
            return -1;
    }
    return o.examples > 0 && o.features > 0 && o.batch > 0 && o.lr > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (rally_init(&r, &argc, &argv) != RALLY_OK) {
        fprintf(stderr, "sgd_records: %s\n", rally_errmsg(r));
        rally_finalize(r);
        return 1;
    }
    if (options(argc, argv) != 0) {
        fprintf(stderr, "usage: sgd_records [--examples E] [--features F] [--steps S] "
                        "[--batch B] [--lr LR] [--seed SEED]\n");
        rally_finalize(r);
        return 2;
    }
    int rank = rally_rank(r), world = rally_world_size(r), f = o.features;

    /* my examples: ids [lo, hi), the first id each rank owns */
    uint64_t lo = 0, hi = 0;
    while (lo < o.examples && owner(lo, world, NULL) < rank)
        lo++;
    for (hi = lo; hi < o.examples && owner(hi, world, NULL) == rank;)
        hi++;
    uint64_t n = hi - lo;
    double *x = malloc(sizeof *x * (size_t)(n * (uint64_t)f + 1));
    double *y = malloc(sizeof *y * (size_t)(n + 1));
    struct state *s = calloc(n + 1, sizeof *s);
    size_t rec_bytes = (size_t)n * (12 + sizeof *s);
    unsigned char *recs = malloc(rec_bytes + 1);
    /* the global model: step, w[f], d[f] */
    double *model = calloc(1 + 2 * (size_t)f, sizeof *model);
    double *delta = malloc(sizeof *delta * (size_t)f);
    if (!x || !y || !s || !recs || !model || !delta) {
        fprintf(stderr, "sgd_records: out of memory\n");
        return 1;
    }
    for (uint64_t i = 0; i < n; i++)
        y[i] = example(lo + i, x + i * (uint64_t)f);
    double *w = model + 1, *d = model + 1 + f;

    char config[160];
    snprintf(config, sizeof config, "examples=%" PRIu64 " features=%d batch=%d lr=%g seed=%" PRIu64,
             o.examples, f, o.batch, o.lr, o.seed);
    check(rally_set_app(r, "sgd_records", config), "rally_set_app");
    check(rally_set_local_records(r, owner, NULL), "rally_set_local_records");
    void *g = NULL, *l = NULL;
    uint64_t gn = 0, ln = 0, version = 0;
    check(rally_load_checkpoint(r, &g, &gn, &l, &ln, &version), "rally_load_checkpoint");
    if (version > 0) {
        if (gn != sizeof *model * (1 + 2 * (size_t)f)) {
            fprintf(stderr, "sgd_records: a checkpoint of %" PRIu64 " bytes\n", gn);
            return 1;
        }
        memcpy(model, g, gn);
        unpack(l, ln, lo, s, n);
        rally_free(g);
        rally_free(l);
        printf("rank %d restarted at step %.0f\n", rank, model[0]);
    }

    for (uint64_t step = (uint64_t)model[0]; step < o.steps; step++) {
        memset(delta, 0, sizeof *delta * (size_t)f);
        for (int b = 0; b < o.batch && n > 0; b++) {
            uint64_t i = mix(o.seed ^ mix(step * 7919u + (uint64_t)b) ^ lo) % n;
            const double *xi = x + i * (uint64_t)f;
            double z = 0;
            for (int j = 0; j < f; j++)
                z += w[j] * xi[j];
            double p = 1 / (1 + exp(-z)), gi = p - y[i];
            for (int j = 0; j < f; j++)
                delta[j] += (gi - s[i].g) * xi[j];
            s[i].g = gi;
            s[i].loss = -(y[i] * log(p + 1e-12) + (1 - y[i]) * log(1 - p + 1e-12));
            s[i].seen = 1;
        }
        check(rally_allreduce(r, delta, (size_t)f, RALLY_DOUBLE, RALLY_SUM, NULL, NULL),
              "the gradient's change");
        for (int j = 0; j < f; j++) {
            d[j] += delta[j];
            w[j] -= o.lr * (d[j] / (double)o.examples + LAMBDA * w[j]);
        }
        model[0] = (double)(step + 1);
        if ((step + 1) % 10 == 0) {
            double loss = mean_loss(s, n);
            if (rank == 0) {
                printf("step %" PRIu64 " loss %.6f\n", step + 1, loss);
                rally_report(r, "loss", loss);
            }
        }
        pack(recs, lo, s, n);
        check(rally_checkpoint(r, model, sizeof *model * (1 + 2 * (size_t)f), recs, rec_bytes),
              "rally_checkpoint");
    }

    double loss = mean_loss(s, n);
    if (rank == 0) {
        printf("loss %.6f\n", loss);
        printf("digest %016" PRIx64 "\n", rally_digest64(w, sizeof *w * (size_t)f));
    }
    free(x);
    free(y);
    free(s);
    free(recs);
    free(model);
    free(delta);
    return rally_finalize(r) == RALLY_OK ? 0 : 1;
}
