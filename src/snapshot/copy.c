/*
 * copy.c — a committed snapshot copied to another store (a second tier):
 * verified where it is, written part by part where it goes, committed
 * there last, and verified again there before it counts; or one rank's
 * files of a snapshot, byte for byte, each verified where it is and again
 * where it goes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/internal.h"
#include "snapshot/snapshot.h"
#include "snapshot/store.h"

int rally__snap_copy(const char *src, const char *root, struct rally__err *e, char *path,
                     size_t cap)
{
    void *mem = NULL, **buf = &mem;
    size_t space = 0, *room = &space;
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
    struct rally__snap_target t = {root, sm->job, sm->run_id, sm->version, sm->world, NULL};
    rc = rally__store_open(root, e, &t.st); /* one for every part */
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
    rally__store_close(t.st);
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
    free(mem);
    return rc;
}

int rally__snap_copy_files(const char *src, const struct rally__snap_target *t,
                           const struct rally__snap_file *files, int n, void **buf, size_t *room,
                           struct rally__err *e)
{
    char dir[RALLY__SNAP_JOB_MAX + RALLY__SNAP_NAME_MAX + 2], where[1100];
    struct rally__store *from = NULL, *to = NULL;
    /* what a header is held against: the run, version and world */
    struct rally__snap_manifest m;
    memset(&m, 0, sizeof m);
    snprintf(m.run_id, sizeof m.run_id, "%s", t->run_id);
    m.version = t->version;
    m.world = t->world;
    snprintf(dir, sizeof dir, "%s/", t->job);
    rally__snap_dir_name(t->version, dir + strlen(dir));
    int rc = rally__store_open(src, e, &from);
    if (rc == RALLY_OK)
        rc = rally__store_open(t->dir, e, &to);
    struct rally__snap_target into = *t; /* every file through the one store */
    into.st = to;
    for (int i = 0; i < n && rc == RALLY_OK; i++) {
        const struct rally__snap_file *f = &files[i];
        uint64_t sum = 0;
        if ((rc = rally__snap_read_file(from, dir, &m, f, buf, room, e)) != RALLY_OK ||
            (rc = rally__snap_put_file(&into, f->name, *buf, f->nbytes, e, &sum)) != RALLY_OK)
            break;
        rally__store_where(to, dir, where, sizeof where);
        if (sum != f->xxh3)
            rc = rally__fail(e, RALLY_EPROTO,
                             "copying %s to %s/%s wrote bytes with checksum %016llx, not %016llx",
                             f->name, where, f->name, (unsigned long long)sum,
                             (unsigned long long)f->xxh3);
        else /* it counts once it verifies where it is */
            rc = rally__snap_check_file(to, dir, &m, f, 1, e);
    }
    rally__store_close(to);
    rally__store_close(from);
    return rc;
}
