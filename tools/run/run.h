/*
 * run.h — what rally-run's files share: the job as rally-run sees it
 * (struct run) and the functions each file offers the others.
 *
 *   rally-run.c        main, set-up and teardown, the loop's callbacks, the
 *                      policy's decisions carried out, growth
 *   run/options.c      the command line as one table of flags, from which
 *                      the usage text and the parsing (run_parse) are made
 *   run/checks.c       the checks between flags once they are read
 *   run/act.c          the policy's decisions carried out; the tracker's
 *                      state as the policy sees it
 *   run/grow.c         a remote rank's end, another host for its restart,
 *                      the refill of places, SIGUSR2's one more worker
 *   run/hosts.c        the hosts: --hosts/--hostfile or the launcher kind's,
 *                      placement, the tracker's address and bind
 *   run/workers.c      starting a worker: its environment, its wrapper's
 *                      command line, signals to every worker
 *   run/redundancy.c   whether losing one host (or rack) is covered by the
 *                      copies the workers keep: said, refused, shown
 *
 * The launcher's reusable parts (processes, the restart policy, the loop,
 * output, remote hosts, the launcher kinds, a run's snapshots) are under
 * tools/launch; r->kind (launch/kind.h) answers what differs between local,
 * ssh, slurm and mpirun.
 */
#ifndef RALLY_TOOLS_RUN_H
#define RALLY_TOOLS_RUN_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "launch/kind.h"
#include "launch/out.h"
#include "launch/policy.h"
#include "launch/proc.h"
#include "launch/remote.h"
#include "launch/snaps.h"
#include "watch/watch.h"
#include "net/sock.h"
#include "tracker/server.h"

#define DRAIN_MS 1000 /* how long pipes may stay open after every worker is reaped */

struct run {
    int world;
    const char *host;
    char bind[RALLY__HOST_MAX]; /* host, an interface name made its address */
    int port;
    int64_t startup_ms, grace_ms, heartbeat_ms;
    int64_t progress_ms; /* --progress-timeout-ms */
    int stuck_fail;      /* --on-stuck fail */
    int max_restarts;
    int min_workers; /* --min-workers: an elastic job goes on with at least this many */
    int max_workers; /* --max-workers: ... and takes workers in (SIGUSR2) up to this many */
    double give_up_slow;   /* --give-up-slow PCT[:CALLS]: PCT as a share (0: off) */
    int64_t give_up_calls; /* ... CALLS */
    struct run_slow *slow; /* run/slow.c's; NULL until it looks */
    int slots;       /* room for the ranks launched, ranks taken in included */
    int grow_now;    /* SIGUSR2s that arrived this turn */
    /* growth on remote hosts (remote_grow): the workers the job is to have
     * (-n, one more per SIGUSR2), the first of the joiners started at the
     * last try and not yet taken in or ended (-1: none), when to try a host
     * with a slot free again, and which hosts a try (or a restart, which
     * then went elsewhere) could not reach (said once) */
    int want, pending;
    int64_t rejoin_ms, next_try;
    unsigned char *down, *held;
    char **argv;
    struct rally__launch_proc *procs;
    int *slot;     /* which pipe each of our pollfd slots holds */
    size_t npipes; /* how many of our slots this turn are pipes (then the outputs) */
    int nlive;     /* workers spawned and not yet reaped */
    struct rally__launch_policy *pol;
    struct rally__launch_policy *prev_pol; /* --auto-resume: the attempt before, until the next */
    struct rally__tracker *t;
    int sfd;
    char dir[PATH_MAX], secret[PATH_MAX + 16], tracker_addr[RALLY__HOST_MAX + 16];
    int sigs[4], nsigs; /* SIGINT/SIGTERM/SIGHUP that arrived this turn */
    int reap;           /* a signal arrived this turn: reap */
    int64_t drain_until;
    /* durable snapshots: the options, the run, preemption (launch/snaps.h) */
    struct rally__launch_snaps snap;
    int snap_now;    /* SIGUSR1 arrived this turn */
    int preempt_now; /* a SIGTERM that preempts arrived this turn */
    int auto_resume, max_job_restarts, job_restarts;
    char given[128];    /* the options given on the command line, by their letter */
    char env_snap[160]; /* "RALLY_SNAPSHOT_EVERY=2": the first snapshot setting taken from the
                           environment (env_options), for the error when it needs a directory */
    /* -x VAR[=VALUE], for every worker (export_option): "VAR=VALUE" and VAR each */
    char **xenv, **xkey;
    size_t nxenv;
    /* while the loop runs, every line goes through these (launch/out.h) */
    struct rally__launch_out out[2]; /* stdout, stderr */
    int64_t out_bytes;               /* --output-buffer-bytes */
    const char *output_dir;          /* --output-dir, or NULL */
    int *starts;             /* per slot: processes started so far (the incarnation) */
    int *deaths_before;      /* per slot: its deaths in earlier attempts (rally_mock_deaths) */
    /* ranks on other hosts (launch/remote.h, docs/launch.md) */
    const struct rally__launch_kind *kind; /* --launcher (launch/kind.h) */
    const char *hosts_opt, *hostfile, *agent_opt;
    const char **ssh_opts;
    size_t nssh_opts;
    int dry_run;
    struct rally__launch_hosts hosts;
    int *host_of;         /* rank -> index in hosts */
    char agent[PATH_MAX]; /* rally-agent's path on the hosts */
    char *feed;           /* the secret's line, for the agents' stdin */
    /* what observers see (run/status.c, docs/status.md) */
    const char *status_opt;  /* --status [ADDR:]PORT, or NULL */
    const char *events_path; /* --events FILE, or NULL */
    int progress;            /* --progress */
    struct run_status *st;   /* NULL: none of the three */
    /* failure domains (run/redundancy.c) */
    int require_redundancy;      /* --require-redundancy (given['Z']): 0 host, 1 rack */
    int redundancy_again;        /* the job's ranks changed: look again */
    struct run_redundancy *red;  /* as last looked at; NULL: not yet */
};

