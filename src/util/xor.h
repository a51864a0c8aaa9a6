/*
 * xor.h — XOR parity over a set of ranks (SCR's XOR scheme): each member
 * keeps its own local model and one parity chunk, and any one member's
 * model is rebuilt from the others' models and chunks (docs/recovery.md,
 * "Local models").
 *
 * The sets: the placement ring's places (util/place.h) cut into runs of
 * consecutive places, so a set's members sit on different hosts wherever G
 * consecutive places do.  A world of N with set size G has ceil(N / G)
 * sets of nearly equal sizes (the first N mod nsets one larger), never more
 * than G; when that leaves a set of one (G = 2 and N odd), N / G sets, one
 * of them of 3.  A set of one has no parity: only a world of one has it.
 *
 * The parity: in a set of size S, every member's model is padded with zeros
 * to the set's largest length L and split into S - 1 chunks of cn =
 * ceil(L / (S - 1)) bytes (the last padded too).  Member j's chunk c goes
 * into the parity of member (j + c + 1) mod S, so member i holds
 *
 *     P_i = XOR over j != i of chunk (i - j - 1) mod S of model j,
 *
 * cn bytes: each model's chunks are spread over all the other members, and
 * a lost member x's chunk c is P_i (i = x + c + 1) XOR the other chunks
 * that went into it.  The lengths of the set's models travel with the
 * parity, so a rebuilt model has its exact bytes.
 */
#ifndef RALLY_UTIL_XOR_H
#define RALLY_UTIL_XOR_H

#include <stdint.h>

/* The set of place p in a world of N with set size G (2 <= G, capped at N
 * here): its first place, its size and its index (sets count from place
 * 0).  With N 1: the set of one. */
void rally__xor_set(int N, int G, int p, int *first, int *size, int *index);

/* The set size in force for a world of N (at least 2) whose failure
 * domains at the level the copies spread over number ndomains:
 * rally_xor_set as given (setting), or by default one member per domain,
 * so that a set spans distinct domains wherever consecutive places do, at
 * most 8 (SCR's default: the parity costs B / 7 and a rebuild reads 7
 * models), 4 with one domain; never more than N.  The workers' and
 * rally-run's check at the start alike. */
int rally__xor_size(int setting, int N, int ndomains);

/* A parity chunk's bytes for a set of size S whose largest model has L. */
uint64_t rally__xor_chunk_nbytes(uint64_t L, int S);

/* Which chunk of member j's model goes into member i's parity (j != i). */
int rally__xor_chunk_of(int S, int j, int i);

/* dst[0..n) ^= src[0..n), a word at a time. */
void rally__xor_into(unsigned char *dst, const unsigned char *src, uint64_t n);

/* dst[0..cn) ^= chunk c of the n bytes at d (zeros past its end); with
 * set, dst = that chunk instead. */
void rally__xor_fold(unsigned char *dst, const unsigned char *d, uint64_t n, int c, uint64_t cn,
                     int set);

/* Every member's parity of a set of size S from the models d[j] (n[j]
 * bytes): par[i] gets cn bytes (rally__xor_chunk_nbytes of the largest).
 * What the members compute together along the set's ring, at once. */
void rally__xor_encode(int S, const unsigned char *const *d, const uint64_t *n, uint64_t cn,
                       unsigned char *const *par);

/* Member x of a set of size S rebuilt from the others: d[j], n[j] and
 * par[j] for j != x (d[x], par[x] unused), cn the chunks' bytes; writes its
 * model (nx bytes, its length the parity carries) to out and its parity
 * (cn bytes) to out_par. */
void rally__xor_rebuild(int S, int x, const unsigned char *const *d, const uint64_t *n,
                        const unsigned char *const *par, uint64_t cn, unsigned char *out,
                        uint64_t nx, unsigned char *out_par);

#endif
