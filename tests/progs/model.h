/*
 * model.h — a serial model of rally's documented reduction order
 * (docs/determinism.md), written from the documentation, not from the
 * library: the pre-order tree, the ring's segment order, recursive
 * halving-doubling's balanced grouping and the hierarchy's chains and
 * leaders' ring.  Tests compute
 * every rank's input locally and compare rally's result with the model bit
 * for bit.
 */
#ifndef RALLY_TESTS_MODEL_H
#define RALLY_TESTS_MODEL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rally/rally.h"

static inline uint64_t model_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static inline size_t model_dtype_size(int dt)
{
    static const size_t s[] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};
    return s[dt];
}

/* Values that make order visible: floats span 2^-30..2^30 with both signs;
 * integers use their full range (never small integers, which sum exactly in
 * any order). */
static inline void model_fill(void *buf, size_t count, int dt, int rank, uint64_t seed)
{
    unsigned char *p = buf;
    size_t es = model_dtype_size(dt);
    for (size_t i = 0; i < count; i++) {
        uint64_t h = model_mix(seed ^ ((uint64_t)rank << 48) ^ i);
        if (dt == RALLY_FLOAT) {
            float f = ldexpf((float)(h >> 40) / 16777216.0f, (int)(h % 61) - 30);
            if (h & (1u << 20))
                f = -f;
            memcpy(p + i * es, &f, es);
        } else if (dt == RALLY_DOUBLE) {
            double d = ldexp((double)(h >> 11) / 9007199254740992.0, (int)(h % 61) - 30);
            if (h & (1u << 7))
                d = -d;
            memcpy(p + i * es, &d, es);
        } else {
            memcpy(p + i * es, &h, es); /* little-endian: the low bytes */
        }
    }
}

#define MODEL_OP(T, a, b, op)                                                                      \
    do {                                                                                           \
        T x_, y_;                                                                                  \
        memcpy(&x_, a, sizeof x_);                                                                 \
        memcpy(&y_, b, sizeof y_);                                                                 \
        int nan_ = isnan((double)y_);                                                                     \
        T z_ = op == RALLY_SUM   ? (T)(x_ + y_)                                                    \
               : op == RALLY_MAX ? ((x_ < y_ || nan_) ? y_ : x_)                                   \
                                 : ((y_ < x_ || nan_) ? y_ : x_);                                  \
        memcpy(a, &z_, sizeof z_);                                                                 \
    } while (0)

/* a = a (+) b for one element. */
static inline void model_op1(void *a, const void *b, int dt, int op)
{
    if (op == RALLY_BITOR) {
        unsigned char *x = a;
        const unsigned char *y = b;
        for (size_t k = 0; k < model_dtype_size(dt); k++)
            x[k] |= y[k];
        return;
    }
    switch (dt) {
    case RALLY_INT8: MODEL_OP(int8_t, a, b, op); break;
    case RALLY_UINT8: MODEL_OP(uint8_t, a, b, op); break;
    case RALLY_INT16: MODEL_OP(int16_t, a, b, op); break;
    case RALLY_UINT16: MODEL_OP(uint16_t, a, b, op); break;
    case RALLY_INT32:
        if (op == RALLY_SUM) MODEL_OP(uint32_t, a, b, op); else MODEL_OP(int32_t, a, b, op);
        break;
    case RALLY_UINT32: MODEL_OP(uint32_t, a, b, op); break;
    case RALLY_INT64:
        if (op == RALLY_SUM) MODEL_OP(uint64_t, a, b, op); else MODEL_OP(int64_t, a, b, op);
        break;
    case RALLY_UINT64: MODEL_OP(uint64_t, a, b, op); break;
    case RALLY_FLOAT: MODEL_OP(float, a, b, op); break;
    case RALLY_DOUBLE: MODEL_OP(double, a, b, op); break;
    }
}

/* A reduction over opaque elements: a = a (+) b. */
typedef void (*model_fn)(void *a, const void *b, void *arg);

/* Tree: the subtree of lo over [lo, hi) is lo's value, then the first
 * child's subtree [lo+1, lo+1+ceil((n-1)/2)), then the second's. */
