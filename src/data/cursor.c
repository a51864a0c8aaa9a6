/*
 * cursor.c — the data cursor (include/rally/data.h): which sample ids each
 * rank takes at each step of a minibatch job, the same at any world size.
 *
 * The order of epoch e is a permutation of [0, count) computed one element
 * at a time: a balanced Feistel network over the 2^(2 half) values (the
 * smallest power of 4 that is >= count), six rounds keyed from (seed, e),
 * walked in cycles until the value lands below count.  A Feistel network is
 * a bijection of its domain whatever the round function, and cycle walking
 * keeps that on [0, count) (the walk from a value below count meets another
 * value below count before it comes back); the domain is less than 4 count,
 * so a walk takes under 4 steps on average.  Why not Fisher-Yates: it needs
 * an O(count) table built on every rank at every epoch (and at every
 * restart), while this costs O(1) memory and a rank computes only its own
 * ids.  The order is a good shuffle for SGD, not a uniform random
 * permutation; that is all a data order needs.
 *
 * The bytes (RALLY_CURSOR_NBYTES, little-endian): "RALLYCUR", u32 version 1,
 * u32 0, u64 seed, count, batch, epoch, position, and the 64-bit FNV-1a of
 * the 56 bytes before it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/data.h"
#include "rally/data.h"
#include "util/wire.h"

#define ROUNDS 6
#define GOLDEN 0x9e3779b97f4a7c15u
#define MAGIC "RALLYCUR"
#define VERSION 1u

struct rally_cursor {
    uint64_t seed, count, batch, epoch, pos;
    unsigned half;                 /* bits in each half of a Feistel value */
    uint64_t mask;                 /* 2^half - 1 */
    uint64_t keyed;                /* the epoch whose keys are in key[] */
    uint64_t key[ROUNDS];
};

/* splitmix64's finaliser: every input bit moves every output bit. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void keys(uint64_t seed, uint64_t epoch, uint64_t *key)
{
    uint64_t base = mix(seed + GOLDEN * (epoch + 1));
    for (int i = 0; i < ROUNDS; i++)
        key[i] = mix(base + GOLDEN * (uint64_t)(i + 1));
}

static uint64_t feistel(const struct rally_cursor *c, const uint64_t *key, uint64_t x)
{
    uint64_t l = x >> c->half, r = x & c->mask;
    for (int i = 0; i < ROUNDS; i++) {
        uint64_t t = l ^ (mix(r ^ key[i]) & c->mask);
        l = r;
        r = t;
    }
    return (l << c->half) | r;
}

static uint64_t order(const struct rally_cursor *c, const uint64_t *key, uint64_t k)
{
    uint64_t x = k;
    do
        x = feistel(c, key, x);
    while (x >= c->count);
    return x;
}

int rally_cursor_new(uint64_t count, uint64_t batch, uint64_t seed, rally_cursor_t **out)
{
    if (out == NULL || count == 0 || count >= (uint64_t)1 << 62 || batch == 0)
        return RALLY_EINVAL;
    struct rally_cursor *c = calloc(1, sizeof *c);
    if (c == NULL)
        return RALLY_ENOMEM;
    c->seed = seed;
    c->count = count;
    c->batch = batch;
    c->half = 1;
    while (((uint64_t)1 << (2 * c->half)) < count)
        c->half++;
    c->mask = ((uint64_t)1 << c->half) - 1;
    keys(seed, 0, c->key);
    *out = c;
    return RALLY_OK;
}

void rally_cursor_free(rally_cursor_t *c)
{
    free(c);
}

int rally_cursor_next(rally_cursor_t *c, int rank, int world, uint64_t *ids, size_t cap,
                      size_t *n)
{
    if (c == NULL || n == NULL || world < 1 || rank < 0 || rank >= world ||
        cap <= c->batch / (uint64_t)world)
        return RALLY_EINVAL;
    if (c->keyed != c->epoch) {
        keys(c->seed, c->epoch, c->key);
        c->keyed = c->epoch;
    }
    uint64_t left = c->count - c->pos, b = c->batch < left ? c->batch : left;
    /* b r / w without overflow: b < 2^62 and w < 2^31, so split the product */
    uint64_t w = (uint64_t)world, r = (uint64_t)rank;
    uint64_t lo = b / w * r + b % w * r / w, hi = b / w * (r + 1) + b % w * (r + 1) / w;
    for (uint64_t k = lo; k < hi; k++)
        ids[k - lo] = order(c, c->key, c->pos + k);
    c->pos += b;
    if (c->pos == c->count) {
        c->epoch++;
        c->pos = 0;
    }
    *n = (size_t)(hi - lo);
    return RALLY_OK;
}

