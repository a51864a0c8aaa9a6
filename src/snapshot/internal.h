/*
 * internal.h — what the snapshot layer's files share and nobody else needs:
 * a model file's header, and the whitelist of names.
 */
#ifndef RALLY_SNAPSHOT_INTERNAL_H
#define RALLY_SNAPSHOT_INTERNAL_H

#include <stdint.h>

#include "snapshot/snapshot.h"

#define SNAP_MAGIC "RALLYSNP" /* 8 bytes, no NUL in the file */
enum { SNAP_KIND_GLOBAL = 1, SNAP_KIND_LOCAL = 2 };
#define SNAP_RANK_GLOBAL 0xFFFFFFFFu

/* A model file's header (docs/snapshot-format.md, "A model file"). */
struct snap_header {
    uint32_t format_version;
    uint32_t kind;
    uint32_t rank;
    uint32_t world;
    uint64_t version;
    unsigned char run[16];
    uint64_t payload_nbytes;
    uint64_t payload_xxh3;
};

/* Encodes h (format version RALLY__SNAP_FORMAT) with its header checksum. */
void rally__snap_header_encode(const struct snap_header *h,
                               unsigned char out[RALLY__SNAP_HEADER_NBYTES]);
/* Decodes and checks magic, format version and header checksum; name is the
 * file's, for messages.  RALLY_EPROTO. */
int rally__snap_header_decode(const unsigned char in[RALLY__SNAP_HEADER_NBYTES], const char *name,
                              struct rally__err *e, struct snap_header *out);

/* The 16 bytes of a UUID string; 0, or -1 when s is not one. */
int rally__snap_uuid_bytes(const char *s, unsigned char out[16]);
/* A model file name's rank: -1 for global.bin, r for local-r.bin (the
 * canonical %04d spelling), -2 for any other name. */
int rally__snap_file_rank(const char *name);
/* snap-<version> (the canonical %08llu spelling): 0 and *v, or -1. */
int rally__snap_dir_version(const char *name, uint64_t *v);
/* Whether name is one of ours inside a snapshot directory: the manifest, a
 * model file, or the temporary of either. */
int rally__snap_known_name(const char *name);

struct rally__store;

/* Reads and parses MANIFEST.json in the snapshot dir of store st (""
 * when st is the snapshot itself): an absent manifest is RALLY_EPROTO
 * "incomplete". */
int rally__snap_load_manifest(struct rally__store *st, const char *dir, struct rally__err *e,
                              struct rally__snap_manifest **out);
/* Checks file f of manifest m in dir of st: one of f's size (a regular
 * file, not a link, in a directory); when full, also its whole-file
 * checksum and its header against m and the name. */
int rally__snap_check_file(struct rally__store *st, const char *dir,
                           const struct rally__snap_manifest *m, const struct rally__snap_file *f,
                           int full, struct rally__err *e);

/* As rally__snap_check_file (full), the whole file, header included,
 * into *buf: the caller's buffer of *room bytes, grown (realloc) when the
 * file is larger, and the caller's also on an error. */
int rally__snap_read_file(struct rally__store *st, const char *dir,
                          const struct rally__snap_manifest *m, const struct rally__snap_file *f,
                          void **buf, size_t *room, struct rally__err *e);

/* RALLY_EPROTO naming both sizes when file f (in where) is size bytes and
 * the manifest says otherwise, or "missing" for size UINT64_MAX. */
int rally__snap_size_agrees(const char *where, const struct rally__snap_file *f, uint64_t size,
                            struct rally__err *e);

/* RALLY_EPEER when jobdir/.lock names a run other than run_id (a process
 * of an older run must not write into the job); RALLY_OK when it names
 * run_id, or there is no lock file, or no job directory yet, or jobdir is
 * on an object store (which holds no lock). */
int rally__snap_fenced(const char *jobdir, const char *run_id, struct rally__err *e);

#endif
