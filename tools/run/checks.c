/*
 * checks.c — rally-run's checks between flags (run/run.h), after the
 * command line and the environment are read (run/options.c): the defaults
 * that follow from other flags (--min-workers, --max-workers, the slots),
 * the flags that only go with others or with a launcher kind, and the
 * workers' own settings that rally-run's must fit (the heartbeat interval
 * under the tracker's timeout, the progress watch under the workers' bound
 * on a recovery round).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "run/run.h"
#include "tracker/proto.h"

/* The text of a worker's setting, the last of its sources (run.h). */
const char *run_setting(const struct run *r, const char *name, char *from, size_t cap)
{
    char env[64], arg[64];
    snprintf(arg, sizeof arg, "rally_%s", name);
    snprintf(env, sizeof env, "RALLY_%s", name);
    for (char *c = env; *c; c++)
        *c = *c >= 'a' && *c <= 'z' ? (char)(*c - 'a' + 'A') : *c;
    const char *s = getenv(env), *key = env;
    for (size_t i = 0; i < r->nxenv; i++)
        if (strcmp(r->xkey[i], env) == 0)
            s = r->xenv[i] + strlen(env) + 1;
    size_t n = strlen(arg);
    for (char **a = r->argv + 1; *a; a++)
        if (strncmp(*a, arg, n) == 0 && (*a)[n] == '=')
            s = *a + n + 1, key = arg;
    if (s != NULL)
        snprintf(from, cap, "%s=%s", key, s);
    return s;
}

/* A worker setting in ms as rally_init reads it (run_setting): 1 with *v
 * and from ("rally_timeout_ms=5000", "RALLY_TIMEOUT_MS=5000") when given
 * and valid; 0, *v untouched, else. */
static int worker_ms(const struct run *r, const char *name, int64_t *v, char *from, size_t cap)
{
    const char *s = run_setting(r, name, from, cap);
    return s != NULL && rally__parse_int(s, 1, INT64_MAX / 4, v) == 0;
}

/* Which kinds an error lists (rally__launch_kind_list). */
static int grows(const struct rally__launch_kind *k)
{
    return k->grows;
}
static int refills(const struct rally__launch_kind *k)
{
    return k->refills;
}
static int ssh_options(const struct rally__launch_kind *k)
{
    return k->ssh_options;
}

