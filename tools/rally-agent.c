/*
 * rally-agent — runs one rally worker on its host for rally-run, which
 * started it there through ssh, srun or mpirun (docs/launch.md).
 *
 *     rally-agent [--env K=V]... [--] prog args...
 *
 * The job's secret never travels in argv or the environment: it is the
 * first line of our stdin, which we write to a fresh 0600 file in a fresh
 * 0700 directory ($TMPDIR, else /tmp) and name in RALLY_SECRET_FILE; the
 * other settings (RALLY_TRACKER, RALLY_TASK_ID, ...) come as --env K=V.  The
 * worker runs in its own process group with stdin /dev/null, stdout a raw
 * pseudo-terminal that we copy to our stdout (so that it hands over every
 * line as it prints it, as under rally-run on one host) and our stderr.
 *
 * While it runs, each further line "signal S" on our stdin sends S to the
 * worker's group (rally-run passes on SIGINT, SIGTERM, SIGHUP, SIGUSR1 so:
 * the wrappers do not all carry signals); SIGINT, SIGTERM and SIGHUP sent
 * to us go to the group as well.  When our stdin ends — rally-run is gone,
 * or the connection to it — the group gets SIGKILL: no worker outlives its
 * launcher.  So does what the worker leaves in its group when it ends.
 *
 * What happened is said twice, for rally-run (tools/launch/remote.h reads
 * it): marked lines on stderr, which rally-run takes out of the stream,
 *
 *   @rally-agent started         we have the secret and start the worker
 *   @rally-agent exit N          the worker exited with status N
 *   @rally-agent signal S        the worker was killed by signal S
 *   @rally-agent exec E TEXT     the worker could not be started (errno E)
 *
 * the last written after the worker's group is gone and the secret's
 * directory removed; and our exit status, for anyone else: N, 128 + S, 127
 * when the worker could not be started, 125 when we could not start it
 * (bad arguments, no secret on stdin, no directory for it: then the line
 * on stderr says why and no "started" came).  ssh's own failures are 255
 * and come without "started": that is how rally-run tells an unreachable
 * host from a worker that died, and a lost connection ("started" but no
 * verdict) from both.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "launch/proc.h"
#include "launch/serve.h"

#define EXIT_AGENT 125 /* we could not start the worker */
#define SECRET_MAX 512 /* the secret's line, bytes */
#define DRAIN_MS 500   /* after the worker's end, its pty may take this long */

struct agent {
    char dir[PATH_MAX], file[PATH_MAX + 8];
    char in[SECRET_MAX + 64]; /* stdin's bytes not yet taken as lines */
    size_t nin;
    int stdin_open;
    pid_t pid; /* the worker (its group's number) */
};

static void usage(FILE *f)
{
    fprintf(f, "usage: rally-agent [--env K=V]... [--] prog [args...]\n"
               "Runs one rally worker for rally-run on this host (docs/launch.md).  The job's\n"
               "secret is the first line of stdin; later lines \"signal S\" signal the worker;\n"
               "the end of stdin kills it.  Exit status: the worker's, 128+S when it was\n"
               "killed by signal S, 127 when it cannot be started, 125 when rally-agent\n"
               "cannot start it (the line on stderr says why).\n");
}

