/*
 * chatty.c — a rally job that floods its output at a point the test picks,
 * for the launcher's slow-reader test (tests/jobs/launch_output_test.sh).
 *
 *   rally-run -n N chatty ITERS LINES SYNC_DIR FLOODER PAUSE_MS [rally_key=value...]
 *
 * Per iteration: an allreduce SUM of a vector derived from the model and the
 * rank, which the model then follows, and a checkpoint.  After the first
 * checkpoint (the job runs: every worker joined and sends heartbeats) rank
 * FLOODER prints LINES lines of 100 bytes through the tracker
 * (rally_tracker_print: rally-run writes them from inside the tracker's
 * handling of frames) and creates SYNC_DIR/flooded; from then on every
 * rank sleeps PAUSE_MS after each checkpoint (the job keeps running, with
 * its heartbeats watched, for as long as the test needs).  Rank 0's last line is
 * "result: model_digest=<hex>" (FNV-1a of the model's bytes), the same for
 * any run that computed the same model.  Once rally_finalize returned (the
 * tracker answered), each rank creates SYNC_DIR/finished.RANK.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rally/rally.h"

#define DIM 256

static rally_t *R;

static void check(int rc, const char *what)
{
    if (rc == RALLY_OK)
        return;
    fprintf(stderr, "chatty: %s failed: %s (%s)\n", what, rally_errmsg(R), rally_strstatus(rc));
    exit(1);
}

static uint64_t digest(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

/* Creates sync/name.  0 or -1. */
static int touch(const char *sync, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", sync, name);
    FILE *f = fopen(path, "w");
    if (f == NULL || fclose(f) != 0) {
        fprintf(stderr, "chatty: cannot create %s\n", path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    check(rally_init(&R, &argc, &argv), "rally_init");
    if (argc < 6) {
        fprintf(stderr, "usage: chatty ITERS LINES SYNC_DIR FLOODER PAUSE_MS\n");
        return 2;
    }
    int iters = atoi(argv[1]), lines = atoi(argv[2]), rank = rally_rank(R);
    int flooder = atoi(argv[4]), pause_ms = atoi(argv[5]);
    const char *sync = argv[3];
    double model[DIM], v[DIM];
    for (int i = 0; i < DIM; i++)
        model[i] = 1.0 / (i + 1);
    void *g = NULL;
    uint64_t gn = 0, version = 0;
    check(rally_load_checkpoint(R, &g, &gn, NULL, NULL, &version), "rally_load_checkpoint");
    if (version > 0 && gn == sizeof model)
        memcpy(model, g, sizeof model);
    rally_free(g);
    for (int it = (int)version; it < iters; it++) {
        for (int i = 0; i < DIM; i++)
            v[i] = model[i] * 0.5 + (double)(rank + 1) / (double)(it + i + 2);
        check(rally_allreduce(R, v, DIM, RALLY_DOUBLE, RALLY_SUM, NULL, NULL), "allreduce");
        for (int i = 0; i < DIM; i++)
            model[i] = v[i] / rally_world_size(R);
        check(rally_checkpoint(R, model, sizeof model, NULL, 0), "rally_checkpoint");
        if (it == 0 && rank == flooder) {
            char line[128];
            for (int k = 0; k < lines; k++) {
                snprintf(line, sizeof line, "chatter %07d %s", k,
                         "................................................................"
                         "..................");
                check(rally_tracker_print(R, line), "rally_tracker_print");
            }
            if (touch(sync, "flooded") != 0)
                return 1;
        }
        if (it > 0 || rank == flooder)
            usleep((useconds_t)pause_ms * 1000);
    }
    if (rank == 0)
        printf("result: model_digest=%016" PRIx64 "\n", digest(model, sizeof model));
    fflush(stdout);
    if (rally_finalize(R) != RALLY_OK)
        return 1;
    char name[32];
    snprintf(name, sizeof name, "finished.%d", rank);
    return touch(sync, name) == 0 ? 0 : 1;
}
