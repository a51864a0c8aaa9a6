/*
 * launch_policy_test.c — unit tests of rally-run's restart policy
 * (tools/launch/policy.h), driven synchronously: no processes, no clock.
 *
 * Each case feeds tracker events, wait statuses, signals and the tracker's
 * state at given moments and checks the decision (restart, abort, forward,
 * kills due), the verdict line with its exit status, and the summary.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "launch/policy.h"
#include "tracker/server.h"
#include "util/clock.h"

#define KILLED(sig) (sig)          /* a wait status: killed by a signal */
#define EXITED(code) ((code) << 8) /* a wait status: exited with code */

static const struct rally__launch_view running = {RALLY__TRACKER_RUNNING, -1, "", 1, 0, "", -1};
static const struct rally__launch_view starting = {RALLY__TRACKER_RUNNING, -1, "", 0, 0, "", -1};

static struct rally__launch_policy *make(int world, int max_restarts, int64_t grace_ms)
{
    struct rally__launch_policy *pol;
    assert_int_equal(rally__launch_policy_new(&pol, world, world, max_restarts, grace_ms), 0);
    for (int i = 0; i < world; i++)
        rally__launch_policy_spawned(pol, i);
    return pol;
}

static void event(struct rally__launch_policy *pol, int kind, int rank, const char *text,
                  int64_t now)
{
    struct rally__launch_event ev = {.kind = kind, .rank = rank};
    snprintf(ev.text, sizeof ev.text, "%s", text);
    rally__launch_policy_event(pol, &ev, now);
}

/* Every rank finalizes and exits 0. */
static void finish(struct rally__launch_policy *pol, int world)
{
    struct rally__launch_act a;
    for (int i = 0; i < world; i++)
        event(pol, RALLY__TEV_FINALIZED, i, "", 0);
    for (int i = 0; i < world; i++) {
        rally__launch_policy_exit(pol, i, EXITED(0), &running, 0, &a);
        assert_int_equal(a.restart, -1);
        assert_string_equal(a.abort, "");
    }
}

/* The verdict's exit status; its line (or "") in line. */
static int verdict(const struct rally__launch_policy *pol, const struct rally__launch_view *v,
                   char *line, size_t cap)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_non_null(f);
    int st = rally__launch_policy_verdict(pol, v, f);
    fclose(f);
    snprintf(line, cap, "%s", buf);
    free(buf);
    return st;
}

static void assert_summary(const struct rally__launch_policy *pol, const char *want)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_non_null(f);
    rally__launch_policy_summary(pol, f);
    fclose(f);
    char line[256];
    snprintf(line, sizeof line, "rally-run: summary: %s\n", want);
    assert_string_equal(buf, line);
    free(buf);
}

static void all_finalize(void **state)
{
    struct rally__launch_policy *pol = make(3, 3, 3000);
    char line[1024];
    finish(pol, 3);
    assert_int_equal(verdict(pol, &running, line, sizeof line), 0);
    assert_string_equal(line, "");
    assert_int_equal(rally__launch_policy_deadline(pol), RALLY__NEVER);
    assert_summary(pol, "deaths=0 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:0,2:0");
    rally__launch_policy_free(pol);
}

static void restart_then_recover(void **state)
{
    struct rally__launch_policy *pol = make(3, 3, 3000);
    struct rally__launch_act a;
    char line[1024];
    rally__launch_policy_exit(pol, 1, KILLED(SIGKILL), &running, 100, &a);
    assert_int_equal(a.restart, 1);
    assert_string_equal(a.cause, "killed by signal 9");
    assert_string_equal(a.say, "rank 1 died (killed by signal 9); restarting it (restart 1 of 3)");
    assert_string_equal(a.abort, "");
    assert_int_equal(rally__launch_policy_deadline(pol), RALLY__NEVER);
    rally__launch_policy_spawned(pol, 1);
    event(pol, RALLY__TEV_RECOVERED, -1, "", 200);
    /* a second death of the same rank, of SIGSEGV this time */
    rally__launch_policy_exit(pol, 1, KILLED(SIGSEGV), &running, 300, &a);
    assert_int_equal(a.restart, 1);
    assert_string_equal(a.say, "rank 1 died (killed by signal 11); restarting it (restart 2 of 3)");
    rally__launch_policy_spawned(pol, 1);
    event(pol, RALLY__TEV_RECOVERED, -1, "", 400);
    finish(pol, 3);
    assert_int_equal(verdict(pol, &running, line, sizeof line), 0);
    assert_summary(pol, "deaths=2 recovered=2 epochs=2 restarts=2 per-rank-deaths=0:0,1:2,2:0");
    rally__launch_policy_free(pol);
}

/* Two deaths serve one recovery: both count as recovered, one epoch. */
static void two_deaths_one_epoch(void **state)
{
    struct rally__launch_policy *pol = make(4, 3, 3000);
    struct rally__launch_act a;
    rally__launch_policy_exit(pol, 0, KILLED(SIGKILL), &running, 0, &a);
    assert_int_equal(a.restart, 0);
    rally__launch_policy_exit(pol, 3, KILLED(SIGSEGV), &running, 0, &a);
    assert_int_equal(a.restart, 3);
    assert_string_equal(a.cause, "killed by signal 11");
    rally__launch_policy_spawned(pol, 0);
    rally__launch_policy_spawned(pol, 3);
    assert_summary(pol, "deaths=2 recovered=0 epochs=0 restarts=2 per-rank-deaths=0:1,1:0,2:0,3:1");
    event(pol, RALLY__TEV_RECOVERED, -1, "", 10);
    assert_summary(pol, "deaths=2 recovered=2 epochs=1 restarts=2 per-rank-deaths=0:1,1:0,2:0,3:1");
    rally__launch_policy_free(pol);
}

