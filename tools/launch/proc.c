/*
 * proc.c — spawns worker processes, prefixes their output lines by rank,
 * signals their groups and reaps them (proc.h).
 */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "util/clock.h"

#define FLUSH_WAIT_MS 500 /* rally__launch_flush: how long a pty may take to end */

static int guard_fd = -1; /* the write end of the guard's pipe */

void rally__launch_proc_init(struct rally__launch_proc *p, int rank,
                             struct rally__launch_out *out[2])
{
    p->rank = rank;
    p->pid = 0;
    p->fd[0] = p->fd[1] = -1;
    p->log[0] = p->log[1] = -1;
    p->line[0].n = p->line[1].n = 0;
    p->out[0] = out[0];
    p->out[1] = out[1];
    p->agent = 0;
    p->ctl = -1;
    rally__launch_seen_reset(&p->seen);
}

/* --- the guard ------------------------------------------------------------- */

/* The guard's life: remember groups (> 0), forget them (< 0); at the end of
 * the pipe SIGKILL every group remembered.  Never returns. */
static void guard(int in)
{
    pid_t *g = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        int32_t v;
        ssize_t m = read(in, &v, sizeof v);
        if (m < 0 && errno == EINTR)
            continue;
        if (m != (ssize_t)sizeof v)
            break;
        if (v > 0) {
            if (n == cap) {
                size_t c = cap ? 2 * cap : 64;
                pid_t *ng = realloc(g, c * sizeof *g);
                if (ng == NULL)
                    continue;
                g = ng;
                cap = c;
            }
            g[n++] = v;
        } else {
            for (size_t i = 0; i < n; i++)
                if (g[i] == -v) {
                    g[i] = g[--n];
                    break;
                }
        }
    }
    for (size_t i = 0; i < n; i++)
        kill(-g[i], SIGKILL);
    _exit(0);
}

int rally__launch_guard_start(void)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return errno;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        return e;
    }
    if (pid == 0) {
        /* It must outlive us (no PDEATHSIG), hold nothing of ours, and stop
         * only at the end of the pipe: a terminal's ^C or a hang-up reaches
         * our whole process group, so it ignores them. */
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGQUIT, SIG_IGN);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
        }
        int in = fcntl(fds[0], F_DUPFD, 3);
        if (in < 0 || close_range(3, (unsigned)in - 1, 0) != 0 ||
            close_range((unsigned)in + 1, ~0u, 0) != 0)
            for (int fd = 3; fd < 1024; fd++)
                if (fd != in)
                    close(fd);
        guard(in);
    }
    close(fds[0]);
    fcntl(fds[1], F_SETFL, O_NONBLOCK); /* the loop never waits for the guard */
    guard_fd = fds[1];
    return 0;
}

/* Tells the guard about group pid: v = pid (watch it) or -pid (forget it). */
static void guard_tell(int32_t v)
{
    if (guard_fd >= 0) {
        ssize_t w = write(guard_fd, &v, sizeof v);
        (void)w; /* a guard that is gone or behind costs the wrapper case only */
    }
}

/* --- output ----------------------------------------------------------------- */

void rally__launch_put_lines(FILE *f, int rank, const char *s, size_t n, int final)
{
    while (n > 0) {
        const char *nl = memchr(s, '\n', n);
        size_t k = nl ? (size_t)(nl - s) : n;
        if (!nl && !final)
            return;
        fprintf(f, "[%d] %.*s\n", rank, (int)k, s);
        k += nl != NULL;
        s += k;
        n -= k;
    }
}

static void close_pipe(struct rally__launch_proc *p, int which)
{
    close(p->fd[which]);
    p->fd[which] = -1;
    if (p->log[which] >= 0) {
        close(p->log[which]);
        p->log[which] = -1;
    }
}

void rally__launch_proc_log(struct rally__launch_proc *p, int which, const char *s, size_t n)
{
    int fd = p->log[which];
    if (fd < 0)
        return;
    struct iovec v[2] = {{(void *)s, n}, {"\n", 1}};
    size_t left = n + 1;
    while (left > 0) {
        ssize_t w = writev(fd, v, 2);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            p->log[which] = -1;
            return;
        }
        left -= (size_t)w;
        for (int i = 0; i < 2 && w > 0; i++) { /* a short write: skip what went */
            size_t k = (size_t)w < v[i].iov_len ? (size_t)w : v[i].iov_len;
            v[i].iov_base = (char *)v[i].iov_base + k;
            v[i].iov_len -= k;
            w -= (ssize_t)k;
        }
    }
}

/* One of the worker's lines: queued with its prefix, and as it is to its log. */
static void put_line(struct rally__launch_proc *p, int which, const char *s, size_t n)
{
    rally__launch_out_line(p->out[which], p->rank, s, n);
    rally__launch_proc_log(p, which, s, n);
}

/* Queues each line of s[0..n) (the last one even without its newline); a
 * wrapper's stderr lines pass the agent's reader first (remote.h). */
