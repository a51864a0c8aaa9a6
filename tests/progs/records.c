/*
 * records.c — a job whose local model is records (rally_set_local_records),
 * for tests/jobs/elastic_test.sh:
 *
 *   rally-run -n N records IDS ITERS [grow=K] [pause=MS] [gate=K,PATH] [hold=PATH]
 *       [rally_key=value ...]
 *
 * Ids 0..IDS-1; rank r of N owns id when id * N / IDS == r.  Record id
 * holds (id % 5) + 1 words.  Each iteration sums every record's first word
 * over the job (an exact u64 allreduce) and updates every word from that
 * sum, the iteration and the word itself, then checkpoints the sum as the
 * global model and the records as the local one.  Nothing depends on N, so
 * every run ends with the same bits whatever the world size and however it
 * changes, as long as every record lives on exactly one rank: the check
 * that moving records loses and doubles none.  After each load every rank
 * checks that it holds exactly the ids it owns, in order.  On
 * RALLY_ERESIZED it loads again.  grow=K: rank 0 sends its launcher
 * SIGUSR2 at iteration K (rally-run --max-workers takes a worker in);
 * pause=MS: each iteration sleeps that long first; gate=K,PATH: rank 0
 * stops before iteration K, says "records: at the gate" and goes on once
 * PATH exists (a test takes several workers in at one checkpoint so);
 * hold=PATH: before any iteration, rank 0 of the first attempt waits while
 * PATH exists, saying "records: held" first (a test holds the job between
 * two checkpoints while workers register to join, whenever that is).
 * Rank 0 prints "records: result digest=HEX ids=N" at the end.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rally/rally.h"

static uint64_t ids;

static int owner(uint64_t id, int world, void *arg)
{
    (void)arg;
    return (int)(id * (uint64_t)world / ids);
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ULL;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dULL;
    return x ^ (x >> 33);
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint32_t nwords(uint64_t id)
{
    return (uint32_t)(id % 5) + 1;
}

/* The records of ids [lo, hi) in their first state, or as loaded. */
struct recs {
    unsigned char *b;
    size_t n, cap;
};

/* Rank 0 at the gate: says so, then waits (a minute at most) for path. */
static int gated(const char *path)
{
    printf("records: at the gate\n");
    fflush(stdout);
    for (int i = 0; i < 6000; i++) {
        if (access(path, F_OK) == 0)
            return 1;
        usleep(10000);
    }
    fprintf(stderr, "records: %s never came\n", path);
    return 0;
}

/* Rank 0 held: says so, then waits (a minute at most) while path exists. */
static int held(const char *path)
{
    printf("records: held\n");
    fflush(stdout);
    for (int i = 0; i < 6000; i++) {
        if (access(path, F_OK) != 0)
            return 1;
        usleep(10000);
    }
    fprintf(stderr, "records: %s never went away\n", path);
    return 0;
}

static int fail(rally_t *r, const char *what, int rc)
{
    fprintf(stderr, "records: rank %d: %s: %s (%s)\n", rally_rank(r), what, rally_errmsg(r),
            rally_strstatus(rc));
    return rc;
}

