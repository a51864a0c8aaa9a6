/*
 * launch_policy_hosts_test.c — rally-run's policy over hosts and elastic jobs
 * (launch_policy_rig.h): ranks given up and taken in (--min-workers), slow
 * ranks, joiners, and ranks on other hosts (launch/remote.h).
 */
#include "launch_policy_rig.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(elastic_gives_up_a_rank),
        cmocka_unit_test(slow_rank_is_given_up),
        cmocka_unit_test(elastic_takes_ranks_in),
        cmocka_unit_test(elastic_joiner_on_a_lost_host),
        cmocka_unit_test(unstarted_joiners_give_slots_back),
        cmocka_unit_test(remote_host_lines),
        cmocka_unit_test(remote_lost_is_restarted),
        cmocka_unit_test(remote_unstarted_fails_the_job),
        cmocka_unit_test(remote_unreachable_restarted_elsewhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
