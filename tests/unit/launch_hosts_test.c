/*
 * launch_hosts_test.c — unit tests of rally-run's remote launch parts
 * (tools/launch/remote.h): host lists and their labels, hostfiles, Slurm's
 * slots, placement, the failure domains a layout leaves uncovered
 * (launch/domains.h), shell quoting, the wrappers' command lines, and what
 * the agent's marked lines and the wrapper's exit become.  No processes.
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

#include "launch/domains.h"
#include "launch/kind.h"
#include "launch/remote.h"
#include "util/place.h"
#include "util/xor.h"

#define EXITED(code) ((code) << 8) /* a wait status: exited with code */

/* "a:2,b:1@rack1" of hs, or the error. */
static void hosts_str(const struct rally__launch_hosts *hs, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < hs->n && n < cap; i++) {
        int k = snprintf(out + n, cap - n, "%s%s:%d%s%s", i ? "," : "", hs->h[i].name,
                         hs->h[i].slots, hs->h[i].label[0] ? "@" : "", hs->h[i].label);
        if (k < 0)
            break;
        n += (size_t)k;
    }
}

/* A table of named --hosts cases: the list, and what it parses to ("" and
 * the error's start when it is refused). */
static const struct {
    const char *name, *list, *want, *err;
} HOSTS_CASES[] = {
    {"slots_and_defaults", "h1:4,h2,h3:2", "h1:4,h2:1,h3:2", NULL},
    {"one_host", "node7", "node7:1", NULL},
    {"empty", "", "", "--hosts is empty"},
    {"empty_item", "a,,b", "", "an empty host name"},
    {"zero_slots", "a:0", "", "'a:0': the slots after ':' must be a number"},
    {"bad_slots", "a:x", "", "'a:x': the slots after ':' must be a number"},
    {"two_colons", "::1:2", "", "'::1:2': write an IPv6 host in brackets"},
    {"v6", "[fd00::1]:2,[::1]", "fd00::1:2,::1:1", NULL},
    {"v6_empty", "[]:2", "", "'[]:2' is not [ADDRESS] or [ADDRESS]:SLOTS"},
    {"v6_junk", "[::1]x", "", "'[::1]x' is not [ADDRESS] or [ADDRESS]:SLOTS"},
    {"dash", "-oProxyCommand=x", "", "the host name '-oProxyCommand=x' starts with '-'"},
    {"quote", "a'b", "", "the host name 'a'b' holds a space, comma or quote"},
    /* a failure domain's label (a rack, a zone) after '@' */
    {"labels", "h1:4@rack1,h2:2@rack1,h3@rack-2,h4", "h1:4@rack1,h2:2@rack1,h3:1@rack-2,h4:1",
     NULL},
    {"v6_label", "[fd00::1]:2@r1,[::1]@r.2", "fd00::1:2@r1,::1:1@r.2", NULL},
    {"empty_label", "h1:4@", "", "'h1:4@': the label after '@' is empty"},
    {"bad_label", "h1@r/1", "", "'h1@r/1': a label is letters, digits, '.', '_' and '-'"},
    {"two_ats", "u@h1@r1", "", "'u@h1@r1': a label is letters, digits, '.', '_' and '-'"},
    {"label_slots", "h1@r1:4", "", "'h1@r1:4': a label is letters"},
    {"long_label", "h@0123456789012345678901234567890123456789012345678901234567890123", "",
     "the label '01234567890123456789...' is longer than 63 bytes"},
    {"two_labels", "h1:2@r1,h2,h1:2@r2", "", "host h1 has two labels, r1 and r2"},
    {"same_label_twice", "h1:2@r1,h1:2@r1", "h1:2@r1,h1:2@r1", NULL},
};

