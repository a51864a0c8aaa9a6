/*
 * grow.c — one tree, grown depth-wise as XGBoost's hist method does: every
 * row's gradient and hessian from the prediction cache; per level, the
 * gradient/hessian histograms of the level's nodes reduced by one float64 SUM
 * allreduce; every rank then finds the same best splits (rally's reduction
 * order is fixed, so the sums are the same bits on every run) and moves its
 * rows down.
 *
 * Histograms: a node's is d x (max_bin + 1) pairs (gradient sum, hessian
 * sum), the last slot of each feature for missing values; the last level
 * (depth max_depth: leaves only) needs none.  Below the root
 * only the child with the smaller hessian sum is built and reduced; its
 * sibling is the parent's histogram minus it (XGBoost's subtraction trick;
 * the same arithmetic on every rank).  The histograms are built in the
 * allreduce's prepare callback, so a recovering worker, which is handed the
 * results, skips building them.
 *
 * Rows: j->order holds the shard's row numbers grouped by the node each is
 * at, a node's rows contiguous (W.beg, W.cnt) and in row order.  Moving a
 * level's rows down splits each node's group in place, stably (the right
 * ones through W.spare), reading one byte a row from the split feature's
 * column (j->cols, feature-major).  A histogram visits only its node's rows
 * (the root all of them, without the index), in row order, so each bin adds
 * the same values in the same order as a scan of every row would: the same
 * bits whatever the grouping.  Per (row, feature) the kernel does one 16-byte
 * load, add and store of the (gradient, hessian) pair at the row's bin,
 * reading the row's d bins from j->bins (row-major, one byte each).
 *
 * --reproducible: the same at any N.  Each tree's gradients and hessians
 * are rounded once to a grid every rank agrees on (agree_grid: one MAX
 * allreduce of the largest magnitudes), 2^e so that the job's N rows of them
 * sum below 2^62, and the histograms hold int64 sums (j->qgh, RALLY_INT64):
 * exact in any order, the subtraction trick exact too.  best_split sums the
 * integers along the bins and scales each candidate once.
 *
 * Gradients: the loss pass after each tree (gb_shard_loss, boost.c's
 * allreduce) computes the next tree's gradients from the same exp and notes
 * it in j->gh_for; a worker that was handed that loss instead (a replay)
 * computes them when it first builds a histogram of the tree.
 *
 * A split of a node with sums (G, H) into (GL, HL) and (GR, HR) changes the
 * loss by gain(GL, HL) + gain(GR, HR) - gain(G, H), gain(G, H) = G^2 / (H +
 * lambda) (0 when H < min_child_weight); each side needs a hessian sum of at
 * least min_child_weight; it is taken when its loss change exceeds 1e-6 and
 * is at least gamma (XGBoost's test).  For every bin boundary both default
 * directions for the missing values are tried; ties keep the first found
 * (lowest feature, lowest bin, missing right).  A leaf outputs eta * -G / (H
 * + lambda) (0 when H < min_child_weight).
 */
#include <stdlib.h>
#include <string.h>

#include "gbdt.h"

#define RT_EPS 1e-6
/* How many rows ahead build_hist prefetches a gathered row's bins. */
#define RT_AHEAD 16
/* Rows' losses added into an exact sum at once. */
#define RT_CHUNK 256

/* A (gradient, hessian) pair: one 16-byte add where the CPU has them; the
 * same on the grid of --reproducible (integers: modular sums, exact since
 * the true ones fit). */
typedef double pair __attribute__((vector_size(16)));
typedef uint64_t qpair __attribute__((vector_size(16)));

/* What the histogram prepare callback needs: the nodes to build, in slot
 * order, and where their rows are in j->order. */
struct build {
    struct gb_job *j;
    const struct gb_params *p;
    uint32_t tree;             /* the tree's index (for j->gh_for) */
    const uint32_t *nodes;     /* slot s holds tree node nodes[s] */
    const uint64_t *beg, *cnt; /* per tree node: its rows are order[beg, beg + cnt) */
    double *buf;
    size_t nslots, stride;
};

/* The logistic hessian at probability q: fmax(q (1 - q), 1e-16), inline. */
static inline double hess(double q)
{
    double h = q * (1.0 - q);
    return !(h >= 1e-16) ? 1e-16 : h;
}

