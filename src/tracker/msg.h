/*
 * msg.h — the one encoder and the one decoder of every tracker message body.
 *
 * Server and client both go through these, so a layout lives in one place
 * (proto.h lists the layouts, docs/protocol.md has the bytes).  Encoders
 * append to a struct rally__wbuf (its ->bad latches when the buffer is too
 * small); decoders read a whole frame body and return 0, or -1 when the body
 * is malformed: short, long, or a string over its limit.  Decoders check the
 * layout only; what a value means (a rank in range, an epoch in order) is the
 * caller's business.  Nothing here allocates except the ASSIGN address book.
 */
#ifndef RALLY_TRACKER_MSG_H
#define RALLY_TRACKER_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "net/sock.h"
#include "tracker/proto.h"
#include "util/err.h"
#include "util/wire.h"

#define RALLY__TASK_MAX 256    /* task id and processor name, with the NUL */
#define RALLY__REASON_MAX 256  /* RESET reason, with the NUL */
#define RALLY__DOMAIN_MAX 64   /* a failure domain's name (rally_domain), with the NUL */

/* The name of a frame type for messages: "ASSIGN", "an unknown type". */
const char *rally__msg_name(uint16_t type);

/* REGISTER (W->T). */
struct rally__msg_register {
    char task_id[RALLY__TASK_MAX];
    int32_t want_rank;   /* -1: any */
    uint32_t world_hint; /* 0: unknown */
    uint16_t listen_port;
    char listen_host[RALLY__HOST_MAX]; /* "": the address the tracker sees */
    char processor[RALLY__TASK_MAX];
    char domain[RALLY__DOMAIN_MAX]; /* its rack or zone (rally_domain); "": none */
};
void rally__msg_register_put(struct rally__wbuf *w, const struct rally__msg_register *m);
int rally__msg_register_get(const unsigned char *b, size_t n, struct rally__msg_register *m);

/* ASSIGN (T->W): head (rank, world, incarnation), world book entries, tail
 * (epoch, members: how many times the job's membership changed, 0 at the
 * start; a worker that rejoins and finds another count was renumbered;
 * flags, RALLY__ASSIGN_*).  The server builds the book once per epoch and shares it. */
/* One address book entry, as a worker keeps it. */
struct rally__peer_addr {
    char host[RALLY__HOST_MAX];
    int port;
    uint32_t incarnation;
    char domain[RALLY__DOMAIN_MAX]; /* the worker's rack or zone; "": none */
};
#define RALLY__ASSIGN_HEAD 12
#define RALLY__ASSIGN_TAIL 12
/* ASSIGN's flags: the membership changed while a worker stood in finalize,
 * so the job had computed everything: the survivors renumber and finish,
 * without going back to a checkpoint. */
#define RALLY__ASSIGN_FINISHING 1u
/* ... and every ASSIGN from a membership change to the GO after it says
 * so: a worker that joins then (taken in, or restarted meanwhile) goes
 * back to the checkpoint with the others rather than catching up. */
#define RALLY__ASSIGN_CHANGED 2u
void rally__msg_assign_head(struct rally__wbuf *w, int32_t rank, uint32_t world,
                            uint32_t incarnation);
void rally__msg_book_entry(struct rally__wbuf *w, const char *host, uint16_t port,
                           uint32_t incarnation, const char *domain);
/* The bytes one book entry takes. */
size_t rally__msg_book_entry_nbytes(const char *host, const char *domain);
void rally__msg_assign_tail(struct rally__wbuf *w, uint32_t epoch, uint32_t members,
                            uint32_t flags);
struct rally__msg_assign {
    int32_t rank;
    uint32_t world;
    uint32_t incarnation;
    uint32_t epoch;
    uint32_t members;
    uint32_t flags;
    struct rally__peer_addr *peers; /* world entries, calloc'ed: the caller frees */
};
/* -1 when the head is short or its rank or world are out of range, -3 when
 * the book or the tail is malformed, -2 when out of memory; m->peers is NULL
 * then. */
int rally__msg_assign_get(const unsigned char *b, size_t n, struct rally__msg_assign *m);

/* GROW_READY and IN_STEP (W->T): u32 epoch. */
void rally__msg_u32_put(struct rally__wbuf *w, uint32_t v);
int rally__msg_u32_get(const unsigned char *b, size_t n, uint32_t *v);

/* PRINT (W->T): str message, cut to RALLY__PRINT_MAX bytes. */
void rally__msg_print_put(struct rally__wbuf *w, const char *msg);
int rally__msg_print_get(const unsigned char *b, size_t n, char *msg, size_t cap);

/* ERROR (W->T) and ABORT (T->W): u32 code, str sentence (cut to fit
 * RALLY__ERR_MSG_MAX with its NUL). */
void rally__msg_fail_put(struct rally__wbuf *w, uint32_t code, const char *sentence);
int rally__msg_fail_get(const unsigned char *b, size_t n, uint32_t *code, char *sentence,
                        size_t cap);

