/*
 * job_report_test.c — the tracker's job state machine (src/tracker/job*.c), driven
 * synchronously through tests/unit/job_rig.h: events in, actions checked; no
 * sockets, threads or sleeps.  This file: observers (reports, what the job knows of a rank) and the messages both sides share (src/tracker/msg.c).
 *
 * Every transition of the job is a case in one of tests/unit/job_*_test.c;
 * tests/unit/tracker_test.c and tracker_recover_test.c keep only what needs
 * sockets and threads (the handshake, connections, a crash seen as a
 * hang-up, a recovery, heartbeats and a grow through real workers), and a
 * case they drive too is named in the comment over it.
 */
#include "job_rig.h"

/* --- observers: reports and what the job knows of a rank ---------------------- */

/* Member i's REPORT, as the library encodes it. */
static void report(int i, const struct rally__msg_report *r)
{
    unsigned char b[RALLY__REPORT_MAX];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_report_put(&w, r);
    assert_false(w.bad);
    frame(i, RALLY__T_REPORT, b, w.len);
}

/* A REPORT body spelled out byte by byte, bypassing the encoder's checks:
 * value's bits, key and text as given, cut (a byte short) or with a byte
 * over when shape says so. */
enum { WHOLE, SHORT, TRAILING };
static size_t raw_report(unsigned char *b, size_t cap, int kind, uint64_t bits, const char *key,
                         const char *text, int shape)
{
    struct rally__wbuf w = {b, 0, cap, 0};
    rally__w_u8(&w, (uint8_t)kind);
    rally__w_u64(&w, 9);
    rally__w_u64(&w, bits);
    rally__w_u64(&w, 4096);
    rally__w_str(&w, key);
    rally__w_str(&w, text);
    if (shape == TRAILING)
        rally__w_u8(&w, 0);
    assert_false(w.bad);
    return shape == SHORT ? w.len - 1 : w.len;
}

/* 1.5's bits, and a NaN's and an infinity's (IEEE-754 binary64). */
#define BITS_1_5 UINT64_C(0x3ff8000000000000)
#define BITS_NAN UINT64_C(0x7ff8000000000000)
#define BITS_INF UINT64_C(0x7ff0000000000000)

static const struct report_case {
    const char *name;
    struct rally__msg_report r;
} REPORT_CASES[] = {
    {"value at the worker's version", {RALLY__REPORT_VALUE, 7, 1234.5, 0, "objective", ""}},
    {"value whose key uses every kind of character",
     {RALLY__REPORT_VALUE, 3, -0.25, 0, "Az09_.:-", ""}},
    {"value whose key is 64 bytes",
     {RALLY__REPORT_VALUE, 1, 1e300, 0,
      "k123456789012345678901234567890123456789012345678901234567890123", ""}},
    {"total iterations", {RALLY__REPORT_TOTAL, 0, 100, 0, "", ""}},
    {"snapshot committed",
     {RALLY__REPORT_SNAPSHOT, 12, 0, UINT64_C(5) << 32, "dir", "/snap/job/snap-00000012"}},
    {"snapshot void",
     {RALLY__REPORT_SNAPSHOT_VOID, 13, 0, 0, "dir",
      "rank 1 could not write its part (its log says why); the snapshot of version 13 is void"}},
    {"version beyond 32 bits is held at the most an event says",
     {RALLY__REPORT_VALUE, UINT64_C(1) << 40, 2, 0, "loss", ""}},
};

/* A REPORT reaches the owner with every field, the strings kept in the
 * step's arena; the job does nothing else with it. */
