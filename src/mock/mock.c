/*
 * mock.c — parses rally_mock kill points and, in librally_mock only, kills
 * the worker when it reaches one, together with the rest of its group
 * (mock.h says how the members meet).
 */
#include "mock/mock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"

static const char *const phases[] = {"op",   "checkpoint", "recovery", "load", "wire",
                                     "flip", "final",      "lag",      "ack",  "cut"};

static void say(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof msg - 1)
        n = (int)sizeof msg - 1;
    if (n > 0 && write(2, msg, (size_t)n) < 0) {
        /* dying anyway */
    }
}

static void die(void)
{
    raise(SIGKILL);
    for (;;)
        pause();
}

#ifdef RALLY_MOCK
static int same_group(const struct rally__mock_point *a, const struct rally__mock_point *b)
{
    return a->group[0] != '\0' && strcmp(a->group, b->group) == 0;
}

/* The ranks of point i's group, "3, 4, 5". */
static void group_ranks(const struct rally__mock *m, int i, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int j = 0; j < m->n && len < cap; j++)
        if (same_group(&m->pts[i], &m->pts[j]))
            len += (size_t)snprintf(buf + len, cap - len, "%s%d", len ? ", " : "", m->pts[j].rank);
}

static void file_name(const struct rally__mock *m, int j, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/rally-mock-%s-r%d", m->sync, m->pts[j].group, m->pts[j].rank);
}

/* A member that cannot meet its group dies alone, loudly: tests look for
 * "gave up". */
static void give_up(const struct rally__mock *m, int i, const char *why, const char *detail)
{
    const struct rally__mock_point *q = &m->pts[i];
    char all[256];
    group_ranks(m, i, all, sizeof all);
    say("rally mock: rank %d gave up at version %llu seq %llu ndeath %u (%s): %s%s (group %s: "
        "ranks %s; rally_mock_sync=%s); dying alone\n",
        q->rank, (unsigned long long)q->version, (unsigned long long)q->seq, q->ndeath,
        phases[q->phase], why, detail, q->group, all, m->sync);
    die();
}

/* Says this worker is there: locks its file for point i, creating it.  The
 * descriptor stays open until the process dies (closing it drops the lock). */
