/*
 * hier.c — the hierarchical allreduce (topo.h): each host's ranks reduce
 * along their chain to the host's leader, the leaders run the ring over
 * their hosts' sums, and the result goes back down the chains.  Across
 * hosts only the leaders' ring moves bytes: 2 (H - 1) / H of the vector per
 * host and direction, where the flat ring crossing the same cables moves up
 * to 2 (N - 1) / N per rank whose ring edge leaves the host.
 *
 * The order (docs/determinism.md): a host's sum is its ranks' values folded
 * from the chain's end, x[a] + (x[b] + (... + x[z])) for its ranks
 * a < b < ... < z; the leaders' ring then reduces the hosts' sums as the
 * flat ring reduces ranks' values, with host i in place of rank i.
 *
 * All three steps run in one run (run.h), so each link's signature is sent
 * once; the chains stream in chunks through a receive ring in the comm's
 * scratch, as the ring does.
 */
#include "coll/run.h"

#include <stdlib.h>
#include <string.h>

#define SEGMENTS_ON_STACK 64 /* hosts whose segments need no allocation */

/* The chain towards the leader: this rank's value (+) what came up from the
 * rank after it goes on up, a chunk at a time.  The leader ends with its
 * host's sum in buf. */
static int chain_reduce(struct rally__run *x, const unsigned char *in, unsigned char *buf,
                        size_t total, const struct rally__reducer *rd)
{
    const struct rally__topo *t = &x->c->topo;
    struct rally__chan *up = t->hier_up >= 0 ? rally__chan_of(x, t->hier_up) : NULL;
    struct rally__chan *down = t->hier_down >= 0 ? rally__chan_of(x, t->hier_down) : NULL;
    if ((t->hier_up >= 0 && up == NULL) || (t->hier_down >= 0 && down == NULL))
        return rally__fail(x->e, RALLY_ESTATE, "no link along the host's chain");
    if (down == NULL) { /* the chain's end: its value as it is */
        if (up == NULL && in != buf)
            memmove(buf, in, total);
        if (up == NULL)
            return RALLY_OK;
    }
    size_t es = rd->elem_nbytes, chunk = x->c->chunk < es ? es : rally__round_down(x->c->chunk, es);
    size_t rcap = 4 * chunk, got = 0, red = down ? 0 : total, sent = 0;
    unsigned char *ring = NULL;
    if (down != NULL && (ring = rally__coll_scratch(x->c, rcap, x->e)) == NULL)
        return x->e->code;
    const unsigned char *src = down ? buf : in; /* what goes up: the sums so far, or the value */
    for (;;) {
        int moved = 0;
        while (down != NULL && (got < total || !rally__sig_got(down))) {
            size_t pos = got % rcap, n = rcap - (got - red);
            if (n > rcap - pos)
                n = rcap - pos;
            if (n > total - got)
                n = total - got;
            long m = rally__chan_recv(x, down, ring + pos, n, &moved);
            if (m < 0)
                return x->e->code;
            got += (size_t)m;
            if (m == 0 || n == 0)
                break;
        }
        while (red < got) { /* whole elements, a chunk at least unless at the end */
            size_t pos = red % rcap, n = got - red;
            if (n > rcap - pos)
                n = rcap - pos;
            n = rally__round_down(n, es);
            if (n == 0 || (n < chunk && red + n < total && pos + n < rcap))
                break;
            rally__reduce3(rd, buf + red, in + red, ring + pos, n / es);
            red += n;
            moved = 1;
        }
        if (up != NULL && rally__send_upto(x, up, src, &sent, red, &moved) != 0)
            return x->e->code;
        if (rally__pump_sigs(x, &moved) < 0)
            return x->e->code;
        if (red == total && (up == NULL || sent == total))
            return RALLY_OK;
        if (rally__settle(x, moved) != RALLY_OK)
            return x->e->code;
    }
}

/* The result down the chain: from the leader, or as it arrives from the
 * rank before, on to the rank after.  The run ends here: every link's
 * signature through. */
static int chain_bcast(struct rally__run *x, unsigned char *buf, size_t total)
{
    const struct rally__topo *t = &x->c->topo;
    struct rally__chan *up = t->hier_up >= 0 ? rally__chan_of(x, t->hier_up) : NULL;
    struct rally__chan *down = t->hier_down >= 0 ? rally__chan_of(x, t->hier_down) : NULL;
    size_t got = up ? 0 : total, sent = 0;
    for (;;) {
        int moved = 0;
        if (up != NULL && rally__recv_upto(x, up, buf, &got, total, &moved) != 0)
            return x->e->code;
        if (down != NULL && rally__send_upto(x, down, buf, &sent, got, &moved) != 0)
            return x->e->code;
        int sigs = rally__pump_sigs(x, &moved);
        if (sigs < 0)
            return x->e->code;
        if (sigs && got == total && (down == NULL || sent == total))
            return RALLY_OK;
        if (rally__settle(x, moved) != RALLY_OK)
            return x->e->code;
    }
}

int rally__hier_allreduce(struct rally__comm *c, const unsigned char *in, unsigned char *buf,
                          size_t count, const struct rally__reducer *rd,
                          const struct rally__sig *sig)
{
    const struct rally__topo *t = &c->topo;
    size_t es = rd->elem_nbytes, total = count * es;
    struct rally__run x;
    rally__run_start(&x, c, sig);
    int rc = chain_reduce(&x, in, buf, total, rd);
    if (rc == RALLY_OK && t->hier_leader == t->rank) {
        int H = t->hier_hosts;
        size_t seg[2 * SEGMENTS_ON_STACK], *off = seg;
        if (H > SEGMENTS_ON_STACK && (off = malloc(2 * (size_t)H * sizeof *off)) == NULL)
            return rally__fail(x.e, RALLY_ENOMEM, "out of memory");
        size_t *len = off + H;
        for (int s = 0; s < H; s++) {
            size_t a = count * (size_t)s / (size_t)H, b = count * (size_t)(s + 1) / (size_t)H;
            off[s] = a * es;
            len[s] = (b - a) * es;
        }
        struct rally__ring ring = {t->hier_index, H, t->hier_next, t->hier_prev};
        rc = rally__ring_run(&x, &ring, buf, buf, off, len, 2 * H - 2, H - 1, rd, NULL, NULL);
        if (off != seg)
            free(off);
    }
    return rc == RALLY_OK ? chain_bcast(&x, buf, total) : rc;
}
