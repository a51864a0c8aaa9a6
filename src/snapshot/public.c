/*
 * public.c — include/rally/snapshot.h: reading snapshots with no job
 * running, over this layer's reader (read.c) and listing (dir.c).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rally/snapshot.h"
#include "snapshot/snapshot.h"

_Static_assert((int)RALLY_SNAPSHOT_COMPLETE == (int)RALLY__SNAP_COMPLETE &&
                   (int)RALLY_SNAPSHOT_INCOMPLETE == (int)RALLY__SNAP_INCOMPLETE &&
                   (int)RALLY_SNAPSHOT_DAMAGED == (int)RALLY__SNAP_DAMAGED,
               "a listing's states are the public ones");

struct rally_snapshot {
    char path[PATH_MAX];
    struct rally__snap *sn;
    const struct rally__snap_manifest *m;
    char format[12], config_xxh3[17]; /* the manifest's numbers, as fields */
};

static int out(const struct rally__err *e, char *err, size_t cap)
{
    if (err != NULL && cap > 0)
        snprintf(err, cap, "%s", e->msg);
    return e->code;
}

int rally_snapshot_list(const char *jobdir, rally_snapshot_entry_t **entries, size_t *count,
                        char *err, size_t errcap)
{
    struct rally__err e = {0, ""};
    struct rally__snap_entry *v = NULL;
    size_t n = 0;
    if (jobdir == NULL || entries == NULL || count == NULL)
        rally__fail(&e, RALLY_EINVAL, "rally_snapshot_list: jobdir, entries and count are needed");
    else if (rally__snap_list(jobdir, &e, &v, &n) == RALLY_OK) {
        rally_snapshot_entry_t *w = calloc(n ? n : 1, sizeof *w);
        long latest = rally__snap_latest(v, n);
        for (size_t i = 0; w != NULL && i < n; i++) {
            snprintf(w[i].name, sizeof w[i].name, "%s", v[i].name);
            w[i].version = v[i].version;
            w[i].state = v[i].state; /* the same numbers */
            w[i].latest = (long)i == latest;
            snprintf(w[i].run_id, sizeof w[i].run_id, "%s", v[i].run_id);
            snprintf(w[i].created, sizeof w[i].created, "%s", v[i].created);
            w[i].world = v[i].world;
            w[i].nbytes = v[i].nbytes;
            snprintf(w[i].why, sizeof w[i].why, "%s", v[i].why);
        }
        if (w == NULL)
            rally__fail(&e, RALLY_ENOMEM, "out of memory listing %s", jobdir);
        else {
            *entries = w;
            *count = n;
        }
    }
    free(v);
    return e.code ? out(&e, err, errcap) : RALLY_OK;
}

/* path as given, or for ".../JOBDIR/latest" the snapshot latest names. */
static int resolve(const char *arg, char *path, size_t cap, struct rally__err *e)
{
    char jobdir[PATH_MAX];
    size_t n = strlen(arg);
    while (n > 1 && arg[n - 1] == '/')
        n--;
    if (n < 6 || strncmp(arg + n - 6, "latest", 6) != 0 || (n > 6 && arg[n - 7] != '/')) {
        if ((size_t)snprintf(path, cap, "%s", arg) >= cap)
            return rally__fail(e, RALLY_EINVAL, "the snapshot path %.80s... is too long", arg);
        return RALLY_OK;
    }
    if (n == 6)
        snprintf(jobdir, sizeof jobdir, ".");
    else
        snprintf(jobdir, sizeof jobdir, "%.*s", (int)(n - 7 > 0 ? n - 7 : 1), arg);
    return rally__snap_resolve(jobdir, NULL, "latest", e, path, cap);
}

int rally_snapshot_open(const char *path, rally_snapshot_t **out_, char *err, size_t errcap)
{
    struct rally__err e = {0, ""};
    if (path == NULL || out_ == NULL) {
        rally__fail(&e, RALLY_EINVAL, "rally_snapshot_open: path and out are needed");
        return out(&e, err, errcap);
    }
    struct rally_snapshot *s = calloc(1, sizeof *s);
    if (s == NULL) {
        rally__fail(&e, RALLY_ENOMEM, "out of memory opening %s", path);
        return out(&e, err, errcap);
    }
    if (resolve(path, s->path, sizeof s->path, &e) != RALLY_OK ||
        rally__snap_open_sizes(s->path, &e, &s->sn) != RALLY_OK) {
        rally_snapshot_close(s);
        return out(&e, err, errcap);
    }
    s->m = rally__snap_manifest(s->sn);
    snprintf(s->format, sizeof s->format, "%u", s->m->format_version);
    snprintf(s->config_xxh3, sizeof s->config_xxh3, "%016llx",
             (unsigned long long)s->m->app_config_xxh3);
    *out_ = s;
    return RALLY_OK;
}

