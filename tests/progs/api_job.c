/*
 * api_job.c — one job per public call of issue 10's API (rally_abort,
 * rally_attempt, rally_digest64, the checkpoint digest, kind names in
 * mismatch messages), each rank checking what it got against what it
 * computes itself, so no expected value is written down here.
 *
 *   rally-run -n N api_job MODE [R] [rally_key=value...]
 *
 *   abort R     rank R calls rally_abort(r, 3, "bad input line 17") in
 *               iteration 2, then writes DIR/aborted (DIR: rally_mock_sync,
 *               which run_job.sh gives every job); rank (R+1) % N waits for
 *               that file before its iteration-2 allreduce (its *next* call),
 *               the others are inside theirs (pending).  Every other rank
 *               prints "api_job: rank K got RALLY_EPEER: <msg>" and checks the
 *               message names rank R and the sentence; then that a later call
 *               is RALLY_ESTATE.  Rank R exits 3.
 *   attempt     prints "api_job: rank K attempt A" right after rally_init,
 *               before rally_load_checkpoint, and "resumed at version V" when
 *               load returns V > 0; four iterations of allreduce+checkpoint
 *               (pass rally_mock=... to librally_mock's api_job_mock).
 *   mismatch R  every rank checkpoints the same model, except rank R in
 *               version 2: every rank must get RALLY_EMISMATCH naming rank R
 *               with its digest and the others with theirs (rally_digest64,
 *               computed here).  Prints "api_job: rank K mismatch named".
 *   kinds R     in version 1 rank R calls rally_checkpoint while the others
 *               call an allreduce: every message must name the call by kind
 *               (never "?(").  Prints "api_job: rank K kinds named".
 *   digest      no job: rally_digest64 against xxHash's XXH3_64bits (seed 0)
 *               on a few lengths, and NULL with 0 bytes.
 *   report      rally_report_total, then four iterations of allreduce,
 *               rally_report and checkpoint; a bad key and a NaN are
 *               RALLY_EINVAL and spend nothing.  Alone (no launcher) every
 *               call is a no-op.  Prints "api_job: rank K reported".
 *   init        rally_init only: prints its status and message (config tests).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "rally/rally.h"

static rally_t *R;
static int rank, N;

static int fail(const char *what, int rc)
{
    printf("api_job: rank %d: %s returned %s: %s\n", rank, what, rally_strstatus(rc),
           rally_errmsg(R));
    fflush(stdout);
    return 1;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static const char *sync_dir(void)
{
    const char *d = getenv("RALLY_MOCK_SYNC");
    return d != NULL && d[0] != '\0' ? d : ".";
}

static int run_abort(int victim)
{
    char path[512];
    snprintf(path, sizeof path, "%s/aborted", sync_dir());
    const char *why = "bad input line 17";
    for (int it = 0;; it++) {
        double v = rank + it;
        if (it == 2 && rank == victim) {
            sleep_ms(200); /* the others are inside their allreduce by now, or will be */
            int rc = rally_abort(R, 3, why);
            if (rc != RALLY_OK)
                return fail("rally_abort", rc);
            FILE *f = fopen(path, "w");
            if (f != NULL)
                fclose(f);
            rc = rally_allreduce(R, &v, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
            printf("api_job: rank %d after its abort: %s: %s\n", rank, rally_strstatus(rc),
                   rally_errmsg(R));
            fflush(stdout);
            exit(rc == RALLY_ESTATE && strstr(rally_errmsg(R), why) ? 3 : 1);
        }
        if (it == 2 && rank == (victim + 1) % N)
            for (int i = 0; i < 20000 && access(path, F_OK) != 0; i++)
                sleep_ms(1);
        int rc = rally_allreduce(R, &v, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
        if (rc == RALLY_OK)
            continue;
        char want[256];
        snprintf(want, sizeof want, "rank %d failed: %s (rally_abort code 3)", victim, why);
        printf("api_job: rank %d got %s: %s\n", rank, rally_strstatus(rc), rally_errmsg(R));
        if (rc != RALLY_EPEER || strstr(rally_errmsg(R), want) == NULL) {
            printf("api_job: rank %d wanted RALLY_EPEER with '%s'\n", rank, want);
            return 1;
        }
        rc = rally_allreduce(R, &v, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
        if (rc != RALLY_ESTATE || strstr(rally_errmsg(R), want) == NULL)
            return fail("the call after RALLY_EPEER", rc);
        printf("api_job: rank %d saw the abort\n", rank);
        return 0;
    }
}

