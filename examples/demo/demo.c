/*
 * demo.c — the smallest real rally job: every worker makes numbers from its
 * own seed, the job sums them with an allreduce, rank 2 (or the last rank)
 * broadcasts a message, and everyone gathers every worker's host name.
 * Rank 0 prints a digest of the summed vector; run it twice and the digest
 * is the same, bit for bit.
 *
 *   rally-run -n 4 ./rally-demo [count]
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rally/rally.h"

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static int fail(rally_t *r, const char *what, int rc)
{
    fprintf(stderr, "demo: %s failed: %s (%s)\n", what, rally_errmsg(r), rally_strstatus(rc));
    rally_finalize(r);
    return 1;
}

int main(int argc, char **argv)
{
    rally_t *r;
    int rc = rally_init(&r, &argc, &argv);
    if (rc != RALLY_OK)
        return fail(r, "rally_init", rc);
    int rank = rally_rank(r), world = rally_world_size(r);
    size_t count = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;

    double *v = malloc(count * sizeof *v);
    if (v == NULL)
        return fail(r, "malloc", RALLY_ENOMEM);
    for (size_t i = 0; i < count; i++) { /* magnitudes from 1e-6 to 1e6: order matters */
        uint64_t h = mix((uint64_t)rank << 40 ^ i);
        v[i] = ldexp((double)(h >> 11) / 9007199254740992.0, (int)(h % 41) - 20);
    }
    if ((rc = rally_allreduce(r, v, count, RALLY_DOUBLE, RALLY_SUM, NULL, NULL)) != RALLY_OK)
        return fail(r, "allreduce", rc);
    uint64_t digest = 1469598103934665603u;
    for (size_t i = 0; i < count; i++) {
        uint64_t b;
        memcpy(&b, &v[i], sizeof b);
        digest = mix(digest ^ b);
    }

    int root = world > 2 ? 2 : world - 1;
    char msg[64] = "";
    if (rank == root)
        snprintf(msg, sizeof msg, "hello from rank %d of %d", rank, world);
    if ((rc = rally_broadcast(r, msg, sizeof msg, root)) != RALLY_OK)
        return fail(r, "broadcast", rc);

    char host[64] = "";
    rally_processor_name(r, host, sizeof host);
    char *hosts = calloc((size_t)world, sizeof host);
    if (hosts == NULL || (rc = rally_allgather(r, host, sizeof host, hosts)) != RALLY_OK)
        return fail(r, "allgather", rc);

    printf("rank %d of %d on %s: got \"%s\"\n", rank, world, host, msg);
    if (rank == 0)
        printf("sum of %zu doubles over %d workers: digest %016" PRIx64 "\n", count, world, digest);
    free(hosts);
    free(v);
    rc = rally_finalize(r);
    return rc == RALLY_OK ? 0 : 1;
}
