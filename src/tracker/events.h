/*
 * events.h — what the tracker tells its owner and observers: the events,
 * what it knows of one rank, the job's phase.  The job's state machine
 * (job.h) makes them and the server (server.h) hands them on, so both
 * include this, and job.h needs nothing of the server's.
 */
#ifndef RALLY_TRACKER_EVENTS_H
#define RALLY_TRACKER_EVENTS_H

#include <stdint.h>

#include "tracker/msg.h"

/* What the tracker tells its owner, besides PRINT lines. */
enum {
    RALLY__TEV_LOG = 1,   /* text: a line for the operator (a dropped connection, ...) */
    RALLY__TEV_ASSIGNED,  /* rank, task_id: a worker got its rank */
    RALLY__TEV_GO,        /* every worker is ready; collectives may start */
    RALLY__TEV_FINALIZED, /* rank, task_id: the worker sent SHUTDOWN */
    RALLY__TEV_DONE,      /* every rank finalized */
    RALLY__TEV_FAILED,    /* text: the job failed; ABORT went to every worker */
    RALLY__TEV_RANK_FAILED, /* rank, text = the cause; epoch = the new epoch.  The rank's
                               connection is closed: the owner should make sure its process
                               is gone (SIGKILL) and start it again */
    RALLY__TEV_RECOVERED, /* rank -1; epoch, seconds (failure to every rank's IN_STEP: back in
                             step), position/version of the furthest survivor at GO
                             (has_position), text: the whole story */
    RALLY__TEV_PROGRESS,  /* text: a step of a recovery (epoch begun, rank registered
                             again, epoch assembled), for a verbose log */
    RALLY__TEV_RESIZED,   /* rank, task_id: the rank dropped; world: the ranks now; version (when
                             has_position): the version the job goes on from; text */
    RALLY__TEV_REPORT     /* rank, task_id: a worker's REPORT (rally_report, a snapshot's
                             fate): report (RALLY__REPORT_*), key, value, version, nbytes, text */
};

struct rally__tracker_event {
    int kind;
    int rank;            /* -1 when none */
    const char *task_id; /* "" when none */
    const char *text;    /* "" when none */
    uint32_t epoch;      /* the tracker's epoch when the event happened (1: the first) */
    double seconds;      /* RECOVERED: from the first failure to the job back in step */
    int has_position;    /* RECOVERED: 0 when no worker survived (nothing rejoined) */
    uint64_t position;   /* RECOVERED: the largest REJOIN position (docs/protocol.md) */
    uint32_t version;    /* RECOVERED: that worker's checkpoint version */
    int world;           /* RESIZED: the number of ranks now */
    int disconnected;    /* RANK_FAILED: 1 when the cause is the rank's own connection
                            closing (its process crashed or exited), 0 when the tracker
                            fenced a worker that may still run (silence, a report) */
    /* REPORT (proto.h's REPORT frame): version is the worker's checkpoint
     * version when it reported (a VALUE's iteration), or the snapshot's */
    int report;          /* RALLY__REPORT_VALUE, _TOTAL, _SNAPSHOT, _SNAPSHOT_VOID */
    const char *key;     /* VALUE: the value's name; SNAPSHOT: the tier ("" when none) */
    const char *detail;  /* RESIZED of a rank lost: text's words after who was lost (what the
                            job does now), for an owner that names the rank its own way */
    double value;        /* VALUE: the value; TOTAL: the job's iterations in all */
    uint64_t nbytes;     /* SNAPSHOT: the snapshot's bytes */
};

/* What the tracker knows of one rank, for observers (rally__tracker_rank_info). */
struct rally__tracker_rank {
    int present;                  /* a live registered worker holds the rank now */
    int finalized;                /* it sent SHUTDOWN */
    char host[RALLY__HOST_MAX];   /* the host it registered from ("": never registered) */
    char task_id[RALLY__TASK_MAX];
    uint32_t incarnation;         /* registrations of the rank so far (0: none) */
    int heartbeats;               /* it has sent a HEARTBEAT */
    int64_t last_rx_ms;           /* rally__now_ms of its last frame (0: none) */
    uint64_t position;            /* where it stands, from its heartbeats (proto.h); 0 until it says */
    int waiting;                  /* 1: inside the operation at position; 0: in its own code */
    char what[RALLY__WHAT_MAX];   /* the operation's kind ("" in its own code) */
    int64_t since_ms;             /* rally__now_ms since when it stands there */
    uint64_t calls, nbytes;       /* collectives called and their bytes, from its heartbeats */
    uint32_t win;                 /* its straggler window (docs/status.md): the newest win calls, */
    uint64_t win_wait_ms;         /* ... the ms it waited inside them */
    uint64_t win_span_ms;         /* ... and the ms they spanned, by its own clock */
};

/* The job's phase (the job state machine's, job.h). */
enum {
    RALLY__TPHASE_JOINING,
    RALLY__TPHASE_STARTING,
    RALLY__TPHASE_RUNNING,
    RALLY__TPHASE_ASSEMBLING, /* a recovery round: waiting for every rank to come back */
    RALLY__TPHASE_DONE,
    RALLY__TPHASE_FAILED
};

#endif