static inline void model_tree(unsigned char *acc, unsigned char *const *in, int lo, int hi,
                              size_t i, size_t es, model_fn f, void *arg)
{
    memcpy(acc, in[lo] + i * es, es);
    int rest = hi - lo - 1;
    if (rest <= 0)
        return;
    int mid = lo + 1 + (rest + 1) / 2;
    unsigned char tmp[64];
    model_tree(tmp, in, lo + 1, mid, i, es, f, arg);
    f(acc, tmp, arg);
    if (mid < hi) {
        model_tree(tmp, in, mid, hi, i, es, f, arg);
        f(acc, tmp, arg);
    }
}

/* The ring's fold of element i over N values, v[r] pointing at rank (or,
 * in the hierarchy, host) r's: i lies in segment s = the s with
 * floor(s*count/N) <= i < floor((s+1)*count/N); acc = v_s, then
 * acc = v_{s+k} (+) acc for k = 1..N-1 (indices mod N), own value on the
 * left. */
static inline void model_ring_fold(unsigned char *acc, unsigned char *const *v, int N,
                                   size_t count, size_t i, size_t es, model_fn f, void *arg)
{
    int s = 0;
    while (!(count * (size_t)s / (size_t)N <= i && i < count * (size_t)(s + 1) / (size_t)N))
        s++;
    memcpy(acc, v[s], es);
    unsigned char tmp[64];
    for (int k = 1; k < N; k++) {
        memcpy(tmp, v[(s + k) % N], es);
        f(tmp, acc, arg);
        memcpy(acc, tmp, es);
    }
}

/* Ring: the fold above over the ranks' inputs. */
static inline void model_ring(unsigned char *acc, unsigned char *const *in, int N, size_t count,
                              size_t i, size_t es, model_fn f, void *arg)
{
    unsigned char *v[64];
    for (int r = 0; r < N; r++)
        v[r] = in[r] + i * es;
    model_ring_fold(acc, v, N, count, i, es, f, arg);
}

/* Halving-doubling: p = the largest power of two <= N, e = N - p; virtual
 * value y_v = x_2v (+) x_2v+1 for v < e, else x_(v+e); the result is the
 * balanced grouping B(0, p) with B(v, 1) = y_v and B(lo, w) = B(lo, w/2) (+)
 * B(lo + w/2, w/2), the same for every element. */
static inline void model_hd_group(unsigned char *acc, unsigned char *const *in, int e, int lo,
                                  int w, size_t i, size_t es, model_fn f, void *arg)
{
    if (w == 1) {
        int r = lo < e ? 2 * lo : lo + e;
        memcpy(acc, in[r] + i * es, es);
        if (lo < e)
            f(acc, in[r + 1] + i * es, arg);
        return;
    }
    unsigned char tmp[64];
    model_hd_group(acc, in, e, lo, w / 2, i, es, f, arg);
    model_hd_group(tmp, in, e, lo + w / 2, w / 2, i, es, f, arg);
    f(acc, tmp, arg);
}

static inline void model_hd(unsigned char *acc, unsigned char *const *in, int N, size_t i,
                            size_t es, model_fn f, void *arg)
{
    int p = 1;
    while (2 * p <= N)
        p *= 2;
    model_hd_group(acc, in, N - p, 0, p, i, es, f, arg);
}

/* Hierarchy, hosts of K consecutive ranks (rally_host_group=K): host h's
 * sum folds its ranks from the chain's end, x_a (+) (x_b (+) (... (+) x_z)),
 * and the hosts' sums go round the ring as ranks' values do (the ring's
 * order with H = ceil(N / K) hosts in place of N ranks). */
static inline void model_hier(unsigned char *acc, unsigned char *const *in, int N, int K,
                              size_t count, size_t i, size_t es, model_fn f, void *arg)
{
    int H = (N + K - 1) / K;
    unsigned char sums[64][64], tmp[64], *v[64];
    for (int h = 0; h < H; h++) {
        int a = h * K, z = a + K < N ? a + K - 1 : N - 1;
        memcpy(sums[h], in[z] + i * es, es);
        for (int r = z - 1; r >= a; r--) {
            memcpy(tmp, in[r] + i * es, es);
            f(tmp, sums[h], arg);
            memcpy(sums[h], tmp, es);
        }
        v[h] = sums[h];
    }
    model_ring_fold(acc, v, H, count, i, es, f, arg);
}

#endif
