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
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
