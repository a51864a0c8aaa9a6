/*
 * store.h — the seam between the snapshot format (write.c, read.c, dir.c)
 * and the place its bytes live, one kind per file of stores/: a directory
 * (stores/posix.c) or an object store's bucket (stores/s3.c, built with
 * RALLY_S3, on by default: it needs libcurl and expat).
 *
 * A store is opened on a root as a user spells it: a path, or a URL whose
 * scheme names a kind ("s3://bucket/prefix").  Below the root, bytes are
 * named by a dir of zero to two '/'-separated names ("", "job",
 * "job/snap-00000012") and a name in it.  Every snapshot name is from the
 * whitelist (docs/snapshot-format.md), so no kind has to escape anything.
 *
 * The commit rule rests on one promise of put: a name holds nothing or the
 * whole of what one put gave it, never a part, after a crash at any moment
 * (a directory: a temporary, fsync, rename, fsync of the directory; an
 * object store: one PUT, atomic by the API).  On that, every kind commits
 * alike: the parts first, then the manifest, last; a snapshot is complete
 * exactly when its manifest is there and every part it lists verifies.
 *
 * Adding a kind is one file in stores/ with one table and one row in
 * store.c; a kind calls nothing of store.c's (the helpers below are
 * inline), so the table sits above its kinds.
 */
#ifndef RALLY_SNAPSHOT_STORE_H
#define RALLY_SNAPSHOT_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "snapshot/sys.h"
#include "util/err.h"

struct rally__store_ops;

/* An open store.  A kind embeds this as its first member. */
struct rally__store {
    const struct rally__store_ops *ops;
    char where[1024]; /* the root as given, no trailing '/': for messages */
};

/* Takes the next n bytes of a get; nonzero stops it (a reader that has
 * what it wanted, or found the bytes wrong). */
typedef int (*rally__store_sink)(void *arg, const void *p, size_t n);

/* Every operation returns a status and reports through e, naming the
 * place (where/dir/name).  missing, when not NULL, is set to whether the
 * failure was that the name (or a dir above it) does not exist. */
struct rally__store_ops {
    const char *scheme; /* "s3" for "s3://..."; NULL: the kind for a plain path */
    /* Opens a store on root; nothing is created or looked at yet. */
    int (*open)(const char *root, struct rally__err *e, struct rally__store **out);
    void (*close)(struct rally__store *s);
    /* Writes dir/name from the chunks, whole or not at all (above),
     * creating dir (and the root, one level) as needed.  xxh3, when not
     * NULL, receives the XXH3-64 of the bytes, hashed as they go. */
    int (*put)(struct rally__store *s, const char *dir, const char *name,
               const struct rally__snap_chunk *c, int nchunks, struct rally__err *e,
               uint64_t *xxh3);
    /* The size of dir/name.  RALLY_EPROTO for what a snapshot never holds
     * there (a link, a directory, a special file). */
    int (*size)(struct rally__store *s, const char *dir, const char *name, struct rally__err *e,
                int *missing, uint64_t *nbytes);
    /* Hands the first max bytes of dir/name (UINT64_MAX: all) to sink, in
     * order, in pieces of the kind's choosing.  A sink's stop is RALLY_OK
     * (the caller knows why it stopped). */
    int (*get)(struct rally__store *s, const char *dir, const char *name, uint64_t max,
               rally__store_sink sink, void *arg, struct rally__err *e, int *missing);
    /* The names directly in dir (files and dirs alike, no "." or ".."),
     * in no order; *names and each name are malloc'd.  A kind without
     * directories lists a dir that holds nothing with *missing set (and
     * RALLY_OK), as it is not there. */
    int (*list)(struct rally__store *s, const char *dir, struct rally__err *e, int *missing,
                char ***names, size_t *count);
    /* Optional (NULL: size each name instead): list, with each name's size
     * (UINT64_MAX for a dir) from the same answer.  For a kind whose
     * listing says sizes at no cost; used where a stale answer is safe
     * (a listing's states, never a commit). */
    int (*list_sized)(struct rally__store *s, const char *dir, struct rally__err *e, int *missing,
                      char ***names, uint64_t **sizes, size_t *count);
    /* Removes dir/name (name NULL: dir itself, which must be empty; a
     * kind without directories has nothing to do).  durable: the removal
     * is on disk when this returns.  An absent name is RALLY_OK. */
    int (*remove)(struct rally__store *s, const char *dir, const char *name, int durable,
                  struct rally__err *e);
};

/* Opens the store of root's kind (its scheme; a plain path: a directory). */
int rally__store_open(const char *root, struct rally__err *e, struct rally__store **out);
/* How many stores were opened in this process (any thread): tests count
 * that a snapshot's files share one. */
extern uint64_t rally__store_opens;
void rally__store_close(struct rally__store *s);
/* Whether root names an object store (no directory, no lock, no rename). */
int rally__store_is_remote(const char *root);
/* "where/dir" (where alone for dir "") into out[cap], for messages. */
static inline void rally__store_where(const struct rally__store *s, const char *dir, char *out,
                                      size_t cap)
{
    snprintf(out, cap, "%s%s%s", s->where, *dir ? "/" : "", dir);
}

/* Frees a list's n names and the list (NULL is accepted). */
static inline void rally__store_free_names(char **v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++)
        free(v[i]);
    free(v);
}

extern const struct rally__store_ops rally__store_posix;
#if RALLY_S3
extern const struct rally__store_ops rally__store_s3;
#endif

#endif