static void hosts_cases(void **state)
{
    for (size_t i = 0; i < sizeof HOSTS_CASES / sizeof HOSTS_CASES[0]; i++) {
        struct rally__launch_hosts hs = {NULL, 0};
        char err[256] = "", got[256];
        int rc = rally__launch_hosts_parse(&hs, HOSTS_CASES[i].list, err, sizeof err);
        hosts_str(&hs, got, sizeof got);
        if (HOSTS_CASES[i].err == NULL) {
            if (rc != 0 || strcmp(got, HOSTS_CASES[i].want) != 0)
                fail_msg("%s: got '%s' (%s)", HOSTS_CASES[i].name, got, err);
        } else if (rc != -1 || strncmp(err, HOSTS_CASES[i].err, strlen(HOSTS_CASES[i].err)) != 0) {
            fail_msg("%s: want the error '%s', got %d '%s'", HOSTS_CASES[i].name,
                     HOSTS_CASES[i].err, rc, err);
        }
        rally__launch_hosts_free(&hs);
    }
}

static void hostfile(void **state)
{
    struct rally__launch_hosts hs = {NULL, 0};
    char err[256] = "", got[256];
    assert_int_equal(rally__launch_hostfile_parse(&hs,
                                                  "# the cluster\n"
                                                  "a slots=4\n"
                                                  "\n"
                                                  "  b   # one slot\n"
                                                  "c:2\n"
                                                  "fe80::1 slots=2\n"
                                                  "[fd00::5]:3\n"
                                                  "fd00::6\n"
                                                  "d\tslots=3",
                                                  err, sizeof err),
                     0);
    hosts_str(&hs, got, sizeof got);
    assert_string_equal(got, "a:4,b:1,c:2,fe80::1:2,fd00::5:3,fd00::6:1,d:3");
    rally__launch_hosts_free(&hs);
    assert_int_equal(rally__launch_hostfile_parse(&hs, "a\nb slots=x\n", err, sizeof err), -1);
    assert_string_equal(err, "line 2: 'slots=x' is not 'slots=K' (K from 1 to 999999)");
    rally__launch_hosts_free(&hs);
    assert_int_equal(rally__launch_hostfile_parse(&hs, "# nothing\n\n", err, sizeof err), -1);
    assert_string_equal(err, "it names no host");
    rally__launch_hosts_free(&hs);
    /* labels, in every spelling of a line */
    assert_int_equal(rally__launch_hostfile_parse(&hs,
                                                  "a:4@r1\n"
                                                  "b@r2 slots=2 # rack two\n"
                                                  "[fd00::5]:3@r3\n"
                                                  "fd00::6@r4\n"
                                                  "c\n",
                                                  err, sizeof err),
                     0);
    hosts_str(&hs, got, sizeof got);
    assert_string_equal(got, "a:4@r1,b:2@r2,fd00::5:3@r3,fd00::6:1@r4,c:1");
    rally__launch_hosts_free(&hs);
    assert_int_equal(rally__launch_hostfile_parse(&hs, "a@r1\nb@ slots=2\n", err, sizeof err), -1);
    assert_string_equal(err, "line 2: 'b@': the label after '@' is empty");
    rally__launch_hosts_free(&hs);
}

static void slurm_slots(void **state)
{
    struct rally__launch_hosts hs = {NULL, 0};
    char err[256] = "", got[256];
    assert_int_equal(rally__launch_hosts_parse(&hs, "n1,n2,n3,n4", err, sizeof err), 0);
    assert_int_equal(rally__launch_slurm_slots(&hs, "2(x3),1", err, sizeof err), 0);
    hosts_str(&hs, got, sizeof got);
    assert_string_equal(got, "n1:2,n2:2,n3:2,n4:1");
    assert_int_equal(rally__launch_slurm_slots(&hs, "2(x2)", err, sizeof err), -1);
    assert_string_equal(err, "SLURM_TASKS_PER_NODE=2(x2) counts 2 nodes, the node list 4");
    assert_int_equal(rally__launch_slurm_slots(&hs, "2(3)", err, sizeof err), -1);
    assert_string_equal(err, "SLURM_TASKS_PER_NODE=2(3) is not like 2(x3),1");
    rally__launch_hosts_free(&hs);
}

