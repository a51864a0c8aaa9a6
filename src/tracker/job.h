/*
 * job.h — the tracker's job logic as a pure state machine: events in,
 * actions out.
 *
 * The job knows workers only as members (struct rally__job_member), which
 * the owner (server.c) embeds in its connections: no descriptors, no
 * sockets, no clock of its own (every event carries the time), no callbacks.
 * rally__job_step() takes one event (a member authenticated, a member sent a
 * frame, a member was lost, the launcher saw a rank die, the owner aborts,
 * time passed) and leaves a list of actions (send this message to that
 * member, admit it, close it, refuse it, tell the owner this event or PRINT
 * line) that the owner carries out before the next step.  The actions are
 * valid until the next step.
 *
 * Phases (one enumeration): JOINING until every worker registered, STARTING
 * from ASSIGN until every rank is READY, RUNNING from GO, ASSEMBLING after a
 * failure until every rank is back (then STARTING again), and the final DONE
 * (every rank finalized) or FAILED.  server.h tells the recovery story.
 */
#ifndef RALLY_TRACKER_JOB_H
#define RALLY_TRACKER_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "tracker/events.h"
#include "tracker/msg.h"

/* The phases observers see through rally__tracker_phase (server.h), by the
 * same numbers. */
enum rally__job_phase {
    RALLY__JOB_JOINING = RALLY__TPHASE_JOINING,
    RALLY__JOB_STARTING = RALLY__TPHASE_STARTING,
    RALLY__JOB_RUNNING = RALLY__TPHASE_RUNNING,
    RALLY__JOB_ASSEMBLING = RALLY__TPHASE_ASSEMBLING,
    RALLY__JOB_DONE = RALLY__TPHASE_DONE,
    RALLY__JOB_FAILED = RALLY__TPHASE_FAILED
};

/* A worker's connection, as the job sees it.  The owner zeroes it and sets
 * owner, peer and what before RALLY__JOB_EV_OPEN; the rest is the job's. */
struct rally__job_member {
    void *owner;                     /* the owner's connection */
    char peer[RALLY__HOST_MAX];      /* the address the tracker sees */
    char what[RALLY__HOST_MAX + 48]; /* "connection from 1.2.3.4:5678", then "rank 3 (on ...)" */
    /* the job's */
    struct rally__job_member *prev, *next;
    int state; /* 0: not a member, 1: authenticated, 2: registered */
    char task_id[RALLY__TASK_MAX];
    char host[RALLY__HOST_MAX];
    char domain[RALLY__DOMAIN_MAX]; /* its rack or zone, for the address book */
    int listen_port;
    uint64_t arrival;
    int rank; /* -1 until assigned */
    int ready, finalized;
    int joining; /* registered with a new task id: waits to be taken in (elastic) */
    uint32_t assigned; /* the epoch of the last ASSIGN it got, 0: none yet */
    uint32_t rejoined; /* the epoch of its last accepted REJOIN, 0: none */
    uint32_t in_step;  /* the epoch of its last IN_STEP (back in step after it), 0: none */
    uint64_t position; /* from that REJOIN */
    uint32_t version;
    int heartbeats;  /* it sent a HEARTBEAT: silence now counts */
    int64_t last_rx; /* ms: when its last frame arrived */
    /* where it stands, from its heartbeats (the progress watch) */
    uint64_t pos;        /* a position (proto.h); 0 (bootstrap op 0) until it says */
    int pos_waiting;     /* 1: inside the operation at pos; 0: in its own code before it */
    char pos_what[RALLY__WHAT_MAX]; /* the operation's kind */
    int64_t pos_since;   /* ms: since when it stands there */
    uint64_t calls, nbytes; /* its collectives and their bytes, from its newest heartbeat */
    uint32_t win;           /* ... its straggler window: calls, ms waited inside, ms spanned */
    uint64_t win_wait_ms, win_span_ms;
};

enum {
    RALLY__JOB_EV_OPEN = 1, /* m authenticated (it may now REGISTER) */
    RALLY__JOB_EV_FRAME,    /* m sent a frame: type, body, nbytes */
    RALLY__JOB_EV_LOST,     /* m's peer went away (EOF, reset): text says how */
    RALLY__JOB_EV_DROP,     /* m broke the rules below the job (a bad frame, no REGISTER in
                               time, no memory): text says how; it is closed */
    RALLY__JOB_EV_DIED,     /* the owner saw rank's process die: text is the cause */
    RALLY__JOB_EV_ABORT,    /* the owner fails the job: code, text */
    RALLY__JOB_EV_GONE,     /* the owner gave rank up for good (text: why); an elastic job
                               goes on without it (rally__job_set_min_world) */
    RALLY__JOB_EV_TICK      /* time passed (deadlines, heartbeats) */
};

struct rally__job_ev {
    int kind;
    int64_t now_us; /* the time, for every event */
    struct rally__job_member *m;
    uint16_t type;
    const unsigned char *body;
    size_t nbytes;
    int rank, code;
    const char *text;
};

