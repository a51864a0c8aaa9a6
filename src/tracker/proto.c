/*
 * proto.c — what both sides of the tracker protocol need beyond frame
 * layouts: positions in words.
 */
#include "tracker/proto.h"

#include <stdio.h>

void rally__position_str(uint64_t pos, char *s, size_t cap)
{
    unsigned phase = RALLY__KEY_PHASE(pos);
    uint64_t low = pos & ((UINT64_C(1) << 62) - 1);
    unsigned version = RALLY__KEY_VERSION(pos);
    uint32_t q = RALLY__KEY_Q(pos);
    if (phase == 0)
        snprintf(s, cap, "bootstrap op %llu", (unsigned long long)low);
    else if (phase == 1)
        snprintf(s, cap, "in load_checkpoint");
    else if (phase == 3)
        snprintf(s, cap, "in finalize");
    else if (q == 0)
        snprintf(s, cap, "version %u, checkpoint", version);
    else
        snprintf(s, cap, "version %u, seq %u", version, q - 1);
}