/* Every row's gradient and hessian from its cached margin. */
static void gradients(struct gb_job *j, const struct gb_params *p)
{
    for (uint64_t i = 0; i < j->rows; i++) {
        double m = j->pred[i], y = j->y[i];
        if (p->objective == GB_LOGISTIC) {
            double q = 1.0 / (1.0 + exp(-m));
            j->gh[2 * i] = q - y;
            j->gh[2 * i + 1] = hess(q);
        } else {
            j->gh[2 * i] = m - y;
            j->gh[2 * i + 1] = 1.0;
        }
    }
}

double gb_shard_loss(struct gb_job *j, const struct gb_params *p, uint32_t tree, rally_xsum_t *acc)
{
    static const uint64_t zeros[RT_CHUNK]; /* acc's element 0, a chunk's worth */
    double s = 0, chunk[RT_CHUNK];
    size_t nc = 0;
    if (acc != NULL)
        rally_xsum_clear(acc);
    for (uint64_t i = 0; i < j->rows; i++) {
        double m = j->pred[i], y = j->y[i], q = gb_output(p, m);
        if (acc == NULL) {
            s += gb_loss_of(p, q, j->y[i]);
        } else {
            chunk[nc++] = gb_loss_of(p, q, j->y[i]);
            if (nc == RT_CHUNK || i + 1 == j->rows) {
                rally_xsum_add_at(acc, zeros, chunk, nc);
                nc = 0;
            }
        }
        if (p->objective == GB_LOGISTIC) { /* gradients() with the same q */
            j->gh[2 * i] = q - y;
            j->gh[2 * i + 1] = hess(q);
        } else {
            j->gh[2 * i] = m - y;
            j->gh[2 * i + 1] = 1.0;
        }
    }
    j->gh_for = tree + 1;
    return s;
}

/* Adds the pair at g into the pair at `at`: doubles, or integers (fixed). */
static inline __attribute__((always_inline)) void add_pair(unsigned char *at,
                                                           const unsigned char *g, int fixed)
{
    if (fixed) {
        qpair c, x;
        memcpy(&c, at, sizeof c);
        memcpy(&x, g, sizeof x);
        c += x;
        memcpy(at, &c, sizeof c);
    } else {
        pair c, x;
        memcpy(&c, at, sizeof c);
        memcpy(&x, g, sizeof x);
        c += x;
        memcpy(at, &c, sizeof c);
    }
}

/* Adds rows to histogram h (d x S2 pairs), in the order given: rows[0..n)
 * or, rows NULL, the rows 0..n).  Each bin's sums take its rows in that
 * order, whatever the vector width, so the result is the same bits.  fixed
 * (a constant at each call): the pairs of j->qgh, else of j->gh. */
static inline __attribute__((always_inline)) void
add_rows(void *h, const struct gb_job *j, uint32_t S2, const uint32_t *rows, uint64_t n, int fixed)
{
    const uint32_t d = j->d;
    const size_t fstep = (size_t)16 * S2; /* bytes per feature */
    const unsigned char *src = fixed ? (const unsigned char *)j->qgh : (const unsigned char *)j->gh;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t i = rows != NULL ? rows[k] : k;
        if (rows != NULL && k + RT_AHEAD < n) {
            __builtin_prefetch(j->bins + (size_t)rows[k + RT_AHEAD] * d);
            __builtin_prefetch(src + 16 * (size_t)rows[k + RT_AHEAD]);
        }
        const uint8_t *bin = j->bins + i * d;
        unsigned char g[16];
        memcpy(g, src + 16 * i, sizeof g);
        unsigned char *hf = h;
        uint32_t f = 0;
        for (; f + 4 <= d; f += 4, hf += 4 * fstep) { /* four features a step */
            add_pair(hf + 16 * (size_t)bin[f], g, fixed);
            add_pair(hf + fstep + 16 * (size_t)bin[f + 1], g, fixed);
            add_pair(hf + 2 * fstep + 16 * (size_t)bin[f + 2], g, fixed);
            add_pair(hf + 3 * fstep + 16 * (size_t)bin[f + 3], g, fixed);
        }
        for (; f < d; f++, hf += fstep)
            add_pair(hf + 16 * (size_t)bin[f], g, fixed);
    }
}

