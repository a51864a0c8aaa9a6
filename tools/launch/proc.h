/*
 * proc.h — worker processes: spawning, output prefixing, signals and reaping.
 *
 * A struct rally__launch_proc is one worker slot that can hold a process
 * again and again (a restart).  Spawning forks a child in its own process
 * group that dies with its launcher (PR_SET_PDEATHSIG), reads /dev/null,
 * writes into two pipes, gets the environment it is given and execs; a
 * close-on-exec pipe carries errno back when exec fails.  The pipes are
 * drained into stdout/stderr one complete line at a time, each prefixed
 * "[rank] ".  Reaping collects one exited child at a time with its wait
 * status (the cause of death) and kills whatever it left in its group.
 * Nothing here decides anything: policy.h does.
 */
#ifndef RALLY_TOOLS_LAUNCH_PROC_H
#define RALLY_TOOLS_LAUNCH_PROC_H

#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#define RALLY__LAUNCH_LINE_MAX 65536

struct rally__launch_line {
    char b[RALLY__LAUNCH_LINE_MAX];
    size_t n;
};

struct rally__launch_proc {
    int rank;  /* the prefix of its output lines */
    pid_t pid; /* 0: not running */
    int fd[2]; /* its stdout, stderr pipes; -1 once closed */
    struct rally__launch_line line[2];
};

/* An idle slot for rank (no process, no pipes). */
void rally__launch_proc_init(struct rally__launch_proc *p, int rank);

/* Writes each complete line of s[0..n) to f as "[rank] line"; a trailing
 * partial line too when final, else it is left out. */
void rally__launch_put_lines(FILE *f, int rank, const char *s, size_t n, int final);

/* Starts argv in p with env ({name, value} pairs up to {NULL, NULL}, added
 * to ours).  Returns 0, or the errno of a failed pipe, fork or exec;
 * after a failed exec p->pid is set all the same (the child exits 127 and
 * is reaped like any other).  p's pipes must be closed (rally__launch_flush). */
int rally__launch_spawn(struct rally__launch_proc *p, char *const argv[],
                        const char *const env[][2]);

/* Sends sig to p's process group when p runs. */
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
 * process is gone: what it wrote is in the pipes). */
void rally__launch_flush(struct rally__launch_proc *p);

/* Reaps one exited child of ps without waiting: returns its index and
 * writes its wait status, or returns -1 when none is left to reap.  Its
 * group gets a SIGKILL (what it left behind) and p->pid becomes 0. */
int rally__launch_reap(struct rally__launch_proc *ps, int n, int *status);

/* SIGKILLs every running process of ps and waits for each (error paths). */
void rally__launch_kill_all(struct rally__launch_proc *ps, int n);

#endif
