/*
 * recovery.c — agreement rounds: after an epoch began, the
 * rounds that bring every worker to the same position, serving the workers
 * behind the others (the checkpoint to one in load_checkpoint, cached
 * results to the others) through xfer.c's transfers.
 *
 * Every worker goes through the same rounds in the same order, because each
 * round's decision is the allreduced summary.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "robust/robust.h"
#include "tracker/proto.h"
#include "util/wire.h"
#include "util/xor.h"

#define NONE RALLY__NONE
enum { SERVED = RALLY__SERVED, EXECUTE = RALLY__EXECUTE };

/* A worker's summary: reduced element-wise with min, max, max, min, max,
 * max, min.  S_JOINED: a restarted worker in rally_init asks for its
 * local-model copies (rally__robust_rejoin_locals) before it takes any
 * position.  S_HELD: the oldest version a worker in load_checkpoint holds
 * (0: none; NONE from the others): after a membership change every worker
 * loads again, and those holding the newest version need no transfer.
 * S_RESHARD (max): the local models are records of the old world, to move
 * to their new owners first (reshard.c). */
enum { S_MIN, S_MAX, S_NEED, S_BEST, S_LOCAL, S_JOINED, S_HELD, S_RESHARD, S_N };

static void reduce_summary(void *inout, const void *in, size_t count, void *arg)
{
    for (size_t i = 0; i < count; i++) {
        unsigned char *a = (unsigned char *)inout + i * 8 * S_N;
        const unsigned char *b = (const unsigned char *)in + i * 8 * S_N;
        uint64_t x[S_N], y[S_N];
        for (int k = 0; k < S_N; k++) {
            x[k] = rally__get_u64(a + 8 * k);
            y[k] = rally__get_u64(b + 8 * k);
        }
        x[S_MIN] = y[S_MIN] < x[S_MIN] ? y[S_MIN] : x[S_MIN];
        x[S_MAX] = y[S_MAX] > x[S_MAX] ? y[S_MAX] : x[S_MAX];
        x[S_NEED] = y[S_NEED] > x[S_NEED] ? y[S_NEED] : x[S_NEED];
        x[S_BEST] = y[S_BEST] < x[S_BEST] ? y[S_BEST] : x[S_BEST];
        x[S_LOCAL] = y[S_LOCAL] > x[S_LOCAL] ? y[S_LOCAL] : x[S_LOCAL];
        x[S_JOINED] = y[S_JOINED] > x[S_JOINED] ? y[S_JOINED] : x[S_JOINED];
        x[S_HELD] = y[S_HELD] < x[S_HELD] ? y[S_HELD] : x[S_HELD];
        x[S_RESHARD] = y[S_RESHARD] > x[S_RESHARD] ? y[S_RESHARD] : x[S_RESHARD];
        for (int k = 0; k < S_N; k++)
            rally__put_u64(a + 8 * k, x[k]);
    }
}

static const struct rally__reducer summary_reducer = {8 * S_N, 1, reduce_summary, NULL, NULL};

static int agree(struct rally__robust *rb, uint64_t v[S_N], int kind)
{
    unsigned char b[8 * S_N];
    for (int k = 0; k < S_N; k++)
        rally__put_u64(b + 8 * k, v[k]);
    struct rally__sig sig = {(uint8_t)kind, 0, 0, -1, 1, 0};
    int rc = rally__allreduce(&rb->comm, b, b, 1, &summary_reducer, &sig);
    if (rc != RALLY_OK)
        return rc;
    for (int k = 0; k < S_N; k++)
        v[k] = rally__get_u64(b + 8 * k);
    return RALLY_OK;
}

static int same_sig(const struct rally__sig *a, const struct rally__sig *b)
{
    return a->kind == b->kind && a->dtype == b->dtype && a->op == b->op && a->root == b->root &&
           a->count == b->count;
}

/* S_BEST's encoding: the newest checkpoint version first (min), then the
 * lowest rank holding it. */
static uint64_t best_of(const struct rally__robust *rb)
{
    return rally__robust_version(rb) > 0 && rally__robust_holds(rb)
               ? ((uint64_t)(UINT32_MAX - (uint32_t)rally__robust_version(rb)) << 32) |
                     (uint32_t)rb->rank
               : NONE;
}

static uint64_t best_version(uint64_t best)
{
    return UINT32_MAX - (best >> 32);
}

