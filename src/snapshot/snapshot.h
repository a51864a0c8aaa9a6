/*
 * snapshot.h — durable snapshots: the manifest, the reader, the writer of
 * one rank's part and the commit, listing and retention
 * (docs/snapshot-format.md describes every byte).
 *
 * The layer sits on util alone.  Every function returns a status and
 * reports through a struct rally__err; out-parameters are written last, on
 * success only; every destructor accepts NULL.  Wherever a function takes
 * a directory it takes an object store too ("s3://BUCKET/PREFIX"): bytes
 * go through the store seam (store.h), and the commit rule is the same on
 * every kind.  In a directory, nothing here follows a symbolic link below
 * the path a caller names, and every file is written through
 * rally__snap_durable_write (sys.h).  All functions block on the storage;
 * none keeps global state (but the syscall table).
 */
#ifndef RALLY_SNAPSHOT_SNAPSHOT_H
#define RALLY_SNAPSHOT_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define RALLY__SNAP_FORMAT 1u        /* the format version this code writes and reads */
#define RALLY__SNAP_HEADER_NBYTES 72 /* a model file's header */
#define RALLY__SNAP_MANIFEST "MANIFEST.json"
#define RALLY__SNAP_GLOBAL "global.bin"
#define RALLY__SNAP_JOB_MAX 64      /* bytes of a job name */
#define RALLY__SNAP_HOST_MAX 255    /* bytes of a host name */
#define RALLY__SNAP_WORLD_MAX 65536 /* ranks */
#define RALLY__SNAP_NAME_MAX 48     /* a file or snapshot directory name, NUL included */
#define RALLY__SNAP_UUID_LEN 36     /* "8-4-4-4-12" */
#define RALLY__SNAP_TIME_LEN 27     /* "YYYY-MM-DDTHH:MM:SS.ffffffZ" */
#define RALLY__SNAP_MANIFEST_MAX (16u << 20)

/* --- the manifest ------------------------------------------------------------ */

struct rally__snap_file {
    char name[RALLY__SNAP_NAME_MAX]; /* "global.bin" or "local-NNNN.bin" */
    uint64_t nbytes;                 /* the whole file, header included */
    uint64_t xxh3;                   /* XXH3-64 of the whole file */
};

struct rally__snap_setting {
    char *key, *value;
};

/* What MANIFEST.json says (docs/snapshot-format.md, "The manifest").  The
 * parser allocates every pointer; rally__snap_manifest_free frees them.  A
 * writer may fill one with its own pointers and never free it. */
/* A change of an elastic job's workers: from checkpoint version `version`
 * on, the job ran on `world` workers. */
struct rally__snap_change {
    uint64_t version;
    int world;
};

struct rally__snap_manifest {
    uint32_t format_version;
    char rally_version[32];
    char job[RALLY__SNAP_JOB_MAX + 1];
    char snapshot_id[RALLY__SNAP_UUID_LEN + 1];
    char run_id[RALLY__SNAP_UUID_LEN + 1];
    char run_started[RALLY__SNAP_TIME_LEN + 1];
    uint64_t version; /* the checkpoint version */
    char created[RALLY__SNAP_TIME_LEN + 1];
    int world;
    char **hosts; /* world entries: rank r's host */
    struct rally__snap_setting *settings;
    size_t nsettings;
    char *app_name, *app_config;
    uint64_t app_config_xxh3; /* checked against app_config on parse */
    char *partitioning;
    char **fingerprints; /* NULL (none) or world entries, "" for a rank without */
    struct rally__snap_file *files;
    size_t nfiles;
    struct rally__snap_change *changes; /* the run's worker changes so far, oldest first */
    size_t nchanges;
    int records; /* the local models are records (rally_set_local_records) */
};

/* Parses and checks a manifest's bytes (n of them, no NUL needed).  Every
 * rule of the format is checked; an error names the key and what is wrong,
 * with both values on a mismatch.  RALLY_EPROTO for a bad manifest,
 * RALLY_ENOMEM.  *out is the caller's (rally__snap_manifest_free). */