static void restarts_exhausted(void **state)
{
    struct rally__launch_policy *pol = make(3, 2, 300);
    struct rally__launch_act a;
    char line[1024];
    for (int i = 0; i < 2; i++) {
        rally__launch_policy_exit(pol, 1, KILLED(SIGKILL), &running, 0, &a);
        assert_int_equal(a.restart, 1);
        assert_int_equal(a.last, i == 1); /* the second is its last: the tracker hears it */
        rally__launch_policy_spawned(pol, 1);
        event(pol, RALLY__TEV_RECOVERED, -1, "", 0);
    }
    rally__launch_policy_exit(pol, 1, KILLED(SIGKILL), &running, 1000, &a);
    assert_int_equal(a.restart, -1);
    assert_string_equal(
        a.abort, "rank 1 died (killed by signal 9) and its restarts are exhausted (2 of 2 used)");
    /* the others get the grace, then every one left is killed, once */
    assert_int_equal(rally__launch_policy_deadline(pol), 1300);
    assert_int_equal(rally__launch_policy_due(pol, 1299), -1);
    assert_int_equal(rally__launch_policy_due(pol, 1300), RALLY__LAUNCH_KILL_ALL);
    assert_int_equal(rally__launch_policy_due(pol, 1301), -1);
    /* the survivors leave after the abort: no more deaths, no second abort */
    for (int i = 0; i < 3; i += 2) {
        rally__launch_policy_exit(pol, i, EXITED(1), &running, 1100, &a);
        assert_int_equal(a.restart, -1);
        assert_string_equal(a.abort, "");
    }
    assert_int_equal(verdict(pol, &running, line, sizeof line), 1);
    assert_string_equal(line, "rally-run: rank 1 died (killed by signal 9) and its restarts are "
                              "exhausted (2 of 2 used)\n");
    assert_summary(pol, "deaths=3 recovered=2 epochs=2 restarts=2 per-rank-deaths=0:0,1:3,2:0");
    rally__launch_policy_free(pol);
}

/* Before the first GO (not recoverable) and with --max-restarts 0, a death
 * fails the job. */
static void death_fails_the_job(void **state)
{
    char line[1024];
    struct rally__launch_act a;
    struct rally__launch_policy *pol = make(3, 3, 300);
    rally__launch_policy_exit(pol, 1, EXITED(3), &starting, 0, &a);
    assert_int_equal(a.restart, -1);
    assert_string_equal(a.abort, "rank 1 exited with status 3");
    assert_int_equal(verdict(pol, &running, line, sizeof line), 3);
    assert_string_equal(line, "rally-run: rank 1 exited with status 3\n");
    assert_summary(pol, "deaths=1 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:1,2:0");
    rally__launch_policy_free(pol);

    pol = make(2, 0, 300);
    rally__launch_policy_exit(pol, 0, KILLED(SIGKILL), &running, 0, &a);
    assert_int_equal(a.restart, -1);
    assert_string_equal(a.abort, "rank 0 was killed by signal 9");
    rally__launch_policy_exit(pol, 1, EXITED(0), &running, 0, &a);
    assert_string_equal(a.abort, "");
    assert_int_equal(verdict(pol, &running, line, sizeof line), 1);
    assert_string_equal(line, "rally-run: rank 0 was killed by signal 9\n");
    rally__launch_policy_free(pol);
}

/* The tracker fences a rank whose process still runs: SIGKILL after the
 * fence grace, and its death names the tracker's reason. */
static void fenced_rank_is_killed(void **state)
{
    struct rally__launch_policy *pol = make(3, 3, 3000);
    struct rally__launch_act a;
    event(pol, RALLY__TEV_RANK_FAILED, 0, "rank 0 sent no heartbeat for 700 ms", 1000);
    assert_int_equal(rally__launch_policy_deadline(pol), 1000 + RALLY__LAUNCH_FENCE_GRACE_MS);
    assert_int_equal(rally__launch_policy_due(pol, 1000 + RALLY__LAUNCH_FENCE_GRACE_MS - 1), -1);
    assert_int_equal(rally__launch_policy_due(pol, 1000 + RALLY__LAUNCH_FENCE_GRACE_MS), 0);
    assert_int_equal(rally__launch_policy_due(pol, 2000), -1);
    rally__launch_policy_exit(pol, 0, KILLED(SIGKILL), &running, 1600, &a);
    assert_int_equal(a.restart, 0);
    assert_string_equal(a.say,
                        "rank 0 died (killed by signal 9 after the tracker fenced it: rank 0 "
                        "sent no heartbeat for 700 ms); restarting it (restart 1 of 3)");
    rally__launch_policy_spawned(pol, 0);
    /* the new incarnation dies of a signal 9 of its own: no fence story */
    rally__launch_policy_exit(pol, 0, KILLED(SIGKILL), &running, 1700, &a);
    assert_string_equal(a.cause, "killed by signal 9");
    rally__launch_policy_free(pol);
}

/* A rank fenced for silence that exits on its own (it saw the tracker close
 * its connection) before the grace: its death still names the fence. */
static void fenced_rank_exiting_names_the_fence(void **state)
{
    struct rally__launch_policy *pol = make(2, 3, 3000);
    struct rally__launch_act a;
    event(pol, RALLY__TEV_RANK_FAILED, 0, "rank 0 sent no heartbeat for 700 ms", 1000);
    rally__launch_policy_exit(pol, 0, EXITED(1), &running, 1200, &a);
    assert_int_equal(a.restart, 0);
    assert_string_equal(a.cause, "exited with status 1 after the tracker fenced it: rank 0 sent "
                                 "no heartbeat for 700 ms");
    rally__launch_policy_free(pol);
}

/* A fenced rank that exits on its own before the grace: no kill, and the
 * fence event of a rank already reaped (the launcher's own report) is
 * ignored, so it cannot hit the process that replaces it. */
