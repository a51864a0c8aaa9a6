/*
 * coll_matrix.c — every collective against the serial model, bit for bit.
 *
 *   rally-run -n N coll_matrix [big] rally_ring_threshold_bytes=T
 *       [rally_hd_threshold_bytes=H] [rally_rd_threshold_bytes=D] rally_chunk_bytes=C
 *       [rally_host_group=K | model_host_group=K]
 *
 * Loops over every dtype x op for sizes 0, 1, odd sizes and sizes not
 * divisible by N up to 64 KiB (recursive doubling up to D and T when N is
 * a power of two, the tree, above T halving-doubling up to H, and the ring
 * above both; with K, hosts of K consecutive ranks, the hierarchy above
 * T: rally_host_group makes them, model_host_group says real hosts are
 * laid out so), custom
 * reducers on 12-byte elements (commutative over the ring, non-commutative
 * over the tree), operand order in every algorithm (float MAX/MIN over +0,
 * -0 and NaNs of different payloads, and a commutative reducer that keeps
 * its left operand on equal keys: a swapped step gives other bits even
 * where the grouping is right), the prepare callback, broadcast from every root (fixed and
 * size-from-root), and fixed and variable allgather.  With "big", also a
 * 16 MiB float sum and a 16 MiB int64 sum, and a 5 MiB float sum into a
 * buffer 4 bytes off 16-byte alignment.  With "late", only ring-sized float
 * and int64 sums and 12-byte custom reductions (ring- and halving-doubling-
 * sized), each entered by rank 1 half a second after the others: its
 * predecessor's sends back up while it goes on reducing, so the ring's stage
 * for partial sums fills and the partial sums also take the overflow path
 * (coll.c, struct stage), and a full shared-memory ring (1 MiB, no multiple
 * of 12) cuts 12-byte elements, which a kept allreduce must not land in the
 * buffer half-received (run.c, rally__chan_recv_whole).  Each rank computes every rank's
 * input itself, runs the model, and compares; a difference prints the first
 * bad element and exits 1.
 *
 * With "exact" (the MPI backend, whose reduction order is MPI's own): float
 * and double inputs are multiples of 2^-8 below 2^6 (doubles: 2^-20 below
 * 2^9), which every order sums exactly, so the results are still compared
 * bit for bit; every other case is order-insensitive already (integer
 * operators wrap, MAX/MIN pick an operand, custom reducers are exact and MPI
 * folds a non-commutative one in rank order).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "rally/rally.h"

static rally_t *R;
static int rank = -1, N;
static size_t threshold = 256 << 10, hd_threshold = 8 << 20, rd_threshold = 16 << 10;
static int host_group; /* rally_host_group: hosts of this many consecutive ranks; 0 none */
static long checks;
static int exact;

/* Float inputs on a grid that every summation order adds exactly. */
static void make_exact(void *buf, size_t count, int dt)
{
    unsigned char *p = buf;
    for (size_t i = 0; exact && dt >= RALLY_FLOAT && i < count; i++) {
        uint64_t h = 0;
        memcpy(&h, p + i * model_dtype_size(dt), model_dtype_size(dt));
        h = model_mix(h);
        int32_t k = (int32_t)(h & 0x7fff) - 0x4000;
        if (dt == RALLY_FLOAT) {
            float f = ldexpf((float)k, -8);
            memcpy(p + i * 4, &f, 4);
        } else {
            double d = ldexp((double)((int64_t)(h >> 34) - ((int64_t)1 << 29)), -20);
            memcpy(p + i * 8, &d, 8);
        }
    }
}