/* --reproducible: the exponent e of a grid 2^e on which n values of
 * magnitude at most m sum exactly in 63 bits: |v| / 2^e < 2^(62 - ceil(log2
 * n)), so after rounding to the grid any n of them sum below 2^62. */
static int grid_exp(double m, uint64_t n)
{
    int lg = 0, ex = 0;
    while (lg < 62 && (UINT64_C(1) << lg) < n)
        lg++;
    if (!(m > 0))
        return 0;
    frexp(m, &ex); /* m < 2^ex */
    return ex - (62 - lg);
}

/* 2^e, when it is a double (then x * 2^e is ldexp(x, e), rounded once);
 * else 0, and the caller calls ldexp. */
static double pow2(int e)
{
    return e >= -1074 && e <= 1023 ? ldexp(1.0, e) : 0.0;
}

static double scaled(double x, double p2, int e)
{
    return p2 != 0 ? x * p2 : ldexp(x, e);
}

/* This shard's gradients on the tree's grid (nearest, ties to even). */
static void quantize(struct gb_job *j)
{
    const double sg = pow2(-j->eg), sh = pow2(-j->eh);
    for (uint64_t i = 0; i < j->rows; i++) {
        j->qgh[2 * i] = llrint(scaled(j->gh[2 * i], sg, -j->eg));
        j->qgh[2 * i + 1] = llrint(scaled(j->gh[2 * i + 1], sh, -j->eh));
    }
}

/* The largest gradient and hessian magnitudes of this shard (the grid
 * allreduce's prepare). */
static void shard_max(void *arg)
{
    const struct build *b = arg;
    struct gb_job *j = b->j;
    if (j->gh_for != b->tree + 1) {
        gradients(j, b->p);
        j->gh_for = b->tree + 1;
    }
    double mg = 0, mh = 0;
    for (uint64_t i = 0; i < j->rows; i++) {
        double g = fabs(j->gh[2 * i]), h = fabs(j->gh[2 * i + 1]);
        mg = g > mg || g != g ? g : mg; /* a NaN wins */
        mh = h > mh || h != h ? h : mh;
    }
    b->buf[0] = mg;
    b->buf[1] = mh;
}

static void build_hist(void *arg)
{
    const struct build *b = arg;
    struct gb_job *j = b->j;
    double t0 = ex_now_s();
    const uint32_t S2 = b->p->max_bin + 1;
    if (j->gh_for != b->tree + 1) { /* not left by the last loss (a replayed one) */
        gradients(j, b->p);
        j->gh_for = b->tree + 1;
    }
    if (j->reproducible && j->qgh_for != b->tree + 1) {
        quantize(j);
        j->qgh_for = b->tree + 1;
    }
    memset(b->buf, 0, b->nslots * b->stride * sizeof *b->buf);
    for (size_t s = 0; s < b->nslots; s++) {
        double *h = b->buf + s * b->stride;
        uint32_t id = b->nodes[s];
        const uint32_t *rows = id == 0 ? NULL : j->order + b->beg[id]; /* the root: every row */
        uint64_t n = id == 0 ? j->rows : b->cnt[id];
        if (j->reproducible)
            add_rows(h, j, S2, rows, n, 1);
        else
            add_rows(h, j, S2, rows, n, 0);
    }
    j->t_hist += ex_now_s() - t0;
}

static double gain(const struct gb_params *p, double G, double H)
{
    return H < p->min_child_weight ? 0.0 : G * G / (H + p->lambda);
}

static double weight(const struct gb_params *p, double G, double H)
{
    return (H < p->min_child_weight || H <= 0) ? 0.0 : -G / (H + p->lambda);
}

struct split {
    double loss, GL, HL;
    int32_t feature;
    uint32_t bin, default_left;
};

/* The best split of a node with histogram h and sums (G, H); feature -1
 * when none is worth taking.  fixed (a constant at each call): h holds
 * --reproducible's integers on the grid (2^eg, 2^eh), summed exactly along
 * the bins and scaled once per candidate. */