static void report_reaches_the_owner_with_every_field(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof REPORT_CASES / sizeof REPORT_CASES[0]; k++) {
        const struct report_case *c = &REPORT_CASES[k];
        print_message("case: %s\n", c->name);
        new_job(2, 10000);
        running(2);
        report(1, &c->r);
        const struct rally__tracker_event *ev = event(RALLY__TEV_REPORT);
        assert_non_null(ev);
        assert_int_equal(count_kind(RALLY__JOB_EVENT), 1);
        assert_int_equal(count_kind(RALLY__JOB_SEND) + count_kind(RALLY__JOB_CLOSE), 0);
        assert_int_equal(ev->rank, 1);
        assert_string_equal(ev->task_id, "1");
        assert_int_equal(ev->epoch, 1);
        assert_int_equal(ev->report, c->r.kind);
        assert_string_equal(ev->key, c->r.key);
        assert_true(ev->value == c->r.value);
        assert_int_equal(ev->version, c->r.version > UINT32_MAX ? UINT32_MAX : c->r.version);
        assert_int_equal(ev->nbytes, c->r.nbytes);
        assert_string_equal(ev->text, c->r.text);
        /* the strings are the step's, not the decoder's stack */
        const unsigned char *lo = j->arena, *hi = j->arena + j->arena_cap;
        assert_true((const unsigned char *)ev->key >= lo && (const unsigned char *)ev->key < hi);
        assert_true((const unsigned char *)ev->text >= lo && (const unsigned char *)ev->text < hi);
        assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
        done_job(NULL);
    }
    /* other events say key "" (never NULL) */
    new_job(1, 10000);
    running(1);
    frame(0, RALLY__T_SHUTDOWN, NULL, 0);
    assert_string_equal(event(RALLY__TEV_FINALIZED)->key, "");
}

static const struct bad_report_case {
    const char *name;
    int kind;
    uint64_t bits;
    const char *key;
    int shape;
} MALFORMED_REPORTS[] = {
    {"a byte short", RALLY__REPORT_VALUE, BITS_1_5, "loss", SHORT},
    {"a byte over", RALLY__REPORT_VALUE, BITS_1_5, "loss", TRAILING},
    {"kind 0", 0, BITS_1_5, "loss", WHOLE},
    {"kind 5", 5, BITS_1_5, "loss", WHOLE},
    {"a NaN", RALLY__REPORT_VALUE, BITS_NAN, "loss", WHOLE},
    {"an infinite total", RALLY__REPORT_TOTAL, BITS_INF, "", WHOLE},
    {"a snapshot's key over 64 bytes", RALLY__REPORT_SNAPSHOT, 0,
     "k1234567890123456789012345678901234567890123456789012345678901234", WHOLE},
};

/* A malformed REPORT is a protocol slip like any malformed frame: the
 * member is dropped, which fails the job (ABORT to the others); a fenced
 * member's is ignored. */
