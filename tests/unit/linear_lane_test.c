/*
 * linear_lane_test.c — rally-linear --reproducible's lane (examples/linear/
 * loss.c): the gradient's exact sums reached with a few double operations a
 * term instead of an accumulator addition each, to the same bits.
 *
 *   same_sums          on dense shards built to take every way out of the
 *                      lane (values 2^-100 beside 2^10 that leave rests,
 *                      zeros of both signs, subnormal floats, a feature of
 *                      -0 only) and at weights whose margins make c tiny,
 *                      subnormal and zero, the lane leaves the accumulator
 *                      holding what adding every term leaves: the same
 *                      exact sums (read to the last bit, not only rounded)
 *   eval_adds_per_row  an L-BFGS evaluation with --reproducible on a dense
 *                      shard (lr_lbfgs_eval_start, the path rally-linear
 *                      takes) puts at most two values a row into the
 *                      accumulators (each row's loss, and the lane's sums
 *                      every 256 rows), where adding every term put d + 2:
 *                      the cause of the 2-3x an iteration, pinned by a count
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "linear.h"

/* Every value put into an accumulator, counted (-Wl,--wrap). */
static uint64_t added;
int __real_rally_xsum_add(rally_xsum_t *s, size_t first, const double *v, size_t n);
int __real_rally_xsum_add_at(rally_xsum_t *s, const uint64_t *index, const double *v, size_t n);
int __wrap_rally_xsum_add(rally_xsum_t *s, size_t first, const double *v, size_t n)
{
    added += n;
    return __real_rally_xsum_add(s, first, v, n);
}
int __wrap_rally_xsum_add_at(rally_xsum_t *s, const uint64_t *index, const double *v, size_t n)
{
    added += n;
    return __real_rally_xsum_add_at(s, index, v, n);
}

static uint64_t rng = 88172645463325252u;
static double uniform(void) /* [0, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53;
}

/* EDGE: every term of a feature negative (on the first sum's finer grid)
 * and near the largest the lane takes (|c| just below 256 = 2^(8b + 8), x
 * just below a power of two): the first sum's exactness needs its sigma
 * and the flush every 2^M rows. */
enum { CLEAN, RESTS, ZEROS, SUBNORMAL, NZERO_FEATURE, EDGE, KINDS };
#define EDGE_SCALE (1 / 511.9876543) /* c = -y / (2 scale) at w = 0: 53 bits */

/* A dense shard of two overlapping blobs; kind adds its oddities. */
struct shard {
    struct lr_job j;
    uint64_t *rp;
    uint32_t *idx;
    float *val;
    double *y;
};

static void shard_make(struct shard *s, int kind, uint64_t rows, uint32_t d)
{
    memset(s, 0, sizeof *s);
    s->rp = malloc((rows + 1) * sizeof *s->rp);
    s->idx = malloc(rows * d * sizeof *s->idx);
    s->val = malloc(rows * d * sizeof *s->val);
    s->y = malloc(rows * sizeof *s->y);
    assert_non_null(s->rp);
    assert_non_null(s->idx);
    assert_non_null(s->val);
    assert_non_null(s->y);
    for (uint64_t i = 0; i < rows; i++) {
        s->rp[i] = i * d;
        s->y[i] = kind == EDGE ? 1.0 : uniform() < 0.5 ? -1.0 : 1.0;
        for (uint32_t f = 0; f < d; f++) {
            double g = uniform() + uniform() + uniform() + uniform() - 2.0; /* about N(0, 1/3) */
            double x = 0.7 * s->y[i] + 2.0 * g;
            double u = uniform();
            if (kind == RESTS && u < 0.05)
                x *= 0x1p-100;
            else if (kind == RESTS && u < 0.10)
                x *= 0x1p10;
            else if (kind == ZEROS && u < 0.02)
                x = u < 0.01 ? 0.0 : -0.0;
            else if (kind == SUBNORMAL && u < 0.02)
                x = 0x1p-140 * (u + 0.5);
            if (kind == NZERO_FEATURE && f == 2) /* c x = -0 for either sign of y */
                x = s->y[i] > 0 ? 0.0 : -0.0;
            if (kind == EDGE)
                x = ldexp(1 - 0x1p-24 - 0x1p-10 * uniform(), (int)f - 4);
            s->idx[i * d + f] = f;
            s->val[i * d + f] = (float)x;
        }
    }
    s->rp[rows] = rows * d;
    s->j = (struct lr_job){.rank = 0, .world = 1, .rows = rows, .total_rows = rows, .d = d,
                           .rp = s->rp, .idx = s->idx, .val = s->val, .y = s->y, .dense = 1,
                           .reproducible = 1};
}

