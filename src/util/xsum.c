/*
 * xsum.c — exact sums: carries, the wire's marks and digits, rounding
 * (xsum.h; docs/determinism.md, "Sums that do not depend on N").
 */
#include "util/xsum.h"

#include "rally/rally.h"

/* Mark codes beside positions (which are 1 .. 2240 and 0 .. -2239). */
#define MARK_EMPTY (-2) /* nothing added: the sum of nothing, +0 */
#define MARK_NZERO (-1) /* only -0 added */
#define MARK_ZERO 0     /* zeros (or values that cancelled) and some +0 */
#define MARK_PINF 15000 /* in out[0]: a +Inf; in out[1]: a -Inf */
#define MARK_NAN 16000  /* in out[0] */
#define MARK_NONE INT16_MIN

/* A small number for the unpack: 32-bit digits from base position b. */
#define TMP_LIMBS (RALLY__XS_LIMBS + 8)

void rally__xs_carry(int64_t *L, int n)
{
    for (int j = 0; j + 1 < n; j++) {
        int64_t low = (int64_t)((uint64_t)L[j] & 0xffffffffu);
        L[j + 1] += (L[j] - low) / (INT64_C(1) << 32);
        L[j] = low;
    }
}

/* Carried digits to their magnitude (the same digits when >= 0); 1 when the
 * value was negative. */
static int magnitude(int64_t *L, int n)
{
    rally__xs_carry(L, n);
    if (L[n - 1] >= 0)
        return 0;
    for (int j = 0; j < n; j++)
        L[j] = -L[j];
    rally__xs_carry(L, n);
    return 1;
}

static int bitlen64(uint64_t x)
{
    return x ? 64 - __builtin_clzll(x) : 0;
}

/* Highest and lowest set positions of a magnitude (digits from 0); 0 when
 * it is zero. */
static int span(const int64_t *L, int n, int *top, int *low)
{
    int hi = n - 1;
    while (hi >= 0 && L[hi] == 0)
        hi--;
    if (hi < 0)
        return 0;
    int lo = 0;
    while (L[lo] == 0)
        lo++;
    *top = 32 * hi + bitlen64((uint64_t)L[hi]) - 1;
    *low = 32 * lo + __builtin_ctzll((uint64_t)L[lo]);
    return 1;
}

/* Bits [r, r + 64) of a magnitude (digits 0 .. n-2 below 2^32, the last
 * any non-negative value), as far as they fit in 64. */
static uint64_t bits_at(const int64_t *L, int n, int r)
{
    int k = r >> 5, s = r & 31;
    uint64_t x = 0;
    if (k < n)
        x = (uint64_t)L[k] >> s;
    if (k + 1 < n)
        x |= (uint64_t)L[k + 1] << (32 - s);
    if (k + 2 < n && s)
        x |= (uint64_t)L[k + 2] << (64 - s);
    return x;
}

int rally__xs_digit_bits(int world)
{
    int lg = 0;
    while (lg < 31 && (1 << lg) < world)
        lg++;
    int d = 63 - lg;
    return d > 62 ? 62 : d;
}

static void mark_specials(uint8_t f, int16_t out[2])
{
    if ((f & RALLY__XF_NAN) || ((f & RALLY__XF_PINF) && (f & RALLY__XF_NINF)))
        out[0] = MARK_NAN;
    else if (f & RALLY__XF_PINF)
        out[0] = MARK_PINF;
    else if (f & RALLY__XF_NINF)
        out[1] = MARK_PINF;
}

void rally__xs_mark_double(double v, int16_t out[2])
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint64_t m = bits & ((UINT64_C(1) << 52) - 1);
    unsigned ex = (unsigned)(bits >> 52) & 0x7ff;
    out[0] = MARK_ZERO;
    out[1] = MARK_NONE;
    if (ex == 0x7ff) {
        mark_specials(m ? RALLY__XF_NAN : (bits >> 63) ? RALLY__XF_NINF : RALLY__XF_PINF, out);
    } else if (ex == 0 && m == 0) {
        out[0] = (bits >> 63) ? MARK_NZERO : MARK_ZERO;
    } else {
        int p = 0;
        if (ex != 0) {
            m |= UINT64_C(1) << 52;
            p = (int)ex - 1;
        }
        out[0] = (int16_t)(p + bitlen64(m));
        out[1] = (int16_t)-(p + __builtin_ctzll(m));
    }
}

