/*
 * job_watch.c — the tracker's job logic (job_int.h) over time: the
 * start-up and epoch deadlines, heartbeat silence, and the progress watch
 * (docs/recovery.md, "Stuck ranks").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracker/job_int.h"
#include "util/clock.h"

/* --- time ------------------------------------------------------------------ */

/* Appends "0, 1, 3" for the ranks r with (mark[r] != 0) == want, the
 * first 16 of them. */
static void list_ranks(const char *mark, int want, int world, char *s, size_t cap, size_t *len)
{
    int shown = 0;
    for (int r = 0; r < world; r++) {
        if ((mark[r] != 0) != want)
            continue;
        if (shown++ == 16) {
            rally__jb_appendf(s, cap, len, ", ...");
            break;
        }
        rally__jb_appendf(s, cap, len, "%s%d", shown > 1 ? ", " : "", r);
    }
}

/* Lists the ranks not READY, or the task ids 0..world-1 that did not
 * register (meaningful when rally-run numbers them so: listed only when every
 * joined id is such a number). */
static void missing_list(struct rally__job *j, char *s, size_t cap, int ready)
{
    size_t len = 0;
    int v;
    char *seen = calloc((size_t)j->world, 1);
    s[0] = '\0';
    if (seen == NULL)
        return;
    for (struct rally__job_member *m = j->head; m; m = m->next) {
        if (m->state != M_REG || (ready && !m->ready))
            continue;
        if (ready)
            seen[m->rank] = 1;
        else if (rally__jb_small_int(m->task_id, j->world, &v))
            seen[v] = 1;
        else
            goto cleanup;
    }
    if (!ready)
        rally__jb_appendf(s, cap, &len, "; missing task ids: ");
    list_ranks(seen, 0, j->world, s, cap, &len);
cleanup:
    free(seen);
}

/* 1 when rank r is where the epoch being assembled or started needs it. */
static int in_step(const struct rally__job *j, int r)
{
    const struct rally__job_member *m = j->by_rank[r];
    return j->phase == RALLY__JOB_ASSEMBLING ? rally__jb_present(j, r) : m != NULL && m->ready;
}

/* The ranks missing from the epoch being assembled (or not READY in it). */
static void epoch_missing(struct rally__job *j, char *s, size_t cap)
{
    size_t len = 0;
    char *in = calloc((size_t)j->world, 1);
    s[0] = '\0';
    if (in == NULL)
        return;
    for (int r = 0; r < j->world; r++)
        in[r] = (char)in_step(j, r);
    list_ranks(in, 0, j->world, s, cap, &len);
    free(in);
}

/* 1 when m's silence is a failure once it lasts heartbeat_ms: from its
 * first ASSIGN on (a worker beats from then, wiring included), or from an
 * earlier heartbeat.  Before its ASSIGN a worker only waits for the others. */
int rally__jb_watched(const struct rally__job *j, const struct rally__job_member *m)
{
    return j->heartbeat_ms > 0 && m->state == M_REG && (m->heartbeats || m->assigned != 0) &&
           !m->finalized;
}

/* 1 when every rank missing from the epoch is a live worker that keeps
 * sending heartbeats: a survivor busy computing notices the RESET only at
 * its next collective, which may be long after the epoch's deadline.  Only
 * ranks with no live worker (a restart that never came) time an epoch out. */
static int missing_are_busy(const struct rally__job *j)
{
    if (j->heartbeat_ms <= 0)
        return 0;
    for (int r = 0; r < j->world; r++) {
        const struct rally__job_member *m = j->by_rank[r];
        if (in_step(j, r))
            continue;
        if (m == NULL || !rally__jb_watched(j, m) || j->now - m->last_rx >= j->heartbeat_ms)
            return 0;
    }
    return 1;
}

/* --- the progress watch ----------------------------------------------------- */

/* A rank is stuck when the others wait for it and it stands still
 * (docs/recovery.md, "Stuck ranks").  While the job runs: some ranks wait in
 * the lowest operation any rank waits in, K, and a rank that has not
 * entered K (it stands before K in its own code, or waits in an earlier
 * operation) has stood still for progress_ms since the first of them began
 * to wait (or since the last GO: before it, nobody could go on).  While a
 * recovery round assembles: a rank missing from it has stood still for
 * progress_ms since the round began.  A rank that is merely slow moves, and
 * a job whose ranks all compute waits for nobody. */

/* A rank whose position the watch looks at. */
static const struct rally__job_member *watched_rank(const struct rally__job *j, int r)
{
    const struct rally__job_member *m = j->by_rank[r];
    return m != NULL && m->state == M_REG && m->assigned != 0 && !m->finalized ? m : NULL;
}

/* 1 when m has not entered the operation at key. */
static int behind(const struct rally__job_member *m, uint64_t key)
{
    return m->pos < key || (m->pos == key && !m->pos_waiting);
}

/* The lowest operation a rank waits in while the job runs, and since when
 * the first waits there; 0 when nobody waits. */
