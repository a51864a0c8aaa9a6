/*
 * xsum_test.c — exact sums (src/util/xsum.c, the accumulators of
 * src/api/exact.c): the sum as if in infinite precision, rounded once, so
 * the same bits for every order and grouping.
 *
 *   known_sums             sums whose exact value and rounding are known by
 *                          hand: ties to even, sticky bits far below, the
 *                          largest double and a carry into infinity,
 *                          subnormals, float rounding of double terms
 *   specials               NaN, infinities of one and both signs, -0 alone
 *                          and with +0, the empty sum, exact cancellation,
 *                          overflow, and overflow on the way that cancels
 *   grouping_and_order     random adversarial sets (heavy cancellation,
 *                          1e308 beside 1e-300, subnormals, mixed signs)
 *                          shuffled and split into 1 .. 9 groups, each
 *                          group one rank: the simulated wire (marks by
 *                          MAX, digits by int64 SUM, in a shuffled rank
 *                          order), one accumulator, and merged
 *                          accumulators all give the same bits
 *   one_value_a_rank       RALLY_SUM_EXACT's own path (one double a rank,
 *                          packed without an accumulator) agrees with the
 *                          accumulator's rounding at N = 1 .. 16
 *   digits_do_not_overflow the wire's digits at a world of 4096 with
 *                          every rank holding the largest digit pattern:
 *                          still the exact sum
 *   windows                an element read through the window of digits
 *                          its values touched marks, packs and rounds as
 *                          read whole, whatever other ranks hold; an
 *                          accumulator's window after a clear and a merge
 *   api                    rally_xsum_add / add_float / add_at / merge /
 *                          round / clear and their refusals
 *   many_additions         (argument "carry") 2^31 + 2^20 additions into
 *                          one element, past the carry passes' limit
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rally/rally.h"
#include "util/xsum.h"

static uint64_t bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

static uint32_t fbits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* One accumulator element. */
struct acc {
    int64_t L[RALLY__XS_LIMBS];
    uint8_t f;
};

static void acc_add(struct acc *a, const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rally__xs_add(a->L, 1, &a->f, v[i]);
    rally__xs_carry(a->L, RALLY__XS_LIMBS);
}

static double acc_sum(const double *v, size_t n)
{
    struct acc a = {{0}, 0};
    acc_add(&a, v, n);
    double out;
    rally__xs_round_acc(a.L, RALLY__XS_LIMBS, 0, a.f, RALLY_DOUBLE, &out);
    return out;
}

static float acc_sumf(const double *v, size_t n)
{
    struct acc a = {{0}, 0};
    acc_add(&a, v, n);
    float out;
    rally__xs_round_acc(a.L, RALLY__XS_LIMBS, 0, a.f, RALLY_FLOAT, &out);
    return out;
}

#define SUM(...)                                                                                   \
    acc_sum((const double[]){__VA_ARGS__}, sizeof((const double[]){__VA_ARGS__}) / sizeof(double))
#define SUMF(...)                                                                                  \
    acc_sumf((const double[]){__VA_ARGS__}, sizeof((const double[]){__VA_ARGS__}) / sizeof(double))

