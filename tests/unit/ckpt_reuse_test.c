/*
 * ckpt_reuse_test.c — the checkpoint store's buffer rule: buffers live
 * across versions, and a buffer lent to the snapshot writer is never
 * written or reused while the writer reads it (src/robust/store.c).
 *
 *   store_reuses_in_place      the same buffer holds every version of a
 *                              steady-size model; growth takes a new one
 *   store_lent_never_written   a lent global model and a lent local slot
 *                              keep their bytes over later versions, and
 *                              come back as spares when given back
 *   snapshot_outlives_two      a whole (one-rank) job: the snapshot of
 *                              version 1 is still being written (its first
 *                              write() is held on a gate) while versions
 *                              2, 3 and 4 are checkpointed with other bytes
 *                              (rally_snapshot_busy=skip); once released,
 *                              the snapshot on disk holds version 1's bytes
 *   snapshot_outlives_two_lazy the same with version 1 lazy: serialized for
 *                              the writer into a store buffer, which must
 *                              not become a spare before the writer is done
 *   digest_copy_is_digest64    the store's fused copy-and-digest gives
 *                              rally_digest64 of the bytes, at every size
 *                              around its piece boundary
 *   digest_copy_leaves_avx_clean the fused copy's AVX2 path returns with
 *                              the vector registers' upper halves clean
 *                              (XINUSE's AVX bit, read with XGETBV 1):
 *                              left dirty, every SSE instruction after it
 *                              ran slower, and a GBDT's trees took 1.6x as
 *                              long once its checkpoint passed 64 KiB
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "rally/rally.h"
#include "robust/robust.h"
#include "snapshot/snapshot.h"
#include "snapshot/sys.h"
#include "util/digest.h"

#define MODEL ((size_t)300 << 10) /* several of the store's and the writer's pieces */

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 9));
}

static int same(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(seed * 131u + i * 7u + (i >> 9)))
            return 0;
    return 1;
}

static void store_reuses_in_place(void **state)
{
    (void)state;
    struct rally__err e = {0, ""};
    struct rally__robust rb;
    memset(&rb, 0, sizeof rb);
    rb.world = 1;
    rb.err = &e;
    unsigned char *m = malloc(2 * MODEL);
    fill(m, 2 * MODEL, 1);
    assert_int_equal(rally__robust_store_global(&rb, m, MODEL, NULL, NULL), RALLY_OK);
    const unsigned char *first = rb.st.ckpt;
    fill(m, 2 * MODEL, 2);
    assert_int_equal(rally__robust_store_global(&rb, m, MODEL, NULL, NULL), RALLY_OK);
    assert_ptr_equal(rb.st.ckpt, first);
    assert_true(same(rb.st.ckpt, MODEL, 2));
    assert_int_equal(rb.st.ckpt_digest, rally_digest64(m, MODEL));
    /* smaller fits; bigger grows, and the old one becomes a spare */
    assert_int_equal(rally__robust_store_global(&rb, m, MODEL / 2, NULL, NULL), RALLY_OK);
    assert_ptr_equal(rb.st.ckpt, first);
    assert_int_equal(rally__robust_store_global(&rb, m, 2 * MODEL, NULL, NULL), RALLY_OK);
    assert_ptr_not_equal(rb.st.ckpt, first);
    assert_int_equal(rb.st.nspare, 1);
    assert_ptr_equal(rb.st.spare[0].p, first);
    /* a local slot too */
    struct rally__localset *ls = rally__robust_set_spare(&rb);
    assert_int_equal(rally__robust_set_fill(&rb, ls, 0, m, MODEL), RALLY_OK);
    const unsigned char *slot = ls->data[0];
    assert_int_equal(rally__robust_set_fill(&rb, ls, 0, m + 1, MODEL), RALLY_OK);
    assert_ptr_equal(ls->data[0], slot);
    rally__robust_store_free(&rb);
    free(m);
}

