/*
 * kind.h — the launcher kinds (rally-run --launcher): what rally-run asks of
 * each instead of naming it.  A kind is one file (kinds/local.c, kinds/ssh.c,
 * kinds/slurm.c, kinds/mpirun.c) that defines one struct rally__launch_kind,
 * and one row in rally__launch_kinds (kind.c); the errors that list kinds
 * ("--launcher wants local, ssh, slurm or mpirun") are made from the rows.
 *
 * A kind with a wrap hook is remote: each rank is one local wrapper (ssh,
 * srun, mpirun -np 1) that runs rally-agent on the rank's host
 * (launch/remote.h says how the agent and rally-run speak).  The local kind
 * has none: the worker is rally-run's own child.  The hooks are pure but for
 * hosts, which may run a program (Slurm's scontrol) and never prints: it
 * says what went wrong in a sentence.
 */
#ifndef RALLY_TOOLS_LAUNCH_KIND_H
#define RALLY_TOOLS_LAUNCH_KIND_H

#include <stddef.h>

#include "remote.h"

struct rally__launch_kind {
    const char *name;    /* --launcher NAME */
    const char *wrapper; /* the program each rank's wrapper runs, as errors name it; NULL: local */
    const char *bind;    /* the tracker binds this when --bind is not given */
    int grows;           /* --max-workers above -n: SIGUSR2 starts one worker more */
    int refills;         /* ... on a host with a slot free, and a lost host's slot is filled */
    int needs_hosts;     /* no host list of its own: --hosts or --hostfile is required */
    int ssh_options;     /* takes --ssh-option */
    int quotes;          /* the wrapper joins the remote words for a shell: quote each */
    int unreachable;     /* the wrapper's exit status for a host it cannot reach (0: none) */
    int session_dir;     /* each rank's wrapper keeps a directory of its own in rally-run's
                            temporary one (run_session_dir), removed at the end */
    /* The hosts when --hosts and --hostfile give none, for world ranks, into
     * hs.  0, or rally-run's exit status with a sentence in err.  NULL: the
     * kind has none (needs_hosts) or runs everything here. */
    int (*hosts)(struct rally__launch_hosts *hs, int world, char *err, size_t cap);
    /* The wrapper's words up to rally-agent's path, for in, onto w.  NULL:
     * local, no wrapper. */
    void (*wrap)(struct rally__launch_words *w, const struct rally__launch_cmd_in *in);
    /* What a "cannot start" sentence ends with, given the wrapper's lines
     * held before the agent started ("" for nothing).  NULL: nothing. */
    const char *(*hint)(const char *held);
};

/* The kinds, NULL-terminated, in the order errors list them; the first is
 * the default. */
extern const struct rally__launch_kind *const rally__launch_kinds[];
extern const struct rally__launch_kind rally__launch_kind_local, rally__launch_kind_ssh,
    rally__launch_kind_slurm, rally__launch_kind_mpirun;

/* 1 when the kind runs each rank through a wrapper on another host. */
static inline int rally__launch_kind_remote(const struct rally__launch_kind *k)
{
    return k->wrap != NULL;
}

/* The kind named name, or NULL. */
const struct rally__launch_kind *rally__launch_kind_named(const char *name);
/* The names of the kinds that pick accepts (NULL: every kind) into buf, as
 * a list: "a, b or c" with last "or". */
void rally__launch_kind_list(char *buf, size_t cap, int (*pick)(const struct rally__launch_kind *),
                             const char *last);

#endif
