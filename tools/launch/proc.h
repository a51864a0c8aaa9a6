/*
 * proc.h — worker processes: spawning, output prefixing, signals and reaping.
 *
 * A struct rally__launch_proc is one worker slot that can hold a process
 * again and again (a restart).  Spawning starts a child (rally__launch_start)
 * in its own process group that dies with its launcher (PR_SET_PDEATHSIG),
 * reads /dev/null, writes its stdout into a pseudo-terminal and its stderr
 * into a pipe, gets the environment it is given (made before it starts) and
 * execs.  The child shares our memory until then, so a launcher of 1024
 * workers copies nothing per worker (a fork copies its page tables, and each
 * page it writes next faults), and it leaves exec's errno in that memory
 * when exec fails.
 *
 * Why a pty for stdout (as mpirun does) and not a pipe: C stdio, and
 * Python's, buffer a pipe in blocks but a terminal by lines, so through a
 * pipe a worker that never calls setvbuf or fflush shows nothing until 4 KiB
 * piled up, and a kill -9 loses what sat in its buffer although the program
 * had printed it.  A terminal makes every program, rally or not, from its
 * first line on, hand over each line as it prints it.  The pty is raw (no
 * \r\n, no echo, no signals from bytes) and is never the worker's controlling
 * terminal.  Where no pty can be had, stdout is a pipe as before.  stderr
 * stays a pipe: it is unbuffered in C already, and stays apart from stdout.
 *
 * The descriptors are drained into the output queues (out.h) one complete
 * line at a time, each prefixed "[rank] ".  Reaping collects one exited
 * child at a time with its wait status (the cause of death) and kills
 * whatever it left in its group.
 *
 * The guard (rally__launch_guard_start): PR_SET_PDEATHSIG reaches only the
 * process we started, so a worker started through a wrapper (`sh -c
 * './worker; echo done'`, a script that forks the real program) would
 * outlive a launcher killed by SIGKILL.  A small process forked before
 * anything else learns each worker's process group through a pipe and, when
 * that pipe ends because the launcher is gone however it died, SIGKILLs
 * every group it still holds.  Groups are forgotten when reaped, so it never
 * hits a group whose number was reused.
 *
 * A rank on another host (rally__launch_spawn_agent) is a wrapper process
 * here: its stdin is a pipe we keep, fed first with the secret's line, then
 * with "signal S" lines; its stderr passes the agent's line reader
 * (remote.h) before it is printed.
 *
 * Nothing here decides anything: policy.h does.
 */
#ifndef RALLY_TOOLS_LAUNCH_PROC_H
#define RALLY_TOOLS_LAUNCH_PROC_H

#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "out.h"
#include "remote.h"

#define RALLY__LAUNCH_LINE_MAX 65536

struct rally__launch_line {
    char b[RALLY__LAUNCH_LINE_MAX];
    size_t n;
};

struct rally__launch_proc {
    int rank;  /* the prefix of its output lines */
    pid_t pid; /* 0: not running */
    int fd[2]; /* its stdout (pty master or pipe), stderr pipe; -1 once closed */
    struct rally__launch_line line[2];
    struct rally__launch_out *out[2]; /* where its stdout, stderr lines go */
    int log[2]; /* --output-dir: this incarnation's stdout, stderr files (no prefix); -1: none */
    /* a rank on another host (remote.h): the process is the wrapper */
    int agent;                      /* 1: its stderr carries rally-agent's marked lines */
    int ctl;                        /* the write end of its stdin, -1 */
    struct rally__launch_seen seen; /* what those lines said */
};

/* An idle slot for rank (no process, no pipes, no logs) whose lines go to
 * out[0] (stdout) and out[1] (stderr).  A caller may set log[0] and log[1]
 * before a spawn: each line then also goes, unprefixed, to that file, which
 * is closed when its pipe ends. */
void rally__launch_proc_init(struct rally__launch_proc *p, int rank,
                             struct rally__launch_out *out[2]);

/* Line s[0..n) (no newline) into p's log[which], if it has one (what the
 * tracker printed for it goes there too).  A log that fails to take it (a
 * full disk) is closed and given up on: the job is not held up by it. */
