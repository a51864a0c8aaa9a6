/*
 * watch_test.c — unit tests of what an observer of a job sees
 * (tools/watch/watch.h): the status document carries every event's trace
 * (epochs with their recovery time, snapshots committed and void, the
 * application's series), the metrics say the policy's counts and a
 * cumulative histogram, the rank the job waits for is the one behind, a long
 * series stays bounded and keeps its newest point, the events file has one
 * JSON object a line in order, and the progress line reads as a person
 * would want it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "watch/watch.h"

static struct rally__watch *made(void)
{
    struct rally__watch_job job = {.job = "kmeans",
                                   .run_id = "r-1",
                                   .launcher = "local",
                                   .world = 4,
                                   .start_ms = 1000,
                                   .start_wall = 1700000000000};
    struct rally__watch *w;
    assert_int_equal(rally__watch_new(&w, &job), 0);
    return w;
}

static void ev(struct rally__watch *w, int64_t at, struct rally__watch_ev e)
{
    rally__watch_event(w, &e, at);
}

/* A job of 4 with a death, its recovery, two snapshots (one void) and a
 * series; rows as the launcher fills them. */
static void story(struct rally__watch *w)
{
    ev(w, 1000, (struct rally__watch_ev){.kind = RALLY__WEV_START, .rank = -1, .world = 4});
    for (int r = 0; r < 4; r++)
        ev(w, 1100,
           (struct rally__watch_ev){
               .kind = RALLY__WEV_JOIN, .rank = r, .host = "h", .incarnation = 1});
    ev(w, 1200, (struct rally__watch_ev){.kind = RALLY__WEV_TOTAL, .rank = 0, .version = 10});
    for (int it = 1; it <= 3; it++)
        ev(w, 1200 + 500 * it,
           (struct rally__watch_ev){.kind = RALLY__WEV_REPORT,
                                    .rank = 0,
                                    .key = "objective",
                                    .version = (uint64_t)it,
                                    .value = 100.0 / it});
    ev(w, 3000,
       (struct rally__watch_ev){.kind = RALLY__WEV_SNAPSHOT,
                                .rank = 0,
                                .version = 2,
                                .tier = "local",
                                .nbytes = 1448,
                                .path = "/s/2",
                                .state = "committed"});
    ev(w, 3100,
       (struct rally__watch_ev){
           .kind = RALLY__WEV_DEATH, .rank = 2, .pid = 77, .cause = "killed by signal 9"});
    ev(w, 3100,
       (struct rally__watch_ev){
           .kind = RALLY__WEV_EPOCH, .rank = 2, .epoch = 2, .cause = "rank 2 died"});
    ev(w, 3150,
       (struct rally__watch_ev){
           .kind = RALLY__WEV_RESTART, .rank = 2, .pid = 78, .incarnation = 2});
    ev(w, 3400,
       (struct rally__watch_ev){
           .kind = RALLY__WEV_RECOVERED, .rank = -1, .epoch = 2, .seconds = 0.3, .version = 3});
    ev(w, 3500,
       (struct rally__watch_ev){.kind = RALLY__WEV_SNAPSHOT,
                                .rank = 0,
                                .version = 4,
                                .state = "void",
                                .cause = "rank 2 died first"});
    struct rally__watch_rank *rows = rally__watch_rows(w, 4);
    assert_non_null(rows);
    for (int r = 0; r < 4; r++) {
        rows[r] = (struct rally__watch_rank){.launched_as = r,
                                             .rank = r,
                                             .pid = 70 + r,
                                             .incarnation = r == 2 ? 2 : 1,
                                             .state = "running",
                                             .has_position = 1,
                                             .version = 4,
                                             .seq = 1,
                                             .op_seconds = 3,
                                             .in_op = r != 2,
                                             .heartbeat_age = 0.1,
                                             .deaths = r == 2,
                                             .restarts = r == 2,
                                             .calls = 10,
                                             .nbytes = 800};
        snprintf(rows[r].host, sizeof rows[r].host, "h");
        snprintf(rows[r].op, sizeof rows[r].op, "%s", r == 2 ? "" : "allreduce");
    }
    struct rally__watch_now now = {
        .totals = {.deaths = 1, .recovered = 1, .epochs = 1, .restarts = 1},
        .phase = "running",
        .epoch = 2,
        .world = 4};
    rally__watch_set(w, &now);
}

