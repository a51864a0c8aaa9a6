/*
 * coll.c — the collectives' entry points: allreduce (recursive doubling,
 * tree, hierarchy, halving-doubling or ring, by size, N and the hosts' layout
 * alone), tree broadcast, ring allgather, the ring shift; the kinds and
 * signatures every call opens its links with; the comm.
 *
 *   run.h, run.c  a collective's run over its links, shared by all of them
 *   tree.c        tree allreduce
 *   ring.c        the ring stream (allreduce, allgather)
 *   hd.c          recursive halving-doubling allreduce
 *   hier.c        hierarchical allreduce (chains within hosts, a leaders' ring)
 */
#include "coll/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/copy.h"
#include "util/wire.h"

#define SIG_MAGIC 0x4c4c4f43u /* "COLL" */

/* Every kind by the call a user made (or the step of recovery it is). */
static const char *kind_name(int k)
{
    switch (k) {
    case RALLY__C_ALLREDUCE:
        return "allreduce";
    case RALLY__C_ALLREDUCE_CUSTOM:
        return "allreduce_custom";
    case RALLY__C_BROADCAST:
    case RALLY__C_BROADCAST_DATA:
        return "broadcast";
    case RALLY__C_BROADCAST_SIZE:
        return "broadcast_alloc";
    case RALLY__C_ALLGATHER:
        return "allgather";
    case RALLY__C_ALLGATHERV_SIZES:
    case RALLY__C_ALLGATHERV_DATA:
        return "allgatherv";
    case RALLY__C_SHIFT:
        return "rally_checkpoint's local-model ring shift";
    case RALLY__K_AGREE:
        return "a recovery agreement round";
    case RALLY__K_HOLDER:
        return "a recovery's search for a holder";
    case RALLY__K_XFER_HEAD:
    case RALLY__K_XFER_DATA:
        return "a recovery transfer";
    case RALLY__K_ACK:
        return "rally_checkpoint (its acknowledgement)";
    case RALLY__K_FINAL:
        return "rally_finalize";
    case RALLY__K_REPLICATE:
        return "rally_checkpoint (its local models)";
    case RALLY__K_LOCAL_NEED:
        return "a recovery of local models";
    case RALLY__K_TURN:
        return "a checkpoint turn's agreement";
    case RALLY__K_RESHARD:
        return "moving local-model records to new owners";
    case RALLY__K_RETRY:
        return "an allreduce's retry (its final parts)";
    default:
        return NULL;
    }
}

const char *rally__kind_name(int kind)
{
    const char *s = kind_name(kind);
    return s != NULL ? s : "a collective";
}

void rally__sig_str(const struct rally__sig *s, char *out, size_t cap)
{
    switch (s->kind) {
    case RALLY__C_ALLREDUCE:
        snprintf(out, cap, "allreduce(count=%llu, %s, %s)", (unsigned long long)s->count,
                 rally__dtype_name(s->dtype), rally__op_name(s->op));
        break;
    case RALLY__C_ALLREDUCE_CUSTOM:
        snprintf(out, cap, "allreduce_custom(count=%llu, reducer %u, %u-byte elements)",
                 (unsigned long long)s->count, s->op, s->dtype);
        break;
    case RALLY__C_BROADCAST:
    case RALLY__C_BROADCAST_DATA:
        snprintf(out, cap, "broadcast(nbytes=%llu, root=%d)", (unsigned long long)s->count,
                 (int)s->root);
        break;
    case RALLY__C_BROADCAST_SIZE:
        snprintf(out, cap, "broadcast_alloc(root=%d)", (int)s->root);
        break;
    case RALLY__C_ALLGATHER:
        snprintf(out, cap, "allgather(nbytes=%llu)", (unsigned long long)s->count);
        break;
    case RALLY__K_FINAL:
        snprintf(out, cap, "rally_finalize");
        break;
    case RALLY__K_ACK:
    case RALLY__K_REPLICATE:
        snprintf(out, cap, "%s of version %llu", kind_name(s->kind),
                 (unsigned long long)s->count + (s->kind == RALLY__K_REPLICATE));
        break;
    default:
        if (kind_name(s->kind) != NULL)
            snprintf(out, cap, "%s (count %llu)", kind_name(s->kind), (unsigned long long)s->count);
        else
            snprintf(out, cap, "a collective of unknown kind %u (count %llu)", s->kind,
                     (unsigned long long)s->count);
        break;
    }
}

void rally__sig_encode(unsigned char *p, const struct rally__sig *s, uint32_t seq)
{
    rally__put_u32(p, SIG_MAGIC);
    rally__put_u32(p + 4, seq);
    p[8] = s->kind;
    p[9] = s->dtype;
    p[10] = s->op;
    p[11] = 0;
    rally__put_u32(p + 12, (uint32_t)s->root);
    rally__put_u64(p + 16, s->count);
    rally__put_u64(p + 24, s->sidecar);
}

int rally__sig_decode(const unsigned char *p, struct rally__sig *s, uint32_t *seq)
{
    if (rally__get_u32(p) != SIG_MAGIC)
        return -1;
    *s = (struct rally__sig){p[8],
                             p[9],
                             p[10],
                             (int32_t)rally__get_u32(p + 12),
                             rally__get_u64(p + 16),
                             rally__get_u64(p + 24)};
    *seq = rally__get_u32(p + 4);
    return 0;
}

void rally__comm_init(struct rally__comm *c, int rank, int world, struct rally__err *e)
{
    memset(c, 0, sizeof *c);
    rally__topo_build(&c->topo, rank, world);
    c->timeout_ms = 30 * 60 * 1000;
    c->ring_threshold = 256 << 10;
    c->chunk = 256 << 10;
    c->alarm = rally__handle_none();
    c->err = e;
}

void rally__comm_free(struct rally__comm *c)
{
    free(c->scratch);
    c->scratch = NULL;
    c->scratch_nbytes = 0;
}

struct rally__link *rally__comm_link(struct rally__comm *c, int peer)
{
    for (int i = 0; i < c->nlinks; i++)
        if (c->links[i].peer == peer)
            return &c->links[i];
    return NULL;
}

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
        return finish(c, rally__hd_allreduce(c, in, buf, count, rd, sig, NULL, NULL));
    default:
        return finish(c, ring_allreduce(c, in, buf, count, rd, sig, NULL, NULL));
    }
}

/* Whether a kept allreduce by alg runs in place (its final values land in
 * buf as they are made) rather than out of place through scratch. */
static int keeps_in_place(struct rally__comm *c, int alg)
{
    return alg == ALG_RING || (alg == ALG_HD && rally__hd_lands_direct(c));
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
    if (c->topo.world == 1)
        return finish(c, RALLY_OK);
    struct rally__run x;
    rally__run_start(&x, c, sig);
    const struct rally__topo *t = &c->topo;
    unsigned char *b = buf;
    int from = rally__topo_toward(t, root);
    struct rally__chan *in = from >= 0 ? rally__chan_of(&x, from) : NULL;
    struct rally__chan *out[RALLY__MAX_CHILDREN + 1];
    size_t sent[RALLY__MAX_CHILDREN + 1] = {0};
    int nout = 0;
    int tree[RALLY__MAX_CHILDREN + 1] = {t->parent};
    for (int i = 0; i < t->nchildren; i++)
        tree[1 + i] = t->children[i];
    for (int i = 0; i <= t->nchildren; i++)
        if (tree[i] >= 0 && tree[i] != from && (out[nout] = rally__chan_of(&x, tree[i])) != NULL)
            nout++;
    if ((from >= 0 && in == NULL) || nout < (t->parent >= 0) + t->nchildren - (from >= 0))
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