static void placement(void **state)
{
    struct rally__launch_hosts hs = {NULL, 0};
    char err[256] = "";
    int host_of[5];
    assert_int_equal(rally__launch_hosts_parse(&hs, "a:2,b:2,c", err, sizeof err), 0);
    assert_int_equal(rally__launch_place(&hs, 5, host_of, err, sizeof err), 0);
    int want[5] = {0, 0, 1, 1, 2};
    assert_memory_equal(host_of, want, sizeof want);
    assert_int_equal(rally__launch_place(&hs, 3, host_of, err, sizeof err), 0);
    assert_memory_equal(host_of, want, 3 * sizeof *want);
    rally__launch_hosts_free(&hs);
    assert_int_equal(rally__launch_hosts_parse(&hs, "a:2,b", err, sizeof err), 0);
    assert_int_equal(rally__launch_place(&hs, 4, host_of, err, sizeof err), -1);
    assert_string_equal(err, "the hosts have 3 slots for 4 workers: give more hosts or slots");
    rally__launch_hosts_free(&hs);
}

/* One rank more (a worker taken in): the first host with a slot free,
 * counting only the held ranks; a host marked to avoid (it could not be
 * reached) only when no other has a slot; a re-read hostfile keeps the old
 * hosts' places. */
static void placement_of_one(void **state)
{
    (void)state;
    struct rally__launch_hosts hs = {NULL, 0}, fresh = {NULL, 0};
    char err[256] = "";
    int host_of[6] = {0, 0, 1, 2, 2, 0};
    unsigned char held[6] = {1, 1, 1, 1, 0, 0}, avoid[4] = {0, 0, 0, 0};
    assert_int_equal(rally__launch_hosts_parse(&hs, "a:2,b,c:2", err, sizeof err), 0);
    assert_int_equal(rally__launch_place_one(&hs, host_of, held, 6, NULL), 2); /* c: 1 of 2 held */
    held[4] = 1;
    assert_int_equal(rally__launch_place_one(&hs, host_of, held, 6, NULL), -1); /* all full */
    held[2] = 0; /* b's rank given up */
    assert_int_equal(rally__launch_place_one(&hs, host_of, held, 6, avoid), 1);
    avoid[1] = 1;
    assert_int_equal(rally__launch_place_one(&hs, host_of, held, 6, avoid), 1); /* only b */
    assert_int_equal(rally__launch_hostfile_parse(&fresh, "c slots=3\nd:2\n", err, sizeof err), 0);
    assert_int_equal(rally__launch_hosts_merge(&hs, &fresh), 0);
    char got[128];
    hosts_str(&hs, got, sizeof got);
    assert_string_equal(got, "a:0,b:0,c:3,d:2");
    assert_int_equal(rally__launch_place_one(&hs, host_of, held, 6, avoid), 2); /* c: 2 of 3 */
    held[5] = 1, host_of[5] = 2;
    assert_int_equal(rally__launch_place_one(&hs, host_of, held, 6, avoid), 3);
    rally__launch_hosts_free(&hs);
    rally__launch_hosts_free(&fresh);
    /* labels go through a merge: a host the job has keeps the one its ranks
     * were started with, a new one brings its own */
    assert_int_equal(rally__launch_hosts_parse(&hs, "a:2@r1,b@r2", err, sizeof err), 0);
    assert_int_equal(rally__launch_hostfile_parse(&fresh, "a:4@r9\nc@r3\nd\n", err, sizeof err), 0);
    assert_int_equal(rally__launch_hosts_merge(&hs, &fresh), 0);
    hosts_str(&hs, got, sizeof got);
    assert_string_equal(got, "a:4@r1,b:0@r2,c:1@r3,d:1");
    rally__launch_hosts_free(&hs);
    rally__launch_hosts_free(&fresh);
}

/* The domains whose loss takes every copy of something (launch/domains.h),
 * on the placement ring. */
