/*
 * rabit_prog.c — boosted decision stumps on rabit's C API, the way a
 * program of the xgboost era was written: RabitInit, RabitLoadCheckPoint,
 * each round a gradient histogram summed with RabitAllreduce (filled by a
 * prepare function, as xgboost did, so a recovered worker skips the pass
 * over its rows), the split chosen on rank 0 and sent with RabitBroadcast,
 * RabitCheckPoint of the model, RabitTrackerPrint for progress,
 * RabitFinalize.
 *
 *   rally-run -n 4 rabit_prog [ROWS_PER_WORKER [ROUNDS]]
 *
 * Squared loss on data made in the program: rank r's rows are rows r * R ..
 * r * R + R - 1 of one data set, features in [0, 1) from a hash of the row,
 * the target a smooth function of them plus noise.  Each feature is cut
 * into 32 equal bins.  The model is the list of stumps (feature, bin, the
 * two leaf values); after a restart the predictions are rebuilt from it.
 *
 * Prints (rank 0, through the tracker) "round T rmse X" every 5 rounds and
 * at the end "rmse X" and "digest HEX" (FNV-1a of the model's bytes).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rally/rabit_c_api.h>

#define NFEAT 8
#define NBIN 32
#define ETA 0.3
#define LAMBDA 1.0

struct stump {
    int32_t feature, bin; /* rows with x[feature] in a bin <= bin go left */
    double left, right;
};

struct data {
    int rows;
    float *x;        /* rows x NFEAT */
    uint8_t *bin;    /* rows x NFEAT */
    double *y, *pred;
    double *hist;    /* NFEAT x NBIN x (gradient, hessian) */
};

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static void make_data(struct data *d, int rank)
{
    for (int i = 0; i < d->rows; i++) {
        uint64_t row = (uint64_t)rank * (uint64_t)d->rows + (uint64_t)i;
        float *x = d->x + (size_t)i * NFEAT;
        for (int j = 0; j < NFEAT; j++) {
            x[j] = (float)((mix(row * NFEAT + (uint64_t)j) >> 40) * 0x1.0p-24);
            d->bin[(size_t)i * NFEAT + j] = (uint8_t)(x[j] * NBIN);
        }
        double noise = (double)(mix(~row) >> 40) * 0x1.0p-24 - 0.5;
        d->y[i] = sin(6 * x[0]) + 2 * x[1] * x[2] - (x[3] > 0.7f) + 0.1 * noise;
    }
}

/* The prepare function: this worker's histogram of gradients and hessians. */
static void histogram(void *arg)
{
    struct data *d = arg;
    memset(d->hist, 0, sizeof(double) * NFEAT * NBIN * 2);
    for (int i = 0; i < d->rows; i++) {
        double g = d->pred[i] - d->y[i];
        for (int j = 0; j < NFEAT; j++) {
            double *h = d->hist + ((size_t)j * NBIN + d->bin[(size_t)i * NFEAT + j]) * 2;
            h[0] += g;
            h[1] += 1;
        }
    }
}

/* The best stump for the summed histogram (rank 0 decides). */
static struct stump best_split(const double *hist)
{
    struct stump s = {-1, 0, 0, 0};
    double best = 0;
    for (int j = 0; j < NFEAT; j++) {
        double G = 0, H = 0;
        for (int b = 0; b < NBIN; b++) {
            G += hist[((size_t)j * NBIN + b) * 2];
            H += hist[((size_t)j * NBIN + b) * 2 + 1];
        }
        double gl = 0, hl = 0;
        for (int b = 0; b + 1 < NBIN; b++) {
            gl += hist[((size_t)j * NBIN + b) * 2];
            hl += hist[((size_t)j * NBIN + b) * 2 + 1];
            double gr = G - gl, hr = H - hl;
            double gain = gl * gl / (hl + LAMBDA) + gr * gr / (hr + LAMBDA) - G * G / (H + LAMBDA);
            if (gain > best) {
                best = gain;
                s.feature = j;
                s.bin = b;
                s.left = -ETA * gl / (hl + LAMBDA);
                s.right = -ETA * gr / (hr + LAMBDA);
            }
        }
    }
    return s;
}