/* The n ranks r[] into buf at *at: "4, 5, 9", or with and "4, 5 and 9". */
static void name_ranks(char *buf, size_t cap, size_t *at, const int *r, int n, int and)
{
    for (int i = 0; i < n && *at < cap; i++)
        *at += (size_t)snprintf(buf + *at, cap - *at, "%s%d",
                                i == 0 ? "" : and && i == n - 1 ? " and " : ", ", r[i]);
}

/* Member x of an XOR set (ranks m[0..S)) rebuilds its model and parity of
 * version v from the others' (d[j], par[j]: their slot 0 and parity slot,
 * as sent) into mine.  A parity that disagrees with the set is RALLY_EPROTO. */
static int xor_rebuild(struct rally__robust *rb, struct rally__localset *mine, uint64_t v,
                       int index, const int *m, int S, int x, unsigned char **d, uint64_t *dn,
                       unsigned char **par, uint64_t *pn)
{
    uint64_t len[RALLY__XOR_MAX], L = 0, head = 8 * (uint64_t)S;
    const unsigned char *pc[RALLY__XOR_MAX];
    int any = (x + 1) % S;
    for (int j = 0; j < S; j++) {
        len[j] = pn[any] >= head ? rally__get_u64(par[any] + 8 * j) : 0;
        L = len[j] > L ? len[j] : L;
    }
    uint64_t cn = rally__xor_chunk_nbytes(L, S);
    for (int j = 0; j < S; j++) {
        pc[j] = j == x ? NULL : par[j] + head;
        if (j != x && (pn[j] != head + cn || dn[j] != len[j] ||
                       memcmp(par[j], par[any], (size_t)head) != 0))
            return rally__fail(rb->err, RALLY_EPROTO,
                               "rebuilding rank %d's local model of version %llu: rank %d's "
                               "model or parity (%llu and %llu bytes) disagrees with its set's "
                               "lengths",
                               m[x], (unsigned long long)v, m[j], (unsigned long long)dn[j],
                               (unsigned long long)pn[j]);
    }
    int rc = rally__robust_set_fill(rb, mine, 0, NULL, len[x]);
    if (rc == RALLY_OK)
        rc = rally__robust_set_fill(rb, mine, RALLY__XOR_SLOT, NULL, head + cn);
    if (rc != RALLY_OK)
        return rc;
    mine->owner[RALLY__XOR_SLOT] = -1;
    memcpy(mine->data[RALLY__XOR_SLOT], par[any], (size_t)head);
    rally__xor_rebuild(S, x, (const unsigned char *const *)d, dn, pc, cn, mine->data[0], len[x],
                       mine->data[RALLY__XOR_SLOT] + head);
    char who[160];
    size_t at = 0;
    name_ranks(who, sizeof who, &at, m, S, 0);
    fprintf(stderr,
            "rally: rank %d: local model of checkpoint version %llu (%llu bytes) rebuilt from "
            "the parity of set %d (ranks %s)\n",
            rb->rank, (unsigned long long)v, (unsigned long long)len[x], index, who);
    return RALLY_OK;
}

/* rally_local_scheme=xor: each worker holds its own model and a parity
 * chunk of its set (util/xor.h).  A worker that wants version v's (a
 * restarted one) gets every other member's model and parity, each
 * broadcast from that member, and rebuilds its own, bit for bit.  One
 * member lost per set is covered; a set that lost more (or whose survivors
 * hold no parity of v, as after a resume before the next checkpoint) is
 * the loss error naming the set.  Every worker takes part, in set order. */
/* One byte from every worker (this one's mine), gathered into *all: N
 * bytes the caller frees (NULL on failure). */
static int gather_bytes(struct rally__robust *rb, unsigned char mine, unsigned char **all)
{
    int N = rb->world, rc;
    unsigned char *b = calloc((size_t)N, 1);
    size_t *off = malloc(2 * (size_t)N * sizeof *off);
    if (b == NULL || off == NULL) {
        rc = rally__fail(rb->err, RALLY_ENOMEM, "out of memory recovering local models");
    } else {
        for (int i = 0; i < N; i++) {
            off[i] = (size_t)i;
            off[N + i] = 1;
        }
        b[rb->rank] = mine;
        struct rally__sig ns = {RALLY__K_LOCAL_NEED, 0, 0, -1, 1, 0};
        rc = rally__allgather(&rb->comm, b, off, off + N, &ns);
    }
    free(off);
    if (rc != RALLY_OK) {
        free(b);
        b = NULL;
    }
    *all = b;
    return rc;
}

