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

/* One ring run's state: the call's arguments, its links and buffers, and
 * where the send, receive and process steps stand in the stream. */
struct ringrun {
    struct rally__run *x;
    int N, r;
    const unsigned char *in;
    unsigned char *buf, *keep;
    const size_t *off, *len;
    int nseg, nreduce;
    const struct rally__reducer *rd;
    const struct rally__final_hook *h;
    const struct rally__ring_side *side;
    struct rally__chan *next, *prev;
    size_t es, chunk, rcap;
    unsigned char *ring; /* the receive ring (rcap), then the stage's */
    struct stage st;
    int direct, zc;
    unsigned char *tail; /* an element a link's ring cut in two (direct, zc) */
    size_t tail_n;
    uint64_t mv; /* bytes moved (rally__moved) */
    /* where partial sums that miss the stage wait: buf, or keep, so that
     * buf only ever changes to final values */
    unsigned char *part;
    int sk, rk, pk;          /* send / receive / processed segment */
    size_t spos, rpos, ppos; /* bytes within them */
    size_t rtotal, ptotal;   /* reduce-stream bytes received / processed */
};

/* The segment that is k-th in the stream of rank r's sends (shift 0) or
 * receives (shift 1). */
static inline int seg(const struct ringrun *s, int k, int shift)
{
    return (((s->r - shift - k) % s->N) + s->N) % s->N;
}

/* The buffers and the paths this run takes.  -1 with x->e set. */
static int ring_setup(struct ringrun *s)
{
    struct rally__comm *c = s->x->c;
    s->es = s->rd ? s->rd->elem_nbytes : 1;
    s->chunk = c->chunk < s->es ? s->es : rally__round_down(c->chunk, s->es);
    s->rcap = 4 * s->chunk;
    s->st.cap = s->rcap;
    /* kept, from a link that says what it holds (shared memory): the
     * allgather receives whole elements straight into buf, not through the
     * receive ring (rally__chan_recv_whole) */
    s->direct = s->keep != NULL && s->prev->l->ops->readable != NULL;
    /* from a link that shows what it holds in its own memory (shared
     * memory: its peek op), the reduce-scatter reads its received bytes
     * where they are, with no copy out first: an element the link's ring
     * cut in two is the one copied, into tail */
    s->zc = s->nreduce > 0 && s->prev->l->ops->peek != NULL;
    size_t rings = (s->nreduce > 1 ? 2 : 1) * s->rcap;
    if (s->nreduce > 0 &&
        (s->ring = rally__coll_scratch(c, rings + (s->direct || s->zc ? s->es : 0), s->x->e)) ==
            NULL)
        return -1;
    if (s->nreduce > 1)
        s->st.ring = s->ring + s->rcap;
    s->tail = s->direct || s->zc ? s->ring + rings : NULL;
    s->part = s->keep != NULL ? s->keep : s->buf;
    return 0;
}

/* Sends what is ready: segment 0 is ours; segment k is received segment
 * k-1 once processed.  -1 with x->e set. */
static int ring_send(struct ringrun *s, int *moved)
{
    struct stage *st = &s->st;
    while (s->sk < s->nseg || !rally__sig_sent(s->next)) {
        int sk = s->sk;
        size_t slen = sk < s->nseg ? s->len[seg(s, sk, 0)] : 0;
        size_t avail = sk == 0 ? slen : s->pk > sk - 1 ? slen : s->pk == sk - 1 ? s->ppos : 0;
        if (sk == 0 && s->side != NULL) /* as far as our own input is there */
            avail = s->side->ready(s->side->arg, seg(s, 0, 0));
        if (sk >= s->nseg)
            avail = 0;
        /* our own segment: the input; then partial sums, then final values */
        const unsigned char *src = sk == 0 ? s->in : sk < s->nreduce ? s->part : s->buf;
        src += (sk < s->nseg ? s->off[seg(s, sk, 0)] : 0) + s->spos;
        size_t want = avail - s->spos;
        int partial = sk >= 1 && sk < s->nreduce && want > 0; /* the FIFO says where */
        if (partial) {
            if (want > st->q[st->head].n)
                want = st->q[st->head].n;
            if (st->q[st->head].staged) {
                size_t wrap = st->cap - st->got % st->cap;
                src = st->ring + st->got % st->cap;
                if (want > wrap)
                    want = wrap;
            }
        }
        long m = rally__chan_send(s->x, s->next, src, want, moved);
        if (m < 0)
            return -1;
        s->mv += (uint64_t)m;
        if (partial && m > 0) {
            if (st->q[st->head].staged)
                st->got += (size_t)m;
            if ((st->q[st->head].n -= (size_t)m) == 0) {
                st->head = (st->head + 1) % STAGE_EXTENTS;
                st->count--;
            }
        }
        s->spos += (size_t)m;
        if (sk < s->nseg && s->spos == slen) {
            s->sk++;
            s->spos = 0;
            continue;
        }
        if (m == 0 || (size_t)m < want)
            break;
    }
    return 0;
}

