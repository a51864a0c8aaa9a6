/*
 * flags.c — a job that checks the checkpoint commit hook and the request
 * bits its acknowledgement carries (src/robust/store.c).
 *
 *   rally-run -n N flags ITERS K BIT [rally_mock=...]
 *
 * Each rank subscribes a commit hook, loads, and runs ITERS versions of two
 * allreduces and a checkpoint with a global model (a double every rank
 * agrees on) and a local one (rank * 1000 + version).  The last rank
 * requests BIT just before the checkpoint that makes version K.  Every hook
 * call is checked as it comes: versions follow each other by one, the
 * agreed flags are BIT at version K and 0 at every other, the store's read
 * interface gives the committed global model (compared with the caller's
 * once the call returns; lent, then released) and the local model of this rank and of its ring
 * predecessor (held as a replica), and refuses the version before.  At the
 * end each rank checks it saw the commits up to ITERS and prints
 *   "flags_ok rank=R first=V flags=F commits=C"
 * (V the first version committed in this process — K for a worker restarted
 * after version K, whose acknowledgement is served from the others' cache —
 * and F the flags it saw there); any failure prints "FLAGS_BAD ..." and
 * exits 1.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "rally/rally.h"

static rally_t *R;
static int rank, N;
static uint64_t K, BIT;

struct seen {
    uint64_t first, last, first_flags;
    int n, bad;
    double global; /* the committed global model, as read in the hook */
};

static void bad(struct seen *s, const char *what, uint64_t version)
{
    printf("FLAGS_BAD rank=%d version=%" PRIu64 ": %s\n", rank, version, what);
    s->bad = 1;
}

/* Reads the committed models of version v through the engine's read
 * interface (lend, release). */
static void read_back(struct seen *s, uint64_t v)
{
    struct rally__engine *en = rally__api_engine(R);
    const void *p;
    uint64_t n;
    if (rally__engine.lend(en, v, -1, &p, &n) != RALLY_OK || n != sizeof(double))
        bad(s, "no global model of the committed version", v);
    else {
        memcpy(&s->global, p, sizeof s->global);
        rally__engine.release(en, p);
    }
    if (v > 1 && rally__engine.lend(en, v - 1, -1, &p, &n) == RALLY_OK) {
        bad(s, "the global model of the version before is still readable", v);
        rally__engine.release(en, p);
    }
    for (int j = 0; j < (N > 1 ? 2 : 1); j++) {
        int q = (rank - j + N) % N;
        int64_t want = (int64_t)q * 1000 + (int64_t)v, got;
        if (rally__engine.lend(en, v, q, &p, &n) != RALLY_OK) {
            bad(s, j ? "the predecessor's local model is not held" : "the own local model is wrong",
                v);
            continue;
        }
        if (n != sizeof got || (memcpy(&got, p, sizeof got), got != want))
            bad(s, j ? "the predecessor's local model is wrong" : "the own local model is wrong",
                v);
        rally__engine.release(en, p);
    }
    if (!rally__engine.has_local(en))
        bad(s, "the engine says the job passes no local models", v);
}

static void hook(void *arg, uint64_t version, uint64_t flags)
{
    struct seen *s = arg;
    read_back(s, version);
    uint64_t want = version == K ? BIT : 0;
    if (flags != want || (s->n > 0 && version != s->last + 1)) {
        printf("FLAGS_BAD rank=%d version=%" PRIu64 " flags=%" PRIu64 " (want %" PRIu64
               ", previous version %" PRIu64 ")\n",
               rank, version, flags, want, s->last);
        s->bad = 1;
    }
    if (s->n++ == 0) {
        s->first = version;
        s->first_flags = flags;
    }
    s->last = version;
}

static void check(int rc, const char *what)
{
    if (rc != RALLY_OK) {
        fprintf(stderr, "flags: rank %d: %s failed: %s\n", rank, what, rally_errmsg(R));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    check(rally_init(&R, &argc, &argv), "rally_init");
    if (argc != 4) {
        fprintf(stderr, "usage: flags ITERS K BIT\n");
        return 2;
    }
    uint64_t iters = strtoull(argv[1], NULL, 10);
    K = strtoull(argv[2], NULL, 10);
    BIT = strtoull(argv[3], NULL, 10);
    rank = rally_rank(R);
    N = rally_world_size(R);
    struct seen s = {0};
    struct rally__engine *en = rally__api_engine(R);
    struct rally__subscriber sub = {hook, NULL, NULL, &s, NULL};
    check(rally__engine.subscribe(en, &sub), "subscribe");
    double model = 0;
    void *g = NULL, *l = NULL;
    uint64_t gn = 0, ln = 0, version = 0;
    check(rally_load_checkpoint(R, &g, &gn, &l, &ln, &version), "load_checkpoint");
    if (version > 0) {
        if (gn == sizeof model)
            memcpy(&model, g, sizeof model);
        if (gn != sizeof model || model != s.global)
            bad(&s, "load returned another global model than the hook read", version);
    }
    rally_free(g);
    rally_free(l);
    for (uint64_t it = version; it < iters; it++) {
        double x = rank + 1.0 + model;
        check(rally_allreduce(R, &x, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL), "allreduce");
        int64_t m = (int64_t)it;
        check(rally_allreduce(R, &m, 1, RALLY_INT64, RALLY_MAX, NULL, NULL), "allreduce");
        model = x / N;
        int64_t local = (int64_t)rank * 1000 + (int64_t)(it + 1);
        if (rank == N - 1 && it + 1 == K)
            rally__engine.request(en, BIT);
        check(rally_checkpoint(R, &model, sizeof model, &local, sizeof local), "checkpoint");
        if (s.global != model)
            bad(&s, "the hook read another global model than the checkpoint stored", it + 1);
    }
    if (s.n == 0 || s.last != iters)
        printf("FLAGS_BAD rank=%d saw %d commits, the last %" PRIu64 " (want up to %" PRIu64 ")\n",
               rank, s.n, s.last, iters);
    else if (!s.bad)
        printf("flags_ok rank=%d first=%" PRIu64 " flags=%" PRIu64 " commits=%d\n", rank, s.first,
               s.first_flags, s.n);
    fflush(stdout);
    check(rally_finalize(R), "finalize");
    return s.bad || s.n == 0 || s.last != iters;
}