void rally_snapshot_close(rally_snapshot_t *s)
{
    if (s == NULL)
        return;
    rally__snap_close(s->sn);
    free(s);
}

const char *rally_snapshot_path(const rally_snapshot_t *s)
{
    return s->path;
}

uint64_t rally_snapshot_version(const rally_snapshot_t *s)
{
    return s->m->version;
}

int rally_snapshot_world(const rally_snapshot_t *s)
{
    return s->m->world;
}

int rally_snapshot_local_records(const rally_snapshot_t *s)
{
    return s->m->records && s->m->nfiles > 1;
}

int rally_snapshot_has_local(const rally_snapshot_t *s)
{
    return rally__snap_has_local(s->sn);
}

const char *rally_snapshot_field(const rally_snapshot_t *s, const char *name)
{
    const struct rally__snap_manifest *m = s->m;
    const struct {
        const char *name, *value;
    } f[] = {{"format_version", s->format},
             {"job", m->job},
             {"snapshot_id", m->snapshot_id},
             {"run_id", m->run_id},
             {"run_started", m->run_started},
             {"created", m->created},
             {"rally_version", m->rally_version},
             {"app_name", m->app_name},
             {"app_config", m->app_config},
             {"app_config_xxh3", s->config_xxh3},
             {"partitioning", m->partitioning}};
    for (size_t i = 0; name != NULL && i < sizeof f / sizeof f[0]; i++)
        if (strcmp(name, f[i].name) == 0)
            return f[i].value;
    return NULL;
}

const char *rally_snapshot_host(const rally_snapshot_t *s, int rank)
{
    return rank >= 0 && rank < s->m->world ? s->m->hosts[rank] : NULL;
}

const char *rally_snapshot_fingerprint(const rally_snapshot_t *s, int rank)
{
    if (rank < 0 || rank >= s->m->world)
        return NULL;
    return s->m->fingerprints ? s->m->fingerprints[rank] : "";
}

const char *rally_snapshot_setting(const rally_snapshot_t *s, const char *key)
{
    for (size_t i = 0; key != NULL && i < s->m->nsettings; i++)
        if (strcmp(s->m->settings[i].key, key) == 0)
            return s->m->settings[i].value;
    return NULL;
}

int rally_snapshot_setting_at(const rally_snapshot_t *s, size_t i, const char **key,
                              const char **value)
{
    if (i >= s->m->nsettings)
        return RALLY_EINVAL;
    *key = s->m->settings[i].key;
    *value = s->m->settings[i].value;
    return RALLY_OK;
}

int rally_snapshot_world_change(const rally_snapshot_t *s, size_t i, uint64_t *version,
                                int *world)
{
    if (i >= s->m->nchanges)
        return RALLY_EINVAL;
    *version = s->m->changes[i].version;
    *world = s->m->changes[i].world;
    return RALLY_OK;
}

size_t rally_snapshot_nfiles(const rally_snapshot_t *s)
{
    return s->m->nfiles;
}

int rally_snapshot_file(const rally_snapshot_t *s, size_t i, const char **name, uint64_t *nbytes,
                        uint64_t *xxh3)
{
    if (i >= s->m->nfiles)
        return RALLY_EINVAL;
    if (name != NULL)
        *name = s->m->files[i].name;
    if (nbytes != NULL)
        *nbytes = s->m->files[i].nbytes;
    if (xxh3 != NULL)
        *xxh3 = s->m->files[i].xxh3;
    return RALLY_OK;
}

int rally_snapshot_verify(rally_snapshot_t *s, char *err, size_t errcap)
{
    struct rally__err e = {0, ""};
    struct rally__snap *full = NULL;
    int rc = rally__snap_open(s->path, &e, &full); /* every file read and checked */
    rally__snap_close(full);
    return rc == RALLY_OK ? RALLY_OK : out(&e, err, errcap);
}

int rally_snapshot_read(rally_snapshot_t *s, int rank, void **bytes, uint64_t *nbytes, char *err,
                        size_t errcap)
{
    struct rally__err e = {0, ""};
    void *b = NULL;
    uint64_t n = 0;
    if (bytes == NULL || nbytes == NULL)
        rally__fail(&e, RALLY_EINVAL, "rally_snapshot_read: bytes and nbytes are needed");
    else if (rally__snap_read(s->sn, rank, &e, &b, &n) == RALLY_OK &&
             (b != NULL || (b = malloc(1)) != NULL)) { /* a 0-byte model: a buffer all the same */
        *bytes = b;
        *nbytes = n;
        return RALLY_OK;
    } else if (e.code == RALLY_OK) {
        rally__fail(&e, RALLY_ENOMEM, "out of memory reading %s", s->path);
    }
    return out(&e, err, errcap);
}
