/*
 * domains.h — what losing one failure domain (a host, a rack) would take of
 * a job's copies in memory, with the copies where the workers put them: on
 * consecutive places of the placement ring (util/place.h).  rally-run says
 * it at the start and on its status page (docs/launch.md, "Failure
 * domains").  Pure: no processes, no output.
 *
 * A domain is covered when every local model and every piece of a result
 * kept in part has a copy outside it.  With XOR parity instead of copies
 * (rally_local_scheme=xor, util/xor.h) a local model is rebuilt from its
 * set's other members: a domain is covered when it holds at most one
 * member of each set.  The job survives losing it then (as
 * long as the ranks come back or the job may shrink); otherwise a job that
 * keeps such copies stops with "... are lost", and only a snapshot holds
 * them.
 */
#ifndef RALLY_TOOLS_LAUNCH_DOMAINS_H
#define RALLY_TOOLS_LAUNCH_DOMAINS_H

/* The job's layout and the redundancy in force. */
struct rally__launch_layout {
    int world;
    const int *host; /* host[r]: rank r's host, an id in [0, world) (equal: the same host) */
    const int *rack; /* rack[r], ids as host's; NULL: no racks */
    int by_rack;     /* the ring spreads over racks (rally_spread) */
    int local_len;   /* copies of a local model: rally_local_replica + 1 */
    int piece_len;   /* copies of a result piece: rally_result_copies; 0: none kept in part */
    int xor_g;       /* rally_local_scheme=xor: the set size in force (rally__xor_size),
                        local_len unused; 0: copies */
    int piece_xor_g; /* rally_result_scheme=xor: the same for pieces kept in part (any
                        piece_len > 0 then), piece_len unused; 0: copies */
};

/* One domain whose loss takes every copy of something. */
struct rally__launch_lost {
    int rack;        /* 1: a rack, 0: a host */
    int domain;      /* its id (the layout's) */
    int ranks;       /* its ranks */
    int local;       /* local models lost with it (of world) */
    int pieces;      /* pieces lost of each result kept in part (of world) */
    int run;         /* its longest run of consecutive places: copies on run + 1 places
                        cover it */
    int sets;        /* xor: the sets of which it holds two members or more */
    int set, set_ranks; /* ... the first of them (its index) and its members on it */
};

/* The uncovered domains into out (room for 2 * world): the hosts, then the
 * racks, each in the order of its lowest rank; a level with one domain is
 * left out (losing it is losing the job).  Their count, or -1 when out of
 * memory. */
int rally__launch_uncovered(const struct rally__launch_layout *in, struct rally__launch_lost *out);

#endif