static void store_lent_never_written(void **state)
{
    (void)state;
    struct rally__err e = {0, ""};
    struct rally__robust rb;
    memset(&rb, 0, sizeof rb);
    rb.world = 1;
    rb.err = &e;
    unsigned char *m = malloc(MODEL);
    fill(m, MODEL, 1);
    assert_int_equal(rally__robust_store_global(&rb, m, MODEL, NULL, NULL), RALLY_OK);
    const unsigned char *v1 = rb.st.ckpt;
    struct rally__localset *ls = rally__robust_set_spare(&rb);
    assert_int_equal(rally__robust_set_fill(&rb, ls, 0, m, MODEL), RALLY_OK);
    const unsigned char *l1 = ls->data[0], *p;
    uint64_t n;
    rally__robust_pos_at(&rb, 1);
    ls->version = 1;
    ls->valid = 1;
    assert_int_equal(rally__robust_lend(&rb, 1, -1, &p, &n), RALLY_OK);
    assert_ptr_equal(p, v1);
    assert_int_equal(rally__robust_lend(&rb, 1, 0, &p, &n), RALLY_OK);
    assert_ptr_equal(p, l1);
    assert_int_equal(n, MODEL);
    assert_int_not_equal(rally__robust_lend(&rb, 2, -1, &p, &n), RALLY_OK); /* not held */
    for (unsigned v = 2; v <= 4; v++) {
        fill(m, MODEL, v);
        assert_int_equal(rally__robust_store_global(&rb, m, MODEL, NULL, NULL), RALLY_OK);
        assert_int_equal(rally__robust_set_fill(&rb, ls, 0, m, MODEL), RALLY_OK);
        assert_ptr_not_equal(rb.st.ckpt, v1);
        assert_ptr_not_equal(ls->data[0], l1);
        assert_true(same(rb.st.ckpt, MODEL, v));
    }
    assert_true(same(v1, MODEL, 1)); /* the writer's bytes never changed */
    assert_true(same(l1, MODEL, 1));
    assert_int_equal(rb.st.nspare, 0); /* nor were they pooled */
    rally__robust_release(&rb, v1);
    rally__robust_release(&rb, l1);
    assert_int_equal(rb.st.nspare, 2); /* given back: spares */
    assert_int_equal(rb.st.nheld, 0);
    rally__robust_store_free(&rb);
    free(m);
}

static uint64_t serialize_seed(void *arg, void *buf, uint64_t cap)
{
    if (buf != NULL)
        fill(buf, cap, *(unsigned *)arg);
    return MODEL;
}

/* A lazy model lent is serialized into a store buffer, which comes back to
 * the pool at release, and is not the next one lent. */
static void store_lazy_lent_comes_back(void **state)
{
    (void)state;
    struct rally__err e = {0, ""};
    struct rally__robust rb;
    memset(&rb, 0, sizeof rb);
    rb.world = 1;
    rb.err = &e;
    unsigned seed = 7;
    assert_int_equal(rally__robust_store_global(&rb, NULL, 0, serialize_seed, &seed), RALLY_OK);
    rally__robust_pos_at(&rb, 1);
    const unsigned char *a, *b;
    uint64_t n;
    assert_int_equal(rally__robust_lend(&rb, 1, -1, &a, &n), RALLY_OK);
    assert_int_equal(n, MODEL);
    assert_true(same(a, MODEL, 7));
    assert_int_equal(rb.st.nheld, 1);
    seed = 8;
    assert_int_equal(rally__robust_lend(&rb, 1, -1, &b, &n), RALLY_OK);
    assert_ptr_not_equal(a, b);
    assert_true(same(a, MODEL, 7)); /* the first borrower's bytes stand */
    rally__robust_release(&rb, a);
    rally__robust_release(&rb, b);
    assert_int_equal(rb.st.nheld, 0);
    assert_int_equal(rb.st.nlent, 0);
    assert_int_equal(rb.st.nspare, 2);
    rally__robust_store_free(&rb);
}

/* The writer's first write() waits until the test opens the gate. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int entered, open_gate, calls;

static ssize_t gated_write(int fd, const void *p, size_t n)
{
    pthread_mutex_lock(&mu);
    if (calls++ == 0) {
        entered = 1;
        pthread_cond_broadcast(&cv);
        while (!open_gate)
            pthread_cond_wait(&cv, &mu);
    }
    pthread_mutex_unlock(&mu);
    return rally__snap_sys_real.write(fd, p, n);
}

static uint64_t serialize(void *arg, void *buf, uint64_t cap)
{
    if (buf != NULL && cap >= MODEL)
        memcpy(buf, arg, MODEL);
    return MODEL;
}

/* Version 1 (lazy: serialized for the writer into a store buffer; else a
 * copy, with a local model) is held in write() while versions 2-4 are
 * checkpointed with other bytes. */
