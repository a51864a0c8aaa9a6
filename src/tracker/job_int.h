/*
 * job_int.h — what the files of the tracker's job state machine share
 * (job.h is its interface): the job's state and the helpers each file
 * offers the others.
 *
 *   job.c         the interface (step, deadline, settings): each event to
 *                 the file that handles it
 *   job_core.c    at the bottom: recording actions, members, failure,
 *                 epochs and the phases, rank failures, RESIZED
 *   job_frames.c  rank assignment and every frame a member sends
 *   job_watch.c   time: start-up and epoch deadlines, heartbeats, the
 *                 progress watch (docs/recovery.md, "Stuck ranks")
 *   job_members.c an elastic job's changes: a rank given up, workers taken
 *                 in
 */
#ifndef RALLY_TRACKER_JOB_INT_H
#define RALLY_TRACKER_JOB_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "tracker/job.h"

enum { M_NONE, M_AUTHED, M_REG };

/* What a rank's INPUT said, and which incarnation said it (0: none yet). */
struct rank_input {
    char scheme[RALLY__SCHEME_MAX];
    uint64_t fingerprint;
    uint32_t incarnation;
};

struct rally__job {
    int world;
    int64_t startup_ms;
    enum rally__job_phase phase;
    struct rally__job_member *head, *tail;
    struct rally__job_member **by_rank; /* NULL while a rank is down */
    int nregistered, nready, nfinal;
    int code, failed_rank;
    int lost; /* it failed of a worker's loss (ERROR RALLY__ELOST): a snapshot mends it */
    char sentence[RALLY__ERR_MSG_MAX];
    /* the job failed on a worker's own report (its ERROR frame): its words,
     * which every worker's stderr repeats, and its rank (-1: a worker with
     * no rank yet); "" and -1 otherwise */
    char reported[RALLY__ERR_MSG_MAX];
    int reported_rank;
    int64_t startup_deadline; /* ms */
    uint64_t arrivals;
    unsigned char *book;
    size_t book_cap;
    /* recovery */
    int no_recovery;
    int64_t heartbeat_ms;     /* 0: off */
    int64_t progress_ms;      /* the progress watch: 0 off */
    int progress_fail;        /* a stuck rank fails the job (else it is fenced) */
    int64_t round_began;      /* ms: the current recovery round (RESET, then the book) began */
    int64_t go_at;            /* ms: the last GO (nobody waited for anybody before it) */
    int went;                 /* the first GO went out */
    uint32_t epoch;           /* 1 from the start */
    uint32_t *incarnation;    /* world entries: the newest registration of each rank */
    char **rank_task;         /* world entries: each rank's task id, kept for re-registration */
    char **rank_host;         /* world entries: the host its newest incarnation registered
                                 from, for observers (NULL: none, or no memory for it) */
    char *rank_final;         /* world entries: the rank sent SHUTDOWN */
    char *no_restart;         /* world entries: its owner will not restart the rank's process */
    struct rank_input *input; /* world entries: the input each rank's first INPUT named */
    int recovering;           /* from a failure until the GO that ends it */
    /* from that GO until every rank says it is back in step (IN_STEP of the
     * epoch): RECOVERED then, with the furthest survivor at GO */
    int catching_up;
    struct rally__tracker_event back;
    int back_rank; /* that survivor's rank, -1: none survived */
    /* elastic membership (docs/recovery.md, "Elastic jobs") */
    int min_world;                   /* 0: the world is fixed; else a rank lost for good is dropped
                                        while at least this many are left */
    uint32_t members;                /* membership changes so far (every ASSIGN says it) */
    uint32_t members_said;           /* the change the last TEV_RESIZED told */
    uint32_t assign_flags;           /* RALLY__ASSIGN_*, decided with it */
    int lost_rank;                   /* the rank the last change dropped (-1: it took some in) */
    int taken;                       /* ... the workers it took in */
    int max_world;                   /* the ranks the tables hold: growth stops there */
    int njoining;                    /* members waiting to be taken in */
    char lost_task[RALLY__TASK_MAX]; /* ... and its task id */
    int64_t failed_at_us;            /* the first failure of this recovery */
    int64_t epoch_deadline;          /* ms: the current epoch must reach GO by then */
    /* the step running */
    int64_t now_us, now;
    struct rally__job_act *acts;
    size_t nacts, acts_cap;
    unsigned char *arena;
    size_t arena_len, arena_cap;
    int oom;
};

