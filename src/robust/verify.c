/*
 * verify.c — verified results (rally_verify_every = K): every K-th result of
 * a user's collective is digested on every rank, and the digest rides in the
 * sidecar of every signature this rank sends from then on (coll.h), until
 * the next verified result or the next commit.  Each link's two ends compare
 * their sidecars in the next collective, so a rank whose bits differ from
 * its neighbours' (a flipped bit in transit, a bad DIMM, a reducer that is
 * not deterministic) stops the job within K calls, with RALLY_EMISMATCH
 * naming it and the call.
 *
 * Which results are verified follows from a job-wide count of user
 * collectives (bootstrap ones included), the same on every rank: a
 * restarted worker counts the results it is served, and the count at a
 * commit travels in the acknowledgement (op.c), so one that was served a
 * checkpoint takes the job's count from there.  The digest is cleared at
 * every commit, where a restarted worker starts, so every rank sends the
 * same sidecar at every position, retries included.
 *
 * Off (K = 0), nothing is digested and every sidecar is 0.
 */
#include <stdio.h>

#include "robust/robust.h"
#include "tracker/proto.h"
#include "util/digest.h"

/* The coll layer's hook: once per link per collective, after the peer's
 * signature matched. */
void rally__robust_on_sidecar(void *arg, int peer, uint64_t mine, uint64_t theirs)
{
    struct rally__robust *rb = arg;
    if (mine == 0 && theirs == 0)
        return; /* a collective that carries no digest (recovery's, a second step's) */
    rb->vfy.links++;
    if (mine == theirs)
        return;
    if (rb->vfy.bad++ == 0) {
        rb->vfy.peer = peer;
        rb->vfy.theirs = theirs;
    }
}

/* The acknowledgement's sidecar carries none: a worker that was served the
 * checkpoint runs it with the others and cannot know the digest; the
 * acknowledgement's payload carries it instead, as a pair that such a
 * worker leaves empty (op.c, rally__robust_verify_fail). */
void rally__robust_verify_begin(struct rally__robust *rb, struct rally__sig *sig)
{
    sig->sidecar = sig->kind == RALLY__K_ACK ? 0 : rb->vfy.digest;
    rb->vfy.links = rb->vfy.bad = 0;
}

/* After a collective this worker ran: names the rank whose result differs.
 * A rank that disagrees with every neighbour (two or more) is the odd one;
 * otherwise the neighbour it disagrees with is, unless that neighbour is
 * its only one: then either may be. */
int rally__robust_verify_check(struct rally__robust *rb)
{
    if (rb->vfy.bad == 0)
        return RALLY_OK;
    int self = rb->vfy.bad == rb->vfy.links && rb->vfy.links >= 2;
    char where[96], call[160], what[RALLY__ERR_MSG_MAX];
    rally__position_str(rb->vfy.key, where, sizeof where);
    rally__sig_str(&rb->vfy.sig, call, sizeof call);
    if (self)
        snprintf(what, sizeof what, "rank %d's result of %s (%s) differs from every neighbour's",
                 rb->rank, call, where);
    else if (rb->vfy.links >= 2)
        snprintf(what, sizeof what,
                 "rank %d's result of %s (%s) differs from rank %d's, which its other neighbours "
                 "share",
                 rb->vfy.peer, call, where, rb->rank);
    else
        snprintf(what, sizeof what,
                 "rank %d's and rank %d's results of %s (%s) differ (each is the other's only "
                 "neighbour, so either may be wrong)",
                 rb->rank, rb->vfy.peer, call, where);
    rally__fail(rb->err, RALLY_EMISMATCH,
                "rally_verify_every=%lld: %s: digest %016llx on rank %d, %016llx on rank %d; a "
                "rank computed or received other bits than the rest, so the job stops",
                (long long)rb->cfg->verify_every, what, (unsigned long long)rb->vfy.digest,
                rb->rank, (unsigned long long)rb->vfy.theirs, rb->vfy.peer);
    rally__robust_fatal(rb, RALLY_EMISMATCH, rb->err->msg);
    return RALLY_EMISMATCH;
}

/* The acknowledgement's verified pairs disagree: pairs[2r], pairs[2r + 1]
 * are rank r's ((0, 0): it does not know the digest). */
int rally__robust_verify_fail(struct rally__robust *rb, const uint64_t *pairs)
{
    char groups[RALLY__ERR_MSG_MAX], where[96] = "", call[224] = "the newest verified result";
    char odd[400];
    rally__digest_groups(groups, sizeof groups, pairs, rb->world);
    rally__digest_odd(odd, sizeof odd, "result", pairs, rb->world);
    if (rb->vfy.digest != 0) {
        char sig[120];
        rally__position_str(rb->vfy.key, where, sizeof where);
        rally__sig_str(&rb->vfy.sig, sig, sizeof sig);
        snprintf(call, sizeof call, "%s (%s)", sig, where);
    }
    return rally__fail(rb->err, RALLY_EMISMATCH,
                       "rally_verify_every=%lld: the ranks' results of %s differ: %s%s; a rank "
                       "computed or received other bits than the rest, so the job stops",
                       (long long)rb->cfg->verify_every, call, odd, groups);
}

/* A user's collective has its result (run or served): count it, and digest
 * every K-th (never 0, which means none). */
void rally__robust_verify_result(struct rally__robust *rb, const struct rally__op *op, uint64_t key,
                                 const unsigned char *res, uint64_t n)
{
    int64_t k = rb->cfg->verify_every;
    if (k <= 0 || op->sig.kind >= RALLY__K_AGREE)
        return;
    if (++rb->vfy.ncalls % (uint64_t)k != 0)
        return;
    rb->vfy.digest = rally_digest64(res, (size_t)n) | 1;
    rb->vfy.key = key;
    rb->vfy.sig = op->sig;
    rb->vfy.sig.sidecar = 0;
}

/* Version committed with the job's count (0: this worker's own stands). */
void rally__robust_verify_commit(struct rally__robust *rb, uint64_t ncalls)
{
    if (ncalls != 0)
        rb->vfy.ncalls = ncalls;
    rb->vfy.digest = 0;
}

uint64_t rally__robust_verify_ncalls(const struct rally__robust *rb)
{
    return rb->vfy.ncalls;
}

uint64_t rally__robust_verify_digest(const struct rally__robust *rb)
{
    return rb->vfy.digest;
}

void rally__robust_verify_forget(struct rally__robust *rb)
{
    rb->vfy.ncalls = 0;
    rb->vfy.digest = 0;
}

/* A collective's result as it arrives, before the caller or the cache sees
 * it: the mock's "flip" point flips one bit (librally_mock only), in byte
 * nbytes / 2; 1 when it did, so that a caller holding that byte in a
 * second buffer flips it there too. */
int rally__robust_arrived(struct rally__robust *rb, unsigned char *buf, size_t nbytes)
{
    if (nbytes == 0 || rb->mock.n == 0 ||
        !rally__mock_flip(&rb->mock, rb->rank, rally__robust_version(rb),
                          rally__robust_user_seq(rb), rally__robust_ndeath(rb)))
        return 0;
    buf[nbytes / 2] ^= 1;
    return 1;
}