static void arrive(const struct rally__mock *m, int i)
{
    struct rally__mock_point *q = &m->pts[i];
    char path[RALLY__STR_MAX + 64];
    if (q->fd >= 0)
        return;
    file_name(m, i, path, sizeof path);
    if ((q->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
        give_up(m, i, "cannot create its rendezvous file: ", strerror(errno));
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    if (fcntl(q->fd, F_SETLK, &l) != 0)
        give_up(m, i, "cannot lock its rendezvous file: ", strerror(errno));
}

/* The pid of another member that is there (holds the lock on its file for
 * point j), or 0.  Never called on this worker's own file: closing any
 * descriptor of a file drops the process's locks on it. */
static pid_t locate(const struct rally__mock *m, int j)
{
    char path[RALLY__STR_MAX + 64];
    file_name(m, j, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    pid_t pid = fcntl(fd, F_GETLK, &l) == 0 && l.l_type != F_UNLCK ? l.l_pid : 0;
    close(fd);
    return pid;
}

/* This worker is at point i: waits until every member of its group is
 * there.  The lowest rank among the members waiting to die kills the others
 * and returns, to die; the others are killed while they wait. */
static void meet(const struct rally__mock *m, int i)
{
    const struct rally__mock_point *q = &m->pts[i];
    arrive(m, i);
    say("rally mock: rank %d at version %llu seq %llu ndeath %u (%s) waits for group %s\n", q->rank,
        (unsigned long long)q->version, (unsigned long long)q->seq, q->ndeath, phases[q->phase],
        q->group);
    int64_t deadline = rally__deadline(m->wait_ms);
    for (;;) {
        int complete = 1, killer = q->rank;
        for (int j = 0; j < m->n && complete; j++) {
            const struct rally__mock_point *p = &m->pts[j];
            if (j == i || !same_group(q, p))
                continue;
            complete = locate(m, j) != 0;
            if (p->phase != RALLY__MOCK_RECOVERY && p->rank < killer)
                killer = p->rank;
        }
        if (complete && killer == q->rank) {
            say("rally mock: group %s is complete\n", q->group);
            for (int j = 0; j < m->n; j++) {
                const struct rally__mock_point *p = &m->pts[j];
                pid_t pid;
                if (j != i && same_group(q, p) && p->phase != RALLY__MOCK_RECOVERY &&
                    (pid = locate(m, j)) > 0) {
                    say("rally mock: killing rank %d (pid %ld) at version %llu seq %llu "
                        "ndeath %u (%s, group %s)\n",
                        p->rank, (long)pid, (unsigned long long)p->version,
                        (unsigned long long)p->seq, p->ndeath, phases[p->phase], q->group);
                    kill(pid, SIGKILL);
                }
            }
            return; /* the caller kills this worker */
        }
        if (rally__now_ms() >= deadline)
            give_up(m, i,
                    "the others did not all reach their points within "
                    "rally_connect_timeout_ms",
                    "");
        struct timespec ts = {0, 1000000}; /* 1 ms */
        nanosleep(&ts, NULL);
    }
}

/* Checks the groups once parsed: two points or more each, one point per
 * rank, and a directory to meet in. */
static int check_groups(struct rally__mock *m, const struct rally__config *cfg,
                        struct rally__err *e)
{
    int grouped = 0;
    for (int i = 0; i < m->n; i++) {
        const struct rally__mock_point *q = &m->pts[i];
        if (q->group[0] == '\0')
            continue;
        int size = 0;
        for (int j = 0; j < m->n; j++) {
            size += same_group(q, &m->pts[j]);
            if (j > i && same_group(q, &m->pts[j]) && q->rank == m->pts[j].rank)
                return rally__fail(e, RALLY_ECONFIG,
                                   "rally_mock: rank %d has two points in group %s; a group "
                                   "holds one point per rank",
                                   q->rank, q->group);
        }
        if (size < 2)
            return rally__fail(e, RALLY_ECONFIG,
                               "rally_mock: group %s has one point; name the same group on the "
                               "points that die together",
                               q->group);
        grouped = 1;
    }
    if (!grouped)
        return RALLY_OK;
    if (cfg->mock_sync[0] == '\0')
        return rally__fail(e, RALLY_ECONFIG,
                           "rally_mock: points in a group die together and need "
                           "rally_mock_sync=DIR, a directory every worker can write");
    if (access(cfg->mock_sync, W_OK | X_OK) != 0)
        return rally__fail_errno(e, RALLY_ECONFIG, errno,
                                 "rally_mock_sync=%s is not a directory this worker can write",
                                 cfg->mock_sync);
    if ((m->sync = strdup(cfg->mock_sync)) == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory");
    return RALLY_OK;
}
#endif

int rally__mock_parse(struct rally__mock *m, const struct rally__config *cfg, struct rally__err *e)
{
    const char *spec = cfg->mock;
    m->pts = NULL;
    m->n = 0;
    m->sync = NULL;
    m->wait_ms = cfg->connect_timeout_ms;
    m->before = (uint32_t)cfg->mock_deaths;
    if (spec[0] == '\0')
        return RALLY_OK;
#ifndef RALLY_MOCK
    return rally__fail(e, RALLY_ECONFIG,
                       "rally_mock=%s needs the failure-injection library: link -lrally_mock",
                       spec);
#else
    int cap = 1;
    for (const char *p = spec; *p; p++)
        cap += *p == ';';
    m->pts = calloc((size_t)cap, sizeof *m->pts);
    if (m->pts == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory");
    const char *p = spec;
    while (*p) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[128], ph[32] = "op";
        if (len >= sizeof item)
            return rally__fail(e, RALLY_ECONFIG, "rally_mock: point too long");
        memcpy(item, p, len);
        item[len] = '\0';
        struct rally__mock_point *q = &m->pts[m->n];
        unsigned long long v, s;
        unsigned nd;
        int used = 0;
        int k = sscanf(item, "%d,%llu,%llu,%u%n,%31[a-z]%n,%31[a-zA-Z0-9_]%n", &q->rank, &v, &s,
                       &nd, &used, ph, &used, q->group, &used);
        q->phase = -1;
        for (int i = 0; i < (int)(sizeof phases / sizeof phases[0]); i++)
            if (strcmp(ph, phases[i]) == 0)
                q->phase = i;
        if (k < 4 || (size_t)used != len || q->rank < 0 || q->phase < 0)
            return rally__fail(e, RALLY_ECONFIG,
                               "rally_mock=%s is not rank,version,seq,ndeath[,op|checkpoint|"
                               "recovery|load|wire|flip|final[,group]|lag,MS|ack]",
                               item);
        if (q->phase == RALLY__MOCK_LAG) { /* the sixth field is its milliseconds */
            char *tail;
            q->lag_ms = strtoll(q->group, &tail, 10);
            if (q->group[0] == '\0' || *tail != '\0' || q->lag_ms <= 0 || q->lag_ms > 3600000)
                return rally__fail(e, RALLY_ECONFIG,
                                   "rally_mock=%s: a lag point's sixth field is its sleep, 1 to "
                                   "3600000 ms",
                                   item);
            q->group[0] = '\0';
        }
        if ((q->phase == RALLY__MOCK_ACK || q->phase == RALLY__MOCK_CUT) && q->group[0])
            return rally__fail(e, RALLY_ECONFIG,
                               "rally_mock=%s: an %s point kills nobody, so it has no group", item,
                               phases[q->phase]);
        if (q->phase == RALLY__MOCK_FINAL && q->group[0])
            return rally__fail(e, RALLY_ECONFIG,
                               "rally_mock=%s: a final point dies alone (its group would wait "
                               "inside a collective the others need it in)",
                               item);
        q->version = v;
        q->seq = s;
        q->ndeath = nd;
        q->fd = -1;
        q->flipped = 0;
        m->n++;
        p += len + (end != NULL);
    }
    return check_groups(m, cfg, e);
#endif
}

int rally__mock_check_world(const struct rally__mock *m, int world, struct rally__err *e)
{
    for (int i = 0; i < m->n; i++)
        if (m->pts[i].rank >= world)
            return rally__fail(e, RALLY_ECONFIG,
                               "rally_mock=%d,%llu,%llu,%u names rank %d, but the job has %d "
                               "worker%s (ranks 0..%d): the point could never fire",
                               m->pts[i].rank, (unsigned long long)m->pts[i].version,
                               (unsigned long long)m->pts[i].seq, m->pts[i].ndeath, m->pts[i].rank,
                               world, world == 1 ? "" : "s", world - 1);
    return RALLY_OK;
}

void rally__mock_free(struct rally__mock *m)
{
    for (int i = 0; i < m->n; i++)
        if (m->pts[i].fd >= 0)
            close(m->pts[i].fd);
    free(m->pts);
    free(m->sync);
    m->pts = NULL;
    m->sync = NULL;
    m->n = 0;
}

void rally__mock_unfired(const struct rally__mock *m, int rank, uint32_t ndeath, uint64_t version,
                         uint64_t seq)
{
    ndeath += m->before;
    for (int i = 0; i < m->n; i++) {
        const struct rally__mock_point *q = &m->pts[i];
        if (q->rank != rank || q->ndeath < ndeath || q->flipped)
            continue; /* another rank's, one an earlier incarnation had, or a flip done */
        say("rally mock: rank %d: the kill point rally_mock=%d,%llu,%llu,%u,%s%s%s never fired "
            "(%s; this worker finalized at version %llu seq %llu, incarnation %u)\n",
            rank, q->rank, (unsigned long long)q->version, (unsigned long long)q->seq, q->ndeath,
            phases[q->phase], q->group[0] ? "," : "", q->group,
            q->ndeath > ndeath ? "it needs more deaths of this rank first"
            : q->phase == RALLY__MOCK_CHECKPOINT
                ? "a checkpoint point's seq is the number of collectives before rally_checkpoint "
                  "in its version"
                : "the worker never stood there",
            (unsigned long long)version, (unsigned long long)seq, ndeath + 1);
    }
}

/* 1 when point q is this worker's at (version, seq) in this incarnation. */
static int here(const struct rally__mock_point *q, int rank, uint64_t version, uint64_t seq,
                uint32_t ndeath)
{
    return q->rank == rank && q->version == version && q->seq == seq && q->ndeath == ndeath;
}

void rally__mock_check(const struct rally__mock *m, int rank, uint64_t version, uint64_t seq,
                       uint32_t ndeath, int phase)
{
    ndeath += m->before;
    for (int i = 0; i < m->n; i++) {
        const struct rally__mock_point *q = &m->pts[i];
        if (!here(q, rank, version, seq, ndeath))
            continue;
#ifdef RALLY_MOCK
        /* a recovery member is there once it enters the call at its position */
        if (q->group[0] && q->phase == RALLY__MOCK_RECOVERY && phase == RALLY__MOCK_OP)
            arrive(m, i);
#endif
        if (q->phase != phase)
            continue;
#ifdef RALLY_MOCK
        if (q->group[0] && phase != RALLY__MOCK_RECOVERY)
            meet(m, i);
#endif
        say("rally mock: killing rank %d at version %llu seq %llu ndeath %u (%s%s%s)\n", rank,
            (unsigned long long)version, (unsigned long long)seq, ndeath, phases[phase],
            q->group[0] ? ", group " : "", q->group);
        die();
    }
}

int64_t rally__mock_lag(struct rally__mock *m, int rank, uint64_t version, uint64_t seq,
                        uint32_t ndeath)
{
    ndeath += m->before;
    for (int i = 0; i < m->n; i++) {
        struct rally__mock_point *q = &m->pts[i];
        if (q->phase != RALLY__MOCK_LAG || q->rank != rank || q->ndeath != ndeath ||
            version < q->version || (version == q->version && seq < q->seq))
            continue;
        if (!q->flipped)
            say("rally mock: rank %d lags %lld ms before each collective from version %llu seq "
                "%llu\n",
                rank, (long long)q->lag_ms, (unsigned long long)version, (unsigned long long)seq);
        q->flipped = 1;
        return q->lag_ms;
    }
    return 0;
}

int rally__mock_flip(const struct rally__mock *m, int rank, uint64_t version, uint64_t seq,
                     uint32_t ndeath)
{
    ndeath += m->before;
    for (int i = 0; i < m->n; i++) {
        struct rally__mock_point *q = &m->pts[i];
        if (q->phase == RALLY__MOCK_FLIP && !q->flipped && here(q, rank, version, seq, ndeath)) {
            q->flipped = 1;
            say("rally mock: flipping one bit of rank %d's result at version %llu seq %llu\n", rank,
                (unsigned long long)version, (unsigned long long)seq);
            return 1;
        }
    }
    return 0;
}

/* 1 when a point of phase (an ack or cut point) matches: it fires once;
 * an ack point at its version or after. */
static int waits(const struct rally__mock *m, int phase, int rank, uint64_t version, uint64_t seq,
                 uint32_t ndeath, const char *where)
{
    ndeath += m->before;
    for (int i = 0; i < m->n; i++) {
        struct rally__mock_point *q = &m->pts[i];
        int at = phase == RALLY__MOCK_ACK
                     ? q->rank == rank && q->version <= version && q->ndeath == ndeath
                     : here(q, rank, version, seq, ndeath);
        if (q->phase == phase && !q->flipped && at) {
            q->flipped = 1;
            say("rally mock: rank %d waits for a RESET inside %s of version %llu\n", rank, where,
                (unsigned long long)version);
            return 1;
        }
    }
    return 0;
}

int rally__mock_ack(const struct rally__mock *m, int rank, uint64_t version, uint32_t ndeath)
{
    return waits(m, RALLY__MOCK_ACK, rank, version, 0, ndeath, "the acknowledgement");
}

int rally__mock_cut(const struct rally__mock *m, int rank, uint64_t version, uint64_t seq,
                    uint32_t ndeath)
{
    char where[48];
    snprintf(where, sizeof where, "the allreduce at seq %llu", (unsigned long long)seq);
    return waits(m, RALLY__MOCK_CUT, rank, version, seq, ndeath, where);
}