static inline __attribute__((always_inline)) struct split best_split_of(const struct gb_job *j,
                                                                        const struct gb_params *p,
                                                                        const void *h, double G,
                                                                        double H, int fixed)
{
    const uint32_t S2 = p->max_bin + 1;
    const double parent = gain(p, G, H), mcw = p->min_child_weight;
    const double sg = fixed ? pow2(j->eg) : 1, sh = fixed ? pow2(j->eh) : 1;
    struct split best = {.feature = -1};
    for (uint32_t f = 0; f < j->d; f++) {
        const double *hf = (const double *)h + (size_t)f * S2 * 2;
        const uint64_t *qf = (const uint64_t *)h + (size_t)f * S2 * 2;
        uint64_t GLq = 0, HLq = 0, Gmq = 0, Hmq = 0;
        double Gm, Hm, GL = 0, HL = 0;
        if (fixed) {
            Gmq = qf[2 * p->max_bin];
            Hmq = qf[2 * p->max_bin + 1];
            Gm = scaled((double)(int64_t)Gmq, sg, j->eg);
            Hm = scaled((double)(int64_t)Hmq, sh, j->eh);
        } else {
            Gm = hf[2 * p->max_bin];
            Hm = hf[2 * p->max_bin + 1];
        }
        for (uint32_t b = 0; b + 1 < j->nbin[f]; b++) {
            if (fixed) {
                GLq += qf[2 * b];
                HLq += qf[2 * b + 1];
            } else {
                GL += hf[2 * b];
                HL += hf[2 * b + 1];
            }
            for (uint32_t dl = 0; dl < 2; dl++) {
                if (dl && Hm <= 0)
                    break;
                double gl, hl;
                if (fixed) {
                    gl = scaled((double)(int64_t)(dl ? GLq + Gmq : GLq), sg, j->eg);
                    hl = scaled((double)(int64_t)(dl ? HLq + Hmq : HLq), sh, j->eh);
                } else {
                    gl = dl ? GL + Gm : GL;
                    hl = dl ? HL + Hm : HL;
                }
                double gr = G - gl, hr = H - hl;
                if (hl < mcw || hr < mcw || hl <= 0 || hr <= 0)
                    continue;
                double loss = gain(p, gl, hl) + gain(p, gr, hr) - parent;
                if (best.feature < 0 || loss > best.loss)
                    best = (struct split){loss, gl, hl, (int32_t)f, b, dl};
            }
        }
    }
    if (best.feature >= 0 && !(best.loss > RT_EPS && best.loss >= p->gamma))
        best.feature = -1;
    return best;
}

static struct split best_split(const struct gb_job *j, const struct gb_params *p, const void *h,
                               double G, double H)
{
    return j->reproducible ? best_split_of(j, p, h, G, H, 1) : best_split_of(j, p, h, G, H, 0);
}

/* Reusable buffers (a tree's worth; grown, never shrunk). */
struct ws {
    double *hist, *next, *red; /* this level's, the next level's, the reduced */
    size_t hist_cap, next_cap, red_cap;
    uint32_t *spare; /* rows: the right-hand rows while a node's are split */
    uint64_t spare_cap;
    uint32_t *built; /* slot -> tree node */
    uint64_t *beg, *cnt;
    double *G, *H;
    uint32_t *level, *nlevel;
    size_t node_cap;
};

static struct ws W;

static int reserve(double **p, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    double *np = realloc(*p, n * sizeof *np);
    if (np == NULL)
        return -1;
    *p = np;
    *cap = n;
    return 0;
}

/* p resized to nbytes, or p itself with *failed set (realloc failed, or an
 * earlier call did). */
static void *resize(void *p, size_t nbytes, int *failed)
{
    if (*failed)
        return p;
    void *np = realloc(p, nbytes);
    if (np == NULL) {
        *failed = 1;
        return p;
    }
    return np;
}

static int reserve_ws(size_t nodes, uint64_t rows)
{
    int failed = 0;
    if (rows + 1 > W.spare_cap) {
        W.spare = resize(W.spare, (rows + 1) * sizeof *W.spare, &failed);
        if (failed)
            return -1;
        W.spare_cap = rows + 1;
    }
    if (nodes <= W.node_cap)
        return 0;
    W.built = resize(W.built, nodes * sizeof *W.built, &failed);
    W.beg = resize(W.beg, nodes * sizeof *W.beg, &failed);
    W.cnt = resize(W.cnt, nodes * sizeof *W.cnt, &failed);
    W.G = resize(W.G, nodes * sizeof *W.G, &failed);
    W.H = resize(W.H, nodes * sizeof *W.H, &failed);
    W.level = resize(W.level, nodes * sizeof *W.level, &failed);
    W.nlevel = resize(W.nlevel, nodes * sizeof *W.nlevel, &failed);
    if (failed)
        return -1;
    W.node_cap = nodes;
    return 0;
}

