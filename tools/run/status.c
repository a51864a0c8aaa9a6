/*
 * status.c — what rally-run shows a person or a monitoring system watching
 * the job (docs/status.md): the status server (--status: the page,
 * /status.json, /metrics), the events file (--events) and the progress line
 * (--progress).
 *
 * Observers never steer.  Everything here reads: the tracker's events come
 * in through run_status_event, the deaths and restarts from the policy's
 * own counts each turn (changes); a request renders the rows from
 * the tracker's and the policy's state at that moment (refresh) and answers
 * from the watch's buffer.  The server lives in rally-run's poll loop
 * (watch/http.h): it never blocks it, and a client that stalls or a crowd
 * of idle ones costs descriptors, not heartbeats.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "watch/http.h"
#include "launch/serve.h"
#include "watch/watch.h"
#include "run/run.h"
#include "tracker/proto.h"
#include "util/clock.h"

extern const unsigned char rally__page_html[];
extern const size_t rally__page_html_nbytes;

#define PROGRESS_EVERY_MS 1000 /* a plain progress line at most this often */
#define REDRAW_EVERY_MS 250    /* the terminal's line at most this often */

struct run_status {
    struct rally__watch *w;
    struct rally__http *http;
    char token[65];                  /* "": none asked for (loopback) */
    char url[RALLY__HOST_MAX + 128]; /* the page's address, as printed */
    /* per slot, as last seen (changes): the newest process, the deaths and
     * restarts counted by the policy pol */
    int *pid, *deaths, *restarts;
    const struct rally__launch_policy *pol;
    size_t at, n;      /* the server's slice of the loop's pollfds this turn */
    int tty;           /* --progress on a terminal: one line, redrawn */
    int shown;         /* ... and it is on the screen (launch/out.h) */
    int64_t next_line; /* the next progress line or redraw, at the earliest */
};

static int64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static const char *phase(const struct run *r)
{
    if (r->t == NULL)
        return "starting";
    switch (rally__tracker_phase(r->t)) {
    case RALLY__TPHASE_JOINING:
    case RALLY__TPHASE_STARTING:
        return rally__tracker_epoch(r->t) > 1 ? "recovering" : "starting";
    case RALLY__TPHASE_ASSEMBLING:
        return "recovering";
    case RALLY__TPHASE_DONE:
        return "done";
    case RALLY__TPHASE_FAILED:
        return "failed";
    default:
        return "running";
    }
}

/* The rank the worker launched as i holds now (-1: none). */
static int rank_of(const struct run *r, int i)
{
    return elastic(r) ? run_rank_now(r, i) : i;
}

/* The rows and totals as the tracker and the policy have them now. */
static void refresh(struct run *r)
{
    struct run_status *s = r->st;
    int n = r->pol ? rally__launch_policy_slots(r->pol) : 0;
    struct rally__watch_rank *rows = rally__watch_rows(s->w, n);
    if (rows == NULL)
        return;
    const char *ph = phase(r);
    int64_t now = rally__now_ms();
    int world = r->t ? rally__tracker_world(r->t) : r->world;
    for (int i = 0; i < n; i++) {
        struct rally__watch_rank *x = &rows[i];
        struct rally__launch_rank_counts pc;
        rally__launch_policy_rank(r->pol, i, &pc);
        struct rally__tracker_rank ti;
        memset(&ti, 0, sizeof ti);
        x->launched_as = i;
        x->rank = pc.dropped || pc.outside ? -1 : rank_of(r, i);
        if (x->rank >= 0 && x->rank < world)
            rally__tracker_rank_info(r->t, x->rank, &ti);
        x->pid = r->procs[i].pid;
        if (ti.host[0])
            snprintf(x->host, sizeof x->host, "%s", ti.host);
        else if (remote(r) && r->host_of)
            snprintf(x->host, sizeof x->host, "%s", r->hosts.h[r->host_of[i]].name);
        x->incarnation = ti.incarnation;
        x->deaths = pc.deaths;
        x->restarts = pc.restarts;
        if (pc.dropped)
            x->state = "gone";
        else if (pc.outside)
            x->state = "exited";
        else if (pc.finalized || ti.finalized)
            x->state = "finished";
        else if (x->pid == 0)
            x->state = "dead";
        else if (!ti.present)
            x->state = r->starts && r->starts[i] > 1 ? "restarting" : "starting";
        else if (strcmp(ph, "recovering") == 0)
            x->state = "recovering";
        else
            x->state = "running";
        x->heartbeat_age = ti.last_rx_ms > 0 ? (double)(now - ti.last_rx_ms) / 1e3 : -1;
        if (ti.heartbeats && ti.present) {
            x->has_position = 1;
            if (RALLY__KEY_PHASE(ti.position) == 2) {
                x->version = RALLY__KEY_VERSION(ti.position);
                x->seq = RALLY__KEY_Q(ti.position);
            }
            x->in_op = ti.waiting;
            snprintf(x->op, sizeof x->op, "%s", ti.what);
            x->op_seconds = ti.since_ms > 0 ? (double)(now - ti.since_ms) / 1e3 : 0;
        }
        x->calls = ti.calls;
        x->nbytes = ti.nbytes;
        x->win = ti.win;
        x->win_wait_ms = ti.win_wait_ms;
        x->win_span_ms = ti.win_span_ms;
    }
    struct rally__watch_now wn = {.phase = ph, .world = world, .epoch = 1};
    if (r->t)
        wn.epoch = rally__tracker_epoch(r->t);
    if (r->pol) {
        struct rally__launch_counts c;
        rally__launch_policy_counts(r->pol, &c);
        wn.totals = (struct rally__watch_totals){c.deaths, c.recovered, c.epochs, c.restarts,
                                                 c.job_restarts};
    }
    rally__watch_set(s->w, &wn);
    rally__watch_set_redundancy(s->w, run_redundancy_watch(r));
}

