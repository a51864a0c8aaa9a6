/*
 * init.c — the initial centroids of a fresh job: k-means++ over every
 * worker's shard, drawn from a seeded random number generator so that every
 * rank (and a rank restarted during initialisation) makes the same choices.
 *
 * k-means++ (Arthur and Vassilvitskii): the first centroid is a row drawn
 * uniformly from all rows; each next one a row drawn with probability
 * D(x)^2 / sum D^2, where D(x) is the distance to the nearest centroid chosen
 * so far.  Every rank draws the same numbers from the same RNG (xoshiro256**
 * seeded by splitmix64), and the per-shard sums of D^2 are allgathered in rank
 * order, so every rank knows which rank owns the drawn row; the owner sends
 * its coordinates to all.  2k - 1 collectives.
 *
 * --reproducible draws the same rows at any N: the draw is an exponential
 * race instead of a walk along the shards' cumulative mass.  Row i gets the
 * key -log(u_i) / w_i, w_i its D^2 (1 for the first centroid) and u_i a
 * uniform number of its own, a hash of the seed, the centroid's number and
 * the row's id (its byte offset in the file), and the row with the least
 * key is drawn: with probability w_i / sum w, as k-means++ asks, whatever
 * the partition (Efraimidis and Spirakis).  A MIN of the keys' bits (a
 * non-negative double's bits order as the double does), a MIN of the ids
 * holding that key, and the holder's row: 3 collectives a centroid.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kmeans.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int s)
{
    return (x << s) | (x >> (64 - s));
}

static uint64_t rng_next(uint64_t s[4])
{
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

static double rng_uniform(uint64_t s[4]) /* [0, 1) */
{
    return (double)(rng_next(s) >> 11) * 0x1p-53;
}

static double sqdist(const float *x, const double *c, uint32_t d)
{
    double s = 0;
    for (uint32_t f = 0; f < d; f++) {
        double t = (double)x[f] - c[f];
        s += t * t;
    }
    return s;
}

/* Sends the coordinates of row local_row of rank owner to every rank: the
 * owner fills them, the others add zeros (exact), one SUM allreduce. */
