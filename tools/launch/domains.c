/*
 * domains.c — the failure domains whose loss takes every copy of a local
 * model or of a result's piece (domains.h), counted on the placement ring.
 */
#include "domains.h"

#include <stdlib.h>

#include "util/place.h"

/* The longest run of consecutive places (cyclic) of the ring order in
 * domain d. */
static int longest(int W, const int *order, const int *dom, int d)
{
    int best = 0;
    for (int i = 0, cur = 0; i < 2 * W; i++) {
        cur = dom[order[i % W]] == d ? cur + 1 : 0;
        best = cur > best ? cur : best;
    }
    return best < W ? best : W;
}

/* The domains of dom (one level) that are not covered, appended to out at
 * n; the new count. */
static int level(const struct rally__launch_layout *in, const int *order, const int *dom,
                 int is_rack, char *seen, struct rally__launch_lost *out, int n)
{
    int W = in->world, ndom = 0;
    for (int r = 0; r < W; r++)
        seen[r] = 0;
    for (int r = 0; r < W; r++)
        if (!seen[dom[r]]) {
            seen[dom[r]] = 1;
            ndom++;
        }
    if (ndom < 2)
        return n;
    for (int r = 0; r < W; r++)
        seen[r] = 0;
    for (int r = 0; r < W; r++) { /* each domain at its lowest rank */
        int d = dom[r];
        if (seen[d])
            continue;
        seen[d] = 1;
        struct rally__launch_lost x = {is_rack, d, 0, 0, 0, longest(W, order, dom, d)};
        for (int q = r; q < W; q++)
            x.ranks += dom[q] == d;
        if (in->local_len > 0)
            x.local = rally__place_lost(W, order, dom, d, in->local_len);
        if (in->piece_len > 0)
            x.pieces = rally__place_lost(W, order, dom, d, in->piece_len);
        if (x.local > 0 || x.pieces > 0)
            out[n++] = x;
    }
    return n;
}

int rally__launch_uncovered(const struct rally__launch_layout *in, struct rally__launch_lost *out)
{
    int W = in->world;
    int *order = malloc((size_t)W * sizeof *order);
    char *seen = malloc((size_t)W);
    int n = -1;
    if (order != NULL && seen != NULL &&
        rally__place_order(W, in->host, in->rack, in->by_rack, order) == 0) {
        n = level(in, order, in->host, 0, seen, out, 0);
        if (in->rack != NULL)
            n = level(in, order, in->rack, 1, seen, out, n);
    }
    free(order);
    free(seen);
    return n;
}