static void answer(void *arg, const char *path, struct rally__http_resp *resp)
{
    struct run *r = arg;
    size_t n = 0;
    const char *body = NULL;
    if (strcmp(path, "/") == 0 || strcmp(path, "/index.html") == 0) {
        *resp = (struct rally__http_resp){200, "text/html; charset=utf-8",
                                          (const char *)rally__page_html, rally__page_html_nbytes};
        return;
    }
    if (strcmp(path, "/status.json") == 0) {
        refresh(r);
        body = rally__watch_json(r->st->w, rally__now_ms(), &n);
        *resp = (struct rally__http_resp){200, "application/json", body, n};
    } else if (strcmp(path, "/metrics") == 0) {
        refresh(r);
        body = rally__watch_metrics(r->st->w, rally__now_ms(), &n);
        *resp = (struct rally__http_resp){200, "text/plain; version=0.0.4; charset=utf-8", body, n};
    } else {
        return; /* 404 */
    }
    if (body == NULL)
        *resp = (struct rally__http_resp){503, "text/plain", "out of memory\n", 14};
}

/* --status [ADDR:]PORT: a bare port binds loopback. */
static int split(const char *opt, char *host, size_t cap, int *port)
{
    char *end;
    long p = strtol(opt, &end, 10);
    if (*opt && *end == '\0') {
        snprintf(host, cap, "127.0.0.1");
    } else {
        struct rally__err e = {0};
        if (rally__hostport_split(opt, host, cap, port, &e) != RALLY_OK) {
            fprintf(stderr, "rally-run: --status %s: %s\n", opt, e.msg);
            return -1;
        }
        p = *port;
    }
    if (p < 0 || p > 65535) {
        fprintf(stderr, "rally-run: --status %s: the port must be 0..65535\n", opt);
        return -1;
    }
    *port = (int)p;
    return 0;
}