static void apply(struct data *d, const struct stump *s)
{
    if (s->feature < 0)
        return;
    for (int i = 0; i < d->rows; i++)
        d->pred[i] += d->bin[(size_t)i * NFEAT + s->feature] <= s->bin ? s->left : s->right;
}

static double rmse(const struct data *d)
{
    double se[2] = {0, (double)d->rows};
    for (int i = 0; i < d->rows; i++)
        se[0] += (d->pred[i] - d->y[i]) * (d->pred[i] - d->y[i]);
    RabitAllreduce(se, 2, RABIT_DOUBLE, RABIT_SUM, NULL, NULL);
    return sqrt(se[0] / se[1]);
}

int main(int argc, char *argv[])
{
    if (!RabitInit(argc, argv))
        return 1;
    /* rabit leaves argv as it is: skip its key=value arguments */
    int pos[2] = {100000, 400}, npos = 0;
    for (int i = 1; i < argc && npos < 2; i++)
        if (strchr(argv[i], '=') == NULL)
            pos[npos++] = atoi(argv[i]);
    int rank = RabitGetRank(), rounds = pos[1];
    struct data d = {pos[0], NULL, NULL, NULL, NULL, NULL};
    d.x = malloc(sizeof *d.x * (size_t)d.rows * NFEAT);
    d.bin = malloc((size_t)d.rows * NFEAT);
    d.y = malloc(sizeof *d.y * (size_t)d.rows);
    d.pred = calloc((size_t)d.rows, sizeof *d.pred);
    d.hist = malloc(sizeof *d.hist * NFEAT * NBIN * 2);
    struct stump *model = malloc(sizeof *model * (size_t)(rounds + 1));
    if (!d.x || !d.bin || !d.y || !d.pred || !d.hist || !model) {
        fprintf(stderr, "rabit_prog: out of memory\n");
        return 1;
    }
    make_data(&d, rank);

    char *global = NULL;
    rbt_ulong len = 0;
    int version = RabitLoadCheckPoint(&global, &len, NULL, NULL);
    int done = 0;
    if (version > 0) {
        /* the model is the stumps so far; the predictions are rebuilt */
        done = (int)(len / sizeof *model);
        memcpy(model, global, len);
        for (int t = 0; t < done; t++)
            apply(&d, &model[t]);
        char msg[80];
        snprintf(msg, sizeof msg, "rank %d restarted after round %d", rank, done);
        RabitTrackerPrint(msg);
    }

    for (int t = done; t < rounds; t++) {
        RabitAllreduce(d.hist, NFEAT * NBIN * 2, RABIT_DOUBLE, RABIT_SUM, histogram, &d);
        struct stump s = {-1, 0, 0, 0};
        if (rank == 0)
            s = best_split(d.hist);
        RabitBroadcast(&s, sizeof s, 0);
        apply(&d, &s);
        model[t] = s;
        if ((t + 1) % 5 == 0) {
            double e = rmse(&d);
            char msg[80];
            snprintf(msg, sizeof msg, "round %d rmse %.6f", t + 1, e);
            if (rank == 0)
                RabitTrackerPrint(msg);
        }
        RabitCheckPoint((const char *)model, sizeof *model * (rbt_ulong)(t + 1), NULL, 0);
    }

    double e = rmse(&d);
    if (rank == 0) {
        uint64_t h = 0xcbf29ce484222325ULL;
        const unsigned char *p = (const unsigned char *)model;
        for (size_t i = 0; i < sizeof *model * (size_t)rounds; i++)
            h = (h ^ p[i]) * 0x100000001b3ULL;
        char msg[80];
        snprintf(msg, sizeof msg, "rmse %.6f", e);
        RabitTrackerPrint(msg);
        snprintf(msg, sizeof msg, "digest %016llx", (unsigned long long)h);
        RabitTrackerPrint(msg);
    }
    free(d.x);
    free(d.bin);
    free(d.y);
    free(d.pred);
    free(d.hist);
    free(model);
    return RabitFinalize() ? 0 : 1;
}