#define CHECK_RC(rc, what)                                                                         \
    do {                                                                                           \
        if ((rc) != RALLY_OK) {                                                                    \
            fprintf(stderr, "rank %d: %s failed: %s\n", rank, what, rally_errmsg(R));              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static void compare(const void *got, const void *want, size_t n, size_t es, const char *what)
{
    checks++;
    if (n == 0 || memcmp(got, want, n) == 0) /* memcmp takes no NULL, even for 0 bytes */
        return;
    const unsigned char *a = got, *b = want;
    size_t i = 0;
    while (a[i] == b[i])
        i++;
    fprintf(stderr, "rank %d: %s: element %zu differs from the model (byte %zu: %02x vs %02x)\n",
            rank, what, i / es, i, a[i], b[i]);
    exit(1);
}

struct bop {
    int dt, op;
};
static void builtin_fn(void *a, const void *b, void *arg)
{
    const struct bop *o = arg;
    model_op1(a, b, o->dt, o->op);
}

static int uses_rd(size_t count, size_t es, int commutative)
{
    size_t total = count * es;
    return commutative && count > 0 && total <= rd_threshold && total <= threshold && N >= 2 &&
           (N & (N - 1)) == 0 && N < 2048;
}

static int uses_ring(size_t count, size_t es, int commutative)
{
    return commutative && count * es > threshold && count >= (size_t)N;
}

static int uses_hd(size_t count, size_t es, int commutative)
{
    return uses_ring(count, es, commutative) && count * es <= hd_threshold && N < 2048;
}

/* The hierarchy replaces the ring and halving-doubling where the hosts
 * have one: two hosts or more, one with two ranks or more. */
static int uses_hier(size_t count, size_t es, int commutative)
{
    return host_group >= 2 && N >= 3 && N > host_group && uses_ring(count, es, commutative);
}

/* Expected result of reducing in[0..N) element-wise with f. */
static void model(unsigned char *want, unsigned char *const *in, size_t count, size_t es,
                  int commutative, model_fn f, void *arg)
{
    int ring = uses_ring(count, es, commutative), hd = uses_hd(count, es, commutative);
    int hier = uses_hier(count, es, commutative);
    hd |= uses_rd(count, es, commutative); /* the same grouping at N a power of two */
    for (size_t i = 0; i < count; i++) {
        if (hier)
            model_hier(want + i * es, in, N, host_group, count, i, es, f, arg);
        else if (hd)
            model_hd(want + i * es, in, N, i, es, f, arg);
        else if (ring)
            model_ring(want + i * es, in, N, count, i, es, f, arg);
        else
            model_tree(want + i * es, in, 0, N, i, es, f, arg);
    }
}

/* --- operand order: ties that pick an operand --------------------------------- */

/* Float inputs where MAX and MIN must pick one of two operands that compare
 * equal or unordered: +0 and -0 (the left one is kept), and NaNs with
 * different payloads and signs (a NaN on the right is taken), so a swapped
 * operand order gives other bits even where every sum would be the same. */
static void fill_ties(void *buf, size_t count, int dt, int r, uint64_t seed)
{
    static const uint32_t f[] = {0x00000000u, 0x80000000u, 0x7fc00001u,
                                 0x7fc00002u, 0xffc00003u, 0x3f800000u};
    static const uint64_t d[] = {0,
                                 0x8000000000000000u,
                                 0x7ff8000000000001u,
                                 0x7ff8000000000002u,
                                 0xfff8000000000003u,
                                 0x3ff0000000000000u};
    unsigned char *p = buf;
    for (size_t i = 0; i < count; i++) {
        uint64_t h = model_mix(seed ^ ((uint64_t)r << 48) ^ i) % 6;
        if (dt == RALLY_FLOAT)
            memcpy(p + i * 4, &f[h], 4);
        else
            memcpy(p + i * 8, &d[h], 8);
    }
}

/* The caller's buffer starts at byte shift of an allocation (a multiple of
 * the element size): the robust call's copy back must handle any alignment.
 * ties: the inputs are fill_ties' (float types only). */
static void allreduce_case_at(int dt, int op, size_t count, uint64_t seed, size_t shift, int ties)
{
    size_t es = model_dtype_size(dt);
    unsigned char **in = xmalloc((size_t)N * sizeof *in);
    for (int r = 0; r < N; r++) {
        in[r] = xmalloc(count * es);
        if (ties) {
            fill_ties(in[r], count, dt, r, seed);
            continue;
        }
        model_fill(in[r], count, dt, r, seed);
        make_exact(in[r], count, dt);
    }
    unsigned char *want = xmalloc(count * es), *mem = xmalloc(count * es + shift);
    unsigned char *got = mem + shift;
    struct bop o = {dt, op};
    model(want, in, count, es, 1, builtin_fn, &o);
    memcpy(got, in[rank], count * es);
    CHECK_RC(rally_allreduce(R, got, count, dt, op, NULL, NULL), "allreduce");
    char what[112];
    snprintf(what, sizeof what, "allreduce%s(dtype %d, op %d, count %zu)", ties ? " of ties " : "",
             dt, op, count);
    compare(got, want, count * es, es, what);
    for (int r = 0; r < N; r++)
        free(in[r]);
    free(in);
    free(want);
    free(mem);
}

static void allreduce_case(int dt, int op, size_t count, uint64_t seed)
{
    allreduce_case_at(dt, op, count, seed, 0, 0);
}

/* 12-byte elements: a commutative (sum, max, xor) and a non-commutative
 * affine composition (m, c) o (m', c') = (m m', m c' + c), plus a counter. */
struct e12 {
    uint32_t a, b, c;
};
static void comm12(void *a, const void *b, void *arg)
{
    struct e12 x, y;
    memcpy(&x, a, 12);
    memcpy(&y, b, 12);
    x.a += y.a;
    x.b = x.b < y.b ? y.b : x.b;
    x.c ^= y.c;
    memcpy(a, &x, 12);
}
static void affine12(void *a, const void *b, void *arg)
{
    struct e12 x, y;
    memcpy(&x, a, 12);
    memcpy(&y, b, 12);
    struct e12 z = {x.a * y.a, x.a * y.b + x.b, x.c + y.c};
    memcpy(a, &z, 12);
}
static void reduce_comm12(void *inout, const void *in, size_t n, void *arg)
{
    for (size_t i = 0; i < n; i++)
        comm12((char *)inout + 12 * i, (const char *)in + 12 * i, NULL);
}
static void reduce_affine12(void *inout, const void *in, size_t n, void *arg)
{
    for (size_t i = 0; i < n; i++)
        affine12((char *)inout + 12 * i, (const char *)in + 12 * i, NULL);
}

/* Commutative but not symmetric: the larger key wins, and on equal keys the
 * left operand is kept, tag and all.  Registered as commutative, so it runs
 * over halving-doubling and the ring, where only the documented operand
 * order gives the model's tags. */
static void keep12(void *a, const void *b, void *arg)
{
    struct e12 x, y;
    memcpy(&x, a, 12);
    memcpy(&y, b, 12);
    if (y.a > x.a)
        memcpy(a, &y, 12);
}
static void reduce_keep12(void *inout, const void *in, size_t n, void *arg)
{
    for (size_t i = 0; i < n; i++)
        keep12((char *)inout + 12 * i, (const char *)in + 12 * i, NULL);
}

struct prep {
    unsigned char *buf, *src;
    size_t n;
    int calls;
};
static void prepare(void *arg)
{
    struct prep *p = arg;
    memcpy(p->buf, p->src, p->n);
    p->calls++;
}

static void custom_case(int id, int commutative, size_t count, uint64_t seed)
{
    unsigned char **in = xmalloc((size_t)N * sizeof *in);
    for (int r = 0; r < N; r++) {
        in[r] = xmalloc(count * 12);
        model_fill(in[r], count * 3, RALLY_UINT32, r, seed);
    }
    unsigned char *want = xmalloc(count * 12), *got = xmalloc(count * 12);
    model(want, in, count, 12, commutative, commutative ? comm12 : affine12, NULL);
    memset(got, 0xee, count * 12);
    struct prep p = {got, in[rank], count * 12, 0};
    CHECK_RC(rally_allreduce_custom(R, got, count, id, prepare, &p), "allreduce_custom");
    if (p.calls != 1) {
        fprintf(stderr, "rank %d: prepare ran %d times, expected once\n", rank, p.calls);
        exit(1);
    }
    char what[96];
    snprintf(what, sizeof what, "custom reducer %d (commutative %d, count %zu)", id, commutative,
             count);
    compare(got, want, count * 12, 12, what);
    for (int r = 0; r < N; r++)
        free(in[r]);
    free(in);
    free(want);
    free(got);
}

/* Keys 0..2, so equal keys are common; the tag says whose element won. */
static void keep_case(int id, size_t count, uint64_t seed)
{
    unsigned char **in = xmalloc((size_t)N * sizeof *in);
    for (int r = 0; r < N; r++) {
        in[r] = xmalloc(count * 12);
        for (size_t i = 0; i < count; i++) {
            uint64_t h = model_mix(seed ^ ((uint64_t)r << 48) ^ i);
            struct e12 x = {(uint32_t)(h % 3), (uint32_t)(h >> 32), (uint32_t)r};
            memcpy(in[r] + 12 * i, &x, 12);
        }
    }
    unsigned char *want = xmalloc(count * 12), *got = xmalloc(count * 12);
    model(want, in, count, 12, 1, keep12, NULL);
    memcpy(got, in[rank], count * 12);
    CHECK_RC(rally_allreduce_custom(R, got, count, id, NULL, NULL), "allreduce_custom");
    char what[96];
    snprintf(what, sizeof what, "custom reducer %d keeping the left on ties (count %zu)", id,
             count);
    compare(got, want, count * 12, 12, what);
    for (int r = 0; r < N; r++)
        free(in[r]);
    free(in);
    free(want);
    free(got);
}

/* Every algorithm's operand order, not only its grouping (the sizes reach
 * recursive doubling (N a power of two), the tree, halving-doubling and the
 * ring at the matrix's thresholds). */
static void tie_cases(uint64_t seed)
{
    size_t byte_sizes[] = {4, 24, 1000, 4104, 65536};
    for (int dt = RALLY_FLOAT; dt <= RALLY_DOUBLE; dt++)
        for (int op = RALLY_MAX; op <= RALLY_MIN; op++)
            for (size_t s = 0; s < sizeof byte_sizes / sizeof byte_sizes[0]; s++)
                allreduce_case_at(dt, op, byte_sizes[s] / model_dtype_size(dt) + (size_t)N, seed++,
                                  0, 1);
    size_t counts[] = {1, (size_t)N + 2, 1000, 5461};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        keep_case(9, counts[i], seed++);
}

static void broadcast_cases(uint64_t seed)
{
    size_t sizes[] = {0, 1, 13, 4096 + 7, 300001};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si];
        for (int root = 0; root < N; root++) {
            unsigned char *want = xmalloc(n), *got = xmalloc(n);
            model_fill(want, n, RALLY_UINT8, root, seed + n);
            if (rank == root)
                memcpy(got, want, n);
            else
                memset(got, 0, n);
            CHECK_RC(rally_broadcast(R, got, n, root), "broadcast");
            compare(got, want, n, 1, "broadcast");

            void *p = rank == root ? want : NULL;
            size_t pn = rank == root ? n : 12345;
            CHECK_RC(rally_broadcast_alloc(R, &p, &pn, root), "broadcast_alloc");
            if (pn != n) {
                fprintf(stderr, "rank %d: broadcast_alloc gave %zu bytes, want %zu\n", rank, pn, n);
                exit(1);
            }
            compare(p, want, n, 1, "broadcast_alloc");
            if (rank != root)
                rally_free(p);
            free(want);
            free(got);
        }
    }
}

