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
 * The three steps overlap, in one run (run.h) and one loop: the chains
 * reduce the vector segment by segment in the order the leader's ring takes
 * its own input (its segment i first, then i - 1, i - 2, ...), so the ring
 * starts once the first segment is up; and the leader passes each piece down
 * as the ring makes it final (segment i + 1 first, then i, i - 1, ...).
 * Each chain stream is therefore the segments in a known rotated order,
 * which every rank of the host computes from its leader's place i.  A rank
 * only receives its result once the leader had every partial sum, so the
 * partial sums a rank keeps in its buffer have left before the result
 * comes down over them.
 */
#include "coll/run.h"

#include <stdlib.h>

/* One rank's two chain streams. */
struct chain {
    struct rally__run *x;
    struct rally__chan *up, *down; /* NULL: the leader / the chain's end */
    const unsigned char *in;
    unsigned char *buf, *ring; /* ring: what came up from down, before it is reduced */
    const struct rally__reducer *rd;
    const size_t *off, *len;
    size_t total, rcap, chunk;
    int H, i; /* hosts, this host's place in the leaders' ring */
    /* up the chain, the segments in order i, i - 1, ...: bytes received
     * from down, reduced (or, at the chain's end, all of them), sent up */
    size_t got, red, sent;
    /* down the chain, in order i + 1, i, i - 1, ...: bytes final here (a
     * leader's from the ring, per segment in fin[]) and sent down */
    size_t have, sent_down;
    size_t *fin;
};

/* The segment at place q of a stream that starts with segment first and
 * goes down. */
static int seg(const struct chain *c, int first, int q)
{
    return ((first - q) % c->H + c->H) % c->H;
}

/* Where stream position p lies in buf (*at) and how many bytes of its
 * segment follow it; 0 at the end. */
static size_t piece(const struct chain *c, int first, size_t p, size_t *at)
{
    for (int q = 0; q < c->H; q++) {
        int s = seg(c, first, q);
        if (p < c->len[s]) {
            *at = c->off[s] + p;
            return c->len[s] - p;
        }
        p -= c->len[s];
    }
    *at = 0;
    return 0;
}

/* Bytes of segment s below stream position p. */
static size_t below(const struct chain *c, int first, size_t p, int s)
{
    for (int q = 0; q < c->H; q++) {
        int t = seg(c, first, q);
        if (t == s)
            return p < c->len[t] ? p : c->len[t];
        p = p > c->len[t] ? p - c->len[t] : 0;
    }
    return 0;
}

/* Sends src's stream (order first) from *done up to limit, a segment's piece
 * at a time, until the link would block. */
static int send_stream(struct chain *c, struct rally__chan *ch, const unsigned char *src, int first,
                       size_t *done, size_t limit, int *moved)
{
    while (*done < limit || !rally__sig_sent(ch)) {
        size_t at, n = piece(c, first, *done, &at);
        if (n > limit - *done)
            n = limit - *done;
        long m = rally__chan_send(c->x, ch, src + at, n, moved);
        if (m < 0)
            return -1;
        *done += (size_t)m;
        if (m == 0)
            break;
    }
    return 0;
}

/* Moves both streams as far as they go without blocking. */
static int chain_pump(void *arg, int *moved)
{
    struct chain *c = arg;
    size_t es = c->rd->elem_nbytes;
    /* up: receive the rest's sums, reduce own value (+) them, send them on */
    while (c->down != NULL && (c->got < c->total || !rally__sig_got(c->down))) {
        size_t pos = c->got % c->rcap, n = c->rcap - (c->got - c->red);
        if (n > c->rcap - pos)
            n = c->rcap - pos;
        if (n > c->total - c->got)
            n = c->total - c->got;
        long m = rally__chan_recv(c->x, c->down, c->ring + pos, n, moved);
        if (m < 0)
            return -1;
        c->got += (size_t)m;
        if (m == 0 || n == 0)
            break;
    }
    while (c->red < c->got) { /* whole elements within a segment, a chunk unless at an end */
        size_t at, pos = c->red % c->rcap, n = piece(c, c->i, c->red, &at), left = n;
        if (n > c->got - c->red)
            n = c->got - c->red;
        if (n > c->rcap - pos)
            n = c->rcap - pos;
        n = rally__round_down(n, es);
        if (n == 0 || (n < c->chunk && n < left && pos + n < c->rcap))
            break;
        rally__reduce3(c->rd, c->buf + at, c->in + at, c->ring + pos, n / es);
        c->red += n;
        *moved = 1;
    }
    if (c->up != NULL &&
        send_stream(c, c->up, c->down ? c->buf : c->in, c->i, &c->sent, c->red, moved) != 0)
        return -1;
    /* down: the result, from the leader's ring or from the rank before */
    if (c->up != NULL) {
        while (c->have < c->total || !rally__sig_got(c->up)) {
            size_t at, n = piece(c, c->i + 1, c->have, &at);
            long m = rally__chan_recv(c->x, c->up, c->buf + at, n, moved);
            if (m < 0)
                return -1;
            c->have += (size_t)m;
            if (m == 0)
                break;
        }
    }
    if (c->down != NULL &&
        send_stream(c, c->down, c->buf, c->i + 1, &c->sent_down, c->have, moved) != 0)
        return -1;
    return 0;
}