static void fence_of_a_gone_rank(void **state)
{
    struct rally__launch_policy *pol = make(2, 3, 3000);
    struct rally__launch_act a;
    event(pol, RALLY__TEV_RANK_FAILED, 1, "rank 1 sent no heartbeat for 700 ms", 0);
    rally__launch_policy_exit(pol, 1, EXITED(2), &running, 10, &a);
    assert_int_equal(a.restart, 1);
    assert_string_equal(a.cause, "exited with status 2 after the tracker fenced it: rank 1 sent "
                                 "no heartbeat for 700 ms");
    assert_int_equal(rally__launch_policy_deadline(pol), RALLY__NEVER);
    event(pol, RALLY__TEV_RANK_FAILED, 1, "the launcher reported rank 1 dead", 10);
    rally__launch_policy_spawned(pol, 1);
    assert_int_equal(rally__launch_policy_deadline(pol), RALLY__NEVER);
    assert_int_equal(rally__launch_policy_due(pol, 100000), -1);
    rally__launch_policy_free(pol);
}

static void signals(void **state)
{
    struct rally__launch_policy *pol = make(2, 3, 300);
    struct rally__launch_act a;
    char line[1024];
    rally__launch_policy_signal(pol, SIGTERM, 50, &a);
    assert_int_equal(a.forward, SIGTERM);
    assert_string_equal(a.abort, "rally-run was stopped by signal 15");
    rally__launch_policy_signal(pol, SIGINT, 60, &a);
    assert_int_equal(a.forward, SIGINT);
    assert_string_equal(a.abort, "");
    assert_int_equal(rally__launch_policy_deadline(pol), 350);
    /* deaths after a stop are no deaths and restart nothing */
    rally__launch_policy_exit(pol, 0, KILLED(SIGTERM), &running, 70, &a);
    assert_int_equal(a.restart, -1);
    assert_string_equal(a.abort, "");
    assert_int_equal(verdict(pol, &running, line, sizeof line), 128 + SIGTERM);
    assert_string_equal(line, "rally-run: stopped by signal 15 (Terminated)\n");
    assert_summary(pol, "deaths=0 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:0");
    rally__launch_policy_free(pol);
}

/* Preemption: SIGTERM once the snapshot asked for is committed stops the
 * job like any signal, but the verdict names the snapshot and is
 * RALLY__LAUNCH_EXIT_PREEMPTED; a second signal changes neither. */
static void preempted(void **state)
{
    struct rally__launch_policy *pol = make(2, 3, 300);
    struct rally__launch_act a;
    char line[1024];
    rally__launch_policy_preempted(pol, SIGTERM, "/s/job/snap-00000006", 50, &a);
    assert_int_equal(a.forward, SIGTERM);
    assert_string_equal(a.abort, "rally-run was stopped by signal 15");
    assert_int_equal(rally__launch_policy_deadline(pol), 350);
    rally__launch_policy_signal(pol, SIGINT, 60, &a);
    assert_int_equal(a.forward, SIGINT);
    rally__launch_policy_exit(pol, 0, KILLED(SIGTERM), &running, 70, &a);
    assert_int_equal(a.restart, -1);
    assert_int_equal(verdict(pol, &running, line, sizeof line), RALLY__LAUNCH_EXIT_PREEMPTED);
    assert_string_equal(line, "rally-run: preempted by signal 15 (Terminated) after "
                              "/s/job/snap-00000006 was committed: --resume latest continues "
                              "from it\n");
    rally__launch_policy_free(pol);
}

/* The tracker fails the job first: with no rank to blame its sentence is
 * the verdict; when it names a rank that died, that rank's death is. */
#define STUCK "ranks 0, 1, 3 wait in allreduce #12 of version 5; rank 2 has not called it for 60 s"

/* --on-stuck restart: the tracker fences the stuck rank (a RANK_FAILED
 * that is no disconnect); its process, alive in its own code, gets SIGKILL
 * after the fence grace and is restarted, its death naming the sentence. */
static void stuck_rank_restarted(void **state)
{
    struct rally__launch_policy *pol = make(4, 3, 3000);
    struct rally__launch_act a;
    event(pol, RALLY__TEV_RANK_FAILED, 2, STUCK, 60000);
    assert_int_equal(rally__launch_policy_due(pol, 60000 + RALLY__LAUNCH_FENCE_GRACE_MS), 2);
    rally__launch_policy_exit(pol, 2, KILLED(SIGKILL), &running, 60600, &a);
    assert_int_equal(a.restart, 2);
    assert_string_equal(a.say, "rank 2 died (killed by signal 9 after the tracker fenced it: " STUCK
                               "); restarting it (restart 1 of 3)");
    rally__launch_policy_spawned(pol, 2);
    event(pol, RALLY__TEV_RECOVERED, -1, "", 61000);
    finish(pol, 4);
    char line[512];
    assert_int_equal(verdict(pol, &running, line, sizeof line), 0);
    assert_summary(pol, "deaths=1 recovered=1 epochs=1 restarts=1 per-rank-deaths=0:0,1:0,2:1,3:0");
    rally__launch_policy_free(pol);
}

/* --on-stuck fail: the tracker fails the job with the sentence (no rank to
 * blame); every worker, the stuck one too, is killed after the grace, and
 * the verdict is the sentence, with no death counted. */
static void stuck_rank_fails_the_job(void **state)
{
    struct rally__launch_policy *pol = make(4, 3, 300);
    struct rally__launch_act a;
    struct rally__launch_view failed = {RALLY__TRACKER_FAILED, -1, STUCK, 0, RALLY_ETIMEDOUT,
                                        "", -1};
    rally__launch_policy_tracker(pol, &failed, 60000);
    assert_int_equal(rally__launch_policy_due(pol, 60300), RALLY__LAUNCH_KILL_ALL);
    for (int i = 0; i < 4; i++) {
        rally__launch_policy_exit(pol, i, KILLED(SIGKILL), &failed, 60310, &a);
        assert_int_equal(a.restart, -1);
    }
    char line[512];
    assert_int_equal(verdict(pol, &failed, line, sizeof line), 1);
    assert_string_equal(line, "rally-run: job aborted: " STUCK "\n");
    assert_summary(pol, "deaths=0 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:0,2:0,3:0");
    rally__launch_policy_free(pol);
}

