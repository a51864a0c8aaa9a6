/*
 * coll.c — tree, ring and halving-doubling allreduce, tree broadcast, ring
 * allgather.
 *
 * Every algorithm is one loop over the links it uses: move as many bytes as
 * the links take without blocking, reduce what has fully arrived, and only
 * when nothing moved wait in rally__link_wait() for a link (or the alarm).
 * Each link direction is a byte stream that opens with a 32-byte signature
 * (see coll.h); a struct chan tracks one link's two directions.
 *
 * The ring is one continuous stream of 2N-2 segments per direction (N-1 for
 * allgather): rank r sends segments r, r-1, r-2, ... (mod N) to r+1 and
 * receives segments r-1, r-2, ... from r-1.  The first N-1 received
 * segments are reduced (reduce-scatter: the partial sums into a small stage
 * ring while it has room, the last, final one into the buffer), the rest are
 * copied into the buffer (allgather); sent segment k is exactly received
 * segment k-1 once processed, so bytes flow onwards as soon as they are
 * reduced.
 *
 * Halving-doubling runs its steps one after another, each an exchange with
 * one partner that reduces the arriving half chunk by chunk.
 */
#include "coll/coll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/link.h"
#include "util/clock.h"
#include "util/wire.h"

#define SIG_MAGIC 0x4c4c4f43u /* "COLL" */
#define SEGMENTS_ON_STACK 64

_Static_assert(RALLY__MAX_NEIGHBOURS <= RALLY__WAIT_MAX, "a wait covers every link");

struct chan {
    struct rally__link *l;
    unsigned char out[RALLY__SIG_NBYTES], in[RALLY__SIG_NBYTES];
    size_t out_done, in_done;
    int want; /* RALLY__WANT_IN / _OUT after a would-block */
};

struct run {
    struct rally__comm *c;
    const struct rally__sig *sig;
    unsigned char sigbytes[RALLY__SIG_NBYTES];
    int nch;
    struct chan ch[RALLY__MAX_NEIGHBOURS];
    int64_t deadline;
    struct rally__err *e;
};

/* Every kind by the call a user made (or the step of recovery it is). */
static const char *kind_name(int k)
{
    switch (k) {
    case RALLY__C_ALLREDUCE: return "allreduce";
    case RALLY__C_ALLREDUCE_CUSTOM: return "allreduce_custom";
    case RALLY__C_BROADCAST:
    case RALLY__C_BROADCAST_DATA: return "broadcast";
    case RALLY__C_BROADCAST_SIZE: return "broadcast_alloc";
    case RALLY__C_ALLGATHER: return "allgather";
    case RALLY__C_ALLGATHERV_SIZES:
    case RALLY__C_ALLGATHERV_DATA: return "allgatherv";
    case RALLY__C_SHIFT: return "rally_checkpoint's local-model ring shift";
    case RALLY__K_AGREE: return "a recovery agreement round";
    case RALLY__K_HOLDER: return "a recovery's search for a holder";
    case RALLY__K_XFER_HEAD:
    case RALLY__K_XFER_DATA: return "a recovery transfer";
    case RALLY__K_ACK: return "rally_checkpoint (its acknowledgement)";
    case RALLY__K_FINAL: return "rally_finalize";
    case RALLY__K_REPLICATE: return "rally_checkpoint (its local models)";
    case RALLY__K_LOCAL_NEED: return "a recovery of local models";
    case RALLY__K_TURN: return "a checkpoint turn's agreement";
    case RALLY__K_RESHARD: return "moving local-model records to new owners";
    default: return NULL;
    }
}

const char *rally__kind_name(int kind)
{
    const char *s = kind_name(kind);
    return s != NULL ? s : "a collective";
}

void rally__sig_str(const struct rally__sig *s, char *out, size_t cap)
{
    switch (s->kind) {
    case RALLY__C_ALLREDUCE:
        snprintf(out, cap, "allreduce(count=%llu, %s, %s)", (unsigned long long)s->count,
                 rally__dtype_name(s->dtype), rally__op_name(s->op));
        break;
    case RALLY__C_ALLREDUCE_CUSTOM:
        snprintf(out, cap, "allreduce_custom(count=%llu, reducer %u, %u-byte elements)",
                 (unsigned long long)s->count, s->op, s->dtype);
        break;
    case RALLY__C_BROADCAST:
    case RALLY__C_BROADCAST_DATA:
        snprintf(out, cap, "broadcast(nbytes=%llu, root=%d)", (unsigned long long)s->count,
                 (int)s->root);
        break;
    case RALLY__C_BROADCAST_SIZE:
        snprintf(out, cap, "broadcast_alloc(root=%d)", (int)s->root);
        break;
    case RALLY__C_ALLGATHER:
        snprintf(out, cap, "allgather(nbytes=%llu)", (unsigned long long)s->count);
        break;
    case RALLY__K_FINAL:
        snprintf(out, cap, "rally_finalize");
        break;
    case RALLY__K_ACK:
    case RALLY__K_REPLICATE:
        snprintf(out, cap, "%s of version %llu", kind_name(s->kind),
                 (unsigned long long)s->count + (s->kind == RALLY__K_REPLICATE));
        break;
    default:
        if (kind_name(s->kind) != NULL)
            snprintf(out, cap, "%s (count %llu)", kind_name(s->kind),
                     (unsigned long long)s->count);
        else
            snprintf(out, cap, "a collective of unknown kind %u (count %llu)", s->kind,
                     (unsigned long long)s->count);
        break;
    }
}

