/*
 * tier_hold.c — a job with a global and a local model whose second-tier
 * copy (rally_snapshot_copy) can be held at a chosen version, so that a
 * test makes the job's retention, commits or deaths happen while that
 * copy is outstanding, with no timing to hope for (tests/jobs/tier2_test.sh).
 *
 *   rally-run -n N ... tier_hold ITERS [hold=RANK,VERSION,FILE] [gate=G,FILE] [nolocal]
 *                                [rally_...]
 *
 * Every iteration is one allreduce and one checkpoint of a 256 KiB global
 * model and a 64 KiB local model per rank (none with nolocal: an elastic
 * job's workers change only with records or no local models).  A change
 * of the workers (RALLY_ERESIZED) loads the checkpoint again.  With
 * gate=, rank 0 says "tier_hold: at the gate" before iteration G and goes
 * on once FILE exists.  With hold=, the rank RANK's
 * copier stops before it writes its first file of the snapshot of VERSION
 * into the second tier (the snapshot layer's system-call table,
 * src/snapshot/sys.h: its openat) — rank 0 has then read global.bin from
 * the first tier and not yet local-0000.bin — says
 *   "tier_hold: rank R holds its copy of version V"
 * on stderr, and goes on once FILE exists.  Rank 0 prints
 * "result: model_digest=HEX" at the end.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rally/rally.h"
#include "snapshot/sys.h"

#define GLOBAL_NBYTES (256u << 10)
#define LOCAL_NBYTES (64u << 10)

static int hold_rank = -1, held, me = -1;
static unsigned long long hold_version;
static char hold_dir[32], hold_file[4096];

/* Until path exists (2 min at most: the test's own bound ends it first). */
static void wait_for(const char *path)
{
    struct timespec nap = {0, 20000000L};
    for (int i = 0; i < 6000 && access(path, F_OK) != 0; i++)
        nanosleep(&nap, NULL);
}

/* The copier's openat: the held rank's first temporary in the snapshot
 * directory of the held version waits for the file.  Only the copier
 * writes there with this run's copy root (RALLY_SNAPSHOT_COPY). */
static int hold_openat(int dirfd, const char *name, int flags, mode_t mode)
{
    const char *copy = getenv("RALLY_SNAPSHOT_COPY");
    char fdpath[64], where[4096];
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", dirfd);
    ssize_t n = readlink(fdpath, where, sizeof where - 1);
    if (!held && me == hold_rank && copy != NULL && n > 0 && name[0] == '.' &&
        (flags & O_CREAT)) {
        where[n] = '\0';
        size_t lc = strlen(copy), lw = strlen(where), ld = strlen(hold_dir);
        if (strncmp(where, copy, lc) == 0 && lw >= ld && strcmp(where + lw - ld, hold_dir) == 0) {
            held = 1;
            fprintf(stderr, "tier_hold: rank %d holds its copy of version %llu\n", me,
                    hold_version);
            fflush(stderr);
            wait_for(hold_file);
        }
    }
    return rally__snap_sys_real.openat(dirfd, name, flags, mode);
}

static int fail(rally_t *r, const char *what, int rc)
{
    fprintf(stderr, "tier_hold: rank %d: %s: %s: %s\n", me, what, rally_strstatus(rc),
            rally_errmsg(r));
    return 1;
}

int main(int argc, char **argv)
{
    rally_t *r = NULL;
    int rc = rally_init(&r, &argc, &argv);
    if (rc != RALLY_OK)
        return fail(r, "rally_init", rc);
    if (argc < 2) {
        fprintf(stderr, "usage: tier_hold ITERS [hold=RANK,VERSION,FILE] [gate=G,FILE] "
                        "[nolocal]\n");
        return 2;
    }
    int iters = atoi(argv[1]), gate = -1, local = 1;
    const char *gate_file = "";
    for (int a = 2; a < argc; a++) {
        unsigned long long hv = 0;
        int used = 0;
        if (sscanf(argv[a], "hold=%d,%llu,%n", &hold_rank, &hv, &used) == 2 && used > 0) {
            snprintf(hold_dir, sizeof hold_dir, "/snap-%08llu", hv);
            hold_version = hv;
            snprintf(hold_file, sizeof hold_file, "%s", argv[a] + used);
            rally__snap_sys.openat = hold_openat;
        } else if (sscanf(argv[a], "gate=%d,%n", &gate, &used) == 1 && used > 0) {
            gate_file = argv[a] + used;
        } else if (strcmp(argv[a], "nolocal") == 0) {
            local = 0;
        }
    }
    unsigned char *g = malloc(GLOBAL_NBYTES), *l = malloc(LOCAL_NBYTES);
    if (g == NULL || l == NULL)
        return 1;
    uint64_t v = 0;
    for (;;) { /* a change of the workers comes back here */
        void *pg = NULL, *pl = NULL;
        uint64_t ng = 0, nl = 0;
        if ((rc = rally_load_checkpoint(r, &pg, &ng, local ? &pl : NULL, local ? &nl : NULL,
                                        &v)) != RALLY_OK)
            return fail(r, "rally_load_checkpoint", rc);
        me = rally_rank(r);
        for (size_t i = 0; i < GLOBAL_NBYTES; i++)
            g[i] = v > 0 && ng == GLOBAL_NBYTES ? ((unsigned char *)pg)[i] : (unsigned char)(i * 131u);
        for (size_t i = 0; i < LOCAL_NBYTES; i++)
            l[i] = v > 0 && nl == LOCAL_NBYTES ? ((unsigned char *)pl)[i]
                                               : (unsigned char)(i * 7u + (unsigned)me);
        rally_free(pg);
        rally_free(pl);
        for (; v < (uint64_t)iters; v++) {
            if ((int)v == gate && me == 0) {
                fprintf(stderr, "tier_hold: at the gate\n");
                fflush(stderr);
                wait_for(gate_file);
            }
            uint64_t x = v + 1;
            if ((rc = rally_allreduce(r, &x, 1, RALLY_UINT64, RALLY_SUM, NULL, NULL)) == RALLY_OK) {
                for (size_t i = 0; i < GLOBAL_NBYTES; i += 4096)
                    g[i] = (unsigned char)(g[i] + x);
                l[v % LOCAL_NBYTES] ^= (unsigned char)x;
                rc = rally_checkpoint(r, g, GLOBAL_NBYTES, local ? l : NULL,
                                      local ? LOCAL_NBYTES : 0);
            }
            if (rc != RALLY_OK)
                break;
        }
        if (rc == RALLY_ERESIZED)
            continue;
        if (rc != RALLY_OK)
            return fail(r, "an iteration", rc);
        break;
    }
    if (me == 0)
        printf("result: model_digest=%016llx\n",
               (unsigned long long)rally_digest64(g, GLOBAL_NBYTES));
    fflush(stdout);
    if ((rc = rally_finalize(r)) != RALLY_OK)
        return fail(r, "rally_finalize", rc);
    free(g);
    free(l);
    return 0;
}