static void tracker_fails_first(void **state)
{
    char line[1024];
    struct rally__launch_act a;
    struct rally__launch_policy *pol = make(2, 3, 300);
    struct rally__launch_view failed = {RALLY__TRACKER_FAILED, -1,
                                        "only 0 of 2 workers joined within 300 ms", 0,
                                        RALLY_ETIMEDOUT, "", -1};
    rally__launch_policy_tracker(pol, &running, 0);
    assert_int_equal(rally__launch_policy_deadline(pol), RALLY__NEVER);
    rally__launch_policy_tracker(pol, &failed, 1000);
    assert_int_equal(rally__launch_policy_deadline(pol), 1300);
    rally__launch_policy_exit(pol, 0, KILLED(SIGKILL), &failed, 1300, &a);
    assert_int_equal(a.restart, -1);
    assert_int_equal(verdict(pol, &failed, line, sizeof line), 1);
    assert_string_equal(line, "rally-run: job aborted: only 0 of 2 workers joined within 300 ms\n");
    assert_summary(pol, "deaths=0 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:0");
    rally__launch_policy_free(pol);

    pol = make(3, 0, 300);
    struct rally__launch_view lost = {RALLY__TRACKER_FAILED, 1,
                                      "rank 1 disconnected without finalizing", 0, RALLY_EPEER,
                                      "", -1};
    rally__launch_policy_tracker(pol, &lost, 0);
    rally__launch_policy_exit(pol, 1, KILLED(SIGKILL), &lost, 5, &a);
    assert_int_equal(a.restart, -1);
    assert_string_equal(a.abort, "");
    rally__launch_policy_exit(pol, 0, EXITED(1), &lost, 6, &a);
    assert_int_equal(verdict(pol, &lost, line, sizeof line), 1);
    assert_string_equal(line, "rally-run: rank 1 was killed by signal 9\n");
    assert_summary(pol, "deaths=1 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:1,2:0");
    rally__launch_policy_free(pol);
}

/* Elastic (--min-workers): a crash with its restarts spent gives the rank
 * up instead of failing the job; the others finish, and the summary names
 * it.  Below the minimum the tracker fails the job, and its sentence is the
 * verdict. */
static void elastic_gives_up_a_rank(void **state)
{
    struct rally__launch_policy *pol = make(3, 1, 300);
    rally__launch_policy_elastic(pol, 1);
    struct rally__launch_act a;
    char line[1024];
    rally__launch_policy_exit(pol, 2, KILLED(SIGKILL), &running, 0, &a);
    assert_int_equal(a.restart, 2); /* a restart left: in place first */
    assert_int_equal(a.last, 0);    /* ... and after it, given up, not failing the job */
    assert_int_equal(a.gone, -1);
    rally__launch_policy_spawned(pol, 2);
    event(pol, RALLY__TEV_RECOVERED, -1, "", 0);
    rally__launch_policy_exit(pol, 2, KILLED(SIGKILL), &running, 10, &a);
    assert_int_equal(a.restart, -1);
    assert_int_equal(a.gone, 2);
    assert_string_equal(a.abort, "");
    assert_string_equal(a.say, "rank 2 died (killed by signal 9); its restarts are exhausted: "
                               "giving it up");
    assert_string_equal(a.cause, "killed by signal 9; its restarts are exhausted");
    struct rally__launch_event ev = {.kind = RALLY__TEV_RESIZED, .rank = 2, .world = 2};
    rally__launch_policy_event(pol, &ev, 20);
    assert_int_equal(rally__launch_policy_deadline(pol), RALLY__NEVER); /* nobody is killed */
    finish(pol, 2);
    struct rally__launch_view done = {RALLY__TRACKER_DONE, -1, "", 0, 0, "", -1};
    assert_int_equal(verdict(pol, &done, line, sizeof line), 0);
    assert_string_equal(line, "");
    assert_summary(pol, "deaths=2 recovered=1 epochs=1 restarts=1 per-rank-deaths=0:0,1:0,2:2 "
                        "lost-for-good=2 workers=2");
    rally__launch_policy_free(pol);

    pol = make(2, 0, 300);
    rally__launch_policy_elastic(pol, 1);
    rally__launch_policy_exit(pol, 0, KILLED(SIGKILL), &running, 0, &a);
    assert_int_equal(a.gone, 0);
    assert_string_equal(a.say, "rank 0 died (killed by signal 9); --max-restarts 0: giving it up");
    struct rally__launch_view below = {
        RALLY__TRACKER_FAILED, 0,
        "rank 0 lost for good (killed by signal 9; --max-restarts 0): going on would leave 1 "
        "worker, fewer than the minimum of 2",
        0, RALLY_EPEER, "", -1};
    rally__launch_policy_tracker(pol, &below, 5);
    assert_int_equal(rally__launch_policy_deadline(pol), 305);
    rally__launch_policy_exit(pol, 1, EXITED(1), &below, 6, &a);
    assert_int_equal(verdict(pol, &below, line, sizeof line), 1);
    assert_string_equal(line, "rally-run: job aborted: rank 0 lost for good (killed by signal 9; "
                              "--max-restarts 0): going on would leave 1 worker, fewer than the "
                              "minimum of 2\n");
    rally__launch_policy_free(pol);

    /* a host gone for good: its rank's restart cannot reach it */
    pol = make(3, 2, 300);
    rally__launch_policy_elastic(pol, 1);
    rally__launch_policy_host(pol, 1, "h2");
    rally__launch_policy_lost(pol, 1, &running, 0, &a);
    assert_int_equal(a.restart, 1);
    rally__launch_policy_spawned(pol, 1);
    rally__launch_policy_unstarted(pol, 1, "host h2 (rank 1): cannot be reached: no route", 1,
                                   &running, 5, &a);
    assert_int_equal(a.gone, 1);
    assert_string_equal(a.abort, "");
    assert_string_equal(a.say, "host h2 (rank 1): cannot be reached: no route: giving it up");
    rally__launch_policy_free(pol);
}

