/*
 * api_status_test.c — no internal status reaches a user: the public API
 * over a fake engine whose calls fail with the tracker's internal reset
 * status (100) must return RALLY_EPEER with the engine's sentence, from
 * rally_init and from a collective alike.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

const struct rally__engine_ops rally__engine = {.init = fake_init,
                                                .free = fake_free,
                                                .finalize = fake_finalize,
                                                .rank = fake_rank,
                                                .world = fake_world,
                                                .allreduce = fake_allreduce};

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

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(init_internal_is_epeer),
                                       cmocka_unit_test(call_internal_is_epeer)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
