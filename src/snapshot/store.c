/*
 * store.c — the table of storage kinds: a root's kind, opening and closing
 * its store.
 */
#include "snapshot/store.h"

#include <stdio.h>
#include <string.h>

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

uint64_t rally__store_opens;

int rally__store_open(const char *root, struct rally__err *e, struct rally__store **out)
{
    __atomic_add_fetch(&rally__store_opens, 1, __ATOMIC_RELAXED);
    int i = kind_of(root);
    if (i == -2)
        return rally__fail(e, RALLY_EINVAL,
                           "%.200s: unknown storage scheme (a directory's path, or "
                           "s3://BUCKET/PREFIX)",
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