uint64_t rally_cursor_epoch(const rally_cursor_t *c)
{
    return c ? c->epoch : 0;
}

uint64_t rally_cursor_position(const rally_cursor_t *c)
{
    return c ? c->pos : 0;
}

uint64_t rally_cursor_id(const rally_cursor_t *c, uint64_t epoch, uint64_t k)
{
    if (c == NULL || k >= c->count)
        return UINT64_MAX;
    uint64_t key[ROUNDS];
    keys(c->seed, epoch, key);
    return order(c, key, k);
}

int rally_cursor_save(const rally_cursor_t *c, void *out, size_t cap)
{
    if (c == NULL || out == NULL || cap < RALLY_CURSOR_NBYTES)
        return RALLY_EINVAL;
    unsigned char *b = out;
    memcpy(b, MAGIC, 8);
    rally__put_u32(b + 8, VERSION);
    rally__put_u32(b + 12, 0);
    rally__put_u64(b + 16, c->seed);
    rally__put_u64(b + 24, c->count);
    rally__put_u64(b + 32, c->batch);
    rally__put_u64(b + 40, c->epoch);
    rally__put_u64(b + 48, c->pos);
    rally__put_u64(b + 56, rally__fnv1a(RALLY__FNV_INIT, b, 56));
    return RALLY_OK;
}

static int bad(char *err, size_t cap, const char *why)
{
    if (err != NULL && cap > 0)
        snprintf(err, cap, "the saved cursor %s", why);
    return RALLY_EPROTO;
}

int rally_cursor_load(rally_cursor_t *c, const void *bytes, size_t nbytes, char *err,
                      size_t errcap)
{
    const unsigned char *b = bytes;
    if (c == NULL || (b == NULL && nbytes > 0))
        return RALLY_EINVAL;
    if (nbytes != RALLY_CURSOR_NBYTES || memcmp(b, MAGIC, 8) != 0)
        return bad(err, errcap, "is no cursor (size or magic)");
    if (rally__get_u32(b + 8) != VERSION)
        return bad(err, errcap, "has an unknown version");
    if (rally__get_u64(b + 56) != rally__fnv1a(RALLY__FNV_INIT, b, 56))
        return bad(err, errcap, "fails its checksum");
    if (rally__get_u64(b + 16) != c->seed || rally__get_u64(b + 24) != c->count ||
        rally__get_u64(b + 32) != c->batch) {
        if (err != NULL && errcap > 0)
            snprintf(err, errcap,
                     "the saved cursor is of %llu samples, batch %llu, seed %llu; this one of "
                     "%llu, %llu, %llu",
                     (unsigned long long)rally__get_u64(b + 24),
                     (unsigned long long)rally__get_u64(b + 32),
                     (unsigned long long)rally__get_u64(b + 16), (unsigned long long)c->count,
                     (unsigned long long)c->batch, (unsigned long long)c->seed);
        return RALLY_EPROTO;
    }
    if (rally__get_u64(b + 48) >= c->count)
        return bad(err, errcap, "has a position past its sample count");
    c->epoch = rally__get_u64(b + 40);
    c->pos = rally__get_u64(b + 48);
    return RALLY_OK;
}

uint64_t rally_ids_digest(const uint64_t *ids, size_t count)
{
    uint64_t d = 0;
    for (size_t i = 0; i < count; i++)
        d += mix(ids[i] + GOLDEN);
    return d;
}