void gb_grow_free(void)
{
    free(W.hist);
    free(W.next);
    free(W.red);
    free(W.spare);
    free(W.built);
    free(W.beg);
    free(W.cnt);
    free(W.G);
    free(W.H);
    free(W.level);
    free(W.nlevel);
    memset(&W, 0, sizeof W);
}

/* Splits node nd's rows (order[beg, beg + cnt), row order) between its
 * children, each keeping row order: the left ones stay in front, the right
 * ones go to W.spare and come back behind them. */
static void split_rows(struct gb_job *j, const struct gb_params *p, const struct gb_node *nd,
                       uint64_t beg, uint64_t cnt)
{
    uint32_t *o = j->order + beg;
    const uint8_t *col = j->cols + (size_t)nd->feature * j->rows;
    const uint32_t missing = p->max_bin, sb = nd->split_bin, dl = nd->default_left;
    uint64_t nl = 0, nr = 0;
    for (uint64_t k = 0; k < cnt; k++) {
        uint32_t i = o[k], bin = col[i];
        uint32_t left = bin == missing ? dl : bin <= sb;
        o[nl] = i; /* nl <= k: a slot already read */
        W.spare[nr] = i;
        nl += left;
        nr += 1 - left;
    }
    memcpy(o + nl, W.spare, nr * sizeof *o);
    W.beg[nd->left] = beg;
    W.cnt[nd->left] = nl;
    W.beg[nd->right] = beg + nl;
    W.cnt[nd->right] = nr;
}

/* --reproducible: the tree's grid, from every rank's largest gradient and
 * hessian (one allreduce of MAX).  The exit status. */
static int agree_grid(struct gb_job *j, const struct gb_params *p, uint32_t tree)
{
    double mx[2] = {0, 0};
    struct build b = {.j = j, .p = p, .tree = tree, .buf = mx};
    int rc = rally_allreduce(j->r, mx, 2, RALLY_DOUBLE, RALLY_MAX, shard_max, &b);
    if (rc != RALLY_OK)
        return gb_fail(j, "the gradient-grid allreduce", rc);
    if (!isfinite(mx[0]) || !isfinite(mx[1])) {
        fprintf(stderr, "rally-gbdt: rank %d: tree %" PRIu32 "'s gradients are not finite\n",
                j->rank, tree);
        return GB_EXIT_INPUT;
    }
    j->eg = grid_exp(mx[0], j->total_rows);
    j->eh = grid_exp(mx[1], j->total_rows);
    return GB_EXIT_OK;
}

/* Level 0: every row at the root, the root's histogram built and reduced
 * (one allreduce) into W.hist's slot 0, and the root's sums from it (every
 * row falls in one bin of feature 0).  The exit status. */
static int grow_root(struct gb_job *j, const struct gb_params *p, uint32_t tree, size_t stride,
                     int dtype)
{
    for (uint64_t i = 0; i < j->rows; i++)
        j->order[i] = (uint32_t)i;
    W.beg[0] = 0;
    W.cnt[0] = j->rows;
    W.built[0] = 0;
    struct build b = {j, p, tree, W.built, W.beg, W.cnt, W.red, 1, stride};
    double t0 = ex_now_s();
    int rc = rally_allreduce(j->r, W.red, stride, dtype, RALLY_SUM, build_hist, &b);
    j->t_reduce += ex_now_s() - t0;
    if (rc != RALLY_OK)
        return gb_fail(j, "the root histogram allreduce", rc);
    if (reserve(&W.hist, &W.hist_cap, stride) != 0)
        return gb_oom();
    memcpy(W.hist, W.red, stride * sizeof *W.hist);
    W.G[0] = W.H[0] = 0;
    if (j->reproducible) { /* the root's sums: feature 0's bins, exactly */
        const uint64_t *q = (const uint64_t *)W.hist;
        uint64_t G = 0, H = 0;
        for (uint32_t s = 0; s <= p->max_bin; s++) {
            G += q[2 * s];
            H += q[2 * s + 1];
        }
        W.G[0] = ldexp((double)(int64_t)G, j->eg);
        W.H[0] = ldexp((double)(int64_t)H, j->eh);
    }
    for (uint32_t s = 0; !j->reproducible && s <= p->max_bin; s++) {
        W.G[0] += W.hist[2 * s];
        W.H[0] += W.hist[2 * s + 1];
    }
    W.level[0] = 0;
    return GB_EXIT_OK;
}

