/*
 * workers.c — starting rally-run's workers (run/run.h): the variables every
 * worker gets, a remote rank's wrapper command line, the start itself, and
 * signals to all of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/run.h"

/* Workers are ours by the rank they were launched as, their task id. */
int run_launched_as(const char *task_id)
{
    return task_id && task_id[0] ? atoi(task_id) : -1;
}

void run_signal_all(struct run *r, int sig)
{
    for (int i = 0; i < rally__launch_policy_slots(r->pol); i++)
        rally__launch_signal(&r->procs[i], sig);
}

/* torchrun's variables for rank i, so that code written for torchrun runs
 * unchanged: RANK, WORLD_SIZE, and its place among the ranks of its host
 * (LOCAL_RANK of LOCAL_WORLD_SIZE).  They are the launch's; an elastic job's
 * ranks change, and rally.init() sets the job's own in Python. */
struct torchrun {
    char rank[16], world[16], local_rank[16], local_world[16];
};

static void torchrun_of(const struct run *r, int i, struct torchrun *t)
{
    /* one host unless the ranks run on several (then host_of holds each's) */
    int n = r->world > i ? r->world : i + 1, before = 0, on_host = 0;
    int h = remote(r) && r->host_of != NULL ? r->host_of[i] : -1;
    for (int j = 0; j < n; j++) {
        int same = h < 0 || r->host_of[j] == h;
        on_host += same;
        before += same && j < i;
    }
    snprintf(t->rank, sizeof t->rank, "%d", i);
    snprintf(t->world, sizeof t->world, "%d", n);
    snprintf(t->local_rank, sizeof t->local_rank, "%d", before);
    snprintf(t->local_world, sizeof t->local_world, "%d", on_host);
}

/* Appends "K=V" to env at *k; 0, or 1 when out of memory. */
static int kv(char **env, size_t *k, const char *key, const char *value)
{
    char *s;
    if (asprintf(&s, "%s=%s", key, value) < 0)
        return 1;
    env[(*k)++] = s;
    return 0;
}

/* The agent's --env settings for rank i (launch/remote.h), "K=V" each:
 * what a local worker gets but the secret's file, the snapshot settings
 * only with --snapshot-dir, the resume ones only when resuming, its deaths
 * in earlier attempts (RALLY_MOCK_DEATHS) only when it had some, its host's
 * label as RALLY_DOMAIN when it has one, the -x variables, and rally-run's
 * own RALLY_* variables but those it sets itself (run_snap_env: never the
 * environment's; ssh carries no environment).  NULL terminated, malloc'd
 * (rally__launch_argv_free); NULL when out of memory. */
static char **agent_env(const struct run *r, const char *id)
{
    extern char **environ;
    size_t n = 0, k = 0;
    for (char **e = environ; *e; e++)
        n++;
    char **env = calloc(n + r->nxenv + 20, sizeof *env);
    if (env == NULL)
        return NULL;
    int oom = 0;
#define SET(K, V) (oom |= kv(env, &k, (K), (V)))
    SET("RALLY_TRACKER", r->tracker_addr);
    SET("RALLY_TASK_ID", id);
    struct torchrun t;
    torchrun_of(r, atoi(id), &t);
    SET("RANK", t.rank);
    SET("WORLD_SIZE", t.world);
    SET("LOCAL_RANK", t.local_rank);
    SET("LOCAL_WORLD_SIZE", t.local_world);
    if (elastic(r))
        SET("RALLY_ELASTIC", "1");
    int before = r->deaths_before ? r->deaths_before[atoi(id)] : 0; /* none in a dry run */
    char deaths[16];
    snprintf(deaths, sizeof deaths, "%d", before);
    if (before > 0)
        SET("RALLY_MOCK_DEATHS", deaths);
    if (r->snap.dir != NULL) {
        SET("RALLY_RUN_ID", r->snap.run_id);
        SET("RALLY_RUN_STARTED", r->snap.run_started);
        SET("RALLY_SNAPSHOT_DIR", r->snap.abs);
        if (r->snap.copy_abs[0])
            SET("RALLY_SNAPSHOT_COPY", r->snap.copy_abs);
        SET("RALLY_SNAPSHOT_JOB", r->snap.job);
        SET("RALLY_SNAPSHOT_EVERY", r->snap.every_s);
        SET("RALLY_SNAPSHOT_EVERY_MS", r->snap.every_ms_s);
        SET("RALLY_SNAPSHOT_KEEP", r->snap.keep_s);
        SET("RALLY_SNAPSHOT_REQUIRED", r->snap.required ? "1" : "0");
        SET("RALLY_SNAPSHOT_LOCAL", r->snap.local ? "1" : "0");
        SET("RALLY_SNAPSHOT_FINAL", r->snap.final ? "1" : "0");
        SET("RALLY_SNAPSHOT_BUSY", r->snap.busy);
    }
    if (r->snap.resume_path[0]) {
        SET("RALLY_RESUME", r->snap.resume_path);
        SET("RALLY_RESUME_FORCE", r->snap.force ? "1" : "0");
    }
    /* its host's rack (--hosts h:K@LABEL): it wins over -x and the environment */
    const char *label = r->hosts.h[r->host_of[atoi(id)]].label;
    if (label[0])
        SET("RALLY_DOMAIN", label);
#undef SET
    for (size_t i = 0; i < r->nxenv && !oom; i++) { /* -x */
        if (label[0] && strcmp(r->xkey[i], "RALLY_DOMAIN") == 0)
            continue;
        if ((env[k] = strdup(r->xenv[i])) != NULL)
            k++;
        else
            oom = 1;
    }
    size_t ours = k;
    for (char **e = environ; *e && !oom; e++) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, "RALLY_", 6) != 0 || eq == NULL || run_owned(*e, (size_t)(eq - *e)) >= 0)
            continue;
        size_t len = (size_t)(eq - *e) + 1;
        int dup = 0;
        for (size_t j = 0; j < ours && !dup; j++)
            dup = strncmp(env[j], *e, len) == 0;
        if (!dup && (env[k] = strdup(*e)) != NULL)
            k++;
        else if (!dup)
            oom = 1;
    }
    if (oom) {
        rally__launch_argv_free(env);
        return NULL;
    }
    return env;
}

