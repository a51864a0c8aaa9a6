/*
 * redundancy.c — whether the job survives losing one failure domain, a host
 * or a rack (run/run.h; docs/launch.md, "Failure domains").
 *
 * The layout is the one the workers will find: each rank's host (rally-run's
 * placement, by the host's name, or rally_host_group's groups of
 * consecutive ranks) and its rack (its host's label, else rally_domain); and
 * the settings that place the copies as rally-run sees them (run_setting:
 * the program's arguments, -x, its environment; else the library's
 * defaults).  launch/domains.h counts, on the placement ring, what losing
 * each domain would take (with rally_local_scheme=xor, of the parity
 * sets the workers cut: util/xor.h).  Results are kept in part only off
 * the hierarchy (docs/recovery.md, "Results kept in part"): across hosts
 * that share ranks, the hierarchy keeps them whole.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "launch/domains.h"
#include "run/run.h"
#include "util/config.h"
#include "util/xor.h"

struct run_redundancy {
    struct rally__watch_redundancy page; /* what the status page shows */
    struct rally__watch_domain *dom;     /* page.uncovered */
    char *said;                          /* the sentences as last said, one a line */
};

/* The settings that place the copies, as the workers will read them. */
struct placing {
    int64_t k, c, group; /* rally_local_replica, rally_result_copies, rally_host_group */
    int xor;             /* rally_local_scheme=xor */
    int result_xor;      /* rally_result_scheme=xor */
    int64_t xor_set;     /* rally_xor_set */
    int hier_off;        /* rally_hier=off */
    int spread;          /* rally_spread: 0 auto, 1 host, 2 rack */
    const char *domain;  /* rally_domain as given, or NULL */
    int domain_arg;      /* ... as the program's argument, which wins over the labels */
};

/* A number setting, or def when it is not given or not valid (the workers
 * refuse that one at their start, and say so). */
static int64_t number(const struct run *r, const char *name, int64_t lo, int64_t hi, int64_t def)
{
    char from[RALLY__STR_MAX + 32];
    const char *s = run_setting(r, name, from, sizeof from);
    int64_t v;
    return s != NULL && rally__parse_int(s, lo, hi, &v) == 0 ? v : def;
}

static void placing_of(const struct run *r, struct placing *p)
{
    struct rally__config c;
    rally__config_contact(&c); /* the library's defaults */
    char from[RALLY__STR_MAX + 32];
    p->k = number(r, "local_replica", 0, 7, c.local_replica);
    p->c = number(r, "result_copies", 0, 65536, c.result_copies);
    p->group = number(r, "host_group", 0, 65536, c.host_group);
    const char *sc = run_setting(r, "local_scheme", from, sizeof from);
    p->xor = sc != NULL ? strcmp(sc, "xor") == 0 : c.local_scheme == RALLY__LOCAL_XOR;
    sc = run_setting(r, "result_scheme", from, sizeof from);
    p->result_xor = sc != NULL ? strcmp(sc, "xor") == 0 : c.result_scheme == RALLY__LOCAL_XOR;
    p->xor_set = number(r, "xor_set", 0, RALLY__XOR_MAX, c.xor_set);
    const char *s = run_setting(r, "hier", from, sizeof from);
    p->hier_off = s != NULL ? strcmp(s, "off") == 0 : c.hier == RALLY__HIER_OFF;
    s = run_setting(r, "spread", from, sizeof from);
    p->spread = s == NULL ? 0 : strcmp(s, "host") == 0 ? 1 : strcmp(s, "rack") == 0 ? 2 : 0;
    p->domain = run_setting(r, "domain", from, sizeof from);
    p->domain_arg = p->domain != NULL && strncmp(from, "rally_", 6) == 0;
}

struct named {
    const char *s;
    int q;
};

static int by_name(const void *a, const void *b)
{
    const struct named *x = a, *y = b;
    int c = strcmp(x->s, y->s);
    return c != 0 ? c : (x->q > y->q) - (x->q < y->q);
}

/* ids[q]: the lowest rank whose name[] equals rank q's (so in [0, world),
 * as util/place.h wants); k is room for world. */
