/*
 * late.h — who the others wait for: the straggler measure of rally-run's
 * line, status page and --give-up-slow (docs/status.md, "Who the others
 * wait for").
 *
 * Each worker keeps a window of its newest public collectives (rally_
 * lateness_window, 200 by default): how long it waited inside them and how
 * long they spanned, end to end, both by its own clock; its heartbeats
 * carry the sums.  Every rank leaves a collective at about the same moment
 * (none can finish before the last has arrived), so a rank that arrives d
 * later than another waits d less inside.  A rank's lateness is therefore
 * the median rank's share of its time spent waiting, minus the rank's own:
 * how much later than the median it arrives, as a share of the time per
 * call (0.38: 38 % of each call's time, on average, the others wait for it
 * beyond what they wait for the median rank).  No clock of another host is
 * ever compared: only shares of each rank's own time.
 */
#ifndef RALLY_TOOLS_LAUNCH_LATE_H
#define RALLY_TOOLS_LAUNCH_LATE_H

#include <stdint.h>

/* A window is judged once it holds this many calls over this much time:
 * the stamps are the coarse clock's (1 to 10 ms ticks), whose error over a
 * window is a few ticks, a few tenths of a percent of a second. */
#define RALLY__LATE_MIN_CALLS 10
#define RALLY__LATE_MIN_SPAN_MS 1000
/* rally-run's line names a rank from this lateness on, and says it again
 * when it moved by RALLY__LATE_AGAIN since (or fell below half of it) */
#define RALLY__LATE_NAMED 0.25
#define RALLY__LATE_AGAIN 0.10

/* One rank's window, from its heartbeats (win 0: none, or not a rank now). */
struct rally__late {
    uint32_t win;
    uint64_t wait_ms, span_ms;
};

/* late[i] = rank i's lateness, or NAN when its window is too short or
 * fewer than two ranks have one long enough to compare.  scratch holds n
 * doubles (the caller's, reused). */
void rally__late_measure(const struct rally__late *in, int n, double *late, double *scratch);

#endif
