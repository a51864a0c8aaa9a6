/*
 * reshard.c — local models as records (rally_set_local_records) after a
 * change of the workers: every record of checkpoint version v goes to the
 * rank that owns its id in the new world (docs/recovery.md, "Elastic
 * jobs").
 *
 * A record is an 8-byte id, a 4-byte length and that many bytes.  Every
 * worker still holds the local-model set of v it had in the old world (its
 * own records and copies of its k ring predecessors').  One round, inside
 * load_checkpoint, where every worker of the new world stands:
 *
 *   1. each worker says which old rank it was and which slots it holds; the
 *      records of every old rank then come from one supplier, itself if it
 *      survived, else the lowest-ranked worker that holds a copy;
 *   2. every supplier's records go to every worker (an allgatherv), and
 *      each keeps those its new rank owns, in id order;
 *   3. the counts and a sum of the ids' hashes, of what was sent and what
 *      was kept, must agree: every record arrived exactly once;
 *   4. the new set's replicas go k hops along the new ring, and the set
 *      replaces the old one.
 *
 * Everyone receives every record once: the move costs the local models'
 * whole size on each worker, a price paid only when the workers change.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "robust/robust.h"
#include "util/records.h"
#include "util/wire.h"

/* u64 words per worker: old rank (NONE), old world, and the old rank whose
 * model each slot holds (NONE: none) */
#define DESC (2 + RALLY__MAX_REPLICA + 1)
/* An id's hash (XXH3, as every digest here): the hashes are summed, so a
 * lost and a doubled record cannot cancel out as they could in a plain sum
 * of ids. */
static uint64_t id_hash(uint64_t id)
{
    unsigned char b[8];
    rally__put_u64(b, id);
    return rally_digest64(b, sizeof b);
}

/* Walks n bytes of records: their count and hash sum, or RALLY_EINVAL
 * when the bytes at some offset are not a record (named in e). */
static int walk(struct rally__robust *rb, const unsigned char *p, uint64_t n, int old_rank,
                uint64_t *count, uint64_t *sum)
{
    struct rally__rec r;
    uint64_t at = 0;
    int k;
    while ((k = rally__rec_next(p, n, &at, &r)) == 1) {
        (*count)++;
        *sum += id_hash(r.id);
    }
    if (k < 0)
        return rally__fail(rb->err, RALLY_EINVAL,
                           "the local model of rank %d is not records: the %llu bytes at offset "
                           "%llu are no id, length and that many bytes",
                           old_rank, (unsigned long long)(n - at), (unsigned long long)at);
    return RALLY_OK;
}

/* Every worker's description, gathered: [old rank, old world, whose model
 * each slot holds].  The set says whose (its owners, of the old world's
 * placement ring): the new world's ring places ranks elsewhere. */
static int describe(struct rally__robust *rb, uint64_t v, uint64_t *all)
{
    int N = rb->world;
    const struct rally__localset *ls = rb->rec.set_world > 0 ? rally__robust_set_of(rb, v) : NULL;
    uint64_t mine[DESC] = {ls ? (uint64_t)rb->rec.set_rank : RALLY__NONE,
                           (uint64_t)rb->rec.set_world};
    for (int j = 0; j <= RALLY__MAX_REPLICA; j++)
        mine[2 + j] = ls != NULL && ls->data[j] != NULL && ls->owner[j] >= 0
                          ? (uint64_t)ls->owner[j]
                          : RALLY__NONE;
    unsigned char *b = calloc((size_t)N, 8 * DESC);
    size_t *off = malloc(2 * (size_t)N * sizeof *off);
    if (b == NULL || off == NULL) {
        free(b);
        free(off);
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory moving local models");
    }
    for (int r = 0; r < N; r++) {
        off[r] = (size_t)r * 8 * DESC;
        off[N + r] = 8 * DESC;
    }
    for (int i = 0; i < DESC; i++)
        rally__put_u64(b + off[rb->rank] + 8 * (size_t)i, mine[i]);
    struct rally__sig sig = {RALLY__K_RESHARD, 0, 0, -1, 0, 0};
    int rc = rally__allgather(&rb->comm, b, off, off + N, &sig);
    for (int r = 0; rc == RALLY_OK && r < N; r++)
        for (int i = 0; i < DESC; i++)
            all[(size_t)r * DESC + i] = rally__get_u64(b + off[r] + 8 * (size_t)i);
    free(b);
    free(off);
    return rc;
}

