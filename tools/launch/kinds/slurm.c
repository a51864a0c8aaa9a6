/*
 * slurm.c — --launcher slurm (kind.h): inside an allocation each rank
 * is one job step of one task on its node, "srun --nodes=1 --ntasks=1
 * --nodelist=HOST ... rally-agent ...".  Without --hosts the hosts are the
 * allocation's nodes (SLURM_JOB_NODELIST, expanded by `scontrol show
 * hostnames`) with their slots (SLURM_TASKS_PER_NODE).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch/kind.h"

static int hosts(struct rally__launch_hosts *hs, int world, char *err, size_t cap)
{
    const char *list = getenv("SLURM_JOB_NODELIST"), *tpn = getenv("SLURM_TASKS_PER_NODE");
    if (list == NULL || !*list) {
        snprintf(err, cap,
                 "--launcher slurm runs inside a Slurm allocation (salloc, sbatch): "
                 "SLURM_JOB_NODELIST is not set; or give --hosts");
        return 2;
    }
    char *quoted = rally__launch_quote(list), *cmd = NULL;
    if (quoted == NULL || asprintf(&cmd, "scontrol show hostnames %s", quoted) < 0) {
        free(quoted);
        snprintf(err, cap, "out of memory");
        return 1;
    }
    free(quoted);
    FILE *f = popen(cmd, "r");
    free(cmd);
    char line[RALLY__LAUNCH_HOST_MAX + 2], why[256] = "";
    int bad = f == NULL;
    while (!bad && fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] && rally__launch_hosts_parse(hs, line, why, sizeof why) != 0)
            bad = 1;
    }
    int st = f ? pclose(f) : -1;
    if (bad || st != 0 || hs->n == 0) {
        snprintf(err, cap, "cannot expand SLURM_JOB_NODELIST=%s with `scontrol show hostnames`%s%s",
                 list, why[0] ? ": " : "", why);
        return 1;
    }
    if (tpn != NULL && *tpn && rally__launch_slurm_slots(hs, tpn, err, cap) != 0)
        return 1;
    return 0;
}

static void wrap(struct rally__launch_words *w, const struct rally__launch_cmd_in *in)
{
    char opt[RALLY__LAUNCH_HOST_MAX + 32];
    rally__launch_words_push(w, "srun", 0);
    rally__launch_words_push(w, "--nodes=1", 0);
    rally__launch_words_push(w, "--ntasks=1", 0);
    snprintf(opt, sizeof opt, "--nodelist=%s", in->host);
    rally__launch_words_push(w, opt, 0);
    rally__launch_words_push(w, "--kill-on-bad-exit=1", 0);
    /* steps of one task side by side in the allocation, the whole of stdin
     * to the task, no srun chatter on its stderr */
    rally__launch_words_push(w, "--overlap", 0);
    rally__launch_words_push(w, "--input=all", 0);
    rally__launch_words_push(w, "--quiet", 0);
}

const struct rally__launch_kind rally__launch_kind_slurm = {
    .name = "slurm",
    .wrapper = "srun",
    .bind = "*",
    .hosts = hosts,
    .wrap = wrap,
};
