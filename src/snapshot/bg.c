/*
 * bg.c — the background writer: one thread that writes a rank's parts of a
 * snapshot behind the caller's back, so training stalls only for the copy;
 * at most one snapshot in flight.
 *
 * A job is a rank's parts, or a commit (the manifest, then retention: rank
 * 0 runs those on a writer of their own, so the training thread does not
 * wait for their fsyncs and unlinks either).
 *
 * States, under mu: IDLE (nothing submitted, or the result collected),
 * BUSY (a job handed over, the thread at it), DONE (written or failed,
 * the result not yet collected by poll).  submit moves IDLE -> BUSY, the
 * thread BUSY -> DONE, poll DONE -> IDLE.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "snapshot/snapshot.h"
#include "snapshot/store.h"

enum { IDLE, BUSY, DONE };
enum { PARTS, COMMIT }; /* what is in flight */

struct rally__snap_bg {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* state changed, or stop */
    int state, stop, kind;
    /* the snapshot in flight: a private copy of the target and the parts */
    char dir[4096], job[RALLY__SNAP_JOB_MAX + 1], run_id[RALLY__SNAP_UUID_LEN + 1];
    struct rally__snap_target t;
    struct rally__snap_part parts[RALLY__SNAP_PARTS_MAX];
    int nparts;
    struct rally__err result;
    struct rally__snap_file files[RALLY__SNAP_PARTS_MAX];
    /* a commit in flight: the manifest's bytes (the thread's to free), the
     * retention's keep; and what it did */
    char *text;
    size_t text_n;
    int keep;
    uint64_t spare; /* under mu: what retention leaves in place (rally__snap_bg_spare) */
    char path[4096], note[RALLY__ERR_MSG_MAX];
};

/* The thread's commit: parse, commit, retention. */
static void commit_now(struct rally__snap_bg *w, struct rally__err *e)
{
    struct rally__snap_manifest *m = NULL;
    struct rally__err re = {0};
    char jobdir[4200];
    w->path[0] = w->note[0] = '\0';
    if (rally__snap_manifest_parse(w->text, w->text_n, e, &m) != RALLY_OK ||
        rally__snap_commit(w->dir, m, e, w->path, sizeof w->path) != RALLY_OK)
        goto out;
    snprintf(jobdir, sizeof jobdir, "%s/%s", w->dir, m->job);
    pthread_mutex_lock(&w->mu);
    uint64_t spare = w->spare;
    pthread_mutex_unlock(&w->mu);
    if (rally__snap_retain_sparing(jobdir, m->run_id, w->keep, m->version, spare, &re, NULL) !=
        RALLY_OK)
        snprintf(w->note, sizeof w->note, "%s", re.msg);
out:
    rally__snap_manifest_free(m);
    free(w->text);
    w->text = NULL;
}

static void release_parts(struct rally__snap_bg *w)
{
    for (int i = 0; i < w->nparts; i++) {
        if (w->parts[i].owned != RALLY__SNAP_BORROWED)
            free((void *)w->parts[i].bytes);
        w->parts[i].bytes = NULL;
    }
    w->nparts = 0;
}

static void *run(void *arg)
{
    struct rally__snap_bg *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->state != BUSY && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->state != BUSY)
            break; /* stop, nothing in flight */
        pthread_mutex_unlock(&w->mu);
        /* Only this thread touches the parts while BUSY. */
        struct rally__err e = {0};
        if (w->kind == COMMIT)
            commit_now(w, &e);
        if (w->kind == PARTS && rally__store_open(w->t.dir, &e, &w->t.st) == RALLY_OK) {
            for (int i = 0; i < w->nparts && e.code == RALLY_OK; i++)
                rally__snap_write_part(&w->t, w->parts[i].rank, w->parts[i].bytes,
                                       w->parts[i].nbytes, &e, &w->files[i]);
            rally__store_close(w->t.st); /* one store for the snapshot's parts */
            w->t.st = NULL;
        }
        pthread_mutex_lock(&w->mu);
        release_parts(w);
        w->result = e;
        w->state = DONE;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int rally__snap_bg_start(struct rally__err *e, struct rally__snap_bg **out)
{
    struct rally__snap_bg *w = calloc(1, sizeof *w);
    if (w == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory starting the snapshot writer");
    w->spare = UINT64_MAX;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    int err = pthread_create(&w->thread, NULL, run, w);
    if (err != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return rally__fail_errno(e, RALLY_ESYS, err, "cannot start the snapshot writer's thread");
    }
    *out = w;
    return RALLY_OK;
}

void rally__snap_bg_stop(struct rally__snap_bg *w)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL); /* the thread finishes what is in flight first */
    release_parts(w);
    free(w->text);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