static void known_sums(void **state)
{
    (void)state;
    /* 1 + 2^-53 is a tie between 1 and 1 + 2^-52: to even, 1. */
    assert_int_equal(bits(SUM(1.0, 0x1p-53)), bits(1.0));
    /* ... and a sticky bit 2^-1000 below it breaks the tie upwards. */
    assert_int_equal(bits(SUM(1.0, 0x1p-53, 0x1p-1000)), bits(1.0 + 0x1p-52));
    /* 1 + 2^-52 + 2^-53: a tie with an odd last bit: up to 1 + 2^-51. */
    assert_int_equal(bits(SUM(1.0, 0x1p-52, 0x1p-53)), bits(1.0 + 0x1p-51));
    /* Plain doubles would lose the small terms: exact sums keep them. */
    assert_int_equal(bits(SUM(1e308, 1e-300, -1e308)), bits(1e-300));
    assert_int_equal(bits(SUM(0x1p-60, 1.0, -1.0)), bits(0x1p-60));
    assert_int_equal(bits(SUM(1.0, 1e100, 1.0, -1e100)), bits(2.0));
    /* The largest double plus half its last place ties: odd, so up: Inf. */
    assert_int_equal(bits(SUM(DBL_MAX, 0x1p970)), bits(INFINITY));
    /* Just below that half stays. */
    assert_int_equal(bits(SUM(DBL_MAX, 0x1p969)), bits(DBL_MAX));
    /* Overflow on the way cancels: no infinity. */
    assert_int_equal(bits(SUM(DBL_MAX, DBL_MAX, -DBL_MAX)), bits(DBL_MAX));
    /* Subnormals are exact, and carry into the normal range. */
    assert_int_equal(bits(SUM(0x1p-1074, 0x1p-1074, 0x1p-1074)), bits(3 * 0x1p-1074));
    assert_int_equal(bits(SUM(0x1p-1022, -0x1p-1074)), bits(0x1p-1022 - 0x1p-1074));
    assert_int_equal(bits(SUM(0x0.fffffffffffffp-1022, 0x1p-1074)), bits(0x1p-1022));
    /* Negative results. */
    assert_int_equal(bits(SUM(-1.0, -0x1p-53, -0x1p-1000)), bits(-(1.0 + 0x1p-52)));
    assert_int_equal(bits(SUM(-3.0, 1.0)), bits(-2.0));
    /* Float: rounded once from the exact sum, not via a double. */
    assert_int_equal(fbits(SUMF(1.0, 0x1p-24)), fbits(1.0f));
    assert_int_equal(fbits(SUMF(1.0, 0x1p-24, 0x1p-70)), fbits(1.0f + 0x1p-23f));
    /* 1 + 2^-24 + 2^-54: as a double 1 + 2^-24 (the 2^-54 lost), then a
     * float tie to 1: double rounding would be wrong. */
    assert_int_equal(fbits(SUMF(1.0, 0x1p-24, 0x1p-54)), fbits(1.0f + 0x1p-23f));
    assert_int_equal(fbits(SUMF(0x1p-149, 0x1p-149)), fbits(0x1p-148f));
    assert_int_equal(fbits(SUMF(0x1p-151)), fbits(0.0f));   /* below half the least: 0 */
    assert_int_equal(fbits(SUMF(-0x1p-151)), fbits(-0.0f)); /* ... keeping its sign */
    assert_int_equal(fbits(SUMF(0x1p-150, 0x1p-200)), fbits(0x1p-149f));
    assert_int_equal(fbits(SUMF((double)FLT_MAX + 0x1p103)), fbits(INFINITY)); /* + half its ulp */
    assert_int_equal(fbits(SUMF((double)FLT_MAX)), fbits(FLT_MAX));
    assert_int_equal(fbits(SUMF(1e300, -1e300, 2.5)), fbits(2.5f));
}

static void specials(void **state)
{
    (void)state;
    const uint64_t qnan = UINT64_C(0x7ff8000000000000);
    assert_int_equal(bits(SUM(1.0, NAN, 2.0)), qnan);
    assert_int_equal(bits(SUM(-NAN)), qnan);
    assert_int_equal(bits(SUM(INFINITY, -INFINITY)), qnan);
    assert_int_equal(bits(SUM(INFINITY, 1.0, INFINITY)), bits(INFINITY));
    assert_int_equal(bits(SUM(-INFINITY, DBL_MAX)), bits(-INFINITY));
    assert_int_equal(bits(SUM(NAN, INFINITY)), qnan);
    assert_int_equal(bits(SUM(-0.0)), bits(-0.0));
    assert_int_equal(bits(SUM(-0.0, -0.0, -0.0)), bits(-0.0));
    assert_int_equal(bits(SUM(-0.0, 0.0)), bits(0.0));
    assert_int_equal(bits(SUM(0.0, -0.0)), bits(0.0));
    assert_int_equal(bits(SUM(1.5, -1.5)), bits(0.0));
    assert_int_equal(bits(SUM(-1.5, 1.5, -0.0)), bits(0.0));
    assert_int_equal(bits(acc_sum(NULL, 0)), bits(0.0)); /* the empty sum */
    assert_int_equal(bits(SUM(DBL_MAX, DBL_MAX)), bits(INFINITY));
    assert_int_equal(bits(SUM(-DBL_MAX, -DBL_MAX, 1.0)), bits(-INFINITY));
    assert_int_equal(fbits(SUMF(NAN)), 0x7fc00000u);
    assert_int_equal(fbits(SUMF(-INFINITY)), fbits(-INFINITY));
    assert_int_equal(fbits(SUMF(-0.0)), fbits(-0.0f));
    assert_int_equal(fbits(SUMF(1e39)), fbits(INFINITY));
}

