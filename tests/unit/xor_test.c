/*
 * xor_test.c — XOR parity over a set of ranks (src/util/xor.c), the pure
 * half of rally_local_scheme=xor:
 *
 *   sets_cover_the_ring    every place of worlds 1..40 in exactly one set
 *                          for set sizes 2..9: runs of consecutive places
 *                          of 2..G members (one of 3 when G = 2 and N is
 *                          odd), numbered in order; and named examples
 *   chunk_bytes            ceil(L / (S - 1)): 0 bytes, exact and rounded
 *   rebuilds_each_member   sets of 2..7 models of unequal lengths (0 and 1
 *                          byte among them): every member's model and
 *                          parity rebuilt from the others, bit for bit
 *   a_bad_chunk_shows      one byte flipped in a survivor's parity: the
 *                          rebuilt model differs (the rebuild reads it)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/xor.h"

static void sets_cover_the_ring(void **state)
{
    (void)state;
    for (int G = 2; G <= 9; G++)
        for (int N = 1; N <= 40; N++) {
            int p = 0, want_index = 0, threes = 0;
            while (p < N) {
                int first, size, index;
                rally__xor_set(N, G, p, &first, &size, &index);
                assert_int_equal(first, p);
                assert_int_equal(index, want_index);
                if (N == 1) {
                    assert_int_equal(size, 1);
                } else {
                    assert_true(size >= 2);
                    threes += size > G;
                    assert_true(size <= G || (G == 2 && size == 3));
                }
                for (int q = p; q < p + size; q++) { /* every member names the same set */
                    int f2, s2, i2;
                    rally__xor_set(N, G, q, &f2, &s2, &i2);
                    assert_true(f2 == first && s2 == size && i2 == index);
                }
                p += size;
                want_index++;
            }
            assert_int_equal(p, N);
            assert_true(threes <= 1);
        }
    int first, size, index;
    rally__xor_set(12, 3, 4, &first, &size, &index); /* 3 hosts x 4: 4 sets of 3 */
    assert_true(first == 3 && size == 3 && index == 1);
    rally__xor_set(12, 4, 5, &first, &size, &index);
    assert_true(first == 4 && size == 4 && index == 1);
    rally__xor_set(10, 4, 9, &first, &size, &index); /* 4, 3, 3 */
    assert_true(first == 7 && size == 3 && index == 2);
    rally__xor_set(5, 2, 2, &first, &size, &index); /* 3, 2: no set of one */
    assert_true(first == 0 && size == 3 && index == 0);
    rally__xor_set(3, 8, 2, &first, &size, &index); /* capped at the world */
    assert_true(first == 0 && size == 3 && index == 0);
}

static void chunk_bytes(void **state)
{
    (void)state;
    assert_int_equal(rally__xor_chunk_nbytes(0, 3), 0);
    assert_int_equal(rally__xor_chunk_nbytes(10, 3), 5);
    assert_int_equal(rally__xor_chunk_nbytes(11, 3), 6);
    assert_int_equal(rally__xor_chunk_nbytes(7, 2), 7);
    assert_int_equal(rally__xor_chunk_nbytes(1, 5), 1);
}

/* A set of S models of lengths n[] filled from a fixed seed, encoded. */
struct set {
    int S;
    uint64_t n[8], cn;
    unsigned char *d[8], *par[8];
};

static void make(struct set *s, int S, const uint64_t *n)
{
    uint64_t L = 0, x = 0x9e3779b97f4a7c15ull * (uint64_t)S;
    s->S = S;
    for (int j = 0; j < S; j++) {
        s->n[j] = n[j];
        L = n[j] > L ? n[j] : L;
        s->d[j] = malloc(n[j] + 1);
        for (uint64_t b = 0; b < n[j]; b++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            s->d[j][b] = (unsigned char)(x >> 56);
        }
    }
    s->cn = rally__xor_chunk_nbytes(L, S);
    for (int j = 0; j < S; j++)
        s->par[j] = malloc(s->cn + 1);
    rally__xor_encode(S, (const unsigned char *const *)s->d, s->n, s->cn, s->par);
}

static void drop(struct set *s)
{
    for (int j = 0; j < s->S; j++) {
        free(s->d[j]);
        free(s->par[j]);
    }
}

static void rebuilds_each_member(void **state)
{
    (void)state;
    static const uint64_t lens[][8] = {
        {5, 0, 0, 0, 0, 0, 0, 0},       {100, 37, 0, 0, 0, 0, 0, 0},
        {10, 11, 1, 0, 0, 0, 0, 0},     {0, 64, 63, 65, 0, 0, 0, 0},
        {4096, 4095, 1, 0, 7, 0, 0, 0}, {13, 13, 13, 13, 13, 13, 0, 0},
        {1, 2, 3, 4, 5, 6, 1000, 0},
    };
    for (int t = 0; t < (int)(sizeof lens / sizeof lens[0]); t++) {
        struct set s;
        make(&s, t + 2, lens[t]);
        for (int x = 0; x < s.S; x++) {
            unsigned char *out = malloc(s.n[x] + 1), *op = malloc(s.cn + 1);
            rally__xor_rebuild(s.S, x, (const unsigned char *const *)s.d, s.n,
                               (const unsigned char *const *)s.par, s.cn, out, s.n[x], op);
            if (s.n[x] > 0)
                assert_memory_equal(out, s.d[x], s.n[x]);
            if (s.cn > 0)
                assert_memory_equal(op, s.par[x], s.cn);
            free(out);
            free(op);
        }
        drop(&s);
    }
}

static void a_bad_chunk_shows(void **state)
{
    (void)state;
    static const uint64_t n[4] = {40, 30, 20, 10};
    struct set s;
    make(&s, 4, n);
    unsigned char out[40], op[16];
    s.par[1][0] ^= 1; /* member 1's parity holds chunk 0 of member 0 */
    rally__xor_rebuild(4, 0, (const unsigned char *const *)s.d, s.n,
                       (const unsigned char *const *)s.par, s.cn, out, 40, op);
    assert_int_equal(out[0], s.d[0][0] ^ 1);
    assert_memory_equal(out + 1, s.d[0] + 1, 39);
    drop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sets_cover_the_ring),
        cmocka_unit_test(chunk_bytes),
        cmocka_unit_test(rebuilds_each_member),
        cmocka_unit_test(a_bad_chunk_shows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
