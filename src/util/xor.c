/*
 * xor.c — XOR parity over a set of ranks: the sets, the chunks, encoding
 * and rebuilding one member (xor.h has the layout).
 */
#include "util/xor.h"

#include <string.h>

void rally__xor_set(int N, int G, int p, int *first, int *size, int *index)
{
    if (G > N)
        G = N;
    int nsets = N <= 1 ? 1 : (N + G - 1) / G;
    if (N > 1 && N / nsets < 2)
        nsets = N / G; /* G = 2, N odd: the last set takes the odd one */
    int base = N / nsets, extra = N % nsets;
    /* the first extra sets have base + 1 places */
    int big = extra * (base + 1);
    int s = p < big ? p / (base + 1) : extra + (p - big) / base;
    *index = s;
    *size = s < extra ? base + 1 : base;
    *first = s < extra ? s * (base + 1) : big + (s - extra) * base;
}

int rally__xor_size(int setting, int N, int ndomains)
{
    int g = setting;
    if (g == 0)
        g = ndomains < 2 ? 4 : ndomains > 8 ? 8 : ndomains;
    return g < N ? g : N;
}

uint64_t rally__xor_chunk_nbytes(uint64_t L, int S)
{
    return S < 2 ? 0 : (L + (uint64_t)S - 2) / (uint64_t)(S - 1);
}

int rally__xor_chunk_of(int S, int j, int i)
{
    return ((i - j - 1) % S + S) % S;
}

void rally__xor_into(unsigned char *dst, const unsigned char *src, uint64_t n)
{
    uint64_t b = 0;
    for (; b + 8 <= n; b += 8) {
        uint64_t x, y;
        memcpy(&x, dst + b, 8);
        memcpy(&y, src + b, 8);
        x ^= y;
        memcpy(dst + b, &x, 8);
    }
    for (; b < n; b++)
        dst[b] ^= src[b];
}

/* dst[0..len) ^= (or =, with set) the first len bytes of chunk c (of cn
 * bytes) of the n bytes at d, zeros past n. */
static void fold_n(unsigned char *dst, const unsigned char *d, uint64_t n, int c, uint64_t cn,
                   uint64_t len, int set)
{
    uint64_t off = (uint64_t)c * cn, have = off < n ? n - off : 0;
    if (have > len)
        have = len;
    if (set) {
        if (have > 0)
            memcpy(dst, d + off, (size_t)have);
        memset(dst + have, 0, (size_t)(len - have));
        return;
    }
    rally__xor_into(dst, d + off, have);
}

void rally__xor_fold(unsigned char *dst, const unsigned char *d, uint64_t n, int c, uint64_t cn,
                     int set)
{
    fold_n(dst, d, n, c, cn, cn, set);
}

void rally__xor_encode(int S, const unsigned char *const *d, const uint64_t *n, uint64_t cn,
                       unsigned char *const *par)
{
    for (int i = 0; i < S; i++) {
        memset(par[i], 0, (size_t)cn);
        for (int j = 0; j < S; j++)
            if (j != i)
                rally__xor_fold(par[i], d[j], n[j], rally__xor_chunk_of(S, j, i), cn, 0);
    }
}

void rally__xor_rebuild(int S, int x, const unsigned char *const *d, const uint64_t *n,
                        const unsigned char *const *par, uint64_t cn, unsigned char *out,
                        uint64_t nx, unsigned char *out_par)
{
    /* chunk c of x's model went into member i's parity with the others' */
    for (int c = 0; c < S - 1; c++) {
        uint64_t off = (uint64_t)c * cn;
        if (off >= nx)
            break;
        uint64_t len = nx - off < cn ? nx - off : cn;
        int i = (x + c + 1) % S;
        memcpy(out + off, par[i], (size_t)len);
        for (int j = 0; j < S; j++)
            if (j != i && j != x)
                fold_n(out + off, d[j], n[j], rally__xor_chunk_of(S, j, i), cn, len, 0);
    }
    memset(out_par, 0, (size_t)cn);
    for (int j = 0; j < S; j++)
        if (j != x)
            rally__xor_fold(out_par, d[j], n[j], rally__xor_chunk_of(S, j, x), cn, 0);
}
