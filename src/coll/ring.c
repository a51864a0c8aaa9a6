/*
 * ring.c — the ring stream (run.h): allreduce as reduce-scatter plus
 * allgather, or allgather alone.
 *
 * The ring is one continuous stream of 2N-2 segments per direction (N-1 for
 * allgather): rank r sends segments r, r-1, r-2, ... (mod N) to r+1 and
 * receives segments r-1, r-2, ... from r-1.  The first N-1 received
 * segments are reduced (reduce-scatter: the partial sums into a small stage
 * ring while it has room, the last, final one into the buffer), the rest are
 * copied into the buffer (allgather); sent segment k is exactly received
 * segment k-1 once processed, so bytes flow onwards as soon as they are
 * reduced.
 *
 * Kept (rally__allreduce_keep): buf changes a whole element at a time, from
 * its input to its final value.  The allgather's segments land straight in
 * buf from a link that says how many bytes it holds (shared memory:
 * rally__chan_recv_whole), and through the receive ring from another; the
 * final hook hears each piece while it is in the cache (the robust engine
 * copies what it keeps of it there).  A partial sum that misses the stage
 * waits in keep, the caller's scratch, never in buf.
 *
 * The ring runs on any ring of ranks (struct rally__ring: the topology's,
 * or the hierarchy's leaders), and may have a side in its loop (struct
 * rally__ring_side: the leader's chain), which says how much of each
 * segment of in is there yet; the final hook hears which bytes of buf are
 * final, with or without keep.
 */
#include "coll/run.h"

#include <stdlib.h>
#include <string.h>

#include "util/copy.h"

/* --- ring ----------------------------------------------------------------- */

size_t rally__ring_segment(size_t count, size_t es, int n, int s, size_t *len)
{
    size_t a = count * (size_t)s / (size_t)n, b = count * (size_t)(s + 1) / (size_t)n;
    *len = (b - a) * es;
    return a * es;
}

void rally__ring_segments(size_t count, size_t es, int n, size_t *off, size_t *len)
{
    for (int s = 0; s < n; s++)
        off[s] = rally__ring_segment(count, es, n, s, &len[s]);
}

/* The partial sums of the reduce-scatter (received segments 0..nreduce-2,
 * which leave again as sent segments 1..nreduce-1) go to a stage ring the
 * size of the receive ring, where they are still in the CPU cache when they
 * are sent, instead of into buf, whose lines the allgather overwrites
 * anyway (an out-of-place call would read each of those lines from memory
 * twice).  The reduction must never wait for the stage (every rank could be
 * waiting for its successor), so a piece that does not fit goes to buf as
 * before: a FIFO of extents says, in stream order, where the unsent partial
 * bytes are. */
#define STAGE_EXTENTS 4

struct stage {
    unsigned char *ring;
    size_t cap;      /* bytes, a multiple of the element size */
    size_t put, got; /* staged bytes written / sent */
    struct {
        size_t n;
        int staged;
    } q[STAGE_EXTENTS];
    int head, count;
};

/* Room for up to n staged bytes at st->put, contiguous (the caller rounds
 * it down to whole elements); 0 when a staged extent could not be queued. */
static size_t stage_room(const struct stage *st, size_t n)
{
    int last = (st->head + st->count + STAGE_EXTENTS - 1) % STAGE_EXTENTS;
    if (st->ring == NULL ||
        !((st->count > 0 && st->q[last].staged) || st->count < STAGE_EXTENTS - 1))
        return 0;
    size_t free_n = st->cap - (st->put - st->got), wrap = st->cap - st->put % st->cap;
    size_t m = free_n < wrap ? free_n : wrap;
    return m < n ? m : n;
}

/* Queues n partial bytes, staged or in buf.  A staged extent is queued only
 * after stage_room() said so, and a buf extent always fits: a full queue
 * ends with one (stage_room refuses the second-to-last slot to a staged
 * extent). */
static void stage_push(struct stage *st, size_t n, int staged)
{
    int last = (st->head + st->count + STAGE_EXTENTS - 1) % STAGE_EXTENTS;
    if (st->count > 0 && st->q[last].staged == staged) {
        st->q[last].n += n;
    } else {
        int at = (st->head + st->count) % STAGE_EXTENTS;
        st->q[at].n = n;
        st->q[at].staged = staged;
        st->count++;
    }
    if (staged)
        st->put += n;
}

/* Streams nseg segments around the ring; the first nreduce received ones are
 * reduced into buf with rd, the rest copied.  Segment s is buf[off[s],
 * off[s] + len[s]). */
int rally__ring_stream(struct rally__comm *c, const unsigned char *in, unsigned char *buf,
                       const size_t *off, const size_t *len, int nseg, int nreduce,
                       const struct rally__reducer *rd, const struct rally__sig *sig,
                       unsigned char *keep, const struct rally__final_hook *h)
{
    struct rally__run x;
    rally__run_start(&x, c, sig);
    const struct rally__topo *t = &c->topo;
    struct rally__ring ring = {t->rank, t->world, t->ring_next, t->ring_prev};
    return rally__ring_run(&x, &ring, in, buf, off, len, nseg, nreduce, rd, keep, h, NULL);
}

