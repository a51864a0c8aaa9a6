/*
 * coll.h — collective algorithms over a set of peer links.
 *
 * The collective layer sees buffers and links (net/link.h: ops that move
 * bytes without blocking, and rally__link_wait), never a descriptor, the
 * tracker, the launcher or recovery.  Three seams connect it to the layers
 * above, all declared hooks on struct rally__comm:
 *
 *   - every collective opens every tree and ring link (and each
 *     halving-doubling partner's link it uses), in each direction, with a
 *     32-byte signature (kind, sequence number, count, type, operator,
 *     root) and an opaque 64-bit sidecar that this layer carries but never
 *     interprets; a peer whose signature differs is an error naming both;
 *     once a peer's signature has arrived and matches, on_sidecar() gets
 *     that peer's sidecar beside this rank's own (once per link per
 *     collective);
 *   - while it waits, a collective also waits on the owner's alarm handle
 *     and calls on_alarm() when it is ready; a non-OK return ends the
 *     collective with that error;
 *   - when this layer itself finds a failure the others must hear of (a
 *     mismatch), it calls report().
 *
 * Algorithms (docs/determinism.md pins the exact reduction order):
 *   allreduce  <= rd_threshold and <= ring_threshold bytes, N a power of
 *              two with the halving-doubling partners and a commutative
 *              reducer: recursive doubling, log2 N exchanges of the whole
 *              vector.
 *              Else <= ring_threshold bytes, or a non-commutative reducer: the
 *              pre-order tree (topo.h), pipelined in chunk_bytes pieces:
 *              each node reduces own value, then each child's subtree in
 *              rank order, sends up, and streams the result back down.
 *              Larger, up to hd_threshold when the topology has the
 *              halving-doubling partners (rally__topo_add_hd): recursive
 *              halving then recursive doubling, the extra ranks of a
 *              non-power-of-two N folded in first and served last.
 *              Larger: the ring, reduce-scatter then allgather, streamed.
 *              At N = 2, when the link reads the peer's memory
 *              (shared memory, rally_cma): both of these by reading the
 *              peer's buffers instead (cma.c), with their pieces and order.
 *   broadcast  pipelined over the tree from any root.
 *   allgather  the ring, streamed.
 * All waiting is in rally__link_wait(), after at most rally_spin_us of
 * polling without sleeping that yields the core between polls
 * (docs/config.md).
 */
#ifndef RALLY_COLL_COLL_H
#define RALLY_COLL_COLL_H

#include <stddef.h>
#include <stdint.h>

#include "coll/topo.h"
#include "net/link.h"
#include "util/err.h"
#include "util/reduce.h"

struct rally__comm {
    struct rally__topo topo;
    int nlinks;
    struct rally__link links[RALLY__MAX_NEIGHBOURS];
    int64_t timeout_ms;         /* no progress for this long: RALLY_ETIMEDOUT */
    size_t ring_threshold;      /* bytes */
    size_t hd_threshold;        /* bytes; halving-doubling up to here (topo.hd_p != 0) */
    size_t rd_threshold;        /* bytes; recursive doubling up to here (topo.hd_p == N) */
    size_t chunk;               /* bytes */
    int64_t spin_us;            /* poll without sleeping this long before blocking */
    int64_t spin_alone_us;      /* ... or this long, when every link waited on is spin_alone */
    uint32_t seq;               /* collectives so far */
    struct rally__handle alarm; /* the owner's alarm line, or rally__handle_none() */
    int (*on_alarm)(void *arg, struct rally__err *e);
    void (*report)(void *arg, int code, const char *msg);
    /* mine: the sidecar this rank sent in the same collective */
    void (*on_sidecar)(void *arg, int peer, uint64_t mine, uint64_t theirs); /* may be NULL */
    void *hook_arg;
    unsigned char *scratch; /* reused between collectives */
    size_t scratch_nbytes;
    struct rally__err *err;
};

/* Kinds of collective, as carried in signatures. */
enum {
    RALLY__C_ALLREDUCE = 1,
    RALLY__C_ALLREDUCE_CUSTOM = 2,
    RALLY__C_BROADCAST = 3,
    RALLY__C_BROADCAST_SIZE = 4,
    RALLY__C_BROADCAST_DATA = 5,
    RALLY__C_ALLGATHER = 6,
    RALLY__C_ALLGATHERV_SIZES = 7,
    RALLY__C_ALLGATHERV_DATA = 8,
    RALLY__C_SHIFT = 9
};

/* Kinds of the robust engine's own traffic (src/robust sends them; they are
 * listed here only so that rally__sig_str can name every kind on the wire,
 * docs/protocol.md section 6). */
enum {
    RALLY__K_AGREE = 20,
    RALLY__K_HOLDER = 21,
    RALLY__K_XFER_HEAD = 22,
    RALLY__K_XFER_DATA = 23,
    RALLY__K_ACK = 24,
    RALLY__K_FINAL = 25,
    RALLY__K_REPLICATE = 26,
    RALLY__K_LOCAL_NEED = 27,
    RALLY__K_TURN = 28,
    RALLY__K_RESHARD = 29,
    RALLY__K_RETRY = 30
};

