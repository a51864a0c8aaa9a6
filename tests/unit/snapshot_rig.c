/*
 * snapshot_rig.c — the rig of the unit tests of durable snapshots
 * (snapshot_rig.h).
 */
#include "snapshot_rig.h"

const char *golden_dir;

int golden_args(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s GOLDEN_DIR\n", argv[0]);
        return 2;
    }
    golden_dir = argv[1];
    return 0;
}