static void ids_of(int world, const char *const *name, struct named *k, int *ids)
{
    for (int q = 0; q < world; q++)
        k[q] = (struct named){name[q], q};
    qsort(k, (size_t)world, sizeof *k, by_name);
    for (int i = 0, first = 0; i < world; i++) {
        first = i > 0 && strcmp(k[i].s, k[i - 1].s) == 0 ? first : i;
        ids[k[i].q] = k[first].q;
    }
}

/* How many different ids; *shared: two ranks have one. */
static int count_ids(int world, const int *ids, int *shared)
{
    int n = 0;
    *shared = 0;
    for (int q = 0; q < world; q++) {
        n += ids[q] == q;
        *shared |= ids[q] != q;
    }
    return n;
}

/* The layout of the job's world ranks, rank q launched as slot[q]. */
struct layout {
    int world;
    int *host, *rack;   /* ids (util/place.h); rack NULL: no rack is named */
    const char **label; /* each rank's rack ("": none) */
    int nhosts, nracks;
};

/* 0, or -1 when out of memory. */
static int layout_of(const struct run *r, const struct placing *p, int world, const int *slot,
                     struct layout *L)
{
    int listed = remote(r) && r->host_of != NULL; /* else every rank runs here */
    L->world = world;
    L->host = malloc(2 * (size_t)world * sizeof *L->host);
    L->label = malloc((size_t)world * sizeof *L->label);
    const char **name = calloc((size_t)world, sizeof *name);
    struct named *k = malloc((size_t)world * sizeof *k);
    int any = 0, shared;
    if (L->host == NULL || L->label == NULL || name == NULL || k == NULL) {
        free(name);
        free(k);
        return -1;
    }
    for (int q = 0; q < world; q++) {
        const struct rally__launch_host *h = listed ? &r->hosts.h[r->host_of[slot[q]]] : NULL;
        name[q] = h ? h->name : ""; /* a host's name is the host, wherever it is listed */
        L->label[q] = p->domain_arg || !h || !h->label[0] ? (p->domain ? p->domain : "")
                                                          : h->label;
        any |= L->label[q][0] != '\0';
    }
    ids_of(world, name, k, L->host);
    for (int q = 0; q < world && p->group > 0; q++)
        L->host[q] = q / (int)p->group * (int)p->group;
    L->nhosts = count_ids(world, L->host, &shared);
    L->rack = NULL;
    if (any) { /* equal labels (the ranks without one are one rack, as the workers take them) */
        L->rack = L->host + world;
        ids_of(world, L->label, k, L->rack);
        L->nracks = count_ids(world, L->rack, &shared);
    }
    free(name);
    free(k);
    return 0;
}

/* "host h1", "the host of ranks 0-3" (rally_host_group) or "rack r1" for
 * the domain x into said; its name alone into name. */
static void domain_name(const struct run *r, const struct placing *p, const struct layout *L,
                        const int *slot, const struct rally__launch_lost *x, char *name,
                        size_t cap, char *said, size_t said_cap)
{
    int lo = x->domain, hi = lo;
    const int *ids = x->rack ? L->rack : L->host;
    for (int q = lo; q < L->world; q++)
        hi = ids[q] == x->domain ? q : hi;
    if (x->rack) {
        snprintf(name, cap, "%s", L->label[lo]);
        snprintf(said, said_cap, "rack %s", name);
    } else if (p->group > 0) {
        snprintf(name, cap, lo == hi ? "rank %d" : "ranks %d-%d", lo, hi);
        snprintf(said, said_cap, "the host of %s", name);
    } else {
        snprintf(name, cap, "%s", r->hosts.h[r->host_of[slot[lo]]].name);
        snprintf(said, said_cap, "host %s", name);
    }
}

/* One domain's sentence: what losing it would take, and what would cover
 * it.  With XOR parity (xg, the set size in force; 0: copies) the local
 * models' part names the first set it holds two members of. */
