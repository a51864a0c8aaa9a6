/*
 * dir.c — a job directory's snapshots: listing (complete, incomplete,
 * damaged; by run), "latest" (over one or two tiers), removal, retention,
 * and the fresh-start check, on any store (store.h); a root's absolute
 * form and the probe that it takes a write.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snapshot/internal.h"
#include "snapshot/snapshot.h"
#include "snapshot/store.h"

static void uuid_str(const unsigned char b[16], char out[RALLY__SNAP_UUID_LEN + 1])
{
    char *q = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *q++ = '-';
        q += snprintf(q, 3, "%02x", b[i]);
    }
    *q = '\0';
}

/* A model file's header, for attribute. */
struct head {
    unsigned char b[RALLY__SNAP_HEADER_NBYTES];
    size_t n;
};

static int head_sink(void *arg, const void *p, size_t n)
{
    struct head *h = arg;
    if (n > sizeof h->b - h->n)
        n = sizeof h->b - h->n;
    memcpy(h->b + h->n, p, n);
    h->n += n;
    return h->n == sizeof h->b;
}

/* For an incomplete snapshot dir: the run its model files' headers name;
 * "" when none has a valid header, "?" when they disagree. */
static void attribute(struct rally__store *st, const char *dir, char **names, size_t n,
                      char run[RALLY__SNAP_UUID_LEN + 1])
{
    run[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (!rally__snap_known_name(names[i]) || strstr(names[i], "MANIFEST") != NULL)
            continue;
        struct head hd = {.n = 0};
        struct snap_header h;
        struct rally__err quiet = {0};
        if (st->ops->get(st, dir, names[i], sizeof hd.b, head_sink, &hd, &quiet, NULL) !=
                RALLY_OK ||
            hd.n != sizeof hd.b || rally__snap_header_decode(hd.b, names[i], &quiet, &h) != RALLY_OK)
            continue;
        char s[RALLY__SNAP_UUID_LEN + 1];
        uuid_str(h.run, s);
        if (run[0] == '\0')
            memcpy(run, s, sizeof s);
        else if (strcmp(run, s) != 0) {
            strcpy(run, "?");
            return;
        }
    }
}

static void note(struct rally__snap_entry *x, const char *msg)
{
    size_t n = strnlen(msg, sizeof x->why - 1);
    memcpy(x->why, msg, n);
    x->why[n] = '\0';
}

static void describe(struct rally__store *st, const char *name, struct rally__snap_entry *x)
{
    char where[1100];
    struct rally__err e = {0};
    struct rally__snap_manifest *m = NULL;
    char **names = NULL;
    size_t n = 0;
    rally__store_where(st, name, where, sizeof where);
    x->state = RALLY__SNAP_DAMAGED;
    if (rally__snap_load_manifest(st, name, &e, &m) != RALLY_OK) {
        /* incomplete when it is a snapshot directory at all (a link or a
         * file in its place is damaged); its parts' headers name the run */
        struct rally__err le = {0};
        note(x, e.msg);
        if (st->ops->list(st, name, &le, NULL, &names, &n) != RALLY_OK) {
            note(x, le.msg);
            return;
        }
        x->state = RALLY__SNAP_INCOMPLETE;
        attribute(st, name, names, n, x->run_id);
        goto out;
    }
    memcpy(x->run_id, m->run_id, sizeof x->run_id);
    memcpy(x->run_started, m->run_started, sizeof x->run_started);
    memcpy(x->created, m->created, sizeof x->created);
    memcpy(x->snapshot_id, m->snapshot_id, sizeof x->snapshot_id);
    x->world = m->world;
    if (m->version != x->version) {
        rally__fail(&e, RALLY_EPROTO,
                    "%s/%s says checkpoint version %llu, the directory's "
                    "name %llu",
                    where, RALLY__SNAP_MANIFEST, (unsigned long long)m->version,
                    (unsigned long long)x->version);
        note(x, e.msg);
        goto out;
    }
    uint64_t *sizes = NULL; /* an object store's listing says every size in one answer */
    if (st->ops->list_sized != NULL &&
        st->ops->list_sized(st, name, &e, NULL, &names, &sizes, &n) != RALLY_OK) {
        note(x, e.msg);
        goto out;
    }
    for (size_t i = 0; i < m->nfiles; i++) {
        const struct rally__snap_file *f = &m->files[i];
        size_t j = 0;
        while (sizes != NULL && j < n && strcmp(names[j], f->name) != 0)
            j++;
        if (sizes != NULL ? rally__snap_size_agrees(where, f, j < n ? sizes[j] : UINT64_MAX, &e)
                          : rally__snap_check_file(st, name, m, f, 0, &e)) {
            note(x, e.msg);
            break;
        }
        x->nbytes += f->nbytes;
    }
    free(sizes);
    if (e.code == RALLY_OK)
        x->state = RALLY__SNAP_COMPLETE;
out:
    rally__store_free_names(names, n);
    rally__snap_manifest_free(m);
}