int rally__snap_manifest_parse(const char *buf, size_t n, struct rally__err *e,
                               struct rally__snap_manifest **out);
/* Encodes m as MANIFEST.json's bytes (the same rules; app_config_xxh3 is
 * computed here, not taken from m).  *out is malloc'd, *n its length. */
int rally__snap_manifest_encode(const struct rally__snap_manifest *m, struct rally__err *e,
                                char **out, size_t *n);
void rally__snap_manifest_free(struct rally__snap_manifest *m);
/* The bytes of m's files, added up. */
uint64_t rally__snap_manifest_nbytes(const struct rally__snap_manifest *m);

/* --- helpers ----------------------------------------------------------------- */

/* Whether root (a directory or s3://BUCKET/PREFIX) takes a write: a small
 * object named after run_id put at its top and removed again, so wrong
 * credentials, a missing bucket or an unwritable directory are found
 * before a job relies on it.  RALLY_OK, or the store's error naming it. */
int rally__snap_probe(const char *root, const char *run_id, struct rally__err *e);
/* XXH3-64 (seed 0) of n bytes. */
uint64_t rally__snap_xxh3(const void *p, size_t n);
/* A fresh random (version 4) UUID, lowercase, in out[37]. */
int rally__snap_uuid(char out[RALLY__SNAP_UUID_LEN + 1], struct rally__err *e);
/* Now, in UTC, as "YYYY-MM-DDTHH:MM:SS.ffffffZ" in out[28]. */
void rally__snap_now(char out[RALLY__SNAP_TIME_LEN + 1]);
/* Whether s is a valid job name / snapshot file name (the whitelist). */
int rally__snap_job_ok(const char *s);
/* 16 lowercase hex digits, as a manifest's checksums and fingerprints are
 * written: 0 with *v, else -1. */
int rally__snap_hex16(const char *s, uint64_t *v);
/* A job name from a program's path: its base name, bytes outside
 * A-Z a-z 0-9 . _ - replaced by '_', a leading '.' by 'j', at most
 * RALLY__SNAP_JOB_MAX bytes ("job" for an empty one). */
void rally__snap_job_from(const char *prog, char out[RALLY__SNAP_JOB_MAX + 1]);
/* path as every process sees it, in out[cap]: a directory's absolute
 * path (resolved when it exists; when it does not and !exists, made
 * absolute as written), an object store's URL as it is. */
int rally__snap_absolute(const char *path, int exists, char *out, size_t cap,
                         struct rally__err *e);
/* The file name of rank's model (-1: the global one) into out. */
void rally__snap_file_name(int rank, char out[RALLY__SNAP_NAME_MAX]);
/* "snap-%08llu" into out. */
void rally__snap_dir_name(uint64_t version, char out[RALLY__SNAP_NAME_MAX]);

/* --- the reader --------------------------------------------------------------- */

struct rally__snap; /* an open, verified snapshot */

/* Opens the snapshot directory at path and verifies it completely: the
 * manifest, then every listed file's size, whole-file checksum and header
 * (docs/snapshot-format.md, "What makes a snapshot complete").  No byte of
 * a model is handed out before all of that passed.  Errors name the file
 * and both values: RALLY_EPROTO (incomplete, damaged, malformed),
 * RALLY_ESYS (cannot read), RALLY_ENOMEM. */
int rally__snap_open(const char *path, struct rally__err *e, struct rally__snap **out);
/* As rally__snap_open, but checks only the manifest and every listed
 * file's size; rally__snap_read still verifies a file completely before it
 * hands out a byte of it.  For a reader that takes only some files of a
 * snapshot verified as a whole before (a worker resuming what rally-run
 * verified): no file is read twice. */
int rally__snap_open_sizes(const char *path, struct rally__err *e, struct rally__snap **out);
void rally__snap_close(struct rally__snap *s);
/* Reads and checks only the manifest of the snapshot directory at path (no
 * model file is read: for showing what a snapshot says, not for loading). */
int rally__snap_read_manifest(const char *path, struct rally__err *e,
                              struct rally__snap_manifest **out);
