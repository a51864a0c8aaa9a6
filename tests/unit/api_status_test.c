/*
 * api_status_test.c — the public API's own checks over a fake engine: no
 * internal status reaches a user (calls that fail with the tracker's
 * internal reset status, 100, must return RALLY_EPEER with the engine's
 * sentence, from rally_init and from a collective alike), and
 * rally_report's arguments (a table of named cases: what reaches the
 * engine's report op, what is RALLY_EINVAL and never reaches it).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/engine.h"
#include "rally/rally.h"
#include "util/err.h"

#define INTERNAL 100 /* RALLY__ERESET (tracker/proto.h): a layer above api may not be included */

static int fail_init; /* 1: init fails with INTERNAL */

struct rally__engine {
    struct rally__err *e;
};

static int fake_init(const struct rally__config *cfg, const char *host, struct rally__err *e,
                     struct rally__engine **out)
{
    (void)cfg;
    (void)host;
    if (fail_init)
        return rally__fail(e, INTERNAL, "the tracker ordered recovery (epoch 3): rank 1 died");
    static struct rally__engine en;
    en.e = e;
    *out = &en;
    return RALLY_OK;
}

static void fake_free(struct rally__engine *en)
{
    (void)en;
}

static int fake_finalize(struct rally__engine *en)
{
    (void)en;
    return RALLY_OK;
}

static int fake_rank(const struct rally__engine *en)
{
    (void)en;
    return 0;
}

static int fake_world(const struct rally__engine *en)
{
    (void)en;
    return 1;
}

static int fake_allreduce(struct rally__engine *en, void *buf, size_t count, int dtype, int op,
                          rally_prepare_fn prepare, void *prepare_arg)
{
    (void)buf;
    (void)count;
    (void)dtype;
    (void)op;
    (void)prepare;
    (void)prepare_arg;
    return rally__fail(en->e, INTERNAL, "the tracker ordered recovery (epoch 4): rank 2 died");
}

static uint64_t fake_version(const struct rally__engine *en)
{
    (void)en;
    return 7;
}

/* What the engine's report op was last given (calls counts them). */
static struct {
    int calls, kind;
    char key[80];
    double value;
    uint64_t version, nbytes;
} told;

static void fake_report(struct rally__engine *en, int kind, const char *key, double value,
                        uint64_t version, uint64_t nbytes, const char *text)
{
    (void)en;
    (void)text;
    told.calls++;
    told.kind = kind;
    snprintf(told.key, sizeof told.key, "%s", key);
    told.value = value;
    told.version = version;
    told.nbytes = nbytes;
}

static void fake_count(struct rally__engine *en, uint64_t nbytes)
{
    (void)en;
    (void)nbytes;
}

const struct rally__engine_ops rally__engine = {.init = fake_init,
                                                .free = fake_free,
                                                .finalize = fake_finalize,
                                                .rank = fake_rank,
                                                .world = fake_world,
                                                .version = fake_version,
                                                .allreduce = fake_allreduce,
                                                .count = fake_count,
                                                .report = fake_report};

static void init_internal_is_epeer(void **state)
{
    (void)state;
    fail_init = 1;
    rally_t *r;
    char *args[] = {"prog", NULL};
    char **argv = args;
    int argc = 1;
    int rc = rally_init(&r, &argc, &argv);
    assert_int_equal(rc, RALLY_EPEER);
    assert_string_equal(rally_strstatus(rc), "RALLY_EPEER");
    assert_non_null(strstr(rally_errmsg(r), "rank 1 died"));
    rally_finalize(r);
}

static void call_internal_is_epeer(void **state)
{
    (void)state;
    fail_init = 0;
    rally_t *r;
    char *args[] = {"prog", NULL};
    char **argv = args;
    int argc = 1;
    assert_int_equal(rally_init(&r, &argc, &argv), RALLY_OK);
    int x = 1;
    int rc = rally_allreduce(r, &x, 1, RALLY_INT32, RALLY_SUM, NULL, NULL);
    assert_int_equal(rc, RALLY_EPEER);
    assert_non_null(strstr(rally_errmsg(r), "rank 2 died"));
    /* the handle is spent with the mapped status, never the internal one */
    rc = rally_allreduce(r, &x, 1, RALLY_INT32, RALLY_SUM, NULL, NULL);
    assert_true(rc >= RALLY_OK && rc <= RALLY_ESTATE);
    rally_finalize(r);
}