/* supplier[d] for each old rank d: the worker whose bytes of d travel, and
 * the slot they are in (RALLY_EPEER naming the ranks whose records are
 * lost). */
static int suppliers(struct rally__robust *rb, const uint64_t *all, int W, int *who, int *slot)
{
    int N = rb->world;
    char lost[256] = "";
    size_t nlost = 0;
    for (int d = 0; d < W; d++) {
        who[d] = -1;
        for (int r = 0; r < N && who[d] < 0; r++) {
            const uint64_t *x = all + (size_t)r * DESC;
            if (x[0] == RALLY__NONE || x[1] != (uint64_t)W)
                continue;
            for (int j = 0; j <= RALLY__MAX_REPLICA && who[d] < 0; j++)
                if (x[2 + j] == (uint64_t)d) {
                    who[d] = r;
                    slot[d] = j;
                }
        }
        /* its own holder first: a survivor supplies its own records */
        for (int r = 0; r < N; r++)
            if (all[(size_t)r * DESC] == (uint64_t)d && all[(size_t)r * DESC + 2] == (uint64_t)d) {
                who[d] = r;
                slot[d] = 0;
            }
        if (who[d] < 0 && nlost < sizeof lost - 12)
            nlost +=
                (size_t)snprintf(lost + nlost, sizeof lost - nlost, "%s%d", nlost ? ", " : "", d);
    }
    if (nlost == 0)
        return RALLY_OK;
    return rally__robust_lost(rb,
                              "cannot go on with %d workers: the local-model records of old "
                              "rank%s %s are lost (every copy died; rally_local_replica=%d)",
                              N, strchr(lost, ',') ? "s" : "", lost,
                              (int)rb->cfg->local_replica);
}

/* One move's state: what every worker said, who supplies each old rank,
 * the bytes this worker supplies, everyone's gathered, the records this
 * rank keeps, and the counts and hash sums of those sent and kept. */
struct move {
    int N, W;        /* the new world, the old */
    uint64_t *all;   /* N descriptions (describe) */
    int *who, *slot; /* per old rank: its supplier and the slot (suppliers) */
    unsigned char *mine, *gath;
    uint64_t mine_n, total;
    size_t *off;     /* the allgathers' offsets and sizes, N each */
    struct rally__recs keep;
    uint64_t sent[2], kept[2];
};

static int no_memory(struct rally__robust *rb)
{
    return rally__fail(rb->err, RALLY_ENOMEM, "out of memory moving local models");
}

/* Step 1: what every worker holds, and who supplies each old rank. */
static int plan(struct rally__robust *rb, uint64_t v, struct move *mv)
{
    int rc;
    if ((mv->all = calloc((size_t)mv->N * DESC, sizeof *mv->all)) == NULL)
        return no_memory(rb);
    if ((rc = describe(rb, v, mv->all)) != RALLY_OK)
        return rc;
    for (int r = 0; r < mv->N; r++)
        if (mv->all[(size_t)r * DESC] != RALLY__NONE && (int)mv->all[(size_t)r * DESC + 1] > mv->W)
            mv->W = (int)mv->all[(size_t)r * DESC + 1];
    mv->who = calloc((size_t)mv->W + 1, sizeof *mv->who);
    mv->slot = calloc((size_t)mv->W + 1, sizeof *mv->slot);
    mv->off = calloc(2 * (size_t)mv->N, sizeof *mv->off);
    if (mv->who == NULL || mv->slot == NULL || mv->off == NULL)
        return no_memory(rb);
    if (rb->rec.owner == NULL) {
        rc = rally__fail(rb->err, RALLY_ECONFIG,
                         "cannot move local-model records: this worker has no "
                         "rally_set_local_records (every rank must call it)");
        rally__robust_fatal(rb, RALLY_ECONFIG, rb->err->msg);
        return rc;
    }
    return suppliers(rb, mv->all, mv->W, mv->who, mv->slot);
}

/* Step 1, this worker's part: the records it supplies, one after another,
 * walked for their count and hash sum. */