void rally__sig_encode(unsigned char *p, const struct rally__sig *s, uint32_t seq)
{
    rally__put_u32(p, SIG_MAGIC);
    rally__put_u32(p + 4, seq);
    p[8] = s->kind;
    p[9] = s->dtype;
    p[10] = s->op;
    p[11] = 0;
    rally__put_u32(p + 12, (uint32_t)s->root);
    rally__put_u64(p + 16, s->count);
    rally__put_u64(p + 24, s->sidecar);
}

int rally__sig_decode(const unsigned char *p, struct rally__sig *s, uint32_t *seq)
{
    if (rally__get_u32(p) != SIG_MAGIC)
        return -1;
    *s = (struct rally__sig){p[8], p[9], p[10], (int32_t)rally__get_u32(p + 12),
                             rally__get_u64(p + 16), rally__get_u64(p + 24)};
    *seq = rally__get_u32(p + 4);
    return 0;
}

void rally__comm_init(struct rally__comm *c, int rank, int world, struct rally__err *e)
{
    memset(c, 0, sizeof *c);
    rally__topo_build(&c->topo, rank, world);
    c->timeout_ms = 30 * 60 * 1000;
    c->ring_threshold = 256 << 10;
    c->chunk = 256 << 10;
    c->alarm = rally__handle_none();
    c->err = e;
}

void rally__comm_free(struct rally__comm *c)
{
    free(c->scratch);
    c->scratch = NULL;
    c->scratch_nbytes = 0;
}

struct rally__link *rally__comm_link(struct rally__comm *c, int peer)
{
    for (int i = 0; i < c->nlinks; i++)
        if (c->links[i].peer == peer)
            return &c->links[i];
    return NULL;
}

static unsigned char *scratch(struct rally__comm *c, size_t n, struct rally__err *e)
{
    if (c->scratch_nbytes < n) {
        unsigned char *p = realloc(c->scratch, n);
        if (p == NULL) {
            rally__fail(e, RALLY_ENOMEM, "out of memory for a %zu-byte collective buffer", n);
            return NULL;
        }
        c->scratch = p;
        c->scratch_nbytes = n;
    }
    return c->scratch;
}

/* Returns the channel for peer, adding it on first use. */
static struct chan *chan_of(struct run *x, int peer)
{
    for (int i = 0; i < x->nch; i++)
        if (x->ch[i].l->peer == peer)
            return &x->ch[i];
    struct rally__link *l = rally__comm_link(x->c, peer);
    if (l == NULL)
        return NULL;
    struct chan *ch = &x->ch[x->nch++];
    memset(ch, 0, sizeof *ch);
    ch->l = l;
    memcpy(ch->out, x->sigbytes, sizeof ch->out);
    return ch;
}

/* Every collective opens every tree and ring link, both ways, with the
 * signature: that graph is connected, so any disagreement between ranks is
 * seen at once by some rank, whichever links the algorithm then uses.  A
 * halving-doubling partner's link is opened only by the collectives that
 * use it (chan_of on first use), so it costs the others nothing. */
static void run_start(struct run *x, struct rally__comm *c, const struct rally__sig *sig)
{
    memset(x, 0, sizeof *x);
    x->c = c;
    x->sig = sig;
    x->e = c->err;
    x->deadline = rally__deadline(c->timeout_ms);
    rally__sig_encode(x->sigbytes, sig, c->seq);
    for (int i = 0; i < c->nlinks; i++)
        for (int j = 0; j < c->topo.nbase; j++)
            if (c->topo.neighbours[j] == c->links[i].peer)
                chan_of(x, c->links[i].peer);
}

/* A failure this rank found: tell the others (through the owner) and fail. */
static int found(struct run *x, int code, const char *fmt, const char *a, const char *b)
{
    char msg[RALLY__ERR_MSG_MAX];
    snprintf(msg, sizeof msg, fmt, a, b);
    rally__fail(x->e, code, "%s", msg);
    if (x->c->report)
        x->c->report(x->c->hook_arg, code, x->e->msg);
    return code;
}

static int check_sig(struct run *x, struct chan *ch)
{
    struct rally__sig s;
    uint32_t seq;
    if (rally__sig_decode(ch->in, &s, &seq) != 0)
        return found(x, RALLY_EPROTO, "%s sent bytes that are not a collective header%s",
                     ch->l->what, " (protocol error)");
    if (memcmp(ch->in + 4, x->sigbytes + 4, 20) == 0) { /* all but magic and sidecar */
        if (x->c->on_sidecar != NULL)
            x->c->on_sidecar(x->c->hook_arg, ch->l->peer, x->sig->sidecar, s.sidecar);
        return RALLY_OK;
    }
    char mine[160], theirs[160];
    rally__sig_str(x->sig, mine, sizeof mine);
    rally__sig_str(&s, theirs, sizeof theirs);
    char msg[RALLY__ERR_MSG_MAX];
    snprintf(msg, sizeof msg,
             "collectives differ between ranks: rank %d called %s as collective #%u, but %.24s "
             "called %s as collective #%u",
             x->c->topo.rank, mine, (unsigned)x->c->seq, ch->l->what, theirs, (unsigned)seq);
    return found(x, RALLY_EMISMATCH, "%s%s", msg, "");
}

