/*
 * place.c — the placement ring (place.h): ranks dealt out of their failure
 * domains, most left first, never the same domain twice in a row while
 * another has ranks left.
 */
#include "util/place.h"

#include <stdlib.h>
#include <string.h>

/* The deal's order of the groups with ranks left: the most left first; a
 * tie goes to the group dealt first, so that it does not end the sequence
 * too (the ring closes from the last place to the first), then to the
 * lowest group. */
static int before(const int *left, int first, int a, int b)
{
    if (left[a] != left[b])
        return left[a] > left[b];
    if ((a == first) != (b == first))
        return a == first;
    return a < b;
}

/* A binary heap of groups in that order: h[0] the next to deal. */
static void heap_push(int *h, int *n, int g, const int *left, int first)
{
    int i = (*n)++;
    for (; i > 0 && before(left, first, g, h[(i - 1) / 2]); i = (i - 1) / 2)
        h[i] = h[(i - 1) / 2];
    h[i] = g;
}

static int heap_pop(int *h, int *n, const int *left, int first)
{
    int top = h[0], g = h[--*n], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && before(left, first, h[c + 1], h[c]))
            c++;
        if (!before(left, first, h[c], g))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0)
        h[i] = g;
    return top;
}

/* Deals the n ranks of seq out of their groups (grp[rank], ids in
 * [0, world)) into out, each group's ranks in their order in seq: each
 * step the first group in `before`'s order other than the step before's
 * (held out of the heap for one step), O(n log groups).  w is work room
 * for 5 world ints. */
static void deal(int n, const int *seq, const int *grp, int world, int *out, int *w)
{
    int *gi = w, *left = w + world, *head = w + 2 * world, *next = w + 3 * world;
    int *heap = w + 4 * world, G = 0, nh = 0;
    for (int i = 0; i < world; i++)
        gi[i] = -1;
    /* groups numbered by first appearance; each a list of places in seq,
     * built back to front so that head is the first */
    for (int i = 0; i < n; i++)
        if (gi[grp[seq[i]]] < 0) {
            gi[grp[seq[i]]] = G;
            left[G] = 0;
            head[G++] = -1;
        }
    for (int i = n - 1; i >= 0; i--) {
        int g = gi[grp[seq[i]]];
        next[i] = head[g];
        head[g] = i;
        left[g]++;
    }
    for (int g = 0; g < G; g++)
        heap_push(heap, &nh, g, left, -1);
    for (int i = 0, prev = -1, first = -1; i < n; i++) {
        /* only the previous group has ranks left: it goes again */
        int best = nh > 0 ? heap_pop(heap, &nh, left, first) : prev;
        out[i] = seq[head[best]];
        head[best] = next[head[best]];
        left[best]--;
        first = i == 0 ? best : first;
        if (prev >= 0 && prev != best && left[prev] > 0)
            heap_push(heap, &nh, prev, left, first);
        prev = best;
    }
}

int rally__place_order(int world, const int *host, const int *rack, int by_rack, int *order)
{
    int *w = malloc(6 * (size_t)world * sizeof *w);
    if (w == NULL)
        return -1;
    int *seq = w + 5 * (size_t)world;
    for (int r = 0; r < world; r++)
        seq[r] = r;
    if (rack == NULL || !by_rack) {
        deal(world, seq, host, world, order, w);
    } else {
        /* each rack's ranks dealt out of its hosts (deal keeps a group's
         * order, so dealing all of them at once by host within racks is
         * dealing each rack alone), then the racks dealt out */
        int n = 0;
        for (int r = 0; r < world; r++) /* ranks grouped by rack, racks by first rank */
            if (seq[r] >= 0) {
                int k = rack[r];
                for (int q = r; q < world; q++)
                    if (seq[q] >= 0 && rack[q] == k) {
                        order[n++] = q;
                        seq[q] = -1;
                    }
            }
        for (int a = 0, b; a < world; a = b) { /* one rack's run: dealt by host */
            for (b = a; b < world && rack[order[b]] == rack[order[a]]; b++)
                ;
            memcpy(seq, order + a, (size_t)(b - a) * sizeof *seq);
            deal(b - a, seq, host, world, order + a, w);
        }
        memcpy(seq, order, (size_t)world * sizeof *seq);
        deal(world, seq, rack, world, order, w);
    }
    free(w);
    return 0;
}

int rally__place_lost(int world, const int *order, const int *dom, int d, int len)
{
    if (len > world)
        len = world;
    int lost = 0;
    for (int i = 0; i < world; i++) {
        int all = 1;
        for (int j = 0; j < len && all; j++)
            all = dom[order[(i + j) % world]] == d;
        lost += all;
    }
    return lost;
}
