/*
 * launch_policy_end_test.c — rally-run's verdicts (launch_policy_rig.h): how a job ends
 * when the tracker, a rank's own exit or report, a configuration error or a
 * failed restart ends it, and exits around finalize.
 */
#include "launch_policy_rig.h"

/* The tracker fails the job first: with no rank to blame its sentence is
 * the verdict; when it names a rank that died, that rank's death is. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tracker_fails_first),
        cmocka_unit_test(exits_around_finalize),
        cmocka_unit_test(own_exit_fails_the_job),
        cmocka_unit_test(rank_report_fails_the_job),
        cmocka_unit_test(config_error_fails_the_job),
        cmocka_unit_test(restart_cannot_spawn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