void rally__xs_mark_acc(const int64_t *L, uint8_t f, int16_t out[2])
{
    int64_t t[RALLY__XS_LIMBS];
    memcpy(t, L, sizeof t);
    magnitude(t, RALLY__XS_LIMBS);
    int top, low;
    out[1] = MARK_NONE;
    if (!(f & RALLY__XF_ANY))
        out[0] = MARK_EMPTY;
    else if (!(f & RALLY__XF_NOT_NZERO))
        out[0] = MARK_NZERO;
    else if (span(t, RALLY__XS_LIMBS, &top, &low)) {
        out[0] = (int16_t)(top + 1);
        out[1] = (int16_t)-low;
    } else
        out[0] = MARK_ZERO;
    mark_specials(f, out);
}

/* An element goes on the wire when its combined mark says finite, nonzero. */
static int on_wire(const int16_t mark[2])
{
    return mark[0] > 0 && mark[0] < MARK_PINF && mark[1] < MARK_PINF;
}

size_t rally__xs_wire_limbs(const int16_t mark[2], int digit_bits)
{
    if (!on_wire(mark))
        return 0;
    int width = mark[0] + mark[1]; /* (top + 1) - low */
    return (size_t)((width + digit_bits - 1) / digit_bits);
}

/* Writes magnitude digits: m * 2^s split into D-bit digits from digit j0,
 * negated when neg; out has n digits, all cleared first. */
static void put(int64_t *out, size_t n, size_t j0, int s, uint64_t m, int neg, int D)
{
    memset(out, 0, n * sizeof *out);
    uint64_t mask = (UINT64_C(1) << D) - 1;
    for (size_t j = j0; j < n && m; j++) { /* s < D */
        uint64_t d = (m << s) & mask;
        m >>= D - s;
        s = 0;
        out[j] = neg ? -(int64_t)d : (int64_t)d;
    }
}

void rally__xs_pack_double(double v, const int16_t mark[2], int digit_bits, int64_t *out)
{
    size_t n = rally__xs_wire_limbs(mark, digit_bits);
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint64_t m = bits & ((UINT64_C(1) << 52) - 1);
    unsigned ex = (unsigned)(bits >> 52) & 0x7ff;
    int p = 0;
    if (ex == 0x7ff || (ex == 0 && m == 0)) {
        memset(out, 0, n * sizeof *out);
        return;
    }
    if (ex != 0) {
        m |= UINT64_C(1) << 52;
        p = (int)ex - 1;
    }
    int tz = __builtin_ctzll(m);
    m >>= tz;
    int off = p + tz + mark[1]; /* this value's lowest position - the lowest: >= 0 */
    put(out, n, (size_t)(off / digit_bits), off % digit_bits, m, (int)(bits >> 63), digit_bits);
}

void rally__xs_pack_acc(const int64_t *L, const int16_t mark[2], int digit_bits, int64_t *out)
{
    size_t n = rally__xs_wire_limbs(mark, digit_bits);
    int64_t t[RALLY__XS_LIMBS];
    memcpy(t, L, sizeof t);
    int neg = magnitude(t, RALLY__XS_LIMBS);
    uint64_t mask = (UINT64_C(1) << digit_bits) - 1;
    int low = -mark[1];
    for (size_t j = 0; j < n; j++) {
        int64_t d = (int64_t)(bits_at(t, RALLY__XS_LIMBS, low + (int)j * digit_bits) & mask);
        out[j] = neg ? -d : d;
    }
}

/* Adds v * 2^off into 32-bit digits t[0 .. n). */
static void add_at(int64_t *t, int n, int off, int64_t v)
{
    uint64_t mv = v < 0 ? -(uint64_t)v : (uint64_t)v;
    int k = off >> 5, s = off & 31;
    uint64_t lo = mv << s;
    uint64_t d[3] = {lo & 0xffffffffu, lo >> 32, s ? mv >> (64 - s) : 0};
    for (int i = 0; i < 3 && k + i < n; i++)
        t[k + i] += v < 0 ? -(int64_t)d[i] : (int64_t)d[i];
}

/* Rounds the magnitude t (32-bit digits, digit 0 at position base) to the
 * nearest value of the format, ties to even, and returns its bits with the
 * sign.  prec: significand bits (53, 24); ebits: exponent bits (11, 8). */