static void report_malformed_drops_the_member(void **state)
{
    (void)state;
    unsigned char b[2048];
    char s[RALLY__ERR_MSG_MAX];
    for (size_t k = 0; k < sizeof MALFORMED_REPORTS / sizeof MALFORMED_REPORTS[0]; k++) {
        const struct bad_report_case *c = &MALFORMED_REPORTS[k];
        print_message("case: %s\n", c->name);
        new_job(2, 10000);
        running(2);
        size_t n = raw_report(b, sizeof b, c->kind, c->bits, c->key, "", c->shape);
        struct rally__msg_report g;
        assert_int_equal(rally__msg_report_get(b, n, &g), -1);
        frame(1, RALLY__T_REPORT, b, n);
        assert_null(event(RALLY__TEV_REPORT));
        assert_non_null(find(RALLY__JOB_CLOSE, 1, 0));
        assert_int_equal(abort_to(0, s, sizeof s), RALLY_EPROTO);
        char want[64];
        snprintf(want, sizeof want, "rank 1 (on 10.0.0.1): malformed REPORT (%zu bytes)", n);
        assert_string_equal(s, want);
        done_job(NULL);
    }
    /* a text over 1023 bytes is malformed too (the encoder cuts it) */
    char big[1100];
    memset(big, 't', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    size_t n = raw_report(b, sizeof b, RALLY__REPORT_SNAPSHOT, 0, "dir", big, WHOLE);
    struct rally__msg_report g;
    assert_int_equal(rally__msg_report_get(b, n, &g), -1);
    /* a fenced member's frames are not the job's any more */
    new_job(3, 10000);
    running(3);
    lost(1);
    n = raw_report(b, sizeof b, RALLY__REPORT_VALUE, BITS_1_5, "loss", "", WHOLE);
    frame(1, RALLY__T_REPORT, b, n);
    assert_int_equal(count_kind(RALLY__JOB_EVENT) + count_kind(RALLY__JOB_CLOSE), 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_ASSEMBLING);
    /* an authenticated stranger's is a frame before REGISTER */
    open_m(5);
    frame(5, RALLY__T_REPORT, b, n);
    assert_non_null(find(RALLY__JOB_CLOSE, 5, 0));
    assert_true(logged("dropping connection from 10.0.0.5:5000: frame type 33 before REGISTER"));
}

/* A VALUE's key must be 1 to 64 bytes of [A-Za-z0-9_.:-] (rally_report
 * refuses any other, so no library sends one): the decoder refuses it and
 * the job drops the member.  Other kinds' keys may be "" (a TOTAL's). */
static void report_with_a_bad_key_is_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",      "two words",
        "a/b",   "\xc3\xa9", /* an e with an acute accent, in UTF-8 */
        "tab\t", "k1234567890123456789012345678901234567890123456789012345678901234", /* 65 bytes */
    };
    unsigned char b[256];
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        print_message("case: key \"%s\"\n", bad[k]);
        assert_false(rally__report_key_ok(bad[k]));
        new_job(2, 10000);
        running(2);
        size_t n = raw_report(b, sizeof b, RALLY__REPORT_VALUE, BITS_1_5, bad[k], "", WHOLE);
        struct rally__msg_report g;
        assert_int_equal(rally__msg_report_get(b, n, &g), -1);
        frame(0, RALLY__T_REPORT, b, n);
        assert_null(event(RALLY__TEV_REPORT));
        assert_non_null(find(RALLY__JOB_CLOSE, 0, 0));
        assert_int_equal(rally__job_phase(j), RALLY__JOB_FAILED);
        assert_int_equal(rally__job_code(j), RALLY_EPROTO);
        done_job(NULL);
    }
    assert_true(rally__report_key_ok("objective"));
    assert_true(rally__report_key_ok("x"));
    /* the encoder will not write a key it could not decode */
    struct rally__msg_report r = {.kind = RALLY__REPORT_SNAPSHOT};
    memset(r.key, 'k', sizeof r.key - 1);
    r.key[sizeof r.key - 1] = '\0';
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_report_put(&w, &r);
    assert_false(w.bad); /* 64 bytes: the most */
    new_job(1, 10000);
    running(1);
    size_t n = raw_report(b, sizeof b, RALLY__REPORT_TOTAL, BITS_1_5, "", "", WHOLE);
    frame(0, RALLY__T_REPORT, b, n);
    assert_non_null(event(RALLY__TEV_REPORT));
    assert_string_equal(event(RALLY__TEV_REPORT)->key, "");
}

/* Member i's heartbeat with the collectives' counters. */
static void beat_counted(int i, uint64_t pos, uint64_t for_ms, uint64_t calls, uint64_t nbytes)
{
    struct rally__msg_heartbeat h = {.has_position = 1,
                                     .position = pos,
                                     .waiting = 1,
                                     .for_ms = for_ms,
                                     .calls = calls,
                                     .nbytes = nbytes};
    snprintf(h.what, sizeof h.what, "allreduce");
    unsigned char b[RALLY__HEARTBEAT_MAX];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    rally__msg_heartbeat_put(&w, &h);
    assert_false(w.bad);
    assert_int_equal(w.len, RALLY__HEARTBEAT_MAX - (RALLY__WHAT_MAX - 1) + strlen("allreduce"));
    frame(i, RALLY__T_HEARTBEAT, b, w.len);
}

/* What the job tells observers of a rank: from the member that holds it
 * (where it stands, its counters, its last frame), else from its tables
 * (incarnation, task id, host, finalized); RALLY_EINVAL outside the world. */
