/*
 * watch.c — a running job as an observer sees it (watch.h): recording the
 * events, the events file, the rows, the rank waited for, the progress
 * line.  watch_int.h says how history is bounded; watch_render.c renders.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "watch/watch_int.h"

const double rally__watch_buckets[NBUCKETS] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

const char *const rally__watch_names[] = {
    [RALLY__WEV_START] = "start",     [RALLY__WEV_JOIN] = "join",
    [RALLY__WEV_DEATH] = "death",     [RALLY__WEV_FENCE] = "fence",
    [RALLY__WEV_EPOCH] = "epoch",     [RALLY__WEV_RECOVERED] = "recovered",
    [RALLY__WEV_RESTART] = "restart", [RALLY__WEV_SNAPSHOT] = "snapshot",
    [RALLY__WEV_RESIZE] = "resize",   [RALLY__WEV_REPORT] = "report",
    [RALLY__WEV_TOTAL] = "total",     [RALLY__WEV_ABORT] = "abort",
    [RALLY__WEV_END] = "end",
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
    free(w->late_in);
    free(w->late_out);
    free(w->late_tmp);
    for (int i = 0; i < w->nkeys; i++) {
        free(w->keys[i].it);
        free(w->keys[i].v);
    }
    free(w->rows);
    free(w->red_dom);
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
    if (!w->events_error[0] || w->events_said)
        return NULL;
    w->events_said = 1;
    return w->events_error;
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
    rally__watch_rfc3339(w->start_wall + (now_ms - w->start_ms), when, sizeof when);
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    json_object_set_new(o, "time", json_string(when));
    json_object_set_new(o, "t", json_real(rally__watch_since(w, now_ms)));
    json_object_set_new(o, "event", json_string(rally__watch_names[ev->kind]));
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
    int bad = o == NULL || json_dumpf(o, w->events, JSON_COMPACT | JSON_REAL_PRECISION(15)) != 0 ||
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
    m->at = rally__watch_since(w, now_ms);
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
        return;                 /* an iteration seen (another rank, or a resumed job redoing it) */
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
        e->at = rally__watch_since(w, now_ms);
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
            w->hist[i] += ev->seconds <= rally__watch_buckets[i];
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
        s->at = rally__watch_since(w, now_ms);
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
                     ev->version, ev->tier && ev->tier[0] ? " to " : "", ev->tier ? ev->tier : "");
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

void rally__watch_set_redundancy(struct rally__watch *w, const struct rally__watch_redundancy *red)
{
    w->has_red = 0;
    if (red == NULL)
        return;
    if (red->n > w->red_cap) { /* grows with the world, then stays */
        struct rally__watch_domain *d = realloc(w->red_dom, (size_t)red->n * sizeof *d);
        if (d == NULL)
            return; /* not known: status.json says null */
        w->red_dom = d;
        w->red_cap = red->n;
    }
    if (red->n > 0)
        memcpy(w->red_dom, red->uncovered, (size_t)red->n * sizeof *w->red_dom);
    w->red = *red;
    w->red.uncovered = w->red_dom;
    w->has_red = 1;
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
        /* a live worker that sent nothing for WAIT_MIN_S (its heartbeat
         * thread beats a second apart): stopped, or too starved to beat */
        if (strcmp(x->state, "running") == 0 && x->heartbeat_age >= WAIT_MIN_S)
            x->state = "silent";
        if (recovering) { /* a round waits for the ranks not back */
            x->waited_on = strcmp(x->state, "running") != 0 && strcmp(x->state, "silent") != 0 &&
                           strcmp(x->state, "finished") != 0;
            continue;
        }
        /* behind the furthest wait, or silent (no frame for WAIT_MIN_S while
         * heartbeats come a second apart: stopped, or stuck with its own
         * heartbeat thread), wherever it said it stood, if it said */
        int behind =
            x->has_position && (x->version < top_v || (x->version == top_v && x->seq < top_q) ||
                                (x->version == top_v && x->seq == top_q && !x->in_op));
        x->waited_on = any && (strcmp(x->state, "running") == 0 || strcmp(x->state, "silent") == 0) &&
                       (behind || x->heartbeat_age >= WAIT_MIN_S);
    }
}

int rally__watch_mark_late(struct rally__watch *w)
{
    int n = w->nrows;
    for (int i = 0; i < n; i++)
        w->rows[i].lateness = NAN;
    if (n > w->late_cap) { /* grows with the world, then stays */
        struct rally__late *in = realloc(w->late_in, (size_t)n * sizeof *in);
        if (in != NULL)
            w->late_in = in;
        double *out = realloc(w->late_out, (size_t)n * sizeof *out);
        if (out != NULL)
            w->late_out = out;
        double *tmp = realloc(w->late_tmp, (size_t)n * sizeof *tmp);
        if (tmp != NULL)
            w->late_tmp = tmp;
        if (in == NULL || out == NULL || tmp == NULL)
            return ENOMEM;
        w->late_cap = n;
    }
    for (int i = 0; i < n; i++) {
        const struct rally__watch_rank *x = &w->rows[i];
        int runs = x->rank >= 0 && (strcmp(x->state, "running") == 0 ||
                                    strcmp(x->state, "silent") == 0);
        w->late_in[i] = runs ? (struct rally__late){x->win, x->win_wait_ms, x->win_span_ms}
                             : (struct rally__late){0, 0, 0};
    }
    rally__late_measure(w->late_in, n, w->late_out, w->late_tmp);
    for (int i = 0; i < n; i++)
        w->rows[i].lateness = w->late_out[i];
    return 0;
}

void rally__watch_rfc3339(int64_t wall_ms, char *s, size_t cap)
{
    time_t t = (time_t)(wall_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t n = strftime(s, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(s + n, cap - n, ".%03dZ", (int)(wall_ms % 1000));
}

double rally__watch_rate(const struct rally__watch *w, int64_t now_ms)
{
    if (w->iteration <= w->first_iteration || w->last_ms <= w->first_ms)
        return 0;
    /* the iterations over the time they took; once the next report is
     * overdue by its usual gap (WAIT_MIN_S at least: a rank stopped, the
     * others waiting), the time since counts too, so the rate falls and the
     * ETA grows while the job stands still */
    uint64_t n = w->iteration - w->first_iteration;
    double span = (double)(w->last_ms - w->first_ms);
    double grace = span / (double)n > WAIT_MIN_S * 1e3 ? span / (double)n : WAIT_MIN_S * 1e3;
    double stood = (double)(now_ms - w->first_ms) - grace;
    return (double)n * 1e3 / (stood > span ? stood : span);
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
    line[0] = '\0';
    if (!w->progressed)
        return 0;
    size_t n = 0;
#define ADD(...)                                                                                   \
    do {                                                                                           \
        int k_ = snprintf(line + n, cap - n, __VA_ARGS__);                                         \
        n = k_ < 0 ? n : n + (size_t)k_ >= cap ? cap - 1 : n + (size_t)k_;                         \
    } while (0)
    ADD("iteration %" PRIu64, w->iteration);
    if (w->total)
        ADD(" of %" PRIu64 " (%d%%)", w->total,
            (int)(w->iteration >= w->total ? 100 : w->iteration * 100 / w->total));
    double r = rally__watch_rate(w, now_ms);
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
