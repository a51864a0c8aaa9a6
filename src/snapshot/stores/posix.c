/*
 * posix.c — the storage kind of a plain path: a directory tree, as
 * docs/snapshot-format.md lays it out.  The root is taken as given; every
 * name below it is opened relative to its parent's descriptor with
 * O_NOFOLLOW, so a link below the root is an error, never followed.  Every
 * write and removal goes through the syscall table (sys.h), in the order
 * its tests pin.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snapshot/store.h"

#define PIECE_NBYTES ((size_t)1 << 20)

struct posix_store {
    struct rally__store base; /* base.where: the root */
    unsigned char *scratch;   /* a get's piece, kept for the store's life */
};

static int posix_open(const char *root, struct rally__err *e, struct rally__store **out)
{
    struct posix_store *p = calloc(1, sizeof *p);
    if (p == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory opening %s", root);
    if (strlen(root) >= sizeof p->base.where) {
        free(p);
        return rally__fail(e, RALLY_EINVAL, "the path %.80s... is too long", root);
    }
    *out = &p->base;
    return RALLY_OK;
}

static void posix_close(struct rally__store *s)
{
    struct posix_store *p = (struct posix_store *)s;
    free(p->scratch);
    free(p);
}

/* Opens dir below the root (creating what is missing when create, each
 * new entry made durable), into *out. */
static int chain(struct posix_store *p, const char *dir, int create, struct rally__err *e,
                 int *missing, int *out)
{
    const char *root = p->base.where;
    char where[1100], name[256];
    int fd = -1, rc;
    snprintf(where, sizeof where, "%s", root);
    if (create)
        rc = rally__snap_mkdir(AT_FDCWD, "", root, 0, e, &fd);
    else
        rc = rally__snap_opendir(AT_FDCWD, root, 0, e, missing, &fd);
    for (const char *d = dir; rc == RALLY_OK && *d;) {
        size_t n = strcspn(d, "/");
        if (n == 0 || n >= sizeof name) {
            rc = rally__fail(e, RALLY_EINVAL, "\"%s\" is not a name below %s", dir, root);
            break;
        }
        memcpy(name, d, n);
        name[n] = '\0';
        int next = -1;
        if (create)
            rc = rally__snap_mkdir(fd, where, name, 1, e, &next);
        else
            rc = rally__snap_opendir(fd, name, 1, e, missing, &next);
        close(fd);
        fd = next;
        size_t used = strlen(where);
        snprintf(where + used, sizeof where - used, "/%s", name);
        d += n + (d[n] == '/');
    }
    if (rc == RALLY_OK)
        *out = fd;
    return rc;
}

static int posix_put(struct rally__store *s, const char *dir, const char *name,
                     const struct rally__snap_chunk *c, int nchunks, struct rally__err *e,
                     uint64_t *xxh3)
{
    char where[1100];
    int dfd = -1;
    int rc = chain((struct posix_store *)s, dir, 1, e, NULL, &dfd);
    if (rc != RALLY_OK)
        return rc;
    rally__store_where(s, dir, where, sizeof where);
    rc = rally__snap_durable_write(dfd, where, name, c, nchunks, e, xxh3);
    close(dfd);
    return rc;
}

/* Opens dir/name, a regular file (never through a link), for reading. */
static int open_file(struct posix_store *p, const char *dir, const char *name,
                     struct rally__err *e, int *missing, int *out, struct stat *st)
{
    char where[1100];
    int dfd = -1, fd, err = 0;
    int rc = chain(p, dir, 0, e, missing, &dfd);
    if (rc != RALLY_OK)
        return rc;
    rally__store_where(&p->base, dir, where, sizeof where);
    fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 || fstat(fd, st) != 0)
        err = errno;
    close(dfd);
    if (missing != NULL)
        *missing = err == ENOENT;
    if (err == ELOOP)
        rc = rally__fail(e, RALLY_EPROTO, "%s/%s is a symbolic link; a snapshot never holds links",
                         where, name);
    else if (err == ENOENT)
        rc = rally__fail(e, RALLY_EPROTO, "%s/%s is missing", where, name);
    else if (err != 0)
        rc = rally__fail_errno(e, RALLY_ESYS, err, "cannot open %s/%s", where, name);
    else if (!S_ISREG(st->st_mode))
        rc = rally__fail(e, RALLY_EPROTO, "%s/%s is not a regular file", where, name);
    if (rc == RALLY_OK)
        *out = fd;
    else if (fd >= 0)
        close(fd);
    return rc;
}

