/*
 * client.h — a worker's side of the tracker protocol (proto.h).
 *
 * One persistent, authenticated connection per worker.  Besides start-up it
 * is the worker's alarm line: when the job fails the tracker sends ABORT on
 * it, so collectives poll its descriptor next to their data links and stop
 * instead of waiting for a peer that will never answer.
 */
#ifndef RALLY_TRACKER_CLIENT_H
#define RALLY_TRACKER_CLIENT_H

#include <stdint.h>

#include "net/auth.h"
#include "net/frame.h"
#include "net/sock.h"
#include "util/err.h"

struct rally__peer_addr {
    char host[RALLY__HOST_MAX];
    int port;
    uint32_t incarnation;
};

struct rally__tclient {
    int fd; /* -1 when closed */
    char what[RALLY__HOST_MAX + 16]; /* "tracker 127.0.0.1:9000", for messages */
    struct rally__secret secret;
    int rank, world;
    uint32_t incarnation;
    struct rally__peer_addr *peers; /* world entries, indexed by rank */
    struct rally__frame_in in;      /* every read goes through it (check never blocks) */
};

struct rally__tclient_opts {
    const char *tracker;     /* host:port */
    const char *secret_file; /* see net/auth.h */
    const char *task_id;     /* "" when the launcher gave none */
    int listen_port;         /* this worker's peer-link port */
    const char *processor_name;
    int64_t connect_timeout_ms;
};

/* Connects, authenticates, registers and waits for ASSIGN (until every
 * worker has registered, bounded by connect_timeout_ms).  On success t holds
 * rank, world, incarnation and the address book. */
int rally__tclient_join(struct rally__tclient *t, const struct rally__tclient_opts *o,
                        struct rally__err *e);

/* Sends READY and waits for GO (or ABORT) until deadline. */
int rally__tclient_ready(struct rally__tclient *t, int64_t deadline, struct rally__err *e);

int rally__tclient_print(struct rally__tclient *t, const char *msg, struct rally__err *e);

/* Tells the tracker this worker failed with (code, sentence); best effort. */
void rally__tclient_report(struct rally__tclient *t, int code, const char *msg);

/* Call when t->fd is readable: reads what arrived.  An ABORT fills e with
 * the tracker's sentence and returns its code; EOF from the tracker is
 * RALLY_EPEER; nothing decisive yet returns RALLY_OK. */
int rally__tclient_check(struct rally__tclient *t, struct rally__err *e);

/* Sends SHUTDOWN and waits for BYE until deadline. */
int rally__tclient_shutdown(struct rally__tclient *t, int64_t deadline, struct rally__err *e);

/* Closes the connection and frees the address book (t may be zeroed). */
void rally__tclient_close(struct rally__tclient *t);

#endif
