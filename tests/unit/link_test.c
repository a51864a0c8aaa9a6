/*
 * link_test.c — unit tests of the link seam (net/link.h) and of the sidecar
 * hook that collectives call through it (cmocka).
 *
 * Link ops: bytes move both ways in two pieces, a full link would block (0)
 * and its wait for OUT ends when the peer drains it, a wait ends at its
 * deadline or on the alarm handle, and a peer that went away is RALLY_EPEER
 * naming it.  A wait on a link alone on its core spins through
 * rally_spin_alone_us without arming, reading the clock every 64 looks and
 * yielding soon only after a yield that the peer's bytes followed, and
 * moving to another core when that goes on (counted); one on a shared core
 * arms after rally_spin_us; one whose yield another thread took the core at
 * (a crowded machine, made here with a busy thread on the same core) arms
 * at once, and the next spins without yielding.  Sidecars: three ranks as threads, each with its
 * own comm over socketpair-backed TCP links, run an allreduce (tree) and a larger one
 * (ring) and a broadcast, each rank with its own sidecar; every rank's
 * on_sidecar hook must get exactly each neighbour's sidecar, once per link
 * per collective, and the results must be right.  The same three ranks run
 * once over TCP links and once over shared-memory ones (net/transports/shm.c), with
 * rings small enough to wrap many times.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "coll/coll.h"
#include "net/link.h"
#include "net/transport.h"
#include "util/clock.h"
#include "util/reduce.h"

static void pair(struct rally__link *a, int peer_a, struct rally__link *b, int peer_b)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    rally__tcp_link(a, sv[0], peer_a);
    rally__tcp_link(b, sv[1], peer_b);
}

/* --- the spin of a link alone on its core ------------------------------------ */

/* A fake memory link (ready/arm/woken, as shm.c has) that turns ready on the
 * ready_at-th look (2000 unless said) and counts its arms: a wait that kept
 * spinning never armed, one that gave up on spinning armed before blocking.
 * Counts, not clocks: the 1 us spin_us is over long before 2000 looks, a 60 s
 * spin_alone_us never is on any machine that runs the test at all.  With
 * ready_at 0 it is a peer that shares our core: ready at the first look
 * after the wait's first sched_yield(), looks counting those before it. */
struct fake {
    int looks, arms, ready_at, pipe[2];
    uint64_t yields0; /* rally__wait_counts.yields before the wait */
};
static int fake_ready(const struct rally__link *l, int want)
{
    (void)want;
    struct fake *f = l->t.p;
    if (f->ready_at == 0) {
        if (rally__wait_counts.yields > f->yields0)
            return 1;
        f->looks++;
        return 0;
    }
    return ++f->looks >= f->ready_at;
}
static int fake_arm(struct rally__link *l, int want)
{
    struct fake *f = l->t.p;
    /* the doorbell rings once armed, never before: a wait that polls while
     * it spins (a spin cut by preemption does) cannot see it ready unarmed */
    if (f->arms++ == 0 && write(f->pipe[1], "!", 1) != 1)
        return -1;
    return fake_ready(l, want);
}
static void fake_woken(struct rally__link *l, unsigned fired)
{
    (void)l;
    (void)fired;
}
static int fake_handles(const struct rally__link *l, int want, struct rally__handle *h)
{
    (void)want;
    h[0] = rally__handle_fd(((struct fake *)l->t.p)->pipe[0]);
    h[0].want = RALLY__WANT_IN;
    return 1;
}