static int run_attempt(void)
{
    printf("api_job: rank %d attempt %d\n", rank, rally_attempt(R));
    fflush(stdout);
    void *g = NULL;
    uint64_t gn = 0, version = 0;
    int rc = rally_load_checkpoint(R, &g, &gn, NULL, NULL, &version);
    if (rc != RALLY_OK)
        return fail("rally_load_checkpoint", rc);
    double model = 0;
    if (version > 0) {
        if (gn != sizeof model)
            return fail("a checkpoint of the wrong size", RALLY_EPROTO);
        memcpy(&model, g, sizeof model);
        printf("api_job: rank %d resumed at version %" PRIu64 " (attempt %d)\n", rank, version,
               rally_attempt(R));
    }
    rally_free(g);
    for (uint64_t it = version; it < 4; it++) {
        double v = (double)rank + (double)it;
        if ((rc = rally_allreduce(R, &v, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL)) != RALLY_OK)
            return fail("rally_allreduce", rc);
        model += v;
        if ((rc = rally_checkpoint(R, &model, sizeof model, NULL, 0)) != RALLY_OK)
            return fail("rally_checkpoint", rc);
    }
    if (rank == 0)
        printf("api_job: model %.17g\n", model);
    return 0;
}

static int run_report(void)
{
    void *g = NULL;
    uint64_t gn = 0, version = 0;
    int rc = rally_load_checkpoint(R, &g, &gn, NULL, NULL, &version);
    if (rc != RALLY_OK)
        return fail("rally_load_checkpoint", rc);
    rally_free(g);
    if ((rc = rally_report_total(R, 4)) != RALLY_OK)
        return fail("rally_report_total", rc);
    for (int it = 0; it < 4; it++) {
        double v = (double)rank + it;
        if ((rc = rally_allreduce(R, &v, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL)) != RALLY_OK)
            return fail("rally_allreduce", rc);
        if ((rc = rally_report(R, "objective", v)) != RALLY_OK)
            return fail("rally_report", rc);
        if ((rc = rally_report(R, "bad key", v)) != RALLY_EINVAL)
            return fail("rally_report with a space in its key", rc);
        if ((rc = rally_report(R, "loss", NAN)) != RALLY_EINVAL)
            return fail("rally_report of a NaN", rc);
        if ((rc = rally_checkpoint(R, &v, sizeof v, NULL, 0)) != RALLY_OK)
            return fail("rally_checkpoint", rc);
    }
    printf("api_job: rank %d reported\n", rank);
    return 0;
}

static int run_mismatch(int odd)
{
    double model[64];
    void *g;
    uint64_t gn, version;
    int rc = rally_load_checkpoint(R, &g, &gn, NULL, NULL, &version);
    if (rc != RALLY_OK)
        return fail("rally_load_checkpoint", rc);
    for (int v = 1; v <= 3; v++) {
        for (int i = 0; i < 64; i++)
            model[i] = v * 100 + i;
        /* every rank knows both models: the majority's and rank odd's */
        uint64_t same = rally_digest64(model, sizeof model);
        model[7] += 0.5;
        uint64_t other = rally_digest64(model, sizeof model);
        if (!(v == 2 && rank == odd))
            model[7] -= 0.5;
        rc = rally_checkpoint(R, model, sizeof model, NULL, 0);
        if (v != 2) {
            if (rc != RALLY_OK)
                return fail("rally_checkpoint", rc);
            continue;
        }
        printf("api_job: rank %d got %s: %s\n", rank, rally_strstatus(rc), rally_errmsg(R));
        /* same: the majority's digest; other: rank odd's */
        char a[64], b[64];
        snprintf(a, sizeof a, "rank %d digest %016" PRIx64, odd, other);
        snprintf(b, sizeof b, "digest %016" PRIx64, same);
        if (rc != RALLY_EMISMATCH || strstr(rally_errmsg(R), a) == NULL ||
            strstr(rally_errmsg(R), b) == NULL || same == other) {
            printf("api_job: rank %d wanted RALLY_EMISMATCH naming '%s' and '%s'\n", rank, a, b);
            return 1;
        }
        printf("api_job: rank %d mismatch named\n", rank);
        return 0;
    }
    printf("api_job: rank %d: every checkpoint succeeded; the odd model went unnoticed\n", rank);
    return 1;
}