/* --- the wire, simulated: what the two allreduces compute ---------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* A value of one of the adversarial kinds. */
static double adversarial(int kind)
{
    double u = (double)(rnd() >> 11) * 0x1p-53; /* [0, 1) */
    double s = (rnd() & 1) ? -1.0 : 1.0;
    switch (kind) {
    case 0: /* ordinary mixed signs */
        return s * u * 100;
    case 1: /* huge and tiny */
        return (rnd() & 1) ? s * 1e308 * u : s * 1e-300 * u;
    case 2: /* subnormals */
        return s * (double)(rnd() >> 12) * 0x1p-1074;
    case 3: /* any finite double */ {
        uint64_t b = rnd();
        double d;
        memcpy(&d, &b, sizeof d);
        return isfinite(d) ? d : s;
    }
    default: /* cancellation: pairs summing to nearly 0 are made by the caller */
        return s * ldexp(u + 1, (int)(rnd() % 200) - 100);
    }
}

/* Simulated allreduce of world groups' accumulators: out of each rank's
 * marks the MAX, of its digits the sum modulo 2^64, combined in a shuffled
 * rank order (an engine may combine in any). */
static double wire(struct acc *g, int world)
{
    int16_t mark[2] = {INT16_MIN, INT16_MIN};
    for (int r = 0; r < world; r++) {
        int16_t m[2];
        rally__xs_mark_acc(g[r].L, RALLY__XS_LIMBS, 0, g[r].f, m);
        mark[0] = m[0] > mark[0] ? m[0] : mark[0];
        mark[1] = m[1] > mark[1] ? m[1] : mark[1];
    }
    int D = rally__xs_digit_bits(world);
    size_t n = rally__xs_wire_limbs(mark, D);
    uint64_t sum[64] = {0};
    int64_t mine[64];
    assert_true(n <= 64);
    int order[16];
    for (int r = 0; r < world; r++)
        order[r] = r;
    for (int r = world - 1; r > 0; r--) {
        int k = (int)(rnd() % (uint64_t)(r + 1)), t = order[r];
        order[r] = order[k];
        order[k] = t;
    }
    for (int i = 0; i < world; i++) {
        rally__xs_pack_acc(g[order[i]].L, RALLY__XS_LIMBS, 0, mark, D, n, mine);
        for (size_t j = 0; j < n; j++)
            sum[j] += (uint64_t)mine[j];
    }
    int64_t digits[64];
    for (size_t j = 0; j < n; j++)
        memcpy(&digits[j], &sum[j], sizeof digits[j]);
    double out;
    rally__xs_unpack(digits, n, mark, D, RALLY_DOUBLE, &out);
    return out;
}

static void grouping_and_order(void **state)
{
    (void)state;
    enum { NV = 400 };
    static double v[NV];
    static struct acc g[16];
    rng_state = 0x9e3779b97f4a7c15u;
    for (int trial = 0; trial < 300; trial++) {
        int kind = trial % 5;
        size_t n = 1 + rnd() % NV;
        for (size_t i = 0; i < n; i++)
            v[i] = adversarial(kind);
        if (kind == 4) /* heavy cancellation: every value and its negation, plus a little */
            for (size_t i = 0; i + 1 < n; i += 2)
                v[i + 1] = -v[i] + ((rnd() % 4 == 0) ? ldexp(1.0, -(int)(rnd() % 1000)) : 0.0);
        double whole = acc_sum(v, n);
        for (int rep = 0; rep < 6; rep++) {
            for (size_t i = n - 1; i > 0; i--) {
                size_t k = rnd() % (i + 1);
                double t = v[i];
                v[i] = v[k];
                v[k] = t;
            }
            int world = 1 + (int)(rnd() % 9);
            memset(g, 0, sizeof g);
            /* Contiguous groups of random sizes: some ranks may hold nothing. */
            size_t at = 0;
            for (int r = 0; r < world; r++) {
                size_t take = r == world - 1 ? n - at : rnd() % (n - at + 1);
                acc_add(&g[r], v + at, take);
                at += take;
            }
            assert_int_equal(bits(wire(g, world)), bits(whole));
            assert_int_equal(bits(acc_sum(v, n)), bits(whole));
        }
        /* The same set summed with plain doubles in two orders usually
         * differs: the test could tell orders apart. */
    }
}

