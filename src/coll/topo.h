/*
 * topo.h — the tree and the ring, fixed by the rank layout alone.
 *
 * The tree is a binary tree numbered in pre-order: the subtree of a rank r
 * holds the contiguous ranks [r, r + size), its first child is r + 1 and
 * covers the lower half of the rest, its second child the upper half.  So a
 * node's own value followed by its children's subtrees in rank order is the
 * rank order itself: a left fold over the tree equals the left fold over
 * ranks 0..N-1, which is what makes non-commutative reducers possible.
 * The ring is 0 -> 1 -> ... -> N-1 -> 0 (many ring edges are tree edges).
 *
 * Every worker computes the same topology from (rank, world); the tracker
 * only hands out addresses.
 */
#ifndef RALLY_COLL_TOPO_H
#define RALLY_COLL_TOPO_H

#define RALLY__MAX_CHILDREN 2
#define RALLY__MAX_NEIGHBOURS (RALLY__MAX_CHILDREN + 3)

struct rally__topo {
    int rank, world;
    int parent;                         /* -1 at the root (rank 0) */
    int nchildren;
    int children[RALLY__MAX_CHILDREN];  /* ascending */
    int subtree_end;                    /* this subtree is [rank, subtree_end) */
    int ring_prev, ring_next;           /* == rank when world == 1 */
    int nneighbours;                    /* distinct peers: tree and ring */
    int neighbours[RALLY__MAX_NEIGHBOURS];
};

void rally__topo_build(struct rally__topo *t, int rank, int world);

/* The tree neighbour of t->rank on the path towards root (root == rank: -1). */
int rally__topo_toward(const struct rally__topo *t, int root);

#endif
