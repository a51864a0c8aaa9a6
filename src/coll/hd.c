/*
 * hd.c — recursive halving-doubling allreduce (run.h): its steps one after
 * another, each an exchange with one partner that reduces the arriving half
 * chunk by chunk; and recursive doubling, its small-message cousin with the
 * same grouping, whole vectors in log2 N exchanges (docs/determinism.md
 * gives the order).
 */
#include "coll/run.h"

#include <stdlib.h>
#include <string.h>

#include "util/copy.h"

/* --- recursive halving-doubling -------------------------------------------- */

/* The reduction a halving step does as the partner's half arrives:
 * out = a (+) b, where out is a or neither. */
struct fold {
    unsigned char *out;
    const unsigned char *a, *b;
    size_t done; /* bytes reduced */
};

static void fold_some(const struct rally__reducer *rd, struct fold *f, size_t upto)
{
    size_t at = f->done;
    rally__reduce3(rd, f->out + at, f->a + at, f->b + at, (upto - at) / rd->elem_nbytes);
    f->done = upto;
}

/* Kept (rally__allreduce_keep): where final values land.  buf changes only
 * from its input to final values, whole elements at a time, straight from
 * links that say what they hold (rally__hd_lands_direct), and h hears each
 * range as it lands. */
struct land {
    const struct rally__final_hook *h;
    unsigned char *tail; /* an element that arrived in part (es bytes) */
    size_t tail_n;
};

int rally__hd_lands_direct(struct rally__comm *c)
{
    const struct rally__topo *t = &c->topo;
    int v = t->hd_vrank, r = t->rank, ok = 1;
    struct rally__link *l;
    if (v < 0) /* folded away: the result comes from r - 1 */
        return (l = rally__comm_link(c, r - 1)) != NULL && l->ops->readable != NULL;
    for (int d = 1; d < t->hd_p && ok; d *= 2)
        ok = (l = rally__comm_link(c, rally__topo_hd_real(t, v ^ d))) != NULL &&
             l->ops->readable != NULL;
    return ok;
}

/* Receives final values into dst = buf + at, up to rn bytes (*got so far). */
static int land_some(struct rally__run *x, struct rally__chan *ch, unsigned char *dst, size_t at,
                     size_t *got, size_t rn, size_t es, struct land *ld, int *moved)
{
    while (*got < rn) {
        long m =
            rally__chan_recv_whole(x, ch, dst + *got, rn - *got, es, ld->tail, &ld->tail_n, moved);
        if (m < 0)
            return -1;
        if (m == 0)
            break;
        ld->h->final(ld->h->arg, at + *got, (size_t)m, dst + *got);
        *got += (size_t)m;
    }
    return 0;
}

/* Folds what has arrived of dst[0..rn) (*got of it so far) where it lies
 * in the link's memory (rally__chan_peek: shared memory), up to a chunk at
 * a time, so that it is never copied out first; an element the link's ring
 * cut in two is received into dst, its place, and folded from there.  f's
 * operand at dst is the arrived one. */
static int fold_direct(struct rally__run *x, struct rally__chan *ch,
                       const struct rally__reducer *rd, struct fold *f, unsigned char *dst,
                       size_t *got, size_t rn, size_t chunk, int *moved)
{
    size_t es = rd->elem_nbytes;
    while (*got < rn) {
        const unsigned char *p = NULL;
        size_t at = *got;
        long k = at % es == 0 ? rally__chan_peek(x, ch, rn - at < chunk ? rn - at : chunk, es,
                                                 &p, moved)
                              : 0;
        if (k < 0)
            return -1;
        if (k > 0) {
            rally__reduce3(rd, f->out + at, f->a == dst ? p : f->a + at,
                           f->b == dst ? p : f->b + at, (size_t)k / es);
            rally__chan_consume(ch, (size_t)k);
            rally__moved((uint64_t)k);
            *got = f->done = at + (size_t)k;
            *moved = 1;
            continue;
        }
        long m = rally__chan_recv(x, ch, dst + at, es - at % es, moved);
        if (m < 0)
            return -1;
        if (m == 0)
            break;
        rally__moved((uint64_t)m);
        if ((*got += (size_t)m) % es == 0) {
            fold_some(rd, f, *got);
            rally__moved(es);
        }
    }
    return 0;
}

/* Sends src[0..sn) and receives dst[0..rn) on ch at the same time (either
 * may be empty); with f, arrived whole elements are folded chunk by chunk,
 * straight from the link's memory when it shows them (fold_direct); with
 * ld, dst = buf + at receives final values as ld says. */
