/*
 * write.c — the writer: one rank's part of a snapshot (a model file with its
 * header) and the commit (the manifest, last), each through the durable
 * write.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snapshot/internal.h"
#include "snapshot/snapshot.h"
#include "snapshot/sys.h"

/* Opens <dir>/<job>/snap-<version>, creating what is missing when create. */
static int open_snapdir(const char *dir, const char *job, uint64_t version, int create,
                        struct rally__err *e, char *where, size_t cap, int *out)
{
    int root = -1, jfd = -1, rc;
    char name[RALLY__SNAP_NAME_MAX];
    rally__snap_dir_name(version, name);
    if (create)
        rc = rally__snap_mkdir(AT_FDCWD, "", dir, 0, e, &root);
    else
        rc = rally__snap_opendir(AT_FDCWD, dir, 0, e, NULL, &root);
    if (rc != RALLY_OK)
        return rc;
    snprintf(where, cap, "%s", dir);
    if (create)
        rc = rally__snap_mkdir(root, where, job, 1, e, &jfd);
    else
        rc = rally__snap_opendir(root, job, 1, e, NULL, &jfd);
    if (rc == RALLY_OK) {
        snprintf(where, cap, "%s/%s", dir, job);
        if (create)
            rc = rally__snap_mkdir(jfd, where, name, 1, e, out);
        else
            rc = rally__snap_opendir(jfd, name, 1, e, NULL, out);
        snprintf(where, cap, "%s/%s/%s", dir, job, name);
    }
    close(root);
    if (jfd >= 0)
        close(jfd);
    return rc;
}

static int committed(int sfd, const char *where, struct rally__err *e)
{
    struct stat st;
    if (fstatat(sfd, RALLY__SNAP_MANIFEST, &st, AT_SYMLINK_NOFOLLOW) == 0)
        return rally__fail(e, RALLY_EINVAL,
                           "%s is already committed (it has a %s); remove it "
                           "with rally-snapshot rm or write into another directory",
                           where, RALLY__SNAP_MANIFEST);
    if (errno != ENOENT)
        return rally__fail_errno(e, RALLY_ESYS, errno, "cannot look at %s/%s", where,
                                 RALLY__SNAP_MANIFEST);
    return RALLY_OK;
}

int rally__snap_write_part(const struct rally__snap_target *t, int rank, const void *bytes,
                           uint64_t nbytes, struct rally__err *e, struct rally__snap_file *out)
{
    unsigned char run[16], hdr[RALLY__SNAP_HEADER_NBYTES];
    char where[1024];
    int sfd = -1, rc;
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
    snprintf(where, sizeof where, "%s/%s", t->dir, t->job);
    if ((rc = rally__snap_fenced(where, t->run_id, e)) != RALLY_OK)
        return rc;
    if ((rc = open_snapdir(t->dir, t->job, t->version, 1, e, where, sizeof where, &sfd)) !=
            RALLY_OK ||
        (rc = committed(sfd, where, e)) != RALLY_OK)
        goto out;
    struct rally__snap_chunk c[2] = {{hdr, sizeof hdr}, {bytes, (size_t)nbytes}};
    struct rally__snap_file f;
    rally__snap_file_name(rank, f.name);
    /* the whole-file checksum in the write's own pass (the payload's, for
     * the header that comes first, needed one of its own above) */
    if ((rc = rally__snap_durable_write(sfd, where, f.name, c, 2, e, &f.xxh3)) != RALLY_OK)
        goto out;
    f.nbytes = nbytes + sizeof hdr;
    *out = f;
out:
    if (sfd >= 0)
        close(sfd);
    return rc;
}

int rally__snap_commit(const char *dir, const struct rally__snap_manifest *m, struct rally__err *e,
                       char *path, size_t cap)
{
    char where[1024];
    char *text = NULL;
    size_t n = 0;
    int sfd = -1, rc;
    struct rally__err quiet = {0};
    if ((rc = rally__snap_manifest_encode(m, e, &text, &n)) != RALLY_OK)
        return rc;
    snprintf(where, sizeof where, "%s/%s", dir, m->job);
    if ((rc = rally__snap_fenced(where, m->run_id, e)) != RALLY_OK)
        goto out;
    if ((rc = open_snapdir(dir, m->job, m->version, 0, &quiet, where, sizeof where, &sfd)) !=
        RALLY_OK) {
        rc = rally__fail(e, rc, "cannot commit snapshot version %llu of %s: %s",
                         (unsigned long long)m->version, m->job, quiet.msg);
        goto out;
    }
    if ((rc = committed(sfd, where, e)) != RALLY_OK)
        goto out;
    for (size_t i = 0; i < m->nfiles; i++)
        if ((rc = rally__snap_check_file(sfd, where, m, &m->files[i], 0, e, NULL)) != RALLY_OK)
            goto out;
    struct rally__snap_chunk c = {text, n};
    if ((rc = rally__snap_durable_write(sfd, where, RALLY__SNAP_MANIFEST, &c, 1, e, NULL)) !=
        RALLY_OK)
        goto out;
    if (path != NULL)
        snprintf(path, cap, "%s", where);
out:
    free(text);
    if (sfd >= 0)
        close(sfd);
    return rc;
}