/* A link failed (EPEER).  Often a peer left because the job already failed
 * elsewhere: give the owner's alarm line a moment to deliver that verdict,
 * which names the root cause, and report it instead. */
static long link_failed(struct run *x)
{
    if (x->e->code != RALLY_EPEER || rally__handle_is_none(&x->c->alarm) || x->c->on_alarm == NULL)
        return -1;
    int64_t deadline = rally__deadline(2000);
    struct rally__err ignored = {0, ""};
    int alarmed;
    while (rally__link_wait(NULL, 0, &x->c->alarm, 0, deadline, &alarmed, &ignored) > 0 &&
           alarmed) {
        struct rally__err v = {0, ""};
        int rc = x->c->on_alarm(x->c->hook_arg, &v);
        if (rc != RALLY_OK) {
            rally__fail_over(x->e, rc, "%s", v.msg);
            break;
        }
    }
    return -1;
}

/* Sends what is left of the signature and then payload[0..n), in one
 * system call: a small message leaves as one segment.  Returns the payload
 * bytes sent (>= 0) or -1; *moved is set when anything moved. */
static long chan_send(struct run *x, struct chan *ch, const void *payload, size_t n, int *moved)
{
    size_t left = RALLY__SIG_NBYTES - ch->out_done;
    if (left == 0 && n == 0)
        return 0;
    long k = rally__link_send(ch->l, ch->out + ch->out_done, left, payload, n, x->e);
    if (k < 0)
        return link_failed(x);
    *moved |= k > 0;
    if (k == 0 || (size_t)k < left) {
        ch->out_done += (size_t)k;
        ch->want |= RALLY__WANT_OUT;
        return 0;
    }
    ch->out_done = RALLY__SIG_NBYTES;
    return k - (long)left;
}

/* Receives what is left of the signature and then into payload[0..n), in
 * one system call.  The payload is trusted only once the signature checks
 * (on a mismatch the call fails anyway). */
static long chan_recv(struct run *x, struct chan *ch, void *payload, size_t n, int *moved)
{
    size_t left = RALLY__SIG_NBYTES - ch->in_done;
    if (left == 0 && n == 0)
        return 0;
    long k = rally__link_recv(ch->l, ch->in + ch->in_done, left, payload, n, x->e);
    if (k < 0)
        return link_failed(x);
    *moved |= k > 0;
    if (k == 0 || (size_t)k < left) {
        ch->in_done += (size_t)k;
        ch->want |= RALLY__WANT_IN;
        return 0;
    }
    ch->in_done = RALLY__SIG_NBYTES;
    if (left > 0 && check_sig(x, ch) != RALLY_OK)
        return -1;
    return k - (long)left;
}

static int sig_sent(const struct chan *ch)
{
    return ch->out_done == RALLY__SIG_NBYTES;
}
static int sig_got(const struct chan *ch)
{
    return ch->in_done == RALLY__SIG_NBYTES;
}

/* Sends base[*done, limit) (the signature first) until the link would
 * block; -1 on failure. */
static int send_upto(struct run *x, struct chan *ch, const unsigned char *base, size_t *done,
                     size_t limit, int *moved)
{
    while (*done < limit || !sig_sent(ch)) {
        long m = chan_send(x, ch, base + *done, limit - *done, moved);
        if (m < 0)
            return -1;
        if (m == 0)
            break;
        *done += (size_t)m;
    }
    return 0;
}

/* Receives into base[*done, limit) (the signature first) until the link
 * would block; -1 on failure. */
static int recv_upto(struct run *x, struct chan *ch, unsigned char *base, size_t *done,
                     size_t limit, int *moved)
{
    while (*done < limit || !sig_got(ch)) {
        long m = chan_recv(x, ch, base + *done, limit - *done, moved);
        if (m < 0)
            return -1;
        if (m == 0)
            break;
        *done += (size_t)m;
    }
    return 0;
}

/* Moves the signatures on every link; returns 1 when all are through, 0 when
 * some are pending, -1 on error. */
static int pump_sigs(struct run *x, int *moved)
{
    int all = 1;
    for (int i = 0; i < x->nch; i++) {
        struct chan *ch = &x->ch[i];
        if ((!sig_sent(ch) && chan_send(x, ch, NULL, 0, moved) < 0) ||
            (!sig_got(ch) && chan_recv(x, ch, NULL, 0, moved) < 0))
            return -1;
        all &= sig_sent(ch) && sig_got(ch);
    }
    return all;
}

