/*
 * digest_copy.c — the fast path of rally__digest_copy (digest.h): XXH3-64
 * compiled here for AVX2 and chosen at run time, because the shared
 * libxxhash is built for the baseline CPU and hashes at about half the
 * speed, which made the checkpoint's digest cost as much as its copy.
 *
 * Nothing else lives in this file: every XXH3 function it inlines carries
 * the AVX2 target, so only a caller that checked the CPU may reach them.
 * It returns with the vector registers' upper halves cleared (VZEROUPPER):
 * GCC leaves them dirty on one of XXH3's returns, and dirty upper halves
 * slow every SSE instruction the caller runs afterwards, until something
 * clears them (a GBDT's trees took 1.6x as long once its checkpoint passed
 * this path's 64 KiB; ckpt_reuse_test's digest_copy_leaves_avx_clean).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/digest.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC target("avx2")
#define XXH_INLINE_ALL
#include <immintrin.h>
#include <xxhash.h>

int rally__digest_copy_fast(void *dst, const void *src, size_t n, size_t piece, uint64_t *d)
{
    if (!__builtin_cpu_supports("avx2"))
        return 0;
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    for (size_t off = 0; off < n; off += piece) {
        size_t m = n - off < piece ? n - off : piece;
        memcpy((unsigned char *)dst + off, (const unsigned char *)src + off, m);
        XXH3_64bits_update(&st, (unsigned char *)dst + off, m);
    }
    *d = (uint64_t)XXH3_64bits_digest(&st);
    _mm256_zeroupper(); /* see above */
    return 1;
}
#else
int rally__digest_copy_fast(void *dst, const void *src, size_t n, size_t piece, uint64_t *d)
{
    (void)dst, (void)src, (void)n, (void)piece, (void)d;
    return 0;
}
#endif
