/*
 * domains.c — the failure domains whose loss takes every copy of a local
 * model or of a result's piece (domains.h), counted on the placement ring.
 *
 * A window of len consecutive places lies wholly in a domain when the run
 * of places of that domain starting at its first place is len long or
 * longer: one pass finds every place's run, so each level costs O(world)
 * however many domains it has (util/place.h's rally__place_lost counts one
 * domain in O(world * len); the unit test holds the two equal).  XOR
 * sets are counted set by set, each member once: O(world) too.
 */
#include "domains.h"

#include <stdlib.h>

#include "util/place.h"
#include "util/xor.h"

/* run[i]: how many consecutive places from place i on (cyclic) hold ranks
 * of place i's domain, at most W; at least two domains. */
static void runs(int W, const int *order, const int *dom, int *run)
{
    int s = 0; /* a place that starts a run: its predecessor is of another domain */
    while (dom[order[s]] == dom[order[(s + W - 1) % W]])
        s++;
    for (int j = 1; j <= W; j++) { /* backwards from s - 1 round to s */
        int i = (s - j + W) % W, next = (i + 1) % W;
        run[i] = next != s && dom[order[i]] == dom[order[next]] ? run[next] + 1 : 1;
    }
}

/* The XOR sets of G on the ring (util/xor.h): for each domain of dom, the
 * models it would take (local[d]: the members of every set of which it
 * holds two or more), how many such sets (sets[d]), the first (set[d]) and
 * its members there (on[d]).  cnt is room for world ints. */
static void xor_sets(int W, int G, const int *order, const int *dom, int *local, int *sets,
                     int *set, int *on, int *cnt)
{
    for (int p = 0, first, size, s; p < W; p = first + size) {
        rally__xor_set(W, G, p, &first, &size, &s);
        for (int i = first; i < first + size; i++)
            cnt[dom[order[i]]] = 0;
        for (int i = first; i < first + size; i++)
            cnt[dom[order[i]]]++;
        for (int i = first; i < first + size; i++) {
            int d = dom[order[i]];
            if (cnt[d] < 2)
                continue;
            local[d] += cnt[d];
            if (sets[d]++ == 0) {
                set[d] = s;
                on[d] = cnt[d];
            }
            cnt[d] = 0; /* counted at its first member */
        }
    }
}

/* The domains of dom (one level) that are not covered, appended to out at
 * n; the new count.  w is room for 10 * world ints. */
static int level(const struct rally__launch_layout *in, const int *order, const int *dom,
                 int is_rack, int *w, struct rally__launch_lost *out, int n)
{
    int W = in->world, ndom = 0;
    int *run = w, *ranks = w + W, *local = w + 2 * W, *pieces = w + 3 * W, *longest = w + 4 * W;
    int *sets = w + 5 * W, *set = w + 6 * W, *on = w + 7 * W, *lost = w + 9 * W;
    for (int d = 0; d < W; d++)
        ranks[d] = local[d] = pieces[d] = longest[d] = sets[d] = lost[d] = 0;
    for (int r = 0; r < W; r++)
        ndom += ranks[dom[r]]++ == 0;
    if (ndom < 2)
        return n;
    runs(W, order, dom, run);
    for (int i = 0; i < W; i++) {
        int d = dom[order[i]];
        local[d] += !in->xor_g && in->local_len > 0 && run[i] >= in->local_len;
        pieces[d] += !in->piece_xor_g && in->piece_len > 0 && run[i] >= in->piece_len;
        longest[d] = run[i] > longest[d] ? run[i] : longest[d];
    }
    /* both schemes cut the same sets (one rally_xor_set): what a set with
     * two members or more on the domain loses, models or pieces */
    int g = in->xor_g > 0 ? in->xor_g : in->piece_xor_g;
    if (g > 0)
        xor_sets(W, g, order, dom, lost, sets, set, on, w + 8 * W);
    for (int d = 0; g > 0 && d < W; d++) {
        local[d] += in->xor_g > 0 ? lost[d] : 0;
        pieces[d] += in->piece_xor_g > 0 ? lost[d] : 0;
    }
    for (int r = 0; r < W; r++) { /* each domain at its lowest rank */
        int d = dom[r];
        if (ranks[d] == 0 || (local[d] == 0 && pieces[d] == 0)) {
            ranks[d] = 0;
            continue;
        }
        out[n++] = (struct rally__launch_lost){is_rack,  d,       ranks[d],
                                               local[d], pieces[d], longest[d],
                                               sets[d],  sets[d] ? set[d] : -1,
                                               sets[d] ? on[d] : 0};
        ranks[d] = 0; /* said */
    }
    return n;
}

int rally__launch_uncovered(const struct rally__launch_layout *in, struct rally__launch_lost *out)
{
    int W = in->world;
    int *order = malloc(11 * (size_t)W * sizeof *order);
    int n = -1;
    if (order != NULL && rally__place_order(W, in->host, in->rack, in->by_rack, order) == 0) {
        n = level(in, order, in->host, 0, order + W, out, 0);
        if (in->rack != NULL)
            n = level(in, order, in->rack, 1, order + W, out, n);
    }
    free(order);
    return n;
}