enum {
    RALLY__JOB_SEND = 1, /* queue frame type to m: body; an ASSIGN has with_book set: body
                            (the head), the newest BOOK, then tail */
    RALLY__JOB_BOOK,     /* a new address book: body[0..nbytes), for the ASSIGNs after it */
    RALLY__JOB_ADMIT,    /* m registered: its REGISTER deadline no longer applies */
    RALLY__JOB_CLOSE,    /* close m's connection now, sending nothing more */
    RALLY__JOB_REFUSE,   /* send what is queued to m (an ABORT saying why), then close it */
    RALLY__JOB_EVENT,    /* tell the owner ev */
    RALLY__JOB_PRINT     /* a PRINT line for the owner: ev.rank, ev.text */
};

struct rally__job_act {
    int kind;
    struct rally__job_member *m;
    uint16_t type;
    int with_book;
    const unsigned char *body, *tail;
    size_t nbytes, tail_nbytes;
    struct rally__tracker_event ev;
    /* while a step runs: where body, tail, text, task_id and key sit in the arena */
    size_t body_at, tail_at, text_at, task_at, key_at, detail_at;
};

struct rally__job_opts {
    int world;                  /* 1..RALLY__WORLD_MAX */
    int64_t startup_timeout_ms; /* every REGISTER and READY (and each epoch) by then; <= 0: none */
};

struct rally__job;

int rally__job_new(struct rally__job **out, const struct rally__job_opts *o, int64_t now_us,
                   struct rally__err *e);
void rally__job_free(struct rally__job *j);

/* Runs one event; then rally__job_actions lists what to do. */
void rally__job_step(struct rally__job *j, const struct rally__job_ev *ev);
/* The actions of the last step, in order (valid until the next step). */
size_t rally__job_actions(const struct rally__job *j, const struct rally__job_act **acts);

/* The earliest time (ms) a TICK has something to do; RALLY__NEVER: none. */
int64_t rally__job_deadline(const struct rally__job *j);

enum rally__job_phase rally__job_phase(const struct rally__job *j);
/* For observers (server.h, rally__tracker_rank_info): what the job knows of
 * rank into *out (zeroed first): from the member that holds the rank, else
 * from the job's tables (incarnation, task id, host, finalized).
 * RALLY_EINVAL for a rank outside [0, world). */
int rally__job_rank_info(const struct rally__job *j, int rank, struct rally__tracker_rank *out);
/* Why the job failed ("" while it has not), and the rank that caused it (-1). */
const char *rally__job_sentence(const struct rally__job *j, int *rank);
/* When the job failed on a worker's own report: its words ("" otherwise),
 * and its rank (-1: none, or a worker that had no rank yet). */
const char *rally__job_reported(const struct rally__job *j, int *rank);
int rally__job_code(const struct rally__job *j);
/* 1 when the job failed of what recovery in memory lost (server.h). */
int rally__job_lost(const struct rally__job *j);
uint32_t rally__job_epoch(const struct rally__job *j);
/* 1 when a rank failing now would be recovered (server.h). */
int rally__job_recoverable(const struct rally__job *j);
void rally__job_set_recovery(struct rally__job *j, int on);
void rally__job_set_heartbeat_timeout(struct rally__job *j, int64_t timeout_ms);
/* Elastic membership: a rank given up for good (RALLY__JOB_EV_GONE) is
 * dropped while at least min_world ranks are left; the ranks above it move
 * down one, every survivor is reset and its next ASSIGN counts one more
 * membership change (TEV_RESIZED tells the owner).  Fewer, or min_world 0
 * (the default), fails the job.  Call before the first GO. */
void rally__job_set_min_world(struct rally__job *j, int min_world);
/* The number of ranks now, and the rank the worker with task_id has now
 * (-1: none). */
int rally__job_world(const struct rally__job *j);
/* Elastic growth: a REGISTER with a task id no rank has, while the job runs
 * with fewer than max_world ranks, waits to be taken in; every worker hears
 * GROW, the next checkpoint asks for it, and the first GROW_READY of the
 * epoch takes every waiting worker in (a membership change, TEV_RESIZED)
 * at the end, up to max_world.  RALLY_ENOMEM when the tables cannot grow.
 * Call before the first GO. */
int rally__job_set_max_world(struct rally__job *j, int max_world);
int rally__job_rank_of(const struct rally__job *j, const char *task_id);
const char *rally__job_task_of(const struct rally__job *j, int rank); /* "": none */
/* The progress watch (docs/recovery.md, "Stuck ranks"): a rank the others
 * have waited for in an operation for timeout_ms (it stands still in its own
 * code, or elsewhere), or that has not come back to a recovery round for
 * timeout_ms while it stands still, is named; then fail = 0 fences it (a
 * rank failure: TEV_RANK_FAILED, a new epoch), fail = 1 fails the job with
 * that sentence.  0 (the default): off. */
void rally__job_set_progress_timeout(struct rally__job *j, int64_t timeout_ms, int fail);
/* The owner will not restart rank's process again (its restarts are
 * exhausted): the progress watch fails the job when that rank is stuck,
 * with the sentence, rather than fence it. */
void rally__job_no_restart(struct rally__job *j, int rank);

#endif