static int pack_mine(struct rally__robust *rb, uint64_t v, struct move *mv)
{
    const struct rally__localset *old = rally__robust_set_of(rb, v);
    uint64_t n_all = 0;
    for (int d = 0; d < mv->W; d++)
        if (mv->who[d] == rb->rank)
            n_all += old->nbytes[mv->slot[d]];
    if ((mv->mine = malloc(n_all ? (size_t)n_all : 1)) == NULL)
        return no_memory(rb);
    for (int d = 0; d < mv->W; d++) {
        if (mv->who[d] != rb->rank)
            continue;
        uint64_t n = old->nbytes[mv->slot[d]];
        int rc = walk(rb, old->data[mv->slot[d]], n, d, &mv->sent[0], &mv->sent[1]);
        if (rc != RALLY_OK) {
            rally__robust_fatal(rb, rc, rb->err->msg);
            return rc;
        }
        if (n)
            memcpy(mv->mine + mv->mine_n, old->data[mv->slot[d]], (size_t)n);
        mv->mine_n += n;
    }
    return RALLY_OK;
}

/* Step 2: everyone's to everyone, the sizes, then the bytes (mv->gath). */
static int exchange(struct rally__robust *rb, struct move *mv)
{
    int N = mv->N;
    size_t *off = mv->off;
    unsigned char *sz = calloc((size_t)N, 8);
    if (sz == NULL)
        return no_memory(rb);
    for (int r = 0; r < N; r++) {
        off[r] = (size_t)r * 8;
        off[N + r] = 8;
    }
    rally__put_u64(sz + (size_t)rb->rank * 8, mv->mine_n);
    struct rally__sig s_sz = {RALLY__K_RESHARD, 2, 0, -1, (uint64_t)N, 0};
    int rc = rally__allgather(&rb->comm, sz, off, off + N, &s_sz);
    for (int r = 0; rc == RALLY_OK && r < N; r++) {
        off[N + r] = (size_t)rally__get_u64(sz + (size_t)r * 8);
        off[r] = (size_t)mv->total;
        mv->total += off[N + r];
    }
    free(sz);
    if (rc != RALLY_OK)
        return rc;
    if ((mv->gath = malloc(mv->total ? (size_t)mv->total : 1)) == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory for %llu bytes of local models",
                           (unsigned long long)mv->total);
    if (mv->mine_n)
        memcpy(mv->gath + off[rb->rank], mv->mine, (size_t)mv->mine_n);
    struct rally__sig s_data = {RALLY__K_RESHARD, 3, 0, -1, mv->total, 0};
    return rally__allgather(&rb->comm, mv->gath, off, off + N, &s_data);
}

/* Step 2, this rank's part: the records its new rank owns, in id order
 * (every supplier walked its bytes), each id once. */
static int keep_own(struct rally__robust *rb, struct move *mv)
{
    struct rally__rec rec;
    uint64_t at = 0;
    int rc;
    while (rally__rec_next(mv->gath, mv->total, &at, &rec) == 1) {
        int owner = rb->rec.owner(rec.id, mv->N, rb->rec.arg);
        if (owner < 0 || owner >= mv->N) {
            rc = rally__fail(rb->err, RALLY_EINVAL,
                             "rally_set_local_records' owner gave rank %d for record %016llx "
                             "in a job of %d",
                             owner, (unsigned long long)rec.id, mv->N);
            rally__robust_fatal(rb, rc, rb->err->msg);
            return rc;
        }
        if (owner != rb->rank)
            continue;
        if (rally__recs_push(&mv->keep, &rec) != 0)
            return no_memory(rb);
        mv->kept[0]++;
        mv->kept[1] += id_hash(rec.id);
    }
    rally__recs_sort(&mv->keep);
    for (size_t i = 1; i < mv->keep.n; i++)
        if (mv->keep.v[i].id == mv->keep.v[i - 1].id) {
            rc = rally__fail(rb->err, RALLY_EINVAL,
                             "local-model record %016llx is on more than one rank: every id "
                             "must be on exactly one",
                             (unsigned long long)mv->keep.v[i].id);
            rally__robust_fatal(rb, rc, rb->err->msg);
            return rc;
        }
    return RALLY_OK;
}

/* Step 3: every record arrived exactly once (the job's counts and hash sums
 * of what was sent and what was kept agree). */