static int by_version(const void *a, const void *b)
{
    const struct rally__snap_entry *x = a, *y = b;
    return x->version < y->version ? -1 : x->version > y->version;
}

/* rally__snap_list, with *missing set when jobdir does not exist. */
static int list_job(const char *jobdir, struct rally__err *e, int *missing,
                    struct rally__snap_entry **v, size_t *count)
{
    struct rally__store *st = NULL;
    char **names = NULL;
    size_t n = 0, k = 0;
    struct rally__snap_entry *out = NULL;
    int rc;
    if ((rc = rally__store_open(jobdir, e, &st)) != RALLY_OK ||
        (rc = st->ops->list(st, "", e, missing, &names, &n)) != RALLY_OK)
        goto out;
    if (n > 0 && (out = calloc(n, sizeof *out)) == NULL) {
        rc = rally__fail(e, RALLY_ENOMEM, "out of memory listing %s", jobdir);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t ver;
        if (rally__snap_dir_version(names[i], &ver) != 0)
            continue;
        struct rally__snap_entry *x = &out[k++];
        snprintf(x->name, sizeof x->name, "%s", names[i]);
        x->version = ver;
        describe(st, names[i], x);
    }
    if (k > 0)
        qsort(out, k, sizeof *out, by_version);
    *v = out;
    *count = k;
    out = NULL;
out:
    free(out);
    rally__store_free_names(names, n);
    rally__store_close(st);
    return rc;
}

int rally__snap_list(const char *jobdir, struct rally__err *e, struct rally__snap_entry **v,
                     size_t *count)
{
    return list_job(jobdir, e, NULL, v, count);
}

/* The listings of jobdir and, when copydir is not NULL, copydir, one after
 * the other (jobdir's first: "latest" prefers it when both hold the same
 * snapshot); *n0 of them are jobdir's.  A tier that does not exist lists
 * nothing; one that cannot be listed is an error only when it is jobdir
 * alone, and otherwise said in note[cap] ("" when all went well). */
static int list_tiers(const char *jobdir, const char *copydir, struct rally__err *e,
                      struct rally__snap_entry **v, size_t *n, size_t *n0, char *note, size_t cap)
{
    struct rally__snap_entry *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    int missing = 0;
    struct rally__err qa = {0}, qb = {0};
    note[0] = '\0';
    if (list_job(jobdir, &qa, &missing, &a, &na) != RALLY_OK) {
        if (copydir == NULL)
            return rally__fail(e, qa.code, "%s", qa.msg);
        if (!missing)
            snprintf(note, cap, "%s", qa.msg);
        na = 0;
    }
    if (copydir != NULL && list_job(copydir, &qb, &missing, &b, &nb) != RALLY_OK) {
        if (!missing)
            snprintf(note, cap, "%s", qb.msg);
        nb = 0;
    }
    struct rally__snap_entry *all = realloc(a, (na + nb ? na + nb : 1) * sizeof *all);
    if (all == NULL) {
        free(a);
        free(b);
        return rally__fail(e, RALLY_ENOMEM, "out of memory listing %s", jobdir);
    }
    if (nb > 0)
        memcpy(all + na, b, nb * sizeof *b);
    free(b);
    *v = all;
    *n = na + nb;
    *n0 = na;
    return RALLY_OK;
}

