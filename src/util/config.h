/*
 * config.h — the engine's settings.
 *
 * Each setting has a key rally_<name>; its value comes from, in rising
 * priority: the default below, the environment variable RALLY_<NAME>, an
 * argument rally_<name>=value (the dmlc launchers' DMLC_TRACKER_URI,
 * DMLC_TRACKER_PORT, DMLC_TASK_ID and DMLC_NUM_ATTEMPT: variables below
 * RALLY_*, and arguments NAME=value, which rally_init consumes).
 * docs/config.md lists them all.
 */
#ifndef RALLY_UTIL_CONFIG_H
#define RALLY_UTIL_CONFIG_H

#include <stdint.h>

#include "util/err.h"

#define RALLY__STR_MAX 256
#define RALLY__LATE_MAX 1000 /* the longest rally_lateness_window */

/* rally_transport: what carries a link to a peer on the same host (peers on
 * other hosts always use TCP).  TCP is 0, what a zeroed option means. */
enum { RALLY__TRANSPORT_TCP = 0, RALLY__TRANSPORT_AUTO = 1, RALLY__TRANSPORT_SHM = 2 };

/* rally_hier: the hierarchical allreduce where the job's hosts allow it
 * (docs/determinism.md), or never. */
enum { RALLY__HIER_OFF = 0, RALLY__HIER_AUTO = 1 };

/* rally_spread: the failure-domain level the copies spread over
 * (util/place.h): racks when any rank names one (rally_domain), else
 * hosts; or hosts, or racks, always. */
enum { RALLY__SPREAD_AUTO = 0, RALLY__SPREAD_HOST = 1, RALLY__SPREAD_RACK = 2 };

/* rally_local_scheme: how local models survive a loss: k full copies on
 * the placement ring's next ranks, or XOR parity over sets of ranks
 * (util/xor.h, docs/recovery.md "Local models"); rally_result_scheme the
 * same for results kept in part (docs/recovery.md, "Results kept in
 * part"). */
enum { RALLY__LOCAL_COPIES = 0, RALLY__LOCAL_XOR = 1 };
/* rally_xor_set's largest value */
#define RALLY__XOR_MAX 16

/* rally_snapshot_busy: a snapshot still being written at the next
 * checkpoint: that checkpoint waits for it, or the job goes on and
 * snapshots asked for meanwhile are skipped. */
enum { RALLY__SNAP_BUSY_WAIT = 0, RALLY__SNAP_BUSY_SKIP = 1 };

