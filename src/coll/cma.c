/*
 * cma.c — allreduce between two ranks on one host whose link reads the
 * peer's memory (its peer_read op: process_vm_readv), each byte copied
 * once.
 *
 * After the signature each rank sends the addresses of its in and buf (16
 * bytes, docs/protocol.md section 6) and hears the peer's.  It then reduces
 * its piece: it reads the peer's input of that piece, a chunk at a time,
 * into scratch, where it is still in the CPU cache when it is reduced with
 * its own into buf, final at once.  It says so with one byte ("reduced");
 * once the peer's has come, the peer's piece of the peer's buf is final and
 * the peer reads none of our input any more, so we read that piece straight
 * into our buf (the allgather), and say so with another byte ("read").
 * Once the peer's has come it reads our memory no more, and we return and
 * let our caller change buf.  Per byte of the call each rank writes the
 * peer's half into scratch, its sums, and the peer's sums: 1.5, where the
 * ring of shared-memory rings writes 2 (docs/architecture.md, "Bytes
 * moved").
 *
 * The pieces and the operand order are those of the algorithm the call
 * stands in for (docs/determinism.md), so the bits are the same: the ring's
 * segment 1 - r with the own value on the left, or halving-doubling's half r
 * with rank 0's on the left.
 *
 * Kept (rally__allreduce_keep, in == buf): buf changes only from input to
 * final values, a chunk of whole elements at a time, and the final hook
 * names each chunk as it lands, still in the cache.  A peer that dies
 * fails a read (ESRCH) or hangs up the link: RALLY_EPEER, as on the rings.
 * A read that has started lands whole, as the kernel holds the peer's
 * memory until it returns.
 */
#include "coll/run.h"

#include <stdint.h>
#include <string.h>

#include "util/copy.h"
#include "util/wire.h"

/* The bytes each rank sends after the signature: its in and buf addresses,
 * then "reduced", then "read"; a step sends up to UPTO_*. */
enum { ADDRS_NBYTES = 16, UPTO_REDUCED = ADDRS_NBYTES + 1, UPTO_READ = UPTO_REDUCED + 1 };

int rally__cma_usable(struct rally__comm *c)
{
    struct rally__link *l = c->topo.world == 2 ? rally__comm_link(c, c->topo.ring_next) : NULL;
    return l != NULL && l->ops != NULL && l->ops->peer_read != NULL;
}

/* Sends out[0, upto) and waits until the peer's msg[0, upto) came: the
 * call's steps, in order.  -1 with x->e set. */
static int step(struct rally__run *x, struct rally__chan *ch, const unsigned char *out,
                size_t *sent, unsigned char *msg, size_t *heard, size_t upto)
{
    for (;;) {
        int moved = 0;
        if (rally__send_upto(x, ch, out, sent, upto, &moved) < 0 ||
            rally__recv_upto(x, ch, msg, heard, upto, &moved) < 0)
            return -1;
        if (*sent == upto && *heard == upto)
            return 0;
        if (rally__settle(x, moved) != RALLY_OK)
            return -1;
    }
}

int rally__cma_allreduce(struct rally__comm *c, const unsigned char *in, unsigned char *buf,
                         size_t count, const struct rally__reducer *rd,
                         const struct rally__sig *sig, int hd, const struct rally__final_hook *h)
{
    struct rally__run x;
    rally__run_start(&x, c, sig);
    int r = c->topo.rank, mine = hd ? r : 1 - r, own_left = !hd || r == 0;
    struct rally__chan *ch = rally__chan_of(&x, c->topo.ring_next);
    if (ch == NULL)
        return rally__fail(x.e, RALLY_ESTATE, "no link to rank %d", c->topo.ring_next);
    size_t es = rd->elem_nbytes, off[2], len[2];
    rally__ring_segments(count, es, 2, off, len);
    size_t chunk = c->chunk < es ? es : rally__round_down(c->chunk, es);
    unsigned char *got = rally__coll_scratch(c, chunk, x.e);
    if (got == NULL)
        return x.e->code;
    unsigned char out[UPTO_READ], msg[UPTO_READ];
    rally__put_u64(out, (uint64_t)(uintptr_t)in);
    rally__put_u64(out + 8, (uint64_t)(uintptr_t)buf);
    out[ADDRS_NBYTES] = out[UPTO_REDUCED] = 1;
    size_t sent = 0, heard = 0;
    uint64_t mv = 0;
    if (step(&x, ch, out, &sent, msg, &heard, ADDRS_NBYTES) != 0)
        return x.e->code;
    uint64_t their_in = rally__get_u64(msg), their_buf = rally__get_u64(msg + 8);
    for (size_t p = 0, m; p < len[mine]; p += m) { /* reduce-scatter */
        size_t at = off[mine] + p;
        m = len[mine] - p < chunk ? len[mine] - p : chunk;
        if (rally__chan_peer_read(&x, ch, got, their_in + at, m) != 0)
            return x.e->code;
        if (own_left) {
            rally__reduce3(rd, buf + at, in + at, got, m / es);
        } else if (in != buf && rd->fn3 != NULL) {
            rally__reduce3(rd, buf + at, got, in + at, m / es);
        } else { /* the left operand is the peer's, and buf holds ours: sum in scratch */
            rally__reduce3(rd, got, got, in + at, m / es);
            memcpy(buf + at, got, m);
            mv += m;
        }
        mv += 2 * m;
        if (h != NULL)
            h->final(h->arg, at, m, buf + at);
    }
    if (step(&x, ch, out, &sent, msg, &heard, UPTO_REDUCED) != 0)
        return x.e->code;
    int theirs = 1 - mine;
    for (size_t p = 0, m; p < len[theirs]; p += m) { /* allgather */
        size_t at = off[theirs] + p;
        m = len[theirs] - p < chunk ? len[theirs] - p : chunk;
        if (rally__chan_peer_read(&x, ch, buf + at, their_buf + at, m) != 0)
            return x.e->code;
        mv += m;
        if (h != NULL)
            h->final(h->arg, at, m, buf + at);
    }
    if (step(&x, ch, out, &sent, msg, &heard, UPTO_READ) != 0)
        return x.e->code;
    rally__moved(mv);
    return RALLY_OK;
}
