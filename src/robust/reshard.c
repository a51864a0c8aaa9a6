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

int rally__robust_reshard(struct rally__robust *rb, uint64_t v)
{
    int N = rb->world, rc, W = 0;
    uint64_t *all = calloc((size_t)N * DESC, sizeof *all);
    int *who = NULL, *slot = NULL;
    unsigned char *gath = NULL, *mine = NULL;
    size_t *off = NULL;
    struct rally__recs keep = {0};
    if (all == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory moving local models");
    if ((rc = describe(rb, v, all)) != RALLY_OK)
        goto out;
    for (int r = 0; r < N; r++)
        if (all[(size_t)r * DESC] != RALLY__NONE && (int)all[(size_t)r * DESC + 1] > W)
            W = (int)all[(size_t)r * DESC + 1];
    who = calloc((size_t)W + 1, sizeof *who);
    slot = calloc((size_t)W + 1, sizeof *slot);
    off = calloc(2 * (size_t)N, sizeof *off);
    if (who == NULL || slot == NULL || off == NULL) {
        rc = rally__fail(rb->err, RALLY_ENOMEM, "out of memory moving local models");
        goto out;
    }
    if (rb->rec.owner == NULL) {
        rc = rally__fail(rb->err, RALLY_ECONFIG,
                         "cannot move local-model records: this worker has no "
                         "rally_set_local_records (every rank must call it)");
        rally__robust_fatal(rb, RALLY_ECONFIG, rb->err->msg);
        goto out;
    }
    if ((rc = suppliers(rb, all, W, who, slot)) != RALLY_OK)
        goto out;
    /* 1. what this worker supplies, and its count and hash sum */
    const struct rally__localset *old = rally__robust_set_of(rb, v);
    uint64_t sent[2] = {0, 0}, kept[2] = {0, 0}, mine_n = 0;
    for (int d = 0; d < W; d++)
        if (who[d] == rb->rank)
            mine_n += old->nbytes[slot[d]];
    if ((mine = malloc(mine_n ? (size_t)mine_n : 1)) == NULL) {
        rc = rally__fail(rb->err, RALLY_ENOMEM, "out of memory moving local models");
        goto out;
    }
    mine_n = 0;
    for (int d = 0; d < W; d++) {
        if (who[d] != rb->rank)
            continue;
        uint64_t n = old->nbytes[slot[d]];
        if ((rc = walk(rb, old->data[slot[d]], n, d, &sent[0], &sent[1])) != RALLY_OK) {
            rally__robust_fatal(rb, rc, rb->err->msg);
            goto out;
        }
        if (n)
            memcpy(mine + mine_n, old->data[slot[d]], (size_t)n);
        mine_n += n;
    }
    /* 2. everyone's to everyone: the sizes, then the bytes */
    unsigned char *sz = calloc((size_t)N, 8);
    if (sz == NULL) {
        rc = rally__fail(rb->err, RALLY_ENOMEM, "out of memory moving local models");
        goto out;
    }
    for (int r = 0; r < N; r++) {
        off[r] = (size_t)r * 8;
        off[N + r] = 8;
    }
    rally__put_u64(sz + (size_t)rb->rank * 8, mine_n);
    struct rally__sig s_sz = {RALLY__K_RESHARD, 2, 0, -1, (uint64_t)N, 0};
    rc = rally__allgather(&rb->comm, sz, off, off + N, &s_sz);
    uint64_t total = 0;
    for (int r = 0; rc == RALLY_OK && r < N; r++) {
        off[N + r] = (size_t)rally__get_u64(sz + (size_t)r * 8);
        off[r] = (size_t)total;
        total += off[N + r];
    }
    free(sz);
    if (rc != RALLY_OK)
        goto out;
    if ((gath = malloc(total ? (size_t)total : 1)) == NULL) {
        rc = rally__fail(rb->err, RALLY_ENOMEM, "out of memory for %llu bytes of local models",
                         (unsigned long long)total);
        goto out;
    }
    if (mine_n)
        memcpy(gath + off[rb->rank], mine, (size_t)mine_n);
    struct rally__sig s_data = {RALLY__K_RESHARD, 3, 0, -1, total, 0};
    if ((rc = rally__allgather(&rb->comm, gath, off, off + N, &s_data)) != RALLY_OK)
        goto out;
    /* this rank's records, in id order (every supplier walked its bytes) */
    struct rally__rec rec;
    uint64_t at = 0;
    while (rally__rec_next(gath, total, &at, &rec) == 1) {
        int owner = rb->rec.owner(rec.id, N, rb->rec.arg);
        if (owner < 0 || owner >= N) {
            rc = rally__fail(rb->err, RALLY_EINVAL,
                             "rally_set_local_records' owner gave rank %d for record %016llx "
                             "in a job of %d",
                             owner, (unsigned long long)rec.id, N);
            rally__robust_fatal(rb, rc, rb->err->msg);
            goto out;
        }
        if (owner != rb->rank)
            continue;
        if (rally__recs_push(&keep, &rec) != 0) {
            rc = rally__fail(rb->err, RALLY_ENOMEM, "out of memory moving local models");
            goto out;
        }
        kept[0]++;
        kept[1] += id_hash(rec.id);
    }
    rally__recs_sort(&keep);
    for (size_t i = 1; i < keep.n; i++)
        if (keep.v[i].id == keep.v[i - 1].id) {
            rc = rally__fail(rb->err, RALLY_EINVAL,
                             "local-model record %016llx is on more than one rank: every id "
                             "must be on exactly one",
                             (unsigned long long)keep.v[i].id);
            rally__robust_fatal(rb, rc, rb->err->msg);
            goto out;
        }
    /* 3. every record arrived exactly once */
    uint64_t w[4] = {sent[0], sent[1], kept[0], kept[1]};
    unsigned char wb[32];
    for (int i = 0; i < 4; i++)
        rally__put_u64(wb + 8 * i, w[i]);
    struct rally__reducer rd;
    rally__reducer_builtin(&rd, RALLY_UINT64, RALLY_SUM);
    struct rally__sig s_sum = {RALLY__K_RESHARD, 4, 0, -1, 4, 0};
    if ((rc = rally__allreduce(&rb->comm, wb, wb, 4, &rd, &s_sum)) != RALLY_OK)
        goto out;
    if (rally__get_u64(wb) != rally__get_u64(wb + 16) ||
        rally__get_u64(wb + 8) != rally__get_u64(wb + 24)) {
        rc = rally__fail(rb->err, RALLY_EPEER,
                         "moving local-model records: %llu were sent and %llu kept (their id "
                         "digests %016llx and %016llx): a record was lost or kept twice",
                         (unsigned long long)rally__get_u64(wb),
                         (unsigned long long)rally__get_u64(wb + 16),
                         (unsigned long long)rally__get_u64(wb + 8),
                         (unsigned long long)rally__get_u64(wb + 24));
        rally__robust_fatal(rb, rc, rb->err->msg);
        goto out;
    }
    /* 4. the new set, its replicas, and it replaces the old one */
    struct rally__localset *ls = rally__robust_set_spare(rb);
    uint64_t n = 0;
    for (size_t i = 0; i < keep.n; i++)
        n += keep.v[i].n;
    if ((rc = rally__robust_set_fill(rb, ls, 0, NULL, n)) != RALLY_OK)
        goto out;
    n = 0;
    for (size_t i = 0; i < keep.n; i++) {
        memcpy(ls->data[0] + n, keep.v[i].p, (size_t)keep.v[i].n);
        n += keep.v[i].n;
    }
    if ((rc = rally__robust_set_spread(rb, ls, RALLY__K_RESHARD, 1)) != RALLY_OK)
        goto out;
    rally__robust_set_drop(rb, v);
    ls->version = v;
    ls->valid = 1;
    rally__robust_set_has_local(rb, 1);
    rb->rec.pending = 0;
    rb->rec.set_world = 0;
out:
    rally__recs_free(&keep);
    free(gath);
    free(mine);
    free(off);
    free(slot);
    free(who);
    free(all);
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
