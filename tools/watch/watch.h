/*
 * watch.h — a running job as an observer sees it: what rally-run's status
 * server (/status.json, /metrics, the page), its --events file and its
 * --progress line show.
 *
 * Observers never steer.  The watch only records: the launcher hands it the
 * job's events as they happen (rally__watch_event: a join, a death, an
 * epoch, a recovery, a snapshot, a report from the application, ...) and,
 * just before each render, a row per rank and the totals its policy keeps
 * (rally__watch_rows, w->totals), so what the summary line says and what
 * /metrics says are the same numbers.  No descriptor but the events file,
 * no clock of its own (every call carries the time), no call back into the
 * launcher; renders write into one buffer that is reused.
 *
 * The formats: docs/status.md (status.json, its schema in
 * docs/status.schema.json; the metrics), docs/events.md (the event lines,
 * docs/events.schema.json).
 */
#ifndef RALLY_TOOLS_LAUNCH_WATCH_H
#define RALLY_TOOLS_LAUNCH_WATCH_H

#include <stddef.h>
#include <stdint.h>

/* What an event is (docs/events.md names them). */
enum {
    RALLY__WEV_START = 1, /* the job started: world */
    RALLY__WEV_JOIN,      /* rank got its place: rank, host, incarnation */
    RALLY__WEV_DEATH,     /* rank's process ended without finishing: cause, pid */
    RALLY__WEV_FENCE,     /* the tracker fenced rank while its process may run: cause */
    RALLY__WEV_EPOCH,     /* a recovery round began: epoch, rank (the failed one), cause */
    RALLY__WEV_RECOVERED, /* the job is back in step: epoch, seconds, version */
    RALLY__WEV_RESTART,   /* rank runs a new process: pid, incarnation (processes so far) */
    RALLY__WEV_SNAPSHOT,  /* a snapshot of version: state "committed" (tier, nbytes, path) or
                             "void" (cause) */
    RALLY__WEV_RESIZE,    /* the job went on with world ranks (rank: the one given up, or -1) */
    RALLY__WEV_REPORT,    /* the application reported key = value at iteration version */
    RALLY__WEV_TOTAL,     /* the application's iterations in all: version */
    RALLY__WEV_ABORT,     /* the job failed: cause */
    RALLY__WEV_END        /* rally-run is done: status (its exit status), cause (the verdict) */
};

struct rally__watch_ev {
    int kind;
    int rank; /* -1: none */
    int pid;  /* 0: none */
    uint32_t incarnation, epoch;
    uint64_t version;
    double seconds, value;
    uint64_t nbytes;
    int world, status;
    const char *host, *cause, *key, *tier, *path, *state; /* NULL: none */
};

/* A rank as the launcher and the tracker see it now (filled before a render). */
struct rally__watch_rank {
    int launched_as;      /* the slot (the rank it was launched as) */
    int rank;             /* its rank now; -1: it holds none (given up) */
    int pid;              /* 0: no process */
    char host[256];       /* "": not known yet */
    uint32_t incarnation; /* registrations of the rank (0: none yet) */
    const char *state;    /* "starting", "running", "recovering", "dead", "restarting",
                             "finished", "exited", "gone"; the render makes a running
                             one "silent" after 2.5 s without a frame */
    int has_position;     /* its heartbeats said where it stands */
    uint64_t version;     /* its checkpoint version */
    uint32_t seq;         /* the collective of that version (0: the checkpoint's own) */
    int in_op;            /* 1: inside that operation; 0: in its own code before it */
    char op[64];          /* the operation's kind ("" in its own code) */
    double op_seconds;    /* how long it has stood there */
    double heartbeat_age; /* seconds since its last frame; < 0: none yet */
    int deaths, restarts;
    uint64_t calls, nbytes; /* collectives called, their bytes */
    int waited_on;          /* set by the render: the job waits for this rank */
    uint32_t win;           /* its straggler window (watch/late.h): calls, */
    uint64_t win_wait_ms, win_span_ms; /* ... ms waited inside them, ms they spanned */
    double lateness;        /* set by the render: watch/late.h's measure; NAN unknown */
};

/* The policy's counts: the summary line's numbers. */
struct rally__watch_totals {
    int deaths, recovered, epochs, restarts, job_restarts;
};

