/*
 * sys.h — the one durable write every snapshot file goes through, and the
 * table of system calls it makes, which a test may override.
 *
 * rally__snap_durable_write(dirfd, name, ...) writes ".<name>.tmp" beside
 * name (created O_EXCL|O_NOFOLLOW) in 1 MiB pieces, starting write-back
 * of every 8 MiB as it goes, fsyncs it, renames it to name and fsyncs the
 * directory: after a crash at any moment the directory holds
 * either the old name or the complete new file, never a torn one under the
 * real name.  Every system call on that path goes through rally__snap_sys
 * (SQLite's aSyscall idea): a test swaps an entry to record the calls or
 * to fail one (ENOSPC at the Nth byte), and sets ->fault to stop the write
 * dead at a point, as if the process had been killed there (nothing after
 * it runs, nothing is cleaned up).  The table is process-wide: change it
 * only while no snapshot is being written.
 */
#ifndef RALLY_SNAPSHOT_SYS_H
#define RALLY_SNAPSHOT_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/err.h"

/* Where ->fault is asked whether to stop. */
enum {
    RALLY__SNAP_AT_WRITE = 1,  /* after each write() that moved bytes: nbytes so far */
    RALLY__SNAP_AT_RENAME = 2, /* the file is written and fsync'd, not yet renamed */
    RALLY__SNAP_AT_DIRSYNC = 3 /* renamed, the directory not yet fsync'd */
};

struct rally__snap_sys {
    int (*openat)(int dirfd, const char *name, int flags, mode_t mode);
    ssize_t (*write)(int fd, const void *p, size_t n);
    int (*fsync)(int fd);
    int (*close)(int fd);
    int (*renameat)(int olddirfd, const char *oldname, int newdirfd, const char *newname);
    int (*unlinkat)(int dirfd, const char *name, int flags);
    int (*mkdirat)(int dirfd, const char *name, mode_t mode);
    /* starts writing back a written range early (sync_file_range
     * SYNC_FILE_RANGE_WRITE: no wait), so the fsync at the end finds less
     * to do; its failure is ignored (the fsync decides) */
    int (*write_back)(int fd, off_t off, off_t nbytes);
    /* NULL in production.  Nonzero stops the write at point (the file name
     * being written, the bytes written so far) with RALLY_ESYS. */
    int (*fault)(int point, const char *name, uint64_t nbytes);
};

extern struct rally__snap_sys rally__snap_sys;
/* The real calls, for a test to restore or to wrap. */
extern const struct rally__snap_sys rally__snap_sys_real;

struct rally__snap_chunk {
    const void *p;
    size_t n;
};

/* Writes the chunks, in order, as file name in the directory dirfd,
 * durably (above).  where names the directory in messages ("job/snap-12").
 * When xxh3 is not NULL it receives the XXH3-64 of the file's bytes,
 * computed in the same pass: each piece is hashed just before it is
 * written, while it is in the cache.  On an error the temporary is removed
 * and name is untouched; RALLY_ESYS names the call and the file (ENOSPC:
 * "no space left"). */
int rally__snap_durable_write(int dirfd, const char *where, const char *name,
                              const struct rally__snap_chunk *c, int nchunks, struct rally__err *e,
                              uint64_t *xxh3);

/* Opens directory name below dirfd (dirfd AT_FDCWD: a path, followed as
 * given), never following a link at name when nofollow.  RALLY_EPROTO for a
 * link or a non-directory, RALLY_ESYS else; ENOENT is reported as
 * RALLY_ESYS with *missing set (when missing is not NULL). */
int rally__snap_opendir(int dirfd, const char *name, int nofollow, struct rally__err *e,
                        int *missing, int *out);
/* Opens directory name below dirfd, creating it when missing; a new
 * directory's entry is made durable (fsync of dirfd). */
int rally__snap_mkdir(int dirfd, const char *where, const char *name, int nofollow,
                      struct rally__err *e, int *out);
/* The temporary name of name: ".<name>.tmp". */
void rally__snap_tmp_name(const char *name, char *out, size_t cap);

#endif