const struct rally__snap_manifest *rally__snap_manifest(const struct rally__snap *s);
/* Whether the snapshot holds local models (one per rank). */
int rally__snap_has_local(const struct rally__snap *s);
/* Reads rank's model (-1: the global one) into a fresh buffer (*bytes is
 * the caller's to free; NULL with *nbytes 0 for an empty model).  The file
 * is checked again as it is read.  RALLY_EINVAL for a rank without a file
 * in this snapshot. */
int rally__snap_read(struct rally__snap *s, int rank, struct rally__err *e, void **bytes,
                     uint64_t *nbytes);

/* As rally__snap_read, into *buf: the caller's buffer of *room bytes,
 * grown (realloc) when the model is larger, kept across calls — a reader
 * on a steady path (the second tier's copier) touches no fresh page. */
int rally__snap_read_into(struct rally__snap *s, int rank, struct rally__err *e, void **buf,
                          size_t *room, uint64_t *nbytes);

/* --- resuming: is a snapshot this job's? -------------------------------------------- */

/* What a job about to resume is, to hold against a snapshot's manifest.
 * A NULL field is not checked. */
struct rally__snap_expect {
    int world;            /* the resuming job's world size (always checked) */
    const char *app_name; /* what the application registered */
    const char *app_config;
    const char *partitioning;  /* the data partitioning scheme */
    char *const *fingerprints; /* world entries: each rank's input fingerprint */
    const char *force;         /* how this job says force, for the refusal; NULL "--force" */
    int records;               /* -1 unknown (the launcher), else its local models are records */
};

/* Whether a job described by x may resume from manifest m.  Refused with
 * RALLY_EMISMATCH, naming both values: a different world size when m holds
 * local models (never overridable: a local model belongs to its rank); a
 * different rally major version (minor too while the major is 0), a
 * different application name or configuration (by its hash), partitioning
 * or input fingerprint — these four are skipped when force is set.  A
 * global-only snapshot resumed on another world size is allowed; then the
 * fingerprints are not compared and note (cap bytes, may be NULL) says the
 * result is correct but not bit-identical.  note is "" otherwise. */
int rally__snap_compatible(const struct rally__snap_manifest *m, const struct rally__snap_expect *x,
                           int force, struct rally__err *e, char *note, size_t cap);

/* --- the writer ---------------------------------------------------------------- */

/* Where a snapshot goes: <dir>/<job>/snap-<version>/. */
struct rally__snap_target {
    const char *dir;    /* the snapshot root; created (one level) when missing */
    const char *job;    /* the job name (rally__snap_job_ok) */
    const char *run_id; /* this run's UUID */
    uint64_t version;   /* the checkpoint version */
    int world;
    /* dir's store, open (store.h), or NULL: each write opens its own.  A
     * writer of several files opens one for them all (an object store's
     * connection and credentials are read once a snapshot, not once a file)
     * and closes it after. */
    struct rally__store *st;
};

/* Writes rank's part (-1: global.bin, r: local-r.bin) of the snapshot t,
 * creating the job and snapshot directories as needed, durably.  Refused
 * (RALLY_EINVAL) when snap-<version> is already committed.  On success
 * *out says the file's name, size and checksum, for the commit.  Runs on
 * any thread; parts of one snapshot may be written concurrently. */
int rally__snap_write_part(const struct rally__snap_target *t, int rank, const void *bytes,
                           uint64_t nbytes, struct rally__err *e, struct rally__snap_file *out);
/* Commits snapshot m into the root dir: checks that every file m lists is
 * in <dir>/<m->job>/snap-<m->version>/ with its size, then writes
 * MANIFEST.json durably.  On success, when path is not NULL, writes the
 * snapshot directory's path into path[cap]. */
int rally__snap_commit(const char *dir, const struct rally__snap_manifest *m, struct rally__err *e,
                       char *path, size_t cap);

