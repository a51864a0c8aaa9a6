/*
 * run.h — what coll/'s algorithms share, inside coll/ alone: a collective's
 * run over its links (run.c) and the algorithms each file offers the entry
 * points of coll.c.
 *
 *   coll.c  kinds and signatures, the comm, the entry points (allreduce's
 *           choice of algorithm, broadcast, allgather, the ring shift)
 *   run.c   the run: channels, signatures checked, sends and receives that
 *           never block, the wait and its deadline
 *   tree.c  tree allreduce
 *   ring.c  the ring stream: reduce-scatter plus allgather, or allgather
 *   hd.c    recursive halving-doubling, recursive doubling
 *   hier.c  the hierarchy: chains within hosts, a ring over their leaders
 *   cma.c   allreduce at N = 2 by reading the peer's buffers (process_vm_readv)
 */
#ifndef RALLY_COLL_RUN_H
#define RALLY_COLL_RUN_H

#include "coll/coll.h"
#include "net/link.h"

struct rally__chan {
    struct rally__link *l;
    unsigned char out[RALLY__SIG_NBYTES], in[RALLY__SIG_NBYTES];
    size_t out_done, in_done;
    int want; /* RALLY__WANT_IN / _OUT after a would-block */
};

struct rally__run {
    struct rally__comm *c;
    const struct rally__sig *sig;
    unsigned char sigbytes[RALLY__SIG_NBYTES];
    int nch;
    struct rally__chan ch[RALLY__MAX_NEIGHBOURS];
    int64_t deadline; /* 0: none yet, set by the first wait since progress */
    struct rally__err *e;
};

/* The comm's scratch buffer, grown to n bytes (kept); NULL out of memory
 * (said in e). */
unsigned char *rally__coll_scratch(struct rally__comm *c, size_t n, struct rally__err *e);

/* Opens a run of collective sig: every tree and ring link's channel, their
 * signatures to send. */
void rally__run_start(struct rally__run *x, struct rally__comm *c, const struct rally__sig *sig);

/* The channel for peer, added on first use; NULL when there is no link. */
struct rally__chan *rally__chan_of(struct rally__run *x, int peer);

/* What is left of the signature, then payload[0..n), in one system call
 * each: the payload bytes moved (>= 0) or -1; *moved set when anything
 * moved.  A received payload is trusted once the signature checked. */
long rally__chan_send(struct rally__run *x, struct rally__chan *ch, const void *payload, size_t n,
                      int *moved);
long rally__chan_recv(struct rally__run *x, struct rally__chan *ch, void *payload, size_t n,
                      int *moved);

static inline int rally__sig_sent(const struct rally__chan *ch)
{
    return ch->out_done == RALLY__SIG_NBYTES;
}

static inline int rally__sig_got(const struct rally__chan *ch)
{
    return ch->in_done == RALLY__SIG_NBYTES;
}

/* Sends base[*done, limit) / receives into it (the signature first) until
 * the link would block; -1 on failure. */
int rally__send_upto(struct rally__run *x, struct rally__chan *ch, const unsigned char *base,
                     size_t *done, size_t limit, int *moved);
int rally__recv_upto(struct rally__run *x, struct rally__chan *ch, unsigned char *base,
                     size_t *done, size_t limit, int *moved);

/* Moves the signatures on every link: 1 when all are through, 0 when some
 * are pending, -1 on error. */
int rally__pump_sigs(struct rally__run *x, int *moved);

/* The end of a loop's turn: after progress the deadline moves (it bounds
 * silence, not the whole call); without any, wait for some.  RALLY_OK or
 * the failure (in x->e). */
int rally__settle(struct rally__run *x, int moved);

static inline size_t rally__round_down(size_t v, size_t m)
{
    return v - v % m;
}

/* The algorithms: buf receives the reduction of every rank's in (in ==
 * buf allowed); the status. */
int rally__tree_allreduce(struct rally__comm *c, const unsigned char *in, unsigned char *buf,
                          size_t total, const struct rally__reducer *rd,
                          const struct rally__sig *sig);
/* 1 when every link a kept halving-doubling receives final values on says
 * what it holds (shared memory), so that they land straight in the
 * caller's buffer, whole elements at a time; over others the result goes
 * out of place (rally__allreduce_keep). */
int rally__hd_lands_direct(struct rally__comm *c);
int rally__hd_allreduce(struct rally__comm *c, const unsigned char *in, unsigned char *buf,
                        size_t count, const struct rally__reducer *rd, const struct rally__sig *sig,
                        unsigned char *keep, const struct rally__final_hook *h);
int rally__rd_allreduce(struct rally__comm *c, const unsigned char *in, unsigned char *buf,
                        size_t count, const struct rally__reducer *rd,
                        const struct rally__sig *sig);