static void uncovered(void **state)
{
    (void)state;
    struct rally__launch_lost out[24];
    /* a host of 4 beside one of 1: the ring is 0 4 1 2 3, so with one
     * replica (2 copies) the models of 1, 2 and 3 have both on the big host */
    int big[5] = {0, 0, 0, 0, 4};
    struct rally__launch_layout in = {5, big, NULL, 0, 2, 0, 0, 0};
    assert_int_equal(rally__launch_uncovered(&in, out), 1);
    assert_int_equal(out[0].rack, 0);
    assert_int_equal(out[0].domain, 0);
    assert_int_equal(out[0].ranks, 4);
    assert_int_equal(out[0].local, 3);
    assert_int_equal(out[0].pieces, 0);
    assert_int_equal(out[0].run, 4); /* places 2, 3, 4 and 0: 5 copies would cover it */
    in.piece_len = 2; /* result pieces on 2 ranks each: the same windows */
    assert_int_equal(rally__launch_uncovered(&in, out), 1);
    assert_int_equal(out[0].pieces, 3);
    in.local_len = 5; /* every rank holds each: nothing lies in one host */
    in.piece_len = 0;
    assert_int_equal(rally__launch_uncovered(&in, out), 0);
    /* 3 hosts of 4 with 2 replicas: the ring takes the hosts in turn */
    int three[12] = {0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8};
    in = (struct rally__launch_layout){12, three, NULL, 0, 3, 2, 0, 0};
    assert_int_equal(rally__launch_uncovered(&in, out), 0);
    /* one host: nothing to say */
    int one[4] = {0, 0, 0, 0};
    in = (struct rally__launch_layout){4, one, NULL, 0, 1, 2, 0, 0};
    assert_int_equal(rally__launch_uncovered(&in, out), 0);
    /* 4 hosts of 2 in 2 racks: spread over hosts, neighbours share a rack
     * (ring 0 2 4 6 1 3 5 7), so each rack loses 2 models; spread over
     * racks, none */
    int hosts[8] = {0, 0, 2, 2, 4, 4, 6, 6}, racks[8] = {0, 0, 0, 0, 4, 4, 4, 4};
    in = (struct rally__launch_layout){8, hosts, racks, 0, 2, 0, 0, 0};
    assert_int_equal(rally__launch_uncovered(&in, out), 2);
    assert_int_equal(out[0].rack, 1);
    assert_int_equal(out[0].domain, 0);
    assert_int_equal(out[0].ranks, 4);
    assert_int_equal(out[0].local, 2);
    assert_int_equal(out[0].run, 2);
    assert_int_equal(out[1].domain, 4);
    assert_int_equal(out[1].local, 2);
    in.by_rack = 1;
    assert_int_equal(rally__launch_uncovered(&in, out), 0);
}

/* With XOR parity (rally_local_scheme=xor) a domain is uncovered when it
 * holds two members of one set, on the sets the workers cut the ring into
 * (util/xor.h), with the set size they take. */