static int fake_wait_for(int ready_at, int spin_alone, int64_t spin_alone_us, int *arms,
                         int *looks)
{
    static const struct rally__link_ops ops = {.name = "fake",
                                               .handles = fake_handles,
                                               .ready = fake_ready,
                                               .arm = fake_arm,
                                               .woken = fake_woken};
    struct fake f = {0, 0, ready_at, {-1, -1}, rally__wait_counts.yields};
    if (pipe(f.pipe) != 0)
        return -2;
    struct rally__link l = {.ops = &ops, .peer = 1, .spin_alone = spin_alone};
    l.t.p = &f;
    struct rally__interest w = {&l, RALLY__WANT_IN};
    struct rally__err e = {0, ""};
    int alarmed = -1;
    int rc = rally__link_wait(&w, 1, NULL, 1, spin_alone_us, rally__deadline(120000), &alarmed, &e);
    close(f.pipe[0]);
    close(f.pipe[1]);
    *arms = f.arms;
    if (looks != NULL)
        *looks = f.looks;
    return rc;
}

/* The spin tests' waits run in a thread of their own (in_thread), so that
 * each starts from a new thread's state (link.c keeps the yield's pace and
 * the crowd per thread); the thread notes, the test asserts.  A yield that
 * another thread took the core for (a crowded machine: counted in
 * rally__wait_counts.crowded) rightly changes what a wait does, so the
 * tests check the quiet path's exact counts when their waits saw no crowd,
 * and the crowded path's when they did; crowded_wait_blocks makes the
 * crowd itself. */
