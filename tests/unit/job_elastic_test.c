/*
 * job_elastic_test.c — the tracker's job state machine (src/tracker/job*.c), driven
 * synchronously through tests/unit/job_rig.h: events in, actions checked; no
 * sockets, threads or sleeps.  This file: elastic membership, and the ends of a job: finalize, the owner's abort.
 *
 * Every transition of the job is a case in one of tests/unit/job_*_test.c;
 * tests/unit/tracker_test.c and tracker_recover_test.c keep only what needs
 * sockets and threads (the handshake, connections, a crash seen as a
 * hang-up, a recovery, heartbeats and a grow through real workers), and a
 * case they drive too is named in the comment over it.
 */
#include "job_rig.h"

/* --- elastic membership ---------------------------------------------------- */

static void gone_ev(int rank, const char *why)
{
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_GONE, .rank = rank, .text = why});
}

/* A rank given up for good in an elastic job: its connection is closed, the
 * ranks above it move down one, every survivor is reset and, once all
 * rejoined, gets an ASSIGN of the smaller world counting one membership
 * change; the owner hears who went and from which version the job goes on. */
static void elastic_rank_given_up_shrinks_the_job(void **state)
{
    (void)state;
    new_job(4, 10000);
    rally__job_set_min_world(j, 3);
    running(4);
    run((struct rally__job_ev){
        .kind = RALLY__JOB_EV_DIED, .rank = 1, .text = "killed by signal 9"});
    assert_int_equal(rally__job_epoch(j), 2);
    for (int i = 0; i < 4; i++)
        if (i != 1)
            rejoin(i, 2, RALLY__KEY_OP(5, 3), 5);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_ASSEMBLING); /* rank 1 is missing */
    gone_ev(1, "its restarts are spent");
    assert_int_equal(rally__job_epoch(j), 3);
    assert_int_equal(rally__job_world(j), 3);
    char why[256];
    assert_int_equal(reset_to(3, why, sizeof why), 3);
    assert_string_equal(why, "rank 1 lost for good (its restarts are spent)");
    assert_int_equal(rally__job_rank_of(j, "3"), 2);
    assert_int_equal(rally__job_rank_of(j, "1"), -1);
    assert_string_equal(rally__job_task_of(j, 1), "2");
    assert_string_equal(m[3].what, "rank 2 (on 10.0.0.3)");
    rejoin(0, 3, RALLY__KEY_OP(5, 3), 5);
    rejoin(2, 3, RALLY__KEY_OP(5, 0), 4); /* it had not acknowledged version 5 */
    rejoin(3, 3, RALLY__KEY_OP(5, 3), 5);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_STARTING);
    struct rally__msg_assign g = assign_to(3);
    assert_int_equal(g.rank, 2);
    assert_int_equal(g.world, 3);
    assert_int_equal(g.epoch, 3);
    assert_int_equal(g.members, 1);
    assert_int_equal(g.flags, RALLY__ASSIGN_CHANGED);
    assert_string_equal(g.peers[1].host, "10.0.0.2"); /* the book in the new order */
    free(g.peers);
    const struct rally__tracker_event *ev = event(RALLY__TEV_RESIZED);
    assert_non_null(ev);
    assert_int_equal(ev->rank, 1);
    assert_string_equal(ev->task_id, "1");
    assert_int_equal(ev->world, 3);
    assert_int_equal(ev->version, 5);
    assert_string_equal(ev->text, "rank 1 lost for good: going on with 3 workers from version 5");
    assert_string_equal(ev->detail, "going on with 3 workers from version 5");
    ready_all(4);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    /* the renumbered rank dies and comes back by its task id, as rank 2 */
    lost(3);
    assert_int_equal(rally__job_epoch(j), 4);
    rejoin(0, 4, RALLY__KEY_OP(6, 1), 6);
    rejoin(2, 4, RALLY__KEY_OP(6, 1), 6);
    open_m(4);
    reg(4, "3", 0);
    assert_non_null(find(RALLY__JOB_ADMIT, 4, 0));
    g = assign_to(4);
    assert_int_equal(g.rank, 2);
    assert_int_equal(g.incarnation, 2);
    assert_int_equal(g.members, 1);
    assert_int_equal(g.flags, 0); /* the change was over at its GO */
    free(g.peers);
    assert_null(event(RALLY__TEV_RESIZED)); /* told once */
    /* each rank's input counts afresh after the change: a new shard */
    unsigned char b[128];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_input_put(&w, "rows:contiguous", 7);
    frame(0, RALLY__T_INPUT, b, w.len);
    assert_true(sent(0, RALLY__T_INPUT_OK));
}

