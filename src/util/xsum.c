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

__extension__ typedef unsigned __int128 u128;
__extension__ typedef __int128 i128;

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
 * any non-negative value), as far as they fit in 64; r may be below 0 (the
 * bits there are zeros). */
static uint64_t bits_at(const int64_t *L, int n, int r)
{
    if (r < 0)
        return r > -64 ? bits_at(L, n, 0) << -r : 0;
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
        out[1] = (int16_t) - (p + __builtin_ctzll(m));
    }
}

void rally__xs_mark_acc(const int64_t *L, int n, int base, uint8_t f, int16_t out[2])
{
    int64_t t[RALLY__XS_LIMBS];
    memcpy(t, L, (size_t)n * sizeof *t);
    magnitude(t, n);
    int top, low;
    out[1] = MARK_NONE;
    if (!(f & RALLY__XF_ANY))
        out[0] = MARK_EMPTY;
    else if (!(f & RALLY__XF_NOT_NZERO))
        out[0] = MARK_NZERO;
    else if (span(t, n, &top, &low)) {
        out[0] = (int16_t)(32 * base + top + 1);
        out[1] = (int16_t) - (32 * base + low);
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

void rally__xs_pack_double(double v, const int16_t mark[2], int digit_bits, size_t n, int64_t *out)
{
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
    if (n <= 2) { /* the common case, without branches on the data: the value fits 2 digits */
        u128 x = (u128)m << off;
        uint64_t mask = (UINT64_C(1) << digit_bits) - 1, sm = -(bits >> 63);
        out[0] = (int64_t)((((uint64_t)x & mask) ^ sm) - sm);
        if (n == 2)
            out[1] = (int64_t)(((uint64_t)(x >> digit_bits) ^ sm) - sm);
        return;
    }
    size_t j0 = 0;
    while (off >= digit_bits) { /* mostly not at all: no division */
        off -= digit_bits;
        j0++;
    }
    put(out, n, j0, off, m, (int)(bits >> 63), digit_bits);
}

void rally__xs_pack_acc(const int64_t *L, int nl, int base, const int16_t mark[2], int digit_bits,
                        size_t n, int64_t *out)
{
    int64_t t[RALLY__XS_LIMBS];
    memcpy(t, L, (size_t)nl * sizeof *t);
    int neg = magnitude(t, nl);
    uint64_t mask = (UINT64_C(1) << digit_bits) - 1;
    int low = -mark[1] - 32 * base; /* the wire's lowest position, relative to t */
    for (size_t j = 0; j < n; j++) {
        int64_t d = (int64_t)(bits_at(t, nl, low + (int)j * digit_bits) & mask);
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

/* The format's bits of q * 2^eu (q < 2^(prec + 1), eu >= the least
 * subnormal's exponent: q already rounded), with the sign. */
static uint64_t assemble(uint64_t q, int eu, int neg, int prec, int ebits)
{
    int bias = (1 << (ebits - 1)) - 1;
    int emin = 1 - bias - (prec - 1);
    uint64_t sign = (uint64_t)neg << (prec - 1 + ebits);
    int len = bitlen64(q);
    int e = eu + len - 1; /* the exponent of q's top bit */
    uint64_t emask = ((UINT64_C(1) << ebits) - 1), fmask = (UINT64_C(1) << (prec - 1)) - 1;
    if (e > bias)
        return sign | (emask << (prec - 1)); /* overflow: infinity */
    if (e < 1 - bias)
        return sign | (q << (eu - emin)); /* subnormal (or zero) */
    uint64_t frac = len > prec ? q >> (len - prec) : q << (prec - len);
    return sign | ((uint64_t)(e + bias) << (prec - 1)) | (frac & fmask);
}

/* The exponent of the result's last place for a sum whose top bit is at
 * exponent etop: prec bits below it, not below the least subnormal. */
static int last_place(int etop, int prec, int ebits)
{
    int emin = 1 - ((1 << (ebits - 1)) - 1) - (prec - 1);
    int eu = etop - (prec - 1);
    return eu < emin ? emin : eu;
}

/* Rounds the magnitude t (32-bit digits, digit 0 at position base) to the
 * nearest value of the format, ties to even, and returns its bits with the
 * sign.  prec: significand bits (53, 24); ebits: exponent bits (11, 8). */
static uint64_t round_bits(const int64_t *t, int n, int base, int neg, int prec, int ebits)
{
    int top, low;
    if (!span(t, n, &top, &low))
        return 0; /* an exact zero sum: +0 */
    /* Positions relative to base, exponents absolute (position 0 is 2^-1074). */
    int eu = last_place(base + top - 1074, prec, ebits);
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
    return assemble(q, eu, neg, prec, ebits);
}

/* The same for a magnitude of 128 bits at position base, with no branch
 * on the data's bits (a rounding decision mispredicted costs more than
 * all the rest of it). */
static uint64_t round_u128(u128 m, int base, int neg, int prec, int ebits)
{
    if (m == 0)
        return 0;
    uint64_t hi = (uint64_t)(m >> 64), lo = (uint64_t)m;
    int top = hi ? 127 - __builtin_clzll(hi) : 63 - __builtin_clzll(lo);
    int eu = last_place(base + top - 1074, prec, ebits);
    int r = eu + 1074 - base;
    int rr = r > 0 ? (r < 127 ? r : 127) : 0, left = r < 0 ? -r : 0;
    uint64_t q = r > 127 ? 0 : (uint64_t)(m >> rr) << left;
    int hb = r - 1; /* the half bit's place, when r > 0 */
    uint64_t half = r > 0 && hb < 128 ? (uint64_t)(m >> hb) & 1 : 0;
    uint64_t sticky = hb >= 128 ? 1 : hb > 0 ? (m & (((u128)1 << hb) - 1)) != 0 : 0;
    q += half & (sticky | q);
    return assemble(q, eu, neg, prec, ebits);
}

/* Writes the special or signed zero the mark names (1), or nothing (0). */
static int store_special(const int16_t mark[2], int dtype, void *out)
{
    uint64_t b64;
    uint32_t b32;
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
    } else if (!on_wire(mark)) {
        b64 = 0;
        b32 = 0;
    } else {
        return 0;
    }
    if (dtype == RALLY_DOUBLE)
        memcpy(out, &b64, sizeof b64);
    else
        memcpy(out, &b32, sizeof b32);
    return 1;
}

static void store_bits(uint64_t b, int dtype, void *out)
{
    if (dtype == RALLY_DOUBLE) {
        memcpy(out, &b, sizeof b);
    } else {
        uint32_t b32 = (uint32_t)b;
        memcpy(out, &b32, sizeof b32);
    }
}

void rally__xs_unpack(const int64_t *digits, size_t nw, const int16_t mark[2], int digit_bits,
                      int dtype, void *out)
{
    if (store_special(mark, dtype, out))
        return;
    int dbl = dtype == RALLY_DOUBLE, prec = dbl ? 53 : 24, ebits = dbl ? 11 : 8;
    if (nw <= 2) { /* the common case: the sum fits 128 bits (D <= 62) */
        i128 v = digits[0];
        if (nw == 2)
            v += (i128)digits[1] * ((i128)1 << digit_bits);
        /* With digit 0's lowest bit at 2^k, k a normal exponent, the sum
         * is v * 2^k and never a subnormal: C's conversion of the integer
         * rounds once, to nearest, ties to even (the hardware's for one
         * digit), and the scaling is exact (or overflows, as the sum
         * does). */
        int k = -mark[1] - 1074;
        if (dtype == RALLY_DOUBLE && k >= -1022 && k <= 1023) {
            uint64_t pb = (uint64_t)(k + 1023) << 52;
            double scale, d;
            memcpy(&scale, &pb, sizeof scale);
            d = (nw == 1 ? (double)digits[0] : (double)v) * scale;
            memcpy(out, &d, sizeof d);
            return;
        }
        if (dtype == RALLY_FLOAT && k >= -126 && k <= 127) {
            uint32_t pb = (uint32_t)(k + 127) << 23;
            float scale, f;
            memcpy(&scale, &pb, sizeof scale);
            f = (nw == 1 ? (float)digits[0] : (float)v) * scale;
            memcpy(out, &f, sizeof f);
            return;
        }
        u128 sm = (u128)(v >> 127); /* all ones when negative */
        u128 mag = ((u128)v ^ sm) - sm;
        store_bits(round_u128(mag, -mark[1], (int)(sm & 1), prec, ebits), dtype, out);
        return;
    }
    int64_t t[TMP_LIMBS];
    int n = (int)((nw * (size_t)digit_bits + 64) / 32 + 3);
    memset(t, 0, (size_t)n * sizeof *t);
    for (size_t j = 0; j < nw; j++)
        if (digits[j])
            add_at(t, n, (int)j * digit_bits, digits[j]);
    int neg = magnitude(t, n);
    store_bits(round_bits(t, n, -mark[1], neg, prec, ebits), dtype, out);
}

void rally__xs_round_acc(const int64_t *L, int n, int base, uint8_t f, int dtype, void *out)
{
    int16_t mark[2];
    rally__xs_mark_acc(L, n, base, f, mark);
    if (store_special(mark, dtype, out))
        return;
    int64_t t[RALLY__XS_LIMBS];
    memcpy(t, L, (size_t)n * sizeof *t);
    int neg = magnitude(t, n);
    int dbl = dtype == RALLY_DOUBLE;
    store_bits(round_bits(t, n, 32 * base, neg, dbl ? 53 : 24, dbl ? 11 : 8), dtype, out);
}