/* Receives up to n bytes (whole elements of es) of final values straight
 * into dst, from a link that says what it holds (its readable op: shared
 * memory): only whole elements ever land in dst, so a failure never leaves
 * one half input, half final.  An element that has only partly arrived
 * waits in tail (es bytes, *tail_n of them there); a recv into it also
 * notices a peer that went away.  Returns the bytes landed in dst (0: none
 * yet), -1 on failure.  Kept allreduces use it (ring.c, hd.c). */
long rally__chan_recv_whole(struct rally__run *x, struct rally__chan *ch, unsigned char *dst,
                            size_t n, size_t es, unsigned char *tail, size_t *tail_n, int *moved);
/* From a link that shows its received bytes in its own memory (its peek
 * op: shared memory), after the signature: up to n of them (whole
 * elements of es) at *at, to be read there and then consumed (0: none, or
 * an element the link's ring cut in two: receive it with
 * rally__chan_recv), -1 on failure.  Consuming frees them for the peer. */
long rally__chan_peek(struct rally__run *x, struct rally__chan *ch, size_t n, size_t es,
                      const unsigned char **at, int *moved);
void rally__chan_consume(struct rally__chan *ch, size_t n);
/* From a link that reads the peer's memory (its peer_read op: shared
 * memory, process_vm_readv): n bytes at the peer's address from into dst.
 * 0, or -1 on failure (the peer gone: RALLY_EPEER, as a link's). */
int rally__chan_peer_read(struct rally__run *x, struct rally__chan *ch, void *dst, uint64_t from,
                          size_t n);
/* nseg segments (off[s], len[s] in bytes) streamed around the ring, the
 * first nreduce of them reduced with rd (NULL: none, an allgather).  With
 * keep (scratch: an allreduce in place, in == buf, rally__allreduce_keep),
 * partial sums that miss the stage go to keep instead of buf, and final
 * values reach buf whole elements at a time (straight from shared memory,
 * through the receive ring from TCP); h (may be NULL) names each range of
 * buf made final. */
int rally__ring_stream(struct rally__comm *c, const unsigned char *in, unsigned char *buf,
                       const size_t *off, const size_t *len, int nseg, int nreduce,
                       const struct rally__reducer *rd, const struct rally__sig *sig,
                       unsigned char *keep, const struct rally__final_hook *h);

/* A ring: this rank's place in it, its size and the ranks it sends to and
 * receives from (the topology's ring, or the hierarchy's leaders). */
struct rally__ring {
    int rank, world;
    int next, prev;
};

/* The ring's n segments of count elements of es bytes: segment s is
 * elements [floor(s count / n), floor((s + 1) count / n)) (off, len in
 * bytes; docs/determinism.md).  Up to SEGMENTS_ON_STACK of them a caller
 * keeps on its stack. */
#define SEGMENTS_ON_STACK 64
void rally__ring_segments(size_t count, size_t es, int n, size_t *off, size_t *len);

/* What runs beside a ring in the same loop (the hierarchy's chains):
 * ready() says how many bytes of segment s of the ring's input are there
 * yet (the ring sends and reduces no further), pump() moves the side's own
 * bytes each turn (-1 on failure, in the run's error), and the ring ends
 * only once done(). */
struct rally__ring_side {
    size_t (*ready)(void *arg, int s);
    int (*pump)(void *arg, int *moved);
    int (*done)(void *arg);
    void *arg;
};

/* rally__ring_stream's work inside an open run, on ring rg, with side
 * beside it (NULL: none).  h (may be NULL) hears every range of buf that
 * now holds its final value: whole elements with keep, as received
 * without. */
int rally__ring_run(struct rally__run *x, const struct rally__ring *rg, const unsigned char *in,
                    unsigned char *buf, const size_t *off, const size_t *len, int nseg, int nreduce,
                    const struct rally__reducer *rd, unsigned char *keep,
                    const struct rally__final_hook *h, const struct rally__ring_side *side);

/* 1 when an allreduce at N = 2 reads the peer's buffers (cma.c): the link
 * to it has peer_read. */
int rally__cma_usable(struct rally__comm *c);
/* The allreduce at N = 2 by reading the peer's memory (cma.c), in place of
 * the ring (hd = 0) or halving-doubling (hd = 1), with their pieces and
 * operand order; h (may be NULL) hears each range of buf made final, whole
 * elements, as it lands. */
int rally__cma_allreduce(struct rally__comm *c, const unsigned char *in, unsigned char *buf,
                         size_t count, const struct rally__reducer *rd,
                         const struct rally__sig *sig, int hd, const struct rally__final_hook *h);

/* Hierarchical allreduce (topo.h): reduced along each host's chain to its
 * leader, the ring over the leaders, passed back down the chains. */
int rally__hier_allreduce(struct rally__comm *c, const unsigned char *in, unsigned char *buf,
                          size_t count, const struct rally__reducer *rd,
                          const struct rally__sig *sig);

#endif