static int run_kinds(int odd)
{
    void *g;
    uint64_t gn, version;
    int rc = rally_load_checkpoint(R, &g, &gn, NULL, NULL, &version);
    if (rc != RALLY_OK)
        return fail("rally_load_checkpoint", rc);
    double model = 1;
    if ((rc = rally_checkpoint(R, &model, sizeof model, NULL, 0)) != RALLY_OK)
        return fail("rally_checkpoint", rc);
    if (rank == odd)
        rc = rally_checkpoint(R, &model, sizeof model, NULL, 0);
    else
        rc = rally_allreduce(R, &model, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
    printf("api_job: rank %d got %s: %s\n", rank, rally_strstatus(rc), rally_errmsg(R));
    if (rc == RALLY_OK || strstr(rally_errmsg(R), "?(") != NULL)
        return 1;
    if (rc == RALLY_EMISMATCH && strstr(rally_errmsg(R), "rally_checkpoint") == NULL)
        return 1;
    printf("api_job: rank %d kinds named\n", rank);
    return 0;
}

static int run_digest(void)
{
    unsigned char b[1000];
    for (size_t i = 0; i < sizeof b; i++)
        b[i] = (unsigned char)(i * 131 + 7);
    static const size_t lens[] = {0, 1, 3, 16, 17, 128, 129, 240, 241, 1000};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
        if (rally_digest64(b, lens[k]) != (uint64_t)XXH3_64bits(b, lens[k])) {
            printf("api_job: rally_digest64 of %zu bytes is not XXH3_64bits\n", lens[k]);
            return 1;
        }
    if (rally_digest64(NULL, 0) != (uint64_t)XXH3_64bits(b, 0)) {
        printf("api_job: rally_digest64(NULL, 0) is not XXH3_64bits of nothing\n");
        return 1;
    }
    printf("api_job: digest matches XXH3_64bits\n");
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "digest") == 0)
        return run_digest();
    int rc = rally_init(&R, &argc, &argv);
    if (strcmp(mode, "init") == 0) {
        printf("api_job: init %s: %s\n", rally_strstatus(rc), rally_errmsg(R));
        rally_finalize(R);
        return rc == RALLY_OK ? 0 : 1;
    }
    if (rc != RALLY_OK) {
        fprintf(stderr, "api_job: rally_init: %s\n", rally_errmsg(R));
        rally_finalize(R);
        return 1;
    }
    rank = rally_rank(R);
    N = rally_world_size(R);
    int arg = argc > 2 ? atoi(argv[2]) : 0;
    int bad;
    if (strcmp(mode, "abort") == 0)
        bad = run_abort(arg);
    else if (strcmp(mode, "attempt") == 0)
        bad = run_attempt();
    else if (strcmp(mode, "mismatch") == 0)
        bad = run_mismatch(arg);
    else if (strcmp(mode, "kinds") == 0)
        bad = run_kinds(arg);
    else if (strcmp(mode, "report") == 0)
        bad = run_report();
    else
        bad = fail("an unknown mode", RALLY_EINVAL);
    fflush(stdout);
    if (!bad && (strcmp(mode, "attempt") == 0 || strcmp(mode, "report") == 0)) { /* succeed */
        if ((rc = rally_finalize(R)) != RALLY_OK)
            return fail("rally_finalize", rc);
        return 0;
    }
    rally_finalize(R);
    return bad;
}