static int exchange(struct rally__run *x, struct rally__chan *ch, const unsigned char *src,
                    size_t sn, unsigned char *dst, size_t rn, const struct rally__reducer *rd,
                    struct fold *f, struct land *ld, size_t at)
{
    size_t es = rd->elem_nbytes;
    size_t chunk = x->c->chunk < es ? es : rally__round_down(x->c->chunk, es);
    size_t sent = 0, got = 0;
    int direct = f != NULL && ch->l->ops->peek != NULL;
    for (;;) {
        int moved = 0;
        size_t sent0 = sent, got0 = got;
        if (rally__send_upto(x, ch, src, &sent, sn, &moved) < 0 ||
            (direct       ? fold_direct(x, ch, rd, f, dst, &got, rn, chunk, &moved)
             : ld == NULL ? rally__recv_upto(x, ch, dst, &got, rn, &moved)
                          : land_some(x, ch, dst, at, &got, rn, es, ld, &moved)) < 0 ||
            rally__pump_sigs(x, &moved) < 0)
            return -1;
        if (sent > sent0 || (got > got0 && !direct))
            rally__moved(sent - sent0 + (direct ? 0 : got - got0));
        if (f != NULL && !direct) {
            size_t a = rally__round_down(got, es);
            if (a > f->done && (a - f->done >= chunk || a == rn)) {
                rally__moved(a - f->done);
                fold_some(rd, f, a);
                moved = 1;
            }
        }
        if (sent == sn && got == rn && rally__sig_sent(ch) && rally__sig_got(ch) &&
            (f == NULL || f->done == rn))
            return 0;
        if (rally__settle(x, moved) != RALLY_OK)
            return -1;
    }
}

/* Byte offset of the start of segment s of p. */
static size_t hd_at(size_t count, size_t es, int s, int p)
{
    return count * (size_t)s / (size_t)p * es;
}

/* Waits until every opened link's signature is through, both ways. */
static int sigs_done(struct rally__run *x)
{
    for (;;) {
        int moved = 0, all = rally__pump_sigs(x, &moved);
        if (all < 0)
            return x->e->code;
        if (all)
            return RALLY_OK;
        if (rally__settle(x, moved) != RALLY_OK)
            return x->e->code;
    }
}

/* Recursive halving-doubling (docs/determinism.md has the order): fold the
 * extra ranks in, halve, double, hand the result to the folded ranks.
 * Kept (keep, in == buf: rally__allreduce_keep, when
 * rally__hd_lands_direct), partial values go to keep instead of buf, and
 * final values land in buf as struct land says. */
