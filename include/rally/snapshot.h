/*
 * snapshot.h — reading durable snapshots with no job running: list a job
 * directory, open a snapshot, look at what its manifest says, verify it,
 * read the global model and each rank's local model.
 *
 *     rally_snapshot_t *s;
 *     char err[512];
 *     if (rally_snapshot_open("snaps/train/latest", &s, err, sizeof err) != RALLY_OK)
 *         ...print err...
 *     void *model;
 *     uint64_t n;
 *     if (rally_snapshot_read(s, -1, &model, &n, err, sizeof err) == RALLY_OK)
 *         ...use the n bytes a checkpoint passed as its global model, then rally_free(model)...
 *     rally_snapshot_close(s);
 *
 * A snapshot is a directory <snapshot-dir>/<job>/snap-<version>/
 * (docs/snapshot-format.md describes every byte); "JOBDIR/latest" names the
 * one `rally-run --resume latest` would take.  Opening reads and checks the
 * manifest and every file's size; each model file's checksum and header are
 * checked when it is read, and rally_snapshot_verify checks every file.
 * Nothing here writes.
 *
 * Conventions, as in rally/data.h: a function returns RALLY_OK (0) or a
 * status code from rally.h; when the caller passes err/errcap, err then
 * holds a NUL-terminated sentence naming the path and what is wrong;
 * out-parameters are written only on success.  Status codes: RALLY_EINVAL
 * (a bad argument, no such rank or file), RALLY_ESYS (a file cannot be
 * read), RALLY_EPROTO (an incomplete or damaged snapshot: the sentence says
 * which file and why), RALLY_ENOMEM.  An open snapshot is read by one thread
 * at a time.
 */
#ifndef RALLY_SNAPSHOT_H
#define RALLY_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "rally/rally.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rally_snapshot rally_snapshot_t;

/* --- a job directory ------------------------------------------------------ */

enum { RALLY_SNAPSHOT_COMPLETE = 0, RALLY_SNAPSHOT_INCOMPLETE = 1, RALLY_SNAPSHOT_DAMAGED = 2 };

/* One snapshot directory of a job directory, as a listing sees it (the
 * manifest, names and sizes; not the checksums). */
typedef struct rally_snapshot_entry {
    char name[48];        /* "snap-00000012" */
    uint64_t version;     /* the checkpoint version */
    int state;            /* RALLY_SNAPSHOT_COMPLETE, _INCOMPLETE or _DAMAGED */
    int latest;           /* 1 for the one "latest" names */
    char run_id[37];      /* the run that took it ("" when not known) */
    char created[28];     /* RFC 3339 UTC */
    int world;            /* workers of the job that took it */
    uint64_t nbytes;      /* its files' sizes, added */
    char why[512];        /* for an incomplete or damaged one: what is wrong */
} rally_snapshot_entry_t;

/* The snapshot directories of jobdir in ascending version order; *entries
 * (*count of them) is the caller's to free with rally_free. */
RALLY_API int rally_snapshot_list(const char *jobdir, rally_snapshot_entry_t **entries,
                                  size_t *count, char *err, size_t errcap);

/* --- one snapshot ----------------------------------------------------------- */

/* Opens the snapshot at path (a snapshot directory, or JOBDIR/latest). */
RALLY_API int rally_snapshot_open(const char *path, rally_snapshot_t **out, char *err,
                                  size_t errcap);
RALLY_API void rally_snapshot_close(rally_snapshot_t *s); /* NULL is fine */

/* The snapshot directory opened (for JOBDIR/latest, the one it named). */
RALLY_API const char *rally_snapshot_path(const rally_snapshot_t *s);
RALLY_API uint64_t rally_snapshot_version(const rally_snapshot_t *s);
RALLY_API int rally_snapshot_world(const rally_snapshot_t *s);
/* 1 when it holds a local model of every rank. */
RALLY_API int rally_snapshot_has_local(const rally_snapshot_t *s);
/* 1 when its local models are records (rally_set_local_records): it then
 * resumes on any number of workers. */
RALLY_API int rally_snapshot_local_records(const rally_snapshot_t *s);

/* A field of the manifest by name: "format_version", "job", "snapshot_id",
 * "run_id", "run_started", "created", "rally_version", "app_name",
 * "app_config", "app_config_xxh3" (16 hex digits), "partitioning"; NULL for
 * any other name. */
RALLY_API const char *rally_snapshot_field(const rally_snapshot_t *s, const char *name);
/* Rank's host, and its input fingerprint ("" when it set none); NULL for a
 * rank out of range. */
RALLY_API const char *rally_snapshot_host(const rally_snapshot_t *s, int rank);
RALLY_API const char *rally_snapshot_fingerprint(const rally_snapshot_t *s, int rank);
/* The job's setting key ("rally_local_replica"), as the snapshot kept it;
 * NULL when it kept none of that name. */
RALLY_API const char *rally_snapshot_setting(const rally_snapshot_t *s, const char *key);
/* Its i-th kept setting, in the manifest's order; RALLY_EINVAL past the end. */
RALLY_API int rally_snapshot_setting_at(const rally_snapshot_t *s, size_t i, const char **key,
                                        const char **value);
/* An elastic job's changes of its workers up to this snapshot, oldest
 * first: from checkpoint *version on, the job ran on *world workers (the
 * first, version 0, the world it started with); RALLY_EINVAL past the end,
 * at once when the workers never changed. */
RALLY_API int rally_snapshot_world_change(const rally_snapshot_t *s, size_t i, uint64_t *version,
                                          int *world);
/* Its i-th file (i < rally_snapshot_nfiles): name, size and XXH3-64 as the
 * manifest lists them; RALLY_EINVAL past the end. */
RALLY_API size_t rally_snapshot_nfiles(const rally_snapshot_t *s);
RALLY_API int rally_snapshot_file(const rally_snapshot_t *s, size_t i, const char **name,
                                  uint64_t *nbytes, uint64_t *xxh3);

/* Reads and checks every file: sizes, checksums, headers. */
RALLY_API int rally_snapshot_verify(rally_snapshot_t *s, char *err, size_t errcap);
/* The model rank passed to rally_checkpoint (rank -1: the global model),
 * checked as it is read; *bytes is the caller's to free with rally_free. */
RALLY_API int rally_snapshot_read(rally_snapshot_t *s, int rank, void **bytes, uint64_t *nbytes,
                                  char *err, size_t errcap);

#ifdef __cplusplus
}
#endif

#endif