static int waited_in(const struct rally__job *j, uint64_t *key, int64_t *since)
{
    int any = 0;
    for (int r = 0; r < j->world; r++) {
        const struct rally__job_member *m = watched_rank(j, r);
        if (m == NULL || !m->pos_waiting)
            continue;
        if (!any || m->pos < *key || (m->pos == *key && m->pos_since < *since)) {
            *key = m->pos;
            *since = m->pos_since;
        }
        any = 1;
    }
    return any;
}

/* When rank r will have kept the others waiting for progress_ms
 * (RALLY__NEVER: it does not keep them waiting). */
static int64_t stuck_at(const struct rally__job *j, int r, int waiting, uint64_t key, int64_t since)
{
    const struct rally__job_member *m = watched_rank(j, r);
    if (m == NULL)
        return RALLY__NEVER;
    int64_t from;
    if (j->phase == RALLY__JOB_RUNNING) {
        if (!waiting || !behind(m, key))
            return RALLY__NEVER;
        from = since > j->go_at ? since : j->go_at;
    } else if (j->recovering && !in_step(j, r)) {
        from = j->round_began;
    } else {
        return RALLY__NEVER;
    }
    if (m->pos_since > from)
        from = m->pos_since;
    return from + j->progress_ms;
}

/* "allreduce #12 of version 5": the operation at key, in words. */
static void op_str(uint64_t key, const char *what, char *s, size_t cap)
{
    unsigned phase = RALLY__KEY_PHASE(key);
    uint64_t low = key & ((UINT64_C(1) << 62) - 1);
    uint32_t q = RALLY__KEY_Q(key);
    if (what[0] == '\0') /* in its own code: the call it has yet to make */
        what = "call";
    if (phase == 0)
        snprintf(s, cap, "%s #%llu before rally_load_checkpoint", what, (unsigned long long)low);
    else if (phase == 2 && q > 0)
        snprintf(s, cap, "%s #%u of version %u", what, q - 1, RALLY__KEY_VERSION(key));
    else if (phase == 2)
        snprintf(s, cap, "%s of version %u", what, RALLY__KEY_VERSION(key));
    else
        snprintf(s, cap, "%s", phase == 1 ? "rally_load_checkpoint" : "rally_finalize");
}

/* "60 s" (whole seconds: the poll that finds it may come a little late),
 * "400 ms". */
static void secs_str(int64_t ms, char *s, size_t cap)
{
    if (ms >= 1000)
        snprintf(s, cap, "%lld s", (long long)(ms / 1000));
    else
        snprintf(s, cap, "%lld ms", (long long)ms);
}

/* Appends "rank 2" or "ranks 0, 1, 3" for the ranks with mark[r] set, and
 * says how many there were. */
static int ranks_str(const struct rally__job *j, const char *mark, char *s, size_t cap, size_t *len)
{
    int n = 0;
    for (int r = 0; r < j->world; r++)
        n += mark[r] != 0;
    rally__jb_appendf(s, cap, len, "rank%s ", n == 1 ? "" : "s");
    list_ranks(mark, 1, j->world, s, cap, len);
    return n;
}

/* The earliest time a rank will be stuck (RALLY__NEVER: none). */
int64_t rally__jb_progress_deadline(const struct rally__job *j)
{
    if (j->progress_ms <= 0 || !rally__jb_live(j) || !j->went)
        return RALLY__NEVER;
    uint64_t key = 0;
    int64_t since = 0, d = RALLY__NEVER;
    int waiting = j->phase == RALLY__JOB_RUNNING && waited_in(j, &key, &since);
    for (int r = 0; r < j->world; r++) {
        int64_t at = stuck_at(j, r, waiting, key, since);
        if (at < d)
            d = at;
    }
    return d;
}

/* Names the stuck ranks, then fences them (their owner restarts them) or
 * fails the job: by --on-stuck, and always when the owner would not restart
 * one of them, whose fencing would only add a death to the same end. */
