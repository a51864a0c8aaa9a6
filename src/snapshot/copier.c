/*
 * copier.c — the second tier: a thread on every rank that copies the files
 * its rank wrote of each snapshot to another store (rally__snap_copy_files:
 * each verified there), and on rank 0 commits the copy there — checks every
 * part's size, writes the manifest last, reads it back — once the job
 * agreed that every rank's files are there; then applies retention there.
 * So each host uploads its own part from its own disk, and a snapshot
 * directory private to each host is copied whole; there each rank also
 * prunes its files of older versions once a newer copy is committed.  Training never waits
 * for it: a submit only names the newest snapshot; one submitted while a
 * copy runs replaces any that waits (the newest is what a resume wants).
 * A failed copy is tried again, three times in all; what happened is kept
 * for the owner to say on its own thread (rally__snap_copier_said).  Stop
 * does not wait for retries or for what waits: an owner that wants the
 * last snapshot copied drains first (a job's finalize does).
 */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "snapshot/snapshot.h"
#include "util/clock.h"

#define TRIES 3
#define SAID_MAX 8

/* One rank's files of one snapshot. */
struct files {
    int64_t us; /* when they were submitted */
    char src[PATH_MAX];
    char job[RALLY__SNAP_JOB_MAX + 1], run[RALLY__SNAP_UUID_LEN + 1];
    uint64_t version;
    int world, n;
    struct rally__snap_file f[RALLY__SNAP_PARTS_MAX];
};

struct rally__snap_copier {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char root[PATH_MAX];
    int keep;
    struct files want; /* the newest files not yet taken by the thread */
    int has_want;
    uint64_t cur, done; /* the version whose files are being copied / were last */
    int done_state;     /* ... and how that ended */
    int64_t done_us;    /* ... and when they were submitted */
    char *fin; /* a commit asked for: the manifest's bytes (malloc'd) */
    size_t fin_n;
    uint64_t fin_v;
    char prune[PATH_MAX], prune_run[RALLY__SNAP_UUID_LEN + 1]; /* files pruned there ... */
    uint64_t prune_below;                                       /* ... of older versions */
    int has_fin, has_prune, busy, stop;
    /* what happened, oldest first, for the owner to say */
    char said[SAID_MAX][RALLY__ERR_MSG_MAX + 256];
    int nsaid, dropped;
    char gave_up[2 * PATH_MAX + RALLY__ERR_MSG_MAX + 64]; /* a commit given up on, "" none */
    /* the newest commit's outcome not yet taken (rally__snap_copier_outcome) */
    int out_has, out_ok;
    uint64_t out_v, out_nbytes;
    char out_text[2 * PATH_MAX + RALLY__ERR_MSG_MAX + 64]; /* where the copy is, or why not */
    void *buf;                              /* the thread's: each file read into it, kept */
    size_t room;
};