static int share_row(struct km_job *j, int owner, uint64_t local_row, double *out)
{
    for (uint32_t f = 0; f < j->d; f++)
        out[f] = j->rank == owner ? (double)j->x[local_row * j->d + f] : 0.0;
    return rally_allreduce(j->r, out, j->d, RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
}

/* The rank whose shard holds the cumulative position target of the D^2
 * mass, sums[] being each shard's; *prefix gets the mass of the shards
 * before it. */
static int owner_of(const struct km_job *j, const double *sums, double target, double *prefix)
{
    double p = 0;
    for (int r = 0; r < j->world; r++) {
        if (sums[r] > 0 && (target < p + sums[r] || r == j->world - 1)) {
            *prefix = p;
            return r;
        }
        p += sums[r];
    }
    for (int r = j->world - 1; r >= 0; r--) /* rounding: the last shard with mass */
        if (sums[r] > 0) {
            *prefix = p;
            return r;
        }
    return -1; /* not reached: the caller saw mass */
}

/* The owner's row at position t of its own D^2 mass (the last row with mass
 * when rounding runs past the end). */
static uint64_t row_at(const struct km_job *j, const double *d2, double t)
{
    double cum = 0;
    uint64_t last = 0;
    for (uint64_t i = 0; i < j->rows; i++) {
        if (d2[i] > 0)
            last = i;
        cum += d2[i];
        if (cum > t && d2[i] > 0)
            return i;
    }
    return last;
}

/* Fills m->c (k x d) by k-means++.  The exit status. */
static int kmeanspp(struct km_job *j, struct km_model *m)
{
    int status = KM_EXIT_OK, rc;
    double *d2 = malloc((j->rows ? j->rows : 1) * sizeof *d2);
    double *sums = malloc((size_t)j->world * sizeof *sums);
    if (d2 == NULL || sums == NULL) {
        status = km_oom();
        goto out;
    }
    for (uint32_t c = 0; c < m->k; c++) {
        int owner;
        uint64_t local = 0;
        double total = 0;
        if (c > 0) {
            double s = 0;
            for (uint64_t i = 0; i < j->rows; i++)
                s += d2[i];
            if ((rc = rally_allgather(j->r, &s, sizeof s, sums)) != RALLY_OK) {
                status = km_fail(j, "k-means++", rc);
                goto out;
            }
            for (int r = 0; r < j->world; r++)
                total += sums[r];
        }
        if (total > 0) {
            double target = rng_uniform(m->rng) * total, prefix = 0;
            owner = owner_of(j, sums, target, &prefix);
            if (owner == j->rank)
                local = row_at(j, d2, target - prefix);
        } else { /* the first centroid, or every row already is a centroid */
            uint64_t g = rng_next(m->rng) % j->total_rows;
            for (owner = 0; g >= j->shard_rows[owner]; owner++)
                g -= j->shard_rows[owner];
            local = g;
        }
        double *cen = m->c + (size_t)c * m->d;
        if ((rc = share_row(j, owner, local, cen)) != RALLY_OK) {
            status = km_fail(j, "k-means++", rc);
            goto out;
        }
        for (uint64_t i = 0; i < j->rows; i++) {
            double t = sqdist(j->x + i * j->d, cen, j->d);
            if (c == 0 || t < d2[i])
                d2[i] = t;
        }
    }
out:
    free(d2);
    free(sums);
    return status;
}

/* Row id's uniform number in (0, 1) for centroid c. */
static double row_uniform(uint64_t seed, uint32_t c, uint64_t id)
{
    uint64_t x = seed ^ (0x632be59bd9b4e019u * (c + 1u)), y;
    splitmix64(&x);
    x ^= id;
    y = splitmix64(&x);
    return ((double)(y >> 11) + 0.5) * 0x1p-53;
}

/* Row i's key as bits (UINT64_MAX when its weight is 0). */
static uint64_t least_key_of(const struct km_job *j, uint64_t seed, uint32_t c, const double *w,
                             uint64_t i)
{
    double wi = w ? w[i] : 1.0, key;
    if (!(wi > 0))
        return UINT64_MAX;
    key = -log(row_uniform(seed, c, j->ids[i])) / wi;
    uint64_t kb;
    memcpy(&kb, &key, sizeof kb);
    return kb;
}

/* The least key (as bits) of this shard's rows, weights w (NULL: all 1). */
static uint64_t least_key(const struct km_job *j, uint64_t seed, uint32_t c, const double *w)
{
    uint64_t best = UINT64_MAX;
    for (uint64_t i = 0; i < j->rows; i++) {
        uint64_t kb = least_key_of(j, seed, c, w, i);
        if (kb < best)
            best = kb;
    }
    return best;
}

/* Fills m->c (k x d) by k-means++ drawn by each row's own number. */
static int kmeanspp_reproducible(struct km_job *j, struct km_model *m)
{
    int status = KM_EXIT_OK, rc;
    double *d2 = malloc((j->rows ? j->rows : 1) * sizeof *d2);
    if (d2 == NULL)
        return km_oom();
    for (uint32_t c = 0; c < m->k; c++) {
        const double *w = c > 0 ? d2 : NULL;
        uint64_t key = least_key(j, m->seed, c, w), id = UINT64_MAX;
        if ((rc = rally_allreduce(j->r, &key, 1, RALLY_UINT64, RALLY_MIN, NULL, NULL)) != RALLY_OK)
            goto fail;
        if (key == UINT64_MAX) { /* every row already is a centroid: uniformly */
            w = NULL;
            key = least_key(j, m->seed, c, NULL);
            if ((rc = rally_allreduce(j->r, &key, 1, RALLY_UINT64, RALLY_MIN, NULL, NULL)) !=
                RALLY_OK)
                goto fail;
        }
        uint64_t mine = UINT64_MAX; /* the row holding the key here, if any */
        for (uint64_t i = 0; i < j->rows; i++)
            if (j->ids[i] < id && least_key_of(j, m->seed, c, w, i) == key) {
                id = j->ids[i];
                mine = i;
            }
        uint64_t drawn = id;
        if ((rc = rally_allreduce(j->r, &drawn, 1, RALLY_UINT64, RALLY_MIN, NULL, NULL)) !=
            RALLY_OK)
            goto fail;
        double *cen = m->c + (size_t)c * m->d;
        int holder = mine != UINT64_MAX && id == drawn;
        for (uint32_t f = 0; f < j->d; f++)
            cen[f] = holder ? (double)j->x[mine * j->d + f] : 0.0;
        if ((rc = rally_allreduce(j->r, cen, j->d, RALLY_DOUBLE, RALLY_SUM, NULL, NULL)) !=
            RALLY_OK)
            goto fail;
        for (uint64_t i = 0; i < j->rows; i++) {
            double t = sqdist(j->x + i * j->d, cen, j->d);
            if (c == 0 || t < d2[i])
                d2[i] = t;
        }
    }
    free(d2);
    return status;
fail:
    free(d2);
    return km_fail(j, "k-means++", rc);
}

int km_init(struct km_job *j, const struct km_opts *o, const double *init, struct km_model *m)
{
    size_t kd = (size_t)o->k * j->d;
    m->k = o->k;
    m->d = j->d;
    m->seed = o->seed;
    uint64_t sm = o->seed;
    for (int i = 0; i < 4; i++)
        m->rng[i] = splitmix64(&sm);
    if ((m->c = malloc(kd * sizeof *m->c)) == NULL)
        return km_oom();
    double t0 = ex_now_s();
    if (init != NULL) {
        memcpy(m->c, init, kd * sizeof *m->c);
    } else {
        int status = o->reproducible ? kmeanspp_reproducible(j, m) : kmeanspp(j, m);
        if (status != KM_EXIT_OK)
            return status;
    }
    if (j->rank == 0 && !o->ex.quiet)
        ex_say("initialised %u centroids (%s) from %" PRIu64
               " rows x %u features on %d workers in %.3f s\n",
               m->k, init ? o->init_in : "k-means++", j->total_rows, m->d, j->world,
               ex_now_s() - t0);
    return KM_EXIT_OK;
}
