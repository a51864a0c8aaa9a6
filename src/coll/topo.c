/*
 * topo.c — computes a rank's place in the pre-order tree, the ring and the
 * halving-doubling hypercube (topo.h has the proof that the layout alone
 * fixes them).
 */
#include "coll/topo.h"

/* Adds peer p to the neighbours unless it is none, this rank, or there. */
static void add(struct rally__topo *t, int p)
{
    int dup = p < 0 || p == t->rank;
    for (int j = 0; j < t->nneighbours && !dup; j++)
        dup = t->neighbours[j] == p;
    if (!dup)
        t->neighbours[t->nneighbours++] = p;
}

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

    int cand[3 + RALLY__MAX_CHILDREN] = {t->parent, t->ring_prev, t->ring_next, -1, -1};
    for (int i = 0; i < t->nchildren; i++)
        cand[3 + i] = t->children[i];
    t->nneighbours = 0;
    t->hd_p = t->hd_extra = 0;
    t->hd_vrank = -1;
    t->hier_hosts = 0;
    t->hier_leader = rank;
    t->hier_up = t->hier_down = t->hier_prev = t->hier_next = -1;
    t->hier_index = 0;
    t->place_prev = t->xor_prev = t->ring_prev;
    t->place_next = t->xor_next = t->ring_next;
    for (int i = 0; i < 3 + RALLY__MAX_CHILDREN; i++)
        add(t, cand[i]);
    t->nbase = t->nneighbours;
}

int rally__topo_hd_real(const struct rally__topo *t, int v)
{
    return v < t->hd_extra ? 2 * v : v + t->hd_extra;
}

int rally__topo_add_hd(struct rally__topo *t)
{
    int p = 1, rounds = 0;
    while (2 * p <= t->world) {
        p *= 2;
        rounds++;
    }
    if (t->world < 2 || rounds > RALLY__MAX_HD_ROUNDS)
        return -1;
    t->hd_p = p;
    t->hd_extra = t->world - p;
    int r = t->rank, e = t->hd_extra;
    t->hd_vrank = r < 2 * e ? (r % 2 ? -1 : r / 2) : r - e;
    if (t->hd_vrank >= 0)
        for (int d = 1; d < p; d *= 2)
            add(t, rally__topo_hd_real(t, t->hd_vrank ^ d));
    return 0; /* a folded rank's one partner, r - 1, is its ring_prev already */
}

void rally__topo_add_place(struct rally__topo *t, int prev, int next)
{
    t->place_prev = t->xor_prev = prev;
    t->place_next = t->xor_next = next;
    add(t, prev);
    add(t, next);
}

void rally__topo_add_xor(struct rally__topo *t, int prev, int next)
{
    t->xor_prev = prev;
    t->xor_next = next;
    add(t, prev);
    add(t, next);
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

/* The hierarchy in two passes over the ranks: the lowest rank of each host
 * (first[], its leader), then this rank's chain neighbours and the leaders'
 * ring around its own. */
int rally__topo_add_hier(struct rally__topo *t, const int *host, int *first)
{
    int N = t->world, r = t->rank, H = 0, shared = 0;
    for (int i = 0; i < N; i++)
        first[i] = -1;
    for (int i = 0; i < N; i++) {
        if (first[host[i]] < 0) {
            first[host[i]] = i;
            H++;
        } else {
            shared = 1;
        }
    }
    if (H < 2 || !shared)
        return 0;
    int me = first[host[r]], up = -1, down = -1, idx = 0, head = -1, tail = -1, prev = -1,
        next = -1;
    for (int i = 0; i < N; i++) {
        if (first[host[i]] == me && i != r) {
            if (i < r)
                up = i;
            else if (down < 0)
                down = i;
        }
        if (first[host[i]] == i) { /* a leader */
            if (head < 0)
                head = i;
            tail = i;
            if (i < me) {
                idx++;
                prev = i;
            } else if (i > me && next < 0) {
                next = i;
            }
        }
    }
    t->hier_hosts = H;
    t->hier_leader = me;
    t->hier_up = up;
    t->hier_down = down;
    t->hier_index = idx;
    add(t, up);
    add(t, down);
    if (me == r) {
        t->hier_prev = prev >= 0 ? prev : tail;
        t->hier_next = next >= 0 ? next : head;
        add(t, t->hier_prev);
        add(t, t->hier_next);
    }
    return 1;
}
