/*
 * watch_int.h — what the watch's files share (watch.h is its interface):
 * its state and a few helpers.
 *
 *   watch.c         recording events, the events file, the rows, the rank
 *                   waited for, the progress line
 *   watch_render.c  status.json and the metrics
 *
 * History is bounded: the newest WATCH_EPOCHS epochs, WATCH_SNAPS
 * snapshots and WATCH_TIMELINE timeline entries are kept (the counts cover
 * everything), and each reported value keeps at most WATCH_POINTS points:
 * when a series is full every other point goes, so a long job's plot keeps
 * its shape at half the density of its newest stretch.
 */
#ifndef RALLY_TOOLS_LAUNCH_WATCH_INT_H
#define RALLY_TOOLS_LAUNCH_WATCH_INT_H

#include <stdio.h>

#include "watch/late.h"
#include "watch/watch.h"

#define WATCH_EPOCHS 256
#define WATCH_SNAPS 64
#define WATCH_TIMELINE 512
#define WATCH_KEYS 16
#define WATCH_POINTS 2048
#define WATCH_TEXT 256
#define WAIT_MIN_S 2.5 /* a wait this long names the ranks behind it */

/* The recovery histogram's upper bounds, seconds (Prometheus' le). */
#define NBUCKETS 10
extern const double rally__watch_buckets[NBUCKETS];

extern const char *const rally__watch_names[]; /* RALLY__WEV_* by name */

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
    int rank;           /* who reported it first */
    uint64_t iteration; /* the newest point's */
    double value;       /* ... and its value */
    size_t n;           /* points */
    uint64_t *it;       /* WATCH_POINTS each */
    double *v;
};

struct rally__watch {
    char job[256], run_id[64], launcher[32];
    int world;
    int64_t start_ms, start_wall;
    FILE *events;
    char events_error[300];
    int events_said; /* rally__watch_events_error gave it */
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
    /* rally__watch_mark_late's, late_cap long */
    struct rally__late *late_in;
    double *late_out, *late_tmp;
    int late_cap;
    /* the owner's, before a render */
    struct rally__watch_rank *rows;
    int nrows, rows_cap;
    struct rally__watch_now now;
    int has_red;                        /* red is known */
    struct rally__watch_redundancy red; /* red.uncovered is red_dom */
    struct rally__watch_domain *red_dom;
    int red_cap;
    /* the render */
    char *buf;
    size_t len, cap;
    int oom;
};

/* Seconds since the job started, at now_ms. */
static inline double rally__watch_since(const struct rally__watch *w, int64_t now_ms)
{
    return (double)(now_ms - w->start_ms) / 1e3;
}
/* RFC 3339 in UTC with milliseconds, for ms since the epoch. */
void rally__watch_rfc3339(int64_t wall_ms, char *s, size_t cap);
/* Iterations a second since the first report (0: not known yet). */
/* Iterations a second since the first report, at now_ms (it falls while
 * reports are overdue); 0 before two. */
double rally__watch_rate(const struct rally__watch *w, int64_t now_ms);
/* The furthest checkpoint version a row's heartbeat said. */
uint64_t rally__watch_version(const struct rally__watch *w);

#endif