struct waits {
    int rc[4], arms[4], looks[4];
    uint64_t crowded[4]; /* yields the core was taken at, in each wait */
    struct rally__wait_counts d; /* the counts' growth over waits 2 and 3 */
    uint64_t took_us;            /* wait 2's */
};
static void in_thread(void *(*fn)(void *), struct waits *w)
{
    pthread_t t;
    memset(w, 0, sizeof *w);
    assert_int_equal(pthread_create(&t, NULL, fn, w), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
}
/* wait i of w: fake_wait_for(ready_at, spin_alone, spin_alone_us) */
static void note(struct waits *w, int i, int ready_at, int spin_alone, int64_t spin_alone_us)
{
    uint64_t c = rally__wait_counts.crowded;
    w->rc[i] = fake_wait_for(ready_at, spin_alone, spin_alone_us, &w->arms[i], &w->looks[i]);
    w->crowded[i] = rally__wait_counts.crowded - c;
}

static void *keeps_spinning(void *arg)
{
    struct waits *w = arg;
    note(w, 0, 2000, 1, 60000000);
    note(w, 1, 2000, 0, 1000000);
    note(w, 2, 2000, 1, 0);
    return NULL;
}
static void spin_alone_keeps_spinning(void **state)
{
    (void)state;
    struct waits w;
    in_thread(keeps_spinning, &w);
    for (int i = 0; i < 3; i++)
        assert_int_equal(w.rc[i], 1);
    /* alone on its core with a long spin_alone_us: spins to the 2000th look
     * (a minute: 2000 looks, each with a yield, take seconds on a machine
     * whose cores are all busy), unless a yield found the machine crowded:
     * then it blocks */
    if (w.crowded[0] == 0)
        assert_int_equal(w.arms[0], 0);
    else
        assert_true(w.arms[0] > 0);
    /* a link that shares its core spins spin_us alone, then arms */
    assert_true(w.arms[1] > 0);
    /* and so does a link alone whose spin_alone_us is off */
    assert_true(w.arms[2] > 0);
}

/* A spin alone on its core reads the clock once every 64 looks (a check),
 * not on each, and polls its descriptors once every 100 us, not every 10.
 * It yields at its first check after a yield that the peer's bytes
 * followed at once (the peer shares our core), and then, while yields bring
 * nothing, after 2, 4, 8 and at most 16 checks, where it yielded every 2 us
 * (the counts of clock reads, poll()s and sched_yield()s in
 * rally__wait_counts, bounded by the looks, and the polls by the time the
 * wait took: the spin's pace, not its speed).  A link ready at the first
 * look costs no clock read and no system call. */
enum { LOOKS = 100000 };
static void *few_clocks(void *arg)
{
    struct waits *w = arg;
    /* a peer on our core: the first yield lets it run; the next wait yields
     * at its first check (64 looks, and the one before the spin) */
    note(w, 0, 0, 1, 60000000);
    note(w, 1, 0, 1, 60000000);
    /* a peer whose bytes come on the 100000th look, yields or not */
    struct rally__wait_counts c0 = rally__wait_counts;
    int64_t t0 = rally__now_us();
    note(w, 2, LOOKS, 1, 60000000);
    w->took_us = (uint64_t)(rally__now_us() - t0);
    note(w, 3, 1, 1, 60000000);
    w->d.clock_reads = rally__wait_counts.clock_reads - c0.clock_reads;
    w->d.polls = rally__wait_counts.polls - c0.polls;
    w->d.yields = rally__wait_counts.yields - c0.yields;
    w->d.moves = rally__wait_counts.moves - c0.moves;
    return NULL;
}
static void spin_alone_spends_few_clocks_and_calls(void **state)
{
    (void)state;
    struct waits w;
    in_thread(few_clocks, &w);
    for (int i = 0; i < 4; i++)
        assert_int_equal(w.rc[i], 1);
    print_message("%d looks in %llu us: %llu clock reads, %llu polls, %llu yields%s\n", LOOKS,
                  (unsigned long long)w.took_us, (unsigned long long)w.d.clock_reads,
                  (unsigned long long)w.d.polls, (unsigned long long)w.d.yields,
                  w.crowded[0] + w.crowded[1] + w.crowded[2] ? " (crowded)" : "");
    /* wait 3, ready at its first look: no clock read, no call, whatever came before */
    assert_int_equal(w.arms[3], 0);
    assert_int_equal(w.looks[3], 1);
    if (w.crowded[0] + w.crowded[1] + w.crowded[2] != 0) {
        /* a crowded machine: a wait that saw it blocked, and the next spun
         * without a yield; either way at most a clock read every 64 looks */
        assert_true(w.d.clock_reads <= LOOKS / 64 + 2);
        return;
    }
    assert_int_equal(w.arms[0], 0);
    assert_int_equal(w.arms[1], 0);
    assert_int_equal(w.looks[1], 64 + 1);
    assert_int_equal(w.arms[2], 0);
    assert_true(w.d.clock_reads <= LOOKS / 64 + 1);
    assert_true(w.d.polls <= w.took_us / 100 + 1);
    assert_true(w.d.yields <= LOOKS / 64 / 16 + 4 + 1); /* 4: after 1, 2, 4 and 8 checks */
    assert_int_equal(w.d.moves, 0); /* yields that brought nothing */
}

/* Eight yields in a row that the peer's bytes followed at once: the pair
 * takes turns on one core, and the waiting thread moves off it, once, to
 * another its affinity allows, which it gets back whole (a thread allowed
 * one core stays). */
static void *moves_off(void *arg)
{
    struct waits *w = arg;
    cpu_set_t before, after;
    uint64_t m0 = rally__wait_counts.moves;
    if (sched_getaffinity(0, sizeof before, &before) != 0)
        return NULL;
    for (int i = 0; i < 8; i++) {
        note(w, 0, 0, 1, 60000000);
        w->arms[1] += w->arms[0];
        w->crowded[1] += w->crowded[0];
    }
    w->d.moves = rally__wait_counts.moves - m0;
    w->rc[1] = sched_getaffinity(0, sizeof after, &after) == 0 && CPU_EQUAL(&before, &after);
    w->rc[2] = CPU_COUNT(&before);
    return NULL;
}
static void spin_alone_moves_off_a_shared_core(void **state)
{
    (void)state;
    struct waits w;
    in_thread(moves_off, &w);
    assert_int_equal(w.rc[0], 1);
    assert_int_equal(w.rc[1], 1); /* the affinity as it was */
    if (w.crowded[1] != 0)
        return; /* a yield gave the core to another thread: no evidence of a pair */
    assert_int_equal(w.arms[1], 0);
    assert_int_equal(w.d.moves, w.rc[2] > 1 ? 1 : 0);
}

/* A crowded core: this thread and a busy one bound to the same core, and a
 * peer that takes 100,000 looks (seconds of yields on the old loop, which
 * spun through them all).  The first yield that the busy thread takes the
 * core at makes the wait block (it arms), and the next wait, soon after,
 * spins without a single yield and blocks too. */
static _Atomic int busy_stop;
static void *busy(void *arg)
{
    (void)arg;
    while (!busy_stop)
        ;
    return NULL;
}
static void *crowded(void *arg)
{
    struct waits *w = arg;
    uint64_t y;
    note(w, 0, LOOKS, 1, 60000000);
    y = rally__wait_counts.yields;
    note(w, 1, LOOKS, 1, 60000000);
    w->d.yields = rally__wait_counts.yields - y;
    return NULL;
}
static void crowded_wait_blocks(void **state)
{
    (void)state;
    cpu_set_t all, one;
    int cpu = sched_getcpu();
    assert_true(cpu >= 0);
    assert_int_equal(sched_getaffinity(0, sizeof all, &all), 0);
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0); /* the threads inherit it */
    pthread_t b;
    busy_stop = 0;
    assert_int_equal(pthread_create(&b, NULL, busy, NULL), 0);
    struct waits w;
    in_thread(crowded, &w);
    busy_stop = 1;
    assert_int_equal(pthread_join(b, NULL), 0);
    assert_int_equal(sched_setaffinity(0, sizeof all, &all), 0);
    print_message("crowded: %d and %d looks, arms %d and %d, crowded yields %llu\n", w.looks[0],
                  w.looks[1], w.arms[0], w.arms[1], (unsigned long long)w.crowded[0]);
    assert_int_equal(w.rc[0], 1);
    assert_int_equal(w.rc[1], 1);
    assert_int_equal(w.crowded[0], 1);
    assert_true(w.arms[0] > 0);
    assert_true(w.looks[0] < LOOKS);
    assert_int_equal(w.d.yields, 0);
    assert_true(w.arms[1] > 0);
}

