/*
 * hosts.c — where rally-run's workers run (run/run.h): the hosts of
 * --hosts, --hostfile or the launcher's kind (Slurm's nodes, mpirun's
 * localhost), each rank's place, a hostfile read again for growth, and the
 * tracker's address and bind.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "launch/serve.h"
#include "run/run.h"

/* Reads all of the file path into a malloc'd string; NULL with errno. */
char *run_slurp(const char *path)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return NULL;
    char *text = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&text, &n);
    char buf[4096];
    size_t k;
    while (m != NULL && (k = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, k, m);
    int bad = ferror(f);
    fclose(f);
    if (m == NULL || fclose(m) != 0 || bad) {
        free(text);
        errno = bad ? EIO : ENOMEM;
        return NULL;
    }
    return text;
}

/* The hosts, each rank's host and rally-agent's path (non-local launchers).
 * 0 or the exit status. */
int run_place(struct run *r)
{
    if (!remote(r))
        return 0;
    char err[1024] = "";
    if (r->hosts_opt && rally__launch_hosts_parse(&r->hosts, r->hosts_opt, err, sizeof err) != 0)
        return cli_usage_error("rally-run", "--hosts %s: %s", r->hosts_opt, err);
    if (r->hostfile) {
        char *text = run_slurp(r->hostfile);
        if (text == NULL) {
            fprintf(stderr, "rally-run: --hostfile %s: %s\n", r->hostfile, strerror(errno));
            return 2;
        }
        int rc = rally__launch_hostfile_parse(&r->hosts, text, err, sizeof err);
        free(text);
        if (rc != 0)
            return cli_usage_error("rally-run", "--hostfile %s: %s", r->hostfile, err);
    }
    if (r->hosts.n == 0 && r->kind->hosts != NULL) { /* Slurm's nodes, mpirun's localhost */
        int st = r->kind->hosts(&r->hosts, r->world, err, sizeof err);
        if (st != 0) {
            fprintf(stderr, "rally-run: %s\n", err);
            return st;
        }
    }
    r->host_of = calloc((size_t)r->slots, sizeof *r->host_of);
    r->held = calloc((size_t)r->slots, 1);
    r->down = calloc(r->hosts.n + 1, 1);
    if (r->host_of == NULL || r->held == NULL || r->down == NULL) {
        fprintf(stderr, "rally-run: out of memory\n");
        return 1;
    }
    if (rally__launch_place(&r->hosts, r->world, r->host_of, err, sizeof err) != 0)
        return cli_usage_error("rally-run", "%s", err);
    if (r->agent_opt) {
        snprintf(r->agent, sizeof r->agent, "%s", r->agent_opt);
        return 0;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr,
                "rally-run: cannot find rally-agent beside rally-run (%s); give --agent "
                "PATH\n",
                strerror(errno));
        return 1;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    *slash = '\0';
    snprintf(r->agent, sizeof r->agent, "%.*s/rally-agent", PATH_MAX - 16, self);
    return 0;
}

/* --hostfile again (remote_grow): a host added takes places, one taken out
 * takes no more.  Unreadable or malformed: said, and the hosts stay. */
void run_reread_hostfile(struct run *r)
{
    struct rally__launch_hosts fresh = {NULL, 0};
    char err[512];
    char *text = r->hostfile ? run_slurp(r->hostfile) : NULL;
    if (r->hostfile == NULL)
        return;
    if (text == NULL || rally__launch_hostfile_parse(&fresh, text, err, sizeof err) != 0) {
        rally__launch_out_say(&r->out[1], "--hostfile %s: %s: the hosts stay as they were",
                              r->hostfile, text ? err : strerror(errno));
    } else {
        size_t n = r->hosts.n;
        unsigned char *down = NULL;
        if (rally__launch_hosts_merge(&r->hosts, &fresh) == 0 &&
            (down = realloc(r->down, r->hosts.n + 1)) != NULL) {
            memset(down + n, 0, r->hosts.n + 1 - n);
            r->down = down;
        }
    }
    free(text);
    rally__launch_hosts_free(&fresh);
}

/* The address the workers reach the tracker at; port as given. */
void run_tracker_address(struct run *r, int port)
{
    char name[RALLY__HOST_MAX] = "127.0.0.1";
    const char *h = r->bind;
    if (rally__launch_host_is_any(h)) {
        /* every worker runs here; on other hosts they need an address of
         * this host that is not loopback */
        if (remote(r))
            rally__sock_primary_addr(name, sizeof name);
        h = name;
    }
    rally__hostport_fmt(h, port, r->tracker_addr, sizeof r->tracker_addr);
}

/* A tracker on loopback cannot be reached from another machine: say so
 * once, before anything starts (the job would fail at the start timeout). */
void run_check_reach(const struct run *r)
{
    if (!remote(r) || !rally__host_is_loopback(r->bind))
        return;
    char self[RALLY__LAUNCH_HOST_MAX] = "";
    gethostname(self, sizeof self - 1);
    for (size_t i = 0; i < r->hosts.n; i++)
        if (!rally__host_is_loopback(r->hosts.h[i].name) && strcmp(r->hosts.h[i].name, self) != 0) {
            fprintf(stderr,
                    "rally-run: note: the tracker listens on %s, which workers on host %s "
                    "cannot reach from another machine; give --host ADDR (an address of this "
                    "host that they reach)\n",
                    r->host, r->hosts.h[i].name);
            return;
        }
}

/* --bind (--host): an interface name becomes its address (r->bind); none
 * given: loopback for local workers, every address for remote ones.  0 or
 * the exit status. */
int run_resolve_bind(struct run *r)
{
    struct rally__err e = {0, ""};
    if (r->host == NULL) /* remote workers must reach it: every address */
        r->host = r->kind->bind;
    if (rally__sock_bind_addr(r->host, r->bind, sizeof r->bind, &e) == RALLY_OK)
        return 0;
    fprintf(stderr, "rally-run: --bind %s: %s\n", r->host, e.msg);
    return 1;
}