static uint64_t round_bits(const int64_t *t, int n, int base, int neg, int prec, int ebits)
{
    int bias = (1 << (ebits - 1)) - 1;
    int emin = 1 - bias - (prec - 1); /* the smallest subnormal's exponent */
    uint64_t sign = (uint64_t)neg << (prec - 1 + ebits);
    int top, low;
    if (!span(t, n, &top, &low))
        return 0; /* an exact zero sum: +0 */
    /* Positions relative to base, exponents absolute (position 0 is 2^-1074). */
    int etop = base + top - 1074;
    int eu = etop - (prec - 1); /* the exponent of the result's last place */
    if (eu < emin)
        eu = emin;
    int r = eu + 1074 - base; /* that place, relative to digit 0 */
    uint64_t q;
    if (r <= 0) {
        q = bits_at(t, n, 0) << -r; /* exact: the value fits */
    } else {
        int width = top - r + 1; /* <= prec; below 1 when the sum is under the last place */
        q = width > 0 ? bits_at(t, n, r) & ((UINT64_C(1) << width) - 1) : 0;
        int half = (int)(bits_at(t, n, r - 1) & 1);
        int sticky = low < r - 1;
        if (half && (sticky || (q & 1)))
            q++;
    }
    /* q * 2^eu, q < 2^(prec + 1): to the format's fields. */
    int len = bitlen64(q);
    int e = eu + len - 1; /* the exponent of q's top bit */
    uint64_t emask = ((UINT64_C(1) << ebits) - 1), fmask = (UINT64_C(1) << (prec - 1)) - 1;
    if (e > bias)
        return sign | (emask << (prec - 1)); /* overflow: infinity */
    if (e < 1 - bias)
        return sign | (q << (eu - emin)); /* subnormal */
    uint64_t frac = len > prec ? q >> (len - prec) : q << (prec - len);
    return sign | ((uint64_t)(e + bias) << (prec - 1)) | (frac & fmask);
}

/* Writes the sum given its sign and magnitude, or the special the mark
 * names. */
static void store(const int16_t mark[2], const int64_t *t, int n, int base, int neg, int dtype,
                  void *out)
{
    uint64_t b64;
    uint32_t b32;
    int dbl = dtype == RALLY_DOUBLE;
    if (mark[0] >= MARK_NAN || (mark[0] == MARK_PINF && mark[1] == MARK_PINF)) {
        b64 = UINT64_C(0x7ff8000000000000);
        b32 = 0x7fc00000u;
    } else if (mark[0] == MARK_PINF || mark[1] == MARK_PINF) {
        int minus = mark[0] != MARK_PINF;
        b64 = UINT64_C(0x7ff0000000000000) | (uint64_t)minus << 63;
        b32 = 0x7f800000u | (uint32_t)minus << 31;
    } else if (mark[0] == MARK_NZERO) {
        b64 = UINT64_C(1) << 63;
        b32 = UINT32_C(1) << 31;
    } else if (t == NULL) {
        b64 = 0;
        b32 = 0;
    } else if (dbl) {
        b64 = round_bits(t, n, base, neg, 53, 11);
        b32 = 0;
    } else {
        b64 = 0;
        b32 = (uint32_t)round_bits(t, n, base, neg, 24, 8);
    }
    if (dbl)
        memcpy(out, &b64, sizeof b64);
    else
        memcpy(out, &b32, sizeof b32);
}

void rally__xs_unpack(const int64_t *digits, const int16_t mark[2], int digit_bits, int dtype,
                      void *out)
{
    size_t nw = rally__xs_wire_limbs(mark, digit_bits);
    if (nw == 0) {
        store(mark, NULL, 0, 0, 0, dtype, out);
        return;
    }
    int64_t t[TMP_LIMBS];
    int n = (int)((nw * (size_t)digit_bits + 64) / 32 + 3);
    memset(t, 0, (size_t)n * sizeof *t);
    for (size_t j = 0; j < nw; j++)
        if (digits[j])
            add_at(t, n, (int)j * digit_bits, digits[j]);
    int neg = magnitude(t, n);
    store(mark, t, n, -mark[1], neg, dtype, out);
}

void rally__xs_round_acc(const int64_t *L, uint8_t f, int dtype, void *out)
{
    int16_t mark[2];
    rally__xs_mark_acc(L, f, mark);
    int64_t t[RALLY__XS_LIMBS];
    memcpy(t, L, sizeof t);
    int neg = magnitude(t, RALLY__XS_LIMBS);
    store(mark, on_wire(mark) ? t : NULL, RALLY__XS_LIMBS, 0, neg, dtype, out);
}
