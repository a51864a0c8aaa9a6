/*
 * read.c — the reader: open a snapshot directory, verify every file's size,
 * checksum and header before handing out a byte, then read the models.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "snapshot/internal.h"
#include "snapshot/snapshot.h"
#include "snapshot/sys.h"

#define SCRATCH_NBYTES ((size_t)1 << 20)

struct rally__snap {
    int dfd;
    char where[512];
    struct rally__snap_manifest *m;
};

/* Opens a regular file name in dfd without following a link. */
static int open_file(int dfd, const char *where, const char *name, struct rally__err *e,
                     int *missing, int *fd_out, struct stat *st)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int err = errno;
        if (missing)
            *missing = err == ENOENT;
        if (err == ELOOP)
            return rally__fail(e, RALLY_EPROTO,
                               "%s/%s is a symbolic link; a snapshot never "
                               "holds links",
                               where, name);
        if (err == ENOENT)
            return rally__fail(e, RALLY_EPROTO, "%s/%s is missing", where, name);
        return rally__fail_errno(e, RALLY_ESYS, err, "cannot open %s/%s", where, name);
    }
    if (fstat(fd, st) != 0) {
        int err = errno;
        close(fd);
        return rally__fail_errno(e, RALLY_ESYS, err, "cannot stat %s/%s", where, name);
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        return rally__fail(e, RALLY_EPROTO, "%s/%s is not a regular file", where, name);
    }
    *fd_out = fd;
    return RALLY_OK;
}