static int recover_xor(struct rally__robust *rb, uint64_t v, int want)
{
    want = want && rally__robust_set_of(rb, v) == NULL;
    int N = rb->world, rc = RALLY_OK;
    struct rally__localset *have = rally__robust_set_of(rb, v);
    unsigned char *st = NULL;
    char lost[512] = "";
    size_t nlost = 0;
    /* bit 0: wants its model; bit 1: holds its model and parity of v */
    unsigned char mine_st = (unsigned char)(want | (!want && have != NULL &&
                                                    have->data[0] != NULL &&
                                                    have->nbytes[RALLY__XOR_SLOT] > 0)
                                                       << 1);
    if ((rc = gather_bytes(rb, mine_st, &st)) != RALLY_OK)
        goto done;
    struct rally__localset *mine = want ? rally__robust_set_spare(rb) : have;
    if (want)
        mine->version = v;
    for (int p = 0; p < N;) {
        int first, S, index, unused, m[RALLY__XOR_MAX], gone[RALLY__XOR_MAX], ngone = 0, x = -1;
        rally__robust_xor_set(rb, rally__robust_at(rb, p), &first, &S, &index, &unused);
        p = first + S;
        for (int j = 0; j < S; j++) {
            m[j] = rally__robust_at(rb, first + j);
            if (st[m[j]] & 1)
                x = j;
            if (st[m[j]] != 2)
                gone[ngone++] = m[j];
        }
        if (x < 0)
            continue;
        if (ngone > 1) {
            if (nlost < sizeof lost)
                nlost += (size_t)snprintf(lost + nlost, sizeof lost - nlost, "%sset %d (ranks ",
                                          nlost ? ", " : "", index);
            name_ranks(lost, sizeof lost, &nlost, m, S, 0);
            if (nlost < sizeof lost)
                nlost += (size_t)snprintf(lost + nlost, sizeof lost - nlost, ") lost ranks ");
            name_ranks(lost, sizeof lost, &nlost, gone, ngone, 1);
            continue;
        }
        if (nlost > 0)
            continue; /* the job fails: no transfer */
        unsigned char *d[RALLY__XOR_MAX] = {0}, *par[RALLY__XOR_MAX] = {0};
        uint64_t dn[RALLY__XOR_MAX] = {0}, pn[RALLY__XOR_MAX] = {0};
        int take = rb->rank == m[x];
        for (int j = 0; j < S && rc == RALLY_OK; j++) {
            if (j == x)
                continue;
            int from = rb->rank == m[j];
            struct rally__sig sd = {RALLY__K_LOCAL_NEED, 1, 0, -1, (uint64_t)m[j], 0};
            rc = rally__robust_xfer(rb, m[j], &sd, from ? have->data[0] : NULL,
                                    from ? have->nbytes[0] : 0, take, &d[j], &dn[j], NULL);
            struct rally__sig sp = {RALLY__K_LOCAL_NEED, 2, 0, -1, (uint64_t)m[j], 0};
            if (rc == RALLY_OK)
                rc = rally__robust_xfer(rb, m[j], &sp, from ? have->data[RALLY__XOR_SLOT] : NULL,
                                        from ? have->nbytes[RALLY__XOR_SLOT] : 0, take, &par[j],
                                        &pn[j], NULL);
        }
        if (rc == RALLY_OK && take)
            rc = xor_rebuild(rb, mine, v, index, m, S, x, d, dn, par, pn);
        for (int j = 0; j < S; j++) {
            rally__robust_unbuf(rb, d[j]);
            rally__robust_unbuf(rb, par[j]);
        }
        if (rc != RALLY_OK) {
            if (rc == RALLY_EPROTO)
                rally__robust_fatal(rb, rc, rb->err->msg);
            goto done;
        }
    }
    if (nlost > 0) {
        rc = rally__robust_lost(rb, "cannot recover: %s; rally_local_scheme=xor covers one per set",
                                lost);
        goto done;
    }
    if (want)
        mine->valid = 1;
done:
    free(st);
    return rc;
}

/* Every rank's local model of version v goes where it belongs: to its own
 * rank and its k successors on the placement ring, from the lowest-ranked worker that still
 * holds it, for the workers that want it and do not hold that version's
 * set yet (a restarted worker in rally_init or load_checkpoint, or one
 * served a replication its predecessor did).  Every worker takes part. */