/* Receives into the receive ring (the reduce-scatter, or a kept allgather
 * from a link that cannot say what it holds), or straight into buf; with zc
 * the reduce-scatter's bytes stay in the link until processed.  -1 with
 * x->e set. */
static int ring_recv(struct ringrun *s, int *moved)
{
    while ((s->rk < s->nseg || !rally__sig_got(s->prev)) && !(s->zc && s->rk < s->nreduce)) {
        int rk = s->rk;
        int via_ring = rk < s->nreduce || (s->keep != NULL && !s->direct);
        size_t rlen = rk < s->nseg ? s->len[seg(s, rk, 1)] : 0;
        unsigned char *dst;
        size_t n = rlen - s->rpos;
        if (via_ring) {
            size_t pos = s->rtotal % s->rcap;
            if (n > s->rcap - (s->rtotal - s->ptotal))
                n = s->rcap - (s->rtotal - s->ptotal);
            if (n > s->rcap - pos)
                n = s->rcap - pos;
            dst = s->ring + pos;
        } else {
            dst = s->buf + (rk < s->nseg ? s->off[seg(s, rk, 1)] : 0) + s->rpos;
        }
        long m = s->direct && rk >= s->nreduce && rk < s->nseg
                     ? rally__chan_recv_whole(s->x, s->prev, dst, n, s->es, s->tail, &s->tail_n,
                                              moved)
                     : rally__chan_recv(s->x, s->prev, dst, n, moved);
        if (m < 0)
            return -1;
        s->mv += (uint64_t)m;
        s->rpos += (size_t)m;
        if (via_ring)
            s->rtotal += (size_t)m;
        if (rk < s->nseg && s->rpos == rlen) {
            s->rk++;
            s->rpos = 0;
            continue;
        }
        if (m == 0)
            break;
    }
    return 0;
}

/* zc: the received bytes of the segment being processed, where they lie in
 * the link (*from), up to a chunk; an element the link's ring cut in two is
 * received into tail, whole.  The bytes of the segment then had: -1 with
 * x->e set. */
static long zc_have(struct ringrun *s, size_t plen, const unsigned char **from, int *moved)
{
    size_t want = plen - s->ppos < s->chunk ? plen - s->ppos : s->chunk; /* sent on soon */
    if (s->side != NULL) { /* as far as our own input is there */
        size_t own =
            rally__round_down(s->side->ready(s->side->arg, seg(s, s->pk, 1)) - s->ppos, s->es);
        want = want < own ? want : own;
    }
    long k = want > 0 && s->tail_n == 0
                 ? rally__chan_peek(s->x, s->prev, want, s->es, from, moved)
                 : 0;
    if (k < 0)
        return -1;
    if (k == 0 && want > 0) { /* nothing yet, or an element cut in two */
        k = rally__chan_recv(s->x, s->prev, s->tail + s->tail_n, s->es - s->tail_n, moved);
        if (k < 0)
            return -1;
        s->mv += (uint64_t)k;
        s->tail_n += (size_t)k;
        k = 0;
        if (s->tail_n == s->es) {
            *from = s->tail;
            k = (long)s->es;
        }
    }
    return (long)(s->ppos + (size_t)k);
}

/* n received bytes of segment pk, at got (from the link, or through the
 * receive ring): reduced (own value on the left) into the stage, keep or
 * buf, or copied into buf (the allgather). */