/* Nothing moved: wait for a wanted event, the alarm, or the deadline. */
static int wait_any(struct run *x)
{
    struct rally__interest w[RALLY__MAX_NEIGHBOURS];
    for (int i = 0; i < x->nch; i++) {
        w[i] = (struct rally__interest){x->ch[i].l, x->ch[i].want};
        x->ch[i].want = 0;
    }
    int alarmed = 0;
    int k = rally__link_wait(w, x->nch, &x->c->alarm, x->c->spin_us, x->deadline, &alarmed, x->e);
    if (k < 0)
        return x->e->code;
    if (k == 0) { /* named: the peers whose bytes, or room, this rank waited for */
        char s[160], who[96] = "", t[160];
        rally__sig_str(x->sig, s, sizeof s);
        size_t len = 0;
        int nwho = 0;
        for (int i = 0; i < x->nch && len < sizeof who - 16; i++)
            if (w[i].want)
                len += (size_t)snprintf(who + len, sizeof who - len, "%s%d", nwho++ ? ", " : "",
                                        x->ch[i].l->peer);
        snprintf(t, sizeof t, "%lld ms (rally_timeout_ms): waiting for rank%s %s",
                 (long long)x->c->timeout_ms, nwho == 1 ? "" : "s", nwho ? who : "(none)");
        return found(x, RALLY_ETIMEDOUT, "%s made no progress for %s", s, t);
    }
    if (alarmed && x->c->on_alarm != NULL) {
        int rc = x->c->on_alarm(x->c->hook_arg, x->e);
        if (rc != RALLY_OK)
            return rc;
    }
    return RALLY_OK;
}

/* The end of a loop's turn: after progress the deadline moves (it bounds
 * silence, not the whole call); without any, wait for some. */
static int settle(struct run *x, int moved)
{
    if (!moved)
        return wait_any(x);
    x->deadline = rally__deadline(x->c->timeout_ms);
    return RALLY_OK;
}

static size_t round_down(size_t v, size_t m)
{
    return v - v % m;
}

/* --- tree allreduce ------------------------------------------------------- */

struct child {
    struct chan *ch;
    unsigned char *ring; /* rcap bytes */
    size_t got;          /* payload bytes received */
    size_t sent;         /* result bytes sent down */
};

static int tree_allreduce(struct rally__comm *c, const unsigned char *in, unsigned char *buf,
                          size_t total, const struct rally__reducer *rd,
                          const struct rally__sig *sig)
{
    struct run x;
    run_start(&x, c, sig);
    const struct rally__topo *t = &c->topo;
    size_t es = rd->elem_nbytes;
    size_t chunk = c->chunk < es ? es : round_down(c->chunk, es);
    size_t rcap = total < 2 * chunk ? total : 2 * chunk;
    struct child kids[RALLY__MAX_CHILDREN];
    int nk = t->nchildren;
    unsigned char *space = NULL;
    if (nk > 0 && rcap > 0 && (space = scratch(c, (size_t)nk * rcap, x.e)) == NULL)
        return x.e->code;
    for (int i = 0; i < nk; i++) {
        kids[i].ch = chan_of(&x, t->children[i]);
        kids[i].ring = space ? space + (size_t)i * rcap : NULL;
        kids[i].got = kids[i].sent = 0;
        if (kids[i].ch == NULL)
            return rally__fail(x.e, RALLY_ESTATE, "no link to child rank %d", t->children[i]);
    }
    struct chan *up = t->parent >= 0 ? chan_of(&x, t->parent) : NULL;
    if (t->parent >= 0 && up == NULL)
        return rally__fail(x.e, RALLY_ESTATE, "no link to parent rank %d", t->parent);

    size_t reduced = nk == 0 ? total : 0, up_sent = 0, down_got = 0;
    for (;;) {
        int moved = 0;
        /* children -> ring buffers */
        for (int i = 0; i < nk; i++) {
            struct child *k = &kids[i];
            size_t limit = reduced + rcap < total ? reduced + rcap : total;
            while (k->got < limit || !sig_got(k->ch)) {
                size_t pos = rcap ? k->got % rcap : 0;
                size_t n = limit - k->got;
                if (n > rcap - pos)
                    n = rcap - pos;
                long m = chan_recv(&x, k->ch, k->ring + pos, n, &moved);
                if (m < 0)
                    return x.e->code;
                if (m == 0)
                    break;
                k->got += (size_t)m;
            }
        }
        /* reduce what every child has delivered, own value first, children in rank order */
        if (nk > 0) {
            size_t avail = total;
            for (int i = 0; i < nk; i++)
                if (kids[i].got < avail)
                    avail = kids[i].got;
            avail = round_down(avail, es);
            if (avail > reduced && (avail - reduced >= chunk || avail == total)) {
                for (int i = 0; i < nk; i++) {
                    size_t p = reduced;
                    while (p < avail) {
                        size_t pos = p % rcap, n = avail - p;
                        if (n > rcap - pos)
                            n = rcap - pos;
                        /* own value first: out = in (+) child 0, then (+)= child 1 */
                        if (i == 0)
                            rally__reduce3(rd, buf + p, in + p, kids[i].ring + pos, n / es);
                        else
                            rally__reduce(rd, buf + p, kids[i].ring + pos, n / es);
                        p += n;
                    }
                }
                reduced = avail;
                moved = 1;
            }
        }
        /* reduced prefix -> parent; result <- parent */
        size_t final = reduced;
        if (up != NULL) {
            const unsigned char *src = nk == 0 ? in : buf; /* a leaf sends its input */
            if (send_upto(&x, up, src, &up_sent, reduced, &moved) < 0 ||
                recv_upto(&x, up, buf, &down_got, total, &moved) < 0)
                return x.e->code;
            final = down_got;
        }
        /* result -> children */
        int sigs = pump_sigs(&x, &moved);
        if (sigs < 0)
            return x.e->code;
        int done = sigs && final == total && (up == NULL || up_sent == total);
        for (int i = 0; i < nk; i++) {
            struct child *k = &kids[i];
            if (send_upto(&x, k->ch, buf, &k->sent, final, &moved) < 0)
                return x.e->code;
            done &= k->sent == total;
        }
        if (done)
            return RALLY_OK;
        if (settle(&x, moved) != RALLY_OK)
            return x.e->code;
    }
}

