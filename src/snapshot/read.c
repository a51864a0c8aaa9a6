/*
 * read.c — the reader: open a snapshot, verify every file's size, checksum
 * and header before handing out a byte, then read the models.  Bytes come
 * through the store (store.h), so a snapshot reads alike from a directory
 * and from an object store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "snapshot/internal.h"
#include "snapshot/snapshot.h"
#include "snapshot/store.h"

struct rally__snap {
    struct rally__store *st; /* its where is the snapshot's path */
    struct rally__snap_manifest *m;
};

/* A get into one growing buffer of at most max bytes. */
struct fill {
    unsigned char *p;
    size_t n, cap, max;
    int over; /* more bytes came than max, or no memory for them */
};

static int fill_sink(void *arg, const void *p, size_t n)
{
    struct fill *f = arg;
    if (n > f->max - f->n) {
        f->over = 1;
        return 1;
    }
    if (f->n + n > f->cap) {
        size_t cap = f->cap ? f->cap : 4096;
        while (cap < f->n + n)
            cap *= 2;
        unsigned char *q = realloc(f->p, cap);
        if (q == NULL) {
            f->over = 2;
            return 1;
        }
        f->p = q;
        f->cap = cap;
    }
    memcpy(f->p + f->n, p, n);
    f->n += n;
    return 0;
}

int rally__snap_load_manifest(struct rally__store *st, const char *dir, struct rally__err *e,
                              struct rally__snap_manifest **out)
{
    char where[1100];
    int missing = 0, rc;
    struct rally__err quiet = {0};
    /* one get, no size first: an object store answers each request slowly */
    struct fill f = {NULL, 0, 0, RALLY__SNAP_MANIFEST_MAX, 0};
    rally__store_where(st, dir, where, sizeof where);
    if ((rc = st->ops->get(st, dir, RALLY__SNAP_MANIFEST, (uint64_t)RALLY__SNAP_MANIFEST_MAX + 1,
                           fill_sink, &f, &quiet, &missing)) != RALLY_OK) {
        free(f.p);
        if (missing)
            return rally__fail(e, RALLY_EPROTO,
                               "%s is incomplete: it has no %s (the snapshot "
                               "was never committed)",
                               where, RALLY__SNAP_MANIFEST);
        return rally__fail(e, rc, "%s", quiet.msg);
    }
    if (f.over == 1)
        rc = rally__fail(e, RALLY_EPROTO, "%s/%s is over %u bytes", where, RALLY__SNAP_MANIFEST,
                         RALLY__SNAP_MANIFEST_MAX);
    else if (f.over)
        rc = rally__fail(e, RALLY_ENOMEM, "out of memory reading %s/%s", where,
                         RALLY__SNAP_MANIFEST);
    struct rally__err pe = {0};
    if (rc == RALLY_OK && (rc = rally__snap_manifest_parse((const char *)f.p, f.n, &pe, out)) !=
                              RALLY_OK)
        rc = rally__fail(e, rc, "%s/%s", where, pe.msg);
    free(f.p);
    return rc;
}

/* A model file streamed through: its header kept, both checksums as it
 * goes, the payload kept when asked. */
struct verify {
    unsigned char hdr[RALLY__SNAP_HEADER_NBYTES];
    uint64_t n, want; /* bytes seen, the manifest's size */
    int grew;         /* more bytes came than want */
    unsigned char *keep;
    int all; /* keep holds the whole file, header too (else the payload) */
    XXH3_state_t *whole, *pay;
};

static int verify_sink(void *arg, const void *p, size_t n)
{
    struct verify *v = arg;
    const unsigned char *q = p;
    if (n > v->want - v->n)
        return v->grew = 1; /* longer than the manifest says: changed while read */
    XXH3_64bits_update(v->whole, q, n);
    if (v->all)
        memcpy(v->keep + v->n, q, n);
    if (v->n < RALLY__SNAP_HEADER_NBYTES) {
        size_t k = RALLY__SNAP_HEADER_NBYTES - (size_t)v->n;
        if (k > n)
            k = n;
        memcpy(v->hdr + v->n, q, k);
        v->n += k;
        q += k;
        n -= k;
    }
    if (n > 0) {
        XXH3_64bits_update(v->pay, q, n);
        if (v->keep != NULL && !v->all)
            memcpy(v->keep + (v->n - RALLY__SNAP_HEADER_NBYTES), q, n);
        v->n += n;
    }
    return 0;
}