int rally__snap_bg_submit(struct rally__snap_bg *w, const struct rally__snap_target *t,
                          const struct rally__snap_part *parts, int nparts, int wait,
                          struct rally__err *e, int *accepted)
{
    if (nparts < 1 || nparts > RALLY__SNAP_PARTS_MAX)
        return rally__fail(e, RALLY_EINVAL, "a snapshot writer takes 1 to %d parts, not %d",
                           RALLY__SNAP_PARTS_MAX, nparts);
    if (strlen(t->dir) >= sizeof w->dir || strlen(t->job) >= sizeof w->job ||
        strlen(t->run_id) >= sizeof w->run_id)
        return rally__fail(e, RALLY_EINVAL,
                           "the snapshot directory, job name or run id is too "
                           "long");
    pthread_mutex_lock(&w->mu);
    if (w->state == DONE) {
        pthread_mutex_unlock(&w->mu);
        return rally__fail(e, RALLY_EINVAL,
                           "the previous snapshot's result was not collected "
                           "(rally__snap_bg_poll)");
    }
    if (w->state == BUSY && !wait) {
        pthread_mutex_unlock(&w->mu);
        *accepted = 0;
        return RALLY_OK;
    }
    while (w->state == BUSY)
        pthread_cond_wait(&w->cv, &w->mu);
    if (w->state == DONE) { /* we waited for it: the caller's next poll sees ours */
        pthread_mutex_unlock(&w->mu);
        return rally__fail(e, RALLY_EINVAL,
                           "the previous snapshot's result was not collected "
                           "(rally__snap_bg_poll)");
    }
    pthread_mutex_unlock(&w->mu);
    /* IDLE: the thread does not touch the parts; copy them outside the lock. */
    for (int i = 0; i < nparts; i++) {
        const struct rally__snap_part *p = &parts[i];
        void *copy = NULL;
        if (p->owned) { /* taken over, or borrowed: no copy */
            copy = (void *)p->bytes;
        } else if (p->nbytes > 0) {
            if (p->nbytes > SIZE_MAX || (copy = malloc((size_t)p->nbytes)) == NULL) {
                for (int j = 0; j < i; j++) /* ours only: owned bytes stay the caller's */
                    if (!parts[j].owned)
                        free((void *)w->parts[j].bytes);
                w->nparts = 0;
                return rally__fail(e, RALLY_ENOMEM,
                                   "out of memory copying a %llu-byte model "
                                   "for the snapshot",
                                   (unsigned long long)p->nbytes);
            }
            memcpy(copy, p->bytes, (size_t)p->nbytes);
        }
        w->parts[i] = (struct rally__snap_part){p->rank, copy, p->nbytes,
                                                p->owned == RALLY__SNAP_BORROWED ? p->owned : 1};
        w->nparts = i + 1;
    }
    strcpy(w->dir, t->dir);
    strcpy(w->job, t->job);
    strcpy(w->run_id, t->run_id);
    w->t = (struct rally__snap_target){w->dir, w->job, w->run_id, t->version, t->world, NULL};
    pthread_mutex_lock(&w->mu);
    w->kind = PARTS;
    w->state = BUSY;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    *accepted = 1;
    return RALLY_OK;
}

int rally__snap_bg_commit(struct rally__snap_bg *w, const char *dir,
                          const struct rally__snap_manifest *m, int keep, struct rally__err *e)
{
    char *text = NULL;
    size_t n = 0;
    if (strlen(dir) >= sizeof w->dir)
        return rally__fail(e, RALLY_EINVAL, "the snapshot directory is too long");
    int rc = rally__snap_manifest_encode(m, e, &text, &n);
    if (rc != RALLY_OK)
        return rc;
    pthread_mutex_lock(&w->mu);
    while (w->state == BUSY)
        pthread_cond_wait(&w->cv, &w->mu);
    if (w->state == DONE) {
        pthread_mutex_unlock(&w->mu);
        free(text);
        return rally__fail(e, RALLY_EINVAL,
                           "the previous job's result was not collected (rally__snap_bg_poll)");
    }
    /* IDLE: the thread does not touch these */
    strcpy(w->dir, dir);
    w->text = text;
    w->text_n = n;
    w->keep = keep;
    w->kind = COMMIT;
    w->state = BUSY;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return RALLY_OK;
}

void rally__snap_bg_spare(struct rally__snap_bg *w, uint64_t version)
{
    pthread_mutex_lock(&w->mu);
    w->spare = version;
    pthread_mutex_unlock(&w->mu);
}

void rally__snap_bg_commit_info(const struct rally__snap_bg *w, char *path, size_t cap, char *note,
                                size_t note_cap)
{
    snprintf(path, cap, "%s", w->path);
    snprintf(note, note_cap, "%s", w->note);
}

int rally__snap_bg_poll(struct rally__snap_bg *w, int timeout_ms, int *done,
                        struct rally__err *result,
                        struct rally__snap_file files[RALLY__SNAP_PARTS_MAX])
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    if (timeout_ms > 0) {
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&w->mu);
    while (w->state == BUSY && timeout_ms != 0) {
        if (timeout_ms < 0)
            pthread_cond_wait(&w->cv, &w->mu);
        else if (pthread_cond_timedwait(&w->cv, &w->mu, &until) == ETIMEDOUT)
            break;
    }
    if (w->state == DONE) {
        *result = w->result;
        memcpy(files, w->files, sizeof w->files);
        w->state = IDLE;
        *done = 1;
    } else {
        *done = w->state == BUSY ? 0 : -1;
    }
    pthread_mutex_unlock(&w->mu);
    return RALLY_OK;
}