static void ring_fold(struct ringrun *s, const unsigned char *from, size_t n)
{
    const struct rally__reducer *rd = s->rd;
    int pk = s->pk;
    size_t p = 0, es = s->es;
    while (p < n) {
        size_t pos = (s->ptotal + p) % s->rcap, m = n - p;
        if (from == NULL && m > s->rcap - pos)
            m = s->rcap - pos;
        const unsigned char *got = from != NULL ? from + p : s->ring + pos;
        size_t at = s->off[seg(s, pk, 1)] + s->ppos + p; /* out = own input (+) received */
        size_t k = pk < s->nreduce - 1 ? rally__round_down(stage_room(&s->st, m), es) : 0;
        if (pk >= s->nreduce) { /* an allgathered final piece (keep: whole elements) */
            memcpy(s->buf + at, got, m);
        } else if (k > 0) { /* a partial sum, staged */
            m = k;
            rally__reduce3(rd, s->st.ring + s->st.put % s->st.cap, s->in + at, got, m / es);
        } else if (pk < s->nreduce - 1) { /* a partial sum the stage had no room for */
            rally__reduce3(rd, s->part + at, s->in + at, got, m / es);
        } else { /* this rank's final segment */
            rally__reduce3(rd, s->buf + at, s->in + at, got, m / es);
        }
        s->mv += m;
        if (pk < s->nreduce - 1)
            stage_push(&s->st, m, k > 0);
        else if (s->h != NULL) /* final, and still in cache */
            s->h->final(s->h->arg, at, m, s->buf + at);
        p += m;
    }
}

/* Processes what was received: reduce (own value on the left) or just
 * account copies.  -1 with x->e set. */
static int ring_process(struct ringrun *s, int *moved)
{
    while (s->pk < s->rk || (s->pk == s->rk && s->pk < s->nseg)) {
        int pk = s->pk;
        size_t plen = s->len[seg(s, pk, 1)];
        size_t have = pk < s->rk ? plen : s->rpos;
        const unsigned char *from = NULL; /* zc: the received bytes, where they lie */
        if (s->zc && pk < s->nreduce) { /* pk == rk: received here, as processed */
            long k = zc_have(s, plen, &from, moved);
            if (k < 0)
                return -1;
            have = (size_t)k;
        }
        if (pk >= s->nreduce && (s->keep == NULL || s->direct)) { /* received straight into buf */
            if (s->h != NULL && have > s->ppos)
                s->h->final(s->h->arg, s->off[seg(s, pk, 1)] + s->ppos, have - s->ppos,
                            s->buf + s->off[seg(s, pk, 1)] + s->ppos);
            s->ppos = have;
        } else {
            size_t n = rally__round_down(have - s->ppos, s->es);
            if (s->side != NULL && pk < s->nreduce && !s->zc) { /* as far as our input is there */
                size_t own = s->side->ready(s->side->arg, seg(s, pk, 1)) - s->ppos;
                n = n < own ? n : rally__round_down(own, s->es);
            }
            if (n == 0 || (from == NULL && n < s->chunk && s->ppos + n < plen))
                break;
            ring_fold(s, from, n);
            if (from == NULL) /* through the receive ring */
                s->ptotal += n;
            else if (from == s->tail)
                s->tail_n = 0;
            else
                rally__chan_consume(s->prev, n);
            s->ppos += n;
            *moved = 1;
        }
        if (s->ppos < plen)
            break;
        if (s->zc && pk < s->nreduce)
            s->rk = pk + 1;
        s->pk++;
        s->ppos = 0;
    }
    return 0;
}

int rally__ring_run(struct rally__run *x, const struct rally__ring *rg, const unsigned char *in,
                    unsigned char *buf, const size_t *off, const size_t *len, int nseg, int nreduce,
                    const struct rally__reducer *rd, unsigned char *keep,
                    const struct rally__final_hook *h, const struct rally__ring_side *side)
{
    struct ringrun s = {.x = x, .N = rg->world, .r = rg->rank, .in = in, .buf = buf,
                        .keep = keep, .off = off, .len = len, .nseg = nseg, .nreduce = nreduce,
                        .rd = rd, .h = h, .side = side};
    s.next = rally__chan_of(x, rg->next);
    s.prev = rally__chan_of(x, rg->prev);
    if (s.next == NULL || s.prev == NULL)
        return rally__fail(x->e, RALLY_ESTATE, "no ring link");
    if (ring_setup(&s) != 0)
        return x->e->code;
    for (;;) {
        int moved = 0;
        if (side != NULL && side->pump(side->arg, &moved) != 0)
            return x->e->code;
        if (ring_send(&s, &moved) != 0 || ring_recv(&s, &moved) != 0 ||
            ring_process(&s, &moved) != 0)
            return x->e->code;
        int sigs = rally__pump_sigs(x, &moved);
        if (sigs < 0)
            return x->e->code;
        if (sigs && s.sk == nseg && s.pk == nseg && (side == NULL || side->done(side->arg))) {
            rally__moved(s.mv);
            return RALLY_OK;
        }
        if (rally__settle(x, moved) != RALLY_OK)
            return x->e->code;
    }
}