long rally__snap_latest(const struct rally__snap_entry *v, size_t count)
{
    long newest = -1, best = -1;
    for (size_t i = 0; i < count; i++) {
        if (v[i].state != RALLY__SNAP_COMPLETE)
            continue;
        if (newest < 0) {
            newest = (long)i;
            continue;
        }
        const struct rally__snap_entry *a = &v[i], *b = &v[newest];
        int c = strcmp(a->run_started, b->run_started);
        if (c == 0)
            c = strcmp(a->created, b->created);
        if (c == 0)
            c = strcmp(a->run_id, b->run_id);
        if (c > 0)
            newest = (long)i;
    }
    for (size_t i = 0; newest >= 0 && i < count; i++)
        if (v[i].state == RALLY__SNAP_COMPLETE && strcmp(v[i].run_id, v[newest].run_id) == 0 &&
            (best < 0 || v[i].version > v[best].version))
            best = (long)i;
    return best;
}

int rally__snap_newer(const char *jobdir, const char *run, uint64_t after, uint64_t *top,
                      char name[RALLY__SNAP_NAME_MAX], struct rally__err *e)
{
    struct rally__snap_entry *v = NULL;
    size_t n = 0;
    if (rally__snap_list(jobdir, e, &v, &n) != RALLY_OK)
        return -1;
    int found = 0;
    *top = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].version > *top)
            *top = v[i].version;
        if (!found && v[i].state == RALLY__SNAP_COMPLETE && v[i].version > after &&
            strcmp(v[i].run_id, run) == 0) {
            snprintf(name, RALLY__SNAP_NAME_MAX, "%s", v[i].name);
            found = 1;
        }
    }
    free(v);
    return found;
}

int rally__snap_older(const char *jobdir, const char *copydir, const char *path, char *older,
                      size_t cap, uint64_t *version)
{
    struct rally__err e = {0, ""};
    struct rally__snap_entry *v = NULL;
    size_t n = 0, n0 = 0;
    char note[RALLY__ERR_MSG_MAX];
    if (list_tiers(jobdir, copydir, &e, &v, &n, &n0, note, sizeof note) != RALLY_OK)
        return 0;
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", i < n0 ? jobdir : copydir, v[i].name);
        if (strcmp(p, path) == 0)
            v[i].state = RALLY__SNAP_DAMAGED; /* the one refused */
    }
    for (long i; !found && (i = rally__snap_latest(v, n)) >= 0;) {
        struct rally__snap *sn = NULL;
        v[i].state = RALLY__SNAP_DAMAGED; /* tried */
        if ((size_t)snprintf(older, cap, "%s/%s", (size_t)i < n0 ? jobdir : copydir, v[i].name) >=
            cap)
            continue;
        rally__err_clear(&e);
        if (rally__snap_open(older, &e, &sn) == RALLY_OK) {
            found = 1;
            *version = v[i].version;
        }
        rally__snap_close(sn);
    }
    free(v);
    return found;
}

