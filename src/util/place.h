/*
 * place.h — where the copies go: the placement ring, an order of the ranks
 * in which neighbours sit in different failure domains wherever the sizes
 * allow (docs/recovery.md, "Failure domains").
 *
 * A rank's copies (its local model's k replicas, the pieces of a result
 * kept in part) go to the ranks that follow it in this order, not in rank
 * order: launchers fill a host's slots with consecutive ranks, so rank
 * order would put every copy on the machine that fails with it.
 *
 * The order deals the ranks out of their domains one at a time: each step
 * takes the next rank (in rank order) of the domain with the most ranks
 * left, never the domain of the step before while another has ranks left;
 * ties go to the domain dealt first (the ring closes from the last place
 * to the first), then to the domain whose first rank is lowest.  Hosts of equal size
 * come out round-robin (h0 h1 h2 h0 h1 h2 ...), and no two neighbours share
 * a domain whenever no domain holds more than half of the ranks.  Spread
 * over racks, each rack's ranks are first dealt out of its hosts, and then
 * the racks' sequences are dealt out the same way: neighbours differ in
 * rack where the sizes allow, and in host within a rack.
 *
 * The order depends on the domains alone, so every rank computes the same;
 * with one domain it is rank order, today's placement.  It moves copies
 * only: no result's bits depend on it.
 */
#ifndef RALLY_UTIL_PLACE_H
#define RALLY_UTIL_PLACE_H

/* The placement ring of world ranks into order[0..world): host[r] and
 * rack[r] (NULL: none) are domain ids in [0, world), equal: the same; with
 * by_rack, spread over racks first.  0, or -1 when out of memory. */
int rally__place_order(int world, const int *host, const int *rack, int by_rack, int *order);

/* How many of the world windows of len consecutive places (cyclic) lie
 * wholly in domain d (dom[r]: rank r's): the copies losing d takes.  A
 * local model with k replicas is the window of its rank's place and the k
 * after it (len k + 1); a result piece kept by c workers, a window of c. */
int rally__place_lost(int world, const int *order, const int *dom, int d, int len);

#endif
