/*
 * sys.c — the durable write (temporary, write, fsync, rename, fsync of the
 * directory) and the system-call table it goes through (sys.h).
 */
#include "snapshot/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

static int real_openat(int dirfd, const char *name, int flags, mode_t mode)
{
    return openat(dirfd, name, flags, mode);
}

static int real_write_back(int fd, off_t off, off_t nbytes)
{
    return sync_file_range(fd, off, nbytes, SYNC_FILE_RANGE_WRITE);
}

const struct rally__snap_sys rally__snap_sys_real = {
    .openat = real_openat,
    .write = write,
    .fsync = fsync,
    .close = close,
    .renameat = renameat,
    .unlinkat = unlinkat,
    .mkdirat = mkdirat,
    .write_back = real_write_back,
    .fault = NULL,
};

struct rally__snap_sys rally__snap_sys = {
    .openat = real_openat,
    .write = write,
    .fsync = fsync,
    .close = close,
    .renameat = renameat,
    .unlinkat = unlinkat,
    .mkdirat = mkdirat,
    .write_back = real_write_back,
    .fault = NULL,
};

/* Bytes per write() call: a piece small enough to be hashed and written
 * while it stays in the cache. */
#define WRITE_MAX ((size_t)1 << 20)
/* Written bytes handed to write-back at a time. */
#define WRITE_BACK_NBYTES ((uint64_t)8 << 20)

void rally__snap_tmp_name(const char *name, char *out, size_t cap)
{
    snprintf(out, cap, ".%s.tmp", name);
}

static int stop_at(int point, const char *name, uint64_t nbytes)
{
    return rally__snap_sys.fault != NULL && rally__snap_sys.fault(point, name, nbytes) != 0;
}

static int injected(struct rally__err *e, const char *where, const char *name, const char *at)
{
    return rally__fail(e, RALLY_ESYS, "injected fault %s writing %s/%s", at, where, name);
}

int rally__snap_durable_write(int dirfd, const char *where, const char *name,
                              const struct rally__snap_chunk *c, int nchunks, struct rally__err *e,
                              uint64_t *xxh3)
{
    const struct rally__snap_sys *s = &rally__snap_sys;
    char tmp[256];
    int fd = -1, rc = RALLY_OK;
    uint64_t done = 0, flushed = 0;
    XXH3_state_t *h = NULL;
    if (xxh3 != NULL && ((h = XXH3_createState()) == NULL || XXH3_64bits_reset(h) != XXH_OK)) {
        XXH3_freeState(h);
        return rally__fail(e, RALLY_ENOMEM, "out of memory hashing %s/%s", where, name);
    }
    rally__snap_tmp_name(name, tmp, sizeof tmp);
    if (s->unlinkat(dirfd, tmp, 0) != 0 && errno != ENOENT) {
        rc = rally__fail_errno(e, RALLY_ESYS, errno, "cannot remove the stale %s/%s", where, tmp);
        goto out;
    }
    fd = s->openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = rally__fail_errno(e, RALLY_ESYS, errno, "cannot create %s/%s", where, tmp);
        goto out;
    }
    for (int i = 0; i < nchunks; i++) {
        const unsigned char *p = c[i].p;
        size_t left = c[i].n, hashed = 0; /* bytes of the piece at p already hashed */
        while (left > 0) {
            size_t piece = left < WRITE_MAX ? left : WRITE_MAX;
            if (h != NULL && hashed < piece) {
                XXH3_64bits_update(h, p + hashed, piece - hashed);
                hashed = piece;
            }
            ssize_t w = s->write(fd, p, piece);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                int err = w < 0 ? errno : EIO;
                rc = rally__fail_errno(e, RALLY_ESYS, err, "%s writing %s/%s after %llu bytes",
                                       err == ENOSPC ? "no space left" : "write failed", where,
                                       name, (unsigned long long)done);
                goto fail;
            }
            p += w;
            left -= (size_t)w;
            hashed -= (size_t)w; /* a short write: the rest of the piece is hashed already */
            done += (uint64_t)w;
            if (done - flushed >= WRITE_BACK_NBYTES) {
                s->write_back(fd, (off_t)flushed, (off_t)(done - flushed));
                flushed = done;
            }
            if (stop_at(RALLY__SNAP_AT_WRITE, name, done)) {
                rc = injected(e, where, name, "after a write"); /* as if killed */
                goto out;
            }
        }
    }
    if (s->fsync(fd) != 0) {
        rc = rally__fail_errno(e, RALLY_ESYS, errno, "cannot fsync %s/%s", where, tmp);
        goto fail;
    }
    int cfd = fd;
    fd = -1;
    if (s->close(cfd) != 0) {
        rc = rally__fail_errno(e, RALLY_ESYS, errno, "cannot close %s/%s", where, tmp);
        goto fail;
    }
    if (stop_at(RALLY__SNAP_AT_RENAME, name, done)) {
        rc = injected(e, where, name, "before the rename");
        goto out;
    }
    if (s->renameat(dirfd, tmp, dirfd, name) != 0) {
        rc = rally__fail_errno(e, RALLY_ESYS, errno, "cannot rename %s/%s to %s", where, tmp, name);
        goto fail;
    }
    if (stop_at(RALLY__SNAP_AT_DIRSYNC, name, done)) {
        rc = injected(e, where, name, "before the directory fsync");
        goto out;
    }
    if (s->fsync(dirfd) != 0) {
        rc = rally__fail_errno(e, RALLY_ESYS, errno,
                               "cannot fsync the directory %s after "
                               "writing %s",
                               where, name);
        goto out;
    }
    if (h != NULL)
        *xxh3 = XXH3_64bits_digest(h);
    goto out;
fail:
    if (fd >= 0)
        s->close(fd);
    s->unlinkat(dirfd, tmp, 0);
out:
    XXH3_freeState(h);
    return rc;
}

int rally__snap_opendir(int dirfd, const char *name, int nofollow, struct rally__err *e,
                        int *missing, int *out)
{
    int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0);
    int fd = openat(dirfd, name, flags);
    if (fd >= 0) {
        *out = fd;
        return RALLY_OK;
    }
    int err = errno;
    if (missing != NULL)
        *missing = err == ENOENT;
    if (err == ELOOP || err == ENOTDIR) {
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
            return rally__fail(e, RALLY_EPROTO,
                               "%s is a symbolic link; snapshots never follow "
                               "links",
                               name);
        if (err == ENOTDIR)
            return rally__fail(e, RALLY_EPROTO, "%s is not a directory", name);
    }
    return rally__fail_errno(e, RALLY_ESYS, err, "cannot open the directory %s", name);
}

int rally__snap_mkdir(int dirfd, const char *where, const char *name, int nofollow,
                      struct rally__err *e, int *out)
{
    const struct rally__snap_sys *s = &rally__snap_sys;
    int missing = 0;
    struct rally__err quiet = {0};
    if (rally__snap_opendir(dirfd, name, nofollow, &quiet, &missing, out) == RALLY_OK)
        return RALLY_OK;
    if (!missing)
        return rally__fail(e, quiet.code, "%s", quiet.msg);
    if (s->mkdirat(dirfd, name, 0755) != 0 && errno != EEXIST)
        return rally__fail_errno(e, RALLY_ESYS, errno, "cannot create the directory %s%s%s", where,
                                 *where ? "/" : "", name);
    if (dirfd != AT_FDCWD && s->fsync(dirfd) != 0)
        return rally__fail_errno(e, RALLY_ESYS, errno, "cannot fsync %s after creating %s", where,
                                 name);
    return rally__snap_opendir(dirfd, name, nofollow, e, NULL, out);
}