static void allgather_cases(uint64_t seed)
{
    size_t sizes[] = {0, 1, 8, 1000, 70001};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si];
        unsigned char *want = xmalloc(n * (size_t)N), *got = xmalloc(n * (size_t)N);
        for (int r = 0; r < N; r++)
            model_fill(want + (size_t)r * n, n, RALLY_UINT8, r, seed + n);
        memset(got, 0, n * (size_t)N);
        CHECK_RC(rally_allgather(R, want + (size_t)rank * n, n, got), "allgather");
        compare(got, want, n * (size_t)N, 1, "allgather");
        free(want);
        free(got);
    }
    /* variable sizes, including empty contributions */
    for (int round = 0; round < 3; round++) {
        size_t total = 0, *len = xmalloc((size_t)N * sizeof *len);
        for (int r = 0; r < N; r++) {
            len[r] = (size_t)((r * 7919 + round * 104729) % 5 == 0
                                  ? 0
                                  : (r + 1) * 997 * (round + 1) % 40000);
            total += len[r];
        }
        unsigned char *want = xmalloc(total), *p = want;
        unsigned char *mine = NULL;
        for (int r = 0; r < N; r++) {
            model_fill(p, len[r], RALLY_UINT8, r, seed + 99 + (uint64_t)round);
            if (r == rank)
                mine = p;
            p += len[r];
        }
        void *got = NULL;
        uint64_t *sizes_out = xmalloc((size_t)N * sizeof *sizes_out);
        CHECK_RC(rally_allgatherv(R, mine, len[rank], &got, sizes_out), "allgatherv");
        for (int r = 0; r < N; r++)
            if (sizes_out[r] != len[r]) {
                fprintf(stderr, "rank %d: allgatherv size of rank %d: %" PRIu64 ", want %zu\n",
                        rank, r, sizes_out[r], len[r]);
                exit(1);
            }
        compare(got, want, total, 1, "allgatherv");
        rally_free(got);
        free(sizes_out);
        free(want);
        free(len);
    }
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "rally_ring_threshold_bytes=", 27) == 0)
            threshold = strtoul(argv[i] + 27, NULL, 10);
        else if (strncmp(argv[i], "rally_hd_threshold_bytes=", 25) == 0)
            hd_threshold = strtoul(argv[i] + 25, NULL, 10);
        else if (strncmp(argv[i], "rally_rd_threshold_bytes=", 25) == 0)
            rd_threshold = strtoul(argv[i] + 25, NULL, 10);
        else if (strncmp(argv[i], "rally_host_group=", 17) == 0)
            host_group = atoi(argv[i] + 17);
        else if (strncmp(argv[i], "model_host_group=", 17) == 0)
            host_group = atoi(argv[i] + 17); /* the hosts are real: the model's alone */
    int rc = rally_init(&R, &argc, &argv);
    CHECK_RC(rc, "rally_init");
    rank = rally_rank(R);
    N = rally_world_size(R);
    int big = 0, late = 0;
    for (int i = 1; i < argc; i++) {
        late |= strcmp(argv[i], "late") == 0;
        big |= strcmp(argv[i], "big") == 0;
        exact |= strcmp(argv[i], "exact") == 0;
    }

    if (late) {
        uint64_t lseed = 777;
        CHECK_RC(rally_register_reducer(R, 7, 12, 1, reduce_comm12, NULL), "register");
        for (int k = 0; k < 8; k++) {
            if (rank == 1)
                usleep(500 * 1000);
            if (k % 4 == 0)
                allreduce_case(RALLY_FLOAT, RALLY_SUM, (12u << 20) / 4 + 5, lseed++);
            else if (k % 4 == 1)
                allreduce_case(RALLY_INT64, RALLY_SUM, (12u << 20) / 8 + 3, lseed++);
            else if (k % 4 == 2)
                custom_case(7, 1, (12u << 20) / 12 + 7, lseed++);
            else /* halving-doubling's size (up to 8 MiB) */
                custom_case(7, 1, (6u << 20) / 12 + 7, lseed++);
        }
        printf("rank %d of %d: %ld checks passed\n", rank, N, checks);
        return rally_finalize(R) == RALLY_OK ? 0 : 1;
    }

    /* sizes in bytes up to 64 KiB; element counts derived per dtype */
    size_t byte_sizes[] = {0, 1, 24, 1000, 4104, 65536};
    uint64_t seed = 12345;
    for (int dt = RALLY_INT8; dt <= RALLY_DOUBLE; dt++) {
        for (int op = RALLY_MAX; op <= RALLY_BITOR; op++) {
            if (op == RALLY_BITOR && dt >= RALLY_FLOAT)
                continue;
            for (size_t s = 0; s < sizeof byte_sizes / sizeof byte_sizes[0]; s++) {
                size_t count = byte_sizes[s] / model_dtype_size(dt);
                if (byte_sizes[s] == 1)
                    count = 1;
                if (byte_sizes[s] == 24)
                    count = (size_t)N * 3 + 1; /* odd, not divisible by N */
                if (byte_sizes[s] == 1000)
                    count = 1000 / model_dtype_size(dt) + (size_t)N - 1;
                allreduce_case(dt, op, count, seed++);
            }
        }
    }
    CHECK_RC(rally_register_reducer(R, 7, 12, 1, reduce_comm12, NULL), "register");
    CHECK_RC(rally_register_reducer(R, 8, 12, 0, reduce_affine12, NULL), "register");
    size_t ccounts[] = {0, 1, (size_t)N + 2, 5461, 21846};
    for (size_t i = 0; i < sizeof ccounts / sizeof ccounts[0]; i++) {
        custom_case(7, 1, ccounts[i], seed++);
        custom_case(8, 0, ccounts[i], seed++);
    }
    if (!exact) { /* MPI picks either operand of a tie (docs/determinism.md) */
        CHECK_RC(rally_register_reducer(R, 9, 12, 1, reduce_keep12, NULL), "register");
        tie_cases(seed);
        seed += 100;
    }
    broadcast_cases(seed++);
    allgather_cases(seed++);
    if (big) {
        allreduce_case(RALLY_FLOAT, RALLY_SUM, (16u << 20) / 4 + 3, seed++);
        allreduce_case(RALLY_INT64, RALLY_SUM, (16u << 20) / 8 + 1, seed++);
        /* large enough for the streamed copy back, at an odd alignment */
        allreduce_case_at(RALLY_FLOAT, RALLY_SUM, (5u << 20) / 4 + 7, seed++, 4, 0);
    }
    printf("rank %d of %d: %ld checks passed\n", rank, N, checks);
    return rally_finalize(R) == RALLY_OK ? 0 : 1;
}