static void uncovered_xor(void **state)
{
    (void)state;
    struct rally__launch_lost out[24];
    assert_int_equal(rally__xor_size(0, 12, 3), 3); /* one member a host */
    assert_int_equal(rally__xor_size(0, 5, 1), 4);  /* one host */
    assert_int_equal(rally__xor_size(0, 40, 10), 8);
    assert_int_equal(rally__xor_size(6, 4, 2), 4); /* never more than the world */
    /* 3 hosts of 4, sets of 3 (ring 0 4 8 1 5 9 ...): one rank a host each */
    int three[12] = {0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8};
    struct rally__launch_layout in = {12, three, NULL, 0, 3, 0, rally__xor_size(0, 12, 3), 0};
    assert_int_equal(rally__launch_uncovered(&in, out), 0);
    /* sets of 4: {0 4 8 1}, {5 9 2 6}, {10 3 7 11}: each host holds two
     * members of one set, which it would lose both of */
    in.xor_g = 4;
    assert_int_equal(rally__launch_uncovered(&in, out), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(out[i].domain, 4 * i);
        assert_int_equal(out[i].local, 2);
        assert_int_equal(out[i].pieces, 0);
        assert_int_equal(out[i].sets, 1);
        assert_int_equal(out[i].set, i);
        assert_int_equal(out[i].set_ranks, 2);
    }
    /* the copies' windows are not counted: 2 replicas would cover it */
    in.xor_g = 3;
    in.local_len = 1;
    assert_int_equal(rally__launch_uncovered(&in, out), 0);
    /* a host of 4 beside one of 1, sets of 2 (ring 0 4 1 2 3: sets {0 4 1}
     * and {2 3}): the big host holds two of both */
    int big[5] = {0, 0, 0, 0, 4};
    in = (struct rally__launch_layout){5, big, NULL, 0, 3, 0, rally__xor_size(0, 5, 2), 0};
    assert_int_equal(rally__launch_uncovered(&in, out), 1);
    assert_int_equal(out[0].domain, 0);
    assert_int_equal(out[0].local, 4);
    assert_int_equal(out[0].sets, 2);
    assert_int_equal(out[0].set, 0);
    assert_int_equal(out[0].set_ranks, 2);
    /* a piece's copies still count alongside */
    in.piece_len = 2;
    assert_int_equal(rally__launch_uncovered(&in, out), 1);
    assert_int_equal(out[0].pieces, 3);
    /* pieces with parity (rally_result_scheme=xor) on the same sets, local
     * models by copies: the pieces of both sets' members on it, the copies'
     * windows no more */
    in = (struct rally__launch_layout){12, three, NULL, 0, 3, 2, 0, 4};
    assert_int_equal(rally__launch_uncovered(&in, out), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(out[i].local, 0);
        assert_int_equal(out[i].pieces, 2);
        assert_int_equal(out[i].set, i);
    }
    in.piece_xor_g = 3;
    assert_int_equal(rally__launch_uncovered(&in, out), 0);
}

/* The counts in one pass are util/place.h's, window by window, on layouts
 * of random hosts and racks (a fixed seed), every copy count. */
static void uncovered_as_place(void **state)
{
    (void)state;
    enum { W = 23 };
    int h[W], host[W], rack[W], order[W];
    struct rally__launch_lost out[2 * W];
    srand(7);
    for (int t = 0; t < 300; t++) {
        int nh = 1 + rand() % 6, nr = 1 + rand() % 3, world = 2 + rand() % (W - 1);
        for (int r = 0; r < world; r++)
            h[r] = rand() % nh;
        for (int r = 0; r < world; r++) { /* ids: a domain's lowest rank; a host in one rack */
            host[r] = rack[r] = r;
            for (int q = r - 1; q >= 0; q--) {
                host[r] = h[q] == h[r] ? q : host[r];
                rack[r] = h[q] % nr == h[r] % nr ? q : rack[r];
            }
        }
        int by_rack = rand() % 2, len = 1 + rand() % 4, plen = rand() % 4;
        struct rally__launch_layout in = {world, host, rack, by_rack, len, plen, 0, 0};
        int n = rally__launch_uncovered(&in, out);
        assert_true(n >= 0);
        assert_int_equal(rally__place_order(world, host, rack, by_rack, order), 0);
        int i = 0;
        for (int lv = 0; lv < 2; lv++) {
            const int *dom = lv ? rack : host;
            int ndom = 0;
            for (int r = 0; r < world; r++)
                ndom += dom[r] == r;
            for (int d = 0; d < world && ndom > 1; d++) {
                if (dom[d] != d)
                    continue;
                int lost = rally__place_lost(world, order, dom, d, len);
                int pieces = plen ? rally__place_lost(world, order, dom, d, plen) : 0;
                if (lost == 0 && pieces == 0)
                    continue;
                assert_true(i < n);
                assert_int_equal(out[i].rack, lv);
                assert_int_equal(out[i].domain, d);
                assert_int_equal(out[i].local, lost);
                assert_int_equal(out[i].pieces, pieces);
                /* copies on run + 1 places cover it, on run places do not */
                assert_int_equal(rally__place_lost(world, order, dom, d, out[i].run + 1), 0);
                assert_true(rally__place_lost(world, order, dom, d, out[i].run) > 0);
                i++;
            }
        }
        assert_int_equal(i, n);
    }
}