static int recover_locals(struct rally__robust *rb, uint64_t v, int want)
{
    if (rb->place.local_xor)
        return recover_xor(rb, v, want);
    want = want && rally__robust_set_of(rb, v) == NULL;
    int N = rb->world, k = rb->k, rc;
    unsigned char *need = NULL;
    char lost[256] = "";
    size_t nlost = 0;
    /* bit j: wants slot j */
    if ((rc = gather_bytes(rb, want ? (unsigned char)((1u << (k + 1)) - 1) : 0, &need)) !=
        RALLY_OK)
        goto done;
    struct rally__localset *mine = want ? rally__robust_set_spare(rb) : rally__robust_set_of(rb, v);
    if (want)
        mine->version = v;
    for (int q = 0; q < N; q++) {
        int needed = 0;
        for (int j = 0; j <= k; j++)
            needed |= need[rally__robust_at(rb, rally__robust_place(rb, q) + j)] >> j & 1;
        if (!needed)
            continue;
        /* where this worker holds q's model, by the owners its set names:
         * a set built before a rank came back on another host follows the
         * placement ring of then, not this epoch's */
        int j_me = rally__robust_slot_of(rb, rb->rank, q), js = -1;
        for (int j = 0; !want && mine != NULL && j <= k; j++)
            if (mine->data[j] != NULL && mine->owner[j] == q)
                js = j;
        int hold = js >= 0;
        uint64_t h[S_N] = {hold ? (uint64_t)rb->rank : NONE, 0, 0, NONE, 0, 0, NONE};
        if ((rc = agree(rb, h, RALLY__K_HOLDER)) != RALLY_OK)
            goto done;
        if (h[S_MIN] == NONE) {
            if (nlost < sizeof lost - 12)
                nlost += (size_t)snprintf(lost + nlost, sizeof lost - nlost, "%s%d",
                                          nlost ? ", " : "", q);
            continue;
        }
        struct rally__sig sig = {RALLY__K_LOCAL_NEED, 0, 0, -1, (uint64_t)q, 0};
        unsigned char *res = NULL;
        uint64_t n = 0, cap = 0;
        int take = want && j_me <= k;
        rc = rally__robust_xfer(rb, (int)h[S_MIN], &sig, hold ? mine->data[js] : NULL,
                                hold ? mine->nbytes[js] : 0, take, &res, &n, &cap);
        if (rc != RALLY_OK)
            goto done;
        if (take) { /* received into a store buffer: it becomes the slot's */
            rally__robust_sgive(rb, mine->data[j_me], mine->cap[j_me]);
            mine->data[j_me] = res;
            mine->nbytes[j_me] = n;
            mine->cap[j_me] = cap;
            mine->owner[j_me] = q;
        }
    }
    if (nlost > 0) {
        rc = rally__robust_lost(rb,
                                "cannot recover: the local models of ranks %s are lost (each "
                                "lived on %d workers, all of which died; rally_local_replica=%d)",
                                lost, k + 1, k);
        goto done;
    }
    if (want)
        mine->valid = 1;
done:
    free(need);
    return rc;
}

/* The local models of the newest checkpoint's version, which every worker
 * holds (S_BEST), go to the workers that asked in rally_init (want), as in
 * load_checkpoint: a restarted worker holds its predecessors' copies again
 * before its program reads a byte of its input, so it takes k + 1 deaths
 * within one recovery, not within one checkpoint interval, to lose one.
 * Not when they are records of another world (S_RESHARD, a worker taken in
 * or a change not loaded yet): their slots follow the old ring, and the
 * load moves every record to its new owner (reshard.c). */
static int joined_locals(struct rally__robust *rb, const uint64_t s[S_N], int want)
{
    if (!s[S_LOCAL] || s[S_BEST] == NONE || s[S_RESHARD])
        return RALLY_OK;
    return recover_locals(rb, best_version(s[S_BEST]), want);
}

/* Whether rank r kept one of the pieces no survivor keeps (hp[p] NONE):
 * its pieces are those from its place on, copies of them. */
static int kept_lost(const struct rally__robust *rb, const uint64_t *hp, int copies, int r)
{
    int kept = 0, w = rb->world, i = rally__robust_place(rb, r);
    for (int j = 0; j < copies; j++)
        kept |= hp[(i + j) % w] == NONE;
    return kept;
}

/* "pieces 3, 4 of 8, kept by ranks 2, 3, 4" into buf: the pieces no
 * survivor keeps and the workers that kept them. */