static void shard_free(struct shard *s)
{
    free(s->rp);
    free(s->idx);
    free(s->val);
    free(s->y);
}

/* Whether a and b hold the same exact sums (n elements), read as the
 * expansion r0 + r1 + ... that rounding and taking the rounded value away
 * leaves: a tiny term that rounding alone hides still shows.  Spends both. */
static int same_exact(rally_xsum_t *a, rally_xsum_t *b, size_t n, const char *what)
{
    double ra[16], rb[16];
    for (int k = 0; k < 48; k++) { /* each round takes 53 bits or more of ~2200 */
        assert_int_equal(rally_xsum_round(a, RALLY_DOUBLE, ra), RALLY_OK);
        assert_int_equal(rally_xsum_round(b, RALLY_DOUBLE, rb), RALLY_OK);
        int rest = 0;
        for (size_t e = 0; e < n; e++) {
            if (memcmp(&ra[e], &rb[e], sizeof ra[e]) != 0) {
                print_error("%s, element %zu, part %d: %a term by term, %a through the lane\n",
                            what, e, k, ra[e], rb[e]);
                return 0;
            }
            rest |= ra[e] != 0;
            ra[e] = -ra[e];
        }
        if (!rest)
            return 1;
        assert_int_equal(rally_xsum_add(a, 0, ra, n), RALLY_OK);
        assert_int_equal(rally_xsum_add(b, 0, ra, n), RALLY_OK);
    }
    return 1;
}

static void same_sums(void **state)
{
    (void)state;
    const uint32_t d = 9;
    const size_t n = d + 1;
    const double scales[] = {0.0, 0.3, 3.0, 40.0, 300.0, 3000.0};
    rally_xsum_t *a = rally_xsum_new(n + 1), *b = rally_xsum_new(n + 1);
    double *tmp = malloc(n * sizeof *tmp), *w = malloc(n * sizeof *w);
    uint64_t *at = malloc(n * sizeof *at);
    assert_true(a != NULL && b != NULL && tmp != NULL && w != NULL && at != NULL);
    for (int kind = 0; kind < KINDS; kind++) {
        struct shard s;
        shard_make(&s, kind, 3000, d);
        struct lr_lane *l = lr_lane_new(&s.j);
        assert_non_null(l);
        for (size_t k = 0; k < sizeof scales / sizeof *scales; k++) {
            for (size_t f = 0; f < n; f++) /* the margins' spread grows with the scale */
                w[f] = scales[k] * (f % 3 == 0 ? 1.0 : f % 3 == 1 ? -0.375 : 0.0625);
            w[d] = scales[k] * 0.01; /* the intercept */
            double rows = kind == EDGE ? EDGE_SCALE : 3000.0;
            lr_loss_grad_exact(&s.j, w, rows, a, tmp, at);
            lr_loss_grad_lane(&s.j, w, rows, b, tmp, at, l);
            char what[64];
            snprintf(what, sizeof what, "shard kind %d, scale %g", kind, scales[k]);
            if (!same_exact(a, b, n + 1, what))
                fail();
        }
        lr_lane_free(l);
        shard_free(&s);
    }
    rally_xsum_free(a);
    rally_xsum_free(b);
    free(tmp);
    free(w);
    free(at);
}

static void eval_adds_per_row(void **state)
{
    (void)state;
    const uint64_t rows = 4000;
    const uint32_t d = 20;
    char *args[] = {"linear_lane_test", NULL}, **argv = args;
    int argc = 1;
    struct shard s;
    struct lr_model m;
    shard_make(&s, CLEAN, rows, d);
    assert_int_equal(rally_init(&s.j.r, &argc, &argv), RALLY_OK);
    assert_int_equal(lr_model_alloc(&m, LR_LBFGS, d, 3), 0);
    m.lambda = 1e-4;
    m.flags |= LR_INTERCEPT;
    for (uint32_t f = 0; f < d; f++)
        m.w[f] = 0.25 * (f % 2 ? 1 : -1);
    added = 0;
    assert_int_equal(lr_lbfgs_eval_start(&s.j, &m), LR_EXIT_OK);
    assert_true(isfinite(m.f) && m.f > 0);
    if (added > 2 * rows)
        fail_msg("%llu values into the accumulators for %llu rows of %u features: more than 2 "
                 "a row",
                 (unsigned long long)added, (unsigned long long)rows, (unsigned)d);
    lr_model_free(&m);
    rally_finalize(s.j.r);
    shard_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_sums),
        cmocka_unit_test(eval_adds_per_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
