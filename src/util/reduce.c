/*
 * reduce.c — the reducer table's kernels: every built-in dtype x op as a
 * straight loop, in place and out of place.
 */
#include "util/reduce.h"

#include <stdint.h>

/* Unaligned, aliasing-safe element types for the kernels. */
#define U(T) T __attribute__((aligned(1), may_alias))
typedef U(int8_t) i8u;
typedef U(uint8_t) u8u;
typedef U(int16_t) i16u;
typedef U(uint16_t) u16u;
typedef U(int32_t) i32u;
typedef U(uint32_t) u32u;
typedef U(int64_t) i64u;
typedef U(uint64_t) u64u;
typedef U(float) f32u;
typedef U(double) f64u;

/* Each kernel comes twice: name (inout (+)= in) and name##3 (out = a (+) b). */
#define KERNEL(name, T, expr)                                                                      \
    static void name(void *inout, const void *in, size_t n, void *arg)                             \
    {                                                                                              \
        (void)arg;                                                                                 \
        T *restrict a = inout;                                                                     \
        const T *restrict b = in;                                                                  \
        for (size_t i = 0; i < n; i++) {                                                           \
            T x = a[i], y = b[i];                                                                  \
            a[i] = (expr);                                                                         \
        }                                                                                          \
    }                                                                                              \
    static void name##3(void *out, const void *pa, const void *pb, size_t n)                       \
    {                                                                                              \
        T *restrict o = out;                                                                       \
        const T *restrict a = pa, *restrict b = pb;                                                \
        for (size_t i = 0; i < n; i++) {                                                           \
            T x = a[i], y = b[i];                                                                  \
            o[i] = (expr);                                                                         \
        }                                                                                          \
    }

#define INT_KERNELS(S, U_)                                                                         \
    KERNEL(max_##S, S, x < y ? y : x)                                                              \
    KERNEL(min_##S, S, y < x ? y : x)
#define UINT_KERNELS(U_)                                                                           \
    KERNEL(sum_##U_, U_, x + y)                                                                    \
    KERNEL(bor_##U_, U_, x | y)                                                                    \
    KERNEL(max_##U_, U_, x < y ? y : x)                                                            \
    KERNEL(min_##U_, U_, y < x ? y : x)

INT_KERNELS(i8u, u8u)
INT_KERNELS(i16u, u16u)
INT_KERNELS(i32u, u32u)
INT_KERNELS(i64u, u64u)
UINT_KERNELS(u8u)
UINT_KERNELS(u16u)
UINT_KERNELS(u32u)
UINT_KERNELS(u64u)
/* As for integers, with NaN winning: a NaN y is taken, a NaN x is kept. */
KERNEL(max_f32u, f32u, (x < y || y != y) ? y : x)
KERNEL(min_f32u, f32u, (y < x || y != y) ? y : x)
KERNEL(sum_f32u, f32u, x + y)
KERNEL(max_f64u, f64u, (x < y || y != y) ? y : x)
KERNEL(min_f64u, f64u, (y < x || y != y) ? y : x)
KERNEL(sum_f64u, f64u, x + y)

typedef void (*kernel_fn)(void *, const void *, size_t, void *);
typedef void (*kernel3_fn)(void *, const void *, const void *, size_t);

/* [dtype][op]: MAX, MIN, SUM, BITOR. Signed SUM/BITOR share the unsigned bits. */
static const kernel_fn table[RALLY__NDTYPES][RALLY__NOPS] = {
    {max_i8u, min_i8u, sum_u8u, bor_u8u},
    {max_u8u, min_u8u, sum_u8u, bor_u8u},
    {max_i16u, min_i16u, sum_u16u, bor_u16u},
    {max_u16u, min_u16u, sum_u16u, bor_u16u},
    {max_i32u, min_i32u, sum_u32u, bor_u32u},
    {max_u32u, min_u32u, sum_u32u, bor_u32u},
    {max_i64u, min_i64u, sum_u64u, bor_u64u},
    {max_u64u, min_u64u, sum_u64u, bor_u64u},
    {max_f32u, min_f32u, sum_f32u, NULL},
    {max_f64u, min_f64u, sum_f64u, NULL},
};

static const kernel3_fn table3[RALLY__NDTYPES][RALLY__NOPS] = {
    {max_i8u3, min_i8u3, sum_u8u3, bor_u8u3},
    {max_u8u3, min_u8u3, sum_u8u3, bor_u8u3},
    {max_i16u3, min_i16u3, sum_u16u3, bor_u16u3},
    {max_u16u3, min_u16u3, sum_u16u3, bor_u16u3},
    {max_i32u3, min_i32u3, sum_u32u3, bor_u32u3},
    {max_u32u3, min_u32u3, sum_u32u3, bor_u32u3},
    {max_i64u3, min_i64u3, sum_u64u3, bor_u64u3},
    {max_u64u3, min_u64u3, sum_u64u3, bor_u64u3},
    {max_f32u3, min_f32u3, sum_f32u3, NULL},
    {max_f64u3, min_f64u3, sum_f64u3, NULL},
};

static const size_t sizes[RALLY__NDTYPES] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};
static const char *const dnames[RALLY__NDTYPES] = {"int8",  "uint8",  "int16", "uint16",
                                                   "int32", "uint32", "int64", "uint64",
                                                   "float", "double"};
static const char *const onames[RALLY__NOPS] = {"max", "min", "sum", "bitor"};

size_t rally__dtype_size(int dtype)
{
    return dtype >= 0 && dtype < RALLY__NDTYPES ? sizes[dtype] : 0;
}

const char *rally__dtype_name(int dtype)
{
    return dtype >= 0 && dtype < RALLY__NDTYPES ? dnames[dtype] : "?";
}

const char *rally__op_name(int op)
{
    return op >= 0 && op < RALLY__NOPS ? onames[op] : "?";
}

int rally__op_valid(int dtype, int op)
{
    return dtype >= 0 && dtype < RALLY__NDTYPES && op >= 0 && op < RALLY__NOPS &&
           table[dtype][op] != NULL;
}

void rally__reducer_builtin(struct rally__reducer *rd, int dtype, int op)
{
    rd->elem_nbytes = sizes[dtype];
    rd->commutative = 1;
    rd->fn = table[dtype][op];
    rd->arg = NULL;
    rd->fn3 = table3[dtype][op];
}