/* --- ring ----------------------------------------------------------------- */

/* The partial sums of the reduce-scatter (received segments 0..nreduce-2,
 * which leave again as sent segments 1..nreduce-1) go to a stage ring the
 * size of the receive ring, where they are still in the CPU cache when they
 * are sent, instead of into buf, whose lines the allgather overwrites
 * anyway (an out-of-place call would read each of those lines from memory
 * twice).  The reduction must never wait for the stage (every rank could be
 * waiting for its successor), so a piece that does not fit goes to buf as
 * before: a FIFO of extents says, in stream order, where the unsent partial
 * bytes are. */
#define STAGE_EXTENTS 4

struct stage {
    unsigned char *ring;
    size_t cap;               /* bytes, a multiple of the element size */
    size_t put, got;          /* staged bytes written / sent */
    struct {
        size_t n;
        int staged;
    } q[STAGE_EXTENTS];
    int head, count;
};

/* Room for up to n staged bytes at st->put, contiguous (the caller rounds
 * it down to whole elements); 0 when a staged extent could not be queued. */
static size_t stage_room(const struct stage *st, size_t n)
{
    int last = (st->head + st->count + STAGE_EXTENTS - 1) % STAGE_EXTENTS;
    if (st->ring == NULL ||
        !((st->count > 0 && st->q[last].staged) || st->count < STAGE_EXTENTS - 1))
        return 0;
    size_t free_n = st->cap - (st->put - st->got), wrap = st->cap - st->put % st->cap;
    size_t m = free_n < wrap ? free_n : wrap;
    return m < n ? m : n;
}

/* Queues n partial bytes, staged or in buf.  A staged extent is queued only
 * after stage_room() said so, and a buf extent always fits: a full queue
 * ends with one (stage_room refuses the second-to-last slot to a staged
 * extent). */
static void stage_push(struct stage *st, size_t n, int staged)
{
    int last = (st->head + st->count + STAGE_EXTENTS - 1) % STAGE_EXTENTS;
    if (st->count > 0 && st->q[last].staged == staged) {
        st->q[last].n += n;
    } else {
        int at = (st->head + st->count) % STAGE_EXTENTS;
        st->q[at].n = n;
        st->q[at].staged = staged;
        st->count++;
    }
    if (staged)
        st->put += n;
}

/* Streams nseg segments around the ring; the first nreduce received ones are
 * reduced into buf with rd, the rest copied.  Segment s is buf[off[s],
 * off[s] + len[s]). */
