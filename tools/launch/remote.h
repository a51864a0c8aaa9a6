/*
 * remote.h — what rally-run needs to run ranks on other hosts: the host
 * list, the local command line of each rank, and what the agent's marked
 * lines and the wrapper's exit say happened to the rank.
 *
 * Every rank is one local child of rally-run: the wrapper (ssh, srun or
 * mpirun -np 1) that runs rally-agent on the rank's host, which runs the
 * worker (tools/rally-agent.c says how).  Pure functions, no processes: the
 * launcher (rally-run.c, proc.c) and tests/unit/launch_hosts_test.c call them.
 *
 * Hosts: "--hosts a:2,b:2" or a hostfile (one host a line, "host",
 * "host slots=K" or "host:K", '#' starts a comment); an IPv6 host in
 * brackets, "[fd00::1]:2", kept without them; a host without slots has 1.
 * "a:2@rack1" (or "a@rack1", "a@rack1 slots=2") labels a's failure domain
 * above the host (a rack, a zone): its workers get RALLY_DOMAIN=rack1.  A
 * label is letters, digits, '.', '_' and '-', so a host name holds no '@'
 * (ssh's user goes in ~/.ssh/config); one name has one label.  Ranks are placed in host
 * order: a's slots first.  Under Slurm the nodes come from SLURM_JOB_NODELIST (expanded by the
 * caller with `scontrol show hostnames`) and the slots from SLURM_TASKS_PER_NODE
 * ("2(x3),1" is 2,2,2,1).
 *
 * The agent's protocol (both programs document it; the agent's lines go to
 * its stderr, which the wrapper carries to rally-run's pipe for the rank):
 *
 *   @rally-agent started            the agent runs on the host, has the
 *                                   secret and starts the worker
 *   @rally-agent exit N             the worker exited with status N
 *   @rally-agent signal S           the worker was killed by signal S
 *   @rally-agent exec E TEXT        the worker could not be started (errno E)
 *
 * The verdict is the last such line (the agent writes it after the worker's
 * process group is gone).  rally-run reads these lines out of the stream
 * (they are never printed) and holds the wrapper's own lines that come
 * before "started" (ssh's, the remote shell's): the last of them explains a
 * host that cannot be reached.  From the verdict, or its absence, and the
 * wrapper's wait status rally__launch_outcome says what the policy hears:
 *
 *   verdict exit N / signal S       that wait status, as a local worker's
 *   verdict exec E                  "host H (rank R): PROG: not found" (E is
 *                                   ENOENT) or "...: cannot be run: TEXT", 127
 *   started, no verdict             the wrapper killed by a signal: that
 *                                   signal; else the connection to the host
 *                                   was lost: a death, restarted like a crash
 *   not started, ssh status 255     "host H (rank R): cannot be reached: LINE", 1
 *                                   (LINE: the last line held, ssh's reason;
 *                                   when that closes a box of dashes, as
 *                                   OpenMPI's messages do, the box's headline)
 *   not started, wrapper status 127 "host H (rank R): AGENT: not found", 127
 *   (or a held line names AGENT and "No such file" / "not found")
 *   not started, other status       "host H (rank R): cannot start AGENT: LINE
 *                                   (WRAPPER exited with status N)", 1; for
 *                                   mpirun's "run as root" box, then the two
 *                                   variables of OpenMPI's override
 *   not started, wrapper signaled   that signal (we stopped it, or someone did)
 *
 * Stdin: the wrapper's stdin is a pipe from rally-run whose first line is the
 * job's secret, read by the agent alone (never argv, never the environment);
 * later lines "signal S" ask the agent to send S to the worker's group
 * (rally-run's SIGINT/SIGTERM/SIGHUP and SIGUSR1 reach a remote worker so);
 * its end (rally-run or the connection gone) makes the agent SIGKILL the
 * worker's group.
 */
#ifndef RALLY_TOOLS_LAUNCH_REMOTE_H
#define RALLY_TOOLS_LAUNCH_REMOTE_H

#include <stddef.h>

struct rally__launch_kind; /* launch/kind.h: local, ssh, slurm, mpirun */

#define RALLY__LAUNCH_HOST_MAX 256 /* a host name's bytes, with its NUL */
#define RALLY__LAUNCH_LABEL_MAX 64 /* a label's, with its NUL */
#define RALLY__LAUNCH_HELD_MAX 1024

struct rally__launch_host {
    char name[RALLY__LAUNCH_HOST_MAX];
    int slots;
    char label[RALLY__LAUNCH_LABEL_MAX]; /* "@rack1": its failure domain; "": none */
};

/* A list of hosts; rally__launch_hosts_free frees it (NULL is fine). */
struct rally__launch_hosts {
    struct rally__launch_host *h;
    size_t n;
};
void rally__launch_hosts_free(struct rally__launch_hosts *hs);

/* Appends the hosts of "h1:4,h2,h3:2@rack1" to hs.  0, or -1 with a sentence in err. */
int rally__launch_hosts_parse(struct rally__launch_hosts *hs, const char *list, char *err,
                              size_t cap);
/* Appends the hosts of a hostfile's text (above) to hs.  0, or -1 with a
 * sentence naming the line in err. */
int rally__launch_hostfile_parse(struct rally__launch_hosts *hs, const char *text, char *err,
                                 size_t cap);
