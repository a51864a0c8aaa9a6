/*
 * wire.h — fixed-width little-endian encoding, never a struct dump.
 *
 * A struct rally__wbuf appends to a caller's fixed array; a struct
 * rally__rbuf reads from one.  Both latch an error instead of overrunning:
 * write or read everything, then check ->bad once.
 */
#ifndef RALLY_UTIL_WIRE_H
#define RALLY_UTIL_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void rally__put_u16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
/* Spelled out byte by byte, not looped: gcc -O2 then makes each one load
 * or store (a loop stayed a loop: the 32-byte signature's decode was 90
 * instructions of an 8-byte allreduce's 2,500). */
static inline void rally__put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}
static inline void rally__put_u64(unsigned char *p, uint64_t v)
{
    rally__put_u32(p, (uint32_t)v);
    rally__put_u32(p + 4, (uint32_t)(v >> 32));
}
static inline uint16_t rally__get_u16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t rally__get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t rally__get_u64(const unsigned char *p)
{
    return rally__get_u32(p) | (uint64_t)rally__get_u32(p + 4) << 32;
}

struct rally__wbuf {
    unsigned char *p;
    size_t len, cap;
    int bad;
};

struct rally__rbuf {
    const unsigned char *p;
    size_t len, pos;
    int bad;
};

static inline unsigned char *rally__wbuf_take(struct rally__wbuf *w, size_t n)
{
    if (w->bad || w->cap - w->len < n) {
        w->bad = 1;
        return NULL;
    }
    unsigned char *q = w->p + w->len;
    w->len += n;
    return q;
}
static inline void rally__w_u8(struct rally__wbuf *w, uint8_t v)
{
    unsigned char *q = rally__wbuf_take(w, 1);
    if (q)
        *q = v;
}
static inline void rally__w_u16(struct rally__wbuf *w, uint16_t v)
{
    unsigned char *q = rally__wbuf_take(w, 2);
    if (q)
        rally__put_u16(q, v);
}
static inline void rally__w_u32(struct rally__wbuf *w, uint32_t v)
{
    unsigned char *q = rally__wbuf_take(w, 4);
    if (q)
        rally__put_u32(q, v);
}
static inline void rally__w_u64(struct rally__wbuf *w, uint64_t v)
{
    unsigned char *q = rally__wbuf_take(w, 8);
    if (q)
        rally__put_u64(q, v);
}
static inline void rally__w_bytes(struct rally__wbuf *w, const void *b, size_t n)
{
    unsigned char *q = rally__wbuf_take(w, n);
    if (q && n)
        memcpy(q, b, n);
}
/* A string: u32 length, then the bytes (no NUL). */
static inline void rally__w_str(struct rally__wbuf *w, const char *s)
{
    size_t n = strlen(s);
    rally__w_u32(w, (uint32_t)n);
    rally__w_bytes(w, s, n);
}

static inline const unsigned char *rally__rbuf_take(struct rally__rbuf *r, size_t n)
{
    if (r->bad || r->len - r->pos < n) {
        r->bad = 1;
        return NULL;
    }
    const unsigned char *q = r->p + r->pos;
    r->pos += n;
    return q;
}
static inline uint8_t rally__r_u8(struct rally__rbuf *r)
{
    const unsigned char *q = rally__rbuf_take(r, 1);
    return q ? *q : 0;
}
static inline uint16_t rally__r_u16(struct rally__rbuf *r)
{
    const unsigned char *q = rally__rbuf_take(r, 2);
    return q ? rally__get_u16(q) : 0;
}
static inline uint32_t rally__r_u32(struct rally__rbuf *r)
{
    const unsigned char *q = rally__rbuf_take(r, 4);
    return q ? rally__get_u32(q) : 0;
}
static inline uint64_t rally__r_u64(struct rally__rbuf *r)
{
    const unsigned char *q = rally__rbuf_take(r, 8);
    return q ? rally__get_u64(q) : 0;
}
static inline void rally__r_bytes(struct rally__rbuf *r, void *b, size_t n)
{
    const unsigned char *q = rally__rbuf_take(r, n);
    if (q && n)
        memcpy(b, q, n);
}
/* Reads a string into s[0..cap) NUL-terminated; longer than cap-1 is bad. */
static inline void rally__r_str(struct rally__rbuf *r, char *s, size_t cap)
{
    uint32_t n = rally__r_u32(r);
    if (r->bad || n >= cap) {
        r->bad = 1;
        if (cap)
            s[0] = '\0';
        return;
    }
    rally__r_bytes(r, s, n);
    s[r->bad ? 0 : n] = '\0';
}

#endif
