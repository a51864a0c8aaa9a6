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
 * The hierarchy (only when the job has several hosts and one of them runs
 * two ranks or more: rally__topo_add_hier) groups the ranks by host: each
 * host's ranks form a chain in rank order whose head, the host's lowest
 * rank, is its leader, and the leaders form a ring in rank order.  A
 * hierarchical allreduce reduces along each chain towards its leader,
 * runs the ring over the leaders, and passes the result back down the
 * chains (docs/determinism.md gives its order).  It adds at most four
 * links: a chain's neighbours (the ring's already when ranks fill hosts in
 * order) and, on a leader, the next and previous leaders.
 *
 * Every worker computes the same topology from (rank, world) and, for the
 * hierarchy, the hosts in the address book; the tracker only hands out
 * addresses.
 */
#ifndef RALLY_COLL_TOPO_H
#define RALLY_COLL_TOPO_H

#define RALLY__MAX_CHILDREN 2
/* halving-doubling partners: log2(p) <= RALLY__MAX_HD_ROUNDS, so N < 2^11 */
#define RALLY__MAX_HD_ROUNDS 10
/* the hierarchy: a chain's two neighbours and a leader's two */
#define RALLY__MAX_HIER_LINKS 4
/* the placement ring's two neighbours (util/place.h) */
#define RALLY__MAX_PLACE_LINKS 2
/* an XOR set's ring closing on itself (util/xor.h): its last and first member */
#define RALLY__MAX_XOR_LINKS 2
#define RALLY__MAX_NEIGHBOURS                                                                      \
    (RALLY__MAX_CHILDREN + 3 + RALLY__MAX_HD_ROUNDS + RALLY__MAX_HIER_LINKS +                     \
     RALLY__MAX_PLACE_LINKS + RALLY__MAX_XOR_LINKS)

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
    /* the hierarchy, set by rally__topo_add_hier: */
    int hier_hosts;           /* H, the leaders' ring's size; 0: no hierarchy */
    int hier_leader;          /* the head of this rank's chain (its host's lowest rank) */
    int hier_up, hier_down;   /* the chain's previous (towards the leader) and next rank; -1 */
    int hier_index;           /* this host's place in the leaders' ring, 0..H-1 */
    int hier_prev, hier_next; /* the leaders' ring (a leader's only; else -1) */
    /* the placement ring (util/place.h), set by rally__topo_add_place: where
     * this rank's copies go and whose come here; the ring's own when the
     * placement is rank order */
    int place_prev, place_next;
    /* the ring of this rank's XOR set (util/xor.h), set by
     * rally__topo_add_xor: the set's consecutive places, its last member
     * followed by its first; the placement ring's when there is none */
    int xor_prev, xor_next;
};

void rally__topo_build(struct rally__topo *t, int rank, int world);

/* Adds the halving-doubling partners to the neighbours; returns 0, or -1
 * (t unchanged) when N is 1 or needs more than RALLY__MAX_HD_ROUNDS rounds.
 * The answer depends on N only, so every rank gives the same. */
int rally__topo_add_hd(struct rally__topo *t);

/* Adds the hierarchy for the hosts host[0..world) (integers in [0, world);
 * equal: the same host), with work room for world ints; returns 1 when the job
 * has one (two hosts or more, and one of them with two ranks or more), 0
 * when it has none (t unchanged).  Every rank gives the same answer. */
int rally__topo_add_hier(struct rally__topo *t, const int *host, int *work);

/* Adds the placement ring's neighbours of this rank (the ranks before and
 * after it in that order) to the neighbours. */
void rally__topo_add_place(struct rally__topo *t, int prev, int next);

/* Adds the neighbours of this rank on its XOR set's ring (rally_local_scheme
 * =xor): the placement ring's, but at the set's two ends each other. */
void rally__topo_add_xor(struct rally__topo *t, int prev, int next);

/* The real rank acting as virtual rank v. */
int rally__topo_hd_real(const struct rally__topo *t, int v);

/* The tree neighbour of t->rank on the path towards root (root == rank: -1). */
int rally__topo_toward(const struct rally__topo *t, int root);

#endif