int run_status_start(struct run *r)
{
    if (r->st != NULL || (!r->status_opt && !r->events_path && !r->progress))
        return 0;
    struct run_status *s = calloc(1, sizeof *s);
    if (s == NULL || (s->pid = calloc(3 * (size_t)r->slots, sizeof *s->pid)) == NULL) {
        free(s);
        fprintf(stderr, "rally-run: out of memory\n");
        return 1;
    }
    r->st = s;
    s->deaths = s->pid + r->slots;
    s->restarts = s->deaths + r->slots;
    struct rally__watch_job job = {.job = r->snap.job,
                                   .run_id = r->snap.run_id,
                                   .launcher = r->kind->name,
                                   .world = r->world,
                                   .start_ms = rally__now_ms(),
                                   .start_wall = wall_ms()};
    if (rally__watch_new(&s->w, &job) != 0) {
        fprintf(stderr, "rally-run: out of memory\n");
        return 1;
    }
    if (r->events_path != NULL) {
        int err = rally__watch_events_open(s->w, r->events_path);
        if (err != 0) {
            fprintf(stderr, "rally-run: --events %s: %s\n", r->events_path, strerror(err));
            return 2;
        }
    }
    s->tty = r->progress && isatty(2);
    if (r->status_opt != NULL) {
        char host[RALLY__HOST_MAX], why[300];
        int port = 0;
        if (split(r->status_opt, host, sizeof host, &port) != 0)
            return 2;
        if (!rally__host_is_loopback(host)) { /* off loopback: a read-only token */
            unsigned char b[16];
            if (sodium_init() < 0) {
                fprintf(stderr, "rally-run: --status: libsodium failed to initialise\n");
                return 1;
            }
            randombytes_buf(b, sizeof b);
            sodium_bin2hex(s->token, sizeof s->token, b, sizeof b);
        }
        struct rally__http_opts o = {.host = host,
                                     .port = port,
                                     .token = s->token[0] ? s->token : NULL,
                                     .handler = answer,
                                     .arg = r};
        if (rally__http_new(&s->http, &o, why, sizeof why) != 0) {
            fprintf(stderr, "rally-run: --status %s: cannot serve there: %s\n", r->status_opt, why);
            return 1;
        }
        char hp[RALLY__HOST_MAX + 16];
        rally__hostport_fmt(rally__launch_host_is_any(host) ? "127.0.0.1" : host,
                            rally__http_port(s->http), hp, sizeof hp);
        /* no trailing slash: "$URL/metrics" is the page a user asks for */
        snprintf(s->url, sizeof s->url, "http://%s%s%s", hp, s->token[0] ? "/?token=" : "",
                 s->token);
        fprintf(stderr, "rally-run: status: %s (status.json, metrics%s)\n", s->url,
                s->token[0] ? "; the token is also in the job's directory, file status-token" : "");
    }
    rally__watch_event(
        s->w, &(struct rally__watch_ev){.kind = RALLY__WEV_START, .rank = -1, .world = r->world},
        rally__now_ms());
    return 0;
}

void run_status_outs(struct run *r)
{
    if (r->st == NULL || !r->st->tty)
        return;
    r->out[1].shown = &r->st->shown;
    r->out[0].shown = isatty(1) ? &r->st->shown : NULL;
    r->st->shown = 0;
}