static json_t *status(struct rally__watch *w, int64_t at)
{
    size_t n;
    const char *s = rally__watch_json(w, at, &n);
    assert_non_null(s);
    assert_int_equal(strlen(s), n);
    json_error_t err;
    json_t *o = json_loads(s, 0, &err);
    assert_non_null(o);
    return o;
}

static void status_carries_the_story(void **state)
{
    (void)state;
    struct rally__watch *w = made();
    story(w);
    json_t *o = status(w, 4000);
    assert_string_equal(json_string_value(json_object_get(o, "job")), "kmeans");
    assert_int_equal(json_integer_value(json_object_get(o, "world")), 4);
    assert_int_equal(json_integer_value(json_object_get(o, "epoch")), 2);
    json_t *ranks = json_object_get(o, "ranks");
    assert_int_equal(json_array_size(ranks), 4);
    json_t *r2 = json_array_get(ranks, 2);
    assert_int_equal(json_integer_value(json_object_get(r2, "incarnation")), 2);
    assert_int_equal(json_integer_value(json_object_get(r2, "pid")), 72);
    assert_true(json_is_true(json_object_get(r2, "waited_on")));
    json_t *waiting = json_object_get(o, "waiting_on");
    assert_int_equal(json_array_size(waiting), 1);
    assert_int_equal(json_integer_value(json_array_get(waiting, 0)), 2);
    json_t *e = json_array_get(json_object_get(o, "epochs"), 0);
    assert_int_equal(json_integer_value(json_object_get(e, "epoch")), 2);
    assert_int_equal(json_integer_value(json_object_get(e, "rank")), 2);
    assert_float_equal(json_real_value(json_object_get(e, "recovered_seconds")), 0.3, 1e-9);
    assert_float_equal(json_real_value(json_object_get(e, "at_seconds")), 2.1, 1e-9);
    json_t *snaps = json_object_get(o, "snapshots");
    assert_int_equal(json_array_size(snaps), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(snaps, 0), "state")),
                        "committed");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(snaps, 0), "bytes")), 1448);
    assert_string_equal(json_string_value(json_object_get(json_array_get(snaps, 1), "state")),
                        "void");
    json_t *p = json_object_get(o, "progress");
    assert_int_equal(json_integer_value(json_object_get(p, "iteration")), 3);
    assert_int_equal(json_integer_value(json_object_get(p, "total")), 10);
    /* 2 iterations in 1 s */
    assert_float_equal(json_real_value(json_object_get(p, "rate_per_second")), 2.0, 1e-9);
    assert_float_equal(json_real_value(json_object_get(p, "eta_seconds")), 3.5, 1e-9);
    json_t *v = json_array_get(json_object_get(p, "values"), 0);
    assert_string_equal(json_string_value(json_object_get(v, "key")), "objective");
    json_t *series = json_object_get(v, "series");
    assert_int_equal(json_array_size(series), 3);
    assert_float_equal(json_real_value(json_array_get(json_array_get(series, 2), 1)), 100.0 / 3,
                       1e-12);
    json_t *t = json_object_get(o, "totals");
    assert_int_equal(json_integer_value(json_object_get(t, "deaths")), 1);
    assert_int_equal(json_integer_value(json_object_get(t, "snapshots_committed")), 1);
    assert_int_equal(json_integer_value(json_object_get(t, "snapshots_void")), 1);
    assert_int_equal(json_integer_value(json_object_get(t, "calls")), 40);
    /* the timeline: snapshot, death, epoch, restart, recovered, void snapshot */
    json_t *tl = json_object_get(o, "timeline");
    assert_int_equal(json_array_size(tl), 6);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tl, 1), "event")),
                        "death");
    assert_string_equal(json_string_value(json_object_get(json_array_get(tl, 4), "event")),
                        "recovered");
    json_decref(o);
    rally__watch_free(w);
}