int rally__hd_allreduce(struct rally__comm *c, const unsigned char *in, unsigned char *buf,
                        size_t count, const struct rally__reducer *rd, const struct rally__sig *sig,
                        unsigned char *keep, const struct rally__final_hook *h)
{
    struct rally__run x;
    rally__run_start(&x, c, sig);
    const struct rally__topo *t = &c->topo;
    size_t es = rd->elem_nbytes, total = count * es;
    int p = t->hd_p, v = t->hd_vrank, r = t->rank;
    struct rally__chan *ch;
    /* where partial values may go: buf, or keep, so that buf only ever
     * changes to final values */
    unsigned char *pb = keep != NULL ? keep : buf;
    /* the scratch space a step receives into, then the land's tail (kept);
     * a folded rank needs only the tail */
    size_t room = v < 0 ? 0 : total;
    unsigned char *space = NULL;
    if ((v >= 0 || keep != NULL) &&
        (space = rally__coll_scratch(c, room + (keep != NULL ? es : 0), x.e)) == NULL)
        return x.e->code;
    struct land kept = {h, space != NULL ? space + room : NULL, 0};
    struct land *ld = keep != NULL ? &kept : NULL;

    if (v < 0) { /* folded away: hand the input to r - 1, get the result back */
        if ((ch = rally__chan_of(&x, r - 1)) == NULL)
            return rally__fail(x.e, RALLY_ESTATE, "no link to rank %d", r - 1);
        if (exchange(&x, ch, in, total, buf, 0, rd, NULL, NULL, 0) < 0 ||
            exchange(&x, ch, in, 0, buf, total, rd, NULL, ld, 0) < 0)
            return x.e->code;
        return sigs_done(&x);
    }
    /* This rank's partial values live at cur (in, pb or the scratch space,
     * all at the same offsets); a step receives into another of them and
     * reduces in place there or into pb, so nothing is copied but the
     * final block. */
    const unsigned char *cur = in;
    struct rally__chan *folded = NULL;
    if (r < 2 * t->hd_extra) { /* absorb r + 1: y = x_r (+) x_(r+1) */
        if ((folded = rally__chan_of(&x, r + 1)) == NULL)
            return rally__fail(x.e, RALLY_ESTATE, "no link to rank %d", r + 1);
        struct fold f = {pb, in, space, 0};
        if (exchange(&x, folded, in, 0, space, total, rd, &f, NULL, 0) < 0)
            return x.e->code;
        cur = pb;
    }
    /* halving: keep the half my bit of d picks, the lower virtual rank's value on the left */
    int a = 0, b = p;
    for (int d = 1; d < p; d *= 2) {
        int peer = rally__topo_hd_real(t, v ^ d), mid = (a + b) / 2, low = (v & d) == 0;
        int ka = low ? a : mid, kb = low ? mid : b, sa = low ? mid : a, sb = low ? b : mid;
        if ((ch = rally__chan_of(&x, peer)) == NULL)
            return rally__fail(x.e, RALLY_ESTATE, "no link to rank %d", peer);
        size_t k0 = hd_at(count, es, ka, p), k1 = hd_at(count, es, kb, p);
        size_t s0 = hd_at(count, es, sa, p), s1 = hd_at(count, es, sb, p);
        int writable = cur != in || in == pb;
        unsigned char *rx = cur == pb || (low && !writable) ? space : pb, *out;
        struct fold f;
        if (low && writable) /* cur (+)= arrived */
            out = (unsigned char *)cur, f = (struct fold){out + k0, cur + k0, rx + k0, 0};
        else if (low) /* pb = in (+) arrived */
            out = pb, f = (struct fold){pb + k0, cur + k0, rx + k0, 0};
        else /* arrived (+)= cur */
            out = rx, f = (struct fold){rx + k0, rx + k0, cur + k0, 0};
        if (exchange(&x, ch, cur + s0, s1 - s0, rx + k0, k1 - k0, rd, &f, NULL, 0) < 0)
            return x.e->code;
        cur = out;
        a = ka;
        b = kb;
    }
    if (cur != buf) {
        size_t m0 = hd_at(count, es, a, p), m1 = hd_at(count, es, b, p);
        memcpy(buf + m0, cur + m0, m1 - m0);
        rally__moved(m1 - m0);
        if (ld != NULL)
            h->final(h->arg, m0, m1 - m0, cur + m0);
    }
    /* doubling: trade what I hold for my partner's block of the same size */
    for (int d = p / 2; d >= 1; d /= 2) {
        int peer = rally__topo_hd_real(t, v ^ d), w = b - a;
        int pa = (v & d) == 0 ? b : a - w;
        if ((ch = rally__chan_of(&x, peer)) == NULL)
            return rally__fail(x.e, RALLY_ESTATE, "no link to rank %d", peer);
        size_t m0 = hd_at(count, es, a, p), m1 = hd_at(count, es, b, p);
        size_t p0 = hd_at(count, es, pa, p), p1 = hd_at(count, es, pa + w, p);
        if (exchange(&x, ch, buf + m0, m1 - m0, buf + p0, p1 - p0, rd, NULL, ld, p0) < 0)
            return x.e->code;
        a = a < pa ? a : pa;
        b = a + 2 * w;
    }
    if (folded != NULL && exchange(&x, folded, buf, total, buf, 0, rd, NULL, NULL, 0) < 0)
        return x.e->code;
    return sigs_done(&x);
}

/* --- recursive doubling ---------------------------------------------------- */

/* Recursive doubling, N a power of two (docs/determinism.md): in step d = 1,
 * 2, ..., N/2 ranks r and r ^ d trade their whole partial values and both
 * keep the lower rank's on the left, so each holds the grouping halving-
 * doubling gives after log2 N hops (the tree takes twice its depth).  The
 * partial value lives at cur (in, buf or one of two scratch halves); the
 * partner's arrives in the other half and is folded once it is whole, after
 * cur is sent. */
int rally__rd_allreduce(struct rally__comm *c, const unsigned char *in, unsigned char *buf,
                        size_t count, const struct rally__reducer *rd, const struct rally__sig *sig)
{
    struct rally__run x;
    rally__run_start(&x, c, sig);
    const struct rally__topo *t = &c->topo;
    size_t total = count * rd->elem_nbytes;
    unsigned char *space = rally__coll_scratch(c, 2 * total, x.e);
    if (space == NULL)
        return x.e->code;
    const unsigned char *cur = in;
    for (int d = 1; d < t->hd_p; d *= 2) {
        int peer = rally__topo_hd_real(t, t->hd_vrank ^ d);
        struct rally__chan *ch = rally__chan_of(&x, peer);
        if (ch == NULL)
            return rally__fail(x.e, RALLY_ESTATE, "no link to rank %d", peer);
        unsigned char *rx = cur == space ? space + total : space;
        if (exchange(&x, ch, cur, total, rx, total, rd, NULL, NULL, 0) < 0)
            return x.e->code;
        if ((t->hd_vrank & d) == 0) { /* mine (+) arrived */
            unsigned char *out = cur == in && in != buf ? buf : (unsigned char *)cur;
            rally__reduce3(rd, out, cur, rx, count);
            cur = out;
        } else { /* arrived (+) mine */
            rally__reduce3(rd, rx, rx, cur, count);
            cur = rx;
        }
    }
    if (cur != buf)
        memcpy(buf, cur, total);
    return sigs_done(&x);
}