/* RALLY_SUM_EXACT's path for one value a rank, simulated: marks by MAX,
 * digits by int64 SUM, then the unpack into dtype at out. */
static void one_each(const double *v, int world, int dtype, void *out)
{
    int16_t mark[2] = {INT16_MIN, INT16_MIN};
    for (int r = 0; r < world; r++) {
        int16_t m[2];
        rally__xs_mark_double(v[r], m);
        mark[0] = m[0] > mark[0] ? m[0] : mark[0];
        mark[1] = m[1] > mark[1] ? m[1] : mark[1];
    }
    int D = rally__xs_digit_bits(world);
    size_t n = rally__xs_wire_limbs(mark, D);
    int64_t digits[64] = {0}, mine[64];
    assert_true(n <= 64);
    for (int r = 0; r < world; r++) {
        rally__xs_pack_double(v[r], mark, D, n, mine);
        for (size_t j = 0; j < n; j++)
            digits[j] = (int64_t)((uint64_t)digits[j] + (uint64_t)mine[j]);
    }
    rally__xs_unpack(digits, n, mark, D, dtype, out);
}

static double one_each_d(const double *v, int world)
{
    double d;
    one_each(v, world, RALLY_DOUBLE, &d);
    return d;
}

static void one_value_a_rank(void **state)
{
    (void)state;
    /* Ties and their neighbours through the wire's shortcuts (one digit,
     * two digits, the hardware's conversion): as the rounding rule says. */
    double t1[] = {1.0, 0x1p-53}, t2[] = {1.0 + 0x1p-52, 0x1p-53}, t3[] = {1.0, 0x1p-53, 0x1p-100};
    double t4[] = {0x1p60, 1.0, -0x1p60}, t5[] = {-1.0, -0x1p-53}, t6[] = {0x1p-1070, 0x1p-1074};
    double t7[] = {DBL_MAX, 0x1p970}, t8[] = {1.0, 0x1p-24, 0x1p-54};
    assert_int_equal(bits(one_each_d(t1, 2)), bits(1.0));
    assert_int_equal(bits(one_each_d(t2, 2)), bits(1.0 + 0x1p-51));
    assert_int_equal(bits(one_each_d(t3, 3)), bits(1.0 + 0x1p-52));
    assert_int_equal(bits(one_each_d(t4, 3)), bits(1.0));
    assert_int_equal(bits(one_each_d(t5, 2)), bits(-1.0));
    assert_int_equal(bits(one_each_d(t6, 2)), bits(0x1p-1070 + 0x1p-1074));
    assert_int_equal(bits(one_each_d(t7, 2)), bits(INFINITY));
    float f;
    one_each(t8, 3, RALLY_FLOAT, &f);
    assert_int_equal(fbits(f), fbits(1.0f + 0x1p-23f));
    one_each(t1, 2, RALLY_FLOAT, &f);
    assert_int_equal(fbits(f), fbits(1.0f));
    rng_state = 12345;
    double v[16];
    for (int trial = 0; trial < 2000; trial++) {
        int world = 1 + (int)(rnd() % 16);
        for (int r = 0; r < world; r++)
            v[r] = adversarial(trial % 5);
        if (trial % 7 == 0)
            v[rnd() % (uint64_t)world] = (trial % 3) ? -0.0 : INFINITY;
        double out;
        float outf;
        one_each(v, world, RALLY_DOUBLE, &out);
        one_each(v, world, RALLY_FLOAT, &outf);
        assert_int_equal(bits(out), bits(acc_sum(v, (size_t)world)));
        assert_int_equal(fbits(outf), fbits(acc_sumf(v, (size_t)world)));
    }
}