/* The job, fixed at the start. */
struct rally__watch_job {
    const char *job;      /* the job's name */
    const char *run_id;   /* the run's UUID ("" without snapshots: one is made anyway) */
    const char *launcher; /* "local", "ssh", ... */
    int world;
    int64_t start_ms;   /* rally__now_ms at the start */
    int64_t start_wall; /* ms since the epoch at the start */
};

struct rally__watch;

/* 0, or ENOMEM. */
int rally__watch_new(struct rally__watch **out, const struct rally__watch_job *job);
void rally__watch_free(struct rally__watch *w); /* NULL is fine */

/* Every event from now on is also a line of path (created or truncated, 0644).
 * 0, or errno.  A line that cannot be written closes the file (the job goes
 * on); rally__watch_events_error then says why, once. */
int rally__watch_events_open(struct rally__watch *w, const char *path);
const char *rally__watch_events_error(struct rally__watch *w);

/* Records ev at now_ms (rally__now_ms's clock). */
void rally__watch_event(struct rally__watch *w, const struct rally__watch_ev *ev, int64_t now_ms);

/* The rows to fill before a render: n of them (the slots in use), their
 * storage the watch's.  NULL when it cannot grow (ENOMEM). */
struct rally__watch_rank *rally__watch_rows(struct rally__watch *w, int n);
/* The rest of what a render needs, set by the owner with the rows. */
struct rally__watch_now {
    struct rally__watch_totals totals;
    const char *phase; /* "starting", "running", "recovering", "done", "failed" */
    uint32_t epoch;
    int world; /* the ranks now */
};
void rally__watch_set(struct rally__watch *w, const struct rally__watch_now *now);

/* What losing one failure domain would take of the copies the workers keep
 * (rally-run's check at the start, launch/domains.h; docs/status.md). */
struct rally__watch_domain {
    const char *level; /* "host" or "rack" */
    char name[256];    /* the host's name, the rack's label, or "ranks 0-3" (rally_host_group) */
    int ranks;         /* its ranks */
    int lost_local;    /* local models every copy of which is on it */
    int lost_pieces;   /* pieces of each result kept in part, likewise */
};
struct rally__watch_redundancy {
    const char *level; /* what the copies spread over: "host" or "rack" */
    int racks;         /* racks are named: losing one is looked at too */
    int local_replica; /* copies of a local model beside its own (rally_local_replica) */
    int xor_set;       /* rally_local_scheme=xor: the parity sets' size; 0: copies */
    int result_copies; /* copies of a result's piece; 0: results are kept whole */
    int n;             /* the domains not covered */
    const struct rally__watch_domain *uncovered;
};
/* Set with the rows before a render (copied); NULL: not known. */
void rally__watch_set_redundancy(struct rally__watch *w, const struct rally__watch_redundancy *red);

/* The renders: NUL-terminated text in the watch's buffer, valid until the
 * next render; *nbytes its length.  NULL when out of memory. */
const char *rally__watch_json(struct rally__watch *w, int64_t now_ms, size_t *nbytes);
const char *rally__watch_metrics(struct rally__watch *w, int64_t now_ms, size_t *nbytes);

/* The progress line at now_ms (no newline): "iteration 8 of 20 (40%), 2.1
 * it/s, ETA 6 s, objective 1.2345"; "" before any report.  Returns 1 when
 * the iteration changed since the last call. */
int rally__watch_progress(struct rally__watch *w, int64_t now_ms, char *line, size_t cap);

/* The ranks the job waits for (marked in the rows by the render), given the
 * rows: once a rank has waited inside an operation for 2.5 s or more
 * (heartbeats come a second apart: a shorter wait may be one rank's news
 * against another's stale one), those behind the furthest such wait, and
 * those silent for 2.5 s (stopped inside the same operation: their
 * position cannot tell); in a recovery round, the ranks not back.  A
 * running rank silent for 2.5 s becomes "silent". */
void rally__watch_mark_waited(struct rally__watch_rank *rows, int n, int recovering);

/* Each row's lateness (watch/late.h) from the windows of the ranks that
 * run: how much later than the median rank it arrives, as a share of the
 * time per call; NAN when not known.  0, or ENOMEM. */
int rally__watch_mark_late(struct rally__watch *w);

#endif