static void emit(struct rally__launch_proc *p, int which, const char *s, size_t n)
{
    while (n > 0) {
        const char *nl = memchr(s, '\n', n);
        size_t k = nl ? (size_t)(nl - s) : n;
        int flush = 0;
        if (!p->agent || which == 0 || !rally__launch_seen_line(&p->seen, s, k, &flush))
            put_line(p, which, s, k);
        if (flush) { /* the agent started: the wrapper's lines held till now */
            struct rally__launch_seen *z = &p->seen;
            for (char *h = z->held, *e; *h; h = e + 1) {
                e = strchr(h, '\n');
                put_line(p, 1, h, (size_t)(e - h));
            }
            z->nheld = 0;
            z->held[0] = '\0';
        }
        k += nl != NULL;
        s += k;
        n -= k;
    }
}

/* Reads what the pipe or pty holds; complete lines go out prefixed, a
 * partial one waits (or goes out at the end, or when it fills the buffer).
 * Returns 1 when the descriptor ended (and is closed), 0 when it would block. */
static int drain(struct rally__launch_proc *p, int which)
{
    struct rally__launch_line *l = &p->line[which];
    for (;;) {
        ssize_t m = read(p->fd[which], l->b + l->n, sizeof l->b - l->n);
        if (m < 0 && errno == EINTR)
            continue;
        if (m < 0 && errno == EAGAIN)
            return 0;
        if (m <= 0) { /* EOF; a pty master says EIO once every slave is closed */
            emit(p, which, l->b, l->n);
            l->n = 0;
            close_pipe(p, which);
            return 1;
        }
        l->n += (size_t)m;
        char *last = memrchr(l->b, '\n', l->n);
        size_t done = last ? (size_t)(last - l->b) + 1 : l->n == sizeof l->b ? l->n : 0;
        emit(p, which, l->b, done);
        memmove(l->b, l->b + done, l->n - done);
        l->n -= done;
    }
}

int rally__launch_open_pty(int *master, int *slave)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), s = -1;
    char name[128];
    struct termios t;
    if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0 || ptsname_r(m, name, sizeof name) != 0)
        goto fail;
    s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (s < 0 || tcgetattr(s, &t) != 0)
        goto fail;
    cfmakeraw(&t);
    if (tcsetattr(s, TCSANOW, &t) != 0)
        goto fail;
    *master = m;
    *slave = s;
    return 0;
fail:
    if (m >= 0)
        close(m);
    if (s >= 0)
        close(s);
    return -1;
}

void rally__launch_exec(char *const argv[], const char *const env[][2], int in, int out, int err,
                        int report, pid_t parent)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    /* rally-run forwards SIGUSR1 ("snapshot now") to rank 0: a worker ignores
     * it until librally installs its handler (snapshots on), never dies of it */
    signal(SIGUSR1, SIG_IGN);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) /* the launcher died before prctl took effect */
        _exit(127);
    int null = in >= 0 ? in : open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || (out >= 0 && dup2(out, 1) < 0) ||
        (err >= 0 && dup2(err, 2) < 0))
        goto fail;
    /* Nothing else crosses exec, not even what our own parent leaked to us. */
    if (close_range(3, ~0u, CLOSE_RANGE_CLOEXEC) != 0)
        for (int fd = 3; fd < 1024; fd++)
            if (fd != report)
                fcntl(fd, F_SETFD, FD_CLOEXEC);
    for (size_t i = 0; env != NULL && env[i][0] != NULL; i++)
        if (setenv(env[i][0], env[i][1], 1) != 0)
            goto fail;
    execvp(argv[0], argv);
fail:;
    int e = errno;
    ssize_t w = write(report, &e, sizeof e);
    (void)w;
    _exit(127);
}

/* rally__launch_spawn, with stdin a pipe fed with feed when feed is not NULL. */
static int spawn(struct rally__launch_proc *p, char *const argv[], const char *const env[][2],
                 const char *feed)
{
    int out[2] = {-1, -1}, err[2] = {-1, -1}, rep[2] = {-1, -1}, in[2] = {-1, -1}, rc = 0;
    if ((rally__launch_open_pty(&out[0], &out[1]) != 0 && pipe2(out, O_CLOEXEC)) ||
        pipe2(err, O_CLOEXEC) || pipe2(rep, O_CLOEXEC) || (feed != NULL && pipe2(in, O_CLOEXEC))) {
        rc = errno;
        goto cleanup;
    }
    pid_t parent = getpid();
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        rc = errno;
        goto cleanup;
    }
    if (pid == 0)
        rally__launch_exec(argv, env, in[0], out[1], err[1], rep[1], parent);
    setpgid(pid, pid); /* both sides, so a signal never misses the group */
    guard_tell((int32_t)pid);
    p->pid = pid;
    close(rep[1]);
    rep[1] = -1;
    if (feed != NULL) { /* a line far below the pipe's capacity: it never blocks */
        ssize_t w = write(in[1], feed, strlen(feed));
        (void)w; /* short or failed: the agent says it got no secret */
        fcntl(in[1], F_SETFL, O_NONBLOCK);
        p->ctl = in[1];
        in[1] = -1;
    }
    int e;
    ssize_t m;
    do
        m = read(rep[0], &e, sizeof e);
    while (m < 0 && errno == EINTR);
    if (m == (ssize_t)sizeof e)
        rc = e; /* the child exits 127; reaping finds it */
    for (int i = 0; i < 2; i++) {
        int *q = i ? err : out;
        fcntl(q[0], F_SETFL, O_NONBLOCK);
        p->fd[i] = q[0];
        p->line[i].n = 0;
        close(q[1]);
        q[0] = q[1] = -1;
    }
