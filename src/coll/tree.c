/*
 * tree.c — the tree allreduce (run.h): partial sums up the topology's tree
 * towards rank 0, each child's bytes reduced as they arrive, and the result
 * down again as it is known.
 */
#include "coll/run.h"

#include <stdlib.h>
#include <string.h>

/* --- tree allreduce ------------------------------------------------------- */

struct child {
    struct rally__chan *ch;
    unsigned char *ring; /* rcap bytes */
    size_t got;          /* payload bytes received */
    size_t sent;         /* result bytes sent down */
};

int rally__tree_allreduce(struct rally__comm *c, const unsigned char *in, unsigned char *buf,
                          size_t total, const struct rally__reducer *rd,
                          const struct rally__sig *sig)
{
    struct rally__run x;
    rally__run_start(&x, c, sig);
    const struct rally__topo *t = &c->topo;
    size_t es = rd->elem_nbytes;
    size_t chunk = c->chunk < es ? es : rally__round_down(c->chunk, es);
    size_t rcap = total < 2 * chunk ? total : 2 * chunk;
    struct child kids[RALLY__MAX_CHILDREN];
    int nk = t->nchildren;
    unsigned char *space = NULL;
    if (nk > 0 && rcap > 0 && (space = rally__coll_scratch(c, (size_t)nk * rcap, x.e)) == NULL)
        return x.e->code;
    for (int i = 0; i < nk; i++) {
        kids[i].ch = rally__chan_of(&x, t->children[i]);
        kids[i].ring = space ? space + (size_t)i * rcap : NULL;
        kids[i].got = kids[i].sent = 0;
        if (kids[i].ch == NULL)
            return rally__fail(x.e, RALLY_ESTATE, "no link to child rank %d", t->children[i]);
    }
    struct rally__chan *up = t->parent >= 0 ? rally__chan_of(&x, t->parent) : NULL;
    if (t->parent >= 0 && up == NULL)
        return rally__fail(x.e, RALLY_ESTATE, "no link to parent rank %d", t->parent);

    size_t reduced = nk == 0 ? total : 0, up_sent = 0, down_got = 0;
    for (;;) {
        int moved = 0;
        /* children -> ring buffers */
        for (int i = 0; i < nk; i++) {
            struct child *k = &kids[i];
            size_t limit = reduced + rcap < total ? reduced + rcap : total;
            while (k->got < limit || !rally__sig_got(k->ch)) {
                size_t pos = rcap ? k->got % rcap : 0;
                size_t n = limit - k->got;
                if (n > rcap - pos)
                    n = rcap - pos;
                long m = rally__chan_recv(&x, k->ch, k->ring + pos, n, &moved);
                if (m < 0)
                    return x.e->code;
                if (m == 0)
                    break;
                k->got += (size_t)m;
            }
        }
        /* reduce what every child has delivered, own value first, children in rank order */
        if (nk > 0) {
            size_t avail = total;
            for (int i = 0; i < nk; i++)
                if (kids[i].got < avail)
                    avail = kids[i].got;
            avail = rally__round_down(avail, es);
            if (avail > reduced && (avail - reduced >= chunk || avail == total)) {
                for (int i = 0; i < nk; i++) {
                    size_t p = reduced;
                    while (p < avail) {
                        size_t pos = p % rcap, n = avail - p;
                        if (n > rcap - pos)
                            n = rcap - pos;
                        /* own value first: out = in (+) child 0, then (+)= child 1 */
                        if (i == 0)
                            rally__reduce3(rd, buf + p, in + p, kids[i].ring + pos, n / es);
                        else
                            rally__reduce(rd, buf + p, kids[i].ring + pos, n / es);
                        p += n;
                    }
                }
                reduced = avail;
                moved = 1;
            }
        }
        /* reduced prefix -> parent; result <- parent */
        size_t final = reduced;
        if (up != NULL) {
            const unsigned char *src = nk == 0 ? in : buf; /* a leaf sends its input */
            if (rally__send_upto(&x, up, src, &up_sent, reduced, &moved) < 0 ||
                rally__recv_upto(&x, up, buf, &down_got, total, &moved) < 0)
                return x.e->code;
            final = down_got;
        }
        /* result -> children */
        int sigs = rally__pump_sigs(&x, &moved);
        if (sigs < 0)
            return x.e->code;
        int done = sigs && final == total && (up == NULL || up_sent == total);
        for (int i = 0; i < nk; i++) {
            struct child *k = &kids[i];
            if (rally__send_upto(&x, k->ch, buf, &k->sent, final, &moved) < 0)
                return x.e->code;
            done &= k->sent == total;
        }
        if (done)
            return RALLY_OK;
        if (rally__settle(&x, moved) != RALLY_OK)
            return x.e->code;
    }
}
