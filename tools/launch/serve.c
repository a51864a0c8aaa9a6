/*
 * serve.c — runs the poll loop around an embedded tracker and its owner's
 * descriptors and signals (serve.h).
 */
#include "serve.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/clock.h"

int rally__launch_signals(int children)
{
    sigset_t set;
    sigemptyset(&set);
    if (children) {
        sigaddset(&set, SIGCHLD);
        sigaddset(&set, SIGUSR1); /* rally-run: "snapshot now" */
        sigaddset(&set, SIGUSR2); /* rally-run --max-workers: "take one more worker in" */
    }
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP); /* a closed terminal or ssh session: stop as for SIGTERM */
    signal(SIGPIPE, SIG_IGN);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0)
        return -1;
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

/* Our pid namespace's inode number, and a process's start time (clock ticks
 * after boot, /proc/PID/stat's 22nd field); 0 when unknown. */
static unsigned long long pid_ns(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

/* -1: the process is gone (no /proc entry), else its start time (0: unknown) */
static long long started(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ESRCH ? -1 : 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold anything */
    unsigned long long t = 0;
    if (p == NULL || sscanf(p + 1,
                            " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
                            "%*d %*d %*d %*d %llu",
                            &t) != 1)
        return 0;
    return (long long)t;
}

/* Removes the directory name in base's descriptor at (ours, with only
 * files in it); anything else is left as it is. */
static void remove_dir(int at, const char *name)
{
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return;
    DIR *d =
        fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() ? fdopendir(fd) : NULL;
    if (d == NULL) {
        close(fd);
        return;
    }
    int clean = 1;
    for (struct dirent *e; clean && (e = readdir(d)) != NULL;) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        clean = fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
                unlinkat(fd, e->d_name, 0) == 0;
    }
    closedir(d);
    if (clean)
        unlinkat(at, name, AT_REMOVEDIR);
}

void rally__launch_tmpdir_sweep(const char *base, const char *name)
{
    DIR *d = opendir(base);
    if (d == NULL)
        return;
    unsigned long long ns = pid_ns();
    size_t k = strlen(name);
    for (struct dirent *e; ns != 0 && (e = readdir(d)) != NULL;) {
        unsigned long long their_ns, start;
        int pid, at = 0;
        const char *s = e->d_name;
        if (strncmp(s, name, k) != 0 || s[k] != '-' ||
            sscanf(s + k, "-%llu-%d-%llu-%n", &their_ns, &pid, &start, &at) != 3 || at == 0 ||
            strlen(s + k + at) != 6 || their_ns != ns || pid <= 0)
            continue;
        long long now = started((pid_t)pid);
        if (now == -1 || (now > 0 && (unsigned long long)now != start))
            remove_dir(dirfd(d), s); /* its owner is gone, or the pid is another process's */
    }
    closedir(d);
}

int rally__launch_tmpdir_in(const char *base, const char *name, char *dir, size_t cap)
{
    rally__launch_tmpdir_sweep(base, name);
    snprintf(dir, cap, "%s/%s-%llu-%d-%lld-XXXXXX", base, name, pid_ns(), (int)getpid(),
             started(getpid()));
    return mkdtemp(dir) == NULL ? errno : 0;
}

int rally__launch_tmpdir(const char *name, char *dir, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    return rally__launch_tmpdir_in(tmp && *tmp ? tmp : "/tmp", name, dir, cap);
}

int rally__launch_host_is_any(const char *host)
{
    return !*host || !strcmp(host, "*") || !strcmp(host, "0.0.0.0") || !strcmp(host, "::");
}

int rally__launch_tracker_new(struct rally__tracker **out, const struct rally__tracker_opts *o,
                              int recovery, int64_t heartbeat_ms, struct rally__err *e)
{
    struct rally__tracker *t;
    int rc = rally__tracker_new(&t, o, e);
    if (rc != RALLY_OK)
        return rc;
    rally__tracker_set_recovery(t, recovery);
    rally__tracker_set_heartbeat_timeout(t, heartbeat_ms);
    *out = t;
    return RALLY_OK;
}

int rally__launch_serve(struct rally__tracker *t, int sfd, const struct rally__launch_owner *o)
{
    struct pollfd *p = NULL;
    int rc = RALLY_OK;
    while (o->done == NULL || !o->done(o->arg)) {
        size_t want = 1 + o->nfds + rally__tracker_npoll(t);
        struct pollfd *np = realloc(p, want * sizeof *p);
        if (np == NULL) {
            rc = RALLY_ENOMEM;
            goto cleanup;
        }
        p = np;
        p[0] = (struct pollfd){.fd = sfd, .events = POLLIN};
        size_t n = 1 + (o->fill ? o->fill(o->arg, p + 1) : 0);
        size_t nt = rally__tracker_fill(t, p + n, want - n);
        int64_t deadline = rally__tracker_deadline(t);
        int64_t mine = o->deadline ? o->deadline(o->arg) : RALLY__NEVER;
        if (mine < deadline)
            deadline = mine;
        if (poll(p, n + nt, rally__ms_left(deadline)) < 0 && errno != EINTR) {
            rc = RALLY_ESYS;
            goto cleanup;
        }
        struct signalfd_siginfo si;
        if (p[0].revents)
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
                if (o->signal)
                    o->signal(o->arg, (int)si.ssi_signo);
        if (o->handle)
            o->handle(o->arg, p + 1, n - 1);
        rally__tracker_handle(t, p + n, nt);
        if (o->after)
            o->after(o->arg);
        fflush(stdout);
        fflush(stderr);
    }
cleanup:;
    int saved = errno;
    free(p);
    errno = saved;
    return rc;
}
