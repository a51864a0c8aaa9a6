/*
 * watch_render.c — the watch's renders (watch.h): status.json
 * (docs/status.schema.json) and the Prometheus text exposition
 * (docs/status.md), into the watch's one buffer.
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "watch/watch_int.h"

uint64_t rally__watch_version(const struct rally__watch *w)
{
    uint64_t v = 0;
    for (int i = 0; i < w->nrows; i++)
        if (w->rows[i].has_position && w->rows[i].version > v)
            v = w->rows[i].version;
    return v;
}

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

static json_t *num_or_null(double v, int has)
{
    return has && isfinite(v) ? json_real(v) : json_null();
}

/* 1 when row i is the first of its host among the ranks now: its ranks
 * (*n) and the largest lateness among them (*late; NAN when none is
 * known): the others wait for a host until its latest rank arrives. */
static int host_lateness(const struct rally__watch *w, int i, int *n, double *late)
{
    const struct rally__watch_rank *x = &w->rows[i];
    if (x->rank < 0 || x->host[0] == '\0')
        return 0;
    for (int j = 0; j < i; j++)
        if (w->rows[j].rank >= 0 && strcmp(w->rows[j].host, x->host) == 0)
            return 0;
    *n = 0;
    *late = NAN;
    for (int j = i; j < w->nrows; j++) {
        const struct rally__watch_rank *y = &w->rows[j];
        if (y->rank < 0 || strcmp(y->host, x->host) != 0)
            continue;
        ++*n;
        if (isfinite(y->lateness) && !(y->lateness <= *late))
            *late = y->lateness;
    }
    return 1;
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
        /* the application's number, as the tracker's sentences say it; null: the
         * checkpoint's own agreement */
        json_object_set_new(op, "seq", x->seq > 0 ? json_integer(x->seq - 1) : json_null());
        json_object_set_new(op, "inside", json_boolean(x->in_op));
        json_object_set_new(op, "seconds", json_real(x->op_seconds));
    }
    json_object_set_new(o, "collective", op);
    json_object_set_new(o, "heartbeat_age_seconds",
                        num_or_null(x->heartbeat_age, x->heartbeat_age >= 0));
    json_object_set_new(o, "deaths", json_integer(x->deaths));
    json_object_set_new(o, "restarts", json_integer(x->restarts));
    json_object_set_new(o, "lateness", num_or_null(x->lateness, 1));
    json_object_set_new(o, "calls", json_integer((json_int_t)x->calls));
    json_object_set_new(o, "bytes", json_integer((json_int_t)x->nbytes));
    json_object_set_new(o, "waited_on", json_boolean(x->waited_on));
    return o;
}

/* What losing one domain would take (null: rally-run has not looked). */
static json_t *redundancy_json(const struct rally__watch *w)
{
    if (!w->has_red)
        return json_null();
    const struct rally__watch_redundancy *d = &w->red;
    json_t *o = json_object(), *list = json_array();
    json_object_set_new(o, "level", json_string(d->level));
    json_object_set_new(o, "covered", json_boolean(d->n == 0));
    json_object_set_new(o, "local_replica", json_integer(d->local_replica));
    json_object_set_new(o, "xor_set", d->xor_set > 0 ? json_integer(d->xor_set) : json_null());
    json_object_set_new(o, "result_copies",
                        d->result_copies > 0 ? json_integer(d->result_copies) : json_null());
    for (int i = 0; i < d->n; i++) {
        const struct rally__watch_domain *x = &d->uncovered[i];
        json_array_append_new(list, json_pack("{sssssisisi}", "level", x->level, "domain", x->name,
                                              "ranks", x->ranks, "lost_local", x->lost_local,
                                              "lost_pieces", x->lost_pieces));
    }
    json_object_set_new(o, "uncovered", list);
    return o;
}

