/*
 * cache_test.c — the robust engine's result cache (src/robust/cache.c):
 * what a recovering worker is served is exactly the result it asks for, or
 * nothing.
 *
 *   cache_finds_only_its_key   results cached under keys 1, 2 and 4 of a
 *                              version: each is found with its own bytes,
 *                              and keys 3, 0 and 5 (between, below and
 *                              above them) find nothing
 *   cache_drop_below           after dropping versions below 3, results of
 *                              versions 1 and 2 are gone (the lookup of a
 *                              dropped key finds nothing, not the next
 *                              result), version 4's and the bootstrap
 *                              results stay, and a key of version 3 still
 *                              finds nothing
 *   pool_reuses_an_interval    200 results between checkpoints (more than
 *                              the pool's floor of 64): the next interval's
 *                              200 take every buffer back, none anew; after
 *                              an interval of 10 the pool is trimmed to 64
 *   part_covers_each_piece     results kept in part, for world 2..9, copies
 *                              1..world, counts that split evenly and not,
 *                              element sizes 1 and 8: the pieces tile the
 *                              result exactly; each piece is kept by exactly
 *                              `copies` ranks (rank r: pieces r .. r +
 *                              copies - 1); each rank's pieces sit packed,
 *                              in order, in part_nbytes bytes, each inside
 *                              one of part_ranges' ranges where part_holds
 *                              says; and below
 *                              RALLY__PART_MIN, with copies 0 or >= world,
 *                              fewer elements than workers, or an algorithm
 *                              that runs out of place the result is kept
 *                              whole
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rally/rally.h"
#include "robust/robust.h"
#include "util/config.h"

struct fixture {
    struct rally__err e;
    struct rally__config cfg;
    struct rally__robust rb;
};

static void setup(struct fixture *f);

static void part_covers_each_piece(void **state)
{
    (void)state;
    static struct fixture f;
    setup(&f);
    const uint64_t counts[] = {RALLY__PART_MIN, RALLY__PART_MIN + 7, 3 * RALLY__PART_MIN + 5};
    for (int w = 2; w <= 9; w++)
        for (int k = 1; k <= w; k++)
            for (int ci = 0; ci < 3; ci++)
                for (uint64_t es = 1; es <= 8; es += 7) {
                    f.rb.world = w;
                    f.cfg.result_copies = k;
                    uint64_t count = counts[ci], whole = count * es;
                    struct rally__part pt = rally__part_plan(&f.rb, whole, count, 1);
                    assert_int_equal(pt.copies, k < w ? (uint32_t)k : 0);
                    if (pt.copies == 0)
                        continue;
                    uint64_t end = 0, len, at;
                    for (int p = 0; p < w; p++) { /* the pieces tile [0, whole) */
                        assert_int_equal(rally__part_piece(&pt, p, &len), end);
                        assert_int_equal(len % es, 0);
                        end += len;
                        int keepers = 0;
                        for (int r = 0; r < w; r++)
                            if (rally__part_holds(&pt, r, p, &at)) {
                                keepers++;
                                assert_true(((p - r) % w + w) % w < k);
                            }
                        assert_int_equal(keepers, k);
                    }
                    assert_int_equal(end, whole);
                    for (int r = 0; r < w; r++) { /* packed in order r, r + 1, ... */
                        uint64_t next = 0;
                        for (int j = 0; j < k; j++) {
                            assert_true(rally__part_holds(&pt, r, (r + j) % w, &at));
                            assert_int_equal(at, next);
                            rally__part_piece(&pt, (r + j) % w, &len);
                            next += len;
                        }
                        assert_int_equal(rally__part_nbytes(&pt, r), next);
                        /* the same layout as ranges: each kept piece inside
                         * one, where holds says it sits */
                        struct rally__part_range rg[2];
                        int nr = rally__part_ranges(&pt, r, rg);
                        for (int j = 0; j < k; j++) {
                            uint64_t off = rally__part_piece(&pt, (r + j) % w, &len);
                            assert_true(rally__part_holds(&pt, r, (r + j) % w, &at));
                            int in = 0;
                            for (int q = 0; q < nr; q++)
                                if (off >= rg[q].off && off + len <= rg[q].off + rg[q].n) {
                                    assert_int_equal(rg[q].at + (off - rg[q].off), at);
                                    in = 1;
                                }
                            assert_true(in);
                        }
                    }
                }
    f.rb.world = 4;
    f.cfg.result_copies = 2;
    assert_int_equal(rally__part_plan(&f.rb, RALLY__PART_MIN - 1, RALLY__PART_MIN - 1, 1).copies,
                     0);
    assert_int_equal(rally__part_plan(&f.rb, RALLY__PART_MIN, 3, 1).copies, 0); /* 3 < 4 elements */
    assert_int_equal(rally__part_plan(&f.rb, RALLY__PART_MIN, RALLY__PART_MIN, 1).copies, 2);
    assert_int_equal(rally__part_plan(&f.rb, RALLY__PART_MIN, RALLY__PART_MIN, 0).copies, 0);
    f.cfg.result_copies = 0;
    assert_int_equal(rally__part_plan(&f.rb, RALLY__PART_MIN, RALLY__PART_MIN, 1).copies, 0);
}

