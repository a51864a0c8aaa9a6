/*
 * store.c — the table of storage kinds and what every kind shares.
 */
#include "snapshot/store.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snapshot/snapshot.h"

/* A root's scheme picks its kind; a plain path is a directory.  A kind left
 * out of the build keeps its row, with no table: its roots are named, and
 * refused with the option that builds it. */
static const struct {
    const char *scheme, *option;
    const struct rally__store_ops *ops;
} KINDS[] = {
#if RALLY_S3
    {"s3", "RALLY_S3", &rally__store_s3},
#else
    {"s3", "RALLY_S3", NULL},
#endif
};

/* root's row in KINDS, or -1 for a plain path (a directory), or -2 for a
 * scheme no row names. */
static int kind_of(const char *root)
{
    const char *colon = strstr(root, "://");
    if (colon == NULL)
        return -1;
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++) {
        size_t n = strlen(KINDS[i].scheme);
        if ((size_t)(colon - root) == n && strncmp(root, KINDS[i].scheme, n) == 0)
            return (int)i;
    }
    return -2;
}

int rally__store_is_remote(const char *root)
{
    return kind_of(root) != -1;
}

int rally__store_open(const char *root, struct rally__err *e, struct rally__store **out)
{
    int i = kind_of(root);
    if (i == -2)
        return rally__fail(e, RALLY_EINVAL,
                           "%.200s: unknown storage scheme (a directory's path, or s3://BUCKET/PREFIX)",
                           root);
    if (i >= 0 && KINDS[i].ops == NULL)
        return rally__fail(e, RALLY_EINVAL,
                           "%.200s: this rally was built without %s:// storage (build it with "
                           "-D%s=ON, and libcurl and expat)",
                           root, KINDS[i].scheme, KINDS[i].option);
    const struct rally__store_ops *k = i >= 0 ? KINDS[i].ops : &rally__store_posix;
    int rc = k->open(root, e, out);
    if (rc == RALLY_OK) {
        (*out)->ops = k;
        snprintf((*out)->where, sizeof (*out)->where, "%s", root);
        size_t n = strlen((*out)->where);
        while (n > 1 && (*out)->where[n - 1] == '/')
            (*out)->where[--n] = '\0';
    }
    return rc;
}

void rally__store_close(struct rally__store *s)
{
    if (s != NULL)
        s->ops->close(s);
}

int rally__snap_absolute(const char *path, int exists, char *out, size_t cap, struct rally__err *e)
{
    char buf[PATH_MAX];
    const char *p = path;
    if (!rally__store_is_remote(path)) {
        if (realpath(path, buf) != NULL)
            p = buf;
        else if (exists || errno != ENOENT)
            return rally__fail_errno(e, RALLY_ESYS, errno, "%s", path);
        else if (path[0] != '/' && getcwd(buf, sizeof buf) != NULL &&
                 strlen(buf) + 1 + strlen(path) < sizeof buf)
            p = strcat(strcat(buf, "/"), path);
    }
    if ((size_t)snprintf(out, cap, "%s", p) >= cap)
        return rally__fail(e, RALLY_EINVAL, "the path %.80s... is too long", path);
    return RALLY_OK;
}

int rally__snap_probe(const char *root, const char *run_id, struct rally__err *e)
{
    struct rally__store *st = NULL;
    struct rally__snap_chunk c = {run_id, strlen(run_id)};
    char name[RALLY__SNAP_UUID_LEN + 16];
    snprintf(name, sizeof name, ".probe-%s", run_id); /* this run's own: no other writes it */
    int rc = rally__store_open(root, e, &st);
    if (rc == RALLY_OK && (rc = st->ops->put(st, "", name, &c, 1, e, NULL)) == RALLY_OK)
        rc = st->ops->remove(st, "", name, 0, e);
    rally__store_close(st);
    return rc;
}
