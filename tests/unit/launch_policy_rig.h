/*
 * launch_policy_rig.h — the rig of the tests of rally-run's restart policy
 * (tools/launch/policy.h; tests/unit/launch_policy_*_test.c), driven
 * synchronously: no processes, no clock.
 *
 * Each case feeds tracker events, wait statuses, signals and the tracker's
 * state at given moments and checks the decision (restart, abort, forward,
 * kills due), the verdict line with its exit status, and the summary.
 */
#ifndef RALLY_TESTS_LAUNCH_POLICY_RIG_H
#define RALLY_TESTS_LAUNCH_POLICY_RIG_H

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

/* the tracker's state: running (every rank in step once), still starting */
extern const struct rally__launch_view running;
extern const struct rally__launch_view starting;

/* a policy of world ranks, all spawned */
struct rally__launch_policy *make(int world, int max_restarts, int64_t grace_ms);
void event(struct rally__launch_policy *pol, int kind, int rank, const char *text, int64_t now);
void finish(struct rally__launch_policy *pol, int world);
int verdict(const struct rally__launch_policy *pol, const struct rally__launch_view *v,
            char *line, size_t cap);
void assert_summary(const struct rally__launch_policy *pol, const char *want);

#endif