static void setup(struct fixture *f)
{
    memset(f, 0, sizeof *f);
    f->cfg.cache_max_bytes = 1 << 20;
    f->rb.cfg = &f->cfg;
    f->rb.err = &f->e;
    f->rb.distributed = 1; /* a worker alone caches nothing */
}

/* Caches one byte, the key's own tag, under key. */
static void put(struct fixture *f, uint64_t key, unsigned char tag)
{
    struct rally__sig sig = {.kind = 1, .count = tag};
    unsigned char *p = rally__robust_buf(&f->rb, 1);
    assert_non_null(p);
    p[0] = tag;
    assert_int_equal(rally__robust_cache_put(&f->rb, key, &sig, p, 1, NULL), RALLY_OK);
}

static void found(const struct fixture *f, uint64_t key, unsigned char tag)
{
    const struct rally__entry *c = rally__robust_cache_find(&f->rb, key);
    assert_non_null(c);
    assert_true(c->key == key);
    assert_int_equal(c->nbytes, 1);
    assert_int_equal(c->data[0], tag);
    assert_int_equal(c->sig.count, tag);
}

static void absent(const struct fixture *f, uint64_t key)
{
    const struct rally__entry *c = rally__robust_cache_find(&f->rb, key);
    if (c != NULL)
        fail_msg("key %#llx is not cached, yet the lookup gave key %#llx", (unsigned long long)key,
                 (unsigned long long)c->key);
}

static void cache_finds_only_its_key(void **state)
{
    (void)state;
    struct fixture f;
    setup(&f);
    put(&f, RALLY__KEY_OP(7, 1), 1);
    put(&f, RALLY__KEY_OP(7, 2), 2);
    put(&f, RALLY__KEY_OP(7, 4), 4);
    found(&f, RALLY__KEY_OP(7, 1), 1);
    found(&f, RALLY__KEY_OP(7, 2), 2);
    found(&f, RALLY__KEY_OP(7, 4), 4);
    absent(&f, RALLY__KEY_OP(7, 3));
    absent(&f, RALLY__KEY_OP(7, 0));
    absent(&f, RALLY__KEY_OP(7, 5));
    absent(&f, RALLY__KEY_OP(6, 9));
    absent(&f, RALLY__KEY_OP(8, 0));
    rally__robust_cache_free(&f.rb);
}

static void cache_drop_below(void **state)
{
    (void)state;
    struct fixture f;
    setup(&f);
    put(&f, RALLY__KEY_BOOT(0), 10);
    put(&f, RALLY__KEY_BOOT(1), 11);
    put(&f, RALLY__KEY_OP(1, 0), 1);
    put(&f, RALLY__KEY_OP(2, 0), 2);
    put(&f, RALLY__KEY_OP(4, 0), 4);
    absent(&f, RALLY__KEY_OP(3, 0));
    assert_int_equal(f.rb.cache.nbytes, 5);
    rally__robust_cache_drop_below(&f.rb, 3);
    assert_int_equal(f.rb.cache.n, 3);
    assert_int_equal(f.rb.cache.nbytes, 3);
    absent(&f, RALLY__KEY_OP(1, 0));
    absent(&f, RALLY__KEY_OP(2, 0));
    absent(&f, RALLY__KEY_OP(3, 0));
    found(&f, RALLY__KEY_OP(4, 0), 4);
    found(&f, RALLY__KEY_BOOT(0), 10);
    found(&f, RALLY__KEY_BOOT(1), 11);
    absent(&f, RALLY__KEY_BOOT(2));
    rally__robust_cache_free(&f.rb);
}

/* n 4 KiB results in version v, each buffer's address into got[]. */
static void interval(struct fixture *f, uint64_t v, int n, unsigned char **got)
{
    struct rally__sig sig = {.kind = 1};
    for (int i = 0; i < n; i++) {
        unsigned char *p = rally__robust_buf(&f->rb, 4096);
        assert_non_null(p);
        got[i] = p;
        assert_int_equal(
            rally__robust_cache_put(&f->rb, RALLY__KEY_OP(v, (uint64_t)i), &sig, p, 4096, NULL),
            RALLY_OK);
    }
}

static void pool_reuses_an_interval(void **state)
{
    (void)state;
    enum { N = 200 };
    static unsigned char *first[N], *second[N];
    struct fixture f;
    setup(&f);
    interval(&f, 1, N, first);
    rally__robust_cache_drop_below(&f.rb, 2);
    interval(&f, 2, N, second);
    for (int i = 0; i < N; i++) { /* every buffer one of the first interval's */
        int seen = 0;
        for (int j = 0; j < N && !seen; j++)
            seen = second[i] == first[j];
        if (!seen)
            fail_msg("result %d of the second interval took a new buffer", i);
    }
    rally__robust_cache_drop_below(&f.rb, 3);
    assert_int_equal(f.rb.cache.npool, N);
    interval(&f, 3, 10, second);
    rally__robust_cache_drop_below(&f.rb, 4);
    assert_int_equal(f.rb.cache.npool, 64); /* 190 left over and 10 back, trimmed */
    rally__robust_cache_free(&f.rb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cache_finds_only_its_key),
        cmocka_unit_test(cache_drop_below),
        cmocka_unit_test(pool_reuses_an_interval),
        cmocka_unit_test(part_covers_each_piece),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
