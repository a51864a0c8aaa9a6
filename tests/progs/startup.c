/*
 * startup.c — what one worker of a trivial job pays to start (issue 48:
 * start-up at scale): rally_init, one allreduce, rally_finalize, and in
 * between a count of the shared objects the process has mapped.  Every
 * one is loaded and relocated by each of the job's workers, so a library
 * that is linked but seldom used (libcurl for the s3:// store, with thirty
 * of its own) costs a launch of 1024 workers on two cores seconds; mapped
 * in the launcher, its fork of each worker copies them.  A worker that
 * finds libcurl mapped in itself or in its parent (rally-run) says so and
 * fails.
 *
 *   rally-run -n 4 startup
 */
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/* A libcurl the launcher (our parent) maps, into out; 0 when none. */
static int parent_maps_curl(char *out, size_t cap)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)getppid());
    FILE *f = fopen(path, "r");
    int found = 0;
    while (f != NULL && !found && fgets(line, sizeof line, f) != NULL) {
        char *p = strchr(line, '/');
        if (p != NULL && strstr(p, "libcurl") != NULL) {
            snprintf(out, cap, "%s", p);
            out[strcspn(out, "\n")] = '\0';
            found = 1;
        }
    }
    if (f != NULL)
        fclose(f);
    return found;
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
    char parent[256];
    int in_parent = parent_maps_curl(parent, sizeof parent);
    int worst = s.curl[0] != '\0' || in_parent;
    if (rally_allreduce(r, &worst, 1, RALLY_INT32, RALLY_MAX, NULL, NULL) != RALLY_OK) {
        fprintf(stderr, "startup: allreduce: %s\n", rally_errmsg(r));
        rally_finalize(r);
        return 1;
    }
    if (s.curl[0])
        fprintf(stderr, "startup: rank %d maps %s at start (%d shared objects): a worker "
                "that opens no s3:// store must not load libcurl\n", rally_rank(r), s.curl,
                s.objects);
    if (in_parent)
        fprintf(stderr, "startup: rank %d's launcher (pid %d) maps %s: it forks every worker "
                "with it\n", rally_rank(r), (int)getppid(), parent);
    if (rally_rank(r) == 0)
        printf("startup: %d workers, %d shared objects in rank 0\n", rally_world_size(r),
               s.objects);
    int rc = rally_finalize(r);
    return rc == RALLY_OK && !worst ? 0 : 1;
}
