/*
 * shard.h — the trainers' word on the shard a worker read: one line naming
 * it, and its partitioning and fingerprint registered for durable snapshots
 * (a resume over other data is refused: rally_set_input).
 */
#ifndef RALLY_EXAMPLES_SHARD_H
#define RALLY_EXAMPLES_SHARD_H

#include <inttypes.h>
#include <unistd.h>

#include <rally/data.h>
#include <rally/rally.h>

#include "say.h"

/* Prints "shard R fingerprint F rows N pid P" and registers the input with
 * r.  Returns rally_set_input's status. */
static inline int ex_shard(rally_t *r, const rally_dataset_t *ds, int rank)
{
    char fp[17];
    rally_data_fingerprint(ds, fp, sizeof fp);
    ex_say("shard %d fingerprint %s rows %" PRIu64 " pid %ld\n", rank, fp,
           rally_data_num_rows(ds), (long)getpid());
    return rally_set_input(r, rally_data_partition(ds), fp);
}

#endif