/* --give-up-slow: a rank that stays slow is killed at once and, once it
 * ended, given up as one with no restart left, restarts left or not; only
 * in an elastic job, and once. */
static void slow_rank_is_given_up(void **state)
{
    (void)state;
    struct rally__launch_policy *pol = make(3, 3, 300);
    struct rally__launch_act a;
    assert_int_equal(rally__launch_policy_slow(pol, 1, "late", 50), 0); /* not elastic */
    assert_int_equal(rally__launch_policy_deadline(pol), RALLY__NEVER);
    rally__launch_policy_elastic(pol, 1);
    assert_int_equal(rally__launch_policy_slow(pol, 1, "it arrived 60 % after the median", 50), 1);
    assert_int_equal(rally__launch_policy_slow(pol, 1, "again", 60), 0); /* once */
    assert_int_equal(rally__launch_policy_deadline(pol), 50);
    assert_int_equal(rally__launch_policy_due(pol, 50), 1);
    assert_int_equal(rally__launch_policy_due(pol, 50), -1);
    rally__launch_policy_exit(pol, 1, KILLED(SIGKILL), &running, 55, &a);
    assert_int_equal(a.restart, -1); /* three restarts left, yet given up */
    assert_int_equal(a.gone, 1);
    assert_string_equal(a.say, "rank 1 died (killed by signal 9: given up as slow: it arrived 60 % "
                               "after the median); --give-up-slow: giving it up");
    struct rally__launch_rank_counts c;
    rally__launch_policy_rank(pol, 1, &c);
    assert_true(c.dropped);
    assert_int_equal(rally__launch_policy_slow(pol, 1, "late", 70), 0); /* gone already */
    rally__launch_policy_free(pol);
}

/* Growth (--max-workers): a rank added waits to join; its exit before the
 * tracker assigned it is no death and fails nothing; once assigned it is a
 * rank like the others.  No more than max_workers run or wait. */
static void elastic_takes_ranks_in(void **state)
{
    struct rally__launch_policy *pol;
    assert_int_equal(rally__launch_policy_new(&pol, 2, 6, 1, 300), 0);
    for (int i = 0; i < 2; i++)
        rally__launch_policy_spawned(pol, i);
    struct rally__launch_act a;
    char line[1024];
    assert_int_equal(rally__launch_policy_add(pol, 3), 2);
    assert_int_equal(rally__launch_policy_add(pol, 3), -1); /* 2 run, 1 waits */
    rally__launch_policy_spawned(pol, 2);
    assert_true(rally__launch_policy_joining(pol, 2));
    rally__launch_policy_exit(pol, 2, EXITED(1), &running, 0, &a);
    assert_string_equal(a.say, "rank 2 exited with status 1 before the job took it in");
    assert_string_equal(a.abort, "");
    assert_int_equal(a.restart, -1);
    assert_int_equal(rally__launch_policy_add(pol, 3), 3);
    rally__launch_policy_spawned(pol, 3);
    event(pol, RALLY__TEV_ASSIGNED, 3, "", 0);
    assert_false(rally__launch_policy_joining(pol, 3));
    struct rally__launch_event ev = {.kind = RALLY__TEV_RESIZED, .rank = -1, .world = 3};
    rally__launch_policy_event(pol, &ev, 0);
    assert_int_equal(rally__launch_policy_slots(pol), 4);
    rally__launch_policy_exit(pol, 3, KILLED(SIGKILL), &running, 10, &a); /* a rank now */
    assert_int_equal(a.restart, 3);
    rally__launch_policy_spawned(pol, 3);
    event(pol, RALLY__TEV_RECOVERED, -1, "", 10);
    for (int i = 0; i < 4; i++)
        if (i != 2)
            event(pol, RALLY__TEV_FINALIZED, i, "", 20);
    for (int i = 0; i < 4; i++)
        if (i != 2)
            rally__launch_policy_exit(pol, i, EXITED(0), &running, 30, &a);
    struct rally__launch_view done = {RALLY__TRACKER_DONE, -1, "", 0, 0, "", -1};
    assert_int_equal(verdict(pol, &done, line, sizeof line), 0);
    assert_summary(pol, "deaths=1 recovered=1 epochs=1 restarts=1 per-rank-deaths=0:0,1:0,2:0,3:1 "
                        "workers=3");
    rally__launch_policy_free(pol);
}

/* Growth onto a host that may be down (rally-run --launcher ssh
 * --max-workers): a joiner that could not be started is no failure and
 * gives its slot back; one whose connection was lost before the job took it
 * in fails nothing either; neither holds a place, nor does a rank given
 * up. */