void run_status_token_file(const struct run *r)
{
    if (r->st == NULL || !r->st->token[0] || !r->dir[0])
        return;
    char path[sizeof r->dir + 16];
    snprintf(path, sizeof path, "%s/status-token", r->dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    char line[80];
    int n = snprintf(line, sizeof line, "%s\n", r->st->token);
    (void)!write(fd, line, (size_t)n);
    close(fd);
}

static void say(struct run *r, const struct rally__watch_ev *ev)
{
    rally__watch_event(r->st->w, ev, rally__now_ms());
    const char *err = rally__watch_events_error(r->st->w); /* once */
    if (err != NULL)
        rally__launch_out_say(&r->out[1], "%s", err);
}

void run_status_event(struct run *r, const struct rally__tracker_event *ev)
{
    if (r->st == NULL)
        return;
    struct rally__watch_ev w = {.rank = ev->rank, .epoch = ev->epoch};
    switch (ev->kind) {
    case RALLY__TEV_ASSIGNED: {
        w.kind = RALLY__WEV_JOIN;
        struct rally__tracker_rank ti;
        if (ev->rank >= 0 && rally__tracker_rank_info(r->t, ev->rank, &ti) == RALLY_OK) {
            w.host = ti.host;
            w.incarnation = ti.incarnation;
        }
        say(r, &w);
        return;
    }
    case RALLY__TEV_RANK_FAILED:
        if (!ev->disconnected) {
            w.kind = RALLY__WEV_FENCE;
            w.cause = ev->text;
            say(r, &w);
        }
        w.kind = RALLY__WEV_EPOCH;
        w.cause = ev->text;
        say(r, &w);
        return;
    case RALLY__TEV_RECOVERED:
        w.kind = RALLY__WEV_RECOVERED;
        w.rank = -1;
        w.seconds = ev->seconds;
        w.version = ev->has_position ? ev->version : 0;
        say(r, &w);
        return;
    case RALLY__TEV_RESIZED:
        w.kind = RALLY__WEV_RESIZE;
        w.world = ev->world;
        w.cause = ev->text;
        say(r, &w);
        return;
    case RALLY__TEV_FAILED:
        w.kind = RALLY__WEV_ABORT;
        w.rank = -1;
        w.cause = ev->text;
        say(r, &w);
        return;
    case RALLY__TEV_REPORT:
        w.version = ev->version;
        w.value = ev->value;
        if (ev->report == RALLY__REPORT_VALUE) {
            w.kind = RALLY__WEV_REPORT;
            w.key = ev->key;
        } else if (ev->report == RALLY__REPORT_TOTAL) {
            w.kind = RALLY__WEV_TOTAL;
            w.version = ev->value > 0 ? (uint64_t)ev->value : 0;
        } else if (ev->report == RALLY__REPORT_SNAPSHOT) {
            w.kind = RALLY__WEV_SNAPSHOT;
            w.state = "committed";
            w.tier = ev->key;
            w.nbytes = ev->nbytes;
            w.path = ev->text;
        } else if (ev->report == RALLY__REPORT_SNAPSHOT_VOID) {
            w.kind = RALLY__WEV_SNAPSHOT;
            w.state = "void";
            w.cause = ev->text;
        } else {
            return;
        }
        say(r, &w);
        return;
    default:
        return;
    }
}

/* The deaths and restarts the policy counted since the last look, as
 * events in that order: the dead process's pid (the last one seen) and
 * the policy's own cause, so the events say what the summary counts. */
static void changes(struct run *r)
{
    struct run_status *s = r->st;
    if (r->pol == NULL || r->procs == NULL)
        return;
    int fresh = s->pol != r->pol; /* a new attempt (--auto-resume): count from here */
    s->pol = r->pol;
    for (int i = 0; i < rally__launch_policy_slots(r->pol); i++) {
        struct rally__launch_rank_counts pc;
        rally__launch_policy_rank(r->pol, i, &pc);
        if (!fresh && pc.deaths > s->deaths[i])
            say(r, &(struct rally__watch_ev){
                       .kind = RALLY__WEV_DEATH, .rank = i, .pid = s->pid[i], .cause = pc.cause});
        if (!fresh && pc.restarts > s->restarts[i] && r->procs[i].pid > 0)
            say(r, &(struct rally__watch_ev){.kind = RALLY__WEV_RESTART,
                                             .rank = i,
                                             .pid = r->procs[i].pid,
                                             .incarnation = (uint32_t)r->starts[i]});
        s->deaths[i] = pc.deaths;
        s->restarts[i] = pc.restarts;
        if (r->procs[i].pid > 0)
            s->pid[i] = r->procs[i].pid;
    }
}

size_t run_status_npoll(const struct run *r)
{
    return r->st && r->st->http ? rally__http_npoll(r->st->http) : 0;
}

size_t run_status_fill(struct run *r, struct pollfd *p, size_t at)
{
    if (r->st == NULL || r->st->http == NULL)
        return 0;
    r->st->at = at;
    r->st->n = rally__http_fill(r->st->http, p + at, rally__http_npoll(r->st->http));
    return r->st->n;
}

void run_status_handle(struct run *r, const struct pollfd *p, size_t n)
{
    struct run_status *s = r->st;
    if (s == NULL || s->http == NULL)
        return;
    rally__http_handle(s->http, p + s->at, s->at + s->n <= n ? s->n : 0, rally__now_ms());
}

int64_t run_status_deadline(const struct run *r)
{
    struct run_status *s = r->st;
    if (s == NULL)
        return RALLY__NEVER;
    int64_t d = s->http ? rally__http_deadline(s->http) : RALLY__NEVER;
    if (r->progress && s->next_line < d && s->next_line > 0)
        d = s->next_line;
    return d;
}

/* --progress: on a terminal one line, redrawn (launch/out.h's status line);
 * on a pipe a plain line when the iteration moved, at most once a second. */
void run_status_after(struct run *r)
{
    struct run_status *s = r->st;
    if (s == NULL)
        return;
    changes(r);
    if (!r->progress)
        return;
    int64_t now = rally__now_ms();
    if (now < s->next_line)
        return;
    char line[256];
    int moved = rally__watch_progress(s->w, now, line, sizeof line);
    if (s->tty && line[0]) {
        rally__launch_out_status(&r->out[1], line);
        s->next_line = now + REDRAW_EVERY_MS;
    } else if (moved) {
        rally__launch_out_say(&r->out[1], "progress: %s", line);
        s->next_line = now + PROGRESS_EVERY_MS;
    } else {
        s->next_line = 0;
    }
}

void run_status_end(struct run *r, int status)
{
    struct run_status *s = r->st;
    if (s == NULL)
        return;
    char line[256];
    rally__watch_progress(s->w, rally__now_ms(), line, sizeof line);
    if (r->progress && line[0])
        fprintf(stderr, "%srally-run: progress: %s\n", s->tty ? "\r\033[K" : "", line);
    if (r->pol && r->procs) {
        changes(r);
        refresh(r);
    }
    say(r,
        &(struct rally__watch_ev){.kind = RALLY__WEV_END,
                                  .rank = -1,
                                  .status = status,
                                  .cause = status == 0 ? "the job succeeded" : "the job failed"});
    rally__http_free(s->http);
    rally__watch_free(s->w);
    free(s->pid);
    free(s);
    r->st = NULL;
}
