/*
 * startup.c — what one worker of a trivial job pays to start (issue 48:
 * start-up at scale): rally_init, one allreduce, rally_finalize, and in
 * between a count of the shared objects the process has mapped.  Every
 * one is loaded and relocated by each of the job's workers, so a library
 * that is linked but seldom used (libcurl for the s3:// store, with thirty
 * of its own) costs a launch of 1024 workers on two cores seconds; mapped
 * in the launcher, it is loaded there for nothing (and a launcher that
 * forked its workers copied it for each).  A worker that
 * finds libcurl mapped in itself or in its parent (rally-run) says so and
 * fails.
 *
 * With --max-launcher-faults-per-worker K, rank 0 also reads the minor page
 * faults of its launcher (rally-run) once every worker has started, and
 * fails when they exceed K per worker: a launcher that forks each worker
 * has every page it writes next copied-on-write (about 20 faults per
 * worker), one that starts them without copying itself (clone with
 * CLONE_VM, tools/launch/proc.h) only what each worker's own slot costs.
 *
 *   rally-run -n 4 startup [--max-launcher-faults-per-worker K]
 */
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Process pid's minor page faults (/proc/PID/stat's 10th field), or -1. */
static long minor_faults(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    size_t n = f != NULL ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f != NULL)
        fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long flt;
    if (p == NULL || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %lu", &flt) != 1)
        return -1;
    return (long)flt;
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
        fprintf(stderr, "startup: rank %d's launcher (pid %d) maps %s, which it needs only "
                "for `rally-run status`\n", rally_rank(r), (int)getppid(), parent);
    if (rally_rank(r) == 0)
        printf("startup: %d workers, %d shared objects in rank 0\n", rally_world_size(r),
               s.objects);
    /* every worker is in the allreduce above: the launcher has started all */
    if (argc == 3 && strcmp(argv[1], "--max-launcher-faults-per-worker") == 0 &&
        rally_rank(r) == 0) {
        long flt = minor_faults((int)getppid());
        double per = (double)flt / rally_world_size(r), max = atof(argv[2]);
        printf("startup: the launcher took %ld minor page faults, %.1f per worker (at most %g)\n",
               flt, per, max);
        if (flt < 0 || per > max) {
            fprintf(stderr, "startup: the launcher (pid %d) took %.1f minor page faults per "
                    "worker, more than %g: does it copy itself for each (fork)?\n",
                    (int)getppid(), per, max);
            worst = 1;
        }
    }
    int rc = rally_finalize(r);
    return rc == RALLY_OK && !worst ? 0 : 1;
}
