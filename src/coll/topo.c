/*
 * topo.c — computes a rank's place in the pre-order tree and the ring
 * (topo.h has the proof that the layout alone fixes them).
 */
#include "coll/topo.h"

/* Finds rank's place by descending from the root over [lo, hi). */
void rally__topo_build(struct rally__topo *t, int rank, int world)
{
    int lo = 0, hi = world, parent = -1;
    while (lo != rank) {
        int rest = hi - lo - 1, left_end = lo + 1 + (rest + 1) / 2;
        parent = lo;
        if (rank < left_end) {
            lo = lo + 1;
            hi = left_end;
        } else {
            lo = left_end;
        }
    }
    t->rank = rank;
    t->world = world;
    t->parent = parent;
    t->subtree_end = hi;
    t->nchildren = 0;
    int rest = hi - lo - 1;
    if (rest > 0) {
        int left_end = lo + 1 + (rest + 1) / 2;
        t->children[t->nchildren++] = lo + 1;
        if (left_end < hi)
            t->children[t->nchildren++] = left_end;
    }
    t->ring_prev = (rank + world - 1) % world;
    t->ring_next = (rank + 1) % world;

    int cand[RALLY__MAX_NEIGHBOURS] = {t->parent, t->ring_prev, t->ring_next, -1, -1};
    for (int i = 0; i < t->nchildren; i++)
        cand[3 + i] = t->children[i];
    t->nneighbours = 0;
    for (int i = 0; i < RALLY__MAX_NEIGHBOURS; i++) {
        int p = cand[i], dup = p < 0 || p == rank;
        for (int j = 0; j < t->nneighbours && !dup; j++)
            dup = t->neighbours[j] == p;
        if (!dup)
            t->neighbours[t->nneighbours++] = p;
    }
}

int rally__topo_toward(const struct rally__topo *t, int root)
{
    if (root == t->rank)
        return -1;
    if (root < t->rank || root >= t->subtree_end)
        return t->parent;
    /* root is in one of my subtrees: the last child whose first rank <= root */
    int c = t->children[0];
    for (int i = 1; i < t->nchildren; i++)
        if (t->children[i] <= root)
            c = t->children[i];
    return c;
}
