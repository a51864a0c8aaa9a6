/*
 * coll.c — the collectives' entry points: allreduce (recursive doubling,
 * tree, hierarchy, halving-doubling or ring, by size, N and the hosts' layout
 * alone), tree broadcast, ring allgather, the ring shift.
 *
 *   run.h, run.c  a collective's run over its links, shared by all of them
 *   sig.c         at the bottom: the kinds and signatures every call opens
 *                 its links with, and the comm
 *   tree.c        tree allreduce
 *   ring.c        the ring stream (allreduce, allgather)
 *   hd.c          recursive halving-doubling allreduce
 *   hier.c        hierarchical allreduce (chains within hosts, a leaders' ring)
 *   cma.c         allreduce at N = 2 by reading the peer's buffers
 */
#include "coll/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/copy.h"

/* --- entry points ---------------------------------------------------------- */

static int finish(struct rally__comm *c, int rc)
{
    c->seq++;
    return rc;
}

enum { ALG_ONE, ALG_RD, ALG_TREE, ALG_HIER, ALG_HD, ALG_RING };

/* The algorithm an allreduce of count elements (total bytes) takes: by
 * size, N and the reducer alone (docs/determinism.md). */
static int algorithm(const struct rally__comm *c, size_t total, size_t count,
                     const struct rally__reducer *rd)
{
    int N = c->topo.world;
    if (N == 1)
        return ALG_ONE;
    if (total <= c->rd_threshold && total <= c->ring_threshold && rd->commutative && count > 0 &&
        c->topo.hd_p == N)
        return ALG_RD;
    if (total <= c->ring_threshold || !rd->commutative || count < (size_t)N)
        return ALG_TREE;
    if (c->topo.hier_hosts != 0)
        return ALG_HIER;
    if (c->topo.hd_p != 0 && total <= c->hd_threshold)
        return ALG_HD;
    return ALG_RING;
}

/* The ring over N segments of count elements (kept: rally__ring_stream). */
static int ring_allreduce(struct rally__comm *c, const void *in, void *buf, size_t count,
                          const struct rally__reducer *rd, const struct rally__sig *sig,
                          unsigned char *keep, const struct rally__final_hook *h)
{
    int N = c->topo.world;
    size_t off[SEGMENTS_ON_STACK] = {0}, len[SEGMENTS_ON_STACK] = {0};
    size_t *o = off, *l = len;
    if (N > SEGMENTS_ON_STACK) {
        o = malloc(2 * (size_t)N * sizeof *o);
        if (o == NULL)
            return rally__fail(c->err, RALLY_ENOMEM, "out of memory");
        l = o + N;
    }
    rally__ring_segments(count, rd->elem_nbytes, N, o, l);
    int rc = rally__ring_stream(c, in, buf, o, l, 2 * N - 2, N - 1, rd, sig, keep, h);
    if (o != off)
        free(o);
    return rc;
}

int rally__allreduce(struct rally__comm *c, const void *in, void *buf, size_t count,
                     const struct rally__reducer *rd, const struct rally__sig *sig)
{
    size_t total = count * rd->elem_nbytes;
    switch (algorithm(c, total, count, rd)) {
    case ALG_ONE:
        if (in != buf && total)
            memmove(buf, in, total);
        return finish(c, RALLY_OK);
    case ALG_RD:
        return finish(c, rally__rd_allreduce(c, in, buf, count, rd, sig));
    case ALG_TREE:
        return finish(c, rally__tree_allreduce(c, in, buf, total, rd, sig));
    case ALG_HIER:
        return finish(c, rally__hier_allreduce(c, in, buf, count, rd, sig));
    case ALG_HD:
        if (rally__cma_usable(c))
            return finish(c, rally__cma_allreduce(c, in, buf, count, rd, sig, 1, NULL));
        return finish(c, rally__hd_allreduce(c, in, buf, count, rd, sig, NULL, NULL));
    default:
        if (rally__cma_usable(c))
            return finish(c, rally__cma_allreduce(c, in, buf, count, rd, sig, 0, NULL));
        return finish(c, ring_allreduce(c, in, buf, count, rd, sig, NULL, NULL));
    }
}

/* Whether a kept allreduce by alg runs in place (its final values land in
 * buf as they are made) rather than out of place through scratch: the ring,
 * halving-doubling over shared memory, and both at N = 2 when they read
 * the peer's memory (cma.c). */
static int keeps_in_place(struct rally__comm *c, int alg)
{
    return alg == ALG_RING ||
           (alg == ALG_HD && (rally__cma_usable(c) || rally__hd_lands_direct(c)));
}

int rally__allreduce_in_place(struct rally__comm *c, size_t count, const struct rally__reducer *rd)
{
    return keeps_in_place(c, algorithm(c, count * rd->elem_nbytes, count, rd));
}

/* The ring keeps natively, and halving-doubling over shared memory; the
 * other algorithms write into scratch and the result is copied into buf
 * once complete here, so buf holds its input until then. */
