/*
 * finalize_fail.c GATE — a worker whose rally_finalize fails (its tracker is
 * gone by then, tests/jobs/finalize_test.sh): it says "joined", waits for the
 * file GATE, finalizes and prints "finalize: STATUS: rally_errmsg(r)", the
 * sentence read after the failed call as after any other.
 */
#include <stdio.h>
#include <unistd.h>

#include "rally/rally.h"

int main(int argc, char **argv)
{
    rally_t *r;
    if (rally_init(&r, &argc, &argv) != RALLY_OK || argc < 2) {
        fprintf(stderr, "finalize_fail: %s\n", rally_errmsg(r));
        return 1;
    }
    printf("joined\n");
    fflush(stdout);
    while (access(argv[1], F_OK) != 0)
        usleep(10000);
    int rc = rally_finalize(r);
    printf("finalize: %s: %s\n", rally_strstatus(rc), rc != RALLY_OK ? rally_errmsg(r) : "");
    return rc != RALLY_OK ? 0 : 2;
}