static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p += n)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return 1;
    return 0;
}

static void metrics_say_the_summary(void **state)
{
    (void)state;
    struct rally__watch *w = made();
    story(w);
    size_t n;
    const char *m = rally__watch_metrics(w, 4000, &n);
    assert_non_null(m);
    assert_true(has_line(m, "rally_worker_deaths_total 1"));
    assert_true(has_line(m, "rally_worker_deaths_recovered_total 1"));
    assert_true(has_line(m, "rally_recovery_epochs_total 1"));
    assert_true(has_line(m, "rally_worker_restarts_total 1"));
    assert_true(has_line(m, "# TYPE rally_recovery_seconds histogram"));
    assert_true(has_line(m, "rally_recovery_seconds_bucket{le=\"0.25\"} 0"));
    assert_true(has_line(m, "rally_recovery_seconds_bucket{le=\"0.5\"} 1"));
    assert_true(has_line(m, "rally_recovery_seconds_bucket{le=\"+Inf\"} 1"));
    assert_true(has_line(m, "rally_recovery_seconds_count 1"));
    assert_true(has_line(m, "rally_snapshot_commits_total 1"));
    assert_true(has_line(m, "rally_snapshot_failures_total 1"));
    assert_true(has_line(m, "rally_snapshot_last_version 2"));
    assert_true(has_line(m, "rally_snapshot_lag_versions 2"));
    assert_true(has_line(m, "rally_rank_version{rank=\"3\"} 4"));
    assert_true(has_line(m, "rally_rank_waited_on{rank=\"2\"} 1"));
    assert_true(has_line(m, "rally_rank_deaths_total{rank=\"2\"} 1"));
    assert_true(has_line(m, "rally_collective_bytes_total{rank=\"0\"} 800"));
    assert_true(has_line(m, "rally_app_iteration 3"));
    assert_true(has_line(m, "rally_app_value{key=\"objective\"} 33.333333333333336"));
    /* every sample's family has HELP and TYPE before it */
    for (const char *l = m; *l; l = strchr(l, '\n') + 1) {
        if (*l == '#')
            continue;
        char fam[96];
        size_t k = strcspn(l, "{ ");
        snprintf(fam, sizeof fam, "# TYPE %.*s ", (int)k, l);
        if (strstr(m, fam) == NULL) { /* a histogram's _bucket/_sum/_count */
            snprintf(fam, sizeof fam, "# TYPE rally_recovery_seconds ");
            assert_non_null(strstr(l, "rally_recovery_seconds_"));
        }
        assert_true(strstr(m, fam) < l);
    }
    rally__watch_free(w);
}