/* --- the link ops ------------------------------------------------------------ */

static void link_ops(void **state)
{
    (void)state;
    struct rally__link a, b; /* a: rank 0's link to rank 1; b: the other end */
    struct rally__err e = {0, ""};
    pair(&a, 1, &b, 0);
    assert_string_equal(a.what, "rank 1");

    /* two pieces out, two pieces in, split differently */
    assert_int_equal(rally__link_send(&a, "head", 4, "payload", 7, &e), 11);
    char h[6], p[5];
    assert_int_equal(rally__link_recv(&b, h, 6, p, 5, &e), 11);
    assert_memory_equal(h, "headpa", 6);
    assert_memory_equal(p, "yload", 5);

    /* nothing to read: would block, and a wait for IN ends at its deadline */
    assert_int_equal(rally__link_recv(&b, h, 1, NULL, 0, &e), 0);
    struct rally__interest w = {&b, RALLY__WANT_IN};
    int alarmed = -1;
    int64_t t0 = rally__now_ms();
    assert_int_equal(rally__link_wait(&w, 1, NULL, 100, 0, rally__deadline(50), &alarmed, &e), 0);
    assert_true(rally__now_ms() - t0 >= 40);

    /* the alarm ends a wait, and says so */
    int al[2];
    assert_int_equal(pipe(al), 0);
    struct rally__handle alarm = rally__handle_fd(al[0]);
    assert_false(rally__handle_is_none(&alarm));
    assert_true(write(al[1], "!", 1) == 1);
    assert_int_equal(rally__link_wait(&w, 1, &alarm, 0, 0, rally__deadline(5000), &alarmed, &e), 1);
    assert_int_equal(alarmed, 1);

    /* fill the link until it would block; a wait for OUT ends once b drains it */
    static unsigned char big[1 << 16];
    long k, sent = 0;
    while ((k = rally__link_send(&a, big, sizeof big, NULL, 0, &e)) > 0)
        sent += k;
    assert_int_equal(k, 0);
    assert_true(sent > 0);
    struct rally__interest wo = {&a, RALLY__WANT_OUT};
    assert_int_equal(rally__link_wait(&wo, 1, NULL, 0, 0, rally__deadline(50), &alarmed, &e), 0);
    long got = 0;
    while (got < sent) {
        k = rally__link_recv(&b, big, sizeof big, NULL, 0, &e);
        assert_true(k > 0);
        got += k;
    }
    assert_int_equal(rally__link_wait(&wo, 1, NULL, 0, 0, rally__deadline(5000), &alarmed, &e), 1);
    assert_int_equal(alarmed, 0);

    /* the peer goes away: EPEER naming it, on receive and on send */
    rally__link_close(&b);
    assert_null(b.ops);
    assert_int_equal(rally__link_recv(&a, h, 1, NULL, 0, &e), -1);
    assert_int_equal(e.code, RALLY_EPEER);
    assert_non_null(strstr(e.msg, "rank 1"));
    struct rally__err e2 = {0, ""};
    assert_int_equal(rally__link_send(&a, "x", 1, NULL, 0, &e2), -1);
    assert_int_equal(e2.code, RALLY_EPEER);
    assert_non_null(strstr(e2.msg, "rank 1"));
    rally__link_close(&a);
    close(al[0]);
    close(al[1]);
}

