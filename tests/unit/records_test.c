/*
 * records_test.c — reading local-model records (src/util/records.c), the
 * one reader under the engine that moves them (robust/reshard.c) and the
 * snapshot layer that resumes them (api/resume.c):
 *
 *   walks_records        records of 0, 5 and 16 bytes one after another:
 *                        each id, its whole bytes, and the end
 *   refuses_a_length_past_the_end  a record claiming one byte more than is
 *                        left, a length of 2^32 - 1 in a short buffer, a
 *                        head cut short: -1, and the position stays at the
 *                        record that is not one
 *   sorts_by_id          the list, pushed out of order, sorted by id
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/records.h"
#include "util/wire.h"

/* Appends a record of id with len bytes of value fill at b + at; the new end. */
static uint64_t put(unsigned char *b, uint64_t at, uint64_t id, uint32_t len, unsigned char fill)
{
    rally__put_u64(b + at, id);
    rally__put_u32(b + at + 8, len);
    memset(b + at + RALLY__REC_HEAD, fill, len);
    return at + RALLY__REC_HEAD + len;
}

static void walks_records(void **state)
{
    (void)state;
    unsigned char b[128];
    uint64_t n = put(b, 0, 7, 0, 0);
    n = put(b, n, 3, 5, 0xa5);
    n = put(b, n, UINT64_MAX, 16, 0x5a);
    struct rally__rec r;
    uint64_t at = 0;
    assert_int_equal(rally__rec_next(b, n, &at, &r), 1);
    assert_true(r.id == 7 && r.p == b && r.n == RALLY__REC_HEAD);
    assert_int_equal(rally__rec_next(b, n, &at, &r), 1);
    assert_true(r.id == 3 && r.p == b + RALLY__REC_HEAD && r.n == RALLY__REC_HEAD + 5);
    assert_int_equal(r.p[RALLY__REC_HEAD + 4], 0xa5);
    assert_int_equal(rally__rec_next(b, n, &at, &r), 1);
    assert_true(r.id == UINT64_MAX && r.n == RALLY__REC_HEAD + 16);
    assert_true(at == n);
    assert_int_equal(rally__rec_next(b, n, &at, &r), 0);
    assert_int_equal(rally__rec_next(b, 0, &(uint64_t){0}, &r), 0); /* no bytes: no record */
}

static void refuses_a_length_past_the_end(void **state)
{
    (void)state;
    unsigned char b[128];
    uint64_t first = put(b, 0, 1, 4, 1);
    uint64_t n = put(b, first, 2, 8, 2);
    struct rally__rec r;
    /* the second record says 8 bytes, 7 are left */
    uint64_t at = 0;
    assert_int_equal(rally__rec_next(b, n - 1, &at, &r), 1);
    assert_int_equal(rally__rec_next(b, n - 1, &at, &r), -1);
    assert_true(at == first);
    /* ... exactly 8 are: a record */
    assert_int_equal(rally__rec_next(b, n, &at, &r), 1);
    assert_true(at == n && r.id == 2);
    /* the longest length a head can say, in a buffer of 20 bytes */
    rally__put_u32(b + first + 8, UINT32_MAX);
    at = first;
    assert_int_equal(rally__rec_next(b, first + 20, &at, &r), -1);
    assert_true(at == first);
    /* fewer than 12 bytes left: not even a head */
    at = first;
    assert_int_equal(rally__rec_next(b, first + RALLY__REC_HEAD - 1, &at, &r), -1);
    assert_true(at == first);
}

static void sorts_by_id(void **state)
{
    (void)state;
    unsigned char b[64];
    struct rally__recs l = {0};
    uint64_t ids[] = {9, 2, UINT64_MAX, 0, 5};
    for (size_t i = 0; i < 5; i++) {
        struct rally__rec r = {ids[i], b, RALLY__REC_HEAD, (int)i};
        assert_int_equal(rally__recs_push(&l, &r), 0);
    }
    rally__recs_sort(&l);
    assert_int_equal(l.n, 5);
    uint64_t want[] = {0, 2, 5, 9, UINT64_MAX};
    for (size_t i = 0; i < 5; i++)
        assert_true(l.v[i].id == want[i]);
    assert_int_equal(l.v[0].slot, 3); /* the record moved whole */
    rally__recs_free(&l);
    assert_null(l.v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(walks_records),
        cmocka_unit_test(refuses_a_length_past_the_end),
        cmocka_unit_test(sorts_by_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
