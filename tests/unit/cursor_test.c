/*
 * cursor_test.c — the data cursor (include/rally/data.h, src/data/cursor.c).
 *
 *   orders_are_permutations  every epoch's order of several counts (1, a
 *                      power of 4 and either side of one, ...) holds each
 *                      id once; epochs and seeds give other orders
 *   epoch_once_at_any_world  an epoch of steps at world 1, 2, 3, 4 and 7:
 *                      the shares of a step are disjoint and together the
 *                      world-1 step; the epoch holds each id once; the last
 *                      step is short; the cursor then stands at epoch 1
 *   resume_at_other_world  a cursor saved mid-epoch at world 4 and loaded
 *                      into a new one continues at world 3 (and a grow to
 *                      5 later): the epoch still holds each id exactly once,
 *                      and a new cursor not loaded (the negative control)
 *                      does not
 *   bytes_golden       the saved bytes of a cursor and the first ids of two
 *                      epochs, pinned (the format and the order cannot
 *                      drift; bindings/python/rally/data.py computes the
 *                      same)
 *   load_refuses       a bad size, magic, version, checksum, another count,
 *                      batch or seed, a position past the end
 *   digest_adds        rally_ids_digest of parts adds up to the whole's;
 *                      a duplicate changes it
 *   bad_arguments      count 0, batch 0, a rank outside the world, a small
 *                      cap (the cursor unmoved)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rally/data.h"

/* seen[id]++ for every id of epoch's order; asserts each is seen once. */
static void assert_permutation(const rally_cursor_t *c, uint64_t count, uint64_t epoch)
{
    unsigned char *seen = calloc(count, 1);
    assert_non_null(seen);
    for (uint64_t k = 0; k < count; k++) {
        uint64_t id = rally_cursor_id(c, epoch, k);
        assert_true(id < count);
        assert_int_equal(seen[id]++, 0);
    }
    free(seen);
}

static void orders_are_permutations(void **state)
{
    (void)state;
    const uint64_t counts[] = {1, 2, 3, 4, 5, 15, 16, 17, 1000, 4095, 4096, 4097, 65537};
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
        rally_cursor_t *c;
        assert_int_equal(rally_cursor_new(counts[i], 7, 11, &c), RALLY_OK);
        for (uint64_t e = 0; e < 3; e++)
            assert_permutation(c, counts[i], e);
        assert_int_equal(rally_cursor_id(c, 0, counts[i]), UINT64_MAX);
        rally_cursor_free(c);
    }
    /* other epochs and other seeds shuffle otherwise */
    rally_cursor_t *a, *b;
    assert_int_equal(rally_cursor_new(1000, 10, 1, &a), RALLY_OK);
    assert_int_equal(rally_cursor_new(1000, 10, 2, &b), RALLY_OK);
    int same_epoch = 0, same_seed = 0;
    for (uint64_t k = 0; k < 1000; k++) {
        same_epoch += rally_cursor_id(a, 0, k) == rally_cursor_id(a, 1, k);
        same_seed += rally_cursor_id(a, 0, k) == rally_cursor_id(b, 0, k);
    }
    assert_true(same_epoch < 20);
    assert_true(same_seed < 20);
    rally_cursor_free(a);
    rally_cursor_free(b);
}

/* One step at `world`: the shares in one array, in rank order. */
static size_t step_all(rally_cursor_t **cs, int world, uint64_t *out)
{
    size_t total = 0, n;
    for (int r = 0; r < world; r++) {
        assert_int_equal(rally_cursor_next(cs[r], r, world, out + total, 64, &n), RALLY_OK);
        total += n;
    }
    return total;
}