/* The job may go on with other workers (--min-workers, --max-workers). */
static inline int elastic(const struct run *r)
{
    return r->min_workers < r->world || r->max_workers > r->world;
}

/* Each rank runs on its host behind a wrapper (ssh, srun, mpirun -np 1). */
static inline int remote(const struct run *r)
{
    return rally__launch_kind_remote(r->kind);
}

/* --launcher ssh with --max-workers (a kind that refills): a slot freed by
 * a rank given up (its host gone) or a SIGUSR2 gets a worker again, on a
 * host with a slot free, tried again every --rejoin-ms until the host
 * answers. */
static inline int remote_grow(const struct run *r)
{
    return r->kind->refills && r->given['M'];
}

/* --- run/options.c --------------------------------------------------------- */

/* argv into r.  -1 to go on, or the exit status (usage errors: 2). */
int run_parse(int argc, char **argv, struct run *r);
/* The snapshot settings rally-run owns (docs/config.md): the variable, the
 * flag's letter in run_parse (0: none) and the flag. */
struct run_env_opt {
    const char *var;
    int opt;
    const char *flag;
};
extern const struct run_env_opt run_snap_env[];
extern const size_t run_nsnap_env;
/* run_snap_env's entry for "K=V" (or "K"), run_nsnap_env for the wiring
 * every worker gets, -1 when it is not one rally-run sets. */
long run_owned(const char *kv, size_t n);

/* --- run/checks.c ------------------------------------------------------------ */

/* The checks between flags, and the defaults one flag takes from others,
 * once the command line and the environment are in r.  -1 to go on, or the
 * exit status (usage errors: 2). */
int run_check(struct run *r);
/* A worker setting as rally_init will read it (docs/config.md): the
 * program's last rally_NAME=V argument, else -x RALLY_NAME=V, else
 * rally-run's environment; NULL when none.  from gets "rally_name=V" or
 * "RALLY_NAME=V". */
const char *run_setting(const struct run *r, const char *name, char *from, size_t cap);

/* --- run/act.c --------------------------------------------------------------- */

/* Carries out a: says its sentence, aborts, forwards a signal, tells the
 * tracker a rank is gone or died, restarts a rank. */
void run_carry_out(struct run *r, const struct rally__launch_act *a);
/* Starts rank i again (its old pipes read to the end first). */
void run_respawn(struct run *r, int i);
/* The tracker's state as the policy decides from it. */
void run_view(const struct run *r, struct rally__launch_view *v);

/* --- run/grow.c -------------------------------------------------------------- */