static void elastic_joiner_on_a_lost_host(void **state)
{
    (void)state;
    struct rally__launch_policy *pol;
    struct rally__launch_act a;
    assert_int_equal(rally__launch_policy_new(&pol, 3, 8, 1, 300), 0);
    rally__launch_policy_elastic(pol, 1);
    for (int i = 0; i < 3; i++) {
        rally__launch_policy_spawned(pol, i);
        rally__launch_policy_host(pol, i, i == 2 ? "h3" : "h1");
    }
    rally__launch_policy_lost(pol, 2, &running, 0, &a);
    assert_int_equal(a.restart, 2);
    rally__launch_policy_spawned(pol, 2);
    rally__launch_policy_unstarted(pol, 2, "host h3 (rank 2): cannot be reached: no route", 1,
                                   &running, 5, &a);
    assert_int_equal(a.gone, 2);
    struct rally__launch_event ev = {.kind = RALLY__TEV_RESIZED, .rank = 2, .world = 2};
    rally__launch_policy_event(pol, &ev, 6);
    assert_false(rally__launch_policy_holds(pol, 2));
    assert_true(rally__launch_policy_holds(pol, 1));
    assert_int_equal(rally__launch_policy_add(pol, 3), 3);
    assert_true(rally__launch_policy_holds(pol, 3));
    rally__launch_policy_host(pol, 3, "h3");
    rally__launch_policy_spawned(pol, 3);
    rally__launch_policy_unstarted(pol, 3, "host h3 (rank 3): cannot be reached: no route", 1,
                                   &running, 10, &a);
    assert_string_equal(a.say, "host h3 (rank 3): cannot be reached: no route: rank 3 was not "
                               "started");
    assert_string_equal(a.abort, "");
    assert_int_equal(a.gone, -1);
    assert_int_equal(rally__launch_policy_slots(pol), 3); /* the slot is the next one's */
    assert_int_equal(rally__launch_policy_add(pol, 3), 3);
    rally__launch_policy_host(pol, 3, "h3");
    rally__launch_policy_spawned(pol, 3);
    rally__launch_policy_lost(pol, 3, &running, 20, &a);
    assert_string_equal(a.say, "rank 3 on host h3: the connection to the host was lost before "
                               "the job took it in");
    assert_int_equal(a.restart, -1);
    assert_string_equal(a.abort, "");
    assert_false(rally__launch_policy_holds(pol, 3));
    assert_int_equal(rally__launch_policy_add(pol, 3), 4); /* that one ran: a slot spent */
    rally__launch_policy_spawned(pol, 4);
    event(pol, RALLY__TEV_ASSIGNED, 4, "", 30);
    assert_false(rally__launch_policy_joining(pol, 4));
    assert_true(rally__launch_policy_holds(pol, 4));
    ev.world = 3;
    rally__launch_policy_event(pol, &ev, 31);
    assert_int_equal(rally__launch_policy_add(pol, 3), -1); /* 3 hold places: the maximum */
    rally__launch_policy_free(pol);
}

static void exits_around_finalize(void **state)
{
    char line[1024];
    struct rally__launch_act a;
    struct rally__launch_policy *pol = make(2, 3, 300);
    event(pol, RALLY__TEV_FINALIZED, 0, "", 0);
    rally__launch_policy_exit(pol, 0, EXITED(2), &running, 0, &a);
    assert_int_equal(a.restart, -1);
    assert_string_equal(a.abort, "");
    event(pol, RALLY__TEV_FINALIZED, 1, "", 0);
    rally__launch_policy_exit(pol, 1, EXITED(0), &running, 0, &a);
    assert_int_equal(verdict(pol, &running, line, sizeof line), 2);
    assert_string_equal(line, "rally-run: rank 0 exited with status 2 after rally_finalize\n");
    assert_summary(pol, "deaths=0 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:0");
    rally__launch_policy_free(pol);

    pol = make(1, 0, 300);
    rally__launch_policy_exit(pol, 0, EXITED(0), &running, 0, &a);
    assert_string_equal(a.abort, "rank 0 exited 0 without rally_finalize");
    rally__launch_policy_free(pol);
}

/* A worker that exits non-zero on its own while the job could recover is
 * the job's failure, not a crash: nobody restarts, the cause is its exit,
 * rally-run exits with its status; also when the tracker saw the closed
 * connection first.  Exit 0 without rally_finalize fails with status 1. */
static void own_exit_fails_the_job(void **state)
{
    char line[1024];
    struct rally__launch_act a;
    struct rally__launch_policy *pol = make(3, 3, 300);
    rally__launch_policy_exit(pol, 1, EXITED(3), &running, 100, &a);
    assert_int_equal(a.restart, -1);
    assert_string_equal(a.abort, "rank 1 exited with status 3");
    assert_int_equal(rally__launch_policy_deadline(pol), 400);
    rally__launch_policy_exit(pol, 0, EXITED(1), &running, 200, &a);
    assert_string_equal(a.abort, "");
    assert_int_equal(verdict(pol, &running, line, sizeof line), 3);
    assert_string_equal(line, "rally-run: rank 1 exited with status 3\n");
    assert_summary(pol, "deaths=1 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:1,2:0");
    rally__launch_policy_free(pol);

    pol = make(2, 3, 300);
    struct rally__launch_event gone = {.kind = RALLY__TEV_RANK_FAILED, .rank = 0,
                                       .text = "rank 0 disconnected without finalizing",
                                       .disconnected = 1};
    rally__launch_policy_event(pol, &gone, 0);
    rally__launch_policy_exit(pol, 0, EXITED(7), &running, 10, &a);
    assert_int_equal(a.restart, -1);
    assert_string_equal(a.abort, "rank 0 exited with status 7");
    assert_int_equal(verdict(pol, &running, line, sizeof line), 7);
    rally__launch_policy_free(pol);

    pol = make(2, 3, 300);
    rally__launch_policy_exit(pol, 0, EXITED(0), &running, 10, &a);
    assert_int_equal(a.restart, -1);
    assert_string_equal(a.abort, "rank 0 exited 0 without rally_finalize");
    assert_int_equal(verdict(pol, &running, line, sizeof line), 1);
    rally__launch_policy_free(pol);
}

/* A rank's own report (ERROR frame: rally_abort) fails the job in the
 * tracker: its sentence is the one cause, with its own exit status, and the
 * exits that follow restart nobody and change nothing. */
static void rank_report_fails_the_job(void **state)
{
    char line[1024];
    struct rally__launch_act a;
    struct rally__launch_policy *pol = make(3, 3, 300);
    struct rally__launch_view failed = {RALLY__TRACKER_FAILED, -1,
                                        "rank 2 failed: bad input line 7", 0, RALLY_EPEER,
                                        "bad input line 7", 2};
    rally__launch_policy_tracker(pol, &failed, 0);
    for (int i = 0; i < 3; i++) {
        rally__launch_policy_exit(pol, i, i == 2 ? EXITED(1) : KILLED(SIGKILL), &failed, 5, &a);
        assert_int_equal(a.restart, -1);
        assert_string_equal(a.abort, "");
        assert_string_equal(a.say, "");
    }
    assert_int_equal(verdict(pol, &failed, line, sizeof line), RALLY__LAUNCH_EXIT_ABORT);
    assert_string_equal(line, "rally-run: rank 2 failed: bad input line 7\n");
    assert_summary(pol, "deaths=0 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:0,2:0");
    rally__launch_policy_free(pol);
}