static const struct report_case {
    const char *name;
    const char *key;
    double value;
    int rc; /* RALLY_OK: the engine is told; RALLY_EINVAL: it is not */
} REPORT_CASES[] = {
    {"a plain key", "objective", 1234.5, RALLY_OK},
    {"every kind of character", "Az09_.:-", -0.25, RALLY_OK},
    {"a 64-byte key", "k123456789012345678901234567890123456789012345678901234567890123", 0,
     RALLY_OK},
    {"a very large value", "big", 1e308, RALLY_OK},
    {"a NULL key", NULL, 1, RALLY_EINVAL},
    {"an empty key", "", 1, RALLY_EINVAL},
    {"a 65-byte key", "k1234567890123456789012345678901234567890123456789012345678901234", 1,
     RALLY_EINVAL},
    {"a space", "train loss", 1, RALLY_EINVAL},
    {"a slash", "train/loss", 1, RALLY_EINVAL},
    {"a non-ASCII byte", "\xc3\xa9", 1, RALLY_EINVAL},
    {"a NaN", "loss", NAN, RALLY_EINVAL},
    {"an infinity", "loss", INFINITY, RALLY_EINVAL},
    {"a negative infinity", "loss", -INFINITY, RALLY_EINVAL},
};

/* rally_report checks its key and value before the engine sees them, at
 * the engine's version; an EINVAL spends nothing.  rally_report_total
 * takes any count. */
static void report_arguments(void **state)
{
    (void)state;
    fail_init = 0;
    rally_t *r;
    char *args[] = {"prog", NULL};
    char **argv = args;
    int argc = 1;
    assert_int_equal(rally_init(&r, &argc, &argv), RALLY_OK);
    for (size_t k = 0; k < sizeof REPORT_CASES / sizeof REPORT_CASES[0]; k++) {
        const struct report_case *c = &REPORT_CASES[k];
        print_message("case: %s\n", c->name);
        memset(&told, 0, sizeof told);
        int rc = rally_report(r, c->key, c->value);
        assert_int_equal(rc, c->rc);
        if (rc == RALLY_OK) {
            assert_int_equal(told.calls, 1);
            assert_int_equal(told.kind, RALLY__REPORT_VALUE);
            assert_string_equal(told.key, c->key);
            assert_true(told.value == c->value);
            assert_int_equal(told.version, 7);
            assert_string_equal(rally_errmsg(r), "");
        } else {
            assert_int_equal(told.calls, 0);
            assert_non_null(strstr(rally_errmsg(r), "rally_report: "));
        }
    }
    assert_int_equal(rally_report(NULL, "loss", 1), RALLY_EINVAL);
    memset(&told, 0, sizeof told);
    assert_int_equal(rally_report_total(r, 1000), RALLY_OK);
    assert_int_equal(told.calls, 1);
    assert_int_equal(told.kind, RALLY__REPORT_TOTAL);
    assert_string_equal(told.key, "");
    assert_true(told.value == 1000);
    assert_int_equal(rally_report_total(NULL, 1), RALLY_EINVAL);
    /* a refused report spent nothing: collectives still reach the engine */
    int x = 1;
    assert_int_equal(rally_allreduce(r, &x, 1, RALLY_INT32, RALLY_SUM, NULL, NULL), RALLY_EPEER);
    assert_int_equal(rally_report(r, "after", 2), RALLY_OK); /* a spent handle reports too */
    rally_finalize(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(init_internal_is_epeer),
                                       cmocka_unit_test(call_internal_is_epeer),
                                       cmocka_unit_test(report_arguments)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
