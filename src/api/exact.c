/*
 * exact.c — exact sums: the accumulators of include/rally/rally.h and the
 * two-pass allreduce (exact.h; util/xsum.h).
 */
#include "api/exact.h"

#include <stdlib.h>
#include <string.h>

#include "util/xsum.h"

struct rally_xsum {
    size_t count;
    size_t stride;  /* count rounded up to whole cache lines, never a multiple of 4 KiB */
    int64_t *limbs; /* RALLY__XS_LIMBS x stride: digit j of element i at j * stride + i */
    uint8_t *flags; /* count */
    uint32_t adds;  /* additions since the last carry pass */
};

/* Element i's digits, gathered into t[RALLY__XS_LIMBS] (as they are: whoever
 * reads t carries its own copy). */
static void gather(const struct rally_xsum *s, size_t i, int64_t *t)
{
    for (int j = 0; j < RALLY__XS_LIMBS; j++)
        t[j] = s->limbs[(size_t)j * s->stride + i];
}

rally_xsum_t *rally_xsum_new(size_t count)
{
    struct rally_xsum *s = calloc(1, sizeof *s);
    if (s == NULL || count > SIZE_MAX / (RALLY__XS_LIMBS * sizeof(int64_t)))
        goto fail;
    s->count = count;
    /* Digit planes a multiple of 4 KiB apart would share the same cache
     * sets: an addition touches three planes at once. */
    s->stride = (count + 7) / 8 * 8;
    if (s->stride % 512 == 0)
        s->stride += 8;
    s->limbs = calloc(s->stride, RALLY__XS_LIMBS * sizeof(int64_t));
    s->flags = calloc(count ? count : 1, 1);
    if (s->limbs == NULL || s->flags == NULL)
        goto fail;
    return s;
fail:
    rally_xsum_free(s);
    return NULL;
}

void rally_xsum_free(rally_xsum_t *s)
{
    if (s == NULL)
        return;
    free(s->limbs);
    free(s->flags);
    free(s);
}

size_t rally_xsum_count(const rally_xsum_t *s)
{
    return s->count;
}

size_t rally__xs_count(const rally_xsum_t *acc)
{
    return acc->count;
}

void rally_xsum_clear(rally_xsum_t *s)
{
    memset(s->limbs, 0, s->stride * RALLY__XS_LIMBS * sizeof(int64_t));
    memset(s->flags, 0, s->count);
    s->adds = 0;
}

/* Carries digit by digit over every element (the layout's own order). */
static void carry_all(struct rally_xsum *s)
{
    for (int j = 0; j + 1 < RALLY__XS_LIMBS; j++) {
        int64_t *a = s->limbs + (size_t)j * s->stride, *b = a + s->stride;
        for (size_t i = 0; i < s->count; i++) {
            int64_t low = (int64_t)((uint64_t)a[i] & 0xffffffffu);
            b[i] += (a[i] - low) / (INT64_C(1) << 32);
            a[i] = low;
        }
    }
    s->adds = 0;
}

/* Room for n more additions: carries first when they would not fit. */
static size_t room(struct rally_xsum *s, size_t n)
{
    if (s->adds == RALLY__XS_ADDS_MAX)
        carry_all(s);
    size_t left = RALLY__XS_ADDS_MAX - s->adds;
    n = n < left ? n : left;
    s->adds += (uint32_t)n;
    return n;
}

int rally_xsum_add(rally_xsum_t *s, size_t first, const double *v, size_t n)
{
    if (first > s->count || n > s->count - first || (v == NULL && n > 0))
        return RALLY_EINVAL;
    while (n > 0) {
        size_t m = room(s, n), stride = s->stride;
        int64_t *restrict L = s->limbs + first; /* restrict: a flag's byte aliases nothing */
        uint8_t *restrict f = s->flags + first;
        const double *restrict x = v;
        for (size_t k = 0; k < m; k++)
            rally__xs_add(L + k, stride, f + k, x[k]);
        first += m;
        v += m;
        n -= m;
    }
    return RALLY_OK;
}

int rally_xsum_add_float(rally_xsum_t *s, size_t first, const float *v, size_t n)
{
    if (first > s->count || n > s->count - first || (v == NULL && n > 0))
        return RALLY_EINVAL;
    while (n > 0) {
        size_t m = room(s, n), stride = s->stride;
        int64_t *restrict L = s->limbs + first;
        uint8_t *restrict f = s->flags + first;
        const float *restrict x = v;
        for (size_t k = 0; k < m; k++)
            rally__xs_add_float(L + k, stride, f + k, x[k]);
        first += m;
        v += m;
        n -= m;
    }
    return RALLY_OK;
}

int rally_xsum_add_at(rally_xsum_t *s, const uint64_t *index, const double *v, size_t n)
{
    if (n > 0 && (index == NULL || v == NULL))
        return RALLY_EINVAL;
    for (size_t k = 0; k < n; k++)
        if (index[k] >= s->count)
            return RALLY_EINVAL;
    while (n > 0) {
        size_t m = room(s, n), stride = s->stride;
        int64_t *restrict L = s->limbs;
        uint8_t *restrict f = s->flags;
        const double *restrict x = v;
        const uint64_t *restrict at = index;
        for (size_t k = 0; k < m; k++)
            rally__xs_add(L + at[k], stride, f + at[k], x[k]);
        index += m;
        v += m;
        n -= m;
    }
    return RALLY_OK;
}

