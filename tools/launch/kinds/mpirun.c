/*
 * mpirun.c — --launcher mpirun (kind.h): each rank is "mpirun -np 1
 * --host HOST --quiet rally-agent ..." (OpenMPI's), on localhost without
 * --hosts.  Each rank's mpirun keeps its session directory below one of
 * its own (session_dir): side by side, mpiruns under one base race, one's
 * clean-up removing the top directory another creates its own in.
 * OpenMPI refuses to run as root unless told; the error says how.
 */
#include <stdio.h>
#include <string.h>

#include "launch/kind.h"

static int hosts(struct rally__launch_hosts *hs, int world, char *err, size_t cap)
{
    char every[32];
    snprintf(every, sizeof every, "localhost:%d", world);
    return rally__launch_hosts_parse(hs, every, err, cap) == 0 ? 0 : 1;
}

static void wrap(struct rally__launch_words *w, const struct rally__launch_cmd_in *in)
{
    rally__launch_words_push(w, "mpirun", 0);
    rally__launch_words_push(w, "-np", 0);
    rally__launch_words_push(w, "1", 0);
    rally__launch_words_push(w, "--host", 0);
    rally__launch_words_push(w, in->host, 0);
    rally__launch_words_push(w, "--quiet", 0);
    if (in->session_base != NULL) {
        rally__launch_words_push(w, "--mca", 0);
        rally__launch_words_push(w, "orte_local_tmpdir_base", 0);
        rally__launch_words_push(w, in->session_base, 0);
    }
}

/* OpenMPI as root: its own remedy, which only the user may choose. */
static const char *hint(const char *held)
{
    return strstr(held, "run as root") == NULL
               ? ""
               : "; OpenMPI runs as root only with OMPI_ALLOW_RUN_AS_ROOT=1 "
                 "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 in rally-run's environment";
}

const struct rally__launch_kind rally__launch_kind_mpirun = {
    .name = "mpirun",
    .wrapper = "mpirun",
    .bind = "*",
    .session_dir = 1,
    .hosts = hosts,
    .wrap = wrap,
    .hint = hint,
};