/* A setting or an input the job refused (the tracker's RALLY_ECONFIG, from a
 * worker's report at start or at resume, or its own input check): every
 * worker's exit that follows is no death and restarts nobody, the line is
 * the tracker's sentence and the status RALLY__LAUNCH_EXIT_CONFIG.  The
 * workers' own lines repeat the message inside the report. */
static void config_error_fails_the_job(void **state)
{
    char line[1024];
    struct rally__launch_act a;
    const char *why = "the environment variable RALLY_SNAPSHOT_EVRY is not a rally setting";
    char sentence[256];
    snprintf(sentence, sizeof sentence, "the worker with task id '1' failed: %s", why);
    struct rally__launch_policy *pol = make(3, 3, 300);
    struct rally__launch_view failed = {RALLY__TRACKER_FAILED, -1, sentence, 0, RALLY_ECONFIG,
                                        why, -1};
    rally__launch_policy_tracker(pol, &failed, 0);
    for (int i = 0; i < 3; i++) {
        rally__launch_policy_exit(pol, i, EXITED(1), &failed, 5, &a);
        assert_int_equal(a.restart, -1);
        assert_string_equal(a.abort, "");
        assert_string_equal(a.say, "");
    }
    assert_int_equal(verdict(pol, &failed, line, sizeof line), RALLY__LAUNCH_EXIT_CONFIG);
    assert_string_equal(line, "rally-run: the worker with task id '1' failed: the environment "
                              "variable RALLY_SNAPSHOT_EVRY is not a rally setting\n");
    assert_summary(pol, "deaths=0 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:0,2:0");
    rally__launch_policy_free(pol);

    /* the same sentence with another status is a rank's report */
    pol = make(2, 3, 300);
    struct rally__launch_view aborted = {RALLY__TRACKER_FAILED, -1, "rank 1 failed: k is 0", 0,
                                         RALLY_EINVAL, "k is 0", 1};
    rally__launch_policy_tracker(pol, &aborted, 0);
    assert_int_equal(verdict(pol, &aborted, line, sizeof line), RALLY__LAUNCH_EXIT_ABORT);
    rally__launch_policy_free(pol);

    /* it is the tracker's fields that say so, never the sentence's words: a
     * sentence that reads like a report, with no report behind it, is an
     * abort like any other */
    pol = make(2, 3, 300);
    struct rally__launch_view like = {RALLY__TRACKER_FAILED, -1, "rank 1 failed: k is 0", 0,
                                      RALLY_EINVAL, "", -1};
    rally__launch_policy_tracker(pol, &like, 0);
    assert_int_equal(verdict(pol, &like, line, sizeof line), 1);
    assert_string_equal(line, "rally-run: job aborted: rank 1 failed: k is 0\n");
    rally__launch_policy_free(pol);
}

static void restart_cannot_spawn(void **state)
{
    char line[1024];
    struct rally__launch_act a;
    struct rally__launch_policy *pol = make(2, 3, 300);
    rally__launch_policy_exit(pol, 1, KILLED(SIGKILL), &running, 0, &a);
    assert_int_equal(a.restart, 1);
    rally__launch_policy_spawn_failed(pol, 1, ENOENT, 10, &a);
    assert_int_equal(a.restart, -1);
    assert_string_equal(a.abort, "cannot restart rank 1: No such file or directory");
    assert_int_equal(rally__launch_policy_deadline(pol), 310);
    assert_int_equal(verdict(pol, &running, line, sizeof line), 1);
    assert_string_equal(line, "rally-run: cannot restart rank 1: No such file or directory\n");
    rally__launch_policy_free(pol);
}

/* A rank on another host (launch/remote.h): its lines name the host; a lost
 * connection is a death restarted there; a failure to start fails the job
 * with its own sentence and status. */
static void remote_host_lines(void **state)
{
    char line[1024];
    struct rally__launch_act a;
    struct rally__launch_policy *pol = make(3, 1, 300);
    rally__launch_policy_host(pol, 2, "h2");
    rally__launch_policy_exit(pol, 2, KILLED(SIGKILL), &running, 0, &a);
    assert_int_equal(a.restart, 2);
    assert_string_equal(a.say, "rank 2 on host h2 died (killed by signal 9); restarting it on h2 "
                               "(restart 1 of 1)");
    assert_string_equal(a.cause, "killed by signal 9");
    rally__launch_policy_spawned(pol, 2);
    /* fenced while its wrapper still runs: it gets the longer grace */
    event(pol, RALLY__TEV_RANK_FAILED, 2, "heartbeat silence", 5);
    assert_int_equal(rally__launch_policy_deadline(pol), 5 + RALLY__LAUNCH_FENCE_GRACE_REMOTE_MS);
    rally__launch_policy_lost(pol, 2, &running, 10, &a);
    assert_int_equal(a.restart, -1);
    assert_string_equal(a.abort, "rank 2 on host h2 died: the connection to the host was lost and "
                                 "its restarts are exhausted (1 of 1 used)");
    assert_int_equal(verdict(pol, &running, line, sizeof line), 1);
    assert_summary(pol, "deaths=2 recovered=0 epochs=0 restarts=1 per-rank-deaths=0:0,1:0,2:2");
    rally__launch_policy_free(pol);
}

static void remote_lost_is_restarted(void **state)
{
    struct rally__launch_act a;
    struct rally__launch_policy *pol = make(2, 3, 300);
    rally__launch_policy_host(pol, 1, "h1");
    rally__launch_policy_lost(pol, 1, &running, 0, &a);
    assert_int_equal(a.restart, 1);
    assert_string_equal(a.say, "rank 1 on host h1 died: the connection to the host was lost; "
                               "restarting it on h1 (restart 1 of 3)");
    assert_string_equal(a.cause, "the connection to the host was lost");
    assert_string_equal(a.abort, "");
    /* before the first GO the same loss fails the job, as a crash does */
    rally__launch_policy_spawned(pol, 1);
    rally__launch_policy_lost(pol, 1, &starting, 10, &a);
    assert_int_equal(a.restart, -1);
    assert_string_equal(a.abort, "rank 1 on host h1 died: the connection to the host was lost");
    rally__launch_policy_free(pol);
}