int rally_xsum_merge(rally_xsum_t *s, rally_xsum_t *t)
{
    if (t->count != s->count)
        return RALLY_EINVAL;
    carry_all(s);
    carry_all(t);
    for (size_t i = 0; i < s->stride * RALLY__XS_LIMBS; i++)
        s->limbs[i] += t->limbs[i];
    for (size_t i = 0; i < s->count; i++)
        s->flags[i] |= t->flags[i];
    carry_all(s);
    return RALLY_OK;
}

static size_t float_size(int dtype)
{
    return dtype == RALLY_DOUBLE ? sizeof(double) : dtype == RALLY_FLOAT ? sizeof(float) : 0;
}

int rally_xsum_round(rally_xsum_t *s, int dtype, void *out)
{
    size_t sz = float_size(dtype);
    if (sz == 0 || (out == NULL && s->count > 0))
        return RALLY_EINVAL;
    int64_t t[RALLY__XS_LIMBS];
    for (size_t i = 0; i < s->count; i++) {
        gather(s, i, t);
        rally__xs_round_acc(t, s->flags[i], dtype, (char *)out + i * sz);
    }
    return RALLY_OK;
}

/* --- the allreduce -------------------------------------------------------- */

void rally__xs_wire_free(struct rally__xs_wire *w)
{
    free(w->marks);
    free(w->nlimbs);
    free(w->digits);
    memset(w, 0, sizeof *w);
}

static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
    if (n <= *cap)
        return 0;
    void *q = realloc(*p, n * elem);
    if (q == NULL)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

struct call {
    struct rally__xs_wire *w;
    const void *in; /* the values (acc NULL) */
    size_t count;
    int dtype;
    rally_xsum_t *acc;
    rally_prepare_fn prepare;
    void *prepare_arg;
    int prepared;
    int digit_bits;
};

static void prepare_once(struct call *c)
{
    if (!c->prepared && c->prepare != NULL)
        c->prepare(c->prepare_arg);
    c->prepared = 1;
}

static double value(const struct call *c, size_t i)
{
    if (c->dtype == RALLY_DOUBLE) {
        double d;
        memcpy(&d, (const char *)c->in + i * sizeof d, sizeof d);
        return d;
    }
    float f;
    memcpy(&f, (const char *)c->in + i * sizeof f, sizeof f);
    return f;
}

/* The pre-pass's input: each element's mark. */
static void mark_all(void *arg)
{
    struct call *c = arg;
    prepare_once(c);
    int16_t *m = c->w->marks;
    int64_t t[RALLY__XS_LIMBS];
    for (size_t i = 0; i < c->count; i++)
        if (c->acc) {
            gather(c->acc, i, t);
            rally__xs_mark_acc(t, c->acc->flags[i], m + 2 * i);
        } else {
            rally__xs_mark_double(value(c, i), m + 2 * i);
        }
}

/* The second pass's input: each element's digits in the combined layout. */
static void pack_all(void *arg)
{
    struct call *c = arg;
    prepare_once(c);
    const int16_t *m = c->w->marks;
    int64_t *d = c->w->digits, t[RALLY__XS_LIMBS];
    for (size_t i = 0; i < c->count; i++) {
        if (c->acc) {
            gather(c->acc, i, t);
            rally__xs_pack_acc(t, m + 2 * i, c->digit_bits, c->w->nlimbs[i], d);
        } else {
            rally__xs_pack_double(value(c, i), m + 2 * i, c->digit_bits, c->w->nlimbs[i], d);
        }
        d += c->w->nlimbs[i];
    }
}

int rally__xs_allreduce(struct rally__engine *en, struct rally__err *e, struct rally__xs_wire *w,
                        void *out, size_t count, int dtype, rally_xsum_t *acc,
                        rally_prepare_fn prepare, void *prepare_arg)
{
    struct call c = {w, out, count, dtype, acc, prepare, prepare_arg, 0,
                     rally__xs_digit_bits(rally__engine.world(en))};
    if (count > SIZE_MAX / 4 || grow((void **)&w->marks, &w->marks_cap, count, 2 * sizeof(int16_t)))
        return rally__fail(e, RALLY_ENOMEM, "allreduce: no memory for %zu exact sums", count);
    int rc = rally__engine.allreduce(en, w->marks, 2 * count, RALLY_INT16, RALLY_MAX, mark_all, &c);
    if (rc != RALLY_OK)
        return rc;
    if (grow((void **)&w->nlimbs, &w->nlimbs_cap, count, 1))
        return rally__fail(e, RALLY_ENOMEM, "allreduce: no memory for %zu exact sums", count);
    size_t total = 0;
    for (size_t i = 0; i < count; i++) {
        w->nlimbs[i] = (uint8_t)rally__xs_wire_limbs(w->marks + 2 * i, c.digit_bits);
        total += w->nlimbs[i];
    }
    if (grow((void **)&w->digits, &w->digits_cap, total, sizeof(int64_t)))
        return rally__fail(e, RALLY_ENOMEM, "allreduce: no memory for %zu exact-sum digits",
                           total);
    if (total > 0) {
        rc = rally__engine.allreduce(en, w->digits, total, RALLY_INT64, RALLY_SUM, pack_all, &c);
        if (rc != RALLY_OK)
            return rc;
    }
    size_t sz = dtype == RALLY_DOUBLE ? sizeof(double) : sizeof(float);
    const int64_t *d = w->digits;
    for (size_t i = 0; i < count; i++) {
        rally__xs_unpack(d, w->nlimbs[i], w->marks + 2 * i, c.digit_bits, dtype,
                         (char *)out + i * sz);
        d += w->nlimbs[i];
    }
    return RALLY_OK;
}