int rally__snap_remove(const char *jobdir, const char *name, struct rally__err *e)
{
    struct rally__store *st = NULL;
    char **names = NULL;
    size_t n = 0;
    char where[1100];
    uint64_t ver;
    int rc;
    if (rally__snap_dir_version(name, &ver) != 0)
        return rally__fail(e, RALLY_EINVAL,
                           "\"%s\" is not a snapshot directory's name "
                           "(snap-NNNNNNNN)",
                           name);
    int gone = 0;
    if ((rc = rally__store_open(jobdir, e, &st)) != RALLY_OK ||
        (rc = st->ops->list(st, name, e, &gone, &names, &n)) != RALLY_OK)
        goto out;
    rally__store_where(st, name, where, sizeof where);
    if (gone) {
        rc = rally__fail(e, RALLY_EINVAL, "%s does not exist", where);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (!rally__snap_known_name(names[i])) {
            rc = rally__fail(e, RALLY_EINVAL,
                             "%s holds \"%s\", which is not a snapshot file; "
                             "not removing it",
                             where, names[i]);
            goto out;
        }
    /* the manifest first, durably: from then on it is incomplete, never
     * a complete snapshot with a part missing */
    if ((rc = st->ops->remove(st, name, RALLY__SNAP_MANIFEST, 1, e)) != RALLY_OK)
        goto out;
    for (size_t i = 0; i < n && rc == RALLY_OK; i++)
        if (strcmp(names[i], RALLY__SNAP_MANIFEST) != 0)
            rc = st->ops->remove(st, name, names[i], 0, e);
    if (rc == RALLY_OK)
        rc = st->ops->remove(st, name, NULL, 1, e);
out:
    rally__store_free_names(names, n);
    rally__store_close(st);
    return rc;
}

int rally__snap_retain(const char *jobdir, const char *run_id, int keep, struct rally__err *e,
                       int *removed)
{
    return rally__snap_retain_upto(jobdir, run_id, keep, UINT64_MAX, e, removed);
}

int rally__snap_retain_upto(const char *jobdir, const char *run_id, int keep, uint64_t upto,
                            struct rally__err *e, int *removed)
{
    return rally__snap_retain_sparing(jobdir, run_id, keep, upto, UINT64_MAX, e, removed);
}

/* Whether snapshot directory name is gone from jobdir (not an error: a
 * listing that fails says nothing, and the caller's error stands). */
static int vanished(const char *jobdir, const char *name)
{
    struct rally__store *st = NULL;
    struct rally__err quiet = {0};
    char **names = NULL;
    size_t n = 0;
    int gone = 0;
    if (rally__store_open(jobdir, &quiet, &st) == RALLY_OK &&
        st->ops->list(st, name, &quiet, &gone, &names, &n) == RALLY_OK)
        rally__store_free_names(names, n);
    if (st != NULL)
        rally__store_close(st);
    return gone;
}

int rally__snap_retain_sparing(const char *jobdir, const char *run_id, int keep, uint64_t upto,
                               uint64_t spare, struct rally__err *e, int *removed)
{
    struct rally__snap_entry *v = NULL;
    size_t n = 0;
    int rc, gone = 0, kept = 0;
    if (keep < 0)
        return rally__fail(e, RALLY_EINVAL, "retention cannot keep %d snapshots", keep);
    if ((rc = rally__snap_fenced(jobdir, run_id, e)) != RALLY_OK ||
        (rc = rally__snap_list(jobdir, e, &v, &n)) != RALLY_OK)
        return rc;
    for (size_t j = n; j-- > 0 && rc == RALLY_OK;) { /* newest version first */
        const struct rally__snap_entry *x = &v[j];
        int mine = strcmp(x->run_id, run_id) == 0;
        int drop = 0;
        if (x->version > upto)
            continue; /* being written now, maybe */
        if (x->state == RALLY__SNAP_COMPLETE && mine)
            drop = ++kept > keep && x->version != spare; /* spare: counted, never dropped */
        else if (x->state == RALLY__SNAP_INCOMPLETE)
            drop = mine || x->run_id[0] == '\0';
        if (!drop)
            continue;
        struct rally__err re = {0};
        rc = rally__snap_remove(jobdir, x->name, &re);
        if (rc != RALLY_OK && vanished(jobdir, x->name))
            rc = RALLY_OK; /* another rank on this disk removed it first (--snapshot-local) */
        if (rc == RALLY_OK)
            gone++;
        else if (rc == RALLY_EINVAL && x->state == RALLY__SNAP_INCOMPLETE)
            rc = RALLY_OK; /* it holds a name that is not ours: leave it */
        else
            rally__fail(e, rc, "%s", re.msg);
    }
    free(v);
    if (rc == RALLY_OK && removed != NULL)
        *removed = gone;
    return rc;
}

void rally__snap_clean_run(const char *jobdir, const char *run_id, const char *keep, char *say,
                           size_t cap)
{
    struct rally__err e = {0, ""};
    int removed = 0;
    say[0] = '\0';
    if (rally__snap_retain(jobdir, run_id, 0, &e, &removed) != RALLY_OK)
        snprintf(say, cap, "removing this run's snapshots: %s", e.msg);
    else if (removed > 0)
        snprintf(say, cap, "the run succeeded: removed its %d snapshot%s (%s keeps them)", removed,
                 removed == 1 ? "" : "s", keep);
}

int rally__snap_check_fresh(const char *jobdir, const char *resume, const char *overwrite,
                            struct rally__err *e)
{
    struct rally__snap_entry *v = NULL;
    size_t n = 0;
    int missing = 0;
    struct rally__err quiet = {0};
    int rc = list_job(jobdir, &quiet, &missing, &v, &n);
    if (rc != RALLY_OK)
        return missing ? RALLY_OK : rally__fail(e, quiet.code, "%s", quiet.msg);
    if (n == 0) {
        free(v);
        return RALLY_OK;
    }
    char names[200] = "";
    size_t used = 0;
    for (size_t i = 0; i < n && used + 40 < sizeof names; i++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s (%s)", i ? ", " : "",
                                 v[i].name,
                                 v[i].state == RALLY__SNAP_COMPLETE     ? "complete"
                                 : v[i].state == RALLY__SNAP_INCOMPLETE ? "incomplete"
                                                                        : "damaged");
    rc = rally__fail(e, RALLY_EINVAL,
                     "%s already holds %zu snapshot%s: %s%s; continue it with %s, or start "
                     "over with %s",
                     jobdir, n, n == 1 ? "" : "s", names, used + 40 >= sizeof names ? ", ..." : "",
                     resume, overwrite);
    free(v);
    return rc;
}

int rally__snap_check_fresh_tiers(const char *jobdir, const char *copy_jobdir, const char *resume,
                                  const char *overwrite, struct rally__err *e)
{
    int rc = rally__snap_check_fresh(jobdir, resume, overwrite, e);
    if (rc != RALLY_OK || copy_jobdir == NULL || copy_jobdir[0] == '\0')
        return rc;
    /* a second tier that cannot be listed is its copies' to say */
    struct rally__err quiet = {0, ""};
    rc = rally__snap_check_fresh(copy_jobdir, resume, overwrite, &quiet);
    return rc == RALLY_EINVAL ? rally__fail(e, rc, "%s", quiet.msg) : RALLY_OK;
}

int rally__snap_resolve(const char *jobdir, const char *copydir, const char *what,
                        struct rally__err *e, char *path, size_t cap)
{
    int if_any = strcmp(what, RALLY__SNAP_IF_ANY) == 0;
    if (strcmp(what, "latest") != 0 && !if_any) {
        if ((size_t)snprintf(path, cap, "%s", what) >= cap)
            return rally__fail(e, RALLY_EINVAL, "the snapshot path %s is too long", what);
        return RALLY_OK;
    }
    struct rally__snap_entry *v = NULL;
    size_t n = 0, n0 = 0;
    char note[RALLY__ERR_MSG_MAX];
    int rc = list_tiers(jobdir, copydir, e, &v, &n, &n0, note, sizeof note);
    if (rc != RALLY_OK)
        return rc;
    long at = rally__snap_latest(v, n);
    const char *in = (size_t)at < n0 ? jobdir : copydir;
    if (at < 0 && if_any && note[0] == '\0') {
        path[0] = '\0'; /* every tier listed, none holds one: a first start */
    } else if (at < 0) {
        size_t bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += v[i].state != RALLY__SNAP_COMPLETE;
        rc = rally__fail(e, RALLY_EINVAL,
                         "%s%s%s holds no complete snapshot to resume from (%zu "
                         "incomplete or damaged; rally-snapshot ls %s shows why)%s%s",
                         jobdir, copydir ? " nor " : "", copydir ? copydir : "", bad, jobdir,
                         note[0] ? "; " : "", note);
    } else if ((size_t)snprintf(path, cap, "%s/%s", in, v[at].name) >= cap) {
        rc = rally__fail(e, RALLY_EINVAL, "the snapshot path %s/%s is too long", in, v[at].name);
    }
    free(v);
    return rc;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int rally__snap_jobs(const char *root, struct rally__err *e, char ***names, size_t *count)
{
    struct rally__store *st = NULL;
    char **v = NULL;
    size_t n = 0, k = 0;
    int rc;
    if ((rc = rally__store_open(root, e, &st)) != RALLY_OK ||
        (rc = st->ops->list(st, "", e, NULL, &v, &n)) != RALLY_OK) {
        rally__store_close(st);
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        /* a job is a directory (never a link) with something in it */
        char **in = NULL;
        size_t nin = 0;
        struct rally__err quiet = {0};
        if (rally__snap_job_ok(v[i]) && st->ops->list(st, v[i], &quiet, NULL, &in, &nin) == 0 &&
            nin > 0)
            v[k++] = v[i];
        else
            free(v[i]);
        rally__store_free_names(in, nin);
    }
    rally__store_close(st);
    if (k > 1)
        qsort(v, k, sizeof *v, by_name);
    *names = v;
    *count = k;
    return RALLY_OK;
}

void rally__snap_names_free(char **names, size_t count)
{
    rally__store_free_names(names, count);
}

/* --- roots as every process sees them, and whether one takes a write --- */

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
