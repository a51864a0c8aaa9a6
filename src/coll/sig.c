/*
 * sig.c — what every collective file shares and calls down into (coll.h):
 * the kinds of call, the 32-byte signature each link direction opens with,
 * and the comm (its links, by peer).  It calls nothing above it.
 */
#include "coll/coll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/wire.h"

#define SIG_MAGIC 0x4c4c4f43u /* "COLL" */

/* Every kind by the call a user made (or the step of recovery it is). */
static const char *kind_name(int k)
{
    switch (k) {
    case RALLY__C_ALLREDUCE:
        return "allreduce";
    case RALLY__C_ALLREDUCE_CUSTOM:
        return "allreduce_custom";
    case RALLY__C_BROADCAST:
    case RALLY__C_BROADCAST_DATA:
        return "broadcast";
    case RALLY__C_BROADCAST_SIZE:
        return "broadcast_alloc";
    case RALLY__C_ALLGATHER:
        return "allgather";
    case RALLY__C_ALLGATHERV_SIZES:
    case RALLY__C_ALLGATHERV_DATA:
        return "allgatherv";
    case RALLY__C_SHIFT:
        return "rally_checkpoint's local-model ring shift";
    case RALLY__K_AGREE:
        return "a recovery agreement round";
    case RALLY__K_HOLDER:
        return "a recovery's search for a holder";
    case RALLY__K_XFER_HEAD:
    case RALLY__K_XFER_DATA:
        return "a recovery transfer";
    case RALLY__K_ACK:
        return "rally_checkpoint (its acknowledgement)";
    case RALLY__K_FINAL:
        return "rally_finalize";
    case RALLY__K_REPLICATE:
        return "rally_checkpoint (its local models)";
    case RALLY__K_LOCAL_NEED:
        return "a recovery of local models";
    case RALLY__K_TURN:
        return "a checkpoint turn's agreement";
    case RALLY__K_RESHARD:
        return "moving local-model records to new owners";
    case RALLY__K_RETRY:
        return "an allreduce's retry (its final parts)";
    default:
        return NULL;
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
            snprintf(out, cap, "%s (count %llu)", kind_name(s->kind), (unsigned long long)s->count);
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
    *s = (struct rally__sig){p[8],
                             p[9],
                             p[10],
                             (int32_t)rally__get_u32(p + 12),
                             rally__get_u64(p + 16),
                             rally__get_u64(p + 24)};
    *seq = rally__get_u32(p + 4);
    return 0;
}

int rally__sig_match(const unsigned char *theirs, const unsigned char *mine, uint64_t *sidecar)
{
    if (memcmp(theirs, mine, 24) != 0)
        return 0;
    *sidecar = rally__get_u64(theirs + 24);
    return 1;
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
