/*
 * xfer.c — recovery's transfers (robust.h): a head broadcast from the root
 * (the signature of what is sent, its size, how it is kept), then the
 * bytes; a checkpoint goes from every worker that holds it, so that it
 * crosses only the links into the workers without it.
 */
#include <stdlib.h>

#include "robust/robust.h"
#include "util/wire.h"

/* A transfer's head, broadcast from root: sig itself, in its wire form,
 * its sidecar carrying the bytes, then how many workers keep each piece of
 * the result (0: the root holds all of it, docs/recovery.md, "Results kept
 * in part") and the XOR sets' size beside them (0: none). */
int rally__robust_xfer_head(struct rally__robust *rb, int root, struct rally__sig *sig,
                            uint64_t *nbytes, uint32_t *copies, uint32_t *xor_g)
{
    unsigned char b[RALLY__SIG_NBYTES + 8];
    struct rally__sig sent = *sig;
    sent.sidecar = *nbytes;
    rally__sig_encode(b, &sent, 0);
    rally__put_u32(b + RALLY__SIG_NBYTES, *copies);
    rally__put_u32(b + RALLY__SIG_NBYTES + 4, *xor_g);
    struct rally__sig hs = {RALLY__K_XFER_HEAD, 0, 0, root, sizeof b, 0};
    int rc = rally__broadcast(&rb->comm, b, sizeof b, root, &hs);
    if (rc != RALLY_OK)
        return rc;
    uint32_t unused;
    if (rally__sig_decode(b, sig, &unused) != 0)
        return rally__fail(rb->err, RALLY_EPROTO, "a recovery transfer began with a bad header");
    *nbytes = sig->sidecar;
    *copies = rally__get_u32(b + RALLY__SIG_NBYTES);
    *xor_g = rally__get_u32(b + RALLY__SIG_NBYTES + 4);
    sig->sidecar = 0;
    return RALLY_OK;
}

/* A transfer's n bytes after its head, from root's data: every worker
 * takes part, and *out (a rally__robust_buf, or with cap a store buffer of
 * capacity *cap: a checkpoint the store keeps) receives the bytes on
 * workers that want them.  With cap every other worker receives into a
 * store buffer too, a spare it gives back: a checkpoint is big, and a
 * spare's pages are warm (after a membership change every worker takes
 * part, most holding it already).  With have (rally__broadcast_have) the
 * workers it names hold the bytes in data and only send. */
int rally__robust_xfer_body(struct rally__robust *rb, int root, const unsigned char *data,
                            uint64_t n, int want, unsigned char **out, uint64_t *out_nbytes,
                            uint64_t *cap, const unsigned char *have)
{
    uint64_t c = 0;
    int own = rb->rank == root || (have != NULL && have[rb->rank]);
    int store = cap != NULL && !own;
    unsigned char *buf = own     ? (unsigned char *)data
                         : store ? rally__robust_stake(rb, n, &c)
                                 : rally__robust_buf(rb, n);
    if (buf == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory for a %llu-byte recovery transfer",
                           (unsigned long long)n);
    struct rally__sig ds = {RALLY__K_XFER_DATA, 0, 0, root, n, 0};
    int rc = rally__broadcast_have(&rb->comm, buf, (size_t)n, root, have, &ds);
    if (own)
        return rc;
    if (rc == RALLY_OK && want) {
        *out = buf;
        *out_nbytes = n;
        if (store)
            *cap = c;
    } else if (store) {
        rally__robust_sgive(rb, buf, c);
    } else {
        rally__robust_unbuf(rb, buf);
    }
    return rc;
}

/* Broadcasts (sig, bytes) from root: the head, then the body. */
int rally__robust_xfer(struct rally__robust *rb, int root, struct rally__sig *sig,
                       const unsigned char *data, uint64_t nbytes, int want, unsigned char **out,
                       uint64_t *out_nbytes, uint64_t *cap)
{
    uint32_t copies = 0, xor_g = 0;
    uint64_t n = nbytes;
    int rc = rally__robust_xfer_head(rb, root, sig, &n, &copies, &xor_g);
    return rc != RALLY_OK
               ? rc
               : rally__robust_xfer_body(rb, root, data, n, want, out, out_nbytes, cap, NULL);
}

/* The global model of version v from root (data: its bytes there) to the
 * workers in load_checkpoint.  Every worker not loading that holds a copy
 * of v sends from it and receives nothing, so the bytes cross only the
 * tree links into the workers without them: at N = 4 a restarted rank's
 * 100 MiB went to all three survivors before (into fresh buffers: their
 * page faults and copies stood in the way of its own). */
int rally__robust_xfer_model(struct rally__robust *rb, int root, uint64_t v,
                             struct rally__sig *sig, const unsigned char *data, uint64_t nbytes,
                             int want, unsigned char **out, uint64_t *out_nbytes, uint64_t *cap)
{
    uint32_t copies = 0, xor_g = 0;
    uint64_t n = nbytes, held = 0;
    int rc = rally__robust_xfer_head(rb, root, sig, &n, &copies, &xor_g);
    if (rc != RALLY_OK)
        return rc;
    if (rb->rank != root) {
        data = !want && rally__robust_version(rb) == v ? rally__robust_global(rb, &held) : NULL;
        data = held == n ? data : NULL;
    }
    unsigned char *have = calloc((size_t)rb->world, 1);
    if (have == NULL)
        return rally__fail(rb->err, RALLY_ENOMEM, "out of memory for a recovery transfer");
    have[rb->rank] = data != NULL;
    struct rally__reducer mx;
    rally__reducer_builtin(&mx, RALLY_UINT8, RALLY_MAX);
    struct rally__sig hs = {RALLY__K_HOLDER, 0, 0, root, (uint64_t)rb->world, 0};
    rc = rally__allreduce(&rb->comm, have, have, (size_t)rb->world, &mx, &hs);
    if (rc == RALLY_OK)
        rc = rally__robust_xfer_body(rb, root, data, n, want, out, out_nbytes, cap, have);
    free(have);
    return rc;
}