static void lost_pieces(const struct rally__robust *rb, const uint64_t *hp, int copies, char *buf,
                        size_t cap)
{
    int nlost = 0, nkeep = 0, w = rb->world;
    for (int r = 0; r < w; r++) {
        int kept = kept_lost(rb, hp, copies, r);
        nlost += hp[r] == NONE;
        nkeep += kept;
    }
    size_t n = (size_t)snprintf(buf, cap, "piece%s", nlost > 1 ? "s" : "");
    for (int p = 0, i = 0; p < w && n < cap; p++)
        if (hp[p] == NONE)
            n += (size_t)snprintf(buf + n, cap - n, "%s %d", i++ ? "," : "", p);
    if (n < cap)
        n += (size_t)snprintf(buf + n, cap - n, " of %d, kept by rank%s", w, nkeep > 1 ? "s" : "");
    for (int r = 0, i = 0; r < w && n < cap; r++)
        if (kept_lost(rb, hp, copies, r))
            n += (size_t)snprintf(buf + n, cap - n, "%s %d", i++ ? "," : "", r);
}

/* rally_result_scheme=xor: the sets that lost a piece (hp[p] NONE), in
 * pt's sets.  One lost in a set is rebuilt from the others' pieces (every
 * worker has them in buf by now) and parity chunks, each broadcast from its
 * keeper; the worker that wants the result rebuilds it there, bit for bit,
 * and says so.  A set that lost more is the loss error naming it (before
 * any transfer: every worker sees the same hp).  Every worker takes part. */
static int rebuild_pieces(struct rally__robust *rb, uint64_t at, const struct rally__part *pt,
                          const struct rally__entry *have, const uint64_t *hp, int want,
                          unsigned char *buf, int check)
{
    int w = (int)pt->world, rc = RALLY_OK;
    char lost[512] = "";
    size_t nlost = 0;
    for (int p = 0; p < w && rc == RALLY_OK;) {
        int first, S, x, m[RALLY__XOR_MAX], gone[RALLY__XOR_MAX], ngone = 0, lx = -1;
        uint64_t cn = rally__part_parity(pt, p, &first, &S, &x), len, where;
        p = first + S;
        for (int j = 0; j < S; j++) {
            m[j] = rally__robust_at(rb, first + j);
            if (hp[first + j] == NONE) {
                gone[ngone++] = m[j];
                lx = j;
            }
        }
        if (ngone > 1 && check) {
            int index, unused;
            rally__xor_set(w, (int)pt->xor_g, first, &unused, &unused, &index);
            if (nlost < sizeof lost)
                nlost += (size_t)snprintf(lost + nlost, sizeof lost - nlost, "%sset %d (ranks ",
                                          nlost ? ", " : "", index);
            name_ranks(lost, sizeof lost, &nlost, m, S, 0);
            if (nlost < sizeof lost)
                nlost += (size_t)snprintf(lost + nlost, sizeof lost - nlost, ") lost ranks ");
            name_ranks(lost, sizeof lost, &nlost, gone, ngone, 1);
        }
        if (check || ngone != 1)
            continue;
        /* the others' parity chunks, each from its keeper (after its piece) */
        unsigned char *par = rally__robust_buf(rb, (uint64_t)S * cn);
        if (par == NULL)
            return rally__fail(rb->err, RALLY_ENOMEM, "out of memory rebuilding a result's piece");
        const unsigned char *d[RALLY__XOR_MAX], *pc[RALLY__XOR_MAX];
        uint64_t dn[RALLY__XOR_MAX];
        for (int j = 0; j < S && rc == RALLY_OK; j++) {
            uint64_t off = rally__part_piece(pt, first + j, &dn[j]);
            d[j] = buf + off;
            pc[j] = par + (uint64_t)j * cn;
            if (j == lx)
                continue;
            unsigned char *from = par + (uint64_t)j * cn;
            if (rb->rank == m[j]) {
                rally__part_holds(&have->part, first + j, first + j, &where);
                from = have->data + where + dn[j];
            }
            struct rally__sig ds = {RALLY__K_XFER_DATA, 1, 0, m[j], cn, 0};
            rc = rally__broadcast(&rb->comm, from, (size_t)cn, m[j], &ds);
            if (rc == RALLY_OK && rb->rank == m[j] && want)
                memcpy(par + (uint64_t)j * cn, from, (size_t)cn);
        }
        if (rc == RALLY_OK && want) {
            uint64_t off = rally__part_piece(pt, first + lx, &len);
            rally__xor_rebuild(S, lx, d, dn, pc, cn, buf + off, len, par + (uint64_t)lx * cn);
            char who[160], where_s[96];
            size_t n = 0;
            name_ranks(who, sizeof who, &n, m, S, 0);
            rally__position_str(at, where_s, sizeof where_s);
            int index, unused;
            rally__xor_set(w, (int)pt->xor_g, first, &unused, &unused, &index);
            fprintf(stderr,
                    "rally: rank %d: piece %d of %d of the result of %s (%llu bytes) rebuilt from "
                    "the parity of set %d (ranks %s)\n",
                    rb->rank, first + lx, w, where_s, (unsigned long long)len, index, who);
        }
        rally__robust_unbuf(rb, par);
    }
    if (nlost > 0) {
        char where_s[96];
        rally__position_str(at, where_s, sizeof where_s);
        rc = rally__robust_lost(rb,
                                "cannot recover: the result of %s is lost in part: %s; "
                                "rally_result_scheme=xor covers one per set",
                                where_s, lost);
    }
    return rc;
}

