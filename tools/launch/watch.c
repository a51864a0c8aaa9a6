/*
 * watch.c — a running job as an observer sees it (watch.h).
 *
 * History is bounded: the newest WATCH_EPOCHS epochs, WATCH_SNAPS
 * snapshots and WATCH_TIMELINE timeline entries are kept (the counts cover
 * everything), and each reported value keeps at most WATCH_POINTS points:
 * when a series is full every other point goes, so a long job's plot keeps
 * its shape at half the density of its newest stretch.
 */
#include "launch/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WATCH_EPOCHS 256
#define WATCH_SNAPS 64
#define WATCH_TIMELINE 512
#define WATCH_KEYS 16
#define WATCH_POINTS 2048
#define WATCH_TEXT 256
#define WAIT_MIN_S 2.5 /* a wait this long names the ranks behind it */

/* The recovery histogram's upper bounds, seconds (Prometheus' le). */
static const double buckets[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
#define NBUCKETS (sizeof buckets / sizeof buckets[0])

static const char *const names[] = {
    [RALLY__WEV_START] = "start",         [RALLY__WEV_JOIN] = "join",
    [RALLY__WEV_DEATH] = "death",         [RALLY__WEV_FENCE] = "fence",
    [RALLY__WEV_EPOCH] = "epoch",         [RALLY__WEV_RECOVERED] = "recovered",
    [RALLY__WEV_RESTART] = "restart",     [RALLY__WEV_SNAPSHOT] = "snapshot",
    [RALLY__WEV_RESIZE] = "resize",       [RALLY__WEV_REPORT] = "report",
    [RALLY__WEV_TOTAL] = "total",         [RALLY__WEV_ABORT] = "abort",
    [RALLY__WEV_END] = "end",
};

struct epoch {
    uint32_t epoch;
    int rank;
    char cause[WATCH_TEXT];
    double at;        /* seconds since the start */
    double recovered; /* seconds to back in step; < 0: not yet */
    uint64_t version;
};

struct snap {
    uint64_t version;
    char tier[32], state[16], path[WATCH_TEXT];
    uint64_t nbytes;
    double at;
};

struct mark { /* a timeline entry */
    double at;
    int kind, rank;
    char text[WATCH_TEXT];
};

struct series {
    char key[72];
    int rank;            /* who reported it first */
    uint64_t iteration;  /* the newest point's */
    double value;        /* ... and its value */
    size_t n;            /* points */
    uint64_t *it;        /* WATCH_POINTS each */
    double *v;
};

struct rally__watch {
    char job[256], run_id[64], launcher[32];
    int world;
    int64_t start_ms, start_wall;
    FILE *events;
    char events_error[300];
    /* history */
    struct epoch epochs[WATCH_EPOCHS];
    uint64_t nepochs; /* ever recorded; the ring holds the newest */
    struct snap snaps[WATCH_SNAPS];
    uint64_t nsnaps;
    struct mark marks[WATCH_TIMELINE];
    uint64_t nmarks;
    uint64_t commits, voids, recoveries, last_commit;
    double recovery_sum, last_commit_at;
    int has_commit;
    uint64_t hist[NBUCKETS];
    /* progress */
    struct series keys[WATCH_KEYS];
    int nkeys;
    uint64_t total, iteration, first_iteration, said_iteration;
    int64_t first_ms, last_ms; /* when first_iteration and iteration were reported */
    int progressed;
    /* the owner's, before a render */
    struct rally__watch_rank *rows;
    int nrows, rows_cap;
    struct rally__watch_now now;
    /* the render */
    char *buf;
    size_t len, cap;
    int oom;
};

int rally__watch_new(struct rally__watch **out, const struct rally__watch_job *job)
{
    struct rally__watch *w = calloc(1, sizeof *w);
    if (w == NULL)
        return ENOMEM;
    snprintf(w->job, sizeof w->job, "%s", job->job ? job->job : "");
    snprintf(w->run_id, sizeof w->run_id, "%s", job->run_id ? job->run_id : "");
    snprintf(w->launcher, sizeof w->launcher, "%s", job->launcher ? job->launcher : "local");
    w->world = job->world;
    w->start_ms = job->start_ms;
    w->start_wall = job->start_wall;
    w->now.world = job->world;
    w->now.phase = "starting";
    w->now.epoch = 1;
    *out = w;
    return 0;
}

void rally__watch_free(struct rally__watch *w)
{
    if (w == NULL)
        return;
    if (w->events)
        fclose(w->events);
    for (int i = 0; i < w->nkeys; i++) {
        free(w->keys[i].it);
        free(w->keys[i].v);
    }
    free(w->rows);
    free(w->buf);
    free(w);
}

int rally__watch_events_open(struct rally__watch *w, const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return errno;
    if ((w->events = fdopen(fd, "w")) == NULL) {
        int err = errno;
        close(fd);
        return err;
    }
    return 0;
}

const char *rally__watch_events_error(struct rally__watch *w)
{
    return w->events_error[0] ? w->events_error : NULL;
}

static double since(const struct rally__watch *w, int64_t now_ms)
{
    return (double)(now_ms - w->start_ms) / 1e3;
}

/* RFC 3339 in UTC with milliseconds, for ms since the epoch. */
static void rfc3339(int64_t wall_ms, char *s, size_t cap)
{
    time_t t = (time_t)(wall_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t n = strftime(s, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(s + n, cap - n, ".%03dZ", (int)(wall_ms % 1000));
}

/* --- the events file ------------------------------------------------------ */

static void set_str(json_t *o, const char *k, const char *v)
{
    if (v != NULL)
        json_object_set_new(o, k, json_string(v));
}

/* ev as one JSON object (docs/events.md); NULL when out of memory. */
static json_t *ev_json(const struct rally__watch *w, const struct rally__watch_ev *ev,
                       int64_t now_ms)
{
    char when[40];
    rfc3339(w->start_wall + (now_ms - w->start_ms), when, sizeof when);
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    json_object_set_new(o, "time", json_string(when));
    json_object_set_new(o, "t", json_real(since(w, now_ms)));
    json_object_set_new(o, "event", json_string(names[ev->kind]));
    if (ev->rank >= 0)
        json_object_set_new(o, "rank", json_integer(ev->rank));
    switch (ev->kind) {
    case RALLY__WEV_START:
        json_object_set_new(o, "job", json_string(w->job));
        json_object_set_new(o, "run_id", json_string(w->run_id));
        json_object_set_new(o, "launcher", json_string(w->launcher));
        json_object_set_new(o, "world", json_integer(ev->world));
        break;
    case RALLY__WEV_JOIN:
        set_str(o, "host", ev->host ? ev->host : "");
        json_object_set_new(o, "incarnation", json_integer(ev->incarnation));
        break;
    case RALLY__WEV_DEATH:
        if (ev->pid > 0)
            json_object_set_new(o, "pid", json_integer(ev->pid));
        set_str(o, "cause", ev->cause ? ev->cause : "");
        break;
    case RALLY__WEV_FENCE:
        set_str(o, "cause", ev->cause ? ev->cause : "");
        break;
    case RALLY__WEV_EPOCH:
        json_object_set_new(o, "epoch", json_integer(ev->epoch));
        set_str(o, "cause", ev->cause ? ev->cause : "");
        break;
    case RALLY__WEV_RECOVERED:
        json_object_set_new(o, "epoch", json_integer(ev->epoch));
        json_object_set_new(o, "seconds", json_real(ev->seconds));
        json_object_set_new(o, "version", json_integer((json_int_t)ev->version));
        break;
    case RALLY__WEV_RESTART:
        json_object_set_new(o, "pid", json_integer(ev->pid));
        json_object_set_new(o, "incarnation", json_integer(ev->incarnation));
        break;
    case RALLY__WEV_SNAPSHOT:
        json_object_set_new(o, "version", json_integer((json_int_t)ev->version));
        set_str(o, "state", ev->state ? ev->state : "committed");
        set_str(o, "tier", ev->tier);
        if (ev->nbytes > 0)
            json_object_set_new(o, "bytes", json_integer((json_int_t)ev->nbytes));
        set_str(o, "path", ev->path);
        set_str(o, "cause", ev->cause);
        break;
    case RALLY__WEV_RESIZE:
        json_object_set_new(o, "world", json_integer(ev->world));
        set_str(o, "cause", ev->cause);
        break;
    case RALLY__WEV_REPORT:
        set_str(o, "key", ev->key ? ev->key : "");
        json_object_set_new(o, "value", json_real(ev->value));
        json_object_set_new(o, "iteration", json_integer((json_int_t)ev->version));
        break;
    case RALLY__WEV_TOTAL:
        json_object_set_new(o, "iterations", json_integer((json_int_t)ev->version));
        break;
    case RALLY__WEV_ABORT:
        set_str(o, "cause", ev->cause ? ev->cause : "");
        break;
    case RALLY__WEV_END:
        json_object_set_new(o, "status", json_integer(ev->status));
        set_str(o, "cause", ev->cause ? ev->cause : "");
        json_object_set_new(o, "deaths", json_integer(w->now.totals.deaths));
        json_object_set_new(o, "recovered", json_integer(w->now.totals.recovered));
        json_object_set_new(o, "epochs", json_integer(w->now.totals.epochs));
        json_object_set_new(o, "restarts", json_integer(w->now.totals.restarts));
        break;
    }
    return o;
}

static void write_event(struct rally__watch *w, const struct rally__watch_ev *ev, int64_t now_ms)
{
    if (w->events == NULL)
        return;
    json_t *o = ev_json(w, ev, now_ms);
    int bad = o == NULL || json_dumpf(o, w->events, JSON_COMPACT | JSON_REAL_PRECISION(17)) != 0 ||
              fputc('\n', w->events) == EOF || fflush(w->events) != 0;
    json_decref(o);
    if (bad) {
        snprintf(w->events_error, sizeof w->events_error,
                 "--events: could not write an event line (%s); no more are written",
                 o ? strerror(errno) : "out of memory");
        fclose(w->events);
        w->events = NULL;
    }
}

/* --- recording ------------------------------------------------------------ */

static void mark(struct rally__watch *w, const struct rally__watch_ev *ev, int64_t now_ms,
                 const char *text)
{
    struct mark *m = &w->marks[w->nmarks++ % WATCH_TIMELINE];
    m->at = since(w, now_ms);
    m->kind = ev->kind;
    m->rank = ev->rank;
    snprintf(m->text, sizeof m->text, "%s", text ? text : "");
}

static struct epoch *find_epoch(struct rally__watch *w, uint32_t epoch)
{
    for (uint64_t i = w->nepochs; i > 0 && w->nepochs - i < WATCH_EPOCHS; i--)
        if (w->epochs[(i - 1) % WATCH_EPOCHS].epoch == epoch)
            return &w->epochs[(i - 1) % WATCH_EPOCHS];
    return NULL;
}

static struct series *find_key(struct rally__watch *w, const char *key, int rank)
{
    for (int i = 0; i < w->nkeys; i++)
        if (strcmp(w->keys[i].key, key) == 0)
            return &w->keys[i];
    if (w->nkeys == WATCH_KEYS)
        return NULL;
    struct series *s = &w->keys[w->nkeys];
    if ((s->it = malloc(WATCH_POINTS * sizeof *s->it)) == NULL ||
        (s->v = malloc(WATCH_POINTS * sizeof *s->v)) == NULL) {
        free(s->it);
        s->it = NULL;
        return NULL;
    }
    snprintf(s->key, sizeof s->key, "%s", key);
    s->rank = rank;
    s->n = 0;
    w->nkeys++;
    return s;
}

static void report(struct rally__watch *w, const struct rally__watch_ev *ev, int64_t now_ms)
{
    struct series *s = find_key(w, ev->key ? ev->key : "", ev->rank);
    if (s == NULL || (s->n > 0 && ev->version <= s->iteration))
        return; /* an iteration seen (another rank, or a resumed job redoing it) */
    if (s->n == WATCH_POINTS) { /* every other point goes */
        size_t k = 0;
        for (size_t i = 1; i < s->n; i += 2, k++) {
            s->it[k] = s->it[i];
            s->v[k] = s->v[i];
        }
        s->n = k;
    }
    s->it[s->n] = ev->version;
    s->v[s->n++] = ev->value;
    s->iteration = ev->version;
    s->value = ev->value;
    if (!w->progressed) {
        w->progressed = 1;
        w->first_iteration = ev->version;
        w->first_ms = now_ms;
    }
    if (ev->version > w->iteration) {
        w->iteration = ev->version;
        w->last_ms = now_ms;
    }
}

void rally__watch_event(struct rally__watch *w, const struct rally__watch_ev *ev, int64_t now_ms)
{
    char text[WATCH_TEXT];
    switch (ev->kind) {
    case RALLY__WEV_DEATH:
    case RALLY__WEV_FENCE:
    case RALLY__WEV_ABORT:
        mark(w, ev, now_ms, ev->cause);
        break;
    case RALLY__WEV_EPOCH: {
        struct epoch *e = &w->epochs[w->nepochs++ % WATCH_EPOCHS];
        e->epoch = ev->epoch;
        e->rank = ev->rank;
        snprintf(e->cause, sizeof e->cause, "%s", ev->cause ? ev->cause : "");
        e->at = since(w, now_ms);
        e->recovered = -1;
        e->version = 0;
        snprintf(text, sizeof text, "epoch %u: %s", ev->epoch, ev->cause ? ev->cause : "");
        mark(w, ev, now_ms, text);
        break;
    }
    case RALLY__WEV_RECOVERED: {
        struct epoch *e = find_epoch(w, ev->epoch);
        if (e != NULL) {
            e->recovered = ev->seconds;
            e->version = ev->version;
        }
        w->recoveries++;
        w->recovery_sum += ev->seconds;
        for (size_t i = 0; i < NBUCKETS; i++)
            w->hist[i] += ev->seconds <= buckets[i];
        snprintf(text, sizeof text, "epoch %u: back in step after %.2f s (version %" PRIu64 ")",
                 ev->epoch, ev->seconds, ev->version);
        mark(w, ev, now_ms, text);
        break;
    }
    case RALLY__WEV_RESTART:
        snprintf(text, sizeof text, "restarted (pid %d)", ev->pid);
        mark(w, ev, now_ms, text);
        break;
    case RALLY__WEV_SNAPSHOT: {
        int void_ = ev->state && strcmp(ev->state, "void") == 0;
        struct snap *s = &w->snaps[w->nsnaps++ % WATCH_SNAPS];
        s->version = ev->version;
        snprintf(s->tier, sizeof s->tier, "%s", ev->tier ? ev->tier : "");
        snprintf(s->state, sizeof s->state, "%s", void_ ? "void" : "committed");
        snprintf(s->path, sizeof s->path, "%s", ev->path ? ev->path : "");
        s->nbytes = ev->nbytes;
        s->at = since(w, now_ms);
        if (void_) {
            w->voids++;
            snprintf(text, sizeof text, "snapshot of version %" PRIu64 " void: %s", ev->version,
                     ev->cause ? ev->cause : "");
        } else {
            w->commits++;
            w->has_commit = 1;
            if (ev->version >= w->last_commit) {
                w->last_commit = ev->version;
                w->last_commit_at = s->at;
            }
            snprintf(text, sizeof text, "snapshot of version %" PRIu64 " committed%s%s",
                     ev->version, ev->tier && ev->tier[0] ? " to " : "",
                     ev->tier ? ev->tier : "");
        }
        mark(w, ev, now_ms, text);
        break;
    }
    case RALLY__WEV_RESIZE:
        snprintf(text, sizeof text, "the job goes on with %d ranks", ev->world);
        mark(w, ev, now_ms, text);
        break;
    case RALLY__WEV_REPORT:
        report(w, ev, now_ms);
        break;
    case RALLY__WEV_TOTAL:
        w->total = ev->version;
        break;
    }
    write_event(w, ev, now_ms);
}

struct rally__watch_rank *rally__watch_rows(struct rally__watch *w, int n)
{
    if (n > w->rows_cap) {
        struct rally__watch_rank *p = realloc(w->rows, (size_t)n * sizeof *p);
        if (p == NULL)
            return NULL;
        w->rows = p;
        w->rows_cap = n;
    }
    w->nrows = n;
    memset(w->rows, 0, (size_t)n * sizeof *w->rows);
    return w->rows;
}

void rally__watch_set(struct rally__watch *w, const struct rally__watch_now *now)
{
    w->now = *now;
}

void rally__watch_mark_waited(struct rally__watch_rank *rows, int n, int recovering)
{
    /* the furthest position a rank has waited at, inside its operation, for
     * WAIT_MIN_S: positions come from heartbeats a second apart, so a
     * shorter wait may be one rank's news against another's stale one */
    int any = 0;
    uint64_t top_v = 0;
    uint32_t top_q = 0;
    for (int i = 0; i < n; i++) {
        const struct rally__watch_rank *x = &rows[i];
        if (x->rank < 0 || !x->has_position || !x->in_op || x->op_seconds < WAIT_MIN_S)
            continue;
        if (!any || x->version > top_v || (x->version == top_v && x->seq > top_q)) {
            top_v = x->version;
            top_q = x->seq;
        }
        any = 1;
    }
    for (int i = 0; i < n; i++) {
        struct rally__watch_rank *x = &rows[i];
        if (x->rank < 0)
            continue;
        if (recovering) { /* a round waits for the ranks not back */
            x->waited_on = strcmp(x->state, "running") != 0 && strcmp(x->state, "finished") != 0;
            continue;
        }
        x->waited_on = any && strcmp(x->state, "running") == 0 && x->has_position &&
                       (x->version < top_v || (x->version == top_v && x->seq < top_q) ||
                        (x->version == top_v && x->seq == top_q && !x->in_op));
    }
}

/* --- the renders ---------------------------------------------------------- */

static int grow(struct rally__watch *w, size_t more)
{
    if (w->len + more + 1 <= w->cap)
        return 0;
    size_t cap = w->cap ? w->cap : 4096;
    while (cap < w->len + more + 1)
        cap *= 2;
    char *p = realloc(w->buf, cap);
    if (p == NULL) {
        w->oom = 1;
        return -1;
    }
    w->buf = p;
    w->cap = cap;
    return 0;
}

static void put(struct rally__watch *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct rally__watch *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || grow(w, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(w->buf + w->len, w->cap - w->len, fmt, ap);
    va_end(ap);
    w->len += (size_t)n;
}

static int dump_cb(const char *s, size_t n, void *arg)
{
    struct rally__watch *w = arg;
    if (grow(w, n) != 0)
        return -1;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
    return 0;
}

static double rate(const struct rally__watch *w)
{
    if (w->iteration <= w->first_iteration || w->last_ms <= w->first_ms)
        return 0;
    return (double)(w->iteration - w->first_iteration) * 1e3 / (double)(w->last_ms - w->first_ms);
}

static json_t *num_or_null(double v, int has)
{
    return has && isfinite(v) ? json_real(v) : json_null();
}

static uint64_t job_version(const struct rally__watch *w)
{
    uint64_t v = 0;
    for (int i = 0; i < w->nrows; i++)
        if (w->rows[i].has_position && w->rows[i].version > v)
            v = w->rows[i].version;
    return v;
}

static json_t *rank_json(const struct rally__watch_rank *x)
{
    json_t *o = json_object();
    json_object_set_new(o, "rank", x->rank >= 0 ? json_integer(x->rank) : json_null());
    json_object_set_new(o, "launched_as", json_integer(x->launched_as));
    json_object_set_new(o, "host", json_string(x->host));
    json_object_set_new(o, "pid", x->pid > 0 ? json_integer(x->pid) : json_null());
    json_object_set_new(o, "incarnation", json_integer(x->incarnation));
    json_object_set_new(o, "state", json_string(x->state ? x->state : "starting"));
    json_object_set_new(o, "version",
                        x->has_position ? json_integer((json_int_t)x->version) : json_null());
    json_t *op = json_null();
    if (x->has_position) {
        op = json_object();
        json_object_set_new(op, "kind", json_string(x->op));
        json_object_set_new(op, "seq", json_integer(x->seq));
        json_object_set_new(op, "inside", json_boolean(x->in_op));
        json_object_set_new(op, "seconds", json_real(x->op_seconds));
    }
    json_object_set_new(o, "collective", op);
    json_object_set_new(o, "heartbeat_age_seconds",
                        num_or_null(x->heartbeat_age, x->heartbeat_age >= 0));
    json_object_set_new(o, "deaths", json_integer(x->deaths));
    json_object_set_new(o, "restarts", json_integer(x->restarts));
    json_object_set_new(o, "calls", json_integer((json_int_t)x->calls));
    json_object_set_new(o, "bytes", json_integer((json_int_t)x->nbytes));
    json_object_set_new(o, "waited_on", json_boolean(x->waited_on));
    return o;
}

static json_t *status_json(struct rally__watch *w, int64_t now_ms)
{
    char when[40], started[40];
    rfc3339(w->start_wall + (now_ms - w->start_ms), when, sizeof when);
    rfc3339(w->start_wall, started, sizeof started);
    json_t *o = json_object();
    json_object_set_new(o, "schema", json_string("rally-status/1"));
    json_object_set_new(o, "job", json_string(w->job));
    json_object_set_new(o, "run_id", json_string(w->run_id));
    json_object_set_new(o, "launcher", json_string(w->launcher));
    json_object_set_new(o, "world", json_integer(w->now.world));
    json_object_set_new(o, "launched", json_integer(w->world));
    json_object_set_new(o, "started", json_string(started));
    json_object_set_new(o, "now", json_string(when));
    json_object_set_new(o, "uptime_seconds", json_real(since(w, now_ms)));
    json_object_set_new(o, "phase", json_string(w->now.phase ? w->now.phase : "running"));
    json_object_set_new(o, "epoch", json_integer(w->now.epoch));
    json_object_set_new(o, "version", json_integer((json_int_t)job_version(w)));

    json_t *ranks = json_array(), *waiting = json_array();
    for (int i = 0; i < w->nrows; i++) {
        json_array_append_new(ranks, rank_json(&w->rows[i]));
        if (w->rows[i].waited_on)
            json_array_append_new(waiting, json_integer(w->rows[i].rank));
    }
    json_object_set_new(o, "ranks", ranks);
    json_object_set_new(o, "waiting_on", waiting);

    json_t *epochs = json_array();
    uint64_t first = w->nepochs > WATCH_EPOCHS ? w->nepochs - WATCH_EPOCHS : 0;
    for (uint64_t i = first; i < w->nepochs; i++) {
        const struct epoch *e = &w->epochs[i % WATCH_EPOCHS];
        json_t *x = json_object();
        json_object_set_new(x, "epoch", json_integer(e->epoch));
        json_object_set_new(x, "rank", e->rank >= 0 ? json_integer(e->rank) : json_null());
        json_object_set_new(x, "cause", json_string(e->cause));
        json_object_set_new(x, "at_seconds", json_real(e->at));
        json_object_set_new(x, "recovered_seconds", num_or_null(e->recovered, e->recovered >= 0));
        json_object_set_new(x, "version",
                            e->recovered >= 0 ? json_integer((json_int_t)e->version) : json_null());
        json_array_append_new(epochs, x);
    }
    json_object_set_new(o, "epochs", epochs);

    json_t *snaps = json_array();
    first = w->nsnaps > WATCH_SNAPS ? w->nsnaps - WATCH_SNAPS : 0;
    for (uint64_t i = first; i < w->nsnaps; i++) {
        const struct snap *s = &w->snaps[i % WATCH_SNAPS];
        json_t *x = json_object();
        json_object_set_new(x, "version", json_integer((json_int_t)s->version));
        json_object_set_new(x, "tier", json_string(s->tier));
        json_object_set_new(x, "bytes", json_integer((json_int_t)s->nbytes));
        json_object_set_new(x, "state", json_string(s->state));
        json_object_set_new(x, "path", json_string(s->path));
        json_object_set_new(x, "at_seconds", json_real(s->at));
        json_array_append_new(snaps, x);
    }
    json_object_set_new(o, "snapshots", snaps);

    json_t *prog = json_object(), *values = json_array();
    double r = rate(w);
    json_object_set_new(prog, "iteration", w->progressed ? json_integer((json_int_t)w->iteration)
                                                         : json_null());
    json_object_set_new(prog, "total", w->total ? json_integer((json_int_t)w->total) : json_null());
    json_object_set_new(prog, "rate_per_second", num_or_null(r, r > 0));
    json_object_set_new(prog, "eta_seconds",
                        num_or_null((double)(w->total - w->iteration) / r,
                                    r > 0 && w->total >= w->iteration && w->progressed));
    for (int i = 0; i < w->nkeys; i++) {
        const struct series *s = &w->keys[i];
        json_t *x = json_object(), *pts = json_array();
        json_object_set_new(x, "key", json_string(s->key));
        json_object_set_new(x, "rank", json_integer(s->rank));
        json_object_set_new(x, "iteration", json_integer((json_int_t)s->iteration));
        json_object_set_new(x, "value", num_or_null(s->value, 1));
        for (size_t k = 0; k < s->n; k++)
            json_array_append_new(pts, json_pack("[Io]", (json_int_t)s->it[k],
                                                 num_or_null(s->v[k], 1)));
        json_object_set_new(x, "series", pts);
        json_array_append_new(values, x);
    }
    json_object_set_new(prog, "values", values);
    json_object_set_new(o, "progress", prog);

    uint64_t calls = 0, nbytes = 0;
    for (int i = 0; i < w->nrows; i++) {
        calls += w->rows[i].calls;
        nbytes += w->rows[i].nbytes;
    }
    json_t *tot = json_object();
    json_object_set_new(tot, "deaths", json_integer(w->now.totals.deaths));
    json_object_set_new(tot, "recovered", json_integer(w->now.totals.recovered));
    json_object_set_new(tot, "epochs", json_integer(w->now.totals.epochs));
    json_object_set_new(tot, "restarts", json_integer(w->now.totals.restarts));
    json_object_set_new(tot, "job_restarts", json_integer(w->now.totals.job_restarts));
    json_object_set_new(tot, "snapshots_committed", json_integer((json_int_t)w->commits));
    json_object_set_new(tot, "snapshots_void", json_integer((json_int_t)w->voids));
    json_object_set_new(tot, "calls", json_integer((json_int_t)calls));
    json_object_set_new(tot, "bytes", json_integer((json_int_t)nbytes));
    json_object_set_new(o, "totals", tot);

    json_t *tl = json_array();
    first = w->nmarks > WATCH_TIMELINE ? w->nmarks - WATCH_TIMELINE : 0;
    for (uint64_t i = first; i < w->nmarks; i++) {
        const struct mark *m = &w->marks[i % WATCH_TIMELINE];
        json_t *x = json_object();
        json_object_set_new(x, "at_seconds", json_real(m->at));
        json_object_set_new(x, "event", json_string(names[m->kind]));
        json_object_set_new(x, "rank", m->rank >= 0 ? json_integer(m->rank) : json_null());
        json_object_set_new(x, "text", json_string(m->text));
        json_array_append_new(tl, x);
    }
    json_object_set_new(o, "timeline", tl);
    return o;
}

const char *rally__watch_json(struct rally__watch *w, int64_t now_ms, size_t *nbytes)
{
    rally__watch_mark_waited(w->rows, w->nrows,
                             w->now.phase && strcmp(w->now.phase, "recovering") == 0);
    json_t *o = status_json(w, now_ms);
    w->len = 0;
    w->oom = 0;
    if (o == NULL || grow(w, 0) != 0 ||
        json_dump_callback(o, dump_cb, w, JSON_INDENT(1) | JSON_REAL_PRECISION(15)) != 0 ||
        w->oom) {
        json_decref(o);
        return NULL;
    }
    json_decref(o);
    w->buf[w->len] = '\0';
    *nbytes = w->len;
    return w->buf;
}

/* A label value, escaped as the text format asks (\\, \", \n). */
static void put_label(struct rally__watch *w, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            put(w, "\\%c", *s);
        else if (*s == '\n')
            put(w, "\\n");
        else
            put(w, "%c", *s);
    }
}

static void head(struct rally__watch *w, const char *name, const char *type, const char *help)
{
    put(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

const char *rally__watch_metrics(struct rally__watch *w, int64_t now_ms, size_t *nbytes)
{
    rally__watch_mark_waited(w->rows, w->nrows,
                             w->now.phase && strcmp(w->now.phase, "recovering") == 0);
    w->len = 0;
    w->oom = 0;
    const struct rally__watch_totals *t = &w->now.totals;
    head(w, "rally_job_info", "gauge", "The job: its name, run id and launcher (value 1).");
    put(w, "rally_job_info{job=\"");
    put_label(w, w->job);
    put(w, "\",run_id=\"");
    put_label(w, w->run_id);
    put(w, "\",launcher=\"%s\"} 1\n", w->launcher);
    head(w, "rally_job_uptime_seconds", "gauge", "Seconds since rally-run started the job.");
    put(w, "rally_job_uptime_seconds %.3f\n", since(w, now_ms));
    head(w, "rally_job_world_size", "gauge", "The ranks the job has now.");
    put(w, "rally_job_world_size %d\n", w->now.world);
    head(w, "rally_job_epoch", "gauge", "The tracker's epoch (1 until the first failure).");
    put(w, "rally_job_epoch %u\n", w->now.epoch);
    head(w, "rally_job_recovering", "gauge", "1 while a recovery round runs.");
    put(w, "rally_job_recovering %d\n",
        w->now.phase && strcmp(w->now.phase, "recovering") == 0);
    head(w, "rally_worker_deaths_total", "counter", "Worker deaths (the summary's deaths).");
    put(w, "rally_worker_deaths_total %d\n", t->deaths);
    head(w, "rally_worker_deaths_recovered_total", "counter",
         "Deaths followed by a recovery (the summary's recovered).");
    put(w, "rally_worker_deaths_recovered_total %d\n", t->recovered);
    head(w, "rally_worker_restarts_total", "counter", "Worker processes started again.");
    put(w, "rally_worker_restarts_total %d\n", t->restarts);
    head(w, "rally_recovery_epochs_total", "counter",
         "Recovery rounds begun (the summary's epochs).");
    put(w, "rally_recovery_epochs_total %d\n", t->epochs);
    head(w, "rally_job_restarts_total", "counter", "Whole-job restarts (--auto-resume).");
    put(w, "rally_job_restarts_total %d\n", t->job_restarts);
    head(w, "rally_recovery_seconds", "histogram",
         "Seconds from a failure to the job back in step.");
    for (size_t i = 0; i < NBUCKETS; i++)
        put(w, "rally_recovery_seconds_bucket{le=\"%g\"} %" PRIu64 "\n", buckets[i], w->hist[i]);
    put(w, "rally_recovery_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", w->recoveries);
    put(w, "rally_recovery_seconds_sum %.6f\n", w->recovery_sum);
    put(w, "rally_recovery_seconds_count %" PRIu64 "\n", w->recoveries);
    head(w, "rally_snapshot_commits_total", "counter", "Snapshots committed.");
    put(w, "rally_snapshot_commits_total %" PRIu64 "\n", w->commits);
    head(w, "rally_snapshot_failures_total", "counter", "Snapshots begun and void.");
    put(w, "rally_snapshot_failures_total %" PRIu64 "\n", w->voids);
    uint64_t v = job_version(w);
    if (w->has_commit) {
        head(w, "rally_snapshot_last_version", "gauge", "The newest committed snapshot's version.");
        put(w, "rally_snapshot_last_version %" PRIu64 "\n", w->last_commit);
        head(w, "rally_snapshot_lag_versions", "gauge",
             "Checkpoint versions the job is past its newest snapshot.");
        put(w, "rally_snapshot_lag_versions %" PRIu64 "\n",
            v > w->last_commit ? v - w->last_commit : 0);
        head(w, "rally_snapshot_age_seconds", "gauge", "Seconds since the newest commit.");
        put(w, "rally_snapshot_age_seconds %.3f\n", since(w, now_ms) - w->last_commit_at);
    }
    head(w, "rally_rank_up", "gauge", "1 while a live worker holds the rank.");
    for (int i = 0; i < w->nrows; i++)
        if (w->rows[i].rank >= 0)
            put(w, "rally_rank_up{rank=\"%d\"} %d\n", w->rows[i].rank,
                strcmp(w->rows[i].state, "running") == 0 ||
                    strcmp(w->rows[i].state, "recovering") == 0);
    head(w, "rally_rank_incarnation", "gauge", "Registrations of the rank so far.");
    for (int i = 0; i < w->nrows; i++)
        if (w->rows[i].rank >= 0)
            put(w, "rally_rank_incarnation{rank=\"%d\"} %u\n", w->rows[i].rank,
                w->rows[i].incarnation);
    head(w, "rally_rank_deaths_total", "counter", "Deaths of the rank's workers.");
    for (int i = 0; i < w->nrows; i++)
        put(w, "rally_rank_deaths_total{rank=\"%d\"} %d\n", w->rows[i].launched_as,
            w->rows[i].deaths);
    head(w, "rally_rank_version", "gauge", "The rank's checkpoint version.");
    for (int i = 0; i < w->nrows; i++)
        if (w->rows[i].rank >= 0 && w->rows[i].has_position)
            put(w, "rally_rank_version{rank=\"%d\"} %" PRIu64 "\n", w->rows[i].rank,
                w->rows[i].version);
    head(w, "rally_rank_heartbeat_age_seconds", "gauge", "Seconds since the rank's last frame.");
    for (int i = 0; i < w->nrows; i++)
        if (w->rows[i].rank >= 0 && w->rows[i].heartbeat_age >= 0)
            put(w, "rally_rank_heartbeat_age_seconds{rank=\"%d\"} %.3f\n", w->rows[i].rank,
                w->rows[i].heartbeat_age);
    head(w, "rally_rank_waited_on", "gauge", "1 when the job waits for the rank.");
    for (int i = 0; i < w->nrows; i++)
        if (w->rows[i].rank >= 0)
            put(w, "rally_rank_waited_on{rank=\"%d\"} %d\n", w->rows[i].rank,
                w->rows[i].waited_on);
    head(w, "rally_collective_calls_total", "counter",
         "Collectives the rank's current worker called.");
    for (int i = 0; i < w->nrows; i++)
        if (w->rows[i].rank >= 0)
            put(w, "rally_collective_calls_total{rank=\"%d\"} %" PRIu64 "\n", w->rows[i].rank,
                w->rows[i].calls);
    head(w, "rally_collective_bytes_total", "counter",
         "Bytes of the collectives the rank's current worker called.");
    for (int i = 0; i < w->nrows; i++)
        if (w->rows[i].rank >= 0)
            put(w, "rally_collective_bytes_total{rank=\"%d\"} %" PRIu64 "\n", w->rows[i].rank,
                w->rows[i].nbytes);
    if (w->progressed) {
        head(w, "rally_app_iteration", "gauge", "The newest iteration the application reported.");
        put(w, "rally_app_iteration %" PRIu64 "\n", w->iteration);
    }
    if (w->total) {
        head(w, "rally_app_iterations", "gauge", "The application's iterations in all.");
        put(w, "rally_app_iterations %" PRIu64 "\n", w->total);
    }
    if (w->nkeys > 0) {
        head(w, "rally_app_value", "gauge", "The application's reported values (rally_report).");
        for (int i = 0; i < w->nkeys; i++)
            if (isfinite(w->keys[i].value)) {
                put(w, "rally_app_value{key=\"");
                put_label(w, w->keys[i].key);
                put(w, "\"} %.17g\n", w->keys[i].value);
            }
    }
    if (w->oom || grow(w, 0) != 0)
        return NULL;
    w->buf[w->len] = '\0';
    *nbytes = w->len;
    return w->buf;
}

/* "1 h 02 min", "3 min 05 s", "12 s" */
static void duration(double s, char *out, size_t cap)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(out, cap, "%ld h %02ld min", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(out, cap, "%ld min %02ld s", t / 60, t % 60);
    else
        snprintf(out, cap, "%ld s", t);
}

int rally__watch_progress(struct rally__watch *w, int64_t now_ms, char *line, size_t cap)
{
    (void)now_ms;
    line[0] = '\0';
    if (!w->progressed)
        return 0;
    size_t n = 0;
#define ADD(...)                                                                                 \
    do {                                                                                         \
        int k_ = snprintf(line + n, cap - n, __VA_ARGS__);                                       \
        n = k_ < 0 ? n : n + (size_t)k_ >= cap ? cap - 1 : n + (size_t)k_;                       \
    } while (0)
    ADD("iteration %" PRIu64, w->iteration);
    if (w->total)
        ADD(" of %" PRIu64 " (%d%%)", w->total,
            (int)(w->iteration >= w->total ? 100 : w->iteration * 100 / w->total));
    double r = rate(w);
    if (r > 0) {
        ADD(", %.3g it/s", r);
        if (w->total > w->iteration) {
            char eta[32];
            duration((double)(w->total - w->iteration) / r, eta, sizeof eta);
            ADD(", ETA %s", eta);
        }
    }
    for (int i = 0; i < w->nkeys && i < 2; i++)
        ADD(", %s %.6g", w->keys[i].key, w->keys[i].value);
#undef ADD
    int changed = w->iteration != w->said_iteration;
    w->said_iteration = w->iteration;
    return changed;
}