static void rank_info_from_members_and_tables(void **state)
{
    (void)state;
    struct rally__tracker_rank ri;
    new_job(2, 10000);
    assert_int_equal(rally__job_rank_info(j, 2, &ri), RALLY_EINVAL);
    assert_int_equal(rally__job_rank_info(j, -1, &ri), RALLY_EINVAL);
    assert_int_equal(rally__job_rank_info(j, 1, &ri), RALLY_OK); /* nobody yet */
    assert_false(ri.present);
    assert_int_equal(ri.incarnation, 0);
    assert_string_equal(ri.host, "");
    assert_string_equal(ri.task_id, "");
    running(2);
    int64_t t_go = now_ms;
    assert_int_equal(rally__job_rank_info(j, 1, &ri), RALLY_OK);
    assert_true(ri.present);
    assert_false(ri.heartbeats);
    assert_int_equal(ri.last_rx_ms, t_go);
    assert_int_equal(ri.since_ms, t_go); /* in its own code since it registered */
    assert_int_equal(ri.calls, 0);
    now_ms += 2500;
    beat_counted(1, RALLY__KEY_OP(4, 3), 700, 12, 4096);
    assert_int_equal(rally__job_rank_info(j, 1, &ri), RALLY_OK);
    assert_true(ri.present);
    assert_false(ri.finalized);
    assert_string_equal(ri.host, "10.0.0.1");
    assert_string_equal(ri.task_id, "1");
    assert_int_equal(ri.incarnation, 1);
    assert_true(ri.heartbeats);
    assert_int_equal(ri.last_rx_ms, now_ms);
    assert_int_equal(ri.position, RALLY__KEY_OP(4, 3));
    assert_true(ri.waiting);
    assert_string_equal(ri.what, "allreduce");
    assert_int_equal(ri.since_ms, now_ms - 700);
    assert_int_equal(ri.calls, 12);
    assert_int_equal(ri.nbytes, 4096);
    now_ms += 1000; /* the same place, more counted: since stays, the counters move */
    beat_counted(1, RALLY__KEY_OP(4, 3), 1700, 13, 8192);
    assert_int_equal(rally__job_rank_info(j, 1, &ri), RALLY_OK);
    assert_int_equal(ri.since_ms, now_ms - 1000 - 700);
    assert_int_equal(ri.calls, 13);
    assert_int_equal(ri.nbytes, 8192);
    beat(1, RALLY__KEY_OP(4, 4), 0, "", 0); /* a body without counters reads as 0 */
    assert_int_equal(rally__job_rank_info(j, 1, &ri), RALLY_OK);
    assert_int_equal(ri.calls, 0);
    frame(1, RALLY__T_HEARTBEAT, NULL, 0); /* an empty one keeps them */
    assert_int_equal(rally__job_rank_info(j, 1, &ri), RALLY_OK);
    assert_int_equal(ri.position, RALLY__KEY_OP(4, 4));
    /* rank 1 dies: the tables remember it */
    beat_counted(1, RALLY__KEY_OP(4, 5), 0, 20, 1);
    lost(1);
    assert_int_equal(rally__job_rank_info(j, 1, &ri), RALLY_OK);
    assert_false(ri.present);
    assert_false(ri.heartbeats);
    assert_string_equal(ri.host, "10.0.0.1");
    assert_string_equal(ri.task_id, "1");
    assert_int_equal(ri.incarnation, 1);
    assert_int_equal(ri.last_rx_ms, 0);
    assert_int_equal(ri.calls, 0);
    /* its next incarnation, from another host */
    open_m(3);
    reg(3, "1", 0);
    assert_int_equal(rally__job_rank_info(j, 1, &ri), RALLY_OK);
    assert_true(ri.present);
    assert_int_equal(ri.incarnation, 2);
    assert_string_equal(ri.host, "10.0.0.3");
    assert_false(ri.heartbeats);
    rejoin(0, 2, RALLY__KEY_OP(4, 5), 4);
    frame(0, RALLY__T_READY, NULL, 0);
    frame(3, RALLY__T_READY, NULL, 0);
    assert_int_equal(rally__job_phase(j), RALLY__JOB_RUNNING);
    frame(0, RALLY__T_SHUTDOWN, NULL, 0);
    assert_int_equal(rally__job_rank_info(j, 0, &ri), RALLY_OK);
    assert_true(ri.present);
    assert_true(ri.finalized);
    /* a finalized rank whose process the launcher saw end: only its tables */
    run((struct rally__job_ev){.kind = RALLY__JOB_EV_DIED, .rank = 0, .text = "exited"});
    assert_int_equal(rally__job_rank_info(j, 0, &ri), RALLY_OK);
    assert_false(ri.present);
    assert_true(ri.finalized);
    assert_string_equal(ri.host, "10.0.0.0");
}

