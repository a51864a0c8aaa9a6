/*
 * launch_policy_restart_test.c — rally-run's restart policy (launch_policy_rig.h): deaths
 * restarted and recovered, restarts spent, fences, signals, preemption and
 * stuck ranks.
 */
#include "launch_policy_rig.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(all_finalize),
        cmocka_unit_test(restart_then_recover),
        cmocka_unit_test(two_deaths_one_epoch),
        cmocka_unit_test(restarts_exhausted),
        cmocka_unit_test(death_fails_the_job),
        cmocka_unit_test(fenced_rank_is_killed),
        cmocka_unit_test(fenced_rank_exiting_names_the_fence),
        cmocka_unit_test(fence_of_a_gone_rank),
        cmocka_unit_test(signals),
        cmocka_unit_test(preempted),
        cmocka_unit_test(stuck_rank_restarted),
        cmocka_unit_test(stuck_rank_fails_the_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
