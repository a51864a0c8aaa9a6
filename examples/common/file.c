/*
 * file.c — the examples' model files: the durable write and whole-file reads
 * (file.h).
 */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void dir_of(const char *path, char *dir, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(dir, cap, ".");
    else if (slash == path)
        snprintf(dir, cap, "/");
    else
        snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

/* Writes n bytes to fd, and fsyncs it.  0, or -1 with errno set. */
static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return fsync(fd);
}

/* The rename is durable only once the directory's entry is on disk too. */
static int sync_dir(const char *path)
{
    char dir[4096];
    dir_of(path, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    if (rc != 0 && errno == EINVAL) /* a file system that cannot sync directories */
        rc = 0;
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int ex_write_file(const char *path, const void *buf, size_t n, char *err, size_t cap)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp) {
        snprintf(err, cap, "%.200s...: the path is too long", path);
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        snprintf(err, cap, "%s: cannot open for writing: %s", tmp, strerror(errno));
        return -1;
    }
    int ok = write_all(fd, buf, n) == 0;
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        e = errno;
    }
    if (!ok) {
        snprintf(err, cap, "%s: cannot write: %s", path, strerror(e));
        remove(tmp);
        return -1;
    }
    if (sync_dir(path) != 0) {
        snprintf(err, cap, "%s: written, but its directory cannot be synced: %s", path,
                 strerror(errno));
        return -1;
    }
    return 0;
}

int ex_slurp(const char *path, size_t max_nbytes, unsigned char **out, size_t *nbytes, char *err,
             size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, cap, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    size_t room = (size_t)1 << 16, n = 0;
    unsigned char *b = NULL;
    for (;;) {
        unsigned char *nb = realloc(b, room);
        if (nb == NULL) {
            snprintf(err, cap, "out of memory");
            goto fail;
        }
        b = nb;
        n += fread(b + n, 1, room - n, f);
        if (n < room)
            break;
        if (room > max_nbytes) {
            snprintf(err, cap, "%s: larger than %zu bytes", path, max_nbytes);
            goto fail;
        }
        room *= 2;
    }
    if (ferror(f)) {
        snprintf(err, cap, "%s: a read error", path);
        goto fail;
    }
    fclose(f);
    *out = b;
    *nbytes = n;
    return 0;
fail:
    free(b);
    fclose(f);
    return -1;
}