static void sentence(FILE *f, const char *who, const struct placing *p,
                     const struct rally__launch_lost *x, int world, int c, int xg, int pxg)
{
    int k = (int)p->k, copies = x->local > 0 && !xg; /* every copy of local models on it */
    fprintf(f, "losing %s (%d of %d ranks", who, x->ranks, world);
    if (p->group > 0 && !x->rack)
        fprintf(f, ", rally_host_group=%lld", (long long)p->group);
    fputs(") would lose ", f);
    if (x->local > 0)
        fprintf(f, "the local models of %d rank%s", x->local, x->local == 1 ? "" : "s");
    if (x->local > 0 && xg > 0) {
        fprintf(f, ": set %d has %d ranks on it", x->set, x->set_ranks);
        if (x->sets > 1)
            fprintf(f, " (and %d other set%s two or more)", x->sets - 1, x->sets == 2 ? "" : "s");
        fprintf(f, "; rally_local_scheme=xor covers one per set (rally_xor_set=%d)%s", xg,
                x->pieces > 0 ? ", and " : "");
    } else if (x->local > 0 && x->pieces > 0) {
        fputs(" and ", f);
    }
    if (x->pieces > 0)
        fprintf(f, "%d of the %d pieces of every result kept in part", x->pieces, world);
    if (x->pieces > 0 && pxg > 0) {
        if (xg == 0) /* the set is not said yet */
            fprintf(f, ": set %d has %d ranks on it", x->set, x->set_ranks);
        fprintf(f, "; rally_result_scheme=xor covers one per set (rally_xor_set=%d)", pxg);
    }
    if (!copies && (x->pieces == 0 || pxg > 0)) {
        fputc('\n', f);
        return;
    }
    fprintf(f, ": every copy of %s is on it (",
            (copies ? x->local : 0) + x->pieces == 1 ? "it" : "them");
    /* copies on run + 1 consecutive places cover it */
    if (copies && x->run <= 7 && x->run < world)
        fprintf(f, "rally_local_replica=%d: %d would cover it", k, x->run);
    else if (copies)
        fprintf(f, "rally_local_replica=%d: none up to 7 covers it, more hosts would", k);
    if (x->pieces > 0 && x->run + 1 < world)
        fprintf(f, "%srally_result_copies=%d: %d would", copies ? "; " : "", c, x->run + 1);
    else if (x->pieces > 0)
        fprintf(f, "%srally_result_copies=%d: 0 (results kept whole) would", copies ? "; " : "",
                c);
    fputs(")\n", f);
}

/* Looks at the job's world ranks (rank q launched as slot[q]): red->page
 * and *text (the sentences, malloc'd), *nhosts and *nracks (0: no rack is
 * named).  0, or -1 when out of memory. */
static int look(const struct run *r, struct run_redundancy *red, int world, const int *slot,
                char **text, int *nhosts, int *nracks)
{
    struct placing p;
    placing_of(r, &p);
    struct layout L = {0};
    struct rally__launch_lost *lost = malloc(2 * (size_t)world * sizeof *lost);
    struct rally__watch_domain *dom = realloc(red->dom, 2 * (size_t)world * sizeof *dom);
    size_t len = 0;
    FILE *f = NULL;
    int n = -1;
    if (dom != NULL)
        red->dom = dom;
    if (lost == NULL || dom == NULL || layout_of(r, &p, world, slot, &L) != 0 ||
        (f = open_memstream(text, &len)) == NULL)
        goto out;
    int shared;
    count_ids(world, L.host, &shared);
    int hier = !p.hier_off && world >= 3 && L.nhosts >= 2 && shared;
    int k = p.k < world - 1 ? (int)p.k : world - 1;
    int c = p.c > 0 && p.c < world && !hier ? (int)p.c : 0;
    int by_rack = L.rack != NULL && (p.spread == 2 || p.spread == 0);
    /* the set size the workers take: one member per domain of the level
     * the ring spreads over by default */
    int g = world >= 2 ? rally__xor_size((int)p.xor_set, world, by_rack ? L.nracks : L.nhosts) : 0;
    int xg = p.xor ? g : 0;
    /* results kept in part with parity: off the hierarchy, as copies are */
    int pxg = p.result_xor && !hier && g >= 2 ? g : 0;
    struct rally__launch_layout in = {world, L.host, L.rack, by_rack, k + 1, c, xg, pxg};
    n = rally__launch_uncovered(&in, lost);
    red->page = (struct rally__watch_redundancy){
        by_rack ? "rack" : "host", L.rack != NULL, xg ? 0 : (int)p.k, xg, c, 0, red->dom};
    for (int i = 0; i < n; i++) {
        const struct rally__launch_lost *x = &lost[i];
        if (x->rack && !L.label[x->domain][0])
            continue; /* the hosts without a rack: each is said as a host */
        struct rally__watch_domain *d = &red->dom[red->page.n++];
        char who[RALLY__LAUNCH_HOST_MAX + 64];
        domain_name(r, &p, &L, slot, x, d->name, sizeof d->name, who, sizeof who);
        d->level = x->rack ? "rack" : "host";
        d->ranks = x->ranks;
        d->lost_local = x->local;
        d->lost_pieces = x->pieces;
        sentence(f, who, &p, x, world, c, xg, pxg);
    }
    *nhosts = L.nhosts;
    *nracks = L.rack ? L.nracks : 0;
out:
    if (f != NULL && fclose(f) != 0)
        n = -1;
    free(lost);
    free(L.host);
    free(L.label);
    return n < 0 ? -1 : 0;
}