static void waited_on_is_the_rank_behind(void **state)
{
    (void)state;
    struct rally__watch_rank rows[4];
    for (int r = 0; r < 4; r++)
        rows[r] = (struct rally__watch_rank){.rank = r,
                                             .state = "running",
                                             .has_position = 1,
                                             .version = 5,
                                             .seq = 3,
                                             .in_op = 1,
                                             .op_seconds = 1};
    rows[1].seq = 2;                      /* still in the op before */
    rally__watch_mark_waited(rows, 4, 0); /* a second: maybe stale news */
    assert_int_equal(rows[0].waited_on + rows[1].waited_on + rows[2].waited_on, 0);
    for (int r = 0; r < 4; r++)
        rows[r].op_seconds = 3;
    rally__watch_mark_waited(rows, 4, 0);
    assert_int_equal(rows[0].waited_on + rows[2].waited_on + rows[3].waited_on, 0);
    assert_int_equal(rows[1].waited_on, 1);
    /* all in the same operation, rank 2 silent (stopped inside it) */
    for (int r = 0; r < 4; r++)
        rows[r].seq = 3, rows[r].heartbeat_age = 0.5;
    rows[2].heartbeat_age = 3;
    rally__watch_mark_waited(rows, 4, 0);
    assert_int_equal(rows[0].waited_on + rows[1].waited_on + rows[3].waited_on, 0);
    assert_int_equal(rows[2].waited_on, 1);
    /* ... and no longer "running": it is silent */
    assert_string_equal(rows[2].state, "silent");
    assert_string_equal(rows[0].state, "running");
    rows[2].state = "running";
    rows[2].has_position = 0; /* stopped before its first heartbeat */
    rally__watch_mark_waited(rows, 4, 0);
    assert_int_equal(rows[2].waited_on, 1);
    rows[2].has_position = 1;
    rows[2].heartbeat_age = 0.5;
    /* nobody inside an operation: nobody waits */
    for (int r = 0; r < 4; r++)
        rows[r].in_op = 0;
    rally__watch_mark_waited(rows, 4, 0);
    assert_int_equal(rows[0].waited_on + rows[1].waited_on + rows[2].waited_on, 0);
    /* a recovery round waits for the ranks not back */
    rows[3].state = "restarting";
    rally__watch_mark_waited(rows, 4, 1);
    assert_int_equal(rows[3].waited_on, 1);
    assert_int_equal(rows[0].waited_on, 0);
}

/* The lateness: the median rank's share of its time spent waiting inside
 * collectives, minus the rank's own; unknown for a window too short (too
 * few calls, or under a second), for a rank that does not run, and when
 * fewer than two ranks can be compared.  Shown per rank and per host (its
 * latest rank) in status.json and /metrics. */
static void lateness_is_the_median_wait_minus_its_own(void **state)
{
    (void)state;
    struct rally__watch *w = made();
    struct rally__watch_rank *rows = rally__watch_rows(w, 5);
    assert_non_null(rows);
    /* ranks 0, 1, 3 wait 900 ms of 1000, rank 2 waits 100: it arrives 80 % late */
    const uint64_t wait[5] = {900, 900, 100, 900, 0};
    for (int r = 0; r < 5; r++)
        rows[r] = (struct rally__watch_rank){.rank = r,
                                             .launched_as = r,
                                             .state = "running",
                                             .win = 200,
                                             .win_wait_ms = wait[r],
                                             .win_span_ms = 1000};
    snprintf(rows[0].host, sizeof rows[0].host, "h1");
    snprintf(rows[1].host, sizeof rows[1].host, "h1");
    snprintf(rows[2].host, sizeof rows[2].host, "h2");
    snprintf(rows[3].host, sizeof rows[3].host, "h2");
    snprintf(rows[4].host, sizeof rows[4].host, "h3");
    rows[4].win = 9; /* too few calls yet */
    assert_int_equal(rally__watch_mark_late(w), 0);
    assert_true(rows[2].lateness > 0.799 && rows[2].lateness < 0.801);
    assert_true(rows[0].lateness == 0 && rows[1].lateness == 0 && rows[3].lateness == 0);
    assert_true(rows[4].lateness != rows[4].lateness); /* NAN */
    struct rally__watch_now now = {.phase = "running", .epoch = 1, .world = 5};
    rally__watch_set(w, &now);
    size_t n;
    const char *m = rally__watch_metrics(w, 2000, &n);
    assert_non_null(m);
    assert_non_null(strstr(m, "rally_rank_lateness_ratio{rank=\"2\"} 0.8000\n"));
    assert_non_null(strstr(m, "rally_rank_lateness_ratio{rank=\"0\"} 0.0000\n"));
    assert_null(strstr(m, "rally_rank_lateness_ratio{rank=\"4\"}"));
    assert_non_null(strstr(m, "rally_host_lateness_ratio{host=\"h2\"} 0.8000\n"));
    assert_non_null(strstr(m, "rally_host_lateness_ratio{host=\"h1\"} 0.0000\n"));
    assert_null(strstr(m, "rally_host_lateness_ratio{host=\"h3\"}")); /* none known */
    const char *js = rally__watch_json(w, 2000, &n);
    json_t *o = json_loads(js, 0, NULL);
    assert_non_null(o);
    json_t *hosts = json_object_get(o, "hosts");
    assert_int_equal(json_array_size(hosts), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(hosts, 1), "host")), "h2");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(hosts, 1), "ranks")), 2);
    assert_true(json_is_null(json_object_get(json_array_get(hosts, 2), "lateness")));
    json_t *r2 = json_array_get(json_object_get(o, "ranks"), 2);
    assert_true(json_real_value(json_object_get(r2, "lateness")) > 0.799);
    json_decref(o);
    /* a window under a second is not judged; one rank alone has no median */
    rows = rally__watch_rows(w, 2);
    rows[0] = (struct rally__watch_rank){.rank = 0, .state = "running", .win = 200,
                                         .win_wait_ms = 900, .win_span_ms = 999};
    rows[1] = (struct rally__watch_rank){.rank = 1, .state = "running", .win = 200,
                                         .win_wait_ms = 100, .win_span_ms = 1000};
    assert_int_equal(rally__watch_mark_late(w), 0);
    assert_true(rows[0].lateness != rows[0].lateness && rows[1].lateness != rows[1].lateness);
    /* a rank that finished is no longer compared */
    rows[0].win_span_ms = 1000;
    rows[0].state = "finished";
    assert_int_equal(rally__watch_mark_late(w), 0);
    assert_true(rows[1].lateness != rows[1].lateness);
    rally__watch_free(w);
}