int run_check(struct run *r)
{
    if (r->min_workers > r->world)
        return cli_usage_error("rally-run", "--min-workers %d is more than the %d workers (-n)",
                               r->min_workers, r->world);
    if (r->min_workers == 0)
        r->min_workers = r->world;
    if (r->max_workers == 0)
        r->max_workers = r->world;
    if (r->max_workers < r->world)
        return cli_usage_error("rally-run", "--max-workers %d is fewer than the %d workers (-n)",
                               r->max_workers, r->world);
    char kinds[128];
    if (r->max_workers > r->world && !r->kind->grows) {
        rally__launch_kind_list(kinds, sizeof kinds, grows, "and");
        return cli_usage_error("rally-run", "--max-workers above -n is for --launcher %s", kinds);
    }
    if (r->given['l'] && !elastic(r))
        return cli_usage_error("rally-run", "--give-up-slow is for an elastic job: give "
                                            "--min-workers below -n");
    if (r->given['j'] && !remote_grow(r)) {
        rally__launch_kind_list(kinds, sizeof kinds, refills, "or");
        return cli_usage_error("rally-run", "--rejoin-ms is for --launcher %s with --max-workers",
                               kinds);
    }
    /* room for the ranks taken in too, a few times over (each gets a slot of
     * its own; a joiner that could not be started gives its slot back) */
    r->slots =
        r->world + 4 * (r->max_workers - r->world) + (remote_grow(r) ? 2 * r->max_workers : 0);
    r->want = r->world;
    r->pending = -1;
    /* the interval the workers will beat at (an argument wins over the
     * environment, as in rally_init) must be under the tracker's timeout */
    if (r->heartbeat_ms > 0) {
        int64_t iv = 1000; /* the library's default (src/util/config.c) */
        char from[96] = "the default, 1000 ms";
        worker_ms(r, "heartbeat_ms", &iv, from, sizeof from);
        if (iv >= r->heartbeat_ms)
            return cli_usage_error("rally-run",
                                   "the workers' heartbeat interval (%s) is at or above "
                                   "--heartbeat-timeout-ms %lld: the tracker would fence every "
                                   "healthy worker; lower the interval or raise the timeout",
                                   from, (long long)r->heartbeat_ms);
    }
    /* the tracker must act on a stuck rank before the ranks waiting for it
     * give up: a worker bounds its wait for a recovery round by
     * rally_connect_timeout_ms + rally_timeout_ms (src/robust/membership.c),
     * so the progress watch stays below that (half, unless given) */
    if (r->progress_ms > 0) {
        int64_t ct = 60000, to = 1800000; /* the library's defaults (src/util/config.c) */
        char cf[96] = "rally_connect_timeout_ms, the default 60000 ms";
        char tf[96] = "rally_timeout_ms, the default 1800000 ms";
        worker_ms(r, "connect_timeout_ms", &ct, cf, sizeof cf);
        worker_ms(r, "timeout_ms", &to, tf, sizeof tf);
        if (r->progress_ms >= ct + to && r->given['P'])
            return cli_usage_error(
                "rally-run",
                "--progress-timeout-ms %lld is at or above the workers' own bound on a recovery "
                "round (%s, + %s): they would give up waiting for a stuck rank before the "
                "tracker names it; lower --progress-timeout-ms or raise their timeouts",
                (long long)r->progress_ms, cf, tf);
        if (r->progress_ms >= ct + to) {
            r->progress_ms = (ct + to) / 2;
            fprintf(stderr,
                    "rally-run: note: --progress-timeout-ms %lld, half the workers' own bound on "
                    "a recovery round (%s, + %s), so the tracker acts on a stuck rank before "
                    "they give up\n",
                    (long long)r->progress_ms, cf, tf);
        }
    }
    if (r->snap.dir == NULL && (r->snap.every || r->snap.every_ms || r->snap.required ||
                                r->snap.final || r->snap.keep_all || r->snap.overwrite ||
                                r->snap.job_opt || r->auto_resume || r->snap.copy || r->snap.local))
        return cli_usage_error("rally-run", "the snapshot options need --snapshot-dir DIR%s%s%s",
                               r->env_snap[0] ? " (" : "", r->env_snap,
                               r->env_snap[0] ? " is one)" : "");
    if (r->snap.resume != NULL && r->snap.dir == NULL &&
        (strcmp(r->snap.resume, "latest") == 0 || strcmp(r->snap.resume, RALLY__SNAP_IF_ANY) == 0))
        return cli_usage_error("rally-run", "%s%s needs --snapshot-dir DIR",
                               r->given['R'] ? "--resume " : "RALLY_RESUME=", r->snap.resume);
    if (r->snap.local && r->snap.copy == NULL)
        return cli_usage_error("rally-run", "--snapshot-local needs --snapshot-copy: with a "
                                            "directory private to each host, no host holds a "
                                            "whole snapshot, only the copy does");
    if (r->snap.overwrite && r->snap.resume != NULL)
        return cli_usage_error("rally-run", "--overwrite is for a fresh start, not --resume");
    if (!remote(r) && (r->hosts_opt || r->hostfile || r->agent_opt)) {
        rally__launch_kind_list(kinds, sizeof kinds, rally__launch_kind_remote, "or");
        return cli_usage_error("rally-run", "--hosts, --hostfile and --agent are for --launcher %s",
                               kinds);
    }
    if (r->nssh_opts > 0 && !r->kind->ssh_options) {
        rally__launch_kind_list(kinds, sizeof kinds, ssh_options, "or");
        return cli_usage_error("rally-run", "--ssh-option is for --launcher %s", kinds);
    }
    if (r->hosts_opt && r->hostfile)
        return cli_usage_error("rally-run", "give --hosts or --hostfile, not both");
    if (r->kind->needs_hosts && !r->hosts_opt && !r->hostfile)
        return cli_usage_error("rally-run", "--launcher %s needs --hosts or --hostfile",
                               r->kind->name);
    return -1;
}