/* What every rank must agree on. */
struct rally__sig {
    uint8_t kind;
    uint8_t dtype; /* or the custom reducer's element size (mod 256) */
    uint8_t op;    /* or the custom reducer id */
    int32_t root;  /* -1 when none */
    uint64_t count;
    uint64_t sidecar;
};

#define RALLY__SIG_NBYTES 32

/* Sets up c with no links: the owner fills links[0..nlinks) (and owns
 * them) and the hooks.  An owner that sets hd_threshold above
 * ring_threshold, or rd_threshold above 0, calls rally__topo_add_hd(&c->topo)
 * before wiring, so that the partners are among the links. */
void rally__comm_init(struct rally__comm *c, int rank, int world, struct rally__err *e);
void rally__comm_free(struct rally__comm *c);
struct rally__link *rally__comm_link(struct rally__comm *c, int peer);

/* Reduces count elements of in (read only) into out with reducer rd; in ==
 * out is in place.  On failure out holds garbage and in is untouched, so an
 * out-of-place call can be retried. */
int rally__allreduce(struct rally__comm *c, const void *in, void *out, size_t count,
                     const struct rally__reducer *rd, const struct rally__sig *sig);

/* Where an allreduce in place with a kept copy reports its progress: each
 * range [off, off + n) of buf (bytes, whole elements) that now holds its
 * final value, once, as it is written; src holds the same n bytes (buf +
 * off, or scratch + off for the algorithms that run out of place), still
 * in the CPU cache.  The caller decides what it means and what it copies. */
struct rally__final_hook {
    void (*final)(void *arg, size_t off, size_t n, const unsigned char *src);
    void *arg;
};

/* Reduces count elements of buf in place, h->final naming each piece of
 * the result as it is written, while it is still in the CPU cache (the
 * robust engine copies what it keeps there).  Until it returns, buf's
 * elements change only from their input to their final value, a whole
 * element at a time, and h->final names every range that did (partial
 * sums never touch buf): after a failure, an element never named holds its
 * input.  scratch (count elements, the caller's) takes the partial sums;
 * the algorithms that run out of place write the result there and copy it
 * into buf, so after a call that took one of them scratch holds the result
 * too (the hook is called with src = scratch + off then).  The result's
 * bits are rally__allreduce's. */
int rally__allreduce_keep(struct rally__comm *c, void *buf, void *scratch, size_t count,
                          const struct rally__reducer *rd, const struct rally__sig *sig,
                          const struct rally__final_hook *h);
/* Segment s of the n the ring splits count elements of es bytes into
 * (docs/determinism.md): its byte offset, and its length in *len. */
size_t rally__ring_segment(size_t count, size_t es, int n, int s, size_t *len);
/* 1 when rally__allreduce_keep runs in place (the ring; halving-doubling
 * over shared memory): its result never passes through scratch whole. */
int rally__allreduce_in_place(struct rally__comm *c, size_t count, const struct rally__reducer *rd);

int rally__broadcast(struct rally__comm *c, void *buf, size_t nbytes, int root,
                     const struct rally__sig *sig);
/* The same, where have[r] != 0 says rank r holds the nbytes already (root
 * does): those send from their own buf and receive nothing, so the bytes
 * cross only the tree links into ranks that lack them (have: world bytes,
 * alike on every rank; NULL: only root holds them). */
int rally__broadcast_have(struct rally__comm *c, void *buf, size_t nbytes, int root,
                          const unsigned char *have, const struct rally__sig *sig);
/* Blocks of nbytes[r] bytes at offsets off[r] in buf; this rank's is filled. */
int rally__allgather(struct rally__comm *c, void *buf, const size_t *off, const size_t *nbytes,
                     const struct rally__sig *sig);

/* Every rank sends send[0..send_n) to ring_next and receives
 * recv[0..recv_n) from ring_prev (recv_n: what ring_prev sends). */
int rally__ring_shift(struct rally__comm *c, const void *send, size_t send_n, void *recv,
                      size_t recv_n, const struct rally__sig *sig);
/* The same along any ring: send to rank to, receive from rank from (both
 * neighbours: the placement ring's, topo.h). */
int rally__shift(struct rally__comm *c, int to, int from, const void *send, size_t send_n,
                 void *recv, size_t recv_n, const struct rally__sig *sig);

/* The 32 signature bytes (docs/protocol.md, section 6), and back: decode
 * returns -1 when the magic is wrong. */
void rally__sig_encode(unsigned char *p, const struct rally__sig *s, uint32_t seq);
int rally__sig_decode(const unsigned char *p, struct rally__sig *s, uint32_t *seq);
/* 1 when the signature theirs is mine in all but the sidecar (magic,
 * sequence and call), with its sidecar in *sidecar; else 0: decode it to
 * say how they differ. */
int rally__sig_match(const unsigned char *theirs, const unsigned char *mine, uint64_t *sidecar);

/* "allreduce(count=10, float, sum)" for messages. */
void rally__sig_str(const struct rally__sig *s, char *out, size_t cap);
/* A kind's name alone ("allreduce", "rally_finalize"), a static string. */
const char *rally__kind_name(int kind);

#endif