/* A job whose reports stop (a rank stopped, the others waiting for it):
 * past the usual gap between reports (or 2.5 s, the longer), the time
 * counts against the rate, so the rate falls and the ETA grows; before
 * that they stand as the reports left them. */
static void rate_falls_while_reports_stop(void **state)
{
    (void)state;
    struct rally__watch *w = made();
    ev(w, 1000, (struct rally__watch_ev){.kind = RALLY__WEV_TOTAL, .rank = 0, .version = 20});
    for (int it = 1; it <= 5; it++)
        ev(w, 1000 * it,
           (struct rally__watch_ev){
               .kind = RALLY__WEV_REPORT, .rank = 0, .key = "loss", .version = (uint64_t)it});
    rally__watch_rows(w, 0);
    char line[256];
    json_t *o = status(w, 7000); /* 2 s after the last: within 2.5 s */
    json_t *p = json_object_get(o, "progress");
    assert_float_equal(json_real_value(json_object_get(p, "rate_per_second")), 1.0, 1e-9);
    assert_float_equal(json_real_value(json_object_get(p, "eta_seconds")), 15.0, 1e-9);
    json_decref(o);
    rally__watch_progress(w, 7000, line, sizeof line);
    assert_string_equal(line, "iteration 5 of 20 (25%), 1 it/s, ETA 15 s, loss 0");
    o = status(w, 11000); /* a 6 s stall: 4 iterations in 10 - 2.5 s */
    p = json_object_get(o, "progress");
    assert_float_equal(json_real_value(json_object_get(p, "rate_per_second")), 4 / 7.5, 1e-9);
    assert_float_equal(json_real_value(json_object_get(p, "eta_seconds")), 15 * 7.5 / 4, 1e-9);
    json_decref(o);
    rally__watch_progress(w, 11000, line, sizeof line);
    assert_string_equal(line, "iteration 5 of 20 (25%), 0.533 it/s, ETA 28 s, loss 0");
    rally__watch_free(w);
}