/* Gives hs's hosts (hs->n of them, in order) their slots from Slurm's
 * SLURM_TASKS_PER_NODE ("2(x3),1").  0, or -1 with a sentence in err. */
int rally__launch_slurm_slots(struct rally__launch_hosts *hs, const char *tasks_per_node, char *err,
                              size_t cap);
/* Places world ranks in host order: host_of[r] is rank r's host index.
 * 0, or -1 when the slots add up to fewer than world (err says so). */
int rally__launch_place(const struct rally__launch_hosts *hs, int world, int *host_of, char *err,
                        size_t cap);
/* The host for one rank more (a worker taken in): the first, in order, with
 * a slot free (its slots minus the held ranks on it: r < n with held[r],
 * on host host_of[r]) and not marked in avoid (NULL: none is); else the
 * first marked one with a slot free; -1 when no host has one. */
int rally__launch_place_one(const struct rally__launch_hosts *hs, const int *host_of,
                            const unsigned char *held, int n, const unsigned char *avoid);
/* hs takes a re-read hostfile's hosts: one in both gets fresh's slots (and
 * keeps its label: its ranks run with it), one only in fresh is appended,
 * one only in hs keeps its place (host_of indices stay valid) with no
 * slot.  0, or -1 out of memory. */
int rally__launch_hosts_merge(struct rally__launch_hosts *hs,
                              const struct rally__launch_hosts *fresh);

/* A word for a POSIX shell: itself when it is made of safe characters only,
 * else in single quotes.  Returns a malloc'd string or NULL. */
char *rally__launch_quote(const char *w);

/* What one rank's wrapper runs. */
struct rally__launch_cmd_in {
    const struct rally__launch_kind *kind; /* a remote one (its wrap hook builds the wrapper) */
    const char *host;                      /* the rank's host */
    const char *const *ssh_opts;           /* --ssh-option values, each "-o OPT" */
    size_t nssh_opts;
    const char *agent;      /* rally-agent's path on the host */
    const char *const *env; /* "K=V" each, NULL-terminated: the agent's --env K=V */
    char *const *prog;      /* the worker's argv, NULL-terminated */
    /* mpirun: this rank's mpirun keeps its OpenMPI session directory below
     * here (orte_local_tmpdir_base), or NULL.  Side by side, mpiruns under
     * one base race: one's clean-up removes the shared top directory while
     * another creates its own in it ("ORTE_ERROR_LOG: ... session_dir.c"). */
    const char *session_base;
};
/* The wrapper's argv (NULL-terminated, every string malloc'd; free with
 * rally__launch_argv_free), or NULL when out of memory or the kind is local.
 * A kind that quotes (ssh) gets the remote words shell-quoted (it joins them
 * for the remote shell). */
char **rally__launch_command(const struct rally__launch_cmd_in *in);
void rally__launch_argv_free(char **argv);
/* A growing argv the kinds' wrap hooks add words to: v is NULL-terminated
 * once a word is in; oom latches, so a builder checks once at the end. */
struct rally__launch_words {
    char **v;
    size_t n, cap;
    int oom;
};
/* Appends a copy of s to w, shell-quoted when quote. */
void rally__launch_words_push(struct rally__launch_words *w, const char *s, int quote);
/* argv as one line of shell-quoted words (malloc'd), or NULL. */
char *rally__launch_argv_line(char *const *argv);

/* What rally-run learned from one wrapper's stderr. */
struct rally__launch_seen {
    int started;                       /* "@rally-agent started" came */
    int verdict;                       /* 0, 'e' exit, 's' signal, 'x' exec failed */
    int code;                          /* its number */
    char text[128];                    /* exec: the agent's text of the error */
    char held[RALLY__LAUNCH_HELD_MAX]; /* the wrapper's lines before "started" */
    size_t nheld;
};
void rally__launch_seen_reset(struct rally__launch_seen *s);
/* One stderr line s[0..n) of the wrapper: 1 when it is the agent's marked
 * line or a line held before "started" (then it is not printed), 0 when it
 * is the worker's (print it).  A "started" line sets *flush: the held lines
 * should be printed now (rally__launch_seen_held gives them). */
int rally__launch_seen_line(struct rally__launch_seen *s, const char *line, size_t n, int *flush);

/* What the policy hears about a rank whose wrapper ended. */
enum {
    RALLY__LAUNCH_AS_STATUS, /* *st: a wait status, as a local worker's */
    RALLY__LAUNCH_AS_LOST,   /* the connection to the host was lost: a death */
    RALLY__LAUNCH_AS_FAILED, /* it could not start: why (a sentence), *status */
    RALLY__LAUNCH_AS_UNREACHABLE /* as FAILED, for a host that cannot be reached (the
                                  * wrapper's status kind->unreachable): another may run it */
};
/* kind (the launcher's: its wrapper's name, its status for a host it cannot
 * reach, its hint), host, rank, the agent's path and the program name the
 * lines; st is the wrapper's wait status.  Returns what the policy hears;
 * *out_st is the wait status (STATUS) or rally-run's exit status (FAILED). */
int rally__launch_outcome(const struct rally__launch_seen *s, int st,
                          const struct rally__launch_kind *kind, const char *host, int rank,
                          const char *agent, const char *prog, char *why, size_t cap, int *out_st);

#endif