/* This level's splits: each of its nlev nodes (W.level, their histograms in
 * W.hist's slots in that order) becomes a leaf or splits in two, the
 * children numbered in order after the parents and listed in W.nlevel with
 * their sums.  How many children there are. */
static size_t split_level(struct gb_job *j, const struct gb_params *p, struct gb_tree *t,
                          size_t nlev, uint32_t depth, size_t stride)
{
    size_t nnext = 0;
    double t0 = ex_now_s();
    for (size_t k = 0; k < nlev; k++) {
        uint32_t id = W.level[k];
        struct gb_node *nd = &t->nodes[id];
        nd->cover = W.H[id];
        struct split s = {.feature = -1};
        if (depth < p->max_depth)
            s = best_split(j, p, W.hist + k * stride, W.G[id], W.H[id]);
        if (s.feature < 0) {
            nd->feature = -1;
            nd->value = p->eta * weight(p, W.G[id], W.H[id]);
            continue;
        }
        uint32_t l = t->n++, r = t->n++;
        *nd = (struct gb_node){.feature = s.feature,
                               .left = l,
                               .right = r,
                               .split_bin = s.bin,
                               .threshold = j->cuts[(size_t)s.feature * p->max_bin + s.bin],
                               .default_left = s.default_left,
                               .gain = s.loss,
                               .cover = W.H[id]};
        W.G[l] = s.GL;
        W.H[l] = s.HL;
        W.G[r] = W.G[id] - s.GL;
        W.H[r] = W.H[id] - s.HL;
        W.nlevel[nnext++] = l;
        W.nlevel[nnext++] = r;
    }
    j->t_split += ex_now_s() - t0;
    return nnext;
}

/* Each split node of the level's rows to its children (split_rows). */
static void move_rows(struct gb_job *j, const struct gb_params *p, const struct gb_tree *t,
                      size_t nlev)
{
    double t0 = ex_now_s();
    for (size_t k = 0; k < nlev; k++) {
        const struct gb_node *nd = &t->nodes[W.level[k]];
        if (nd->feature >= 0)
            split_rows(j, p, nd, W.beg[W.level[k]], W.cnt[W.level[k]]);
    }
    j->t_rows += ex_now_s() - t0;
}

/* Children at depth max_depth are leaves, whose outputs need no histogram:
 * the nnext of W.nlevel get theirs from their sums. */
static void last_leaves(const struct gb_params *p, struct gb_tree *t, size_t nnext)
{
    for (size_t k = 0; k < nnext; k++) {
        struct gb_node *c = &t->nodes[W.nlevel[k]];
        c->feature = -1;
        c->value = p->eta * weight(p, W.G[W.nlevel[k]], W.H[W.nlevel[k]]);
        c->cover = W.H[W.nlevel[k]];
    }
}

/* The children's histograms, into W.next in W.nlevel's order: the smaller
 * child of each pair built and reduced (one allreduce for the whole level,
 * into W.red), its sibling the parent's histogram minus it (the
 * subtraction trick; exact on the grid of --reproducible).  The exit
 * status. */