int rally__snap_size_agrees(const char *where, const struct rally__snap_file *f, uint64_t size,
                            struct rally__err *e)
{
    if (size == UINT64_MAX)
        return rally__fail(e, RALLY_EPROTO, "%s/%s is missing", where, f->name);
    if (size != f->nbytes)
        return rally__fail(e, RALLY_EPROTO, "%s/%s is %llu bytes, the manifest says %llu", where,
                           f->name, (unsigned long long)size, (unsigned long long)f->nbytes);
    return RALLY_OK;
}

/* rally__snap_check_file; with buf (full only), the payload (all: the
 * whole file) goes into *buf, the caller's buffer of *room bytes, grown
 * (realloc) when it is larger, and the caller's also on an error. */
static int check(struct rally__store *st, const char *dir, const struct rally__snap_manifest *m,
                 const struct rally__snap_file *f, int full, struct rally__err *e, void **buf,
                 size_t *room, int all);

int rally__snap_check_file(struct rally__store *st, const char *dir,
                           const struct rally__snap_manifest *m, const struct rally__snap_file *f,
                           int full, struct rally__err *e)
{
    return check(st, dir, m, f, full, e, NULL, NULL, 0);
}

int rally__snap_read_file(struct rally__store *st, const char *dir,
                          const struct rally__snap_manifest *m, const struct rally__snap_file *f,
                          void **buf, size_t *room, struct rally__err *e)
{
    return check(st, dir, m, f, 1, e, buf, room, 1);
}

static int check(struct rally__store *st, const char *dir, const struct rally__snap_manifest *m,
                 const struct rally__snap_file *f, int full, struct rally__err *e, void **buf,
                 size_t *room, int all)
{
    char where[1100];
    uint64_t size = 0;
    int rc;
    struct verify v = {.want = f->nbytes};
    rally__store_where(st, dir, where, sizeof where);
    if ((rc = st->ops->size(st, dir, f->name, e, NULL, &size)) != RALLY_OK ||
        (rc = rally__snap_size_agrees(where, f, size, e)) != RALLY_OK)
        return rc;
    if (!full)
        return RALLY_OK;
    uint64_t pn = f->nbytes - RALLY__SNAP_HEADER_NBYTES, kn = all ? f->nbytes : pn;
    v.whole = XXH3_createState();
    v.pay = XXH3_createState();
    if (buf != NULL && kn <= SIZE_MAX && kn > *room) {
        void *q = realloc(*buf, (size_t)kn);
        if (q != NULL) {
            *buf = q;
            *room = (size_t)kn;
        }
    }
    if (v.whole == NULL || v.pay == NULL || (buf != NULL && kn > *room)) {
        rc = rally__fail(e, RALLY_ENOMEM, "out of memory reading %s/%s", where, f->name);
        goto out;
    }
    v.keep = buf != NULL ? *buf : NULL;
    v.all = all;
    XXH3_64bits_reset(v.whole);
    XXH3_64bits_reset(v.pay);
    if ((rc = st->ops->get(st, dir, f->name, f->nbytes + 1, verify_sink, &v, e, NULL)) !=
        RALLY_OK)
        goto out;
    if (v.n != f->nbytes || v.grew) {
        rc = rally__fail(e, RALLY_EPROTO, "%s/%s %s (it changed while read)", where, f->name,
                         v.grew ? "grew" : "ended early");
        goto out;
    }
    uint64_t got = XXH3_64bits_digest(v.whole);
    if (got != f->xxh3) {
        rc = rally__fail(e, RALLY_EPROTO,
                         "%s/%s's checksum is %016llx, the manifest says "
                         "%016llx: the file is damaged",
                         where, f->name, (unsigned long long)got, (unsigned long long)f->xxh3);
        goto out;
    }
    struct snap_header h;
    char name[1200];
    snprintf(name, sizeof name, "%s/%s", where, f->name);
    if ((rc = rally__snap_header_decode(v.hdr, name, e, &h)) != RALLY_OK)
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
    else if ((got = XXH3_64bits_digest(v.pay)) != h.payload_xxh3)
        rc = rally__fail(e, RALLY_EPROTO,
                         "%s's payload checksum is %016llx, its header says "
                         "%016llx",
                         name, (unsigned long long)got, (unsigned long long)h.payload_xxh3);
out:
    XXH3_freeState(v.whole);
    XXH3_freeState(v.pay);
    return rc;
}

