/*
 * ssh.c — --launcher ssh (kind.h): each rank is "ssh -o BatchMode=yes
 * [-o OPT...] HOST -- rally-agent ...", on the hosts of --hosts or
 * --hostfile.  The remote shell joins the words after "--", so they are
 * quoted once more; ssh's own status 255 says the host cannot be reached.
 * A job may grow onto a host with a slot free (--max-workers).
 */
#include "launch/kind.h"

static void wrap(struct rally__launch_words *w, const struct rally__launch_cmd_in *in)
{
    rally__launch_words_push(w, "ssh", 0);
    rally__launch_words_push(w, "-o", 0);
    rally__launch_words_push(w, "BatchMode=yes", 0);
    for (size_t i = 0; i < in->nssh_opts; i++) {
        rally__launch_words_push(w, "-o", 0);
        rally__launch_words_push(w, in->ssh_opts[i], 0);
    }
    rally__launch_words_push(w, in->host, 0);
    rally__launch_words_push(w, "--", 0);
}

const struct rally__launch_kind rally__launch_kind_ssh = {
    .name = "ssh",
    .wrapper = "ssh",
    .bind = "*",
    .grows = 1,
    .refills = 1,
    .needs_hosts = 1,
    .ssh_options = 1,
    .quotes = 1,
    .unreachable = 255,
    .wrap = wrap,
};