/* Copies the committed snapshot at src into the snapshot root (a
 * directory or an object store: store.h) as <root>/<job>/snap-<version>:
 * every part read and verified at src, written at root, the manifest
 * last; then the copy is verified completely there, and only then
 * RALLY_OK (its path in path[cap] when not NULL).  A copy of this very
 * snapshot (its snapshot id) already at root that verifies is done. */
int rally__snap_copy(const char *src, const char *root, struct rally__err *e, char *path,
                     size_t cap);
/* Copies files[0..n) of snapshot t's directory, as one rank wrote them
 * into the root src, into the root t->dir, byte for byte: each verified
 * completely at src (size, checksum, and its header against t's run,
 * version and world), written there (refused as rally__snap_write_part
 * refuses), and verified completely there.  *buf as in
 * rally__snap_read_into.  No manifest is read or written. */
int rally__snap_copy_files(const char *src, const struct rally__snap_target *t,
                           const struct rally__snap_file *files, int n, void **buf, size_t *room,
                           struct rally__err *e);
/* Writes name (a whitelisted file name) of snapshot t from bytes, whole or
 * not at all, refused as rally__snap_write_part refuses; *xxh3 its checksum. */
int rally__snap_put_file(const struct rally__snap_target *t, const char *name, const void *bytes,
                         uint64_t nbytes, struct rally__err *e, uint64_t *xxh3);
/* The job names in the snapshot root (entries that are job names: the
 * whitelist), sorted; *names is the caller's (rally__snap_names_free). */
int rally__snap_jobs(const char *root, struct rally__err *e, char ***names, size_t *count);
void rally__snap_names_free(char **names, size_t count);

/* --- the background writer ---------------------------------------------------------- */

/* One rank's parts of one snapshot, for the background writer. */
struct rally__snap_part {
    int rank;          /* -1: global.bin; r: local-r.bin */
    const void *bytes; /* copied at submit, unless owned */
    uint64_t nbytes;
    /* 0: copied at submit; 1: bytes is malloc'd and the writer takes it
     * (frees it); RALLY__SNAP_BORROWED: neither copied nor freed — the
     * caller keeps the bytes unchanged until rally__snap_bg_poll reports
     * the snapshot done (no stall for a copy) */
    int owned;
};

#define RALLY__SNAP_BORROWED 2

#define RALLY__SNAP_PARTS_MAX 2 /* rank 0 writes global.bin and its local model */

struct rally__snap_bg; /* a thread that writes parts; at most one snapshot in flight */

/* Starts the writer's thread. */
int rally__snap_bg_start(struct rally__err *e, struct rally__snap_bg **out);
/* Waits for the snapshot in flight, then ends the thread; NULL is fine. */
void rally__snap_bg_stop(struct rally__snap_bg *w);
/* Hands the parts of snapshot t to the thread and returns: the caller
 * stalls only to copy the bytes (none for owned ones).  When a snapshot is
 * still in flight, blocks until it is done if wait, else accepts nothing
 * (*accepted 0; owned bytes stay the caller's).  The previous result must
 * have been collected with rally__snap_bg_poll.  RALLY_EINVAL, RALLY_ENOMEM. */
int rally__snap_bg_submit(struct rally__snap_bg *w, const struct rally__snap_target *t,
                          const struct rally__snap_part *parts, int nparts, int wait,
                          struct rally__err *e, int *accepted);
/* Hands the thread a commit instead of parts: m (encoded here, parsed
 * again by the thread, so the caller's m may go at once) committed into the
 * root dir with rally__snap_commit, then, when that succeeded,
 * rally__snap_retain_upto(<dir>/<job>, m's run, keep, m's version).  The
 * same states as parts: one job in flight, its result collected with
 * rally__snap_bg_poll (files unused), then rally__snap_bg_commit_info.
 * Blocks while a job is in flight.  RALLY_EINVAL, RALLY_ENOMEM, or the
 * encoder's error for a bad m. */
int rally__snap_bg_commit(struct rally__snap_bg *w, const char *dir,
                          const struct rally__snap_manifest *m, int keep, struct rally__err *e);
/* After rally__snap_bg_poll reported a commit done: the snapshot's path
 * (when it succeeded), and what retention said when it failed ("" when it
 * did not; the commit stands either way). */
