/*
 * report.h — what a worker reports for observers (rally_report, a
 * snapshot's fate): the kinds and the rule for a value's key, shared by the
 * public API that checks them (src/api), the engines that send them and
 * the tracker's REPORT frame that carries them (src/tracker/msg.h,
 * docs/protocol.md).
 */
#ifndef RALLY_UTIL_REPORT_H
#define RALLY_UTIL_REPORT_H

#include <string.h>

/* VALUE: rally_report (key, value at the worker's checkpoint version);
 * TOTAL: rally_report_total (value: the job's iterations in all);
 * SNAPSHOT: a snapshot of version committed (key: its tier, nbytes, text:
 * its path); SNAPSHOT_VOID: the snapshot of version was not committed
 * (text: why; key: the tier, as for SNAPSHOT).  The tiers are "dir"
 * (rally_snapshot_dir) and "copy" (rally_snapshot_copy, the second). */
enum {
    RALLY__REPORT_VALUE = 1,
    RALLY__REPORT_TOTAL = 2,
    RALLY__REPORT_SNAPSHOT = 3,
    RALLY__REPORT_SNAPSHOT_VOID = 4
};

#define RALLY__REPORT_KEY_MAX 65 /* a VALUE's key: 1..64 bytes of [A-Za-z0-9_.:-], with the NUL */

/* 1 when key is 1 to 64 bytes of [A-Za-z0-9_.:-]. */
static inline int rally__report_key_ok(const char *key)
{
    size_t n = strlen(key);
    return n >= 1 && n <= RALLY__REPORT_KEY_MAX - 1 &&
           strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:-") == n;
}

#endif