void rally__launch_proc_log(struct rally__launch_proc *p, int which, const char *s, size_t n);

/* Forks the guard (above).  Call before any worker is spawned and before
 * any descriptor the guard should not hold is opened.  Returns 0 or errno
 * (then workers behind a wrapper may outlive a killed launcher). */
int rally__launch_guard_start(void);

/* A raw pseudo-terminal (no echo, no \r\n, no signals from bytes): *master
 * (ours) and *slave (a worker's stdout), both close-on-exec.  0, or -1 when
 * there is none. */
int rally__launch_open_pty(int *master, int *slave);

/* Starts argv (execvp's search, in envp's PATH; as posix_spawnp, a file
 * without "#!" that exec refuses is not retried with /bin/sh) with envp in
 * a child of ours that shares our memory until it execs (clone with
 * CLONE_VM | CLONE_VFORK: nothing of ours is copied, however large we
 * grew), and returns once it has.  The child: the default signal mask and
 * handlers, SIGPIPE default and SIGUSR1 ignored (until librally installs
 * its handler), its own process group, killed when we die; stdin from in
 * (-1: /dev/null), stdout to out and stderr to err (-1: kept); nothing else
 * crosses exec.  Returns 0 with *pid; the errno of a failed exec with *pid
 * set (the child exits 127); or the errno of a failed clone, *pid untouched.
 * Not for two threads at once (one child stack). */
int rally__launch_start(char *const argv[], char *const envp[], int in, int out, int err,
                        pid_t *pid);

/* Writes each complete line of s[0..n) to f as "[rank] line"; a trailing
 * partial line too when final, else it is left out. */
void rally__launch_put_lines(FILE *f, int rank, const char *s, size_t n, int final);

/* Starts argv in p with env ({name, value} pairs up to {NULL, NULL}, added
 * to ours).  Returns 0, or the errno of a failed pipe, fork or exec;
 * after a failed exec p->pid is set all the same (the child exits 127 and
 * is reaped like any other).  p's pipes must be closed (rally__launch_flush). */
int rally__launch_spawn(struct rally__launch_proc *p, char *const argv[],
                        const char *const env[][2]);

/* Starts argv (a wrapper that runs rally-agent, remote.h) in p as above,
 * but with stdin a pipe whose first line is feed (the job's secret line,
 * which must end in a newline); p keeps the write end (p->ctl) until the
 * process is reaped, and p->seen gathers the agent's marked lines. */
int rally__launch_spawn_agent(struct rally__launch_proc *p, char *const argv[], const char *feed);

/* Sends sig to p's process group when p runs; to a wrapper of rally-agent
 * any signal but SIGKILL goes as a line "signal S" on its stdin, for the
 * agent to pass to the worker (SIGKILL ends the wrapper, and the agent
 * kills the worker when its stdin ends). */
void rally__launch_signal(const struct rally__launch_proc *p, int sig);

/* Puts p's open pipes into pollfd slots; slot[i] records which pipe
 * (p index * 2 + stdout 0 / stderr 1).  Returns how many were written;
 * there is room for 2 * n. */
size_t rally__launch_pipes_fill(const struct rally__launch_proc *ps, int n, struct pollfd *pfd,
                                int *slot);
/* Drains the pipes whose slots poll found ready. */
void rally__launch_pipes_handle(struct rally__launch_proc *ps, const struct pollfd *pfd,
                                const int *slot, size_t n);
/* How many pipes of ps are still open. */
int rally__launch_pipes_open(const struct rally__launch_proc *ps, int n);

/* Copies what p's pipes still hold to the output and closes them (the
 * process is gone: what it wrote is in the pipes; a pty may take a moment
 * to hand over the last bytes, so this waits up to 500 ms for its end). */
void rally__launch_flush(struct rally__launch_proc *p);

/* Reaps one exited child of ps without waiting: returns its index and
 * writes its wait status, or returns -1 when none is left to reap.  Its
 * group gets a SIGKILL (what it left behind) and p->pid becomes 0. */
int rally__launch_reap(struct rally__launch_proc *ps, int n, int *status);

/* SIGKILLs every running process of ps and waits for each (error paths). */
void rally__launch_kill_all(struct rally__launch_proc *ps, int n);

#endif