static void quoting(void **state)
{
    static const char *const cases[][2] = {{"plain-word_1.2/x:y,z=@%+", "plain-word_1.2/x:y,z=@%+"},
                                           {"", "''"},
                                           {"two words", "'two words'"},
                                           {"it's", "'it'\\''s'"},
                                           {"$HOME", "'$HOME'"},
                                           {"a;b", "'a;b'"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *q = rally__launch_quote(cases[i][0]);
        assert_non_null(q);
        assert_string_equal(q, cases[i][1]);
        free(q);
    }
}

/* The command line of in as one string. */
static void line_of(const struct rally__launch_cmd_in *in, const char *want)
{
    char **argv = rally__launch_command(in);
    assert_non_null(argv);
    char *line = rally__launch_argv_line(argv);
    assert_non_null(line);
    assert_string_equal(line, want);
    free(line);
    rally__launch_argv_free(argv);
}

static void commands(void **state)
{
    char *prog[] = {"./prog", "two words", NULL};
    const char *env[] = {"RALLY_TRACKER=10.0.0.1:9000", "RALLY_TASK_ID=3", NULL};
    const char *opts[] = {"Port=2222"};
    struct rally__launch_cmd_in in = {&rally__launch_kind_ssh, "h2", opts, 1,
                                      "/opt/rally-agent",      env,  prog, NULL};
    /* ssh: the remote shell reads the words after --, so they are quoted once more */
    line_of(&in, "ssh -o BatchMode=yes -o Port=2222 h2 -- /opt/rally-agent --env "
                 "RALLY_TRACKER=10.0.0.1:9000 --env RALLY_TASK_ID=3 -- ./prog "
                 "''\\''two words'\\'''");
    in.kind = &rally__launch_kind_slurm;
    in.nssh_opts = 0;
    line_of(&in, "srun --nodes=1 --ntasks=1 --nodelist=h2 --kill-on-bad-exit=1 --overlap "
                 "--input=all --quiet /opt/rally-agent --env RALLY_TRACKER=10.0.0.1:9000 --env "
                 "RALLY_TASK_ID=3 -- ./prog 'two words'");
    in.kind = &rally__launch_kind_mpirun;
    line_of(&in, "mpirun -np 1 --host h2 --quiet /opt/rally-agent --env "
                 "RALLY_TRACKER=10.0.0.1:9000 --env RALLY_TASK_ID=3 -- ./prog 'two words'");
    /* a session directory base of the rank's own: mpiruns side by side do
     * not share (and race on) OpenMPI's */
    in.session_base = "/tmp/rally-run-x/ompi-3";
    line_of(&in, "mpirun -np 1 --host h2 --quiet --mca orte_local_tmpdir_base "
                 "/tmp/rally-run-x/ompi-3 /opt/rally-agent --env RALLY_TRACKER=10.0.0.1:9000 "
                 "--env RALLY_TASK_ID=3 -- ./prog 'two words'");
    in.session_base = NULL;
    in.kind = &rally__launch_kind_local;
    assert_null(rally__launch_command(&in));
    assert_ptr_equal(rally__launch_kind_named("slurm"), &rally__launch_kind_slurm);
    assert_null(rally__launch_kind_named("pbs"));
}

/* Feeds the lines of text (newline-separated) to s. */
static void feed(struct rally__launch_seen *s, const char *text, int *printed)
{
    *printed = 0;
    for (const char *p = text, *nl; *p; p = nl + 1) {
        nl = strchr(p, '\n');
        int flush;
        *printed += !rally__launch_seen_line(s, p, (size_t)(nl - p), &flush);
    }
}

/* A table of named outcomes: the wrapper's stderr, its wait status, and
 * what the policy hears. */
static const struct {
    const char *name;
    const struct rally__launch_kind *launcher;
    const char *stderr_text;
    int st;
    int kind, out;
    const char *why;
} OUTCOMES[] = {
    {"worker_exit", &rally__launch_kind_ssh,
     "@rally-agent started\nworker says hi\n@rally-agent exit 3\n", EXITED(3),
     RALLY__LAUNCH_AS_STATUS, EXITED(3), ""},
    {"worker_signal_wrapper_says_137", &rally__launch_kind_ssh,
     "@rally-agent started\n@rally-agent signal 9\n", EXITED(137), RALLY__LAUNCH_AS_STATUS, SIGKILL,
     ""},
    {"worker_signal_srun_says_1", &rally__launch_kind_slurm,
     "@rally-agent started\n@rally-agent signal 11\nsrun: error: task 0 failed\n", EXITED(1),
     RALLY__LAUNCH_AS_STATUS, SIGSEGV, ""},
    {"connection_lost", &rally__launch_kind_ssh, "@rally-agent started\n", EXITED(255),
     RALLY__LAUNCH_AS_LOST, 0, ""},
    {"wrapper_killed_by_us", &rally__launch_kind_ssh, "@rally-agent started\n", SIGKILL,
     RALLY__LAUNCH_AS_STATUS, SIGKILL, ""},
    {"unreachable", &rally__launch_kind_ssh,
     "ssh: connect to host h2 port 22: Connection refused\n", EXITED(255),
     RALLY__LAUNCH_AS_UNREACHABLE, 1, "host h2 (rank 2): cannot be reached: ssh: connect to host h2 port 22: Connection refused"},
    {"prog_missing", &rally__launch_kind_ssh,
     "@rally-agent started\n@rally-agent exec 2 No such file or directory\n", EXITED(127),
     RALLY__LAUNCH_AS_FAILED, 127, "host h2 (rank 2): ./prog: not found"},
    {"prog_not_executable", &rally__launch_kind_mpirun,
     "@rally-agent started\n@rally-agent exec 13 Permission denied\n", EXITED(127),
     RALLY__LAUNCH_AS_FAILED, 127, "host h2 (rank 2): ./prog: cannot be run: Permission denied"},
    {"agent_missing", &rally__launch_kind_ssh,
     "bash: line 1: /opt/rally-agent: No such file or directory\n", EXITED(127),
     RALLY__LAUNCH_AS_FAILED, 127, "host h2 (rank 2): /opt/rally-agent: not found"},
    {"agent_missing_srun", &rally__launch_kind_slurm,
     "slurmstepd: error: execve(): /opt/rally-agent: No such file or directory\n"
     "srun: error: n2: task 0: Exited with exit code 2\n",
     EXITED(2), RALLY__LAUNCH_AS_FAILED, 127, "host h2 (rank 2): /opt/rally-agent: not found"},
    {"agent_refuses", &rally__launch_kind_mpirun,
     "rally-agent: no secret on stdin (its first line)\n", EXITED(125), RALLY__LAUNCH_AS_FAILED, 1,
     "host h2 (rank 2): cannot start /opt/rally-agent: rally-agent: no secret on stdin (its first "
     "line) (mpirun exited with status 125)"},
    /* OpenMPI 4.1's help box, word for word: its headline, not its frame,
     * and as root the override it names */
    {"mpirun_as_root", &rally__launch_kind_mpirun,
     "--------------------------------------------------------------------------\n"
     "mpirun has detected an attempt to run as root.\n"
     "\n"
     "Running as root is *strongly* discouraged as any mistake (e.g., in\n"
     "defining TMPDIR) or bug can result in catastrophic damage to the OS\n"
     "file system, leaving your system in an unusable state.\n"
     "\n"
     "We strongly suggest that you run mpirun as a non-root user.\n"
     "\n"
     "You can override this protection by adding the --allow-run-as-root option\n"
     "to the cmd line or by setting two environment variables in the following way:\n"
     "the variable OMPI_ALLOW_RUN_AS_ROOT=1 to indicate the desire to override this\n"
     "protection, and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 to confirm the choice and\n"
     "add one more layer of certainty that you want to do so.\n"
     "We reiterate our advice against doing so - please proceed at your own risk.\n"
     "--------------------------------------------------------------------------\n",
     EXITED(1), RALLY__LAUNCH_AS_FAILED, 1,
     "host h2 (rank 2): cannot start /opt/rally-agent: mpirun has detected an attempt to run as "
     "root. (mpirun exited with status 1); OpenMPI runs as root only with "
     "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 in rally-run's environment"},
    {"mpirun_box_after_a_line", &rally__launch_kind_mpirun,
     "a line before\n"
     "--------------------------------------------------------------------------\n"
     "There are not enough slots available in the system to satisfy the 1\n"
     "slots that were requested by the application:\n"
     "--------------------------------------------------------------------------\n",
     EXITED(1), RALLY__LAUNCH_AS_FAILED, 1,
     "host h2 (rank 2): cannot start /opt/rally-agent: There are not enough slots available in "
     "the system to satisfy the 1 (mpirun exited with status 1)"},
};

static void outcomes(void **state)
{
    for (size_t i = 0; i < sizeof OUTCOMES / sizeof OUTCOMES[0]; i++) {
        struct rally__launch_seen s;
        rally__launch_seen_reset(&s);
        int printed, out = -1;
        char why[640];
        feed(&s, OUTCOMES[i].stderr_text, &printed);
        int kind = rally__launch_outcome(&s, OUTCOMES[i].st, OUTCOMES[i].launcher, "h2", 2,
                                         "/opt/rally-agent", "./prog", why, sizeof why, &out);
        if (kind != OUTCOMES[i].kind || strcmp(why, OUTCOMES[i].why) != 0 ||
            (kind != RALLY__LAUNCH_AS_LOST && out != OUTCOMES[i].out))
            fail_msg("%s: got kind %d out %d '%s'", OUTCOMES[i].name, kind, out, why);
    }
}

static void marked_lines(void **state)
{
    struct rally__launch_seen s;
    rally__launch_seen_reset(&s);
    int flush, printed;
    /* before "started": held, not printed */
    assert_int_equal(rally__launch_seen_line(&s, "Warning: added h2", 17, &flush), 1);
    assert_int_equal(flush, 0);
    assert_int_equal(rally__launch_seen_line(&s, "@rally-agent started", 20, &flush), 1);
    assert_int_equal(flush, 1);
    assert_string_equal(s.held, "Warning: added h2\n");
    /* after it: the worker's lines are printed, the agent's are not */
    feed(&s, "[worker] fine\n@rally-agent exit 0\n", &printed);
    assert_int_equal(printed, 1);
    assert_int_equal(s.verdict, 'e');
    assert_int_equal(s.code, 0);
    /* the last verdict counts */
    feed(&s, "@rally-agent signal 15\n", &printed);
    assert_int_equal(s.verdict, 's');
    assert_int_equal(s.code, 15);
    /* held lines are bounded: the oldest go */
    rally__launch_seen_reset(&s);
    char big[300];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    for (int i = 0; i < 10; i++)
        rally__launch_seen_line(&s, big, strlen(big), &flush);
    rally__launch_seen_line(&s, "last", 4, &flush);
    assert_true(s.nheld < sizeof s.held);
    assert_string_equal(s.held + s.nheld - 5, "last\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hosts_cases),      cmocka_unit_test(hostfile),
        cmocka_unit_test(slurm_slots),      cmocka_unit_test(placement),
        cmocka_unit_test(placement_of_one), cmocka_unit_test(uncovered),
        cmocka_unit_test(uncovered_xor),
        cmocka_unit_test(uncovered_as_place), cmocka_unit_test(quoting),
        cmocka_unit_test(commands),         cmocka_unit_test(outcomes),
        cmocka_unit_test(marked_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