static void outlive(int lazy)
{
    char dir[] = "/tmp/ckpt_reuse_XXXXXX", a1[4200], path[4300];
    assert_non_null(mkdtemp(dir));
    snprintf(a1, sizeof a1, "rally_snapshot_dir=%s", dir);
    char a0[] = "ckpt_reuse_test", a2[] = "rally_snapshot_every=1",
         a3[] = "rally_snapshot_busy=skip", a4[] = "rally_keep_snapshots=1",
         *av[] = {a0, a1, a2, a3, a4, NULL}, **argv = av;
    int argc = 5;
    entered = open_gate = calls = 0;
    rally__snap_sys.write = gated_write;
    rally_t *r = NULL;
    assert_int_equal(rally_init(&r, &argc, &argv), RALLY_OK);
    void *g = NULL, *l = NULL;
    uint64_t gn = 0, ln = 0, v = 9;
    assert_int_equal(rally_load_checkpoint(r, &g, &gn, &l, &ln, &v), RALLY_OK);
    assert_int_equal(v, 0);
    unsigned char *gm = malloc(MODEL), *lm = malloc(MODEL);
    fill(gm, MODEL, 1);
    fill(lm, MODEL, 101);
    if (lazy)
        assert_int_equal(rally_lazy_checkpoint(r, serialize, gm), RALLY_OK);
    else
        assert_int_equal(rally_checkpoint(r, gm, MODEL, lm, MODEL), RALLY_OK);
    /* version 1 is committed and handed to the writer: hold it in write() */
    pthread_mutex_lock(&mu);
    while (!entered)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    for (unsigned k = 2; k <= 4; k++) {
        fill(gm, MODEL, k);
        fill(lm, MODEL, 100 + k);
        assert_int_equal(rally_checkpoint(r, gm, MODEL, lazy ? NULL : lm, lazy ? 0 : MODEL),
                         RALLY_OK);
    }
    pthread_mutex_lock(&mu);
    open_gate = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    assert_int_equal(rally_finalize(r), RALLY_OK);
    rally__snap_sys.write = rally__snap_sys_real.write;
    snprintf(path, sizeof path, "%s/ckpt_reuse_test/snap-00000001", dir); /* the program's name */
    struct rally__err e = {0, ""};
    struct rally__snap *sn = NULL;
    assert_int_equal(rally__snap_open(path, &e, &sn), RALLY_OK);
    void *b = NULL;
    uint64_t n = 0;
    assert_int_equal(rally__snap_read(sn, -1, &e, &b, &n), RALLY_OK);
    assert_int_equal(n, MODEL);
    assert_true(same(b, MODEL, 1));
    free(b);
    if (!lazy) {
        assert_int_equal(rally__snap_read(sn, 0, &e, &b, &n), RALLY_OK);
        assert_int_equal(n, MODEL);
        assert_true(same(b, MODEL, 101));
        free(b);
    }
    rally__snap_close(sn);
    free(gm);
    free(lm);
    char rm[4400];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    assert_int_equal(system(rm), 0);
}

static void snapshot_outlives_two(void **state)
{
    (void)state;
    outlive(0);
}

static void snapshot_outlives_two_lazy(void **state)
{
    (void)state;
    outlive(1);
}

static void digest_copy_is_digest64(void **state)
{
    (void)state;
    static const size_t sizes[] = {
        0, 1, 240, 4096, (64 << 10) - 1, 64 << 10, (64 << 10) + 1, (1 << 20) + 3};
    unsigned char *src = malloc((1 << 20) + 3), *dst = malloc((1 << 20) + 3);
    fill(src, (1 << 20) + 3, 7);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        memset(dst, 0, sizes[i]);
        assert_int_equal(rally__digest_copy(dst, src, sizes[i]), rally_digest64(src, sizes[i]));
        if (sizes[i] > 0)
            assert_memory_equal(dst, src, sizes[i]);
    }
    free(src);
    free(dst);
}

/* 1 if the upper halves of the vector registers are in use (dirty), 0 if
 * clean, -1 if this CPU cannot say (no XGETBV with ECX = 1). */
static int avx_upper_dirty(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || __get_cpuid_max(0, NULL) < 0xd)
        return -1;
    __cpuid_count(0xd, 1, a, b, c, d);
    if (!(a & (1u << 2))) /* XGETBV with ECX = 1: the XINUSE bitmap */
        return -1;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
    (void)hi;
    return (int)(lo >> 2 & 1); /* bit 2: the AVX state (YMM_Hi128) */
#else
    return -1;
#endif
}

static void digest_copy_leaves_avx_clean(void **state)
{
    (void)state;
    if (avx_upper_dirty() < 0)
        skip(); /* not x86-64, or it cannot be read: nothing to tell */
    size_t n = 1 << 20;
    unsigned char *src = malloc(n), *dst = malloc(n);
    fill(src, n, 3);
    assert_int_equal(avx_upper_dirty(), 0); /* clean before, or the check says nothing */
    uint64_t d = rally__digest_copy(dst, src, n);
    int dirty = avx_upper_dirty();
    assert_int_equal(d, rally_digest64(src, n));
    assert_int_equal(dirty, 0);
    free(src);
    free(dst);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(store_reuses_in_place),        cmocka_unit_test(store_lent_never_written),
        cmocka_unit_test(store_lazy_lent_comes_back),   cmocka_unit_test(snapshot_outlives_two),
        cmocka_unit_test(snapshot_outlives_two_lazy),   cmocka_unit_test(digest_copy_is_digest64),
        cmocka_unit_test(digest_copy_leaves_avx_clean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