/* After a shrink every rank reads a new shard, so the input each names next
 * counts afresh, whatever its predecessor at that rank said: rank 2,
 * restarted once (incarnation 2), becomes rank 1 when rank 1 is given up,
 * and neither it nor rank 3 (now 2) is taken for a rank that read another
 * input after its restart; a restart after the shrink is checked against
 * the new shard. */
static void shrink_takes_new_inputs(void **state)
{
    (void)state;
    new_job(4, 10000);
    rally__job_set_min_world(j, 3);
    running(4);
    for (int i = 0; i < 4; i++)
        input(i, "range", 0x10 + (uint64_t)i);
    lost(2); /* rank 2 restarted in place: member 4, incarnation 2, the same rows */
    for (int i = 0; i < 4; i++)
        if (i != 2)
            rejoin(i, 2, RALLY__KEY_OP(3, 0), 3);
    open_m(4);
    reg(4, "2", 0);
    for (int i = 0; i < 5; i++)
        if (i != 2)
            frame(i, RALLY__T_READY, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    input(4, "range", 0x12);
    assert_true(sent(4, RALLY__T_INPUT_OK));
    run((struct rally__job_ev){
        .kind = RALLY__JOB_EV_DIED, .rank = 1, .text = "killed by signal 9"});
    int live[3] = {0, 4, 3}; /* members of ranks 0, 1, 2 after the shrink */
    for (int i = 0; i < 3; i++)
        rejoin(live[i], 3, RALLY__KEY_OP(5, 0), 5);
    gone_ev(1, "its restarts are spent");
    assert_int_equal(rally__job_world(j), 3);
    for (int i = 0; i < 3; i++)
        rejoin(live[i], 4, RALLY__KEY_OP(5, 0), 5);
    for (int i = 0; i < 3; i++)
        frame(live[i], RALLY__T_READY, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    for (int i = 0; i < 3; i++) {
        input(live[i], "range", 0x20 + (uint64_t)i);
        assert_true(sent(live[i], RALLY__T_INPUT_OK));
        assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    }
    /* rank 1 (member 4) restarted with rows other than its new shard's */
    lost(4);
    rejoin(0, 5, RALLY__KEY_OP(6, 0), 6);
    rejoin(3, 5, RALLY__KEY_OP(6, 0), 6);
    open_m(5);
    reg(5, "2", 0);
    for (int i = 0; i < 3; i++)
        frame(i == 1 ? 5 : live[i], RALLY__T_READY, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    input(5, "range", 0x12); /* its old shard of 4 workers */
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_non_null(strstr(rally__job_sentence(j, NULL),
                           "rank 1 read another input after its restart: incarnation 3 has "
                           "fingerprint 0000000000000012 (scheme range), incarnation 2 had "
                           "0000000000000021"));
}

/* Below the minimum, or in a job that is not elastic, giving a rank up
 * fails the job with a sentence that says so. */
static void elastic_below_the_minimum_fails_the_job(void **state)
{
    (void)state;
    new_job(3, 10000);
    rally__job_set_min_world(j, 3);
    running(3);
    lost(2);
    gone_ev(2, "its restarts are spent");
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    int r;
    assert_string_equal(rally__job_sentence(j, &r),
                        "rank 2 lost for good (its restarts are spent): going on would leave 2 "
                        "workers, fewer than the minimum of 3");
    assert_int_equal(r, 2);
    done_job(NULL);
    new_job(3, 10000);
    running(3);
    lost(0);
    gone_ev(0, "its restarts are spent");
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_string_equal(rally__job_sentence(j, NULL),
                        "rank 0 lost for good: its restarts are spent");
}

/* A rank lost while a survivor stands in finalize: the job had computed
 * everything, so the ASSIGN says the others finish as they are. */
static void elastic_loss_in_finalize_finishes(void **state)
{
    (void)state;
    new_job(3, 10000);
    rally__job_set_min_world(j, 2);
    running(3);
    lost(2);
    gone_ev(2, "gone");
    rejoin(0, 3, RALLY__KEY_FINAL, 9);
    rejoin(1, 3, RALLY__KEY_OP(9, 1), 9); /* still returning from its last call */
    struct rally__msg_assign g = assign_to(1);
    assert_int_equal(g.flags, RALLY__ASSIGN_FINISHING | RALLY__ASSIGN_CHANGED);
    assert_int_equal(g.world, 2);
    free(g.peers);
    assert_string_equal(event(RALLY__TEV_RESIZED)->text,
                        "rank 2 lost for good: the other 2 workers finish (one was in finalize)");
}

static void grow_ready(int i, uint32_t epoch)
{
    unsigned char b[4];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_u32_put(&w, epoch);
    frame(i, RALLY__T_GROW_READY, b, w.len);
}

/* Growth: a worker with a new task id waits; every rank hears GROW (again
 * at each GO while it waits); the first GROW_READY of the epoch takes it
 * in at the end of the ranks, later ones are late; it leaves or the job
 * ends without failing anything. */
static void elastic_worker_taken_in(void **state)
{
    (void)state;
    new_job(2, 10000);
    assert_int_equal(rally__job_set_max_world(j, 3), RALLY_OK);
    running(2);
    open_m(2);
    reg(2, "7", 0);
    assert_non_null(find(RALLY__JOB_ADMIT, 2, 0));
    assert_true(sent(0, RALLY__T_GROW));
    assert_true(sent(1, RALLY__T_GROW));
    assert_int_equal(rally__job_world(j), 2);
    assert_true(logged("the worker with task id '7' waits to join"));
    open_m(3); /* no room for a second one */
    reg(3, "8", 0);
    char s[256];
    assert_int_equal(abort_to(3, s, sizeof s), RALLY_ESTATE);
    assert_string_equal(s, "the job already has all 2 workers and none has task id '8'");
    grow_ready(1, 0); /* its first ASSIGN said epoch 0 */
    assert_int_equal(rally__job_epoch(j), 2);
    assert_int_equal(reset_to(0, s, sizeof s), 2);
    assert_string_equal(s, "taking in 1 worker");
    grow_ready(0, 1); /* late */
    assert_int_equal(rally__job_epoch(j), 2);
    rejoin(0, 2, RALLY__KEY_OP(4, 1), 4);
    rejoin(1, 2, RALLY__KEY_OP(4, 1), 4);
    struct rally__msg_assign g = assign_to(2);
    assert_int_equal(g.rank, 2);
    assert_int_equal(g.world, 3);
    assert_int_equal(g.incarnation, 1);
    assert_int_equal(g.members, 1);
    assert_int_equal(g.flags, RALLY__ASSIGN_CHANGED);
    free(g.peers);
    assert_string_equal(event(RALLY__TEV_RESIZED)->text,
                        "taking in 1 worker: going on with 3 workers from version 4");
    assert_string_equal(m[2].what, "rank 2 (on 10.0.0.2)");
    ready_all(3);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    assert_false(sent(0, RALLY__T_GROW)); /* nobody waits */
    done_job(NULL);

    /* one that leaves while it waits costs nothing; at the end one is refused */
    new_job(2, 10000);
    assert_int_equal(rally__job_set_max_world(j, 4), RALLY_OK);
    running(2);
    open_m(2);
    reg(2, "5", 0);
    lost(2);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    grow_ready(0, 1); /* nobody waits any more: a RESET all the same */
    assert_int_equal(reset_to(1, s, sizeof s), 2);
    assert_string_equal(s, "no worker waits to be taken in any more");
    rejoin(0, 2, RALLY__KEY_OP(2, 1), 2);
    rejoin(1, 2, RALLY__KEY_OP(2, 1), 2);
    struct rally__msg_assign g2 = assign_to(0);
    assert_int_equal(g2.members, 0);
    free(g2.peers);
    ready_all(2);
    open_m(3);
    reg(3, "6", 0);
    assert_true(sent(0, RALLY__T_GROW));
    frame(0, RALLY__T_SHUTDOWN, NULL, 0);
    frame(1, RALLY__T_SHUTDOWN, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_DONE);
    assert_int_equal(abort_to(3, s, sizeof s), RALLY_ESTATE);
    assert_string_equal(s, "the job finished before it could take this worker in");
    open_m(4);
    reg(4, "9", 0);
    assert_int_equal(abort_to(4, s, sizeof s), RALLY_ESTATE);
}

/* Two changes in a row: ranks keep their order, the count grows, and the
 * tracker's line names a renumbered rank's task id. */
static void elastic_two_changes(void **state)
{
    (void)state;
    new_job(4, 10000);
    rally__job_set_min_world(j, 2);
    running(4);
    lost(0);
    gone_ev(0, "gone");
    for (int i = 1; i < 4; i++)
        rejoin(i, 3, RALLY__KEY_OP(2, 1), 2);
    ready_all(4);
    lost(3); /* rank 2 now */
    char why[256];
    gone_ev(2, "gone");
    assert_int_equal(reset_to(1, why, sizeof why), 5);
    assert_string_equal(why, "rank 2 (task id 3) lost for good (gone)");
    rejoin(1, 5, RALLY__KEY_OP(3, 1), 3);
    rejoin(2, 5, RALLY__KEY_OP(3, 1), 3);
    struct rally__msg_assign g = assign_to(2);
    assert_int_equal(g.rank, 1);
    assert_int_equal(g.world, 2);
    assert_int_equal(g.members, 2);
    free(g.peers);
    assert_string_equal(event(RALLY__TEV_RESIZED)->task_id, "3");
}

/* A finalized rank's death only closes its connection. */
static void death_after_finalize_only_fences(void **state)
{
    (void)state;
    new_job(2, 10000);
    running(2);
    frame(1, RALLY__T_SHUTDOWN, NULL, 0);
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_DIED, .rank = 1, .text = "exited"});
    assert_non_null(find(RALLY__JOB_CLOSE, 1, 0));
    assert_int_equal(count_kind(RALLY__JOB_SEND), 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    frame(0, RALLY__T_SHUTDOWN, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_DONE);
}

static void recover_not_after_a_rank_finalized(void **state)
{
    (void)state;
    new_job(2, 10000);
    running(2);
    frame(0, RALLY__T_SHUTDOWN, NULL, 0);
    assert_int_equal(rally__job_recoverable(j), 0);
    lost(1);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_string_equal(rally__job_sentence(j, NULL),
                        "rank 1 disconnected without finalizing (did it crash?)");
}

/* A rank that finalizes while the job recovers fails it. */
static void finalize_while_recovering_is_fatal(void **state)
{
    (void)state;
    new_job(3, 10000);
    running(3);
    lost(2);
    frame(0, RALLY__T_SHUTDOWN, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_string_equal(rally__job_sentence(j, NULL),
                        "rank 0 finalized while the job was recovering from a failure (epoch 2)");
}

static void recover_off_keeps_failures_fatal(void **state)
{
    (void)state;
    new_job(2, 10000);
    rally__job_set_recovery(j, 0);
    running(2);
    assert_int_equal(rally__job_recoverable(j), 0);
    lost(1);
    char s[RALLY__ERR_MSG_MAX];
    assert_int_equal(abort_to(0, s, sizeof s), RALLY_EPEER);
    assert_string_equal(s, "rank 1 disconnected without finalizing (did it crash?)");
}

static void recover_malformed_rejoin_is_fatal(void **state)
{
    (void)state;
    new_job(2, 10000);
    running(2);
    unsigned char b[15] = {2};
    frame(0, RALLY__T_REJOIN, b, sizeof b); /* one byte short */
    char s[RALLY__ERR_MSG_MAX];
    assert_int_equal(abort_to(1, s, sizeof s), RALLY_EPROTO);
    assert_non_null(strstr(s, "malformed REJOIN (15 bytes)"));
    /* and a REJOIN for an epoch never reset to is one too */
    done_job(NULL);
    new_job(2, 10000);
    running(2);
    rejoin(0, 2, 0, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
}

/* The owner's abort: ABORT to every member, registered or not. */
static void owner_abort_reaches_everyone(void **state)
{
    (void)state;
    new_job(2, 10000);
    open_m(0);
    reg(0, "0", 0);
    open_m(1); /* authenticated, not registered */
    run((struct rally__job_ev){
        .kind = RALLY__JOB_EV_ABORT, .code = RALLY_EPEER, .text = "rank 1 exited with status 3"});
    char s[RALLY__ERR_MSG_MAX];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(abort_to(i, s, sizeof s), RALLY_EPEER);
        assert_string_equal(s, "rank 1 exited with status 3");
    }
    assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
    assert_int_equal(rally__job_deadline(j), RALLY__NEVER);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(shrink_takes_new_inputs, done_job),
        cmocka_unit_test_teardown(death_after_finalize_only_fences, done_job),
        cmocka_unit_test_teardown(elastic_rank_given_up_shrinks_the_job, done_job),
        cmocka_unit_test_teardown(elastic_below_the_minimum_fails_the_job, done_job),
        cmocka_unit_test_teardown(elastic_two_changes, done_job),
        cmocka_unit_test_teardown(elastic_loss_in_finalize_finishes, done_job),
        cmocka_unit_test_teardown(elastic_worker_taken_in, done_job),
        cmocka_unit_test_teardown(recover_not_after_a_rank_finalized, done_job),
        cmocka_unit_test_teardown(finalize_while_recovering_is_fatal, done_job),
        cmocka_unit_test_teardown(recover_off_keeps_failures_fatal, done_job),
        cmocka_unit_test_teardown(recover_malformed_rejoin_is_fatal, done_job),
        cmocka_unit_test_teardown(owner_abort_reaches_everyone, done_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