/* The manifest of the snapshot at st's root, which a user named: one
 * that does not exist at all is said so, not "incomplete". */
static int root_manifest(struct rally__store *st, struct rally__err *e,
                         struct rally__snap_manifest **out)
{
    int rc = rally__snap_load_manifest(st, "", e, out);
    if (rc != RALLY_EPROTO)
        return rc;
    char **names = NULL;
    size_t n = 0;
    int gone = 0;
    struct rally__err quiet = {0};
    if (st->ops->list(st, "", &quiet, &gone, &names, &n) != RALLY_OK && !gone)
        return rc;
    rally__store_free_names(names, n);
    return gone ? rally__fail_over(e, RALLY_ESYS, "cannot open the directory %s: it does not exist",
                                   st->where)
                : rc;
}

static int open_snap(const char *path, int full, struct rally__err *e, struct rally__snap **out)
{
    struct rally__snap *s = calloc(1, sizeof *s);
    int rc;
    if (s == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory opening the snapshot %s", path);
    if ((rc = rally__store_open(path, e, &s->st)) != RALLY_OK)
        goto fail;
    if ((rc = root_manifest(s->st, e, &s->m)) != RALLY_OK)
        goto fail;
    for (size_t i = 0; i < s->m->nfiles; i++)
        if ((rc = rally__snap_check_file(s->st, "", s->m, &s->m->files[i], full, e)) != RALLY_OK)
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
    struct rally__store *st = NULL;
    int rc = rally__store_open(path, e, &st);
    if (rc == RALLY_OK)
        rc = root_manifest(st, e, out);
    rally__store_close(st);
    return rc;
}

void rally__snap_close(struct rally__snap *s)
{
    if (s == NULL)
        return;
    rally__store_close(s->st);
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

/* The file of rank in s, or NULL with e's RALLY_EINVAL. */
static const struct rally__snap_file *file_of(struct rally__snap *s, int rank,
                                              struct rally__err *e)
{
    char name[RALLY__SNAP_NAME_MAX];
    if (rank < -1 || rank >= s->m->world) {
        rally__fail(e, RALLY_EINVAL, "rank %d is not in this snapshot's world of %d", rank,
                    s->m->world);
        return NULL;
    }
    rally__snap_file_name(rank, name);
    for (size_t i = 0; i < s->m->nfiles; i++)
        if (strcmp(s->m->files[i].name, name) == 0)
            return &s->m->files[i];
    rally__fail(e, RALLY_EINVAL, "%s holds no local model for rank %d (it has %s)", s->st->where, rank,
                s->m->nfiles > 1 ? "local models" : "only a global model");
    return NULL;
}

int rally__snap_read_into(struct rally__snap *s, int rank, struct rally__err *e, void **buf,
                          size_t *room, uint64_t *nbytes)
{
    const struct rally__snap_file *f = file_of(s, rank, e);
    if (f == NULL)
        return e->code;
    int rc = check(s->st, "", s->m, f, 1, e, buf, room, 0);
    if (rc == RALLY_OK)
        *nbytes = f->nbytes - RALLY__SNAP_HEADER_NBYTES;
    return rc;
}

int rally__snap_read(struct rally__snap *s, int rank, struct rally__err *e, void **bytes,
                     uint64_t *nbytes)
{
    void *p = NULL;
    size_t room = 0;
    int rc = rally__snap_read_into(s, rank, e, &p, &room, nbytes);
    if (rc != RALLY_OK) {
        free(p);
        return rc;
    }
    *bytes = p; /* NULL for an empty model */
    return RALLY_OK;
}
