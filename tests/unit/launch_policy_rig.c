/*
 * launch_policy_rig.c — the rig of rally-run's restart policy tests
 * (launch_policy_rig.h).
 */
#include "launch_policy_rig.h"

const struct rally__launch_view running = {RALLY__TRACKER_RUNNING, -1, "", 1, 0, "", -1};
const struct rally__launch_view starting = {RALLY__TRACKER_RUNNING, -1, "", 0, 0, "", -1};

struct rally__launch_policy *make(int world, int max_restarts, int64_t grace_ms)
{
    struct rally__launch_policy *pol;
    assert_int_equal(rally__launch_policy_new(&pol, world, world, max_restarts, grace_ms), 0);
    for (int i = 0; i < world; i++)
        rally__launch_policy_spawned(pol, i);
    return pol;
}

void event(struct rally__launch_policy *pol, int kind, int rank, const char *text, int64_t now)
{
    struct rally__launch_event ev = {.kind = kind, .rank = rank};
    snprintf(ev.text, sizeof ev.text, "%s", text);
    rally__launch_policy_event(pol, &ev, now);
}

/* Every rank finalizes and exits 0. */
void finish(struct rally__launch_policy *pol, int world)
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
int verdict(const struct rally__launch_policy *pol, const struct rally__launch_view *v,
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

void assert_summary(const struct rally__launch_policy *pol, const char *want)
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