static void digits_do_not_overflow(void **state)
{
    (void)state;
    /* 4096 ranks, each holding a sum whose bits are all ones from position
     * 0 to 2066, so every digit on the wire is all ones: D = 51 is the
     * widest that keeps 4096 of them from overflowing an int64 (with 52
     * this sum would wrap and come out wrong). */
    enum { W = 4096 };
    int D = rally__xs_digit_bits(W);
    assert_int_equal(D, 51);
    struct acc a = {{0}, 0};
    for (int k = 0; k < 39; k++) {
        double v = ldexp((double)((UINT64_C(1) << 53) - 1), 53 * k - 1074);
        acc_add(&a, &v, 1);
    }
    int16_t mark[2];
    rally__xs_mark_acc(a.L, RALLY__XS_LIMBS, 0, a.f, mark);
    assert_int_equal(mark[0], 2067);
    assert_int_equal(mark[1], 0);
    size_t n = rally__xs_wire_limbs(mark, D);
    int64_t d[64];
    assert_true(n <= 64);
    rally__xs_pack_acc(a.L, RALLY__XS_LIMBS, 0, mark, D, n, d);
    for (size_t j = 0; j + 1 < n; j++)
        assert_int_equal(d[j], (INT64_C(1) << D) - 1);
    for (size_t j = 0; j < n; j++)
        d[j] = (int64_t)((uint64_t)d[j] * W);
    double out;
    rally__xs_unpack(d, n, mark, D, RALLY_DOUBLE, &out);
    /* 4096 * (2^2067 - 1) * 2^-1074 rounds to 2^1005. */
    assert_int_equal(bits(out), bits(0x1p1005));
}

/* More additions into one element than a digit could take without the
 * carry passes: 2^31 + 2^20 copies of a value whose bits fill its digits.
 * (Seconds of work: its own ctest, xsum_carry, outside the quick tier.) */
static void many_additions(void **state)
{
    (void)state;
    rally_xsum_t *big = rally_xsum_new(1);
    enum { CHUNK = 1 << 20 };
    double *v = malloc(CHUNK * sizeof *v);
    uint64_t *at = calloc(CHUNK, sizeof *at); /* all into element 0 */
    assert_non_null(v);
    assert_non_null(at);
    for (int i = 0; i < CHUNK; i++)
        v[i] = 0x1.fffffffffffffp-1022;
    for (int k = 0; k < 2049; k++)
        assert_int_equal(rally_xsum_add_at(big, at, v, CHUNK), RALLY_OK);
    double got;
    rally_xsum_round(big, RALLY_DOUBLE, &got);
    assert_int_equal(bits(got), bits(0x1.fffffffffffffp-1022 * 2049.0 * CHUNK));
    free(v);
    free(at);
    rally_xsum_free(big);
}