static int ring_stream(struct rally__comm *c, const unsigned char *in, unsigned char *buf,
                       const size_t *off, const size_t *len, int nseg, int nreduce,
                       const struct rally__reducer *rd, const struct rally__sig *sig)
{
    struct run x;
    run_start(&x, c, sig);
    const struct rally__topo *t = &c->topo;
    int N = t->world, r = t->rank;
    struct chan *next = chan_of(&x, t->ring_next), *prev = chan_of(&x, t->ring_prev);
    if (next == NULL || prev == NULL)
        return rally__fail(x.e, RALLY_ESTATE, "no ring link");
    size_t es = rd ? rd->elem_nbytes : 1;
    size_t chunk = c->chunk < es ? es : round_down(c->chunk, es);
    size_t rcap = 4 * chunk;
    unsigned char *ring = NULL;
    struct stage st;
    memset(&st, 0, sizeof st);
    st.cap = rcap;
    if (nreduce > 0 && (ring = scratch(c, (nreduce > 1 ? 2 : 1) * rcap, x.e)) == NULL)
        return x.e->code;
    if (nreduce > 1)
        st.ring = ring + rcap;

#define SEG(k, shift) ((((r - (shift) - (k)) % N) + N) % N)
    int sk = 0, rk = 0, pk = 0;      /* send / receive / processed segment */
    size_t spos = 0, rpos = 0, ppos = 0; /* bytes within them */
    size_t rtotal = 0, ptotal = 0;   /* reduce-stream bytes received / processed */
    for (;;) {
        int moved = 0;
        /* send: segment 0 is ours; segment k is received segment k-1 once processed */
        while (sk < nseg || !sig_sent(next)) {
            size_t slen = sk < nseg ? len[SEG(sk, 0)] : 0;
            size_t avail = sk == 0 ? slen : pk > sk - 1 ? slen : pk == sk - 1 ? ppos : 0;
            if (sk >= nseg)
                avail = 0;
            const unsigned char *src = sk == 0 ? in : buf; /* our own segment: the input */
            src += (sk < nseg ? off[SEG(sk, 0)] : 0) + spos;
            size_t want = avail - spos;
            int partial = sk >= 1 && sk < nreduce && want > 0; /* the FIFO says where */
            if (partial) {
                if (want > st.q[st.head].n)
                    want = st.q[st.head].n;
                if (st.q[st.head].staged) {
                    size_t wrap = st.cap - st.got % st.cap;
                    src = st.ring + st.got % st.cap;
                    if (want > wrap)
                        want = wrap;
                }
            }
            long m = chan_send(&x, next, src, want, &moved);
            if (m < 0)
                return x.e->code;
            if (partial && m > 0) {
                if (st.q[st.head].staged)
                    st.got += (size_t)m;
                if ((st.q[st.head].n -= (size_t)m) == 0) {
                    st.head = (st.head + 1) % STAGE_EXTENTS;
                    st.count--;
                }
            }
            spos += (size_t)m;
            if (sk < nseg && spos == slen) {
                sk++;
                spos = 0;
                continue;
            }
            if (m == 0 || (size_t)m < want)
                break;
        }
        /* receive */
        while (rk < nseg || !sig_got(prev)) {
            size_t rlen = rk < nseg ? len[SEG(rk, 1)] : 0;
            unsigned char *dst;
            size_t n = rlen - rpos;
            if (rk < nreduce) {
                size_t pos = rtotal % rcap;
                if (n > rcap - (rtotal - ptotal))
                    n = rcap - (rtotal - ptotal);
                if (n > rcap - pos)
                    n = rcap - pos;
                dst = ring + pos;
            } else {
                dst = buf + (rk < nseg ? off[SEG(rk, 1)] : 0) + rpos;
            }
            long m = chan_recv(&x, prev, dst, n, &moved);
            if (m < 0)
                return x.e->code;
            rpos += (size_t)m;
            if (rk < nreduce)
                rtotal += (size_t)m;
            if (rk < nseg && rpos == rlen) {
                rk++;
                rpos = 0;
                continue;
            }
            if (m == 0)
                break;
        }
        /* process: reduce (own value on the left) or just account copies */
        while (pk < rk || (pk == rk && pk < nseg)) {
            size_t plen = len[SEG(pk, 1)];
            size_t have = pk < rk ? plen : rpos;
            if (pk >= nreduce) {
                ppos = have;
            } else {
                size_t n = round_down(have - ppos, es);
                if (n == 0 || (n < chunk && ppos + n < plen))
                    break;
                size_t p = 0;
                while (p < n) {
                    size_t pos = (ptotal + p) % rcap, m = n - p;
                    if (m > rcap - pos)
                        m = rcap - pos;
                    size_t at = off[SEG(pk, 1)] + ppos + p; /* out = own input (+) received */
                    size_t k = pk < nreduce - 1 ? round_down(stage_room(&st, m), es) : 0;
                    if (k > 0) { /* a partial sum, staged */
                        m = k;
                        rally__reduce3(rd, st.ring + st.put % st.cap, in + at, ring + pos,
                                       m / es);
                    } else {
                        rally__reduce3(rd, buf + at, in + at, ring + pos, m / es);
                    }
                    if (pk < nreduce - 1)
                        stage_push(&st, m, k > 0);
                    p += m;
                }
                ppos += n;
                ptotal += n;
                moved = 1;
            }
            if (ppos < plen)
                break;
            pk++;
            ppos = 0;
        }
        int sigs = pump_sigs(&x, &moved);
        if (sigs < 0)
            return x.e->code;
        if (sigs && sk == nseg && pk == nseg)
            return RALLY_OK;
        if (settle(&x, moved) != RALLY_OK)
            return x.e->code;
    }
#undef SEG
}

/* --- recursive halving-doubling -------------------------------------------- */

/* The reduction a halving step does as the partner's half arrives:
 * out = a (+) b, where out is a or neither. */
struct fold {
    unsigned char *out;
    const unsigned char *a, *b;
    size_t done; /* bytes reduced */
};

static void fold_some(const struct rally__reducer *rd, struct fold *f, size_t upto)
{
    size_t at = f->done;
    rally__reduce3(rd, f->out + at, f->a + at, f->b + at, (upto - at) / rd->elem_nbytes);
    f->done = upto;
}

/* Sends src[0..sn) and receives dst[0..rn) on ch at the same time (either
 * may be empty); with f, arrived whole elements are folded chunk by chunk. */
static int exchange(struct run *x, struct chan *ch, const unsigned char *src, size_t sn,
                    unsigned char *dst, size_t rn, const struct rally__reducer *rd, struct fold *f)
{
    size_t es = rd->elem_nbytes;
    size_t chunk = x->c->chunk < es ? es : round_down(x->c->chunk, es);
    size_t sent = 0, got = 0;
    for (;;) {
        int moved = 0;
        if (send_upto(x, ch, src, &sent, sn, &moved) < 0 ||
            recv_upto(x, ch, dst, &got, rn, &moved) < 0 || pump_sigs(x, &moved) < 0)
            return -1;
        if (f != NULL) {
            size_t a = round_down(got, es);
            if (a > f->done && (a - f->done >= chunk || a == rn)) {
                fold_some(rd, f, a);
                moved = 1;
            }
        }
        if (sent == sn && got == rn && sig_sent(ch) && sig_got(ch) && (f == NULL || f->done == rn))
            return 0;
        if (settle(x, moved) != RALLY_OK)
            return -1;
    }
}