static void epoch_once_at_any_world(void **state)
{
    (void)state;
    const uint64_t count = 1000, batch = 64; /* 15 steps of 64, then one of 40 */
    uint64_t want[65], got[64];
    const int worlds[] = {2, 3, 4, 7};
    for (size_t w = 0; w < sizeof worlds / sizeof *worlds; w++) {
        int world = worlds[w];
        rally_cursor_t *one, *cs[7];
        assert_int_equal(rally_cursor_new(count, batch, 5, &one), RALLY_OK);
        for (int r = 0; r < world; r++)
            assert_int_equal(rally_cursor_new(count, batch, 5, &cs[r]), RALLY_OK);
        unsigned char seen[1000] = {0};
        int steps = 0;
        while (rally_cursor_epoch(one) == 0) {
            size_t n1;
            assert_int_equal(rally_cursor_next(one, 0, 1, want, 65, &n1), RALLY_OK);
            size_t n = step_all(cs, world, got);
            assert_int_equal(n, n1);
            assert_memory_equal(got, want, n * sizeof *got);
            for (size_t k = 0; k < n; k++)
                assert_int_equal(seen[got[k]]++, 0);
            assert_int_equal(n, ++steps == 16 ? 40 : 64);
        }
        assert_int_equal(steps, 16);
        for (uint64_t id = 0; id < count; id++)
            assert_int_equal(seen[id], 1);
        for (int r = 0; r < world; r++) {
            assert_int_equal(rally_cursor_epoch(cs[r]), 1);
            assert_int_equal(rally_cursor_position(cs[r]), 0);
            rally_cursor_free(cs[r]);
        }
        rally_cursor_free(one);
    }
}

/* Runs the rest of the epoch from the saved bytes at `world` (restoring
 * them when `restore`), counting into seen.  Returns the steps taken. */
static int finish_epoch(const unsigned char *saved, int world, int restore, unsigned *seen)
{
    rally_cursor_t *cs[8];
    uint64_t got[64];
    char err[200];
    for (int r = 0; r < world; r++) {
        assert_int_equal(rally_cursor_new(1000, 64, 9, &cs[r]), RALLY_OK);
        if (restore)
            assert_int_equal(rally_cursor_load(cs[r], saved, RALLY_CURSOR_NBYTES, err, sizeof err),
                             RALLY_OK);
    }
    int steps = 0;
    while (rally_cursor_epoch(cs[0]) == 0) {
        size_t n = step_all(cs, world, got);
        for (size_t k = 0; k < n; k++)
            seen[got[k]]++;
        steps++;
    }
    for (int r = 0; r < world; r++)
        rally_cursor_free(cs[r]);
    return steps;
}

static void resume_at_other_world(void **state)
{
    (void)state;
    for (int restore = 1; restore >= 0; restore--) {
        rally_cursor_t *cs[4];
        uint64_t got[64];
        unsigned seen[1000] = {0};
        unsigned char saved[RALLY_CURSOR_NBYTES];
        for (int r = 0; r < 4; r++)
            assert_int_equal(rally_cursor_new(1000, 64, 9, &cs[r]), RALLY_OK);
        for (int s = 0; s < 5; s++) { /* 5 steps at 4 ranks */
            size_t n = step_all(cs, 4, got);
            for (size_t k = 0; k < n; k++)
                seen[got[k]]++;
        }
        assert_int_equal(rally_cursor_position(cs[0]), 320);
        assert_int_equal(rally_cursor_save(cs[2], saved, sizeof saved), RALLY_OK);
        for (int r = 0; r < 4; r++)
            rally_cursor_free(cs[r]);
        int steps = finish_epoch(saved, 3, restore, seen);
        int ok = 1;
        for (int id = 0; id < 1000; id++)
            ok &= seen[id] == 1;
        if (restore) {
            assert_int_equal(steps, 11);
            assert_true(ok);
        } else {
            assert_false(ok); /* the negative control: 320 ids twice */
        }
    }
}

static void bytes_golden(void **state)
{
    (void)state;
    rally_cursor_t *c;
    uint64_t ids[8];
    size_t n;
    assert_int_equal(rally_cursor_new(10, 4, 42, &c), RALLY_OK);
    assert_int_equal(rally_cursor_next(c, 0, 1, ids, 8, &n), RALLY_OK);
    assert_int_equal(rally_cursor_next(c, 1, 2, ids, 8, &n), RALLY_OK);
    unsigned char b[RALLY_CURSOR_NBYTES];
    assert_int_equal(rally_cursor_save(c, b, sizeof b), RALLY_OK);
    static const unsigned char head[56] = {
        'R', 'A', 'L', 'L', 'Y', 'C', 'U', 'R', 1, 0, 0, 0, 0,  0, 0, 0, 42, 0, 0,
        0,   0,   0,   0,   0,   10,  0,   0,   0, 0, 0, 0, 0,  4, 0, 0, 0, 0,  0,
        0,   0,   0,   0,   0,   0,   0,   0,   0, 0, 8, 0, 0,  0, 0, 0, 0, 0};
    assert_memory_equal(b, head, sizeof head);
    /* from bindings/python/rally/data.py's Cursor, an implementation of its own */
    const uint64_t e0[10] = {3, 8, 4, 9, 1, 2, 6, 7, 5, 0}, e1[10] = {0, 2, 3, 9, 1, 6, 8, 5, 4, 7};
    for (uint64_t k = 0; k < 10; k++) {
        assert_int_equal(rally_cursor_id(c, 0, k), e0[k]);
        assert_int_equal(rally_cursor_id(c, 1, k), e1[k]);
    }
    uint64_t all[3] = {0, 1, 2};
    assert_int_equal(rally_ids_digest(all, 3), 0x0a830c0420b7813eu);
    rally_cursor_free(c);
}

