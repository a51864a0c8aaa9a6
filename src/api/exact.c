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
    /* Digits lo .. hi - 1 may be nonzero, of any element; all others are
     * zero.  Values of similar size touch a few of the 70, and only those
     * are cleared, carried, read.  An addition notes the lowest digit j it
     * wrote in starts[j + 1] (starts[0]: a zero or special), one store
     * that costs less than keeping lo and hi; settle() folds them in.
     * Even that store costs a sixth of an addition: an accumulator of
     * fewer than RALLY__XS_TRACK elements, whose additions outnumber its
     * reads, keeps the whole window instead (track 0). */
    int lo, hi;
    int track;
    uint8_t starts[RALLY__XS_LIMBS + 1];
};

#define RALLY__XS_TRACK 4096

/* Widens the window for digits lo .. hi - 1. */
static void widen(struct rally_xsum *s, int lo, int hi)
{
    s->lo = lo < s->lo ? lo : s->lo;
    s->hi = hi > s->hi ? hi : s->hi;
}

/* Folds the additions' notes into lo and hi: a double from digit j writes j
 * .. j + 2 (a float j .. j + 1; the window may be a digit wider). */
static void settle(struct rally_xsum *s)
{
    for (int j = 0; j < RALLY__XS_LIMBS - 2; j++)
        if (s->starts[j + 1]) {
            widen(s, j, j + 3);
            s->starts[j + 1] = 0;
        }
}

/* The window of digits every element may use: [*base, *base + return). */
static int window(struct rally_xsum *s, int *base)
{
    settle(s);
    if (s->hi <= s->lo) { /* nothing but zeros and specials added: one zero digit */
        *base = 0;
        return 1;
    }
    *base = s->lo;
    return s->hi - s->lo;
}

/* Element i's digits base .. base + n - 1, gathered into t[0 .. n) (as they
 * are: whoever reads t carries its own copy). */
static void gather(const struct rally_xsum *s, size_t i, int base, int n, int64_t *t)
{
    const int64_t *L = s->limbs + (size_t)base * s->stride + i;
    for (int j = 0; j < n; j++)
        t[j] = L[(size_t)j * s->stride];
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
    s->track = count >= RALLY__XS_TRACK;
    s->lo = s->track ? RALLY__XS_LIMBS : 0;
    s->hi = s->track ? 0 : RALLY__XS_LIMBS;
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
    settle(s);
    if (s->hi > s->lo)
        memset(s->limbs + (size_t)s->lo * s->stride, 0,
               (size_t)(s->hi - s->lo) * s->stride * sizeof(int64_t));
    memset(s->flags, 0, s->count);
    s->adds = 0;
    s->lo = s->track ? RALLY__XS_LIMBS : 0;
    s->hi = s->track ? 0 : RALLY__XS_LIMBS;
}

/* Carries digit by digit over every element (the layout's own order),
 * within the window and into the digit above it. */