static int chain_done(void *arg)
{
    const struct chain *c = arg;
    return c->red == c->total && (c->up == NULL || c->sent == c->total) && c->have == c->total &&
           (c->down == NULL || c->sent_down == c->total);
}

/* The leader's ring: how much of segment s is reduced up the chain. */
static size_t chain_ready(void *arg, int s)
{
    const struct chain *c = arg;
    return below(c, c->i, c->red, s);
}

/* The leader's ring made buf[at, at + n) final (the ring's final hook): the
 * down stream's final prefix grows while its segments, in order, are whole. */
static void chain_final(void *arg, size_t at, size_t n, const unsigned char *src)
{
    (void)src;
    struct chain *c = arg;
    size_t have = 0;
    int grows = 1;
    for (int q = 0; q < c->H; q++) {
        int s = seg(c, c->i + 1, q);
        if (at >= c->off[s] && at < c->off[s] + c->len[s])
            c->fin[s] += n; /* a segment's ranges come in order */
        if (grows)
            have += c->fin[s];
        grows &= c->fin[s] == c->len[s];
    }
    c->have = have;
}

int rally__hier_allreduce(struct rally__comm *c, const unsigned char *in, unsigned char *buf,
                          size_t count, const struct rally__reducer *rd,
                          const struct rally__sig *sig)
{
    const struct rally__topo *t = &c->topo;
    int H = t->hier_hosts, lead = t->hier_leader == t->rank;
    size_t es = rd->elem_nbytes, total = count * es;
    size_t chunk = c->chunk < es ? es : rally__round_down(c->chunk, es), rcap = 4 * chunk;
    struct rally__run x;
    rally__run_start(&x, c, sig);
    struct chain ch = {.x = &x,
                       .in = in,
                       .buf = buf,
                       .rd = rd,
                       .total = total,
                       .rcap = rcap,
                       .chunk = chunk,
                       .H = H,
                       .i = t->hier_index};
    ch.up = t->hier_up >= 0 ? rally__chan_of(&x, t->hier_up) : NULL;
    ch.down = t->hier_down >= 0 ? rally__chan_of(&x, t->hier_down) : NULL;
    if ((t->hier_up >= 0 && ch.up == NULL) || (t->hier_down >= 0 && ch.down == NULL))
        return rally__fail(x.e, RALLY_ESTATE, "no link along the host's chain");
    /* the ring's stage and receive ring first, the chain's after them */
    unsigned char *scratch = rally__coll_scratch(c, 3 * rcap, x.e);
    if (scratch == NULL)
        return x.e->code;
    ch.ring = scratch + 2 * rcap;
    if (ch.down == NULL)
        ch.red = total; /* the chain's end: its own value goes up as it is */
    size_t stack[3 * SEGMENTS_ON_STACK], *off = stack;
    if (H > SEGMENTS_ON_STACK && (off = calloc(3 * (size_t)H, sizeof *off)) == NULL)
        return rally__fail(x.e, RALLY_ENOMEM, "out of memory");
    size_t *len = off + H, *fin = len + H;
    rally__ring_segments(count, es, H, off, len);
    for (int s = 0; s < H; s++)
        fin[s] = 0;
    ch.off = off;
    ch.len = len;
    ch.fin = fin;
    int rc;
    if (lead) { /* the ring over the hosts' sums, the chain beside it */
        struct rally__ring ring = {t->hier_index, H, t->hier_next, t->hier_prev};
        struct rally__ring_side side = {chain_ready, chain_pump, chain_done, &ch};
        struct rally__final_hook fh = {chain_final, &ch};
        rc = rally__ring_run(&x, &ring, ch.down ? buf : in, buf, off, len, 2 * H - 2, H - 1, rd,
                             NULL, &fh, &side);
    } else {
        for (;;) {
            int moved = 0;
            if (chain_pump(&ch, &moved) != 0) {
                rc = x.e->code;
                break;
            }
            int sigs = rally__pump_sigs(&x, &moved);
            if (sigs < 0) {
                rc = x.e->code;
                break;
            }
            if (sigs && chain_done(&ch)) {
                rc = RALLY_OK;
                break;
            }
            if ((rc = rally__settle(&x, moved)) != RALLY_OK)
                break;
        }
    }
    if (off != stack)
        free(off);
    return rc;
}