static json_t *status_json(struct rally__watch *w, int64_t now_ms)
{
    char when[40], started[40];
    rally__watch_rfc3339(w->start_wall + (now_ms - w->start_ms), when, sizeof when);
    rally__watch_rfc3339(w->start_wall, started, sizeof started);
    json_t *o = json_object();
    json_object_set_new(o, "schema", json_string("rally-status/1"));
    json_object_set_new(o, "job", json_string(w->job));
    json_object_set_new(o, "run_id", json_string(w->run_id));
    json_object_set_new(o, "launcher", json_string(w->launcher));
    json_object_set_new(o, "world", json_integer(w->now.world));
    json_object_set_new(o, "launched", json_integer(w->world));
    json_object_set_new(o, "started", json_string(started));
    json_object_set_new(o, "now", json_string(when));
    json_object_set_new(o, "uptime_seconds", json_real(rally__watch_since(w, now_ms)));
    json_object_set_new(o, "phase", json_string(w->now.phase ? w->now.phase : "running"));
    json_object_set_new(o, "epoch", json_integer(w->now.epoch));
    json_object_set_new(o, "version", json_integer((json_int_t)rally__watch_version(w)));

    json_t *ranks = json_array(), *waiting = json_array();
    for (int i = 0; i < w->nrows; i++) {
        json_array_append_new(ranks, rank_json(&w->rows[i]));
        if (w->rows[i].waited_on)
            json_array_append_new(waiting, json_integer(w->rows[i].rank));
    }
    json_object_set_new(o, "ranks", ranks);
    json_object_set_new(o, "waiting_on", waiting);
    json_t *hosts = json_array();
    for (int i = 0; i < w->nrows; i++) {
        int n;
        double late;
        if (!host_lateness(w, i, &n, &late))
            continue;
        json_t *x = json_object();
        json_object_set_new(x, "host", json_string(w->rows[i].host));
        json_object_set_new(x, "ranks", json_integer(n));
        json_object_set_new(x, "lateness", num_or_null(late, 1));
        json_array_append_new(hosts, x);
    }
    json_object_set_new(o, "hosts", hosts);

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
    double r = rally__watch_rate(w, now_ms);
    json_object_set_new(prog, "iteration",
                        w->progressed ? json_integer((json_int_t)w->iteration) : json_null());
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
            json_array_append_new(pts,
                                  json_pack("[Io]", (json_int_t)s->it[k], num_or_null(s->v[k], 1)));
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
    json_object_set_new(o, "redundancy", redundancy_json(w));

    json_t *tl = json_array();
    first = w->nmarks > WATCH_TIMELINE ? w->nmarks - WATCH_TIMELINE : 0;
    for (uint64_t i = first; i < w->nmarks; i++) {
        const struct mark *m = &w->marks[i % WATCH_TIMELINE];
        json_t *x = json_object();
        json_object_set_new(x, "at_seconds", json_real(m->at));
        json_object_set_new(x, "event", json_string(rally__watch_names[m->kind]));
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
    rally__watch_mark_late(w); /* (out of memory: every lateness unknown) */
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

/* The failure domains whose loss would take every copy of something, by
 * level (racks only when the job has some). */
static void put_redundancy(struct rally__watch *w)
{
    int hosts = 0, racks = 0;
    for (int i = 0; i < w->red.n; i++) {
        int rack = strcmp(w->red.uncovered[i].level, "rack") == 0;
        racks += rack;
        hosts += !rack;
    }
    head(w, "rally_redundancy_uncovered_domains", "gauge",
         "Hosts (racks) whose loss would take every copy of a local model or a result's piece.");
    put(w, "rally_redundancy_uncovered_domains{level=\"host\"} %d\n", hosts);
    if (w->red.racks)
        put(w, "rally_redundancy_uncovered_domains{level=\"rack\"} %d\n", racks);
}

const char *rally__watch_metrics(struct rally__watch *w, int64_t now_ms, size_t *nbytes)
{
    rally__watch_mark_waited(w->rows, w->nrows,
                             w->now.phase && strcmp(w->now.phase, "recovering") == 0);
    rally__watch_mark_late(w); /* (out of memory: every lateness unknown) */
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
    put(w, "rally_job_uptime_seconds %.3f\n", rally__watch_since(w, now_ms));
    head(w, "rally_job_world_size", "gauge", "The ranks the job has now.");
    put(w, "rally_job_world_size %d\n", w->now.world);
    head(w, "rally_job_epoch", "gauge", "The tracker's epoch (1 until the first failure).");
    put(w, "rally_job_epoch %u\n", w->now.epoch);
    head(w, "rally_job_recovering", "gauge", "1 while a recovery round runs.");
    put(w, "rally_job_recovering %d\n", w->now.phase && strcmp(w->now.phase, "recovering") == 0);
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
    if (w->has_red)
        put_redundancy(w);
    head(w, "rally_recovery_seconds", "histogram",
         "Seconds from a failure to the job back in step.");
    for (size_t i = 0; i < NBUCKETS; i++)
        put(w, "rally_recovery_seconds_bucket{le=\"%g\"} %" PRIu64 "\n", rally__watch_buckets[i],
            w->hist[i]);
    put(w, "rally_recovery_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", w->recoveries);
    put(w, "rally_recovery_seconds_sum %.6f\n", w->recovery_sum);
    put(w, "rally_recovery_seconds_count %" PRIu64 "\n", w->recoveries);
    head(w, "rally_snapshot_commits_total", "counter", "Snapshots committed.");
    put(w, "rally_snapshot_commits_total %" PRIu64 "\n", w->commits);
    head(w, "rally_snapshot_failures_total", "counter", "Snapshots begun and void.");
    put(w, "rally_snapshot_failures_total %" PRIu64 "\n", w->voids);
    uint64_t v = rally__watch_version(w);
    if (w->has_commit) {
        head(w, "rally_snapshot_last_version", "gauge", "The newest committed snapshot's version.");
        put(w, "rally_snapshot_last_version %" PRIu64 "\n", w->last_commit);
        head(w, "rally_snapshot_lag_versions", "gauge",
             "Checkpoint versions the job is past its newest snapshot.");
        put(w, "rally_snapshot_lag_versions %" PRIu64 "\n",
            v > w->last_commit ? v - w->last_commit : 0);
        head(w, "rally_snapshot_age_seconds", "gauge", "Seconds since the newest commit.");
        put(w, "rally_snapshot_age_seconds %.3f\n",
            rally__watch_since(w, now_ms) - w->last_commit_at);
    }
    head(w, "rally_rank_up", "gauge", "1 while a live worker holds the rank.");
    for (int i = 0; i < w->nrows; i++)
        if (w->rows[i].rank >= 0)
            put(w, "rally_rank_up{rank=\"%d\"} %d\n", w->rows[i].rank,
                strcmp(w->rows[i].state, "running") == 0 ||
                    strcmp(w->rows[i].state, "silent") == 0 ||
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
            put(w, "rally_rank_waited_on{rank=\"%d\"} %d\n", w->rows[i].rank, w->rows[i].waited_on);
    head(w, "rally_rank_lateness_ratio", "gauge",
         "How much later than the median rank the rank arrives at collectives, as a share of "
         "the time per call, over its newest calls (docs/status.md).");
    for (int i = 0; i < w->nrows; i++)
        if (w->rows[i].rank >= 0 && isfinite(w->rows[i].lateness))
            put(w, "rally_rank_lateness_ratio{rank=\"%d\"} %.4f\n", w->rows[i].rank,
                w->rows[i].lateness);
    head(w, "rally_host_lateness_ratio", "gauge",
         "The largest lateness among the host's ranks: the others wait for the host until its "
         "latest rank arrives.");
    for (int i = 0; i < w->nrows; i++) {
        int n;
        double late;
        if (host_lateness(w, i, &n, &late) && isfinite(late)) {
            put(w, "rally_host_lateness_ratio{host=\"");
            put_label(w, w->rows[i].host);
            put(w, "\"} %.4f\n", late);
        }
    }
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