static void check_progress(struct rally__job *j)
{
    if (rally__jb_progress_deadline(j) > j->now)
        return;
    uint64_t key = 0;
    int64_t since = 0, longest = 0;
    int running = j->phase == RALLY__JOB_RUNNING;
    int waiting = running && waited_in(j, &key, &since);
    char *stuck = calloc((size_t)j->world, 2), *waits = stuck + j->world;
    if (stuck == NULL) {
        j->oom = 1;
        return;
    }
    const struct rally__job_member *one = NULL;
    int last = 0; /* a stuck rank its owner will not restart */
    for (int r = 0; r < j->world; r++) {
        int64_t at = stuck_at(j, r, waiting, key, since);
        if (at <= j->now) {
            stuck[r] = 1;
            last |= j->no_restart[r];
            one = j->by_rank[r];
            if (j->now - (at - j->progress_ms) > longest)
                longest = j->now - (at - j->progress_ms);
        } else if (running ? watched_rank(j, r) != NULL && j->by_rank[r]->pos_waiting &&
                                 j->by_rank[r]->pos == key
                           : in_step(j, r)) {
            waits[r] = 1;
        }
    }
    char sentence[RALLY__ERR_MSG_MAX], where[160], secs[32];
    size_t len = 0;
    sentence[0] = '\0';
    secs_str(longest, secs, sizeof secs);
    int fail = j->progress_fail || last || !rally__job_recoverable(j);
    if (!running && fail) /* (a new epoch's line names the epoch itself) */
        rally__jb_appendf(sentence, sizeof sentence, &len, "epoch %u: ", j->epoch);
    int nw = ranks_str(j, waits, sentence, sizeof sentence, &len);
    if (running) {
        op_str(key, "", where, sizeof where);
        for (int r = 0; r < j->world; r++)
            if (waits[r]) {
                op_str(key, j->by_rank[r]->pos_what, where, sizeof where);
                break;
            }
        rally__jb_appendf(sentence, sizeof sentence, &len, " wait%s in %s; ", nw == 1 ? "s" : "",
                          where);
    } else {
        rally__jb_appendf(sentence, sizeof sentence, &len, " wait%s to recover; ",
                          nw == 1 ? "s" : "");
    }
    int ns = ranks_str(j, stuck, sentence, sizeof sentence, &len);
    if (running)
        rally__jb_appendf(sentence, sizeof sentence, &len, " %s not called it for %s",
                          ns == 1 ? "has" : "have", secs);
    else
        rally__jb_appendf(sentence, sizeof sentence, &len, " %s not %s for %s",
                          ns == 1 ? "has" : "have",
                          j->phase == RALLY__JOB_ASSEMBLING ? "rejoined" : "become ready", secs);
    /* where it stands, when that is not simply its own code before the call */
    if (ns == 1 && (!running || one->pos_waiting)) {
        op_str(one->pos, one->pos_what, where, sizeof where);
        rally__jb_appendf(sentence, sizeof sentence, &len, " (it %s %s)",
                          one->pos_waiting ? "waits in" : "is in its own code before", where);
    }
    if (fail) {
        rally__jb_fail_job(j, RALLY_ETIMEDOUT, -1, "%s", sentence);
    } else {
        for (int r = 0; r < j->world; r++) {
            if (!stuck[r])
                continue;
            rally__jb_fence(j, r);
            struct rally__tracker_event ev = {.kind = RALLY__TEV_RANK_FAILED,
                                              .rank = r,
                                              .task_id = j->rank_task[r],
                                              .text = sentence,
                                              .epoch = j->epoch + 1};
            rally__jb_emit_ev(j, &ev);
        }
        rally__jb_new_epoch(j, sentence);
    }
    free(stuck);
}

void rally__jb_tick(struct rally__job *j)
{
    int64_t now = j->now;
    for (struct rally__job_member *m = j->head, *next; m && rally__jb_live(j); m = next) {
        next = m->next;
        if (rally__jb_watched(j, m) && m->rank >= 0 && j->by_rank[m->rank] == m &&
            now - m->last_rx >= j->heartbeat_ms) {
            char cause[96];
            if (m->heartbeats)
                snprintf(cause, sizeof cause, "rank %d sent no heartbeat for %lld ms", m->rank,
                         (long long)(now - m->last_rx));
            else
                snprintf(cause, sizeof cause,
                         "rank %d sent no heartbeat within %lld ms of its address book", m->rank,
                         (long long)(now - m->last_rx));
            rally__jb_rank_failed(j, m->rank, cause, NULL, 0);
            next = j->head; /* the list changed: look again (a failed rank is gone from it) */
        }
    }
    if (rally__jb_live(j))
        check_progress(j);
    if (!rally__jb_live(j) || j->phase == RALLY__JOB_RUNNING)
        return;
    char miss[256];
    if (j->went) {
        if (now < j->epoch_deadline)
            return;
        if (missing_are_busy(j)) { /* survivors still computing: look again soon */
            j->epoch_deadline = now + 1000;
            return;
        }
        epoch_missing(j, miss, sizeof miss);
        rally__jb_fail_job(j, RALLY_ETIMEDOUT, -1, "epoch %u: rank(s) %s did not %s within %lld ms",
                           j->epoch, miss,
                           j->phase == RALLY__JOB_ASSEMBLING ? "rejoin" : "become ready",
                           (long long)j->startup_ms);
        return;
    }
    if (now < j->startup_deadline)
        return;
    if (j->phase == RALLY__JOB_JOINING) {
        missing_list(j, miss, sizeof miss, 0);
        rally__jb_fail_job(j, RALLY_ETIMEDOUT, -1, "only %d of %d workers joined within %lld ms%s",
                           j->nregistered, j->world, (long long)j->startup_ms, miss);
    } else {
        missing_list(j, miss, sizeof miss, 1);
        rally__jb_fail_job(j, RALLY_ETIMEDOUT, -1, "rank(s) %s did not become ready within %lld ms",
                           miss, (long long)j->startup_ms);
    }
}