/* --- sidecars through collectives --------------------------------------------- */

#define N 3
#define COUNT 40000 /* int32: 160 KB, over the ring threshold set below */

struct rank {
    int r;
    struct rally__comm c;
    struct rally__err e;
    int calls[N];        /* on_sidecar calls per peer */
    uint64_t sidecar[N]; /* the last sidecar each peer sent */
    int bad_calls;       /* calls naming no neighbour, or not our own sidecar */
    uint64_t sent;       /* the sidecar of the collective in flight */
    int rc[3];
    int32_t *small, *large;
    unsigned char bc[100];
};

static void on_sidecar(void *arg, int peer, uint64_t mine, uint64_t sidecar)
{
    struct rank *k = arg;
    if (peer < 0 || peer >= N || rally__comm_link(&k->c, peer) == NULL || mine != k->sent) {
        k->bad_calls++;
        return;
    }
    k->calls[peer]++;
    k->sidecar[peer] = sidecar;
}

static uint64_t sidecar_of(int rank, int op)
{
    return 0x5a5a000000000000ull | (uint64_t)rank << 8 | (uint64_t)op;
}

/* After collective op: every neighbour's sidecar arrived once per collective so far. */
static void check_sidecars(struct rank *k, int op)
{
    assert_int_equal(k->bad_calls, 0);
    for (int p = 0; p < N; p++) {
        if (p == k->r || rally__comm_link(&k->c, p) == NULL) {
            assert_int_equal(k->calls[p], 0);
            continue;
        }
        assert_int_equal(k->calls[p], op + 1);
        assert_true(k->sidecar[p] == sidecar_of(p, op));
    }
}

static void *rank_main(void *arg)
{
    struct rank *k = arg;
    struct rally__reducer rd;
    rally__reducer_builtin(&rd, RALLY_INT32, RALLY_SUM);
    struct rally__sig s = {RALLY__C_ALLREDUCE, RALLY_INT32, RALLY_SUM, -1, 4, sidecar_of(k->r, 0)};
    k->sent = s.sidecar;
    k->rc[0] = rally__allreduce(&k->c, k->small, k->small, 4, &rd, &s);
    s = (struct rally__sig){RALLY__C_ALLREDUCE, RALLY_INT32, RALLY_SUM, -1, COUNT,
                            sidecar_of(k->r, 1)};
    k->sent = s.sidecar;
    k->rc[1] = rally__allreduce(&k->c, k->large, k->large, COUNT, &rd, &s);
    s = (struct rally__sig){RALLY__C_BROADCAST, 0, 0, 2, sizeof k->bc, sidecar_of(k->r, 2)};
    k->sent = s.sidecar;
    k->rc[2] = rally__broadcast(&k->c, k->bc, sizeof k->bc, 2, &s);
    return NULL;
}