static void api(void **state)
{
    (void)state;
    rally_xsum_t *s = rally_xsum_new(4), *t = rally_xsum_new(4), *u = rally_xsum_new(3);
    assert_non_null(s);
    assert_int_equal(rally_xsum_count(s), 4);
    double row[4] = {1e308, 1.0, -0.0, 0x1p-1074};
    double neg[4] = {-1e308, 0x1p-60, -0.0, 0x1p-1074};
    assert_int_equal(rally_xsum_add(s, 0, row, 4), RALLY_OK);
    assert_int_equal(rally_xsum_add(s, 1, row, 4), RALLY_EINVAL); /* passes the end */
    assert_int_equal(rally_xsum_add(t, 0, neg, 4), RALLY_OK);
    assert_int_equal(rally_xsum_merge(s, u), RALLY_EINVAL);
    assert_int_equal(rally_xsum_merge(s, t), RALLY_OK);
    double out[4];
    assert_int_equal(rally_xsum_round(s, RALLY_DOUBLE, out), RALLY_OK);
    assert_int_equal(bits(out[0]), bits(0.0));
    assert_int_equal(bits(out[1]), bits(1.0)); /* 1 + 2^-60, rounded */
    assert_int_equal(bits(out[2]), bits(-0.0));
    assert_int_equal(bits(out[3]), bits(0x1p-1073));
    assert_int_equal(rally_xsum_round(s, RALLY_INT32, out), RALLY_EINVAL);
    /* Floats added as floats are the same values as added as doubles. */
    rally_xsum_t *fs = rally_xsum_new(3), *ds = rally_xsum_new(3);
    rng_state = 99;
    for (int i = 0; i < 3000; i++) {
        uint32_t b = (uint32_t)rnd();
        float fv[3];
        memcpy(&fv[0], &b, sizeof b); /* any float: NaN, infinities, subnormals too */
        fv[1] = (float)adversarial(i % 5);
        fv[2] = i % 2 ? -0.0f : 0x1p-149f * (float)(rnd() % 1000);
        if (i % 500 == 0)
            fv[0] = 1.0f;
        double dv[3] = {fv[0], fv[1], fv[2]};
        assert_int_equal(rally_xsum_add_float(fs, 0, fv, 3), RALLY_OK);
        assert_int_equal(rally_xsum_add(ds, 0, dv, 3), RALLY_OK);
    }
    double a[3], b3[3];
    rally_xsum_round(fs, RALLY_DOUBLE, a);
    rally_xsum_round(ds, RALLY_DOUBLE, b3);
    assert_memory_equal(a, b3, sizeof a);
    float nz = -0.0f;
    rally_xsum_clear(fs);
    assert_int_equal(rally_xsum_add_float(fs, 2, &nz, 1), RALLY_OK);
    assert_int_equal(rally_xsum_add_float(fs, 3, &nz, 1), RALLY_EINVAL);
    rally_xsum_round(fs, RALLY_DOUBLE, a);
    assert_int_equal(bits(a[2]), bits(-0.0));
    rally_xsum_free(fs);
    rally_xsum_free(ds);
    /* add_at: bins, and an index out of range adds nothing. */
    rally_xsum_clear(s);
    uint64_t idx[5] = {3, 0, 3, 3, 1};
    double val[5] = {0.1, 5.0, 0.2, 0.3, -2.0};
    assert_int_equal(rally_xsum_add_at(s, idx, val, 5), RALLY_OK);
    uint64_t bad[2] = {0, 4};
    assert_int_equal(rally_xsum_add_at(s, bad, val, 2), RALLY_EINVAL);
    float outf[4];
    assert_int_equal(rally_xsum_round(s, RALLY_FLOAT, outf), RALLY_OK);
    assert_int_equal(fbits(outf[0]), fbits(5.0f));
    assert_int_equal(fbits(outf[1]), fbits(-2.0f));
    assert_int_equal(fbits(outf[2]), fbits(0.0f));         /* the empty sum */
    assert_int_equal(bits(SUM(0.1, 0.2, 0.3)), bits(0.6)); /* exact 0.6000000000000000055... */
    assert_int_equal(fbits(outf[3]), fbits(0.6f));
    rally_xsum_free(s);
    rally_xsum_free(t);
    rally_xsum_free(u);
    rally_xsum_free(NULL);
}

/* An accumulator of count elements (its first three used) whose window
 * was wide, cleared, then narrow, and merges of far windows. */
static void window_api(size_t count)
{
    rally_xsum_t *s = rally_xsum_new(count), *t = rally_xsum_new(count);
    double wide[3] = {0x1p-1070, 1e300, 1.0}, one[3] = {1.0, 2.0, 0x1p-30};
    double *out = calloc(count, sizeof *out);
    assert_non_null(out);
    assert_int_equal(rally_xsum_add(s, 0, wide, 3), RALLY_OK);
    rally_xsum_clear(s);
    assert_int_equal(rally_xsum_add(s, 0, one, 3), RALLY_OK);
    rally_xsum_round(s, RALLY_DOUBLE, out);
    assert_memory_equal(out, one, sizeof one);
    uint64_t at[3] = {0, 1, 2};
    assert_int_equal(rally_xsum_add_at(t, at, wide, 3), RALLY_OK);
    assert_int_equal(rally_xsum_merge(s, t), RALLY_OK);
    rally_xsum_round(s, RALLY_DOUBLE, out);
    assert_int_equal(bits(out[0]), bits(1.0)); /* 1 + 2^-1070, rounded */
    assert_int_equal(bits(out[1]), bits(1e300));
    assert_int_equal(bits(out[2]), bits(1.0 + 0x1p-30));
    assert_int_equal(rally_xsum_merge(t, s), RALLY_OK); /* t: wide twice, plus one */
    rally_xsum_round(t, RALLY_DOUBLE, out);
    assert_int_equal(bits(out[0]), bits(1.0));
    assert_int_equal(bits(out[1]), bits(2e300));
    assert_int_equal(bits(out[2]), bits(2.0 + 0x1p-30));
    float f = 0x1p-149f;
    rally_xsum_clear(t);
    assert_int_equal(rally_xsum_add_float(t, 1, &f, 1), RALLY_OK); /* the lowest digit alone */
    rally_xsum_round(t, RALLY_DOUBLE, out);
    assert_int_equal(bits(out[1]), bits(0x1p-149));
    assert_int_equal(bits(out[0]), bits(0.0));
    free(out);
    rally_xsum_free(s);
    rally_xsum_free(t);
}