static void carry_all(struct rally_xsum *s)
{
    settle(s);
    if (s->hi <= s->lo) {
        s->adds = 0;
        return;
    }
    int top = s->hi < RALLY__XS_LIMBS ? s->hi : RALLY__XS_LIMBS - 1;
    for (int j = s->lo; j < top; j++) {
        int64_t *a = s->limbs + (size_t)j * s->stride, *b = a + s->stride;
        for (size_t i = 0; i < s->count; i++) {
            int64_t low = (int64_t)((uint64_t)a[i] & 0xffffffffu);
            b[i] += (a[i] - low) / (INT64_C(1) << 32);
            a[i] = low;
        }
    }
    s->hi = top + 1;
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

/* Adds n values into s: doubles dv or floats fv, into elements first + k
 * or (index not NULL) index[k].  track (a constant at each call, as dv, fv
 * and index are NULL or not): note the digits each addition starts at. */
static inline __attribute__((always_inline)) void add_run(struct rally_xsum *s, size_t first,
                                                          const double *dv, const float *fv,
                                                          const uint64_t *index, size_t n,
                                                          int track)
{
    while (n > 0) {
        size_t m = room(s, n), stride = s->stride;
        int64_t *restrict L = s->limbs + first; /* restrict: a flag's byte aliases nothing */
        uint8_t *restrict f = s->flags + first;
        uint8_t *restrict starts = s->starts;
        const uint64_t *restrict at = index;
        for (size_t k = 0; k < m; k++) {
            size_t e = at != NULL ? at[k] : k;
            int j = fv != NULL ? rally__xs_add_float(L + e, stride, f + e, fv[k])
                               : rally__xs_add(L + e, stride, f + e, dv[k]);
            if (track)
                starts[j + 1] = 1;
        }
        if (index != NULL)
            index += m;
        else
            first += m;
        dv = dv != NULL ? dv + m : NULL;
        fv = fv != NULL ? fv + m : NULL;
        n -= m;
    }
}

int rally_xsum_add(rally_xsum_t *s, size_t first, const double *v, size_t n)
{
    if (first > s->count || n > s->count - first || (v == NULL && n > 0))
        return RALLY_EINVAL;
    if (s->track)
        add_run(s, first, v, NULL, NULL, n, 1);
    else
        add_run(s, first, v, NULL, NULL, n, 0);
    return RALLY_OK;
}

int rally_xsum_add_float(rally_xsum_t *s, size_t first, const float *v, size_t n)
{
    if (first > s->count || n > s->count - first || (v == NULL && n > 0))
        return RALLY_EINVAL;
    if (s->track)
        add_run(s, first, NULL, v, NULL, n, 1);
    else
        add_run(s, first, NULL, v, NULL, n, 0);
    return RALLY_OK;
}

int rally_xsum_add_at(rally_xsum_t *s, const uint64_t *index, const double *v, size_t n)
{
    if (n > 0 && (index == NULL || v == NULL))
        return RALLY_EINVAL;
    for (size_t k = 0; k < n; k++)
        if (index[k] >= s->count)
            return RALLY_EINVAL;
    if (s->track)
        add_run(s, 0, v, NULL, index, n, 1);
    else
        add_run(s, 0, v, NULL, index, n, 0);
    return RALLY_OK;
}

int rally_xsum_merge(rally_xsum_t *s, rally_xsum_t *t)
{
    if (t->count != s->count)
        return RALLY_EINVAL;
    carry_all(s);
    carry_all(t);
    if (t->hi > t->lo) {
        for (size_t i = (size_t)t->lo * t->stride; i < (size_t)t->hi * t->stride; i++)
            s->limbs[i] += t->limbs[i];
        widen(s, t->lo, t->hi);
    }
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
    int base, n = window(s, &base);
    for (size_t i = 0; i < s->count; i++) {
        gather(s, i, base, n, t);
        rally__xs_round_acc(t, n, base, s->flags[i], dtype, (char *)out + i * sz);
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
    int base = 0, n = c->acc ? window(c->acc, &base) : 0;
    for (size_t i = 0; i < c->count; i++)
        if (c->acc) {
            gather(c->acc, i, base, n, t);
            rally__xs_mark_acc(t, n, base, c->acc->flags[i], m + 2 * i);
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
    int base = 0, n = c->acc ? window(c->acc, &base) : 0;
    for (size_t i = 0; i < c->count; i++) {
        if (c->acc) {
            gather(c->acc, i, base, n, t);
            rally__xs_pack_acc(t, n, base, m + 2 * i, c->digit_bits, c->w->nlimbs[i], d);
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
    struct call c = {w,           out, count,
                     dtype,       acc, prepare,
                     prepare_arg, 0,   rally__xs_digit_bits(rally__engine.world(en))};
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
        return rally__fail(e, RALLY_ENOMEM, "allreduce: no memory for %zu exact-sum digits", total);
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