void rally__snap_bg_commit_info(const struct rally__snap_bg *w, char *path, size_t cap, char *note,
                                size_t note_cap);
/* The version the commits' retention leaves in place from now on
 * (rally__snap_retain_sparing; UINT64_MAX, the start: none): the one the
 * second tier is copying.  Any thread; a commit in flight may still see
 * the one before. */
void rally__snap_bg_spare(struct rally__snap_bg *w, uint64_t version);
/* The result of the snapshot in flight, waiting up to timeout_ms (0: just
 * look, -1: until done).  *done 0: still writing (-1: nothing submitted).
 * *done 1: finished; *result holds its status and message, files[0..nparts)
 * the written files (the size and checksum each rank reports for the
 * commit), and the writer is free again.  One thread submits and polls. */
int rally__snap_bg_poll(struct rally__snap_bg *w, int timeout_ms, int *done,
                        struct rally__err *result,
                        struct rally__snap_file files[RALLY__SNAP_PARTS_MAX]);

/* --- the second tier ---------------------------------------------------------------- */

/* A thread on each rank that copies the files its rank wrote of each
 * snapshot to another store (root: a directory or s3://...) with
 * rally__snap_copy_files; on rank 0 it also commits each copy there once
 * told that every rank's files are there, then applies retention there
 * (rally__snap_retain_upto of the snapshot's run, keeping keep).  Nothing
 * here blocks its owner but drain and stop. */
struct rally__snap_copier;

enum { RALLY__SNAP_COPY_NONE, RALLY__SNAP_COPY_BUSY, RALLY__SNAP_COPY_OK, RALLY__SNAP_COPY_FAILED };

int rally__snap_copier_start(const char *root, int keep, struct rally__err *e,
                             struct rally__snap_copier **out);
/* Names the files[0..n) this rank wrote of snapshot t (its job, run,
 * version and world; t->dir unused) in the root src: copied when the
 * thread is free; they replace files still waiting.  A copy that fails is
 * tried again, 3 times in all, unless newer files wait.  The lag rank 0's
 * commit reports counts from here.  RALLY_EINVAL for what it cannot take. */
int rally__snap_copier_submit(struct rally__snap_copier *c, const char *src,
                              const struct rally__snap_target *t,
                              const struct rally__snap_file *files, int nfiles,
                              struct rally__err *e);
/* Where this rank's files of version stand: RALLY__SNAP_COPY_BUSY
 * (waiting or being copied), _OK (copied and verified there), _FAILED
 * (given up, or abandoned for newer ones), _NONE (not submitted, or
 * replaced before the thread took them). */
int rally__snap_copier_state(struct rally__snap_copier *c, uint64_t version);
/* Rank 0, once every rank's files of version are there: commits the copy
 * of the snapshot whose MANIFEST.json is manifest[n] (copied here; written
 * there last, after every part it lists is checked there, and read back),
 * then retention there; "copied to ..." or a given-up commit is said.
 * Taken before files that wait; a newer one replaces it.  RALLY_ENOMEM. */
int rally__snap_copier_commit(struct rally__snap_copier *c, const char *manifest, size_t n,
                              uint64_t version, struct rally__err *e);
/* Removes this rank's files of run_id's snapshots older than below from
 * its first tier's job directory (where no manifest is: a directory
 * private to each host), after what waits to be committed. */
void rally__snap_copier_prune(struct rally__snap_copier *c, const char *jobdir, const char *run_id,
                              uint64_t below);
/* The oldest sentence not yet taken of what the thread did ("copied to
 * ...", a failed try, a copy given up): 1 with it in out[cap], else 0. */
int rally__snap_copier_said(struct rally__snap_copier *c, char *out, size_t cap);
/* 1 with what became of the newest commit since the last call (for
 * observers): *ok 1, its version, its files' bytes (the manifest's sizes
 * added) and where the copy is in text[cap]; or *ok 0, its version and why
 * it was given up.  A commit abandoned for a newer one or a stop counts as
 * neither. */
