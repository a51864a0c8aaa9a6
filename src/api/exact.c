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
    int64_t *limbs; /* count * RALLY__XS_LIMBS */
    uint8_t *flags; /* count */
    uint32_t adds;  /* additions since the last carry pass */
};

#define ELEM(s, i) ((s)->limbs + (i) * RALLY__XS_LIMBS)

rally_xsum_t *rally_xsum_new(size_t count)
{
    struct rally_xsum *s = calloc(1, sizeof *s);
    if (s == NULL || count > SIZE_MAX / (RALLY__XS_LIMBS * sizeof(int64_t)))
        goto fail;
    s->count = count;
    s->limbs = calloc(count ? count : 1, RALLY__XS_LIMBS * sizeof(int64_t));
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
    memset(s->limbs, 0, s->count * RALLY__XS_LIMBS * sizeof(int64_t));
    memset(s->flags, 0, s->count);
    s->adds = 0;
}

static void carry_all(struct rally_xsum *s)
{
    for (size_t i = 0; i < s->count; i++)
        rally__xs_carry(ELEM(s, i), RALLY__XS_LIMBS);
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
        size_t m = room(s, n);
        for (size_t k = 0; k < m; k++)
            rally__xs_add(ELEM(s, first + k), &s->flags[first + k], v[k]);
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
        size_t m = room(s, n);
        for (size_t k = 0; k < m; k++)
            rally__xs_add(ELEM(s, index[k]), &s->flags[index[k]], v[k]);
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
    for (size_t i = 0; i < s->count; i++) {
        int64_t *a = ELEM(s, i);
        const int64_t *b = ELEM(t, i);
        for (int j = 0; j < RALLY__XS_LIMBS; j++)
            a[j] += b[j];
        s->flags[i] |= t->flags[i];
    }
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
    for (size_t i = 0; i < s->count; i++)
        rally__xs_round_acc(ELEM(s, i), s->flags[i], dtype, (char *)out + i * sz);
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
    for (size_t i = 0; i < c->count; i++)
        if (c->acc)
            rally__xs_mark_acc(ELEM(c->acc, i), c->acc->flags[i], m + 2 * i);
        else
            rally__xs_mark_double(value(c, i), m + 2 * i);
}

/* The second pass's input: each element's digits in the combined layout. */
static void pack_all(void *arg)
{
    struct call *c = arg;
    prepare_once(c);
    const int16_t *m = c->w->marks;
    int64_t *d = c->w->digits;
    for (size_t i = 0; i < c->count; i++) {
        if (c->acc)
            rally__xs_pack_acc(ELEM(c->acc, i), m + 2 * i, c->digit_bits, c->w->nlimbs[i], d);
        else
            rally__xs_pack_double(value(c, i), m + 2 * i, c->digit_bits, c->w->nlimbs[i], d);
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
