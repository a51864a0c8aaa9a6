/*
 * copier.c — the second tier: a thread that copies each committed snapshot
 * to another store (rally__snap_copy: verified there before it counts),
 * then applies retention there.  Training never waits for it: a submit
 * only names the newest committed snapshot; one submitted while a copy
 * runs replaces any that waits (the newest is what a resume wants).  A
 * failed copy is tried again, three times in all; what happened is kept
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

struct rally__snap_copier {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char root[PATH_MAX];
    int keep;
    /* the newest committed snapshot not yet taken by the thread */
    char want[PATH_MAX], want_run[RALLY__SNAP_UUID_LEN + 1], want_job[RALLY__SNAP_JOB_MAX + 1];
    uint64_t want_version;
    int64_t want_us; /* when it was submitted: its commit */
    int has_want, busy, stop;
    /* what happened, oldest first, for the owner to say */
    char said[SAID_MAX][RALLY__ERR_MSG_MAX + 256];
    int nsaid, dropped;
    char gave_up[2 * PATH_MAX + RALLY__ERR_MSG_MAX + 64]; /* a copy given up on, "" none */
    void *buf;                              /* the thread's: each part read into it, kept */
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

/* One snapshot: copied (tried again after 0.1 and 0.4 s), then retention
 * at the root.  Runs outside the lock. */
static void copy_one(struct rally__snap_copier *c, const char *path, const char *run,
                     const char *job, uint64_t version, int64_t since)
{
    struct rally__err e = {0, ""};
    char where[PATH_MAX + 64], jobdir[PATH_MAX + RALLY__SNAP_JOB_MAX + 2];
    int rc = RALLY_ESYS, t;
    for (t = 1; t <= TRIES; t++) {
        rally__err_clear(&e);
        if ((rc = rally__snap_copy_into(path, c->root, &c->buf, &c->room, &e, where,
                                        sizeof where)) == RALLY_OK)
            break;
        pthread_mutex_lock(&c->mu);
        /* the owner is going, or a newer snapshot waits: no more tries */
        int abandon = c->stop || c->has_want;
        if (!abandon && t < TRIES)
            say(c, "copying %s to %s failed (try %d of %d, again in %.1f s): %s", path, c->root, t,
                TRIES, t == 1 ? 0.1 : 0.4, e.msg);
        pthread_mutex_unlock(&c->mu);
        if (abandon) {
            rc = -1;
            break;
        }
        if (t < TRIES) {
            struct timespec nap = {0, t == 1 ? 100000000L : 400000000L};
            nanosleep(&nap, NULL);
        }
    }
    struct rally__err re = {0, ""};
    if (rc == RALLY_OK) {
        snprintf(jobdir, sizeof jobdir, "%s/%s", c->root, job);
        rally__snap_retain_upto(jobdir, run, c->keep, version, &re, NULL);
    }
    pthread_mutex_lock(&c->mu);
    if (rc == RALLY_OK) {
        say(c, "copied to %s (verified there, %.2f s after its commit)", where,
            (double)(rally__now_us() - since) / 1e6);
        if (re.code != RALLY_OK)
            say(c, "retention at %s failed (the copies stay): %s", c->root, re.msg);
    } else if (rc != -1) { /* -1: abandoned (a newer one, or stop), as it should be */
        snprintf(c->gave_up, sizeof c->gave_up, "could not copy %s to %s (%d tries): %s", path,
                 c->root, TRIES, e.msg);
        say(c, "%s", c->gave_up);
    }
    pthread_mutex_unlock(&c->mu);
}

static void *run(void *arg)
{
    struct rally__snap_copier *c = arg;
    char path[PATH_MAX], run_id[RALLY__SNAP_UUID_LEN + 1], job[RALLY__SNAP_JOB_MAX + 1];
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->has_want && !c->stop)
            pthread_cond_wait(&c->cv, &c->mu);
        if (!c->has_want)
            break; /* stopped, nothing left */
        memcpy(path, c->want, sizeof path);
        memcpy(run_id, c->want_run, sizeof run_id);
        memcpy(job, c->want_job, sizeof job);
        uint64_t v = c->want_version;
        int64_t since = c->want_us;
        c->has_want = 0;
        c->busy = 1;
        pthread_mutex_unlock(&c->mu);
        copy_one(c, path, run_id, job, v, since);
        pthread_mutex_lock(&c->mu);
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

void rally__snap_copier_submit(struct rally__snap_copier *c, const char *path, const char *run_id,
                               const char *job, uint64_t version)
{
    pthread_mutex_lock(&c->mu);
    snprintf(c->want, sizeof c->want, "%s", path);
    snprintf(c->want_run, sizeof c->want_run, "%s", run_id);
    snprintf(c->want_job, sizeof c->want_job, "%s", job);
    c->want_version = version;
    c->want_us = rally__now_us();
    c->has_want = 1;
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
    while (c->has_want || c->busy)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
}

void rally__snap_copier_stop(struct rally__snap_copier *c)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    c->has_want = 0; /* what waits is dropped (rally__snap_copier_drain copies it) */
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL); /* the copy in flight ends with its current try */
    free(c->buf);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
