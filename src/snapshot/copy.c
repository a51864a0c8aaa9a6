/*
 * copy.c — a committed snapshot copied to another store (a second tier):
 * verified where it is, written part by part where it goes, committed
 * there last, and verified again there before it counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/internal.h"
#include "snapshot/snapshot.h"

int rally__snap_copy(const char *src, const char *root, struct rally__err *e, char *path,
                     size_t cap)
{
    void *buf = NULL;
    size_t room = 0;
    int rc = rally__snap_copy_into(src, root, &buf, &room, e, path, cap);
    free(buf);
    return rc;
}

int rally__snap_copy_into(const char *src, const char *root, void **buf, size_t *room,
                          struct rally__err *e, char *path, size_t cap)
{
    struct rally__snap *in = NULL, *back = NULL;
    struct rally__snap_manifest *there = NULL;
    int rc;
    char where[1200];
    /* sizes first; each part is verified completely as it is read */
    if ((rc = rally__snap_open_sizes(src, e, &in)) != RALLY_OK)
        return rc;
    const struct rally__snap_manifest *sm = rally__snap_manifest(in);
    snprintf(where, sizeof where, "%s/%s/", root, sm->job);
    rally__snap_dir_name(sm->version, where + strlen(where));
    struct rally__err quiet = {0};
    if (rally__snap_read_manifest(where, &quiet, &there) == RALLY_OK &&
        strcmp(there->snapshot_id, sm->snapshot_id) == 0) {
        rc = rally__snap_open(where, e, &back); /* copied before: it counts if it verifies */
        goto out;
    }
    struct rally__snap_target t = {root, sm->job, sm->run_id, sm->version, sm->world};
    for (size_t i = 0; i < sm->nfiles && rc == RALLY_OK; i++) {
        const struct rally__snap_file *f = &sm->files[i];
        int rank = rally__snap_file_rank(f->name);
        uint64_t n = 0;
        struct rally__snap_file got;
        if ((rc = rally__snap_read_into(in, rank, e, buf, room, &n)) == RALLY_OK &&
            (rc = rally__snap_write_part(&t, rank, *buf, n, e, &got)) == RALLY_OK &&
            (got.nbytes != f->nbytes || got.xxh3 != f->xxh3))
            rc = rally__fail(e, RALLY_EPROTO,
                             "copying %s/%s wrote %llu bytes with checksum %016llx, the "
                             "manifest says %llu and %016llx",
                             src, f->name, (unsigned long long)got.nbytes,
                             (unsigned long long)got.xxh3, (unsigned long long)f->nbytes,
                             (unsigned long long)f->xxh3);
    }
    if (rc == RALLY_OK)
        rc = rally__snap_commit(root, sm, e, where, sizeof where);
    /* the copy counts once every part verifies where it is */
    if (rc == RALLY_OK)
        rc = rally__snap_open(where, e, &back);
out:
    if (rc == RALLY_OK && path != NULL)
        snprintf(path, cap, "%s", where);
    rally__snap_close(back);
    rally__snap_manifest_free(there);
    rally__snap_close(in);
    return rc;
}