static void remote_unstarted_fails_the_job(void **state)
{
    char line[1024];
    struct rally__launch_act a;
    struct rally__launch_policy *pol = make(3, 3, 300);
    rally__launch_policy_host(pol, 2, "h2");
    rally__launch_policy_unstarted(pol, 2, "host h2 (rank 2): ./prog: not found", 127, &running, 5,
                                   &a);
    assert_int_equal(a.restart, -1);
    assert_string_equal(a.abort, "host h2 (rank 2): ./prog: not found");
    assert_int_equal(rally__launch_policy_deadline(pol), 305);
    assert_int_equal(verdict(pol, &running, line, sizeof line), 127);
    assert_string_equal(line, "rally-run: host h2 (rank 2): ./prog: not found\n");
    /* no death: it never ran */
    assert_summary(pol, "deaths=0 recovered=0 epochs=0 restarts=0 per-rank-deaths=0:0,1:0,2:0");
    rally__launch_policy_free(pol);
}

/* A restart whose host cannot be reached goes to a host with a slot free
 * (rally-run picks it): the same rank, no failure; a first start, a
 * joiner or a job that failed meanwhile is not moved. */
static void remote_unreachable_restarted_elsewhere(void **state)
{
    (void)state;
    struct rally__launch_act a;
    struct rally__launch_policy *pol = make(3, 2, 300);
    rally__launch_policy_host(pol, 2, "h2");
    const char *why = "host h2 (rank 2): cannot be reached: no route";
    assert_int_equal(rally__launch_policy_elsewhere(pol, 2, why, "h4", &running, &a), 0);
    rally__launch_policy_lost(pol, 2, &running, 0, &a);
    assert_int_equal(a.restart, 2);
    rally__launch_policy_spawned(pol, 2);
    assert_int_equal(rally__launch_policy_elsewhere(pol, 2, why, "h4", &starting, &a), 0);
    assert_int_equal(rally__launch_policy_elsewhere(pol, 2, why, "h4", &running, &a), 1);
    assert_string_equal(a.say, "host h2 (rank 2): cannot be reached: no route; restarting it on "
                               "h4 (a slot free)");
    assert_int_equal(a.restart, -1);
    assert_string_equal(a.abort, "");
    rally__launch_policy_spawned(pol, 2);
    rally__launch_policy_lost(pol, 2, &running, 10, &a); /* it runs on h4 now */
    assert_string_equal(a.say, "rank 2 on host h4 died: the connection to the host was lost; "
                               "restarting it on h4 (restart 2 of 2)");
    assert_summary(pol, "deaths=2 recovered=0 epochs=0 restarts=2 per-rank-deaths=0:0,1:0,2:2");
    rally__launch_policy_free(pol);
}

/* Joiners started at one try whose host cannot be reached give their
 * slots back, whatever order their ends come in. */
static void unstarted_joiners_give_slots_back(void **state)
{
    (void)state;
    struct rally__launch_policy *pol;
    struct rally__launch_act a;
    assert_int_equal(rally__launch_policy_new(&pol, 2, 8, 0, 300), 0);
    rally__launch_policy_elastic(pol, 1);
    for (int i = 0; i < 2; i++)
        rally__launch_policy_spawned(pol, i);
    for (int i = 2; i < 5; i++) {
        assert_int_equal(rally__launch_policy_add(pol, 5), i);
        rally__launch_policy_spawned(pol, i);
    }
    const char *why = "host h3: cannot be reached: no route";
    rally__launch_policy_unstarted(pol, 3, why, 1, &running, 5, &a);
    assert_int_equal(rally__launch_policy_slots(pol), 5);
    rally__launch_policy_unstarted(pol, 4, why, 1, &running, 5, &a);
    assert_int_equal(rally__launch_policy_slots(pol), 3); /* 4 and 3 back; 2 still on its way */
    rally__launch_policy_unstarted(pol, 2, why, 1, &running, 5, &a);
    assert_int_equal(rally__launch_policy_slots(pol), 2);
    assert_string_equal(a.abort, "");
    assert_int_equal(rally__launch_policy_add(pol, 5), 2);
    rally__launch_policy_free(pol);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slow_rank_is_given_up),
        cmocka_unit_test(all_finalize),         cmocka_unit_test(restart_then_recover),
        cmocka_unit_test(two_deaths_one_epoch), cmocka_unit_test(restarts_exhausted),
        cmocka_unit_test(death_fails_the_job),  cmocka_unit_test(fenced_rank_is_killed),
        cmocka_unit_test(fenced_rank_exiting_names_the_fence),
        cmocka_unit_test(stuck_rank_restarted), cmocka_unit_test(stuck_rank_fails_the_job),
        cmocka_unit_test(fence_of_a_gone_rank), cmocka_unit_test(signals),
        cmocka_unit_test(preempted),
        cmocka_unit_test(tracker_fails_first),  cmocka_unit_test(exits_around_finalize),
        cmocka_unit_test(restart_cannot_spawn), cmocka_unit_test(own_exit_fails_the_job),
        cmocka_unit_test(rank_report_fails_the_job), cmocka_unit_test(config_error_fails_the_job),
        cmocka_unit_test(remote_host_lines),
        cmocka_unit_test(remote_lost_is_restarted),
        cmocka_unit_test(remote_unstarted_fails_the_job),
        cmocka_unit_test(elastic_gives_up_a_rank),
        cmocka_unit_test(elastic_takes_ranks_in),
        cmocka_unit_test(elastic_joiner_on_a_lost_host),
        cmocka_unit_test(remote_unreachable_restarted_elsewhere),
        cmocka_unit_test(unstarted_joiners_give_slots_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