static int fatal(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "rally-agent: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    return EXIT_AGENT;
}

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Writes all of s[0..n) to fd (blocking); 0 or -1. */
static int put(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads stdin's first line (the secret, with its newline) into line;
 * bytes after it stay in a->in.  0, or -1 when stdin ended first. */
static int read_secret(struct agent *a, char *line, size_t cap)
{
    for (;;) {
        char *nl = memchr(a->in, '\n', a->nin);
        if (nl != NULL) {
            size_t k = (size_t)(nl - a->in) + 1;
            if (k >= cap)
                return -1;
            memcpy(line, a->in, k);
            line[k] = '\0';
            memmove(a->in, a->in + k, a->nin - k);
            a->nin -= k;
            return 0;
        }
        if (a->nin == sizeof a->in)
            return -1;
        ssize_t m = read(0, a->in + a->nin, sizeof a->in - a->nin);
        if (m < 0 && errno == EINTR)
            continue;
        if (m <= 0)
            return -1;
        a->nin += (size_t)m;
    }
}

/* The secret in a fresh 0600 file of a fresh 0700 directory; 0 or errno. */
static int write_secret(struct agent *a, const char *line)
{
    const char *tmp = getenv("TMPDIR");
    const char *bases[2] = {tmp && *tmp ? tmp : "/tmp", "/tmp"};
    int err = 0;
    a->dir[0] = '\0';
    for (int i = 0; i < 2 && !a->dir[0]; i++) /* killed agents' directories go first */
        if ((err = rally__launch_tmpdir_in(bases[i], "rally-agent", a->dir, sizeof a->dir)) != 0)
            a->dir[0] = '\0';
    if (!a->dir[0])
        return err;
    snprintf(a->file, sizeof a->file, "%s/secret", a->dir);
    int fd = open(a->file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno;
    err = put(fd, line, strlen(line)) == 0 ? 0 : errno ? errno : EIO;
    close(fd);
    return err;
}

static void remove_secret(struct agent *a)
{
    if (a->file[0])
        unlink(a->file);
    if (a->dir[0])
        rmdir(a->dir);
    a->file[0] = a->dir[0] = '\0';
}

/* Takes the complete lines of a->in as control lines ("signal S"). */
static void control(struct agent *a)
{
    char *nl;
    while ((nl = memchr(a->in, '\n', a->nin)) != NULL) {
        *nl = '\0';
        int sig;
        if (sscanf(a->in, "signal %d", &sig) == 1 && sig > 0 && sig < 65)
            kill(-a->pid, sig);
        size_t k = (size_t)(nl - a->in) + 1;
        memmove(a->in, a->in + k, a->nin - k);
        a->nin -= k;
    }
    if (a->nin == sizeof a->in) /* no line in a full buffer: not ours, drop it */
        a->nin = 0;
}

/* Copies what the pty holds to our stdout; -1 when it ended (then closed). */
static int relay(int *master)
{
    char buf[16384];
    for (;;) {
        ssize_t m = read(*master, buf, sizeof buf);
        if (m < 0 && errno == EINTR)
            continue;
        if (m < 0 && errno == EAGAIN)
            return 0;
        if (m <= 0) { /* EIO: every holder of the slave is gone */
            close(*master);
            *master = -1;
            return -1;
        }
        if (put(1, buf, (size_t)m) != 0)
            return 0; /* our reader is gone: the worker's output has nowhere to go */
    }
}

/* Serves the worker until it ends; returns its wait status. */
static int serve(struct agent *a, int sfd, int *master)
{
    int st = 0, done = 0;
    int64_t drain_until = 0;
    while (!done || (*master >= 0 && now_ms() < drain_until)) {
        struct pollfd p[3] = {{.fd = sfd, .events = POLLIN},
                              {.fd = *master, .events = POLLIN},
                              {.fd = a->stdin_open && !done ? 0 : -1, .events = POLLIN}};
        int timeout = done ? (int)(drain_until - now_ms()) : -1;
        if (poll(p, 3, timeout < 0 && done ? 0 : timeout) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            relay(master);
        if (p[2].revents) {
            ssize_t m = read(0, a->in + a->nin, sizeof a->in - a->nin);
            if (m > 0) {
                a->nin += (size_t)m;
                control(a);
            } else if (m == 0 || (errno != EINTR && errno != EAGAIN)) {
                a->stdin_open = 0; /* rally-run or the connection is gone */
                kill(-a->pid, SIGKILL);
            }
        }
        if (p[0].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
                if (si.ssi_signo != SIGCHLD)
                    kill(-a->pid, (int)si.ssi_signo);
        }
        if (!done && waitpid(a->pid, &st, WNOHANG) == a->pid) {
            kill(-a->pid, SIGKILL); /* whatever it left behind in its group */
            done = 1;
            drain_until = now_ms() + DRAIN_MS;
        }
    }
    return st;
}

int main(int argc, char **argv)
{
    struct agent a;
    memset(&a, 0, sizeof a);
    if (cli_version("rally-agent", argc, argv))
        return 0;
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--env") == 0 && i + 1 < argc) {
            const char *kv = argv[++i], *eq = strchr(kv, '=');
            if (eq == NULL || eq == kv)
                return fatal("--env wants K=V, not '%s'%s", kv, "");
            continue;
        }
        if (argv[i][0] == '-')
            return fatal("unknown option '%s'%s; try 'rally-agent --help'", argv[i], "");
        break;
    }
    if (i >= argc)
        return fatal("no program to run%s%s", "", "");
    char **prog = argv + i;

    signal(SIGPIPE, SIG_IGN);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    int sfd = -1;
    if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0 ||
        (sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
        return fatal("cannot set up signal handling: %s%s", strerror(errno), "");

    char secret[SECRET_MAX];
    if (read_secret(&a, secret, sizeof secret) != 0)
        return fatal("no secret on stdin (its first line): %s%s",
                     "rally-agent is started by rally-run, not by hand", "");
    int err = write_secret(&a, secret);
    memset(secret, 0, sizeof secret);
    if (err != 0) {
        remove_secret(&a);
        return fatal("cannot write the job's secret to a fresh directory in %s: %s",
                     getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
                     strerror(err));
    }
    for (int k = 1; k < i; k++)
        if (strcmp(argv[k], "--env") == 0) {
            char *kv = argv[++k], *eq = strchr(kv, '=');
            *eq = '\0';
            setenv(kv, eq + 1, 1);
            *eq = '=';
        }
    setenv("RALLY_SECRET_FILE", a.file, 1);
    fprintf(stderr, "@rally-agent started\n");

    int master = -1, slave = -1;
    if (rally__launch_open_pty(&master, &slave) != 0) /* then our stdout */
        master = slave = -1;
    /* the worker gets SIGHUP's default even where we were started ignoring
     * it (nohup); ours stays blocked, for the signalfd */
    signal(SIGHUP, SIG_DFL);
    extern char **environ;
    a.pid = 0;
    int e = rally__launch_start(prog, environ, -1, slave, -1, &a.pid);
    if (a.pid <= 0) {
        remove_secret(&a);
        fprintf(stderr, "@rally-agent exec %d %s\n", e, strerror(e));
        return 127;
    }
    setpgid(a.pid, a.pid);
    if (slave >= 0)
        close(slave);
    a.stdin_open = 1;
    if (master >= 0)
        fcntl(master, F_SETFL, O_NONBLOCK);
    control(&a); /* lines that came with the secret */
    int st = serve(&a, sfd, &master);
    remove_secret(&a);
    if (e != 0) {
        fprintf(stderr, "@rally-agent exec %d %s\n", e, strerror(e));
        return 127;
    }
    if (WIFSIGNALED(st)) {
        fprintf(stderr, "@rally-agent signal %d\n", WTERMSIG(st));
        return 128 + WTERMSIG(st);
    }
    fprintf(stderr, "@rally-agent exit %d\n", WEXITSTATUS(st));
    return WEXITSTATUS(st);
}
