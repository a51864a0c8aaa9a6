/*
 * digest.c — rally_digest64, the one documented digest: XXH3-64 with seed 0
 * from libxxhash (the library the snapshot checksums use), so applications
 * and the checkpoint acknowledgement hash bytes the same way; and the
 * sentence that names ranks whose checkpoint digests differ (digest.h).
 */
#include "util/digest.h"

#include <stdio.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "rally/rally.h"

uint64_t rally_digest64(const void *buf, size_t n)
{
    static const unsigned char none;
    return (uint64_t)XXH3_64bits(n ? buf : &none, n);
}

#define PIECE ((size_t)64 << 10) /* fits L2 with room to spare */

uint64_t rally__digest_copy(void *dst, const void *src, size_t n)
{
    uint64_t d;
    if (n <= PIECE) {
        if (n > 0)
            memcpy(dst, src, n);
        return rally_digest64(dst, n);
    }
    if (rally__digest_copy_fast(dst, src, n, PIECE, &d))
        return d;
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    for (size_t off = 0; off < n; off += PIECE) {
        size_t m = n - off < PIECE ? n - off : PIECE;
        memcpy((unsigned char *)dst + off, (const unsigned char *)src + off, m);
        XXH3_64bits_update(&st, (const unsigned char *)dst + off, m);
    }
    return (uint64_t)XXH3_64bits_digest(&st);
}

/* "0, 1, 3" into buf: the ranks whose pair is the first group's digest d. */
static size_t ranks_of(char *buf, size_t cap, uint64_t d, const uint64_t *pairs, int world)
{
    size_t n = 0;
    int count = 0;
    buf[0] = '\0';
    for (int r = 0; r < world && n < cap; r++)
        if ((pairs[2 * r] | pairs[2 * r + 1]) != 0 && pairs[2 * r] == d)
            n += (size_t)snprintf(buf + n, cap - n, "%s%d", count++ ? ", " : "", r);
    return (size_t)count;
}

/* The distinct digests of the pairs (up to four), in the order of their
 * lowest rank, and how many ranks hold each. */
static int groups_of(uint64_t seen[4], int count[4], const uint64_t *pairs, int world)
{
    int nseen = 0;
    for (int r = 0; r < world; r++) {
        if ((pairs[2 * r] | pairs[2 * r + 1]) == 0)
            continue;
        int k = 0;
        while (k < nseen && seen[k] != pairs[2 * r])
            k++;
        if (k == nseen && nseen == 4)
            continue;
        if (k == nseen) {
            seen[nseen] = pairs[2 * r];
            count[nseen++] = 0;
        }
        count[k]++;
    }
    return nseen;
}

void rally__digest_groups(char *out, size_t cap, const uint64_t *pairs, int world)
{
    uint64_t seen[4];
    int count[4];
    int nseen = groups_of(seen, count, pairs, world);
    size_t len = 0;
    out[0] = '\0';
    for (int k = 0; k < nseen && len < cap; k++) {
        char ranks[160];
        size_t c = ranks_of(ranks, sizeof ranks, seen[k], pairs, world);
        len += (size_t)snprintf(out + len, cap - len, "%s%s %s digest %016llx", k ? "; " : "",
                                c > 1 ? "ranks" : "rank", ranks, (unsigned long long)seen[k]);
    }
}

void rally__digest_odd(char *out, size_t cap, const char *what, const uint64_t *pairs, int world)
{
    uint64_t seen[4];
    int count[4];
    out[0] = '\0';
    if (groups_of(seen, count, pairs, world) != 2 || count[0] == count[1])
        return;
    int odd = count[0] < count[1] ? 0 : 1;
    char few[160], many[160];
    ranks_of(few, sizeof few, seen[odd], pairs, world);
    ranks_of(many, sizeof many, seen[1 - odd], pairs, world);
    snprintf(out, cap, "%s %s's %s%s differ%s from %s %s's: ", count[odd] > 1 ? "ranks" : "rank",
             few, what, count[odd] > 1 ? "s" : "", count[odd] > 1 ? "" : "s",
             count[1 - odd] > 1 ? "ranks" : "rank", many);
}

int rally__digest_fail(struct rally__err *e, uint64_t v, const uint64_t *pairs, int world)
{
    char groups[RALLY__ERR_MSG_MAX], odd[400];
    rally__digest_groups(groups, sizeof groups, pairs, world);
    rally__digest_odd(odd, sizeof odd, "global model", pairs, world);
    return rally__fail(e, RALLY_EMISMATCH,
                       "checkpoint version %llu: %sthe ranks passed different global models to "
                       "rally_checkpoint (rally_digest64 of its bytes): %s",
                       (unsigned long long)v, odd, groups);
}
