/*
 * proc.c — spawns worker processes, prefixes their output lines by rank,
 * signals their groups and reaps them (proc.h).
 */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <sched.h>
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

/* What a child needs to become the worker, all made before it starts: it
 * runs on our memory until it execs, so it may only make system calls (no
 * malloc, no stdio, no setenv, nothing that takes a lock). */
struct child {
    char *const *argv, *const *envp;
    int in, out, err;
    pid_t parent;
    int errnum; /* exec's errno, written by the child when it failed */
};

/* execvp's search of PATH, in the worker's own PATH (envp's, which -x may
 * set), into a buffer on the child's stack.  Returns only when no exec
 * succeeded, with errno set. */
static void exec_search(char *const argv[], char *const envp[])
{
    const char *file = argv[0], *path = "/bin:/usr/bin"; /* glibc's default */
    if (strchr(file, '/') != NULL) {
        execve(file, argv, envp);
        return;
    }
    for (char *const *e = envp; *e != NULL; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            path = *e + 5;
    char buf[PATH_MAX];
    size_t flen = strlen(file);
    int eacces = 0;
    errno = ENOENT;
    for (const char *p = path;; p++) {
        const char *c = strchrnul(p, ':');
        size_t dlen = (size_t)(c - p);
        if (dlen + 1 + flen < sizeof buf) { /* an empty element is the current directory */
            memcpy(buf, p, dlen);
            buf[dlen] = '/';
            memcpy(buf + dlen + (dlen > 0), file, flen + 1);
            execve(buf, argv, envp);
            if (errno == EACCES)
                eacces = 1;
            else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE)
                return; /* found, but it cannot run: say why */
        }
        if (*c == '\0')
            break;
        p = c;
    }
    if (eacces)
        errno = EACCES;
}

/* The child: becomes the worker (rally__launch_start) or exits 127. */
static int child_main(void *arg)
{
    struct child *c = arg;
    /* We blocked every signal around the clone; a handler of ours that ran
     * here would run on our memory, so each goes back to the default before
     * the mask opens (exec would reset them anyway). */
    struct sigaction dfl = {.sa_handler = SIG_DFL}, ign = {.sa_handler = SIG_IGN}, old;
    for (int s = 1; s < NSIG; s++)
        if (sigaction(s, NULL, &old) == 0 && old.sa_handler != SIG_DFL &&
            old.sa_handler != SIG_IGN)
            sigaction(s, &dfl, NULL);
    sigaction(SIGPIPE, &dfl, NULL);
    /* rally-run forwards SIGUSR1 ("snapshot now") to rank 0: a worker ignores
     * it until librally installs its handler (snapshots on), never dies of it */
    sigaction(SIGUSR1, &ign, NULL);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != c->parent) /* the launcher died before prctl took effect */
        _exit(127);
    int null = c->in >= 0 ? c->in : open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || (c->out >= 0 && dup2(c->out, 1) < 0) ||
        (c->err >= 0 && dup2(c->err, 2) < 0))
        goto fail;
    /* Nothing else crosses exec, not even what our own parent leaked to us. */
    if (close_range(3, ~0u, CLOSE_RANGE_CLOEXEC) != 0)
        for (int fd = 3; fd < 1024; fd++)
            fcntl(fd, F_SETFD, FD_CLOEXEC);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    exec_search(c->argv, c->envp);
fail:
    c->errnum = errno;
    _exit(127);
}

/* The child's stack: one, as one child at a time exists before its exec
 * (we wait for it), and rally-run and rally-agent spawn from one thread. */
static _Alignas(64) char child_stack[64 * 1024];

int rally__launch_start(char *const argv[], char *const envp[], int in, int out, int err,
                        pid_t *pid)
{
    struct child c = {argv, envp, in, out, err, getpid(), 0};
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    /* CLONE_VM: nothing of ours is copied (a fork copies our page tables and
     * makes every page we write next fault, per worker); CLONE_VFORK: we go
     * on once it has exec'd or exited, when c.errnum is final. */
    pid_t p = clone(child_main, child_stack + sizeof child_stack, CLONE_VM | CLONE_VFORK | SIGCHLD,
                    &c);
    int e = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (p < 0)
        return e;
    *pid = p;
    return c.errnum;
}

/* Our environment with env ({name, value} up to {NULL, NULL}) set in it as
 * setenv would (a later pair wins), in one malloc'd block; NULL when out of
 * memory. */
static char **make_envp(const char *const env[][2])
{
    extern char **environ;
    size_t n = 0, m = 0, bytes = 0;
    for (char **e = environ; *e != NULL; e++)
        n++;
    for (; env[m][0] != NULL; m++)
        bytes += strlen(env[m][0]) + strlen(env[m][1]) + 2;
    char **envp = malloc((n + m + 1) * sizeof *envp + bytes);
    if (envp == NULL)
        return NULL;
    char *s = (char *)(envp + n + m + 1);
    size_t k = 0;
    for (char **e = environ; *e != NULL; e++) {
        size_t len = strcspn(*e, "=");
        int set = 0;
        for (size_t j = 0; j < m && !set; j++)
            set = strncmp(env[j][0], *e, len) == 0 && env[j][0][len] == '\0';
        if (!set)
            envp[k++] = *e;
    }
    for (size_t j = 0; j < m; j++) {
        int later = 0;
        for (size_t i = j + 1; i < m && !later; i++)
            later = strcmp(env[i][0], env[j][0]) == 0;
        if (later)
            continue;
        envp[k++] = s;
        s += sprintf(s, "%s=%s", env[j][0], env[j][1]) + 1;
    }
    envp[k] = NULL;
    return envp;
}

/* rally__launch_spawn, with stdin a pipe fed with feed when feed is not NULL. */
static int spawn(struct rally__launch_proc *p, char *const argv[], const char *const env[][2],
                 const char *feed)
{
    extern char **environ;
    int out[2] = {-1, -1}, err[2] = {-1, -1}, in[2] = {-1, -1}, rc = 0;
    char **envp = env[0][0] != NULL ? make_envp(env) : environ;
    if (envp == NULL)
        return ENOMEM;
    if ((rally__launch_open_pty(&out[0], &out[1]) != 0 && pipe2(out, O_CLOEXEC)) ||
        pipe2(err, O_CLOEXEC) || (feed != NULL && pipe2(in, O_CLOEXEC))) {
        rc = errno;
        goto cleanup;
    }
    pid_t pid = 0;
    rc = rally__launch_start(argv, envp, in[0], out[1], err[1], &pid);
    if (pid <= 0)
        goto cleanup;
    setpgid(pid, pid); /* both sides, so a signal never misses the group */
    guard_tell((int32_t)pid);
    p->pid = pid;
    if (feed != NULL) { /* a line far below the pipe's capacity: it never blocks */
        ssize_t w = write(in[1], feed, strlen(feed));
        (void)w; /* short or failed: the agent says it got no secret */
        fcntl(in[1], F_SETFL, O_NONBLOCK);
        p->ctl = in[1];
        in[1] = -1;
    }
    for (int i = 0; i < 2; i++) {
        int *q = i ? err : out;
        fcntl(q[0], F_SETFL, O_NONBLOCK);
        p->fd[i] = q[0];
        p->line[i].n = 0;
        close(q[1]);
        q[0] = q[1] = -1;
    }
cleanup:
    if (envp != environ)
        free(envp);
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (err[i] >= 0)
            close(err[i]);
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