cleanup:
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (err[i] >= 0)
            close(err[i]);
        if (rep[i] >= 0)
            close(rep[i]);
        if (in[i] >= 0)
            close(in[i]);
    }
    return rc;
}

int rally__launch_spawn(struct rally__launch_proc *p, char *const argv[],
                        const char *const env[][2])
{
    p->agent = 0;
    return spawn(p, argv, env, NULL);
}

int rally__launch_spawn_agent(struct rally__launch_proc *p, char *const argv[], const char *feed)
{
    static const char *const none[][2] = {{NULL, NULL}};
    p->agent = 1;
    rally__launch_seen_reset(&p->seen);
    return spawn(p, argv, none, feed);
}

/* The wrapper is gone: its stdin's write end goes too. */
static void close_ctl(struct rally__launch_proc *p)
{
    if (p->ctl >= 0)
        close(p->ctl);
    p->ctl = -1;
}

void rally__launch_signal(const struct rally__launch_proc *p, int sig)
{
    if (p->pid <= 0)
        return;
    if (p->ctl >= 0 && sig != SIGKILL) {
        char line[32];
        int n = snprintf(line, sizeof line, "signal %d\n", sig);
        if (write(p->ctl, line, (size_t)n) == n)
            return;
    }
    kill(-p->pid, sig);
}

size_t rally__launch_pipes_fill(const struct rally__launch_proc *ps, int n, struct pollfd *pfd,
                                int *slot)
{
    size_t k = 0;
    for (int i = 0; i < n; i++)
        for (int w = 0; w < 2; w++)
            if (ps[i].fd[w] >= 0) {
                slot[k] = 2 * i + w;
                pfd[k++] = (struct pollfd){.fd = ps[i].fd[w], .events = POLLIN};
            }
    return k;
}

void rally__launch_pipes_handle(struct rally__launch_proc *ps, const struct pollfd *pfd,
                                const int *slot, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct rally__launch_proc *p = &ps[slot[i] / 2];
        int w = slot[i] % 2;
        if (pfd[i].revents && p->fd[w] == pfd[i].fd)
            drain(p, w);
    }
}

int rally__launch_pipes_open(const struct rally__launch_proc *ps, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += (ps[i].fd[0] >= 0) + (ps[i].fd[1] >= 0);
    return k;
}

void rally__launch_flush(struct rally__launch_proc *p)
{
    int64_t until = rally__deadline(FLUSH_WAIT_MS);
    for (int w = 0; w < 2; w++) {
        /* a pipe holds everything already; a pty's last bytes may still be on
         * their way to the master, which says EIO only after them */
        while (p->fd[w] >= 0 && !drain(p, w) && isatty(p->fd[w])) {
            struct pollfd q = {.fd = p->fd[w], .events = POLLIN};
            if (rally__ms_left(until) == 0 || poll(&q, 1, rally__ms_left(until)) == 0)
                break;
        }
        if (p->fd[w] >= 0) {
            emit(p, w, p->line[w].b, p->line[w].n);
            p->line[w].n = 0;
            close_pipe(p, w);
        }
    }
}

int rally__launch_reap(struct rally__launch_proc *ps, int n, int *status)
{
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        for (int i = 0; i < n; i++)
            if (ps[i].pid == pid) {
                kill(-pid, SIGKILL); /* whatever it left behind in its group */
                guard_tell(-(int32_t)pid);
                ps[i].pid = 0;
                close_ctl(&ps[i]);
                *status = st;
                return i;
            }
    }
    return -1;
}

void rally__launch_kill_all(struct rally__launch_proc *ps, int n)
{
    int live = 0;
    for (int i = 0; i < n; i++) {
        rally__launch_signal(&ps[i], SIGKILL);
        live += ps[i].pid > 0;
    }
    while (live > 0) {
        int st;
        pid_t pid = waitpid(-1, &st, 0);
        if (pid < 0 && errno != EINTR)
            break;
        for (int i = 0; pid > 0 && i < n; i++)
            if (ps[i].pid == pid) {
                guard_tell(-(int32_t)pid);
                ps[i].pid = 0;
                close_ctl(&ps[i]);
                live--;
            }
    }
}