static void load_refuses(void **state)
{
    (void)state;
    rally_cursor_t *c, *other;
    unsigned char b[RALLY_CURSOR_NBYTES], t[RALLY_CURSOR_NBYTES];
    char err[200];
    assert_int_equal(rally_cursor_new(100, 8, 3, &c), RALLY_OK);
    assert_int_equal(rally_cursor_save(c, b, sizeof b), RALLY_OK);
    assert_int_equal(rally_cursor_load(c, b, sizeof b - 1, err, sizeof err), RALLY_EPROTO);
    memcpy(t, b, sizeof b);
    t[0] = 'X';
    assert_int_equal(rally_cursor_load(c, t, sizeof t, err, sizeof err), RALLY_EPROTO);
    memcpy(t, b, sizeof b);
    t[8] = 2;
    assert_int_equal(rally_cursor_load(c, t, sizeof t, err, sizeof err), RALLY_EPROTO);
    assert_non_null(strstr(err, "version"));
    memcpy(t, b, sizeof b);
    t[40] = 1; /* the epoch, without a new checksum */
    assert_int_equal(rally_cursor_load(c, t, sizeof t, err, sizeof err), RALLY_EPROTO);
    assert_non_null(strstr(err, "checksum"));
    const uint64_t shapes[3][3] = {{101, 8, 3}, {100, 9, 3}, {100, 8, 4}};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rally_cursor_new(shapes[i][0], shapes[i][1], shapes[i][2], &other),
                         RALLY_OK);
        assert_int_equal(rally_cursor_load(other, b, sizeof b, err, sizeof err), RALLY_EPROTO);
        assert_non_null(strstr(err, "of 100 samples, batch 8, seed 3"));
        rally_cursor_free(other);
    }
    assert_int_equal(rally_cursor_load(c, b, sizeof b, err, sizeof err), RALLY_OK);
    rally_cursor_free(c);
}

static void digest_adds(void **state)
{
    (void)state;
    uint64_t ids[100];
    for (uint64_t i = 0; i < 100; i++)
        ids[i] = i * 7 + 3;
    uint64_t whole = rally_ids_digest(ids, 100);
    assert_int_equal(rally_ids_digest(ids, 30) + rally_ids_digest(ids + 30, 70), whole);
    ids[1] = ids[0]; /* a duplicate instead of an id */
    assert_int_not_equal(rally_ids_digest(ids, 100), whole);
    assert_int_equal(rally_ids_digest(NULL, 0), 0);
}

static void bad_arguments(void **state)
{
    (void)state;
    rally_cursor_t *c;
    uint64_t ids[4];
    size_t n = 99;
    assert_int_equal(rally_cursor_new(0, 1, 0, &c), RALLY_EINVAL);
    assert_int_equal(rally_cursor_new(1, 0, 0, &c), RALLY_EINVAL);
    assert_int_equal(rally_cursor_new(10, 8, 0, &c), RALLY_OK);
    assert_int_equal(rally_cursor_next(c, 2, 2, ids, 4, &n), RALLY_EINVAL);
    assert_int_equal(rally_cursor_next(c, -1, 2, ids, 4, &n), RALLY_EINVAL);
    assert_int_equal(rally_cursor_next(c, 0, 2, ids, 4, &n), RALLY_EINVAL); /* 8 / 2 + 1 */
    assert_int_equal(n, 99);
    assert_int_equal(rally_cursor_position(c), 0);
    rally_cursor_free(c);
    rally_cursor_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(orders_are_permutations), cmocka_unit_test(epoch_once_at_any_world),
        cmocka_unit_test(resume_at_other_world),   cmocka_unit_test(bytes_golden),
        cmocka_unit_test(load_refuses),            cmocka_unit_test(digest_adds),
        cmocka_unit_test(bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