/* An element read through a window of its digits (base .. base + n - 1,
 * all others zero) marks, packs and rounds as read whole: also when another
 * rank's values lie far below or above the window. */
static void windows(void **state)
{
    (void)state;
    rng_state = 7;
    for (int trial = 0; trial < 400; trial++) {
        struct acc a = {{0}, 0}, other = {{0}, 0};
        int e = (int)(rnd() % 2000) - 1074, eo = (int)(rnd() % 2000) - 1074;
        for (int i = 0; i < 50; i++) {
            double v = ldexp((double)(rnd() >> 11), e - 53 + (int)(rnd() % 40));
            double w = ldexp((double)(rnd() >> 11), eo - 53);
            v = rnd() % 2 ? -v : v;
            acc_add(&a, &v, 1);
            acc_add(&other, &w, 1);
        }
        int lo = 0, hi = RALLY__XS_LIMBS;
        while (lo < RALLY__XS_LIMBS && a.L[lo] == 0)
            lo++;
        while (hi > lo + 1 && a.L[hi - 1] == 0)
            hi--;
        if (lo == RALLY__XS_LIMBS) /* cancelled to zero: the one-digit window */
            lo = 0, hi = 1;
        hi += hi < RALLY__XS_LIMBS && rnd() % 2; /* a window may be wider than its digits */
        int n = hi - lo;
        int16_t whole[2], win[2], om[2], mark[2];
        rally__xs_mark_acc(a.L, RALLY__XS_LIMBS, 0, a.f, whole);
        rally__xs_mark_acc(a.L + lo, n, lo, a.f, win);
        assert_memory_equal(whole, win, sizeof whole);
        double dw, dn;
        rally__xs_round_acc(a.L, RALLY__XS_LIMBS, 0, a.f, RALLY_DOUBLE, &dw);
        rally__xs_round_acc(a.L + lo, n, lo, a.f, RALLY_DOUBLE, &dn);
        assert_int_equal(bits(dw), bits(dn));
        rally__xs_mark_acc(other.L, RALLY__XS_LIMBS, 0, other.f, om);
        for (int k = 0; k < 2; k++)
            mark[k] = whole[k] > om[k] ? whole[k] : om[k];
        int D = rally__xs_digit_bits(1 + (int)(rnd() % 64));
        size_t nw = rally__xs_wire_limbs(mark, D);
        int64_t pw[64], pn[64];
        assert_true(nw <= 64);
        rally__xs_pack_acc(a.L, RALLY__XS_LIMBS, 0, mark, D, nw, pw);
        rally__xs_pack_acc(a.L + lo, n, lo, mark, D, nw, pn);
        assert_memory_equal(pw, pn, nw * sizeof *pw);
    }
    for (int k = 0; k < 2; k++) /* small ones keep every digit; large ones track them */
        window_api(k ? 5000 : 3);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(known_sums),
        cmocka_unit_test(specials),
        cmocka_unit_test(grouping_and_order),
        cmocka_unit_test(one_value_a_rank),
        cmocka_unit_test(digits_do_not_overflow),
        cmocka_unit_test(windows),
        cmocka_unit_test(api),
    };
    const struct CMUnitTest slow[] = {cmocka_unit_test(many_additions)};
    if (argc > 1 && strcmp(argv[1], "carry") == 0)
        return cmocka_run_group_tests(slow, NULL, NULL);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