static int posix_size(struct rally__store *s, const char *dir, const char *name,
                      struct rally__err *e, int *missing, uint64_t *nbytes)
{
    struct stat st;
    int fd = -1;
    int rc = open_file((struct posix_store *)s, dir, name, e, missing, &fd, &st);
    if (rc == RALLY_OK) {
        close(fd);
        *nbytes = (uint64_t)st.st_size;
    }
    return rc;
}

static int posix_get(struct rally__store *s, const char *dir, const char *name, uint64_t max,
                     rally__store_sink sink, void *arg, struct rally__err *e, int *missing)
{
    struct posix_store *p = (struct posix_store *)s;
    struct stat st;
    int fd = -1;
    int rc = open_file(p, dir, name, e, missing, &fd, &st);
    if (rc != RALLY_OK)
        return rc;
    if (p->scratch == NULL && (p->scratch = malloc(PIECE_NBYTES)) == NULL) {
        close(fd);
        return rally__fail(e, RALLY_ENOMEM, "out of memory reading %s/%s", s->where, name);
    }
    for (uint64_t done = 0; done < max;) {
        size_t k = max - done < PIECE_NBYTES ? (size_t)(max - done) : PIECE_NBYTES;
        ssize_t r = read(fd, p->scratch, k);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            char where[1100];
            rally__store_where(s, dir, where, sizeof where);
            rc = rally__fail_errno(e, RALLY_ESYS, errno, "cannot read %s/%s", where, name);
            break;
        }
        if (r == 0 || sink(arg, p->scratch, (size_t)r) != 0)
            break;
        done += (uint64_t)r;
    }
    close(fd);
    return rc;
}

static int posix_list(struct rally__store *s, const char *dir, struct rally__err *e, int *missing,
                      char ***names, size_t *count)
{
    char where[1100];
    int dfd = -1;
    int rc = chain((struct posix_store *)s, dir, 0, e, missing, &dfd);
    if (rc != RALLY_OK)
        return rc;
    rally__store_where(s, dir, where, sizeof where);
    DIR *d = fdopendir(dfd);
    char **v = NULL;
    size_t n = 0, cap = 0;
    if (d == NULL) {
        rc = rally__fail_errno(e, RALLY_ESYS, errno, "cannot list %s", where);
        close(dfd);
        return rc;
    }
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **nv = realloc(v, cap * sizeof *v);
            if (nv == NULL)
                goto nomem;
            v = nv;
        }
        if ((v[n] = strdup(de->d_name)) == NULL)
            goto nomem;
        n++;
    }
    closedir(d);
    *names = v;
    *count = n;
    return RALLY_OK;
nomem:
    closedir(d);
    rally__store_free_names(v, n);
    return rally__fail(e, RALLY_ENOMEM, "out of memory listing %s", where);
}

static int posix_remove(struct rally__store *s, const char *dir, const char *name, int durable,
                        struct rally__err *e)
{
    const struct rally__snap_sys *y = &rally__snap_sys;
    char parent[1024], where[1100];
    const char *leaf = name;
    int dfd = -1, flags = 0, rc;
    snprintf(parent, sizeof parent, "%s", dir);
    if (name == NULL) { /* dir itself: from its parent */
        char *slash = strrchr(parent, '/');
        leaf = slash ? slash + 1 : dir;
        if (slash)
            *slash = '\0';
        else
            parent[0] = '\0';
        flags = AT_REMOVEDIR;
    }
    if ((rc = chain((struct posix_store *)s, parent, 0, e, NULL, &dfd)) != RALLY_OK)
        return rc;
    rally__store_where(s, parent, where, sizeof where);
    if (y->unlinkat(dfd, leaf, flags) != 0 && errno != ENOENT)
        rc = rally__fail_errno(e, RALLY_ESYS, errno, "cannot remove %s%s/%s", flags ? "the directory " : "",
                               where, leaf);
    else if (durable && y->fsync(dfd) != 0)
        rc = rally__fail_errno(e, RALLY_ESYS, errno, "cannot fsync %s", where);
    close(dfd);
    return rc;
}

const struct rally__store_ops rally__store_posix = {
    .scheme = NULL,
    .open = posix_open,
    .close = posix_close,
    .put = posix_put,
    .size = posix_size,
    .get = posix_get,
    .list = posix_list,
    .remove = posix_remove,
};
