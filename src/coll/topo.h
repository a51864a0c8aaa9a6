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
 * Recursive halving-doubling (only when the job enables it: its partners
 * are extra links) works on p = the largest power of two <= N "virtual"
 * ranks: the first e = N - p even ranks 2i absorb their odd ring successor
 * 2i + 1 (a ring edge) and act as virtual rank i, every rank r >= 2e acts as
 * r - e; virtual v pairs with v ^ 1, v ^ 2, ..., v ^ p/2.
 *
 * Every worker computes the same topology from (rank, world); the tracker
 * only hands out addresses.
 */
#ifndef RALLY_COLL_TOPO_H
#define RALLY_COLL_TOPO_H

#define RALLY__MAX_CHILDREN 2
/* halving-doubling partners: log2(p) <= RALLY__MAX_HD_ROUNDS, so N < 2^11 */
#define RALLY__MAX_HD_ROUNDS 10
#define RALLY__MAX_NEIGHBOURS (RALLY__MAX_CHILDREN + 3 + RALLY__MAX_HD_ROUNDS)

struct rally__topo {
    int rank, world;
    int parent; /* -1 at the root (rank 0) */
    int nchildren;
    int children[RALLY__MAX_CHILDREN]; /* ascending */
    int subtree_end;                   /* this subtree is [rank, subtree_end) */
    int ring_prev, ring_next;          /* == rank when world == 1 */
    int nneighbours;                   /* distinct peers: tree, ring (and partners) */
    int nbase;                         /* neighbours[0..nbase): tree and ring */
    int neighbours[RALLY__MAX_NEIGHBOURS];
    /* halving-doubling, set by rally__topo_add_hd: */
    int hd_p, hd_extra; /* p (0: no partners) and e = N - p */
    int hd_vrank;       /* this rank's virtual rank, -1 when folded away */
};

void rally__topo_build(struct rally__topo *t, int rank, int world);

/* Adds the halving-doubling partners to the neighbours; returns 0, or -1
 * (t unchanged) when N is 1 or needs more than RALLY__MAX_HD_ROUNDS rounds.
 * The answer depends on N only, so every rank gives the same. */
int rally__topo_add_hd(struct rally__topo *t);

/* The real rank acting as virtual rank v. */
int rally__topo_hd_real(const struct rally__topo *t, int v);

/* The tree neighbour of t->rank on the path towards root (root == rank: -1). */
int rally__topo_toward(const struct rally__topo *t, int root);

#endif
