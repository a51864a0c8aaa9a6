/*
 * write.c — the writer: one rank's part of a snapshot (a model file with its
 * header) and the commit (the manifest, last), each through the durable
 * write.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/internal.h"
#include "snapshot/snapshot.h"
#include "snapshot/store.h"

/* rally__snap_fenced of job in st's root. */
static int fenced(struct rally__store *st, const char *job, const char *run_id,
                  struct rally__err *e)
{
    char jobdir[1100];
    rally__store_where(st, job, jobdir, sizeof jobdir);
    return rally__snap_fenced(jobdir, run_id, e);
}

/* RALLY_EINVAL when dir (in st) holds a manifest: committed already. */
static int committed(struct rally__store *st, const char *dir, struct rally__err *e)
{
    char where[1100];
    int missing = 0;
    uint64_t n;
    struct rally__err quiet = {0};
    rally__store_where(st, dir, where, sizeof where);
    if (st->ops->size(st, dir, RALLY__SNAP_MANIFEST, &quiet, &missing, &n) == RALLY_OK)
        return rally__fail(e, RALLY_EINVAL,
                           "%s is already committed (it has a %s); remove it "
                           "with rally-snapshot rm or write into another directory",
                           where, RALLY__SNAP_MANIFEST);
    if (!missing) /* the store's sentence names the manifest */
        return rally__fail(e, quiet.code, "%s", quiet.msg);
    return RALLY_OK;
}

/* name in t's snapshot directory, from the chunks: refused in a job an
 * older run is fenced out of, or a snapshot committed already. */
static int put(const struct rally__snap_target *t, const char *name,
               const struct rally__snap_chunk *c, int nchunks, struct rally__err *e,
               uint64_t *xxh3)
{
    char dir[RALLY__SNAP_JOB_MAX + RALLY__SNAP_NAME_MAX + 2];
    struct rally__store *st = NULL;
    int rc;
    snprintf(dir, sizeof dir, "%s/", t->job);
    rally__snap_dir_name(t->version, dir + strlen(dir));
    if (t->st != NULL)
        st = t->st;
    else if ((rc = rally__store_open(t->dir, e, &st)) != RALLY_OK)
        return rc;
    if ((rc = fenced(st, t->job, t->run_id, e)) == RALLY_OK &&
        (rc = committed(st, dir, e)) == RALLY_OK)
        rc = st->ops->put(st, dir, name, c, nchunks, e, xxh3);
    if (st != t->st)
        rally__store_close(st);
    return rc;
}

int rally__snap_write_part(const struct rally__snap_target *t, int rank, const void *bytes,
                           uint64_t nbytes, struct rally__err *e, struct rally__snap_file *out)
{
    unsigned char run[16], hdr[RALLY__SNAP_HEADER_NBYTES];
    int rc;
    if (!rally__snap_job_ok(t->job))
        return rally__fail(e, RALLY_EINVAL,
                           "job name \"%s\" is not 1 to %d of [A-Za-z0-9._-] "
                           "(not starting with '.')",
                           t->job, RALLY__SNAP_JOB_MAX);
    if (rally__snap_uuid_bytes(t->run_id, run) != 0)
        return rally__fail(e, RALLY_EINVAL, "run id \"%s\" is not a lowercase UUID", t->run_id);
    if (t->world < 1 || t->world > RALLY__SNAP_WORLD_MAX || rank < -1 || rank >= t->world)
        return rally__fail(e, RALLY_EINVAL,
                           "rank %d of a world of %d cannot be written "
                           "(1 to %d ranks)",
                           rank, t->world, RALLY__SNAP_WORLD_MAX);
    if (t->version > (uint64_t)INT64_MAX || nbytes > (uint64_t)INT64_MAX - sizeof hdr ||
        nbytes > SIZE_MAX || (nbytes > 0 && bytes == NULL))
        return rally__fail(e, RALLY_EINVAL,
                           "a model of %llu bytes at version %llu cannot be "
                           "written",
                           (unsigned long long)nbytes, (unsigned long long)t->version);
    struct snap_header h = {
        .kind = rank < 0 ? SNAP_KIND_GLOBAL : SNAP_KIND_LOCAL,
        .rank = rank < 0 ? SNAP_RANK_GLOBAL : (uint32_t)rank,
        .world = (uint32_t)t->world,
        .version = t->version,
        .payload_nbytes = nbytes,
        .payload_xxh3 = rally__snap_xxh3(bytes, (size_t)nbytes),
    };
    memcpy(h.run, run, 16);
    rally__snap_header_encode(&h, hdr);
    struct rally__snap_chunk c[2] = {{hdr, sizeof hdr}, {bytes, (size_t)nbytes}};
    struct rally__snap_file f;
    rally__snap_file_name(rank, f.name);
    /* the whole-file checksum in the write's own pass (the payload's, for
     * the header that comes first, needed one of its own above) */
    if ((rc = put(t, f.name, c, 2, e, &f.xxh3)) != RALLY_OK)
        return rc;
    f.nbytes = nbytes + sizeof hdr;
    *out = f;
    return RALLY_OK;
}

int rally__snap_put_file(const struct rally__snap_target *t, const char *name, const void *bytes,
                         uint64_t nbytes, struct rally__err *e, uint64_t *xxh3)
{
    if (nbytes > SIZE_MAX)
        return rally__fail(e, RALLY_EINVAL, "a file of %llu bytes cannot be written",
                           (unsigned long long)nbytes);
    struct rally__snap_chunk c = {bytes, (size_t)nbytes};
    return put(t, name, &c, 1, e, xxh3);
}

int rally__snap_commit(const char *root, const struct rally__snap_manifest *m,
                       struct rally__err *e, char *path, size_t cap)
{
    char dir[RALLY__SNAP_JOB_MAX + RALLY__SNAP_NAME_MAX + 2], where[1100];
    char *text = NULL;
    size_t n = 0;
    struct rally__store *st = NULL;
    int rc;
    if ((rc = rally__snap_manifest_encode(m, e, &text, &n)) != RALLY_OK)
        return rc;
    snprintf(dir, sizeof dir, "%s/", m->job);
    rally__snap_dir_name(m->version, dir + strlen(dir));
    if ((rc = rally__store_open(root, e, &st)) != RALLY_OK)
        goto out;
    rally__store_where(st, dir, where, sizeof where);
    if ((rc = fenced(st, m->job, m->run_id, e)) != RALLY_OK ||
        (rc = committed(st, dir, e)) != RALLY_OK)
        goto out;
    for (size_t i = 0; i < m->nfiles; i++) {
        struct rally__err why = {0};
        if ((rc = rally__snap_check_file(st, dir, m, &m->files[i], 0, &why)) != RALLY_OK) {
            rc = rally__fail(e, rc, "cannot commit snapshot version %llu of %s: %s",
                             (unsigned long long)m->version, m->job, why.msg);
            goto out;
        }
    }
    struct rally__snap_chunk c = {text, n};
    if ((rc = st->ops->put(st, dir, RALLY__SNAP_MANIFEST, &c, 1, e, NULL)) != RALLY_OK)
        goto out;
    if (path != NULL)
        snprintf(path, cap, "%s", where);
out:
    free(text);
    rally__store_close(st);
    return rc;
}