struct rally__config {
    char tracker[RALLY__STR_MAX];     /* host:port; "" = no launcher, rank 0 of 1 */
    char secret_file[RALLY__STR_MAX]; /* the job's secret (see docs/protocol.md) */
    char task_id[RALLY__STR_MAX];     /* stable identity from the launcher */
    char interface[RALLY__STR_MAX];   /* peers reach this worker here: an interface name or
                                         an address; "" = the route to the tracker */
    /* the classic dmlc tracker (docs/protocol-dmlc.md), used when tracker is "" */
    char dmlc_tracker_uri[RALLY__STR_MAX]; /* DMLC_TRACKER_URI: its host */
    int64_t dmlc_tracker_port;             /* DMLC_TRACKER_PORT */
    int64_t dmlc_num_attempt;              /* DMLC_NUM_ATTEMPT: restarts before this one */
    int64_t connect_timeout_ms;            /* start-up: tracker, rendezvous, handshakes */
    int64_t timeout_ms;                    /* a collective making no progress this long fails */
    int64_t progress_timeout_ms;    /* dmlc tracker: how long a collective waits for a peer */
    int64_t ring_threshold_bytes;   /* allreduce above this many bytes uses the ring */
    int64_t hd_threshold_bytes;     /* ... up to here halving-doubling, when above ring's */
    int64_t rd_threshold_bytes;     /* up to here recursive doubling, N a power of two */
    int64_t chunk_bytes;            /* pipelining granularity */
    int64_t heartbeat_ms;           /* liveness beat to the tracker */
    int64_t link_timeout_ms;        /* a TCP link with nothing acknowledged this long fails */
    int64_t cache_max_bytes;        /* collective results kept for recovery */
    int64_t local_replica;          /* ring successors holding each local model */
    int64_t result_copies;          /* workers keeping each piece of a big result; 0 all */
    int64_t verify_every;           /* compare every K-th result across ranks; 0 off */
    int64_t lateness_window;        /* public collectives the straggler measure spans; 0 off */
    int64_t spin_us;                /* poll without sleeping before blocking */
    int64_t spin_alone_us;          /* ... that long when N <= cores on one host */
    int64_t sock_buf_bytes;         /* peer links' socket buffers; 0 kernel, -1 auto */
    int64_t transport;              /* RALLY__TRANSPORT_*: links to same-host peers */
    int64_t cma;                    /* 1: shm links read peers' buffers (process_vm_readv) */
    int64_t hier;                   /* RALLY__HIER_*: the hierarchical allreduce */
    int64_t host_group;             /* > 0: ranks r / K share a host (hierarchy, placement) */
    char domain[RALLY__STR_MAX];    /* this worker's rack (or zone): a failure domain; "" none */
    int64_t spread;                 /* RALLY__SPREAD_*: where the copies go */
    int64_t local_scheme;           /* RALLY__LOCAL_*: copies or XOR parity */
    int64_t result_scheme;          /* RALLY__LOCAL_*: a result's pieces, likewise */
    int64_t xor_set;                /* ranks per XOR set; 0: one per domain, 2..8 */
    char mock[RALLY__STR_MAX * 4];  /* kill points, ';'-separated (librally_mock) */
    char mock_sync[RALLY__STR_MAX]; /* where a group of kill points meets (librally_mock) */
    int64_t mock_deaths;            /* this rank's deaths in the job's earlier attempts */
    /* durable snapshots (docs/snapshot-format.md; src/snapjob/snapjob.c) */
    char snapshot_dir[RALLY__STR_MAX];  /* the snapshot root; "" = no snapshots */
    char snapshot_job[RALLY__STR_MAX];  /* the job's directory name under it; "" the program's */
    char snapshot_copy[RALLY__STR_MAX]; /* the second tier (a directory, s3://...); "" none */
    int64_t snapshot_every;             /* every this many versions; 0 = never */
    int64_t snapshot_every_ms;          /* every this many ms on rank 0's clock; 0 = never */
    int64_t snapshot_keep;              /* complete snapshots of this run kept */
    int64_t snapshot_required;          /* 1: a failed snapshot fails the job */
    int64_t snapshot_local;             /* 1: snapshot_dir is each host's own (not shared) */
    int64_t snapshot_final;             /* 1: snapshot the last version at finalize */
    int64_t snapshot_busy;              /* RALLY__SNAP_BUSY_*: a snapshot still being written */
    char run_id[RALLY__STR_MAX];        /* this run's UUID (rally-run sets it) */
    char run_started[RALLY__STR_MAX];   /* when it started, RFC 3339 UTC */
    char resume[RALLY__STR_MAX];        /* a snapshot directory to start from */
    int64_t resume_force;               /* 1: skip the overridable resume checks */
    /* without a launcher that owns the run (resume.c): */
    int64_t overwrite;      /* 1: start afresh beside older snapshots */
    int64_t keep_snapshots; /* 1: keep this run's snapshots after success */
    int64_t input_check;    /* 1: a restarted rank must read its predecessor's input */
    int64_t elastic;        /* 1: the job may go on with other workers (rally-run
                               --min-workers): the committed model is kept while the
                               next is acknowledged */
};

/* The i-th setting's key (with the rally_ prefix) and value as text, for a
 * snapshot's manifest; 0 when i is past the last setting. */
int rally__config_get(const struct rally__config *c, size_t i, char *key, size_t key_cap, char *val,
                      size_t val_cap);

/* Fills c with defaults, then the environment, then consumes rally_* arguments
 * from argv (argc/argv may be NULL).  Unknown rally_* keys are RALLY_ECONFIG. */
int rally__config_load(struct rally__config *c, int *argc, char ***argv, struct rally__err *e);

/* Fills c with the defaults and, from the environment alone, the settings
 * that reach the launcher (rally_tracker, rally_secret_file, rally_task_id,
 * rally_connect_timeout_ms), ignoring everything else: after
 * rally__config_load refused the settings, a worker can still tell its
 * launcher why. */
void rally__config_contact(struct rally__config *c);

/* Parses a decimal integer in [lo, hi] with nothing after it. 0 on success. */
int rally__parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out);

/* Parses "123", "64K", "1M", "2G" (powers of 1024). Returns 0 on success. */
int rally__parse_size(const char *s, int64_t *out);

#endif