/* Byte offset of the start of segment s of p. */
static size_t hd_at(size_t count, size_t es, int s, int p)
{
    return count * (size_t)s / (size_t)p * es;
}

/* Waits until every opened link's signature is through, both ways. */
static int sigs_done(struct run *x)
{
    for (;;) {
        int moved = 0, all = pump_sigs(x, &moved);
        if (all < 0)
            return x->e->code;
        if (all)
            return RALLY_OK;
        if (settle(x, moved) != RALLY_OK)
            return x->e->code;
    }
}

/* Recursive halving-doubling (docs/determinism.md has the order): fold the
 * extra ranks in, halve, double, hand the result to the folded ranks. */
static int hd_allreduce(struct rally__comm *c, const unsigned char *in, unsigned char *buf,
                        size_t count, const struct rally__reducer *rd, const struct rally__sig *sig)
{
    struct run x;
    run_start(&x, c, sig);
    const struct rally__topo *t = &c->topo;
    size_t es = rd->elem_nbytes, total = count * es;
    int p = t->hd_p, v = t->hd_vrank, r = t->rank;
    struct chan *ch;

    if (v < 0) { /* folded away: hand the input to r - 1, get the result back */
        if ((ch = chan_of(&x, r - 1)) == NULL)
            return rally__fail(x.e, RALLY_ESTATE, "no link to rank %d", r - 1);
        if (exchange(&x, ch, in, total, buf, 0, rd, NULL) < 0 ||
            exchange(&x, ch, in, 0, buf, total, rd, NULL) < 0)
            return x.e->code;
        return sigs_done(&x);
    }
    /* This rank's partial values live at cur (in, buf or the scratch space,
     * all at the same offsets); a step receives into another of them and
     * reduces in place there or into buf, so nothing is copied but the
     * final block. */
    const unsigned char *cur = in;
    struct chan *folded = NULL;
    unsigned char *space = scratch(c, total, x.e);
    if (space == NULL)
        return x.e->code;
    if (r < 2 * t->hd_extra) { /* absorb r + 1: y = x_r (+) x_(r+1) */
        if ((folded = chan_of(&x, r + 1)) == NULL)
            return rally__fail(x.e, RALLY_ESTATE, "no link to rank %d", r + 1);
        struct fold f = {buf, in, space, 0};
        if (exchange(&x, folded, in, 0, space, total, rd, &f) < 0)
            return x.e->code;
        cur = buf;
    }
    /* halving: keep the half my bit of d picks, the lower virtual rank's value on the left */
    int a = 0, b = p;
    for (int d = 1; d < p; d *= 2) {
        int peer = rally__topo_hd_real(t, v ^ d), mid = (a + b) / 2, low = (v & d) == 0;
        int ka = low ? a : mid, kb = low ? mid : b, sa = low ? mid : a, sb = low ? b : mid;
        if ((ch = chan_of(&x, peer)) == NULL)
            return rally__fail(x.e, RALLY_ESTATE, "no link to rank %d", peer);
        size_t k0 = hd_at(count, es, ka, p), k1 = hd_at(count, es, kb, p);
        size_t s0 = hd_at(count, es, sa, p), s1 = hd_at(count, es, sb, p);
        int writable = cur != in || in == buf;
        unsigned char *rx = cur == buf || (low && !writable) ? space : buf, *out;
        struct fold f;
        if (low && writable) /* cur (+)= arrived */
            out = (unsigned char *)cur, f = (struct fold){out + k0, cur + k0, rx + k0, 0};
        else if (low) /* buf = in (+) arrived */
            out = buf, f = (struct fold){buf + k0, cur + k0, rx + k0, 0};
        else /* arrived (+)= cur */
            out = rx, f = (struct fold){rx + k0, rx + k0, cur + k0, 0};
        if (exchange(&x, ch, cur + s0, s1 - s0, rx + k0, k1 - k0, rd, &f) < 0)
            return x.e->code;
        cur = out;
        a = ka;
        b = kb;
    }
    if (cur != buf) {
        size_t m0 = hd_at(count, es, a, p), m1 = hd_at(count, es, b, p);
        memcpy(buf + m0, cur + m0, m1 - m0);
    }
    /* doubling: trade what I hold for my partner's block of the same size */
    for (int d = p / 2; d >= 1; d /= 2) {
        int peer = rally__topo_hd_real(t, v ^ d), w = b - a;
        int pa = (v & d) == 0 ? b : a - w;
        if ((ch = chan_of(&x, peer)) == NULL)
            return rally__fail(x.e, RALLY_ESTATE, "no link to rank %d", peer);
        size_t m0 = hd_at(count, es, a, p), m1 = hd_at(count, es, b, p);
        size_t p0 = hd_at(count, es, pa, p), p1 = hd_at(count, es, pa + w, p);
        if (exchange(&x, ch, buf + m0, m1 - m0, buf + p0, p1 - p0, rd, NULL) < 0)
            return x.e->code;
        a = a < pa ? a : pa;
        b = a + 2 * w;
    }
    if (folded != NULL && exchange(&x, folded, buf, total, buf, 0, rd, NULL) < 0)
        return x.e->code;
    return sigs_done(&x);
}

/* --- entry points ---------------------------------------------------------- */

static int finish(struct rally__comm *c, int rc)
{
    c->seq++;
    return rc;
}

