/*
 * out.h — rally-run's output streams: lines queue in memory and leave
 * without ever blocking the loop, up to a bound.
 *
 * rally-run serves the tracker from the same loop that copies the workers'
 * output, so a write that waits for a slow reader of its stdout (a stalled
 * terminal, `| less`, a full pipe) would stop the tracker too: heartbeats
 * go unread and healthy workers get fenced.  So every line rally-run prints
 * while the job runs — the workers' and its own — goes into a queue per
 * stream, and the loop writes what the descriptor takes without waiting
 * (rally__launch_out_write; rally__launch_out_want asks for POLLOUT).
 *
 * A worker line that would grow a queue beyond its bound is dropped and
 * counted; once the queue has room again rally-run's stderr gets one line
 * "rally-run: dropped N lines of worker output: the reader of stdout is not
 * keeping up".  rally-run's own lines may use a reserve beyond the bound
 * (RALLY__LAUNCH_OUT_RESERVE), so its verdicts are not dropped for the
 * workers' chatter.  A worker line that repeats the job's failure (hide,
 * which rally-run sets on stderr only, once the tracker failed the job) is
 * left out and counted: the cause is printed once, by rally-run, not once
 * per rank.
 *
 * The descriptor: a pipe, FIFO or terminal is opened again through
 * /proc/self/fd so that O_NONBLOCK applies to our own open file description,
 * not to one a shell shares; where that fails O_NONBLOCK is set on the
 * shared one and restored by rally__launch_out_finish.  A regular file is
 * written as it is (a write to a file does not wait for a reader).
 */
#ifndef RALLY_TOOLS_LAUNCH_OUT_H
#define RALLY_TOOLS_LAUNCH_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define RALLY__LAUNCH_OUT_BOUND (4u << 20)    /* default bound of a queue, bytes */
#define RALLY__LAUNCH_OUT_RESERVE (64u << 10) /* beyond it, for rally-run's own lines */

struct rally__launch_out {
    int fd;           /* written without blocking; -1: discard everything */
    int orig;         /* the descriptor we were given (1 or 2) */
    int restore;      /* the file status flags to put back on orig, -1: none */
    int plain;        /* a regular file: write as it is, never poll */
    const char *name; /* "stdout", "stderr" */
    char *buf;        /* the queue: buf[head, head + len) */
    size_t head, len, cap, bound;
    uint64_t dropped;                  /* worker lines dropped since the last notice */
    uint64_t hidden;                   /* worker lines left out because they repeated hide */
    char hide[512];                    /* "" or the job's failure sentence */
    struct rally__launch_out *notices; /* where the drop notice goes */
    /* a status line (rally-run --progress on a terminal): 1 while one is on
     * the screen; each stream that shares the screen points at the same
     * flag and erases the line before its next line (NULL: never) */
    int *shown;
};

/* Takes over descriptor fd (1 or 2) for the loop; bound is the queue's limit
 * in bytes (0: RALLY__LAUNCH_OUT_BOUND).  Never fails: without a way to be
 * non-blocking it writes to fd as it is. */
void rally__launch_out_open(struct rally__launch_out *o, int fd, const char *name, size_t bound,
                            struct rally__launch_out *notices);

/* Queues "[rank] line\n" for line s[0..n) (no newline in it) from a worker. */
void rally__launch_out_line(struct rally__launch_out *o, int rank, const char *s, size_t n);

/* Queues one of rally-run's own lines: "rally-run: " fmt "\n". */
void rally__launch_out_say(struct rally__launch_out *o, const char *fmt, ...) RALLY__PRINTF(2, 3);

/* Queues status line s (no newline) over the one on the screen: "\r",
 * erase to the end of the line, s.  The next line of any stream sharing
 * o->shown erases it first.  Nothing without o->shown. */
void rally__launch_out_status(struct rally__launch_out *o, const char *s);

/* Writes what the descriptor takes now, without blocking. */
void rally__launch_out_write(struct rally__launch_out *o);

/* 1 when bytes wait and poll should watch o->fd for POLLOUT. */
int rally__launch_out_want(const struct rally__launch_out *o);

/* After the loop: writes everything still queued (blocking: the job is
 * over), the last drop notice included, puts the descriptor back as it was
 * and frees the queue.  o may be used again after rally__launch_out_open. */
void rally__launch_out_finish(struct rally__launch_out *o);

#endif