static void say(struct rally__snap_copier *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Keeps a sentence for the owner (under the lock). */
static void say(struct rally__snap_copier *c, const char *fmt, ...)
{
    if (c->nsaid == SAID_MAX) {
        c->dropped++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->said[c->nsaid++], sizeof c->said[0], fmt, ap);
    va_end(ap);
}

/* Whether another try is worth it after try t failed with e (saying so),
 * napping 0.1 or 0.4 s first; 0 when the owner is going or a newer one
 * waits (*newer: abandon), or the tries are spent. */
static int again(struct rally__snap_copier *c, int t, const char *what, const struct rally__err *e,
                 const int *newer)
{
    pthread_mutex_lock(&c->mu);
    int abandon = c->stop || *newer;
    if (!abandon && t < TRIES)
        say(c, "copying %s to %s failed (try %d of %d, again in %.1f s): %s", what, c->root, t,
            TRIES, t == 1 ? 0.1 : 0.4, e->msg);
    pthread_mutex_unlock(&c->mu);
    if (abandon || t == TRIES)
        return 0;
    struct timespec nap = {0, t == 1 ? 100000000L : 400000000L};
    nanosleep(&nap, NULL);
    return 1;
}

/* This rank's files of one snapshot, outside the lock. */
static int copy_files(struct rally__snap_copier *c, const struct files *w)
{
    struct rally__err e = {0, ""};
    struct rally__snap_target t = {c->root, w->job, w->run, w->version, w->world, NULL};
    char what[PATH_MAX + RALLY__SNAP_JOB_MAX + 2 * RALLY__SNAP_NAME_MAX + 40];
    snprintf(what, sizeof what, "%s/%s/snap-%08llu/%s%s", w->src, w->job,
             (unsigned long long)w->version, w->f[0].name, w->n > 1 ? " and its other file" : "");
    for (int t_ = 1;; t_++) {
        rally__err_clear(&e);
        if (rally__snap_copy_files(w->src, &t, w->f, w->n, &c->buf, &c->room, &e) == RALLY_OK)
            return RALLY__SNAP_COPY_OK;
        if (!again(c, t_, what, &e, &c->has_want))
            break;
    }
    pthread_mutex_lock(&c->mu);
    if (!c->stop && !c->has_want)
        say(c, "could not copy %s to %s (%d tries): %s", what, c->root, TRIES, e.msg);
    pthread_mutex_unlock(&c->mu);
    return RALLY__SNAP_COPY_FAILED;
}

/* Whether the snapshot at where holds m's manifest (its snapshot id). */
static int there_is(const char *where, const struct rally__snap_manifest *m)
{
    struct rally__err quiet = {0, ""};
    struct rally__snap_manifest *there = NULL;
    int same = rally__snap_read_manifest(where, &quiet, &there) == RALLY_OK &&
               strcmp(there->snapshot_id, m->snapshot_id) == 0;
    rally__snap_manifest_free(there);
    return same;
}

/* The copy of the snapshot whose manifest is text[n] (version v): every
 * part it lists checked there, its manifest written there last and read
 * back; then retention there.  Outside the lock. */
static void commit_copy(struct rally__snap_copier *c, const char *text, size_t n, uint64_t v,
                        int64_t since)
{
    struct rally__err e = {0, ""}, re = {0, ""};
    struct rally__snap_manifest *m = NULL;
    char where[PATH_MAX + RALLY__SNAP_JOB_MAX + RALLY__SNAP_NAME_MAX + 2];
    char jobdir[PATH_MAX + RALLY__SNAP_JOB_MAX + 2];
    int rc = RALLY_ESYS;
    for (int t = 1;; t++) {
        rally__err_clear(&e);
        if ((rc = rally__snap_manifest_parse(text, n, &e, &m)) == RALLY_OK) {
            snprintf(where, sizeof where, "%s/%s/", c->root, m->job);
            rally__snap_dir_name(m->version, where + strlen(where));
            /* a try whose manifest went there before it failed needs no
             * commit; a commit counts once its manifest reads back */
            if ((there_is(where, m) ||
                 (rc = rally__snap_commit(c->root, m, &e, NULL, 0)) == RALLY_OK) &&
                !there_is(where, m))
                rc = rally__fail(&e, RALLY_EPROTO, "%s/%s does not read back as written", where,
                                 RALLY__SNAP_MANIFEST);
            if (rc == RALLY_OK)
                break;
            rally__snap_manifest_free(m);
            m = NULL;
        }
        snprintf(where, sizeof where, "the snapshot of version %llu", (unsigned long long)v);
        if (!again(c, t, where, &e, &c->has_fin))
            break;
    }
    if (rc == RALLY_OK) {
        snprintf(jobdir, sizeof jobdir, "%s/%s", c->root, m->job);
        rally__snap_retain_upto(jobdir, m->run_id, c->keep, v, &re, NULL);
    }
    pthread_mutex_lock(&c->mu);
    if (rc == RALLY_OK || (!c->stop && !c->has_fin)) {
        c->out_has = 1;
        c->out_ok = rc == RALLY_OK;
        c->out_v = v;
        c->out_nbytes = rc == RALLY_OK ? rally__snap_manifest_nbytes(m) : 0;
    }
    if (rc == RALLY_OK) {
        snprintf(c->out_text, sizeof c->out_text, "%s", where);
        say(c, "copied to %s (verified there, %.2f s after the job reported it)", where,
            (double)(rally__now_us() - since) / 1e6);
        if (re.code != RALLY_OK)
            say(c, "retention at %s failed (the copies stay): %s", c->root, re.msg);
    } else if (!c->stop && !c->has_fin) { /* else abandoned, as it should be */
        snprintf(c->gave_up, sizeof c->gave_up,
                 "could not commit the copy of version %llu in %s (%d tries): %s",
                 (unsigned long long)v, c->root, TRIES, e.msg);
        snprintf(c->out_text, sizeof c->out_text, "%s", c->gave_up);
        say(c, "%s", c->gave_up);
    }
    pthread_mutex_unlock(&c->mu);
    rally__snap_manifest_free(m);
}

static void *run(void *arg)
{
    struct rally__snap_copier *c = arg;
    struct files w;
    char dir[PATH_MAX], run_id[RALLY__SNAP_UUID_LEN + 1];
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->has_want && !c->has_fin && !c->has_prune && !c->stop)
            pthread_cond_wait(&c->cv, &c->mu);
        if (!c->has_want && !c->has_fin && !c->has_prune)
            break; /* stopped, nothing left */
        c->busy = 1;
        if (c->has_fin) { /* a commit first: the files it waited for are there */
            char *text = c->fin;
            size_t n = c->fin_n;
            uint64_t v = c->fin_v;
            int64_t since = c->done == v ? c->done_us : rally__now_us();
            c->fin = NULL;
            c->has_fin = 0;
            pthread_mutex_unlock(&c->mu);
            commit_copy(c, text, n, v, since);
            free(text);
            pthread_mutex_lock(&c->mu);
        } else if (c->has_prune) {
            memcpy(dir, c->prune, sizeof dir);
            memcpy(run_id, c->prune_run, sizeof run_id);
            uint64_t below = c->prune_below;
            c->has_prune = 0;
            pthread_mutex_unlock(&c->mu);
            struct rally__err e = {0, ""};
            int rc = rally__snap_retain_upto(dir, run_id, 0, below - 1, &e, NULL);
            pthread_mutex_lock(&c->mu);
            if (rc != RALLY_OK)
                say(c, "removing its files of versions before %llu from %s failed (they stay): %s",
                    (unsigned long long)below, dir, e.msg);
        } else {
            w = c->want;
            c->has_want = 0;
            c->cur = w.version;
            pthread_mutex_unlock(&c->mu);
            int st = copy_files(c, &w);
            pthread_mutex_lock(&c->mu);
            c->cur = UINT64_MAX;
            c->done = w.version;
            c->done_state = st;
            c->done_us = w.us;
        }
        c->busy = 0;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

int rally__snap_copier_start(const char *root, int keep, struct rally__err *e,
                             struct rally__snap_copier **out)
{
    struct rally__snap_copier *c = calloc(1, sizeof *c);
    if (c == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory starting the snapshot copier");
    if ((size_t)snprintf(c->root, sizeof c->root, "%s", root) >= sizeof c->root) {
        free(c);
        return rally__fail(e, RALLY_EINVAL, "the copy's root %.80s... is too long", root);
    }
    c->keep = keep;
    c->cur = c->done = UINT64_MAX;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    int err = pthread_create(&c->thread, NULL, run, c);
    if (err != 0) {
        pthread_cond_destroy(&c->cv);
        pthread_mutex_destroy(&c->mu);
        free(c);
        return rally__fail_errno(e, RALLY_ESYS, err, "cannot start the snapshot copier's thread");
    }
    *out = c;
    return RALLY_OK;
}

int rally__snap_copier_submit(struct rally__snap_copier *c, const char *src,
                              const struct rally__snap_target *t,
                              const struct rally__snap_file *files, int nfiles,
                              struct rally__err *e)
{
    /* the rest is checked where the files are written (rally__snap_put_file) */
    if (nfiles < 0 || nfiles > RALLY__SNAP_PARTS_MAX || strlen(src) >= PATH_MAX ||
        strlen(t->job) > RALLY__SNAP_JOB_MAX || strlen(t->run_id) > RALLY__SNAP_UUID_LEN)
        return rally__fail(e, RALLY_EINVAL, "the copier cannot take %d files of job %.80s in %.80s",
                           nfiles, t->job, src);
    pthread_mutex_lock(&c->mu);
    struct files *w = &c->want;
    snprintf(w->src, sizeof w->src, "%s", src);
    snprintf(w->job, sizeof w->job, "%s", t->job);
    snprintf(w->run, sizeof w->run, "%s", t->run_id);
    w->version = t->version;
    w->world = t->world;
    w->n = nfiles;
    memcpy(w->f, files, (size_t)nfiles * sizeof *files);
    w->us = rally__now_us();
    c->has_want = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return RALLY_OK;
}

int rally__snap_copier_state(struct rally__snap_copier *c, uint64_t version)
{
    pthread_mutex_lock(&c->mu);
    int st = RALLY__SNAP_COPY_NONE;
    if ((c->has_want && c->want.version == version) || c->cur == version)
        st = RALLY__SNAP_COPY_BUSY;
    else if (c->done == version)
        st = c->done_state;
    pthread_mutex_unlock(&c->mu);
    return st;
}

int rally__snap_copier_commit(struct rally__snap_copier *c, const char *manifest, size_t n,
                              uint64_t version, struct rally__err *e)
{
    char *text = malloc(n ? n : 1);
    if (text == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory for the copy's manifest");
    memcpy(text, manifest, n);
    pthread_mutex_lock(&c->mu);
    free(c->fin);
    c->fin = text;
    c->fin_n = n;
    c->fin_v = version;
    c->has_fin = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return RALLY_OK;
}

void rally__snap_copier_prune(struct rally__snap_copier *c, const char *jobdir, const char *run_id,
                              uint64_t below)
{
    if (below == 0)
        return;
    pthread_mutex_lock(&c->mu);
    snprintf(c->prune, sizeof c->prune, "%s", jobdir);
    snprintf(c->prune_run, sizeof c->prune_run, "%s", run_id);
    c->prune_below = below;
    c->has_prune = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

int rally__snap_copier_said(struct rally__snap_copier *c, char *out, size_t cap)
{
    int got = 0;
    pthread_mutex_lock(&c->mu);
    if (c->nsaid > 0) {
        snprintf(out, cap, "%s", c->said[0]);
        memmove(c->said[0], c->said[1], (size_t)(c->nsaid - 1) * sizeof c->said[0]);
        c->nsaid--;
        got = 1;
    } else if (c->dropped > 0) {
        snprintf(out, cap, "(%d more of the copier's lines dropped)", c->dropped);
        c->dropped = 0;
        got = 1;
    }
    pthread_mutex_unlock(&c->mu);
    return got;
}

int rally__snap_copier_outcome(struct rally__snap_copier *c, int *ok, uint64_t *version,
                               uint64_t *nbytes, char *text, size_t cap)
{
    pthread_mutex_lock(&c->mu);
    int got = c->out_has;
    if (got) {
        *ok = c->out_ok;
        *version = c->out_v;
        *nbytes = c->out_nbytes;
        snprintf(text, cap, "%s", c->out_text);
        c->out_has = 0;
    }
    pthread_mutex_unlock(&c->mu);
    return got;
}

int rally__snap_copier_gave_up(struct rally__snap_copier *c, char *out, size_t cap)
{
    pthread_mutex_lock(&c->mu);
    int got = c->gave_up[0] != '\0';
    if (got) {
        snprintf(out, cap, "%s", c->gave_up);
        c->gave_up[0] = '\0';
    }
    pthread_mutex_unlock(&c->mu);
    return got;
}

void rally__snap_copier_drain(struct rally__snap_copier *c)
{
    pthread_mutex_lock(&c->mu);
    while (c->has_want || c->has_fin || c->has_prune || c->busy)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
}

void rally__snap_copier_stop(struct rally__snap_copier *c)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    c->has_want = c->has_fin = c->has_prune = 0; /* what waits is dropped (drain does it) */
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL); /* the copy in flight ends with its current try */
    free(c->buf);
    free(c->fin);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
