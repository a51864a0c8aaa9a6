/*
 * bytes.h — what every example's model format needs: fixed-width
 * little-endian fields and a double's bits, as static inline functions so
 * each example stays one program over the public API.  The digest (each
 * model file's checksum and the printed model_digest) is rally's own,
 * rally_digest64 from rally/rally.h (XXH3-64): no example carries a hash.
 */
#ifndef RALLY_EXAMPLES_BYTES_H
#define RALLY_EXAMPLES_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void ex_put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline void ex_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint64_t ex_get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static inline uint32_t ex_get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t ex_dbits(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static inline double ex_bitsd(uint64_t b)
{
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

#endif