/* The sentences of text, each a line of stderr. */
static void say_all(const char *text)
{
    for (const char *s = text, *nl; *s; s = nl + 1) {
        nl = strchr(s, '\n');
        fprintf(stderr, "rally-run: %.*s\n", (int)(nl - s), s);
    }
}

int run_redundancy(struct run *r)
{
    int *slot = malloc((size_t)r->world * sizeof *slot), nhosts, nracks;
    char *text = NULL;
    r->red = calloc(1, sizeof *r->red);
    for (int q = 0; slot != NULL && q < r->world; q++)
        slot[q] = q;
    if (slot == NULL || r->red == NULL || look(r, r->red, r->world, slot, &text, &nhosts, &nracks)) {
        free(slot);
        free(text);
        fprintf(stderr, "rally-run: out of memory\n");
        return 1;
    }
    free(slot);
    say_all(text);
    r->red->said = text;
    if (!r->given['Z'])
        return 0;
    int rack = r->require_redundancy == 1, bad = 0;
    const char *what = rack ? "rack" : "host";
    if (rack && nracks == 0)
        return cli_usage_error("rally-run",
                               "--require-redundancy rack: no host has a rack; name them as "
                               "--hosts h1:4@rack1,h2:4@rack2 (or in --hostfile)");
    if ((rack ? nracks : nhosts) < 2)
        return cli_usage_error("rally-run",
                               "--require-redundancy %s: the job has one %s, and losing it loses "
                               "every copy; give it more %ss",
                               what, what, what);
    for (int i = 0; i < r->red->page.n; i++)
        bad += rack || strcmp(r->red->page.uncovered[i].level, "host") == 0;
    if (bad == 0)
        return 0;
    fprintf(stderr,
            "rally-run: --require-redundancy %s: not started: losing %s would lose copies "
            "(above)\n",
            what, bad == 1 ? (rack ? "that rack" : "that host") : "any of those");
    return 2;
}

void run_redundancy_again(struct run *r)
{
    r->redundancy_again = 0;
    int world = rally__tracker_world(r->t), n = rally__launch_policy_slots(r->pol), nh, nr;
    int *slot = malloc((size_t)world * sizeof *slot), placed = 0;
    char *text = NULL;
    for (int i = 0; slot != NULL && i < n; i++) {
        int q = run_rank_now(r, i);
        if (q >= 0 && q < world) {
            slot[q] = i;
            placed++;
        }
    }
    /* every rank held (not between a loss and its renumbering), and room */
    if (slot == NULL || placed != world || look(r, r->red, world, slot, &text, &nh, &nr) != 0 ||
        strcmp(text, r->red->said) == 0) {
        free(slot);
        free(text);
        return;
    }
    free(slot);
    if (!text[0])
        rally__launch_out_say(&r->out[1], "with %d workers now, losing any one host%s is covered",
                              world, r->red->page.racks ? " or rack" : "");
    for (const char *s = text, *nl; *s; s = nl + 1) {
        nl = strchr(s, '\n');
        rally__launch_out_say(&r->out[1], "with %d workers now, %.*s", world, (int)(nl - s), s);
    }
    free(r->red->said);
    r->red->said = text;
}

const struct rally__watch_redundancy *run_redundancy_watch(const struct run *r)
{
    return r->red != NULL && r->red->said != NULL ? &r->red->page : NULL;
}

void run_redundancy_free(struct run *r)
{
    if (r->red == NULL)
        return;
    free(r->red->dom);
    free(r->red->said);
    free(r->red);
    r->red = NULL;
}