static void long_series_stay_bounded(void **state)
{
    (void)state;
    struct rally__watch *w = made();
    for (int it = 1; it <= 5000; it++) {
        ev(w, 1000 + it,
           (struct rally__watch_ev){.kind = RALLY__WEV_REPORT,
                                    .rank = 0,
                                    .key = "loss",
                                    .version = (uint64_t)it,
                                    .value = it});
        ev(w, 1000 + it,
           (struct rally__watch_ev){.kind = RALLY__WEV_REPORT,
                                    .rank = 1,
                                    .key = "loss",
                                    .version = (uint64_t)it,
                                    .value = -1}); /* a second rank: ignored */
    }
    rally__watch_rows(w, 0);
    json_t *o = status(w, 9000);
    json_t *v = json_array_get(json_object_get(json_object_get(o, "progress"), "values"), 0);
    json_t *s = json_object_get(v, "series");
    assert_true(json_array_size(s) <= 2048);
    assert_true(json_array_size(s) >= 1024);
    json_int_t prev = 0;
    size_t i;
    json_t *pt;
    json_array_foreach(s, i, pt)
    {
        json_int_t it = json_integer_value(json_array_get(pt, 0));
        assert_true(it > prev);
        assert_float_equal(json_real_value(json_array_get(pt, 1)), (double)it, 0);
        prev = it;
    }
    assert_int_equal(prev, 5000);
    json_decref(o);
    rally__watch_free(w);
}

static void events_file_has_a_line_each(void **state)
{
    (void)state;
    char path[] = "/tmp/watch_test_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    struct rally__watch *w = made();
    assert_int_equal(rally__watch_events_open(w, path), 0);
    story(w);
    ev(w, 5000,
       (struct rally__watch_ev){
           .kind = RALLY__WEV_END, .rank = -1, .status = 0, .cause = "the run succeeded"});
    rally__watch_free(w);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static const char *const want[] = {
        "start",  "join",     "join",  "join",  "join",    "total",     "report",   "report",
        "report", "snapshot", "death", "epoch", "restart", "recovered", "snapshot", "end"};
    char line[4096];
    size_t k = 0;
    double prev_t = -1;
    while (fgets(line, sizeof line, f) != NULL) {
        json_error_t err;
        json_t *o = json_loads(line, 0, &err);
        assert_non_null(o);
        assert_true(k < sizeof want / sizeof want[0]);
        assert_string_equal(json_string_value(json_object_get(o, "event")), want[k]);
        assert_non_null(json_string_value(json_object_get(o, "time")));
        double t = json_real_value(json_object_get(o, "t"));
        assert_true(t >= prev_t);
        prev_t = t;
        if (strcmp(want[k], "end") == 0)
            assert_int_equal(json_integer_value(json_object_get(o, "deaths")), 1);
        if (strcmp(want[k], "recovered") == 0)
            assert_float_equal(json_real_value(json_object_get(o, "seconds")), 0.3, 1e-12);
        json_decref(o);
        k++;
    }
    fclose(f);
    unlink(path);
    assert_int_equal(k, sizeof want / sizeof want[0]);
}

static void progress_line_reads_well(void **state)
{
    (void)state;
    struct rally__watch *w = made();
    char line[256];
    assert_int_equal(rally__watch_progress(w, 1000, line, sizeof line), 0);
    assert_string_equal(line, "");
    story(w);
    assert_int_equal(rally__watch_progress(w, 4000, line, sizeof line), 1);
    assert_string_equal(line, "iteration 3 of 10 (30%), 2 it/s, ETA 4 s, objective 33.3333");
    assert_int_equal(rally__watch_progress(w, 4000, line, sizeof line), 0); /* no news */
    rally__watch_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(status_carries_the_story),     cmocka_unit_test(metrics_say_the_summary),
        cmocka_unit_test(waited_on_is_the_rank_behind), cmocka_unit_test(long_series_stay_bounded),
        cmocka_unit_test(lateness_is_the_median_wait_minus_its_own),
        cmocka_unit_test(rate_falls_while_reports_stop),
        cmocka_unit_test(events_file_has_a_line_each),  cmocka_unit_test(progress_line_reads_well),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