static int check_once(struct rally__robust *rb, const struct move *mv)
{
    uint64_t w[4] = {mv->sent[0], mv->sent[1], mv->kept[0], mv->kept[1]};
    unsigned char wb[32];
    for (int i = 0; i < 4; i++)
        rally__put_u64(wb + 8 * i, w[i]);
    struct rally__reducer rd;
    rally__reducer_builtin(&rd, RALLY_UINT64, RALLY_SUM);
    struct rally__sig s_sum = {RALLY__K_RESHARD, 4, 0, -1, 4, 0};
    int rc = rally__allreduce(&rb->comm, wb, wb, 4, &rd, &s_sum);
    if (rc != RALLY_OK)
        return rc;
    if (rally__get_u64(wb) == rally__get_u64(wb + 16) &&
        rally__get_u64(wb + 8) == rally__get_u64(wb + 24))
        return RALLY_OK;
    rc = rally__fail(rb->err, RALLY_EPEER,
                     "moving local-model records: %llu were sent and %llu kept (their id "
                     "digests %016llx and %016llx): a record was lost or kept twice",
                     (unsigned long long)rally__get_u64(wb),
                     (unsigned long long)rally__get_u64(wb + 16),
                     (unsigned long long)rally__get_u64(wb + 8),
                     (unsigned long long)rally__get_u64(wb + 24));
    rally__robust_fatal(rb, rc, rb->err->msg);
    return rc;
}

/* Step 4: the new set, its replicas, and it replaces the old one. */
static int install(struct rally__robust *rb, uint64_t v, const struct move *mv)
{
    struct rally__localset *ls = rally__robust_set_spare(rb);
    uint64_t n = 0;
    for (size_t i = 0; i < mv->keep.n; i++)
        n += mv->keep.v[i].n;
    int rc = rally__robust_set_fill(rb, ls, 0, NULL, n);
    if (rc != RALLY_OK)
        return rc;
    n = 0;
    for (size_t i = 0; i < mv->keep.n; i++) {
        memcpy(ls->data[0] + n, mv->keep.v[i].p, (size_t)mv->keep.v[i].n);
        n += mv->keep.v[i].n;
    }
    if ((rc = rally__robust_set_spread(rb, ls, RALLY__K_RESHARD, 1)) != RALLY_OK)
        return rc;
    rally__robust_set_drop(rb, v);
    ls->version = v;
    ls->valid = 1;
    rally__robust_set_has_local(rb, 1);
    rb->rec.pending = 0;
    rb->rec.set_world = 0;
    return RALLY_OK;
}

int rally__robust_reshard(struct rally__robust *rb, uint64_t v)
{
    struct move mv = {.N = rb->world};
    int rc = plan(rb, v, &mv);
    if (rc == RALLY_OK)
        rc = pack_mine(rb, v, &mv);
    if (rc == RALLY_OK)
        rc = exchange(rb, &mv);
    if (rc == RALLY_OK)
        rc = keep_own(rb, &mv);
    if (rc == RALLY_OK)
        rc = check_once(rb, &mv);
    if (rc == RALLY_OK)
        rc = install(rb, v, &mv);
    rally__recs_free(&mv.keep);
    free(mv.gath);
    free(mv.mine);
    free(mv.off);
    free(mv.slot);
    free(mv.who);
    free(mv.all);
    return rc;
}

void rally__robust_records_owner(struct rally__robust *rb, rally_owner_fn owner, void *arg)
{
    rb->rec.owner = owner;
    rb->rec.arg = arg;
}

int rally__robust_records_declared(const struct rally__robust *rb)
{
    return rb->rec.owner != NULL;
}

void rally__robust_records_world(struct rally__robust *rb)
{
    if (rb->rec.set_world == 0) {
        rb->rec.set_rank = rb->rank;
        rb->rec.set_world = rb->world;
    }
}

void rally__robust_records_changed(struct rally__robust *rb, int moved)
{
    if (!moved)
        rb->rec.pending = rally__robust_has_local(rb);
    if (moved || !rb->rec.pending)
        rb->rec.set_world = 0;
}

int rally__robust_records_pending(const struct rally__robust *rb)
{
    return rb->rec.pending;
}
