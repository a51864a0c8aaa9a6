/*
 * topo_test.c — the placement ring (src/util/place.c) and the
 * collectives' topologies (src/coll/topo.c), cmocka: for N = 1..70 the
 * pre-order tree and ring invariants, halving-doubling's pairs, the
 * hierarchy's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "coll/topo.h"
#include "util/place.h"

/* The placement ring: a permutation; rank order for one host; hosts of
 * equal size round-robin; no neighbours on one host while no host holds
 * more than half; racks first, then hosts within a rack. */
static void placement(void **state)
{
    (void)state;
    int host[64], rack[64], order[64];
    for (int r = 0; r < 6; r++)
        host[r] = 0;
    assert_int_equal(rally__place_order(6, host, NULL, 0, order), 0);
    for (int r = 0; r < 6; r++)
        assert_int_equal(order[r], r);
    for (int r = 0; r < 12; r++)
        host[r] = r / 4; /* 3 hosts x 4 ranks, filled in order */
    rally__place_order(12, host, NULL, 0, order);
    static const int rr[12] = {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11};
    for (int i = 0; i < 12; i++)
        assert_int_equal(order[i], rr[i]);
    for (int d = 0; d < 3; d++) {
        assert_int_equal(rally__place_lost(12, order, host, d, 2), 0);
        assert_int_equal(rally__place_lost(12, order, host, d, 1), 4);
    }
    /* one host of 4 beside one of 1: k = 1 cannot cover it, and says so */
    int h5[5] = {0, 0, 0, 0, 1};
    rally__place_order(5, h5, NULL, 0, order);
    assert_int_equal(order[1], 4); /* 0 4 1 2 3 */
    assert_int_equal(rally__place_lost(5, order, h5, 0, 2), 3);
    assert_int_equal(rally__place_lost(5, order, h5, 0, 4), 1);
    assert_int_equal(rally__place_lost(5, order, h5, 0, 5), 0);
    assert_int_equal(rally__place_lost(5, order, h5, 1, 2), 0);
    /* random layouts: a permutation, and no host twice in a row when the
     * largest holds at most half */
    unsigned seed = 7;
    for (int t = 0; t < 2000; t++) {
        seed = seed * 1103515245u + 12345u;
        int N = 2 + (int)(seed >> 16) % 40, H = 1 + (int)(seed >> 8) % 6, big = 0;
        H = H < N ? H : N; /* domain ids below the world */
        int size[64] = {0}, seen[64] = {0};
        for (int r = 0; r < N; r++) {
            seed = seed * 1103515245u + 12345u;
            host[r] = (int)(seed >> 16) % H;
            big = ++size[host[r]] > big ? size[host[r]] : big;
        }
        assert_int_equal(rally__place_order(N, host, NULL, 0, order), 0);
        for (int i = 0; i < N; i++)
            seen[order[i]]++;
        for (int r = 0; r < N; r++)
            assert_int_equal(seen[r], 1);
        for (int h = 0; h < H; h++) { /* a host's ranks in rank order */
            int last = -1;
            for (int i = 0; i < N; i++)
                if (host[order[i]] == h) {
                    assert_true(order[i] > last);
                    last = order[i];
                }
        }
        if (2 * big <= N)
            for (int h = 0; h < H; h++)
                assert_int_equal(rally__place_lost(N, order, host, h, 2), 0);
    }
    /* 2 racks x 2 hosts x 2 ranks: neighbours in other racks, a rack's
     * places alternating its hosts */
    for (int r = 0; r < 8; r++) {
        host[r] = r / 2;
        rack[r] = r / 4;
    }
    rally__place_order(8, host, rack, 1, order);
    for (int i = 0; i < 8; i++)
        assert_int_not_equal(rack[order[i]], rack[order[(i + 1) % 8]]);
    for (int i = 0; i < 8; i++)
        assert_int_not_equal(host[order[i]], host[order[(i + 2) % 8]]);
    for (int d = 0; d < 2; d++)
        assert_int_equal(rally__place_lost(8, order, rack, d, 2), 0);
    /* by host, the racks ignored: round-robin over the 4 hosts */
    rally__place_order(8, host, rack, 0, order);
    static const int h4[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    for (int i = 0; i < 8; i++)
        assert_int_equal(order[i], h4[i]);
}

static void topology(void **state)
{
    for (int N = 1; N <= 70; N++) {
        int parent_of[70], depth_max = 0;
        for (int r = 0; r < N; r++) {
            struct rally__topo t;
            rally__topo_build(&t, r, N);
            parent_of[r] = t.parent;
            assert_true(r == 0 ? t.parent == -1 : t.parent >= 0 && t.parent < r);
            assert_int_equal(t.ring_next, (r + 1) % N);
            assert_int_equal(t.ring_prev, (r + N - 1) % N);
            /* children ascending, first child r+1, subtrees contiguous and covering */
            int end = r + 1;
            for (int i = 0; i < t.nchildren; i++) {
                assert_int_equal(t.children[i], end);
                struct rally__topo c;
                rally__topo_build(&c, t.children[i], N);
                assert_int_equal(c.parent, r);
                end = c.subtree_end;
            }
            assert_int_equal(end, t.subtree_end);
            /* walking toward any root reaches it */
            for (int root = 0; root < N; root++) {
                int at = r, hops = 0;
                while (at != root && hops <= N) {
                    struct rally__topo u;
                    rally__topo_build(&u, at, N);
                    at = rally__topo_toward(&u, root);
                    hops++;
                }
                assert_int_equal(at, root);
            }
        }
        for (int r = 0; r < N; r++) {
            int d = 0;
            for (int a = r; parent_of[a] >= 0; a = parent_of[a])
                d++;
            depth_max = d > depth_max ? d : depth_max;
        }
        int log2n = 0;
        while ((1 << log2n) < N)
            log2n++;
        assert_true(depth_max <= log2n);
    }
}

/* Halving-doubling partners are mutual (the mesh wires each pair once) and
 * fit the link table; past 10 rounds the topology declines them. */
static void topology_hd(void **state)
{
    static struct rally__topo t[2100];
    for (int N = 1; N <= 2100; N += N < 80 ? 1 : 61) {
        for (int r = 0; r < N; r++) {
            rally__topo_build(&t[r], r, N);
            assert_int_equal(rally__topo_add_hd(&t[r]), N >= 2 && N < 2048 ? 0 : -1);
            assert_true(t[r].nneighbours <= RALLY__MAX_NEIGHBOURS);
        }
        for (int r = 0; r < N; r++)
            for (int i = 0; i < t[r].nneighbours; i++) {
                int q = t[r].neighbours[i], mutual = 0;
                for (int j = 0; j < t[q].nneighbours; j++)
                    mutual |= t[q].neighbours[j] == r;
                assert_true(mutual);
            }
    }
}

/* The hierarchy for a layout (host of each rank): every rank's chain
 * neighbours are mutual and within its host in rank order, a leader is its
 * host's lowest rank, the leaders' ring is mutual and in rank order, every
 * neighbour fits the table and is mutual, and a layout without two hosts
 * or without a shared host has none. */
static void hier_layout(const int *host, int N, int want_hosts)
{
    static struct rally__topo t[64];
    int work[64];
    for (int r = 0; r < N; r++) {
        rally__topo_build(&t[r], r, N);
        rally__topo_add_hd(&t[r]);
        assert_int_equal(rally__topo_add_hier(&t[r], host, work), want_hosts > 0);
        assert_int_equal(t[r].hier_hosts, want_hosts);
        assert_true(t[r].nneighbours <= RALLY__MAX_NEIGHBOURS);
    }
    if (want_hosts == 0)
        return;
    for (int r = 0; r < N; r++) {
        int lead = r;
        for (int q = 0; q < r; q++)
            if (host[q] == host[r] && q < lead)
                lead = q;
        assert_int_equal(t[r].hier_leader, lead);
        int up = -1, down = -1;
        for (int q = 0; q < N; q++) {
            if (host[q] == host[r] && q < r)
                up = q;
            if (host[q] == host[r] && q > r && down < 0)
                down = q;
        }
        assert_int_equal(t[r].hier_up, up);
        assert_int_equal(t[r].hier_down, down);
        if (lead == r) {
            assert_int_equal(t[t[r].hier_next].hier_prev, r);
            assert_int_equal(t[t[r].hier_next].hier_index, (t[r].hier_index + 1) % want_hosts);
        } else {
            assert_int_equal(t[r].hier_prev, -1);
            assert_int_equal(t[r].hier_index, t[lead].hier_index);
        }
        for (int i = 0; i < t[r].nneighbours; i++) {
            int q = t[r].neighbours[i], mutual = 0;
            for (int j = 0; j < t[q].nneighbours; j++)
                mutual |= t[q].neighbours[j] == r;
            assert_true(mutual);
        }
    }
}

static void topology_hier(void **state)
{
    (void)state;
    static const int block[] = {0, 0, 1, 1, 2, 2, 3, 3};
    static const int cyclic[] = {0, 1, 0, 1, 0, 1};
    static const int uneven[] = {2, 2, 2, 0, 1, 1, 3}; /* a host of one, ids in any order */
    static const int scattered[] = {1, 0, 1, 1, 0, 2, 2, 0, 1};
    static const int alone[] = {0, 1, 2, 3}; /* no host shared: no hierarchy */
    static const int one[] = {0, 0, 0, 0};   /* one host: none */
    hier_layout(block, 8, 4);
    hier_layout(cyclic, 6, 2);
    hier_layout(uneven, 7, 4);
    hier_layout(scattered, 9, 3);
    hier_layout(alone, 4, 0);
    hier_layout(one, 4, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(topology),
        cmocka_unit_test(placement),
        cmocka_unit_test(topology_hd),
        cmocka_unit_test(topology_hier),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
