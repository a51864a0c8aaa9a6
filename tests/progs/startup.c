/*
 * startup.c — what one worker of a trivial job pays to start (issue 48:
 * start-up at scale): rally_init, one allreduce, rally_finalize, and in
 * between a count of the shared objects the process has mapped.  Every
 * one is loaded and relocated by each of the job's workers, so a library
 * that is linked but seldom used (libcurl for the s3:// store, with thirty
 * of its own) costs a launch of 1024 workers on two cores seconds.  A
 * worker that finds libcurl mapped says so and fails.
 *
 *   rally-run -n 4 startup
 */
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "rally/rally.h"

struct seen {
    int objects;
    char curl[256]; /* the path of a libcurl mapped, or "" */
};

static int count_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct seen *s = arg;
    s->objects++;
    if (strstr(info->dlpi_name, "libcurl") != NULL)
        snprintf(s->curl, sizeof s->curl, "%s", info->dlpi_name);
    return 0;
}

int main(int argc, char **argv)
{
    rally_t *r;
    if (rally_init(&r, &argc, &argv) != RALLY_OK) {
        fprintf(stderr, "startup: rally_init: %s\n", rally_errmsg(r));
        rally_finalize(r);
        return 1;
    }
    struct seen s = {0, ""};
    dl_iterate_phdr(count_object, &s);
    int worst = s.curl[0] != '\0';
    if (rally_allreduce(r, &worst, 1, RALLY_INT32, RALLY_MAX, NULL, NULL) != RALLY_OK) {
        fprintf(stderr, "startup: allreduce: %s\n", rally_errmsg(r));
        rally_finalize(r);
        return 1;
    }
    if (s.curl[0])
        fprintf(stderr, "startup: rank %d maps %s at start (%d shared objects): a worker "
                "that opens no s3:// store must not load libcurl\n", rally_rank(r), s.curl,
                s.objects);
    if (rally_rank(r) == 0)
        printf("startup: %d workers, %d shared objects in rank 0\n", rally_world_size(r),
               s.objects);
    int rc = rally_finalize(r);
    return rc == RALLY_OK && !worst ? 0 : 1;
}