/* RESET (T->W): u32 epoch, str reason (cut to RALLY__REASON_MAX - 1). */
void rally__msg_reset_put(struct rally__wbuf *w, uint32_t epoch, const char *reason);
int rally__msg_reset_get(const unsigned char *b, size_t n, uint32_t *epoch, char *reason,
                         size_t cap);

/* REJOIN (W->T): u32 epoch, u64 position, u32 checkpoint version. */
void rally__msg_rejoin_put(struct rally__wbuf *w, uint32_t epoch, uint64_t position,
                           uint32_t version);
int rally__msg_rejoin_get(const unsigned char *b, size_t n, uint32_t *epoch, uint64_t *position,
                          uint32_t *version);

/* LINK_FAILED (W->T): u32 epoch, str sentence (cut like ERROR's). */
void rally__msg_link_failed_put(struct rally__wbuf *w, uint32_t epoch, const char *sentence);
int rally__msg_link_failed_get(const unsigned char *b, size_t n, uint32_t *epoch, char *sentence,
                               size_t cap);

/* INPUT (W->T): str scheme (1 to 64 bytes), u64 fingerprint. */
#define RALLY__SCHEME_MAX 65 /* the scheme, with the NUL */
void rally__msg_input_put(struct rally__wbuf *w, const char *scheme, uint64_t fingerprint);
/* -1 also for an empty scheme or one over 64 bytes. */
int rally__msg_input_get(const unsigned char *b, size_t n, char *scheme, size_t cap,
                         uint64_t *fingerprint);

/* HEARTBEAT (W->T): empty (a worker that reports no position), or where
 * the worker stands: u64 position (docs/recovery.md), u8 waiting (1: inside
 * the operation at position; 0: in its own code, before it), u64 for_ms
 * (how long it has stood there, by its own clock), str what (the
 * operation's kind, "" in its own code; cut to RALLY__WHAT_MAX - 1), then
 * u64 calls, u64 nbytes (the public collectives the worker has completed
 * and the bytes of their buffers), then u32 win, u64 win_wait_ms, u64
 * win_span_ms (the straggler window, docs/status.md: its newest win calls,
 * the ms the worker waited inside them and the ms they spanned, by its own
 * clock).  The fields after what may be missing, the last three or all
 * five (a worker from before they were added): they read as 0. */
#define RALLY__WHAT_MAX 64
struct rally__msg_heartbeat {
    int has_position; /* 0: the body was empty */
    uint64_t position;
    int waiting;
    uint64_t for_ms;
    char what[RALLY__WHAT_MAX];
    uint64_t calls, nbytes;
    uint32_t win;
    uint64_t win_wait_ms, win_span_ms;
};
/* The longest HEARTBEAT body. */
#define RALLY__HEARTBEAT_MAX (8 + 1 + 8 + 4 + (RALLY__WHAT_MAX - 1) + 8 + 8 + 4 + 8 + 8)
void rally__msg_heartbeat_put(struct rally__wbuf *w, const struct rally__msg_heartbeat *m);
int rally__msg_heartbeat_get(const unsigned char *b, size_t n, struct rally__msg_heartbeat *m);

/* REPORT (W->T), for observers only: u8 kind (RALLY__REPORT_*, proto.h),
 * u64 version (the worker's checkpoint version, or the snapshot's), f64
 * value (its IEEE-754 bits as a u64), u64 nbytes, str key (at most
 * RALLY__REPORT_KEY_MAX - 1 bytes), str text (cut to RALLY__REPORT_TEXT_MAX
 * - 1 bytes).  The decoder also refuses (-1) a kind it does not know, a
 * value that is not finite (a NaN, an infinity: observers write JSON,
 * which has neither), and a VALUE whose key is not 1 to 64 bytes of
 * [A-Za-z0-9_.:-] (rally__report_key_ok, util/report.h): the library sends none of
 * them. */
#define RALLY__REPORT_TEXT_MAX 1024 /* the text, with the NUL */
struct rally__msg_report {
    int kind;
    uint64_t version;
    double value;
    uint64_t nbytes;
    char key[RALLY__REPORT_KEY_MAX];
    char text[RALLY__REPORT_TEXT_MAX];
};
/* The longest REPORT body. */
#define RALLY__REPORT_MAX                                                                          \
    (1 + 8 + 8 + 8 + 4 + (RALLY__REPORT_KEY_MAX - 1) + 4 + (RALLY__REPORT_TEXT_MAX - 1))
/* The key fits its field (the caller checks keys first); text is cut. */
void rally__msg_report_put(struct rally__wbuf *w, const struct rally__msg_report *m);
int rally__msg_report_get(const unsigned char *b, size_t n, struct rally__msg_report *m);

/* READY, GO, SHUTDOWN, BYE, INPUT_OK: an empty body. */
void rally__msg_empty_put(struct rally__wbuf *w);
int rally__msg_empty_get(const unsigned char *b, size_t n);

#endif
