/*
 * xsum.h — exact sums of binary64 values, whatever their order or grouping
 * (docs/determinism.md, "Sums that do not depend on N").
 *
 * A finite double is m * 2^(p - 1074) with m < 2^53 and p in [0, 2045]: an
 * integer on the grid of the smallest subnormal.  So a sum of doubles is an
 * integer on that grid too, and integer addition is associative: add them
 * as integers, round once at the end, and the result is the exactly rounded
 * sum, the same for every order.  Positions below are bit positions on that
 * grid (0 is 2^-1074).
 *
 * Three forms of one number:
 *  - an accumulator: RALLY__XS_LIMBS signed digits of 32 bits each (digit j
 *    weighs 2^(32 j)), each with room for 2^30 additions before its carries
 *    must be propagated, and a byte of flags for what is no integer (NaN,
 *    infinities, the sign of a zero sum);
 *  - on the wire: each element a window of digits of D bits starting at the
 *    lowest position any rank's value uses, so every rank's digits line up
 *    and an allreduce of int64 SUM adds them exactly (D leaves log2(N) bits of
 *    room, so no sum overflows);
 *  - the result: the float or double nearest to the exact sum, ties to even
 *    (rally__xs_round).
 *
 * An allreduce of exact sums is two: a pre-pass of two int16 per element
 * (MAX: the highest position used, the lowest one negated, and the specials
 * folded in), then the windows.  Every rank derives the same layout from the
 * pre-pass, so the second call has the same size everywhere.
 */
#ifndef RALLY_UTIL_XSUM_H
#define RALLY_UTIL_XSUM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Positions 0 .. 2239: the largest finite double's top bit is 2097, a sum of
 * 2^64 of them ends below 2162, and the wire's digits of a world of 4096 may
 * reach 12 bits above that.  The last digit also holds what carries out. */
#define RALLY__XS_LIMBS 70
#define RALLY__XS_ADDS_MAX (1u << 30) /* additions between carry passes */

/* What an element's operands were, beyond their integer sum. */
enum {
    RALLY__XF_ANY = 1,       /* something was added */
    RALLY__XF_NOT_NZERO = 2, /* something other than -0 was added */
    RALLY__XF_NAN = 4,
    RALLY__XF_PINF = 8,
    RALLY__XF_NINF = 16
};

/* Adds v into one accumulator element: digit j at L[j * stride] (an
 * array of elements keeps digit j of every element together, so the few
 * digits that values of similar size touch stay in cache), flags *f.  The
 * caller counts additions and propagates carries within
 * RALLY__XS_ADDS_MAX.  Returns the lowest digit j written (digits j .. j +
 * 2 are; j <= 63), or -1 when v was a zero or no number. */
static inline int rally__xs_add(int64_t *L, size_t stride, uint8_t *f, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint64_t m = bits & ((UINT64_C(1) << 52) - 1);
    unsigned ex = (unsigned)(bits >> 52) & 0x7ff;
    int neg = (int)(bits >> 63);
    if (ex == 0x7ff) {
        *f |= RALLY__XF_ANY | RALLY__XF_NOT_NZERO |
              (m     ? RALLY__XF_NAN
               : neg ? RALLY__XF_NINF
                     : RALLY__XF_PINF);
        return -1;
    }
    if (m == 0 && ex == 0) {
        *f |= RALLY__XF_ANY | (neg ? 0 : RALLY__XF_NOT_NZERO);
        return -1;
    }
    if ((*f & RALLY__XF_NOT_NZERO) == 0)
        *f |= RALLY__XF_ANY | RALLY__XF_NOT_NZERO;
    unsigned p = 0;
    if (ex != 0) {
        m |= UINT64_C(1) << 52;
        p = ex - 1;
    }
    unsigned j = p >> 5, s = p & 31;
    uint64_t lo = m << s;
    uint64_t d0 = lo & 0xffffffffu, d1 = lo >> 32, d2 = (m >> 1) >> (63 - s);
    uint64_t sm = -(uint64_t)neg; /* all ones when negative: (d ^ sm) - sm is -d */
    L += j * stride;
    L[0] += (int64_t)((d0 ^ sm) - sm);
    L[stride] += (int64_t)((d1 ^ sm) - sm);
    L[2 * stride] += (int64_t)((d2 ^ sm) - sm);
    return (int)j;
}