/* mpirun: rank i's OpenMPI session directory base, its own in our temp
 * directory (removed at the end); a dry run, which has none, only names it. */
void run_session_dir(const struct run *r, int i, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/ompi-%d", r->dir[0] ? r->dir : "RALLY_RUN_TMPDIR", i);
}

/* Rank i's wrapper command line (launch/remote.h), or NULL (out of memory). */
char **run_command(const struct run *r, int i)
{
    char id[16];
    snprintf(id, sizeof id, "%d", i);
    char **env = agent_env(r, id);
    if (env == NULL)
        return NULL;
    char sess[sizeof r->dir + 32];
    run_session_dir(r, i, sess, sizeof sess);
    if (r->kind->session_dir && r->dir[0])
        (void)mkdir(sess, 0700); /* EEXIST for a restart */
    struct rally__launch_cmd_in in = {
        r->kind,  r->hosts.h[r->host_of[i]].name, r->ssh_opts, r->nssh_opts,
        r->agent, (const char *const *)env,       r->argv,     r->kind->session_dir ? sess : NULL};
    char **argv = rally__launch_command(&in);
    rally__launch_argv_free(env);
    return argv;
}

/* mkdir that finds an existing directory fine. */
static int mkdir_ok(const char *path)
{
    struct stat st;
    if (mkdir(path, 0755) == 0 || (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
        return 0;
    return errno == EEXIST ? ENOTDIR : errno;
}

int run_output_dir(const struct run *r)
{
    int err = r->output_dir ? mkdir_ok(r->output_dir) : 0;
    if (err != 0)
        fprintf(stderr, "rally-run: --output-dir %s: cannot make the directory: %s\n",
                r->output_dir, strerror(err));
    return err != 0;
}

/* --output-dir: rank i's incarnation k's files, into its proc's log[]; a
 * file that cannot be made is said and left out (the job runs on). */
static void open_logs(struct run *r, int i, int k)
{
    struct rally__launch_proc *p = &r->procs[i];
    char path[PATH_MAX];
    static const char *const name[2] = {"stdout", "stderr"};
    int n = snprintf(path, sizeof path, "%s/rank.%d", r->output_dir, i), err = 0;
    if (n > 0 && (size_t)n < sizeof path)
        err = mkdir_ok(path);
    n = snprintf(path + n, sizeof path - (size_t)n, "/incarnation.%d", k) + n;
    if (err == 0 && (size_t)n < sizeof path)
        err = mkdir_ok(path);
    for (int w = 0; w < 2 && err == 0; w++) {
        if (p->log[w] >= 0)
            close(p->log[w]);
        snprintf(path + n, sizeof path - (size_t)n, "/%s", name[w]);
        p->log[w] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        if (p->log[w] < 0)
            err = errno;
    }
    if (err != 0)
        rally__launch_out_say(&r->out[1], "--output-dir: rank %d's logs at %s: %s", i, path,
                              strerror(err));
}

/* After a spawn that started nothing: its logs go (no pipe will end them). */
static void spawned(struct run *r, int i)
{
    struct rally__launch_proc *p = &r->procs[i];
    if (p->pid > 0) {
        r->nlive++;
        rally__launch_policy_spawned(r->pol, i);
        return;
    }
    for (int w = 0; w < 2; w++)
        if (p->log[w] >= 0 && p->fd[w] < 0) {
            close(p->log[w]);
            p->log[w] = -1;
        }
}

/* Starts rank i; returns 0, or the errno of a failed fork or exec. */
int run_spawn(struct run *r, int i)
{
    int err, k = r->starts[i]++; /* its processes so far (the incarnation) */
    if (r->output_dir)
        open_logs(r, i, k);
    if (remote(r)) {
        char **argv = run_command(r, i);
        if (argv == NULL)
            return ENOMEM;
        err = rally__launch_spawn_agent(&r->procs[i], argv, r->feed);
        rally__launch_argv_free(argv);
        spawned(r, i);
        return err;
    }
    char id[16], deaths[16];
    snprintf(id, sizeof id, "%d", i);
    snprintf(deaths, sizeof deaths, "%d", r->deaths_before[i]);
    struct torchrun t;
    torchrun_of(r, i, &t);
    const char *const ours[][2] = {
        {"RANK", t.rank},
        {"WORLD_SIZE", t.world},
        {"LOCAL_RANK", t.local_rank},
        {"LOCAL_WORLD_SIZE", t.local_world},
        {"RALLY_TRACKER", r->tracker_addr},
        {"RALLY_SECRET_FILE", r->secret},
        {"RALLY_TASK_ID", id},
        {"RALLY_ELASTIC", elastic(r) ? "1" : "0"},
        {"RALLY_MOCK_DEATHS", deaths}, /* its deaths in earlier attempts (--auto-resume) */
        /* "" without --snapshot-dir: a job given snapshot settings of its
         * own then owns its run (src/snapjob/resume.c) */
        {"RALLY_RUN_ID", r->snap.dir ? r->snap.run_id : ""},
        {"RALLY_RUN_STARTED", r->snap.dir ? r->snap.run_started : ""},
        {"RALLY_SNAPSHOT_DIR", r->snap.abs}, /* "" without --snapshot-dir */
        {"RALLY_SNAPSHOT_COPY", r->snap.copy_abs},
        {"RALLY_SNAPSHOT_JOB", r->snap.job},
        {"RALLY_SNAPSHOT_EVERY", r->snap.every_s},
        {"RALLY_SNAPSHOT_EVERY_MS", r->snap.every_ms_s},
        {"RALLY_SNAPSHOT_KEEP", r->snap.keep_s},
        {"RALLY_SNAPSHOT_REQUIRED", r->snap.required ? "1" : "0"},
        {"RALLY_SNAPSHOT_LOCAL", r->snap.local ? "1" : "0"},
        {"RALLY_SNAPSHOT_FINAL", r->snap.final ? "1" : "0"},
        {"RALLY_SNAPSHOT_BUSY", r->snap.busy},
        {"RALLY_RESUME", r->snap.resume_path},
        {"RALLY_RESUME_FORCE", r->snap.force ? "1" : "0"},
        {NULL, NULL}};
    /* the workers inherit our environment: -x VAR=VALUE sets VALUE, -x VAR is theirs already */
    size_t nours = sizeof ours / sizeof ours[0];
    const char *(*env)[2] = calloc(r->nxenv + nours, sizeof *env);
    if (env == NULL)
        return ENOMEM;
    for (size_t j = 0; j < r->nxenv; j++) {
        env[j][0] = r->xkey[j];
        env[j][1] = r->xenv[j] + strlen(r->xkey[j]) + 1;
    }
    memcpy(env + r->nxenv, ours, sizeof ours);
    err = rally__launch_spawn(&r->procs[i], r->argv, (const char *const(*)[2])env);
    free(env);
    spawned(r, i);
    return err;
}

/* An elastic job renumbers the workers (src/tracker/job.c): the rank the
 * one launched as rank `launched` has now. */
int run_rank_now(const struct run *r, int launched)
{
    char id[16];
    snprintf(id, sizeof id, "%d", launched);
    return rally__tracker_rank_of(r->t, id);
}
