/*
 * digest.h — comparing the digests of every rank's checkpointed global model
 * (the checkpoint acknowledgement of both engines), in one place so both
 * say the same sentence.
 *
 * Each rank contributes the pair (d, ~d) of its model's rally_digest64, or
 * (0, 0) when it has none to offer (a lazy checkpoint).  OR-ed over the
 * ranks, (D, ND) has D & ND == 0 exactly when every rank that offered a
 * digest offered the same one: a bit where two digests differ is 1 in one
 * d and in the other ~d.  So the acknowledgement's one BITOR allreduce
 * detects a disagreement; only then do the ranks gather every pair to name
 * who differs.
 */
#ifndef RALLY_UTIL_DIGEST_H
#define RALLY_UTIL_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* The pair a rank contributes: words[0] = d, words[1] = ~d; (0, 0) none. */
static inline void rally__digest_pair(uint64_t words[2], int has, uint64_t d)
{
    words[0] = has ? d : 0;
    words[1] = has ? ~d : 0;
}

/* 1 when the OR-ed pair says two ranks offered different digests. */
static inline int rally__digest_disagree(const uint64_t ored[2])
{
    return (ored[0] & ored[1]) != 0;
}

/* Copies n bytes from src to dst and returns rally_digest64 of them, in
 * one pass: each piece is hashed while it is still in the cache. */
uint64_t rally__digest_copy(void *dst, const void *src, size_t n);
/* Its fast path (digest_copy.c): 1 and *d when this CPU has one, else 0
 * and nothing written. */
int rally__digest_copy_fast(void *dst, const void *src, size_t n, size_t piece, uint64_t *d);

/* RALLY_EMISMATCH naming the ranks of each digest, from the pairs of every
 * rank (pairs[2 * r], pairs[2 * r + 1]) of checkpoint version v. */
int rally__digest_fail(struct rally__err *e, uint64_t v, const uint64_t *pairs, int world);
/* "ranks 0, 1, 3 digest X; rank 2 digest Y" of world pairs (none: left out). */
void rally__digest_groups(char *out, size_t cap, const uint64_t *pairs, int world);
/* "rank 2's <what> differs from ranks 0, 1, 3's: " when the pairs fall in two
 * groups of different sizes (the smaller is the odd one out), else "". */
void rally__digest_odd(char *out, size_t cap, const char *what, const uint64_t *pairs, int world);

#endif