int rally__snap_copier_outcome(struct rally__snap_copier *c, int *ok, uint64_t *version,
                               uint64_t *nbytes, char *text, size_t cap);
/* 1 with the sentence when a commit was given up since the last call. */
int rally__snap_copier_gave_up(struct rally__snap_copier *c, char *out, size_t cap);
/* Waits until nothing is waiting or being copied. */
void rally__snap_copier_drain(struct rally__snap_copier *c);
/* Ends the thread: the copy in flight ends with its current try, what
 * still waits is dropped (drain first to have it copied); NULL is fine. */
void rally__snap_copier_stop(struct rally__snap_copier *c);

/* --- listing, removal, retention ---------------------------------------------------- */

enum { RALLY__SNAP_COMPLETE = 0, RALLY__SNAP_INCOMPLETE = 1, RALLY__SNAP_DAMAGED = 2 };

struct rally__snap_entry {
    char name[RALLY__SNAP_NAME_MAX];       /* "snap-00000012" */
    uint64_t version;                      /* from the name */
    int state;                             /* RALLY__SNAP_COMPLETE, ... */
    char run_id[RALLY__SNAP_UUID_LEN + 1]; /* "" when not known */
    char run_started[RALLY__SNAP_TIME_LEN + 1];
    char created[RALLY__SNAP_TIME_LEN + 1];
    char snapshot_id[RALLY__SNAP_UUID_LEN + 1];
    int world;
    uint64_t nbytes;              /* the listed files' sizes, added */
    char why[RALLY__ERR_MSG_MAX]; /* for an incomplete or damaged one: what is wrong */
};

/* Lists the snapshot directories of a job directory (<dir>/<job>), in
 * ascending version order; names that are not snap-<version> are skipped.
 * A listing checks what "complete" means (manifest, names, sizes), not
 * checksums.  *v is the caller's to free. */
int rally__snap_list(const char *jobdir, struct rally__err *e, struct rally__snap_entry **v,
                     size_t *count);
/* --resume's "the newest if there is one, else a fresh start". */
#define RALLY__SNAP_IF_ANY "latest-if-any"
/* The index in v of "latest": the newest complete snapshot of the newest
 * run (docs/snapshot-format.md); -1 when there is none. */
long rally__snap_latest(const struct rally__snap_entry *v, size_t count);
/* What --resume names, as a snapshot's path in path[cap]: "latest" is
 * rally__snap_latest of jobdir and, when copydir is not NULL, of the second
 * tier's job directory copydir together (the same snapshot in both: jobdir's
 * copy); RALLY_EINVAL when neither holds a complete snapshot, saying what
 * they hold instead.  A tier that does not exist holds nothing; when both
 * are given, one that cannot be listed is passed over (and said in the
 * refusal).  RALLY__SNAP_IF_ANY is "latest", but where neither holds a
 * complete snapshot and both could be listed it is RALLY_OK with path ""
 * (a job's first start: a script run again, e.g. a requeued batch job,
 * resumes and starts alike).  Anything else is taken as a snapshot's path,
 * unchecked (rally__snap_open checks). */
int rally__snap_resolve(const char *jobdir, const char *copydir, const char *what,
                        struct rally__err *e, char *path, size_t cap);
/* Lists jobdir: *top the newest version of any snapshot directory there
 * (0: none, complete or not); 1 with the name of run's oldest complete
 * snapshot newer than after, 0 when there is none, -1 on an error (e's).
 * "A snapshot asked for now" is one newer than *top at the asking: one
 * being written then is not it. */
int rally__snap_newer(const char *jobdir, const char *run, uint64_t after, uint64_t *top,
                      char name[RALLY__SNAP_NAME_MAX], struct rally__err *e);
/* When "latest" (path, in jobdir or copydir: rally__snap_resolve) does not
 * verify: the newest snapshot before it, in latest's order over both
 * tiers, that verifies, as a path in older[cap] and its version; 1 when
 * there is one, else 0. */