int rally__allreduce(struct rally__comm *c, const void *in, void *buf, size_t count,
                     const struct rally__reducer *rd, const struct rally__sig *sig)
{
    int N = c->topo.world;
    size_t total = count * rd->elem_nbytes;
    if (N == 1) {
        if (in != buf && total)
            memmove(buf, in, total);
        return finish(c, RALLY_OK);
    }
    if (total <= c->ring_threshold || !rd->commutative || count < (size_t)N)
        return finish(c, tree_allreduce(c, in, buf, total, rd, sig));
    if (c->topo.hd_p != 0 && total <= c->hd_threshold)
        return finish(c, hd_allreduce(c, in, buf, count, rd, sig));
    size_t off[SEGMENTS_ON_STACK] = {0}, len[SEGMENTS_ON_STACK] = {0};
    size_t *o = off, *l = len;
    if (N > SEGMENTS_ON_STACK) {
        o = malloc(2 * (size_t)N * sizeof *o);
        if (o == NULL)
            return finish(c, rally__fail(c->err, RALLY_ENOMEM, "out of memory"));
        l = o + N;
    }
    for (int s = 0; s < N; s++) {
        size_t a = count * (size_t)s / (size_t)N, b = count * (size_t)(s + 1) / (size_t)N;
        o[s] = a * rd->elem_nbytes;
        l[s] = (b - a) * rd->elem_nbytes;
    }
    int rc = ring_stream(c, in, buf, o, l, 2 * N - 2, N - 1, rd, sig);
    if (o != off)
        free(o);
    return finish(c, rc);
}

int rally__allgather(struct rally__comm *c, void *buf, const size_t *off, const size_t *nbytes,
                     const struct rally__sig *sig)
{
    if (c->topo.world == 1)
        return finish(c, RALLY_OK);
    return finish(c, ring_stream(c, buf, buf, off, nbytes, c->topo.world - 1, 0, NULL, sig));
}

int rally__broadcast(struct rally__comm *c, void *buf, size_t total, int root,
                     const struct rally__sig *sig)
{
    if (c->topo.world == 1)
        return finish(c, RALLY_OK);
    struct run x;
    run_start(&x, c, sig);
    const struct rally__topo *t = &c->topo;
    unsigned char *b = buf;
    int from = rally__topo_toward(t, root);
    struct chan *in = from >= 0 ? chan_of(&x, from) : NULL;
    struct chan *out[RALLY__MAX_CHILDREN + 1];
    size_t sent[RALLY__MAX_CHILDREN + 1] = {0};
    int nout = 0;
    int tree[RALLY__MAX_CHILDREN + 1] = {t->parent};
    for (int i = 0; i < t->nchildren; i++)
        tree[1 + i] = t->children[i];
    for (int i = 0; i <= t->nchildren; i++)
        if (tree[i] >= 0 && tree[i] != from && (out[nout] = chan_of(&x, tree[i])) != NULL)
            nout++;
    if ((from >= 0 && in == NULL) || nout < (t->parent >= 0) + t->nchildren - (from >= 0))
        return finish(c, rally__fail(x.e, RALLY_ESTATE, "broadcast: a tree link is missing"));
    size_t got = in ? 0 : total;
    for (;;) {
        int moved = 0;
        if (in && recv_upto(&x, in, b, &got, total, &moved) < 0)
            return finish(c, x.e->code);
        int sigs = pump_sigs(&x, &moved);
        if (sigs < 0)
            return finish(c, x.e->code);
        int done = sigs && got == total;
        for (int i = 0; i < nout; i++) {
            if (send_upto(&x, out[i], b, &sent[i], got, &moved) < 0)
                return finish(c, x.e->code);
            done &= sent[i] == total;
        }
        if (done)
            return finish(c, RALLY_OK);
        if (settle(&x, moved) != RALLY_OK)
            return finish(c, x.e->code);
    }
}

int rally__ring_shift(struct rally__comm *c, const void *send, size_t send_n, void *recv,
                      size_t recv_n, const struct rally__sig *sig)
{
    if (c->topo.world == 1) {
        if (send_n != recv_n)
            return finish(c, rally__fail(c->err, RALLY_EINVAL, "ring shift of 1: sizes differ"));
        if (send_n)
            memmove(recv, send, send_n);
        return finish(c, RALLY_OK);
    }
    struct run x;
    run_start(&x, c, sig);
    struct chan *next = chan_of(&x, c->topo.ring_next), *prev = chan_of(&x, c->topo.ring_prev);
    if (next == NULL || prev == NULL)
        return finish(c, rally__fail(x.e, RALLY_ESTATE, "no ring link"));
    const unsigned char *s = send;
    unsigned char *d = recv;
    size_t sent = 0, got = 0;
    for (;;) {
        int moved = 0;
        if (send_upto(&x, next, s, &sent, send_n, &moved) < 0 ||
            recv_upto(&x, prev, d, &got, recv_n, &moved) < 0)
            return finish(c, x.e->code);
        int sigs = pump_sigs(&x, &moved);
        if (sigs < 0)
            return finish(c, x.e->code);
        if (sigs && sent == send_n && got == recv_n)
            return finish(c, RALLY_OK);
        if (settle(&x, moved) != RALLY_OK)
            return finish(c, x.e->code);
    }
}