/* Rank i's wrapper ended with wait status st (a remote launcher): what
 * became of it, into a for the policy; its restart may go to another host. */
void run_remote_exit(struct run *r, int i, int st, const struct rally__launch_view *v,
                     struct rally__launch_act *a);
/* remote_grow: starts workers on a host with slots free while fewer hold
 * places than the job is to have, at most every --rejoin-ms. */
void run_refill(struct run *r, int64_t now);
/* SIGUSR2: one more worker, taken in at the job's next checkpoint. */
void run_grow(struct run *r);

/* --- run/hosts.c ------------------------------------------------------------ */

/* A whole small file (the secret, a hostfile), NUL-terminated, malloc'd; NULL
 * with errno. */
char *run_slurp(const char *path);
/* The hosts and each rank's (--hosts, --hostfile, Slurm's list, mpirun's),
 * and rally-agent's path.  0, or the exit status. */
int run_place(struct run *r);
/* --hostfile again (remote growth): said when it cannot be read. */
void run_reread_hostfile(struct run *r);
/* The tracker's address the workers are given, for port. */
void run_tracker_address(struct run *r, int port);
/* Warns when remote workers are given a loopback address. */
void run_check_reach(const struct run *r);
/* --host as an address to bind.  0, or the exit status. */
int run_resolve_bind(struct run *r);

/* --- run/workers.c ---------------------------------------------------------- */

/* The rank a worker was launched as (its task id). */
int run_launched_as(const char *task_id);
/* The rank the worker launched as `launched` has now. */
int run_rank_now(const struct run *r, int launched);
void run_signal_all(struct run *r, int sig);
/* Rank i's session directory (mpirun) into buf. */
void run_session_dir(const struct run *r, int i, char *buf, size_t cap);
/* Rank i's wrapper command line (launch/remote.h), or NULL (out of memory). */
char **run_command(const struct run *r, int i);
/* Starts rank i; 0, or the errno of a failed fork or exec. */
int run_spawn(struct run *r, int i);
/* --output-dir: DIR itself, made if missing.  0, or the exit status. */
int run_output_dir(const struct run *r);

/* --- run/redundancy.c ------------------------------------------------------- */

/* Before the start (run_place done): whether losing any one host, and any
 * one rack when racks are named, is covered by the copies the workers will
 * keep; one sentence for each that is not, and with --require-redundancy
 * a refusal.  0, or the exit status. */
int run_redundancy(struct run *r);
/* The job's ranks changed (redundancy_again): look again, and say it when
 * it changed. */
void run_redundancy_again(struct run *r);
/* What the status page shows of it (watch/watch.h), or NULL. */
const struct rally__watch_redundancy *run_redundancy_watch(const struct run *r);
void run_redundancy_free(struct run *r);

/* --- run/status.c: the status server, the events file, the progress line ---- */

/* Before the first attempt: the watch, the events file, the server (its
 * address printed).  0, or the exit status. */
int run_status_start(struct run *r);
/* Each attempt, once its directory exists: the token into it (status-token). */
void run_status_token_file(const struct run *r);
/* Each attempt, once the output streams are open: they share the progress line. */
void run_status_outs(struct run *r);
void run_status_event(struct run *r, const struct rally__tracker_event *ev);
/* The loop: the server's descriptors after the owner's others (from at). */
size_t run_status_npoll(const struct run *r);
size_t run_status_fill(struct run *r, struct pollfd *p, size_t at);
void run_status_handle(struct run *r, const struct pollfd *p, size_t n);
int64_t run_status_deadline(const struct run *r);
/* Every turn: the deaths and restarts the policy counted, the progress line. */
void run_status_after(struct run *r);
/* The job is over with exit status status: the last progress line, the end
 * event; everything freed. */
void run_status_end(struct run *r, int status);

/* --- run/status_cli.c: `rally-run status URL` -------------------------------- */

/* argv[0] is "status".  The exit status. */
int run_status_cli(int argc, char **argv);

/* --- run/slow.c: the rank the others wait for, --give-up-slow ---------------- */

/* Every turn: once a second, names a rank that arrives notably late and,
 * with --give-up-slow, has the policy give up one that stays so. */
void run_slow_after(struct run *r);
void run_slow_free(struct run *r);

#endif