/* --- the messages both sides share ----------------------------------------- */

/* The words a position is said in (tracker/proto.c), which every failure
 * message uses. */
static void position_words(void **state)
{
    (void)state;
    char s[64];
    rally__position_str(5, s, sizeof s);
    assert_string_equal(s, "bootstrap op 5");
    rally__position_str(UINT64_C(1) << 62, s, sizeof s);
    assert_string_equal(s, "in load_checkpoint");
    rally__position_str(RALLY__KEY_OP(3, 8), s, sizeof s); /* version 3, user seq 7 */
    assert_string_equal(s, "version 3, seq 7");
    rally__position_str((UINT64_C(2) << 62) | (UINT64_C(9) << 32), s, sizeof s);
    assert_string_equal(s, "version 9, checkpoint");
    rally__position_str(UINT64_C(3) << 62, s, sizeof s);
    assert_string_equal(s, "in finalize");
}

static void messages_round_trip(void **state)
{
    (void)state;
    unsigned char b[2048];
    struct rally__wbuf w = {b, 0, sizeof b, 0};
    struct rally__msg_register r = {.want_rank = 3, .world_hint = 8, .listen_port = 9000};
    snprintf(r.task_id, sizeof r.task_id, "task");
    snprintf(r.listen_host, sizeof r.listen_host, "h");
    snprintf(r.processor, sizeof r.processor, "node7");
    snprintf(r.domain, sizeof r.domain, "rack1");
    rally__msg_register_put(&w, &r);
    struct rally__msg_register g;
    assert_int_equal(rally__msg_register_get(b, w.len, &g), 0);
    assert_string_equal(g.task_id, "task");
    assert_int_equal(g.want_rank, 3);
    assert_int_equal(g.world_hint, 8);
    assert_int_equal(g.listen_port, 9000);
    assert_string_equal(g.listen_host, "h");
    assert_string_equal(g.processor, "node7");
    assert_string_equal(g.domain, "rack1");
    assert_int_equal(rally__msg_register_get(b, w.len - 1, &g), -1);

    w.len = 0; /* an ASSIGN of two */
    rally__msg_assign_head(&w, 1, 2, 5);
    rally__msg_book_entry(&w, "a", 1, 1, "");
    rally__msg_book_entry(&w, "bb", 2, 5, "rack2");
    rally__msg_assign_tail(&w, 4, 3, 1);
    assert_int_equal(w.len, 12 + rally__msg_book_entry_nbytes("a", "") +
                                rally__msg_book_entry_nbytes("bb", "rack2") + 12);
    struct rally__msg_assign a;
    assert_int_equal(rally__msg_assign_get(b, w.len, &a), 0);
    assert_int_equal(a.rank, 1);
    assert_int_equal(a.epoch, 4);
    assert_int_equal(a.members, 3);
    assert_int_equal(a.flags, 1);
    assert_string_equal(a.peers[1].host, "bb");
    assert_int_equal(a.peers[1].incarnation, 5);
    assert_string_equal(a.peers[0].domain, "");
    assert_string_equal(a.peers[1].domain, "rack2");
    free(a.peers);
    assert_int_equal(rally__msg_assign_get(b, w.len - 1, &a), -3);
    assert_null(a.peers);
    b[0] = 2; /* rank 2 of 2 */
    assert_int_equal(rally__msg_assign_get(b, w.len, &a), -1);

    char s[RALLY__ERR_MSG_MAX], big[RALLY__ERR_MSG_MAX + 100];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    w.len = 0; /* a sentence too long is cut to fit the reader */
    rally__msg_fail_put(&w, 7, big);
    uint32_t code;
    assert_int_equal(rally__msg_fail_get(b, w.len, &code, s, sizeof s), 0);
    assert_int_equal(code, 7);
    assert_int_equal(strlen(s), RALLY__ERR_MSG_MAX - 1);
    w.len = 0;
    rally__msg_reset_put(&w, 3, big);
    char reason[RALLY__REASON_MAX];
    assert_int_equal(rally__msg_reset_get(b, w.len, &code, reason, sizeof reason), 0);
    assert_int_equal(code, 3);
    assert_int_equal(strlen(reason), RALLY__REASON_MAX - 1);
    w.len = 0;
    rally__msg_rejoin_put(&w, 2, RALLY__KEY_FINAL, 9);
    uint32_t e2, v;
    uint64_t pos;
    assert_int_equal(rally__msg_rejoin_get(b, w.len, &e2, &pos, &v), 0);
    assert_int_equal(pos, RALLY__KEY_FINAL);
    assert_int_equal(v, 9);
    assert_int_equal(rally__msg_empty_get(b, 0), 0);
    assert_int_equal(rally__msg_empty_get(b, 1), -1);
    assert_string_equal(rally__msg_name(RALLY__T_LINK_FAILED), "LINK_FAILED");
    assert_string_equal(rally__msg_name(RALLY__T_REPORT), "REPORT");

    w.len = 0; /* a REPORT: every field back, the text cut to 1023 bytes */
    struct rally__msg_report rp = {RALLY__REPORT_SNAPSHOT, 42, 0.1, 123456789, "copy", ""};
    memset(rp.text, 'p', sizeof rp.text - 1);
    rally__msg_report_put(&w, &rp);
    assert_int_equal(w.len, 1 + 8 + 8 + 8 + 4 + 4 + 4 + 1023);
    assert_int_equal(b[0], RALLY__REPORT_SNAPSHOT);
    assert_int_equal(rally__get_u64(b + 9), UINT64_C(0x3fb999999999999a)); /* 0.1's bits */
    struct rally__msg_report rg;
    assert_int_equal(rally__msg_report_get(b, w.len, &rg), 0);
    assert_int_equal(rg.kind, RALLY__REPORT_SNAPSHOT);
    assert_int_equal(rg.version, 42);
    assert_true(rg.value == 0.1);
    assert_int_equal(rg.nbytes, 123456789);
    assert_string_equal(rg.key, "copy");
    assert_int_equal(strlen(rg.text), 1023);

    /* a HEARTBEAT from before the counters or the straggler window still
     * reads, as 0 */
    w.len = 0;
    struct rally__msg_heartbeat hb = {1, RALLY__KEY_OP(2, 1), 1, 5, "broadcast", 7, 8, 9, 10, 11};
    rally__msg_heartbeat_put(&w, &hb);
    struct rally__msg_heartbeat hg;
    assert_int_equal(rally__msg_heartbeat_get(b, w.len, &hg), 0);
    assert_int_equal(hg.calls, 7);
    assert_int_equal(hg.nbytes, 8);
    assert_int_equal(hg.win, 9);
    assert_int_equal(hg.win_wait_ms, 10);
    assert_int_equal(hg.win_span_ms, 11);
    assert_int_equal(rally__msg_heartbeat_get(b, w.len - 20, &hg), 0); /* no window */
    assert_int_equal(hg.calls, 7);
    assert_int_equal(hg.win, 0);
    assert_int_equal(hg.win_span_ms, 0);
    assert_int_equal(rally__msg_heartbeat_get(b, w.len - 36, &hg), 0);
    assert_int_equal(hg.calls, 0);
    assert_int_equal(hg.nbytes, 0);
    assert_string_equal(hg.what, "broadcast");
    assert_int_equal(rally__msg_heartbeat_get(b, w.len - 28, &hg), -1); /* half of them */
    assert_int_equal(rally__msg_heartbeat_get(b, w.len - 8, &hg), -1);
    assert_int_equal(rally__msg_heartbeat_get(b, w.len - 1, &hg), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(report_reaches_the_owner_with_every_field, done_job),
        cmocka_unit_test_teardown(report_malformed_drops_the_member, done_job),
        cmocka_unit_test_teardown(report_with_a_bad_key_is_refused, done_job),
        cmocka_unit_test_teardown(rank_info_from_members_and_tables, done_job),
        cmocka_unit_test(position_words),
        cmocka_unit_test(messages_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
