/*
 * prog.c — a stand-in worker for the launcher tests; it knows nothing of
 * rally (so under rally-run it never finalizes).  argv[1] picks the act; any
 * further arguments are ignored (tests pass a unique tag there to find
 * leftover processes with pgrep -f).
 *
 *   print          two stdout lines, one stderr line, then "tail" with no newline
 *   exitif R CODE  the worker with RALLY_TASK_ID R exits CODE, the others sleep
 *   sleep          sleeps 60 s
 *   stubborn       ignores SIGTERM, sleeps 60 s
 *   env            prints RALLY_TRACKER's host, whether RALLY_SECRET_FILE is a
 *                  0600 file, and the fd numbers open beyond 2
 *   slow DIR       prints "tick 1 from T" (printf, no fflush), waits up to 20 s
 *                  for DIR/go, prints "tick 2 from T", exits 0
 *   printkill      prints three lines (printf, no fflush), then SIGKILLs itself
 *   flood N DIR    prints N lines of 100 bytes, creates DIR/done.T, waits up to
 *                  60 s for DIR/exit, exits 0
 * (T: its RALLY_TASK_ID; no act ever calls setvbuf or fflush on stdout)
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Waits up to limit_ms for dir/name to exist; 0 when it does. */
static int await_file(const char *dir, const char *name, int limit_ms)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    for (int i = 0; i < limit_ms / 10; i++) {
        if (access(path, F_OK) == 0)
            return 0;
        usleep(10000);
    }
    return -1;
}

int main(int argc, char **argv)
{
    const char *act = argc > 1 ? argv[1] : "";
    const char *task = getenv("RALLY_TASK_ID");
    if (strcmp(act, "print") == 0) {
        printf("line a from %s\nline b from %s\n", task, task);
        fflush(stdout);
        fprintf(stderr, "err line from %s\n", task);
        printf("tail from %s", task);
        return 0;
    }
    if (strcmp(act, "exitif") == 0 && argc > 3) {
        if (task && strcmp(task, argv[2]) == 0)
            return atoi(argv[3]);
        sleep(60);
        return 0;
    }
    if (strcmp(act, "slow") == 0 && argc > 2) {
        printf("tick 1 from %s\n", task);
        if (await_file(argv[2], "go", 20000) != 0)
            fprintf(stderr, "prog: no %s/go within 20 s\n", argv[2]);
        printf("tick 2 from %s\n", task);
        return 0;
    }
    if (strcmp(act, "printkill") == 0) {
        for (int i = 1; i <= 3; i++)
            printf("printed %d from %s before kill -9\n", i, task);
        raise(SIGKILL);
    }
    if (strcmp(act, "flood") == 0 && argc > 3) {
        int n = atoi(argv[2]);
        for (int i = 0; i < n; i++)
            printf("flood %s %07d %s\n", task, i,
                   "........................................................................"
                   "........");
        char path[4096];
        snprintf(path, sizeof path, "%s/done.%s", argv[3], task);
        FILE *f = fopen(path, "w");
        if (f)
            fclose(f);
        await_file(argv[3], "exit", 60000);
        return 0;
    }
    if (strcmp(act, "stubborn") == 0)
        signal(SIGTERM, SIG_IGN);
    if (strcmp(act, "sleep") == 0 || strcmp(act, "stubborn") == 0) {
        sleep(60);
        return 0;
    }
    if (strcmp(act, "env") == 0) {
        const char *sf = getenv("RALLY_SECRET_FILE");
        struct stat st;
        printf("tracker=%s secret_mode=%o\n", getenv("RALLY_TRACKER"),
               sf && stat(sf, &st) == 0 ? (unsigned)(st.st_mode & 0777) : 0u);
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        printf("fds:");
        while (d && (de = readdir(d)) != NULL)
            if (atoi(de->d_name) > 2 && atoi(de->d_name) != dirfd(d))
                printf(" %s", de->d_name);
        printf("\n");
        if (d)
            closedir(d);
        return 0;
    }
    fprintf(stderr, "prog: unknown act '%s'\n", act);
    return 2;
}