/* The result at position at, from its holders: root (the lowest-ranked
 * worker holding any of it) sends the head; a whole result comes from it
 * alone, one kept in pieces piece by piece, each from the lowest-ranked
 * worker that still keeps it (docs/recovery.md, "Results kept in part"),
 * and with XOR parity a piece nobody keeps is rebuilt from its set
 * (rebuild_pieces).  Every worker takes part; *res is the result on the
 * one that wants it. */
static int serve(struct rally__robust *rb, uint64_t at, int root, const struct rally__entry *have,
                 struct rally__sig *sig, int want, unsigned char **res, uint64_t *res_nbytes)
{
    uint64_t n = have ? have->part.whole : 0;
    uint32_t copies = have ? have->part.copies : 0, xor_g = have ? have->part.xor_g : 0;
    int rc = rally__robust_xfer_head(rb, root, sig, &n, &copies, &xor_g);
    if (rc != RALLY_OK)
        return rc;
    int w = rb->world, whole = have != NULL && have->part.copies == 0;
    if (copies == 0) /* the root holds it whole */
        return rally__robust_xfer_body(rb, root, rb->rank == root ? have->data : NULL, n, want,
                                       res, res_nbytes, NULL, NULL);
    struct rally__part pt = {n, sig->count, (uint32_t)w, copies, xor_g};
    if (have != NULL && !whole && have->part.world != (uint32_t)w)
        have = NULL; /* cannot be: a change of the workers drops the cache */
    uint64_t *hp = malloc((size_t)w * sizeof *hp), off, len, where;
    int me = rally__robust_place(rb, rb->rank);
    unsigned char *buf = NULL;
    if (hp == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory recovering a result");
    /* a worker still in this very call when the others were lost (it wants
     * the result) may hold some of its pieces final in its own buffer: it
     * serves those no finisher keeps, and every piece it sends it keeps */
    const unsigned char *part = want && rb->partial.buf != NULL && rb->partial.nbytes == n
                                    ? rb->partial.buf
                                    : NULL;
    for (int p = 0; p < w; p++) {
        int holds = have != NULL && (whole || rally__part_holds(&have->part, me, p, &where));
        if (!holds && part != NULL) {
            off = rally__part_piece(&pt, p, &len);
            holds = rb->partial.final(rb->partial.arg, off, len);
        }
        hp[p] = holds ? (uint64_t)rb->rank : NONE;
    }
    struct rally__reducer mn;
    rally__reducer_builtin(&mn, RALLY_UINT64, RALLY_MIN);
    struct rally__sig hs = {RALLY__K_HOLDER, 0, 0, -1, (uint64_t)w, 0};
    if ((rc = rally__allreduce(&rb->comm, hp, hp, (size_t)w, &mn, &hs)) != RALLY_OK)
        goto done;
    if (xor_g != 0 && (rc = rebuild_pieces(rb, at, &pt, have, hp, want, NULL, 1)) != RALLY_OK)
        goto done;
    for (int p = 0; p < w && xor_g == 0; p++)
        if (hp[p] == NONE) {
            char where_s[96], which[256];
            rally__position_str(at, where_s, sizeof where_s);
            lost_pieces(rb, hp, (int)copies, which, sizeof which);
            rc = rally__robust_lost(rb,
                                    "cannot recover: the result of %s is lost in part (%s, all "
                                    "of which died; rally_result_copies=%u)",
                                    where_s, which, copies);
            goto done;
        }
    if ((buf = rally__robust_buf(rb, n)) == NULL) {
        rc = rally__fail(rb->err, RALLY_ENOMEM, "out of memory for a %llu-byte recovery transfer",
                         (unsigned long long)n);
        goto done;
    }
    for (int p = 0; p < w;) { /* a run of pieces from one holder, one broadcast */
        int q = p + 1, from = (int)hp[p];
        if (hp[p] == NONE) { /* rebuilt below */
            p = q;
            continue;
        }
        while (q < w && hp[q] == hp[p])
            q++;
        uint64_t end = rally__part_piece(&pt, q - 1, &len) + len;
        off = rally__part_piece(&pt, p, &len);
        unsigned char *at_p = buf + off;
        if (rb->rank == from && have == NULL) /* final in its own buffer */
            at_p = (unsigned char *)part + off;
        else if (rb->rank == from) /* its pieces, packed in order, or all of it */
            at_p = whole ? have->data + off
                         : (rally__part_holds(&have->part, rally__robust_place(rb, from), p, &where),
                            have->data + where);
        struct rally__sig ds = {RALLY__K_XFER_DATA, 0, 0, from, end - off, 0};
        if ((rc = rally__broadcast(&rb->comm, at_p, (size_t)(end - off), from, &ds)) != RALLY_OK)
            goto done;
        if (rb->rank == from && have == NULL)
            memcpy(buf + off, at_p, (size_t)(end - off));
        p = q;
    }
    if (xor_g != 0 && (rc = rebuild_pieces(rb, at, &pt, have, hp, want, buf, 0)) != RALLY_OK)
        goto done;
    if (want) {
        *res = buf;
        *res_nbytes = n;
        buf = NULL;
    }
done:
    rally__robust_unbuf(rb, buf);
    free(hp);
    return rc;
}

int rally__robust_rejoin_locals(struct rally__robust *rb)
{
    uint64_t s[S_N] = {NONE, 0, 0, NONE, 0, 1, NONE, (uint64_t)rally__robust_records_pending(rb)};
    int rc = agree(rb, s, RALLY__K_AGREE);
    return rc != RALLY_OK ? rc : joined_locals(rb, s, 1);
}

int rally__robust_recover(struct rally__robust *rb, uint64_t key, const struct rally__sig *mine,
                          unsigned char **res, uint64_t *res_nbytes)
{
    for (;;) {
        int loading = key == RALLY__KEY_LOAD;
        uint64_t mine_v = rally__robust_version(rb) > 0 && rally__robust_holds(rb)
                              ? rally__robust_version(rb)
                              : 0;
        uint64_t s[S_N] = {key,
                           key,
                           (uint64_t)loading,
                           best_of(rb),
                           (uint64_t)rally__robust_has_local(rb),
                           0,
                           loading ? mine_v : NONE,
                           (uint64_t)rally__robust_records_pending(rb)};
        int rc = agree(rb, s, RALLY__K_AGREE);
        if (rc != RALLY_OK)
            return rc;
        if (s[S_JOINED]) { /* a round of its own for a worker in rally_init */
            if ((rc = joined_locals(rb, s, 0)) != RALLY_OK)
                return rc;
            continue;
        }
        if (s[S_MIN] == s[S_MAX] && !s[S_NEED]) {
            rally__robust_in_step(rb);
            return EXECUTE;
        }
        if (key > s[S_MIN])
            rally__robust_mock(rb, rally__robust_version(rb), rally__robust_user_seq(rb),
                               RALLY__MOCK_RECOVERY);
        if (s[S_MIN] == RALLY__KEY_LOAD && s[S_NEED]) {
            /* workers in load_checkpoint get the newest checkpoint, if any */
            int want = key == RALLY__KEY_LOAD;
            if (s[S_BEST] == NONE) {
                if (want) {
                    *res = NULL;
                    *res_nbytes = 0;
                    return SERVED;
                }
                continue;
            }
            int root = (int)(s[S_BEST] & 0xffffffffu);
            uint64_t version = best_version(s[S_BEST]);
            if (s[S_RESHARD] && (rc = rally__robust_reshard(rb, version)) != RALLY_OK)
                return rc;
            if (s[S_HELD] == version && (!s[S_LOCAL] || s[S_RESHARD])) {
                /* every worker loading holds it already (a membership change) */
                if (!want)
                    continue;
                *res = (unsigned char *)rally__robust_global(rb, res_nbytes);
                return SERVED;
            }
            struct rally__sig sig = {RALLY__K_ACK, 0, 0, -1, version, 0};
            if (want)
                rally__robust_mock(rb, 0, 0, RALLY__MOCK_LOAD);
            const unsigned char *g = NULL;
            uint64_t gn = 0;
            if (rb->rank == root && rally__robust_lend(rb, version, -1, &g, &gn) != RALLY_OK) {
                rally__fail_over(rb->err, RALLY_EINVAL,
                                 "the lazy checkpoint's serialize callback failed while a "
                                 "recovering worker needed the model");
                rally__robust_fatal(rb, RALLY_EINVAL, rb->err->msg);
                return RALLY_EINVAL;
            }
            unsigned char *got = NULL;
            uint64_t got_n = 0, cap = 0;
            rc = rally__robust_xfer_model(rb, root, version, &sig, g, gn, want, &got, &got_n, &cap);
            if (rb->rank == root)
                rally__robust_release(rb, g);
            if (rc == RALLY_OK && s[S_LOCAL]) /* unless taken in rally_init */
                rc = recover_locals(rb, version, want);
            if (rc != RALLY_OK) {
                if (want)
                    rally__robust_sgive(rb, got, cap);
                return rc;
            }
            if (want && rb->rank == root) { /* loading too (a membership change): it holds it */
                *res = (unsigned char *)rally__robust_global(rb, res_nbytes);
                return SERVED;
            }
            if (want) { /* the store keeps the received buffer; the caller copies it */
                rally__robust_store_adopt(rb, got, got_n, cap);
                rally__robust_pos_at(rb, sig.count);
                rally__robust_set_has_local(rb, (int)s[S_LOCAL]);
                uint64_t held = 0;
                *res = (unsigned char *)rally__robust_global(rb, &held);
                *res_nbytes = got_n;
                return SERVED;
            }
            continue;
        }
        /* the workers furthest behind get that result from the lowest-ranked holder */
        uint64_t at = s[S_MIN];
        const struct rally__entry *have = rally__robust_cache_find(rb, at);
        uint64_t h[S_N] = {have ? (uint64_t)rb->rank : NONE, 0, 0, NONE, 0, 0, NONE};
        if ((rc = agree(rb, h, RALLY__K_HOLDER)) != RALLY_OK)
            return rc;
        if (h[S_MIN] == NONE) {
            char where[96];
            rally__position_str(at, where, sizeof where);
            return rally__robust_lost(rb,
                                      "cannot recover: the result of %s is lost (every worker "
                                      "that had it died)",
                                      where);
        }
        struct rally__sig sig = have ? have->sig : (struct rally__sig){0};
        int want = key == at;
        rc = serve(rb, at, (int)h[S_MIN], have, &sig, want, res, res_nbytes);
        if (rc != RALLY_OK)
            return rc;
        /* a replication served to a restarted worker, which never did its
         * shifts (its predecessor did): the set they built comes along; the
         * kind is in the transfer's header, which every worker read */
        if (sig.kind == RALLY__K_REPLICATE &&
            (rc = recover_locals(rb, sig.count + 1, want)) != RALLY_OK) {
            if (want)
                rally__robust_unbuf(rb, *res);
            return rc;
        }
        if (!want)
            continue;
        if (!same_sig(&sig, mine)) {
            char a[160], b[160], where[96];
            rally__sig_str(mine, a, sizeof a);
            rally__sig_str(&sig, b, sizeof b);
            rally__position_str(key, where, sizeof where);
            rally__robust_unbuf(rb, *res);
            rally__fail(rb->err, RALLY_EMISMATCH,
                        "rank %d diverged after its restart: at %s it called %s, but the job "
                        "called %s there before; a restarted rank makes again the calls that "
                        "followed its newest checkpoint, so a collective after rally_checkpoint "
                        "(a loss allreduced after it, say) breaks recovery: make the checkpoint "
                        "the step's last collective (docs/recovery.md)",
                        rb->rank, where, a, b);
            rally__robust_fatal(rb, RALLY_EMISMATCH, rb->err->msg);
            return RALLY_EMISMATCH;
        }
        return SERVED;
    }
}