#define NONE ((size_t)-1)

/* --- job_core.c: what the files above share --- */

int rally__jb_live(const struct rally__job *j);
/* recording actions */
size_t rally__jb_stash(struct rally__job *j, const void *p, size_t n);
struct rally__job_act *rally__jb_act(struct rally__job *j, int kind, struct rally__job_member *m);
struct rally__job_act *rally__jb_send_msg(struct rally__job *j, struct rally__job_member *m,
                                          uint16_t type, const void *body, size_t n);
void rally__jb_emit(struct rally__job *j, int kind, int rank, const char *task, const char *text);
void rally__jb_emit_ev(struct rally__job *j, const struct rally__tracker_event *ev);
void rally__jb_say(struct rally__job *j, int kind, const char *fmt, ...) RALLY__PRINTF(3, 4);
void rally__jb_appendf(char *s, size_t cap, size_t *len, const char *fmt, ...) RALLY__PRINTF(4, 5);
int rally__jb_small_int(const char *s, int world, int *v);
/* members: rank r's newest incarnation registered from host (for
 * observers: kept when the memory is there, never a failure) */
void rally__jb_keep_host(struct rally__job *j, int r, const char *host);
/* phases: every rank finalized, the phase DONE */
void rally__jb_done(struct rally__job *j);
/* the job's failure */
void rally__jb_fail_job(struct rally__job *j, int code, int rank, const char *fmt, ...)
    RALLY__PRINTF(4, 5);
/* epochs */
int rally__jb_present(const struct rally__job *j, int r);
void rally__jb_send_assign(struct rally__job *j);
void rally__jb_maybe_assign(struct rally__job *j);
void rally__jb_new_epoch(struct rally__job *j, const char *cause);
void rally__jb_fence(struct rally__job *j, int r);
void rally__jb_rank_failed(struct rally__job *j, int r, const char *cause, const char *fatal,
                           int disconnected);
/* The membership changed and every rank is present: TEV_RESIZED, and the
 * ASSIGN flags of the change. */
void rally__jb_resized(struct rally__job *j);
/* a member's end: dropped (its connection went: the job decides), lost (a
 * rank failure when the job recovers), refused (an ABORT says why first) */
void rally__jb_drop(struct rally__job *j, struct rally__job_member *m, const char *fmt, ...)
    RALLY__PRINTF(3, 4);
void rally__jb_lose(struct rally__job *j, struct rally__job_member *m, const char *fmt, ...)
    RALLY__PRINTF(3, 4);
void rally__jb_reject(struct rally__job *j, struct rally__job_member *m, int code, const char *fmt,
                      ...) RALLY__PRINTF(4, 5);
void rally__jb_go(struct rally__job *j);
/* A rank said it is back in step (IN_STEP of the current epoch): RECOVERED
 * once every rank has. */
void rally__jb_in_step(struct rally__job *j, struct rally__job_member *m);

/* --- job_frames.c --- */

void rally__jb_on_frame(struct rally__job *j, struct rally__job_member *m, uint16_t type,
                        const unsigned char *body, size_t n);

/* --- job_watch.c --- */

int64_t rally__jb_progress_deadline(const struct rally__job *j);
void rally__jb_tick(struct rally__job *j);
int rally__jb_watched(const struct rally__job *j, const struct rally__job_member *m);

/* --- job_members.c --- */

/* The owner gave rank r up for good (RALLY__JOB_EV_GONE). */
void rally__jb_gone(struct rally__job *j, int r, const char *cause);
/* A worker with a new task id registered (m, no rank yet): it waits to be
 * taken in, if the job can grow; 0, -1 when it has no room for it, -2 when
 * the job cannot take workers in now (before its start, or finishing). */
int rally__jb_join(struct rally__job *j, struct rally__job_member *m);
/* A worker said the job committed a checkpoint that asks to take the
 * waiting ones in (GROW_READY of the current epoch). */
void rally__jb_take_in(struct rally__job *j);

#endif