int rally__snap_older(const char *jobdir, const char *copydir, const char *path, char *older,
                      size_t cap, uint64_t *version);
/* Removes snapshot directory name in jobdir: the manifest first (then the
 * directory is fsync'd), then model files and temporaries, then the
 * directory.  Refused (RALLY_EINVAL) when it holds an unknown name or is
 * not a snapshot directory. */
int rally__snap_remove(const char *jobdir, const char *name, struct rally__err *e);
/* Retention for run_id keeping the newest keep complete snapshots (keep 0:
 * the clean-up after a successful run): removes that run's older complete
 * snapshots and the incomplete directories that belong to it or to no run.
 * Never touches another run's snapshots, damaged ones or unknown names.
 * Call it when none of this run's snapshots is being written.  *removed
 * (may be NULL) counts the directories removed. */
int rally__snap_retain(const char *jobdir, const char *run_id, int keep, struct rally__err *e,
                       int *removed);
/* As rally__snap_retain, but looks only at snapshot directories of version
 * upto or older: newer ones may be being written while it runs. */
int rally__snap_retain_upto(const char *jobdir, const char *run_id, int keep, uint64_t upto,
                            struct rally__err *e, int *removed);
/* As rally__snap_retain_upto, but leaves this run's snapshot of version
 * spare in place however old it is (UINT64_MAX: none): one a second tier
 * is still copying from here. */
int rally__snap_retain_sparing(const char *jobdir, const char *run_id, int keep, uint64_t upto,
                               uint64_t spare, struct rally__err *e, int *removed);
/* A successful run's clean-up: run_id's snapshots removed from jobdir;
 * say[cap] receives what to tell ("the run succeeded: removed its N
 * snapshots (KEEP keeps them)", or why they stay), "" when it held none. */
void rally__snap_clean_run(const char *jobdir, const char *run_id, const char *keep, char *say,
                           size_t cap);
/* A fresh start (no resume) into jobdir: RALLY_EINVAL naming the snapshot
 * directories it already holds (the RFC's stale-checkpoint trap) and the
 * two ways on (resume, overwrite: how the caller spells them), RALLY_OK
 * when it holds none or does not exist. */
int rally__snap_check_fresh(const char *jobdir, const char *resume, const char *overwrite,
                            struct rally__err *e);
/* The same for both tiers: jobdir, then copy_jobdir (NULL or "": none),
 * whose names a fresh start's copies would collide with; a second tier that
 * cannot be listed is left to its copies to report. */
int rally__snap_check_fresh_tiers(const char *jobdir, const char *copy_jobdir, const char *resume,
                                  const char *overwrite, struct rally__err *e);

/* --- the job directory's lock ------------------------------------------------------------ */

struct rally__snap_lock;

/* Takes <dir>/<job>/.lock (creating the directories) for run_id, for the
 * job's life: an open-file-description lock, so it goes when the holder
 * dies, however it dies.  The file then names run_id (and, on its second
 * line, the holder's process id), and
 * rally__snap_write_part, rally__snap_commit and rally__snap_retain refuse
 * any other run (RALLY_EPEER) while it does: an orphan of a killed launcher
 * cannot write, commit or clean up in the job that resumed it.
 * RALLY_EPEER naming the holder's run when another holds it; RALLY_EPROTO
 * when .lock is not the job's own file (a symbolic link, not a regular
 * file, a second hard link, another user's), which is then left as it is.
 * Does not block. */
int rally__snap_lock_take(const char *dir, const char *job, const char *run_id,
                          struct rally__err *e, struct rally__snap_lock **out);
/* Who holds jobdir's lock now (the file names the run and the holder's
 * process id, rally-run's): RALLY_OK with both; RALLY_EINVAL when nobody
 * does (no job runs there), RALLY_EPROTO when the file names neither. */
int rally__snap_lock_holder(const char *jobdir, struct rally__err *e,
                            char run[RALLY__SNAP_UUID_LEN + 1], long *pid);
/* Releases the lock (the file stays, naming the last holder); NULL is fine. */
void rally__snap_lock_release(struct rally__snap_lock *l);

#endif