static int child_hists(struct gb_job *j, const struct gb_params *p, uint32_t tree,
                       const struct gb_tree *t, size_t nnext, size_t stride, int dtype)
{
    size_t nbuild = 0;
    for (size_t k = 0; k < nnext; k += 2) {
        uint32_t l = W.nlevel[k], r = W.nlevel[k + 1];
        W.built[nbuild++] = W.H[l] <= W.H[r] ? l : r;
    }
    if (reserve(&W.red, &W.red_cap, nbuild * stride) != 0 ||
        reserve(&W.next, &W.next_cap, nnext * stride) != 0)
        return gb_oom();
    struct build b = {j, p, tree, W.built, W.beg, W.cnt, W.red, nbuild, stride};
    double t0 = ex_now_s();
    int rc = rally_allreduce(j->r, W.red, nbuild * stride, dtype, RALLY_SUM, build_hist, &b);
    j->t_reduce += ex_now_s() - t0;
    if (rc != RALLY_OK)
        return gb_fail(j, "a histogram allreduce", rc);
    for (size_t k = 0, parent = 0; k < nnext; k += 2) {
        uint32_t l = W.nlevel[k], small = W.built[k / 2];
        while (t->nodes[W.level[parent]].feature < 0)
            parent++;
        const double *hp = W.hist + parent * stride, *hs = W.red + (k / 2) * stride;
        double *hsmall = W.next + (small == l ? k : k + 1) * stride;
        double *hbig = W.next + (small == l ? k + 1 : k) * stride;
        memcpy(hsmall, hs, stride * sizeof *hs);
        if (j->reproducible) { /* on the grid: exact */
            const uint64_t *qp = (const uint64_t *)hp, *qs = (const uint64_t *)hs;
            uint64_t *qb = (uint64_t *)hbig;
            for (size_t e = 0; e < stride; e++)
                qb[e] = qp[e] - qs[e];
        } else {
            for (size_t e = 0; e < stride; e++)
                hbig[e] = hp[e] - hs[e];
        }
        parent++;
    }
    return GB_EXIT_OK;
}

/* The children become the level: their ids and histograms change places
 * with the parents', whose buffers the next level reuses. */
static void descend(void)
{
    double *tmp = W.hist;
    size_t tcap = W.hist_cap;
    W.hist = W.next;
    W.hist_cap = W.next_cap;
    W.next = tmp;
    W.next_cap = tcap;
    uint32_t *tl = W.level;
    W.level = W.nlevel;
    W.nlevel = tl;
}

/* The cache: each row gains its leaf's output (one addition a row), so the
 * next tree's gradients need no walk down this one. */
static void cache_leaves(struct gb_job *j, const struct gb_tree *t)
{
    for (uint32_t id = 0; id < t->n; id++) {
        if (t->nodes[id].feature >= 0)
            continue;
        const uint32_t *o = j->order + W.beg[id];
        const double v = t->nodes[id].value;
        for (uint64_t k = 0; k < W.cnt[id]; k++)
            j->pred[o[k]] += v;
    }
}

int gb_grow(struct gb_job *j, struct gb_model *m)
{
    const struct gb_params *p = &m->p;
    const size_t stride = (size_t)j->d * (p->max_bin + 1) * 2;
    const size_t max_nodes = ((size_t)2 << p->max_depth) - 1;
    const uint32_t tree = m->ntrees;
    const int dtype = j->reproducible ? RALLY_INT64 : RALLY_DOUBLE;
    struct gb_tree t = {0};
    int status;
    if (reserve_ws(max_nodes, j->rows) != 0 || reserve(&W.red, &W.red_cap, stride) != 0 ||
        (t.nodes = calloc(max_nodes, sizeof *t.nodes)) == NULL) {
        status = gb_oom();
        goto out;
    }
    if (j->reproducible && (status = agree_grid(j, p, tree)) != GB_EXIT_OK)
        goto out;
    j->t_hist = j->t_reduce = j->t_split = j->t_rows = 0;
    t.n = 1;
    if ((status = grow_root(j, p, tree, stride, dtype)) != GB_EXIT_OK)
        goto out;
    size_t nlev = 1;
    for (uint32_t depth = 0;; depth++) {
        size_t nnext = split_level(j, p, &t, nlev, depth, stride);
        if (nnext == 0)
            break;
        move_rows(j, p, &t, nlev);
        if (depth + 1 == p->max_depth) {
            last_leaves(p, &t, nnext);
            break;
        }
        if ((status = child_hists(j, p, tree, &t, nnext, stride, dtype)) != GB_EXIT_OK)
            goto out;
        descend();
        nlev = nnext;
    }
    cache_leaves(j, &t);
    if (gb_model_push(m, t) != 0) {
        status = gb_oom();
        goto out;
    }
    t.nodes = NULL;
    status = GB_EXIT_OK;
out:
    free(t.nodes);
    return status;
}
