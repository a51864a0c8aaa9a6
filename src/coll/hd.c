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

/* Sends src[0..sn) and receives dst[0..rn) on ch at the same time (either
 * may be empty); with f, arrived whole elements are folded chunk by chunk. */
static int exchange(struct rally__run *x, struct rally__chan *ch, const unsigned char *src,
                    size_t sn, unsigned char *dst, size_t rn, const struct rally__reducer *rd,
                    struct fold *f)
{
    size_t es = rd->elem_nbytes;
    size_t chunk = x->c->chunk < es ? es : rally__round_down(x->c->chunk, es);
    size_t sent = 0, got = 0;
    for (;;) {
        int moved = 0;
        if (rally__send_upto(x, ch, src, &sent, sn, &moved) < 0 ||
            rally__recv_upto(x, ch, dst, &got, rn, &moved) < 0 || rally__pump_sigs(x, &moved) < 0)
            return -1;
        if (f != NULL) {
            size_t a = rally__round_down(got, es);
            if (a > f->done && (a - f->done >= chunk || a == rn)) {
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
 * extra ranks in, halve, double, hand the result to the folded ranks. */
int rally__hd_allreduce(struct rally__comm *c, const unsigned char *in, unsigned char *buf,
                        size_t count, const struct rally__reducer *rd, const struct rally__sig *sig)
{
    struct rally__run x;
    rally__run_start(&x, c, sig);
    const struct rally__topo *t = &c->topo;
    size_t es = rd->elem_nbytes, total = count * es;
    int p = t->hd_p, v = t->hd_vrank, r = t->rank;
    struct rally__chan *ch;

    if (v < 0) { /* folded away: hand the input to r - 1, get the result back */
        if ((ch = rally__chan_of(&x, r - 1)) == NULL)
            return rally__fail(x.e, RALLY_ESTATE, "no link to rank %d", r - 1);
        if (exchange(&x, ch, in, total, buf, 0, rd, NULL) < 0 ||
            exchange(&x, ch, in, 0, buf, total, rd, NULL) < 0)
            return x.e->code;
        return sigs_done(&x);
    }
    /* This rank's partial values live at cur (in, buf or the scratch space,
     * all at the same offsets); a step receives into another of them and
     * reduces in place there or into buf, so nothing is copied but the
     * final block. */
    const unsigned char *cur = in;
    struct rally__chan *folded = NULL;
    unsigned char *space = rally__coll_scratch(c, total, x.e);
    if (space == NULL)
        return x.e->code;
    if (r < 2 * t->hd_extra) { /* absorb r + 1: y = x_r (+) x_(r+1) */
        if ((folded = rally__chan_of(&x, r + 1)) == NULL)
            return rally__fail(x.e, RALLY_ESTATE, "no link to rank %d", r + 1);
        struct fold f = {buf, in, space, 0};
        if (exchange(&x, folded, in, 0, space, total, rd, &f) < 0)
            return x.e->code;
        cur = buf;
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
        int writable = cur != in || in == buf;
        unsigned char *rx = cur == buf || (low && !writable) ? space : buf, *out;
        struct fold f;
        if (low && writable) /* cur (+)= arrived */
            out = (unsigned char *)cur, f = (struct fold){out + k0, cur + k0, rx + k0, 0};
        else if (low) /* buf = in (+) arrived */
            out = buf, f = (struct fold){buf + k0, cur + k0, rx + k0, 0};
        else /* arrived (+)= cur */
            out = rx, f = (struct fold){rx + k0, rx + k0, cur + k0, 0};
        if (exchange(&x, ch, cur + s0, s1 - s0, rx + k0, k1 - k0, rd, &f) < 0)
            return x.e->code;
        cur = out;
        a = ka;
        b = kb;
    }
    if (cur != buf) {
        size_t m0 = hd_at(count, es, a, p), m1 = hd_at(count, es, b, p);
        memcpy(buf + m0, cur + m0, m1 - m0);
    }
    /* doubling: trade what I hold for my partner's block of the same size */
    for (int d = p / 2; d >= 1; d /= 2) {
        int peer = rally__topo_hd_real(t, v ^ d), w = b - a;
        int pa = (v & d) == 0 ? b : a - w;
        if ((ch = rally__chan_of(&x, peer)) == NULL)
            return rally__fail(x.e, RALLY_ESTATE, "no link to rank %d", peer);
        size_t m0 = hd_at(count, es, a, p), m1 = hd_at(count, es, b, p);
        size_t p0 = hd_at(count, es, pa, p), p1 = hd_at(count, es, pa + w, p);
        if (exchange(&x, ch, buf + m0, m1 - m0, buf + p0, p1 - p0, rd, NULL) < 0)
            return x.e->code;
        a = a < pa ? a : pa;
        b = a + 2 * w;
    }
    if (folded != NULL && exchange(&x, folded, buf, total, buf, 0, rd, NULL) < 0)
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
        if (exchange(&x, ch, cur, total, rx, total, rd, NULL) < 0)
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