int rally__ring_run(struct rally__run *x, const struct rally__ring *rg, const unsigned char *in,
                    unsigned char *buf, const size_t *off, const size_t *len, int nseg, int nreduce,
                    const struct rally__reducer *rd, unsigned char *keep,
                    const struct rally__final_hook *h, const struct rally__ring_side *side)
{
    struct rally__comm *c = x->c;
    int N = rg->world, r = rg->rank;
    struct rally__chan *next = rally__chan_of(x, rg->next), *prev = rally__chan_of(x, rg->prev);
    if (next == NULL || prev == NULL)
        return rally__fail(x->e, RALLY_ESTATE, "no ring link");
    size_t es = rd ? rd->elem_nbytes : 1;
    size_t chunk = c->chunk < es ? es : rally__round_down(c->chunk, es);
    size_t rcap = 4 * chunk;
    unsigned char *ring = NULL;
    struct stage st;
    memset(&st, 0, sizeof st);
    st.cap = rcap;
    /* kept, from a link that says what it holds (shared memory): the
     * allgather receives whole elements straight into buf, not through the
     * receive ring (rally__chan_recv_whole) */
    int direct = keep != NULL && prev->l->ops->readable != NULL;
    /* from a link that shows what it holds in its own memory (shared
     * memory: its peek op), the reduce-scatter reads its received bytes
     * where they are, with no copy out first: an element the link's ring
     * cut in two is the one copied, into tail */
    int zc = nreduce > 0 && prev->l->ops->peek != NULL;
    size_t rings = (nreduce > 1 ? 2 : 1) * rcap;
    if (nreduce > 0 &&
        (ring = rally__coll_scratch(c, rings + (direct || zc ? es : 0), x->e)) == NULL)
        return x->e->code;
    if (nreduce > 1)
        st.ring = ring + rcap;
    unsigned char *tail = direct || zc ? ring + rings : NULL;
    size_t tail_n = 0;
    uint64_t mv = 0; /* bytes moved (rally__moved) */
    /* where partial sums that miss the stage wait: buf, or keep, so that
     * buf only ever changes to final values */
    unsigned char *part = keep != NULL ? keep : buf;

#define SEG(k, shift) ((((r - (shift) - (k)) % N) + N) % N)
    int sk = 0, rk = 0, pk = 0;          /* send / receive / processed segment */
    size_t spos = 0, rpos = 0, ppos = 0; /* bytes within them */
    size_t rtotal = 0, ptotal = 0;       /* reduce-stream bytes received / processed */
    for (;;) {
        int moved = 0;
        if (side != NULL && side->pump(side->arg, &moved) != 0)
            return x->e->code;
        /* send: segment 0 is ours; segment k is received segment k-1 once processed */
        while (sk < nseg || !rally__sig_sent(next)) {
            size_t slen = sk < nseg ? len[SEG(sk, 0)] : 0;
            size_t avail = sk == 0 ? slen : pk > sk - 1 ? slen : pk == sk - 1 ? ppos : 0;
            if (sk == 0 && side != NULL) /* as far as our own input is there */
                avail = side->ready(side->arg, SEG(0, 0));
            if (sk >= nseg)
                avail = 0;
            /* our own segment: the input; then partial sums, then final values */
            const unsigned char *src = sk == 0 ? in : sk < nreduce ? part : buf;
            src += (sk < nseg ? off[SEG(sk, 0)] : 0) + spos;
            size_t want = avail - spos;
            int partial = sk >= 1 && sk < nreduce && want > 0; /* the FIFO says where */
            if (partial) {
                if (want > st.q[st.head].n)
                    want = st.q[st.head].n;
                if (st.q[st.head].staged) {
                    size_t wrap = st.cap - st.got % st.cap;
                    src = st.ring + st.got % st.cap;
                    if (want > wrap)
                        want = wrap;
                }
            }
            long m = rally__chan_send(x, next, src, want, &moved);
            if (m < 0)
                return x->e->code;
            mv += (uint64_t)m;
            if (partial && m > 0) {
                if (st.q[st.head].staged)
                    st.got += (size_t)m;
                if ((st.q[st.head].n -= (size_t)m) == 0) {
                    st.head = (st.head + 1) % STAGE_EXTENTS;
                    st.count--;
                }
            }
            spos += (size_t)m;
            if (sk < nseg && spos == slen) {
                sk++;
                spos = 0;
                continue;
            }
            if (m == 0 || (size_t)m < want)
                break;
        }
        /* receive */
        while ((rk < nseg || !rally__sig_got(prev)) && !(zc && rk < nreduce)) {
            size_t rlen = rk < nseg ? len[SEG(rk, 1)] : 0;
            unsigned char *dst;
            size_t n = rlen - rpos;
            if (rk < nreduce || (keep != NULL && !direct)) {
                size_t pos = rtotal % rcap;
                if (n > rcap - (rtotal - ptotal))
                    n = rcap - (rtotal - ptotal);
                if (n > rcap - pos)
                    n = rcap - pos;
                dst = ring + pos;
            } else {
                dst = buf + (rk < nseg ? off[SEG(rk, 1)] : 0) + rpos;
            }
            long m = direct && rk >= nreduce && rk < nseg
                         ? rally__chan_recv_whole(x, prev, dst, n, es, tail, &tail_n, &moved)
                         : rally__chan_recv(x, prev, dst, n, &moved);
            if (m < 0)
                return x->e->code;
            mv += (uint64_t)m;
            rpos += (size_t)m;
            if (rk < nreduce || (keep != NULL && !direct))
                rtotal += (size_t)m;
            if (rk < nseg && rpos == rlen) {
                rk++;
                rpos = 0;
                continue;
            }
            if (m == 0)
                break;
        }
        /* process: reduce (own value on the left) or just account copies */
        while (pk < rk || (pk == rk && pk < nseg)) {
            size_t plen = len[SEG(pk, 1)];
            size_t have = pk < rk ? plen : rpos;
            const unsigned char *from = NULL; /* zc: the received bytes, where they lie */
            if (zc && pk < nreduce) { /* pk == rk: received here, as processed */
                size_t want = plen - ppos < chunk ? plen - ppos : chunk; /* sent on soon */
                if (side != NULL) { /* as far as our own input is there */
                    size_t own = rally__round_down(side->ready(side->arg, SEG(pk, 1)) - ppos, es);
                    want = want < own ? want : own;
                }
                long k = want > 0 && tail_n == 0
                             ? rally__chan_peek(x, prev, want, es, &from, &moved)
                             : 0;
                if (k < 0)
                    return x->e->code;
                if (k == 0 && want > 0) { /* nothing yet, or an element cut in two */
                    k = rally__chan_recv(x, prev, tail + tail_n, es - tail_n, &moved);
                    if (k < 0)
                        return x->e->code;
                    mv += (uint64_t)k;
                    tail_n += (size_t)k;
                    k = 0;
                    if (tail_n == es) {
                        from = tail;
                        k = (long)es;
                    }
                }
                have = ppos + (size_t)k;
            }
            if (pk >= nreduce && (keep == NULL || direct)) { /* received straight into buf */
                if (h != NULL && have > ppos)
                    h->final(h->arg, off[SEG(pk, 1)] + ppos, have - ppos,
                             buf + off[SEG(pk, 1)] + ppos);
                ppos = have;
            } else {
                size_t n = rally__round_down(have - ppos, es);
                if (side != NULL && pk < nreduce && !zc) { /* as far as our own input is there */
                    size_t own = side->ready(side->arg, SEG(pk, 1)) - ppos;
                    n = n < own ? n : rally__round_down(own, es);
                }
                if (n == 0 || (from == NULL && n < chunk && ppos + n < plen))
                    break;
                size_t p = 0;
                while (p < n) {
                    size_t pos = (ptotal + p) % rcap, m = n - p;
                    if (from == NULL && m > rcap - pos)
                        m = rcap - pos;
                    const unsigned char *got = from != NULL ? from + p : ring + pos;
                    size_t at = off[SEG(pk, 1)] + ppos + p; /* out = own input (+) received */
                    size_t k = pk < nreduce - 1 ? rally__round_down(stage_room(&st, m), es) : 0;
                    if (pk >= nreduce) { /* an allgathered final piece (keep: whole elements) */
                        memcpy(buf + at, got, m);
                    } else if (k > 0) { /* a partial sum, staged */
                        m = k;
                        rally__reduce3(rd, st.ring + st.put % st.cap, in + at, got, m / es);
                    } else if (pk < nreduce - 1) { /* a partial sum the stage had no room for */
                        rally__reduce3(rd, part + at, in + at, got, m / es);
                    } else { /* this rank's final segment */
                        rally__reduce3(rd, buf + at, in + at, got, m / es);
                    }
                    mv += m;
                    if (pk < nreduce - 1) {
                        stage_push(&st, m, k > 0);
                    } else if (h != NULL) { /* final, and still in cache */
                        h->final(h->arg, at, m, buf + at);
                    }
                    p += m;
                }
                if (from == NULL) /* through the receive ring */
                    ptotal += n;
                else if (from == tail)
                    tail_n = 0;
                else
                    rally__chan_consume(prev, n);
                ppos += n;
                moved = 1;
            }
            if (ppos < plen)
                break;
            if (zc && pk < nreduce)
                rk = pk + 1;
            pk++;
            ppos = 0;
        }
        int sigs = rally__pump_sigs(x, &moved);
        if (sigs < 0)
            return x->e->code;
        if (sigs && sk == nseg && pk == nseg && (side == NULL || side->done(side->arg))) {
            rally__moved(mv);
            return RALLY_OK;
        }
        if (rally__settle(x, moved) != RALLY_OK)
            return x->e->code;
    }
#undef SEG
}
