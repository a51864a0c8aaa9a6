/*
 * addr_hold.c — a worker that holds its job wired until the test says go,
 * so a test can look at its connections (tests/jobs/addr_netns_test.sh).
 *
 *   addr_hold DIR COUNT
 *
 * Sums COUNT doubles from every rank (an allreduce), prints rank 0's digest
 * of the sum ("addr_hold: digest X"), creates DIR/ready.R (R: its rank),
 * waits up to 60 s for DIR/go, runs one more allreduce over the same links
 * and finalizes.  Exit 0 on success, 1 with a line naming the failure.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rally/rally.h"

static int fail(rally_t *r, const char *what, int rc)
{
    fprintf(stderr, "addr_hold: %s failed: %s (%s)\n", what, r ? rally_errmsg(r) : "",
            rally_strstatus(rc));
    rally_finalize(r);
    return 1;
}

int main(int argc, char **argv)
{
    rally_t *r;
    int rc = rally_init(&r, &argc, &argv);
    if (rc != RALLY_OK)
        return fail(r, "rally_init", rc);
    if (argc < 3)
        return fail(r, "usage: addr_hold DIR COUNT;", RALLY_EINVAL);
    const char *dir = argv[1];
    size_t count = strtoul(argv[2], NULL, 10);
    int rank = rally_rank(r);
    double *v = malloc((count + 1) * sizeof *v);
    if (v == NULL)
        return fail(r, "malloc", RALLY_ENOMEM);
    for (size_t i = 0; i < count; i++)
        v[i] = (double)((rank + 1) * 7919u + i * 104729u % 1000003u) / 3.0;
    if ((rc = rally_allreduce(r, v, count, RALLY_DOUBLE, RALLY_SUM, NULL, NULL)) != RALLY_OK)
        return fail(r, "allreduce", rc);
    if (rank == 0)
        printf("addr_hold: digest %016" PRIx64 "\n", rally_digest64(v, count * sizeof *v));
    fflush(stdout);
    char path[4096];
    snprintf(path, sizeof path, "%s/ready.%d", dir, rank);
    FILE *f = fopen(path, "w");
    if (f == NULL || fclose(f) != 0)
        return fail(r, "creating the ready file", RALLY_ESYS);
    snprintf(path, sizeof path, "%s/go", dir);
    for (int i = 0; i < 6000 && access(path, F_OK) != 0; i++)
        usleep(10000);
    if (access(path, F_OK) != 0)
        return fail(r, "waiting for the go file", RALLY_ETIMEDOUT);
    if ((rc = rally_allreduce(r, v, 1, RALLY_DOUBLE, RALLY_SUM, NULL, NULL)) != RALLY_OK)
        return fail(r, "second allreduce", rc);
    free(v);
    rc = rally_finalize(r);
    return rc == RALLY_OK ? 0 : 1;
}