int main(int argc, char **argv)
{
    rally_t *r;
    int rc = rally_init(&r, &argc, &argv);
    if (rc != RALLY_OK || argc < 3) {
        fprintf(stderr, "records: %s\n", rc != RALLY_OK ? rally_errmsg(r) : "usage");
        rally_finalize(r);
        return 1;
    }
    ids = strtoull(argv[1], NULL, 10);
    uint64_t iters = strtoull(argv[2], NULL, 10);
    int64_t grow_at = -1, pause_ms = 0, gate_at = -1;
    const char *gate = NULL, *hold = NULL;
    for (int i = 3; i < argc; i++) {
        if (strncmp(argv[i], "grow=", 5) == 0)
            grow_at = atoll(argv[i] + 5);
        else if (strncmp(argv[i], "pause=", 6) == 0)
            pause_ms = atoll(argv[i] + 6);
        else if (strncmp(argv[i], "gate=", 5) == 0 && strchr(argv[i], ',') != NULL) {
            gate_at = atoll(argv[i] + 5);
            gate = strchr(argv[i], ',') + 1;
        } else if (strncmp(argv[i], "hold=", 5) == 0)
            hold = argv[i] + 5;
    }
    if ((rc = rally_set_local_records(r, owner, NULL)) != RALLY_OK)
        return fail(r, "rally_set_local_records", rc);
    struct recs s = {0};
    uint64_t g = 0;
    int asked = 0;
    for (;;) {
        int rank = rally_rank(r), world = rally_world_size(r);
        void *gb = NULL, *lb = NULL;
        uint64_t gn = 0, ln = 0, version = 0;
        if ((rc = rally_load_checkpoint(r, &gb, &gn, &lb, &ln, &version)) == RALLY_ERESIZED)
            continue;
        if (rc != RALLY_OK)
            return fail(r, "rally_load_checkpoint", rc);
        uint64_t lo = (ids * (uint64_t)rank + world - 1) / world, hi = (ids * (uint64_t)(rank + 1) + world - 1) / world;
        s.n = 0;
        if (version == 0) { /* the first state of this rank's records */
            for (uint64_t id = lo; id < hi; id++) {
                size_t need = s.n + 12 + 8 * (size_t)nwords(id);
                if (need > s.cap && (s.b = realloc(s.b, s.cap = 2 * need)) == NULL)
                    return 1;
                put64(s.b + s.n, id);
                uint32_t w = nwords(id);
                for (int i = 0; i < 4; i++)
                    s.b[s.n + 8 + i] = (unsigned char)((8 * w) >> (8 * i));
                for (uint32_t i = 0; i < w; i++)
                    put64(s.b + s.n + 12 + 8 * i, mix(id * 977 + i));
                s.n = need;
            }
        } else { /* exactly the ids this rank owns, in order */
            if (ln > s.cap && (s.b = realloc(s.b, s.cap = ln)) == NULL)
                return 1;
            memcpy(s.b, lb, ln);
            s.n = ln;
            memcpy(&g, gb, 8);
            uint64_t want = lo;
            for (size_t at = 0; at < s.n;) {
                uint64_t id = get64(s.b + at);
                uint32_t len = (uint32_t)get64(s.b + at + 8) & 0xffffffffu;
                if (id != want || len != 8 * nwords(id)) {
                    fprintf(stderr, "records: rank %d of %d holds id %" PRIu64 " (%u bytes) where "
                            "id %" PRIu64 " was due\n", rank, world, id, len, want);
                    return 1;
                }
                want++;
                at += 12 + len;
            }
            if (want != hi) {
                fprintf(stderr, "records: rank %d of %d holds ids up to %" PRIu64 ", owns up to %"
                        PRIu64 "\n", rank, world, want, hi);
                return 1;
            }
        }
        rally_free(gb);
        rally_free(lb);
        for (uint64_t it = version; it < iters; it++) {
            if ((int64_t)it == grow_at && rank == 0 && !asked && rally_attempt(r) == 0) {
                kill(getppid(), SIGUSR2);
                asked = 1;
            }
            if ((int64_t)it == gate_at && rank == 0 && rally_attempt(r) == 0) {
                if (!gated(gate))
                    return 1;
                gate_at = -1; /* once */
            }
            if (hold && rank == 0 && rally_attempt(r) == 0 && access(hold, F_OK) == 0 &&
                !held(hold))
                return 1;
            if (pause_ms > 0)
                usleep((useconds_t)pause_ms * 1000);
            uint64_t sum = 0;
            for (size_t at = 0; at < s.n;) {
                uint32_t len = (uint32_t)get64(s.b + at + 8) & 0xffffffffu;
                sum += get64(s.b + at + 12);
                at += 12 + len;
            }
            if ((rc = rally_allreduce(r, &sum, 1, RALLY_UINT64, RALLY_SUM, NULL, NULL)) != RALLY_OK)
                break;
            g = sum;
            for (size_t at = 0; at < s.n;) {
                uint32_t len = (uint32_t)get64(s.b + at + 8) & 0xffffffffu;
                for (uint32_t i = 0; i < len / 8; i++) {
                    unsigned char *w = s.b + at + 12 + 8 * i;
                    put64(w, mix(get64(w) ^ g ^ (it << 32) ^ i));
                }
                at += 12 + len;
            }
            if ((rc = rally_checkpoint(r, &g, 8, s.b, s.n)) != RALLY_OK)
                break;
        }
        if (rc == RALLY_ERESIZED)
            continue;
        if (rc != RALLY_OK)
            return fail(r, "an iteration", rc);
        break;
    }
    uint64_t d = 0, n = 0;
    for (size_t at = 0; at < s.n; n++) {
        uint32_t len = (uint32_t)get64(s.b + at + 8) & 0xffffffffu;
        for (uint32_t i = 0; i < len / 8; i++)
            d += mix(get64(s.b + at + 12 + 8 * i) + get64(s.b + at));
        at += 12 + len;
    }
    uint64_t both[2] = {d, n};
    if ((rc = rally_allreduce(r, both, 2, RALLY_UINT64, RALLY_SUM, NULL, NULL)) != RALLY_OK)
        return fail(r, "the last allreduce", rc);
    if (rally_rank(r) == 0)
        printf("records: result digest=%016" PRIx64 " ids=%" PRIu64 "\n", both[0] ^ g, both[1]);
    free(s.b);
    return rally_finalize(r) == RALLY_OK ? 0 : 1;
}