int rally__allreduce_keep(struct rally__comm *c, void *buf, void *scratch, size_t count,
                          const struct rally__reducer *rd, const struct rally__sig *sig,
                          const struct rally__final_hook *h)
{
    size_t total = count * rd->elem_nbytes;
    int alg = algorithm(c, total, count, rd);
    if (keeps_in_place(c, alg) && rally__cma_usable(c))
        return finish(c, rally__cma_allreduce(c, buf, buf, count, rd, sig, alg == ALG_HD, h));
    if (keeps_in_place(c, alg))
        return finish(c, alg == ALG_RING
                             ? ring_allreduce(c, buf, buf, count, rd, sig, scratch, h)
                             : rally__hd_allreduce(c, buf, buf, count, rd, sig, scratch, h));
    int rc = rally__allreduce(c, buf, scratch, count, rd, sig);
    if (rc != RALLY_OK || total == 0)
        return rc;
    rally__copy_result(buf, scratch, total);
    h->final(h->arg, 0, total, scratch);
    return RALLY_OK;
}

int rally__allgather(struct rally__comm *c, void *buf, const size_t *off, const size_t *nbytes,
                     const struct rally__sig *sig)
{
    if (c->topo.world == 1)
        return finish(c, RALLY_OK);
    return finish(c, rally__ring_stream(c, buf, buf, off, nbytes, c->topo.world - 1, 0, NULL, sig,
                                        NULL, NULL));
}

int rally__broadcast(struct rally__comm *c, void *buf, size_t total, int root,
                     const struct rally__sig *sig)
{
    return rally__broadcast_have(c, buf, total, root, NULL, sig);
}

int rally__broadcast_have(struct rally__comm *c, void *buf, size_t total, int root,
                          const unsigned char *have, const struct rally__sig *sig)
{
    if (c->topo.world == 1)
        return finish(c, RALLY_OK);
    struct rally__run x;
    rally__run_start(&x, c, sig);
    const struct rally__topo *t = &c->topo;
    unsigned char *b = buf;
    /* a rank that has the bytes sends them from its own buffer, to the tree
     * neighbours away from root that lack them; it receives nothing */
    int up = rally__topo_toward(t, root);
    int from = have == NULL || !have[t->rank] ? up : -1;
    struct rally__chan *in = from >= 0 ? rally__chan_of(&x, from) : NULL;
    struct rally__chan *out[RALLY__MAX_CHILDREN + 1];
    size_t sent[RALLY__MAX_CHILDREN + 1] = {0};
    int nout = 0, nwant = 0;
    int tree[RALLY__MAX_CHILDREN + 1] = {t->parent};
    for (int i = 0; i < t->nchildren; i++)
        tree[1 + i] = t->children[i];
    for (int i = 0; i <= t->nchildren; i++) {
        if (tree[i] < 0 || tree[i] == up || (have && have[tree[i]]))
            continue;
        nwant++;
        if ((out[nout] = rally__chan_of(&x, tree[i])) != NULL)
            nout++;
    }
    if ((from >= 0 && in == NULL) || nout < nwant)
        return finish(c, rally__fail(x.e, RALLY_ESTATE, "broadcast: a tree link is missing"));
    size_t got = in ? 0 : total;
    for (;;) {
        int moved = 0;
        if (in && rally__recv_upto(&x, in, b, &got, total, &moved) < 0)
            return finish(c, x.e->code);
        int sigs = rally__pump_sigs(&x, &moved);
        if (sigs < 0)
            return finish(c, x.e->code);
        int done = sigs && got == total;
        for (int i = 0; i < nout; i++) {
            if (rally__send_upto(&x, out[i], b, &sent[i], got, &moved) < 0)
                return finish(c, x.e->code);
            done &= sent[i] == total;
        }
        if (done)
            return finish(c, RALLY_OK);
        if (rally__settle(&x, moved) != RALLY_OK)
            return finish(c, x.e->code);
    }
}

int rally__ring_shift(struct rally__comm *c, const void *send, size_t send_n, void *recv,
                      size_t recv_n, const struct rally__sig *sig)
{
    return rally__shift(c, c->topo.ring_next, c->topo.ring_prev, send, send_n, recv, recv_n, sig);
}

int rally__shift(struct rally__comm *c, int to, int from, const void *send, size_t send_n,
                 void *recv, size_t recv_n, const struct rally__sig *sig)
{
    if (c->topo.world == 1) {
        if (send_n != recv_n)
            return finish(c, rally__fail(c->err, RALLY_EINVAL, "ring shift of 1: sizes differ"));
        if (send_n)
            memmove(recv, send, send_n);
        return finish(c, RALLY_OK);
    }
    struct rally__run x;
    rally__run_start(&x, c, sig);
    struct rally__chan *next = rally__chan_of(&x, to), *prev = rally__chan_of(&x, from);
    if (next == NULL || prev == NULL)
        return finish(c, rally__fail(x.e, RALLY_ESTATE, "no link to ring neighbour %d or %d",
                                     to, from));
    const unsigned char *s = send;
    unsigned char *d = recv;
    size_t sent = 0, got = 0;
    for (;;) {
        int moved = 0;
        if (rally__send_upto(&x, next, s, &sent, send_n, &moved) < 0 ||
            rally__recv_upto(&x, prev, d, &got, recv_n, &moved) < 0)
            return finish(c, x.e->code);
        int sigs = rally__pump_sigs(&x, &moved);
        if (sigs < 0)
            return finish(c, x.e->code);
        if (sigs && sent == send_n && got == recv_n)
            return finish(c, RALLY_OK);
        if (rally__settle(&x, moved) != RALLY_OK)
            return finish(c, x.e->code);
    }
}
