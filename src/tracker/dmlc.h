/*
 * dmlc.h — a worker's side of the classic dmlc (rabit) tracker protocol,
 * so that a job launched by dmlc-submit's tracker runs rally workers.
 *
 * docs/protocol-dmlc.md gives every byte.  In short: each request is a new
 * TCP connection to the tracker opening with a magic number, this worker's
 * rank (-1 before it has one), the world size it knows (-1), its task id and
 * a command: "start" (first join, also of a restarted worker, which the
 * tracker recognises by its task id), "recover" (a survivor re-wiring after
 * a failure), "print" and "shutdown".  For start and recover the tracker
 * answers with the rank, the tree and ring neighbours and which of them to
 * connect to (the rest connect here); the worker reports its port and the
 * tracker connection ends.  There is no authentication of any kind.
 *
 * The dmlc tracker wires only its own tree and ring, and hands out no
 * address book.  rally's topology differs (its tree splits ranks another
 * way; halving-doubling needs more partners), so rally uses the tracker's
 * links only once: the workers pass one entry each (rank, address, port of
 * the rally link listener, incarnation, flags) around the tracker's ring
 * until everyone holds the whole address book, then close those links and
 * wire rally's own mesh from the book.  rally__dmlc_join() does all of it.
 */
#ifndef RALLY_TRACKER_DMLC_H
#define RALLY_TRACKER_DMLC_H

#include <stdint.h>

#include "net/sock.h"
#include "tracker/msg.h"
#include "util/err.h"

#define RALLY__DMLC_MAGIC 0xff99           /* the tracker's, both ways */
#define RALLY__DMLC_BOOK_MAGIC 0x58444c52u /* "RLDX": an address-book entry */
#define RALLY__DMLC_MAX_LINKS 16           /* tree neighbours plus ring prev/next */
#define RALLY__DMLC_MAX_WORLD 65536
#define RALLY__DMLC_TASK_MAX 256

/* Entry flags, OR-ed over the job by the exchange. */
#define RALLY__DMLC_F_RECOVERING 1u /* restarted, or re-wiring after a failure */

struct rally__dmlc {
    char host[RALLY__HOST_MAX]; /* the tracker */
    int port;
    char what[RALLY__HOST_MAX + 32];    /* "dmlc tracker 127.0.0.1:9091", for messages */
    char task_id[RALLY__DMLC_TASK_MAX]; /* "NULL" when the launcher gave none */
    int64_t connect_timeout_ms;         /* per tracker connection (retried until then) */
    int rank, world;                    /* -1 until the tracker assigned them */
    /* the tracker's last assignment */
    int parent, prev, next;
    int nlinks, links[RALLY__DMLC_MAX_LINKS]; /* distinct peers: tree, prev, next */
    char self_host[RALLY__HOST_MAX];          /* this worker's address towards the tracker */
};

/* This worker's entry in the address book. */
struct rally__dmlc_self {
    int listen_port;      /* of rally's own link listener */
    uint32_t incarnation; /* DMLC_NUM_ATTEMPT + 1 */
    uint32_t flags;       /* RALLY__DMLC_F_* */
};

/* Fills d for a tracker at host:port; task_id "" becomes "NULL" (none). */
int rally__dmlc_init(struct rally__dmlc *d, const char *host, int port, const char *task_id,
                     int64_t connect_timeout_ms, struct rally__err *e);

/* cmd "start" or "recover": asks the tracker for the assignment, wires the
 * tracker's links as it directs, reports this worker's port, then runs the
 * address exchange around the tracker's ring and closes those links.  On
 * success d->rank/world are set, *book holds world entries indexed by rank
 * (malloc'd: the caller frees) and *flags the OR of every worker's flags.
 * Blocks until deadline; a peer that dies meanwhile is RALLY_EPEER (call
 * again with "recover"), a tracker that breaks the protocol RALLY_EPROTO. */
int rally__dmlc_join(struct rally__dmlc *d, const char *cmd, const struct rally__dmlc_self *me,
                     int64_t deadline, struct rally__peer_addr **book, uint32_t *flags,
                     struct rally__err *e);

/* cmd "print": the tracker logs msg.  Blocks up to connect_timeout_ms. */
int rally__dmlc_print(struct rally__dmlc *d, const char *msg, struct rally__err *e);

/* cmd "shutdown": this rank is done.  Blocks up to connect_timeout_ms. */
int rally__dmlc_shutdown(struct rally__dmlc *d, struct rally__err *e);

#endif