/* Reads exactly n bytes; a short file is RALLY_EPROTO. */
static int read_exact(int fd, void *p, size_t n, const char *where, const char *name,
                      struct rally__err *e)
{
    unsigned char *q = p;
    while (n > 0) {
        ssize_t r = read(fd, q, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return rally__fail_errno(e, RALLY_ESYS, errno, "cannot read %s/%s", where, name);
        if (r == 0)
            return rally__fail(e, RALLY_EPROTO, "%s/%s ended early (it changed while read)", where,
                               name);
        q += r;
        n -= (size_t)r;
    }
    return RALLY_OK;
}

int rally__snap_load_manifest(int dfd, const char *where, struct rally__err *e,
                              struct rally__snap_manifest **out)
{
    int fd = -1, missing = 0, rc;
    struct stat st;
    char *buf = NULL;
    struct rally__err quiet = {0};
    if ((rc = open_file(dfd, where, RALLY__SNAP_MANIFEST, &quiet, &missing, &fd, &st)) != 0) {
        if (missing)
            return rally__fail(e, RALLY_EPROTO,
                               "%s is incomplete: it has no %s (the snapshot "
                               "was never committed)",
                               where, RALLY__SNAP_MANIFEST);
        return rally__fail(e, rc, "%s", quiet.msg);
    }
    if ((uint64_t)st.st_size > RALLY__SNAP_MANIFEST_MAX) {
        rc = rally__fail(e, RALLY_EPROTO, "%s/%s is %lld bytes, at most %u", where,
                         RALLY__SNAP_MANIFEST, (long long)st.st_size, RALLY__SNAP_MANIFEST_MAX);
        goto out;
    }
    size_t n = (size_t)st.st_size;
    if ((buf = malloc(n + 1)) == NULL) {
        rc = rally__fail(e, RALLY_ENOMEM, "out of memory reading %s/%s", where,
                         RALLY__SNAP_MANIFEST);
        goto out;
    }
    if ((rc = read_exact(fd, buf, n, where, RALLY__SNAP_MANIFEST, e)) != RALLY_OK)
        goto out;
    struct rally__err pe = {0};
    if ((rc = rally__snap_manifest_parse(buf, n, &pe, out)) != RALLY_OK)
        rc = rally__fail(e, rc, "%s/%s", where, pe.msg);
out:
    free(buf);
    close(fd);
    return rc;
}

int rally__snap_check_file(int dfd, const char *where, const struct rally__snap_manifest *m,
                           const struct rally__snap_file *f, int full, struct rally__err *e,
                           void **payload)
{
    int fd = -1, rc;
    struct stat st;
    unsigned char hdr[RALLY__SNAP_HEADER_NBYTES];
    unsigned char *scratch = NULL, *keep = NULL;
    XXH3_state_t *whole = NULL, *pay = NULL;
    if ((rc = open_file(dfd, where, f->name, e, NULL, &fd, &st)) != RALLY_OK)
        return rc;
    if ((uint64_t)st.st_size != f->nbytes) {
        rc = rally__fail(e, RALLY_EPROTO, "%s/%s is %lld bytes, the manifest says %llu", where,
                         f->name, (long long)st.st_size, (unsigned long long)f->nbytes);
        goto out;
    }
    if (!full)
        goto out;
    uint64_t pn = f->nbytes - RALLY__SNAP_HEADER_NBYTES;
    whole = XXH3_createState();
    pay = XXH3_createState();
    if (whole == NULL || pay == NULL || (payload != NULL && pn > SIZE_MAX) ||
        (payload != NULL && pn > 0 && (keep = malloc((size_t)pn)) == NULL) ||
        (payload == NULL && (scratch = malloc(SCRATCH_NBYTES)) == NULL)) {
        rc = rally__fail(e, RALLY_ENOMEM, "out of memory reading %s/%s", where, f->name);
        goto out;
    }
    XXH3_64bits_reset(whole);
    XXH3_64bits_reset(pay);
    if ((rc = read_exact(fd, hdr, sizeof hdr, where, f->name, e)) != RALLY_OK)
        goto out;
    XXH3_64bits_update(whole, hdr, sizeof hdr);
    for (uint64_t done = 0; done < pn;) { /* a piece at a time: hashed while in the cache */
        size_t k = SCRATCH_NBYTES;
        if (k > pn - done)
            k = (size_t)(pn - done);
        unsigned char *p = keep ? keep + done : scratch;
        if ((rc = read_exact(fd, p, k, where, f->name, e)) != RALLY_OK)
            goto out;
        XXH3_64bits_update(whole, p, k);
        XXH3_64bits_update(pay, p, k);
        done += k;
    }
    uint64_t got = XXH3_64bits_digest(whole);
    if (got != f->xxh3) {
        rc = rally__fail(e, RALLY_EPROTO,
                         "%s/%s's checksum is %016llx, the manifest says "
                         "%016llx: the file is damaged",
                         where, f->name, (unsigned long long)got, (unsigned long long)f->xxh3);
        goto out;
    }
    struct snap_header h;
    char name[600];
    snprintf(name, sizeof name, "%s/%s", where, f->name);
    if ((rc = rally__snap_header_decode(hdr, name, e, &h)) != RALLY_OK)
        goto out;
    int rank = rally__snap_file_rank(f->name);
    uint32_t want_kind = rank < 0 ? SNAP_KIND_GLOBAL : SNAP_KIND_LOCAL;
    uint32_t want_rank = rank < 0 ? SNAP_RANK_GLOBAL : (uint32_t)rank;
    unsigned char run[16];
    rally__snap_uuid_bytes(m->run_id, run);
    if (h.kind != want_kind || h.rank != want_rank)
        rc = rally__fail(e, RALLY_EPROTO,
                         "%s holds kind %u rank %u, its name says kind %u rank "
                         "%u",
                         name, h.kind, h.rank, want_kind, want_rank);
    else if (h.version != m->version)
        rc = rally__fail(e, RALLY_EPROTO,
                         "%s holds checkpoint version %llu, the manifest says "
                         "%llu",
                         name, (unsigned long long)h.version, (unsigned long long)m->version);
    else if (h.world != (uint32_t)m->world)
        rc = rally__fail(e, RALLY_EPROTO, "%s was written by a world of %u, the manifest says %d",
                         name, h.world, m->world);
    else if (memcmp(h.run, run, 16) != 0)
        rc = rally__fail(e, RALLY_EPROTO, "%s was written by another run than the manifest's %s",
                         name, m->run_id);
    else if (h.payload_nbytes != pn)
        rc = rally__fail(e, RALLY_EPROTO,
                         "%s's header says %llu payload bytes, the file holds "
                         "%llu",
                         name, (unsigned long long)h.payload_nbytes, (unsigned long long)pn);
    else if ((got = XXH3_64bits_digest(pay)) != h.payload_xxh3)
        rc = rally__fail(e, RALLY_EPROTO,
                         "%s's payload checksum is %016llx, its header says "
                         "%016llx",
                         name, (unsigned long long)got, (unsigned long long)h.payload_xxh3);
    if (rc == RALLY_OK && payload != NULL) {
        *payload = keep;
        keep = NULL;
    }
out:
    free(keep);
    free(scratch);
    XXH3_freeState(whole);
    XXH3_freeState(pay);
    close(fd);
    return rc;
}

static int open_snap(const char *path, int full, struct rally__err *e, struct rally__snap **out)
{
    struct rally__snap *s = calloc(1, sizeof *s);
    int rc;
    if (s == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory opening the snapshot %s", path);
    s->dfd = -1;
    snprintf(s->where, sizeof s->where, "%s", path);
    size_t n = strlen(s->where);
    while (n > 1 && s->where[n - 1] == '/')
        s->where[--n] = '\0';
    if ((rc = rally__snap_opendir(AT_FDCWD, path, 0, e, NULL, &s->dfd)) != RALLY_OK ||
        (rc = rally__snap_load_manifest(s->dfd, s->where, e, &s->m)) != RALLY_OK)
        goto fail;
    for (size_t i = 0; i < s->m->nfiles; i++)
        if ((rc = rally__snap_check_file(s->dfd, s->where, s->m, &s->m->files[i], full, e, NULL)) !=
            RALLY_OK)
            goto fail;
    *out = s;
    return RALLY_OK;
fail:
    rally__snap_close(s);
    return rc;
}

int rally__snap_open(const char *path, struct rally__err *e, struct rally__snap **out)
{
    return open_snap(path, 1, e, out);
}

int rally__snap_open_sizes(const char *path, struct rally__err *e, struct rally__snap **out)
{
    return open_snap(path, 0, e, out);
}

int rally__snap_read_manifest(const char *path, struct rally__err *e,
                              struct rally__snap_manifest **out)
{
    int dfd = -1;
    int rc = rally__snap_opendir(AT_FDCWD, path, 0, e, NULL, &dfd);
    if (rc != RALLY_OK)
        return rc;
    rc = rally__snap_load_manifest(dfd, path, e, out);
    close(dfd);
    return rc;
}

void rally__snap_close(struct rally__snap *s)
{
    if (s == NULL)
        return;
    if (s->dfd >= 0)
        close(s->dfd);
    rally__snap_manifest_free(s->m);
    free(s);
}

const struct rally__snap_manifest *rally__snap_manifest(const struct rally__snap *s)
{
    return s->m;
}

int rally__snap_has_local(const struct rally__snap *s)
{
    return s->m->nfiles > 1;
}

int rally__snap_read(struct rally__snap *s, int rank, struct rally__err *e, void **bytes,
                     uint64_t *nbytes)
{
    char name[RALLY__SNAP_NAME_MAX];
    if (rank < -1 || rank >= s->m->world)
        return rally__fail(e, RALLY_EINVAL, "rank %d is not in this snapshot's world of %d", rank,
                           s->m->world);
    rally__snap_file_name(rank, name);
    for (size_t i = 0; i < s->m->nfiles; i++) {
        const struct rally__snap_file *f = &s->m->files[i];
        if (strcmp(f->name, name) != 0)
            continue;
        void *p = NULL;
        int rc = rally__snap_check_file(s->dfd, s->where, s->m, f, 1, e, &p);
        if (rc != RALLY_OK)
            return rc;
        *bytes = p;
        *nbytes = f->nbytes - RALLY__SNAP_HEADER_NBYTES;
        return RALLY_OK;
    }
    return rally__fail(e, RALLY_EINVAL, "%s holds no local model for rank %d (it has %s)", s->where,
                       rank, s->m->nfiles > 1 ? "local models" : "only a global model");
}