/* The same for a float: its 24 bits touch two digits, not three (j and
 * j + 1; j <= 36). */
static inline int rally__xs_add_float(int64_t *L, size_t stride, uint8_t *f, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint64_t m = bits & ((UINT32_C(1) << 23) - 1);
    unsigned ex = (bits >> 23) & 0xff;
    int neg = (int)(bits >> 31);
    if (ex == 0xff) {
        *f |= RALLY__XF_ANY | RALLY__XF_NOT_NZERO |
              (m     ? RALLY__XF_NAN
               : neg ? RALLY__XF_NINF
                     : RALLY__XF_PINF);
        return -1;
    }
    if (m == 0 && ex == 0) {
        *f |= RALLY__XF_ANY | (neg ? 0 : RALLY__XF_NOT_NZERO);
        return -1;
    }
    if ((*f & RALLY__XF_NOT_NZERO) == 0) /* a load, not a store, on every later addition */
        *f |= RALLY__XF_ANY | RALLY__XF_NOT_NZERO;
    unsigned p = 925; /* 2^-149, the least float, on the grid of 2^-1074 */
    if (ex != 0) {
        m |= UINT64_C(1) << 23;
        p += ex - 1;
    }
    uint64_t x = m << (p & 31); /* below 2^55 */
    uint64_t d0 = x & 0xffffffffu, d1 = x >> 32, sm = -(uint64_t)neg;
    L += (p >> 5) * stride;
    L[0] += (int64_t)((d0 ^ sm) - sm);
    L[stride] += (int64_t)((d1 ^ sm) - sm);
    return (int)(p >> 5);
}

/* Propagates carries of one element's n digits (contiguous): digits
 * 0 .. n-2 into [0, 2^32), the last signed. */
void rally__xs_carry(int64_t *L, int n);

/* The digit width on the wire for a world of `world` ranks. */
int rally__xs_digit_bits(int world);

/* The pre-pass mark of one operand: out[0] the highest position + 1 (or a
 * zero's or a special's code), out[1] minus the lowest position.  Marks
 * combine with int16 MAX.  _double marks a plain value, _acc an accumulator
 * element: here and below, its digits base .. base + n - 1 contiguous in L
 * (1 <= n, base + n <= RALLY__XS_LIMBS; every digit outside them zero, so
 * a window of the few an element's values touched will do), flags f. */
void rally__xs_mark_double(double v, int16_t out[2]);
void rally__xs_mark_acc(const int64_t *L, int n, int base, uint8_t f, int16_t out[2]);

/* Digits an element takes on the wire, from its combined mark. */
size_t rally__xs_wire_limbs(const int16_t mark[2], int digit_bits);

/* Writes this rank's digits of one element into out[0 .. n), n its
 * rally__xs_wire_limbs. */
void rally__xs_pack_double(double v, const int16_t mark[2], int digit_bits, size_t n, int64_t *out);
void rally__xs_pack_acc(const int64_t *L, int nl, int base, const int16_t mark[2], int digit_bits,
                        size_t n, int64_t *out);

/* The correctly rounded sum of one element from its combined mark and its
 * n summed digits (n its rally__xs_wire_limbs), as a double or float
 * (dtype RALLY_DOUBLE or RALLY_FLOAT) at out. */
void rally__xs_unpack(const int64_t *digits, size_t n, const int16_t mark[2], int digit_bits,
                      int dtype, void *out);

/* The correctly rounded value of one accumulator element (carried or not:
 * the functions that read an element carry their own copy). */
void rally__xs_round_acc(const int64_t *L, int n, int base, uint8_t f, int dtype, void *out);

#endif