static void sidecars_reach_the_hook(void **state)
{
    int shm = *state != NULL && strcmp(*state, "shm") == 0;
    struct rank *ks = calloc(N, sizeof *ks);
    assert_non_null(ks);
    for (int r = 0; r < N; r++) {
        struct rank *k = &ks[r];
        k->r = r;
        k->e = (struct rally__err){0, ""};
        rally__comm_init(&k->c, r, N, &k->e);
        k->c.timeout_ms = 20000;
        k->c.ring_threshold = 4096;
        k->c.chunk = 1024;
        k->c.spin_us = 20;
        k->c.on_sidecar = on_sidecar;
        k->c.hook_arg = k;
        k->small = calloc(4, sizeof *k->small);
        k->large = calloc(COUNT, sizeof *k->large);
        assert_non_null(k->small);
        assert_non_null(k->large);
        for (int i = 0; i < 4; i++)
            k->small[i] = r * 10 + i;
        for (int i = 0; i < COUNT; i++)
            k->large[i] = r + i;
        memset(k->bc, r == 2 ? 0xab : 0, sizeof k->bc);
    }
    /* one socketpair per pair of neighbours */
    for (int a = 0; a < N; a++)
        for (int i = 0; i < ks[a].c.topo.nneighbours; i++) {
            int b = ks[a].c.topo.neighbours[i];
            if (b < a)
                continue;
            struct rally__link *la = &ks[a].c.links[ks[a].c.nlinks++];
            struct rally__link *lb = &ks[b].c.links[ks[b].c.nlinks++];
            if (!shm) {
                pair(la, b, lb, a);
                continue;
            }
            struct rally__err e = {0, ""};
            assert_int_equal(rally__shm_pair(la, b, lb, a, 4096, &e), RALLY_OK);
            assert_string_equal(la->ops->name, "shm");
        }
    pthread_t t[N];
    for (int r = 0; r < N; r++)
        assert_int_equal(pthread_create(&t[r], NULL, rank_main, &ks[r]), 0);
    for (int r = 0; r < N; r++)
        pthread_join(t[r], NULL);
    for (int r = 0; r < N; r++) {
        struct rank *k = &ks[r];
        for (int j = 0; j < 3; j++)
            if (k->rc[j] != RALLY_OK)
                fail_msg("rank %d collective %d: %d %s", r, j, k->rc[j], k->e.msg);
        assert_true(k->c.nlinks > 0);
        check_sidecars(k, 2);
        for (int i = 0; i < 4; i++)
            assert_int_equal(k->small[i], (0 + 1 + 2) * 10 + 3 * i);
        for (int i = 0; i < COUNT; i++)
            if (k->large[i] != 3 * i + 3)
                fail_msg("rank %d large[%d] = %d", r, i, (int)k->large[i]);
        for (size_t i = 0; i < sizeof k->bc; i++)
            assert_int_equal(k->bc[i], 0xab);
        for (int i = 0; i < k->c.nlinks; i++)
            rally__link_close(&k->c.links[i]);
        rally__comm_free(&k->c);
        free(k->small);
        free(k->large);
    }
    free(ks);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(link_ops),
        cmocka_unit_test(spin_alone_keeps_spinning),
        cmocka_unit_test(spin_alone_spends_few_clocks_and_calls),
        cmocka_unit_test(spin_alone_moves_off_a_shared_core),
        cmocka_unit_test(crowded_wait_blocks),
        cmocka_unit_test_prestate(sidecars_reach_the_hook, "tcp"),
        cmocka_unit_test_prestate(sidecars_reach_the_hook, "shm"),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
