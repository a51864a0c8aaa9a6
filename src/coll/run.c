/*
 * run.c — a collective's run over its links (run.h): the channels and their
 * signatures, sends and receives that never block, the wait and its
 * deadline, and what a failure found here tells the others.
 *
 * Each link direction is a byte stream that opens with a 32-byte signature
 * (see coll.h); a struct rally__chan tracks one link's two directions.  An
 * algorithm's loop moves as many bytes as the links take without blocking,
 * and only when nothing moved waits (rally__settle) for a link, the alarm or
 * the deadline.
 */
#include "coll/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/clock.h"

_Static_assert(RALLY__MAX_NEIGHBOURS <= RALLY__WAIT_MAX, "a wait covers every link");

unsigned char *rally__coll_scratch(struct rally__comm *c, size_t n, struct rally__err *e)
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
struct rally__chan *rally__chan_of(struct rally__run *x, int peer)
{
    for (int i = 0; i < x->nch; i++)
        if (x->ch[i].l->peer == peer)
            return &x->ch[i];
    struct rally__link *l = rally__comm_link(x->c, peer);
    if (l == NULL)
        return NULL;
    struct rally__chan *ch = &x->ch[x->nch++];
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
void rally__run_start(struct rally__run *x, struct rally__comm *c, const struct rally__sig *sig)
{
    x->nch = 0; /* each channel is set when added (chan_of): no 2 KiB memset a call */
    x->c = c;
    x->sig = sig;
    x->e = c->err;
    x->deadline = 0;
    rally__sig_encode(x->sigbytes, sig, c->seq);
    for (int i = 0; i < c->nlinks; i++)
        for (int j = 0; j < c->topo.nbase; j++)
            if (c->topo.neighbours[j] == c->links[i].peer)
                rally__chan_of(x, c->links[i].peer);
}

/* A failure this rank found: tell the others (through the owner) and fail. */
static int found(struct rally__run *x, int code, const char *fmt, const char *a, const char *b)
{
    char msg[RALLY__ERR_MSG_MAX];
    snprintf(msg, sizeof msg, fmt, a, b);
    rally__fail(x->e, code, "%s", msg);
    if (x->c->report)
        x->c->report(x->c->hook_arg, code, x->e->msg);
    return code;
}

static int check_sig(struct rally__run *x, struct rally__chan *ch)
{
    uint64_t sidecar; /* decoded whole only to name a difference: each call has one a link */
    if (rally__sig_match(ch->in, x->sigbytes, &sidecar)) {
        if (x->c->on_sidecar != NULL)
            x->c->on_sidecar(x->c->hook_arg, ch->l->peer, x->sig->sidecar, sidecar);
        return RALLY_OK;
    }
    struct rally__sig s;
    uint32_t seq;
    if (rally__sig_decode(ch->in, &s, &seq) != 0)
        return found(x, RALLY_EPROTO, "%s sent bytes that are not a collective header%s",
                     ch->l->what, " (protocol error)");
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
static long link_failed(struct rally__run *x)
{
    if (x->e->code != RALLY_EPEER || rally__handle_is_none(&x->c->alarm) || x->c->on_alarm == NULL)
        return -1;
    int64_t deadline = rally__deadline(2000);
    struct rally__err ignored = {0, ""};
    int alarmed;
    while (rally__link_wait(NULL, 0, &x->c->alarm, 0, 0, deadline, &alarmed, &ignored) > 0 &&
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
long rally__chan_send(struct rally__run *x, struct rally__chan *ch, const void *payload, size_t n,
                      int *moved)
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
long rally__chan_recv(struct rally__run *x, struct rally__chan *ch, void *payload, size_t n,
                      int *moved)
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

long rally__chan_recv_whole(struct rally__run *x, struct rally__chan *ch, unsigned char *dst,
                            size_t n, size_t es, unsigned char *tail, size_t *tail_n, int *moved)
{
    size_t can = *tail_n == 0 && ch->in_done == RALLY__SIG_NBYTES
                     ? rally__round_down(ch->l->ops->readable(ch->l), es)
                     : 0;
    if (can > 0) /* there whole: a recv of no more moves exactly that */
        return rally__chan_recv(x, ch, dst, n < can ? n : can, moved);
    long m = rally__chan_recv(x, ch, tail + *tail_n, es - *tail_n, moved);
    if (m <= 0)
        return m;
    if ((*tail_n += (size_t)m) < es)
        return 0;
    memcpy(dst, tail, es);
    *tail_n = 0;
    return (long)es;
}

long rally__chan_peek(struct rally__run *x, struct rally__chan *ch, size_t n, size_t es,
                      const unsigned char **at, int *moved)
{
    if (!rally__sig_got(ch) && rally__chan_recv(x, ch, NULL, 0, moved) < 0)
        return -1;
    if (!rally__sig_got(ch))
        return 0;
    size_t can = rally__round_down(ch->l->ops->peek(ch->l, at), es);
    return (long)(n < can ? n : can);
}

void rally__chan_consume(struct rally__chan *ch, size_t n)
{
    ch->l->ops->consume(ch->l, n);
}

int rally__chan_peer_read(struct rally__run *x, struct rally__chan *ch, void *dst, uint64_t from,
                          size_t n)
{
    if (n > 0 && ch->l->ops->peer_read(ch->l, dst, from, n, x->e) < 0)
        return (int)link_failed(x);
    return 0;
}

/* Sends base[*done, limit) (the signature first) until the link would
 * block; -1 on failure. */
int rally__send_upto(struct rally__run *x, struct rally__chan *ch, const unsigned char *base,
                     size_t *done, size_t limit, int *moved)
{
    while (*done < limit || !rally__sig_sent(ch)) {
        long m = rally__chan_send(x, ch, base + *done, limit - *done, moved);
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
int rally__recv_upto(struct rally__run *x, struct rally__chan *ch, unsigned char *base,
                     size_t *done, size_t limit, int *moved)
{
    while (*done < limit || !rally__sig_got(ch)) {
        long m = rally__chan_recv(x, ch, base + *done, limit - *done, moved);
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
int rally__pump_sigs(struct rally__run *x, int *moved)
{
    int all = 1;
    for (int i = 0; i < x->nch; i++) {
        struct rally__chan *ch = &x->ch[i];
        if ((!rally__sig_sent(ch) && rally__chan_send(x, ch, NULL, 0, moved) < 0) ||
            (!rally__sig_got(ch) && rally__chan_recv(x, ch, NULL, 0, moved) < 0))
            return -1;
        all &= rally__sig_sent(ch) && rally__sig_got(ch);
    }
    return all;
}

/* Nothing moved: wait for a wanted event, the alarm, or the deadline. */
static int wait_any(struct rally__run *x)
{
    struct rally__interest w[RALLY__MAX_NEIGHBOURS];
    for (int i = 0; i < x->nch; i++) {
        w[i] = (struct rally__interest){x->ch[i].l, x->ch[i].want};
        x->ch[i].want = 0;
    }
    /* the silence is bounded from the first wait after progress, a turn
     * of the loop later than the progress: a call that never waits (most
     * small ones) reads no clock here */
    if (x->deadline == 0)
        x->deadline = rally__deadline_coarse(x->c->timeout_ms);
    int alarmed = 0;
    int k = rally__link_wait(w, x->nch, &x->c->alarm, x->c->spin_us, x->c->spin_alone_us,
                             x->deadline, &alarmed, x->e);
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
int rally__settle(struct rally__run *x, int moved)
{
    if (!moved)
        return wait_any(x);
    x->deadline = 0;
    return RALLY_OK;
}
