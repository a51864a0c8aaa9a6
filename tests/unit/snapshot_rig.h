/*
 * snapshot_rig.h — the rig of the unit tests of durable snapshots
 * (src/snapshot; tests/unit/snapshot_*_test.c): the snapshots they write
 * (snapshot_spec.h), each test's scratch directory, and the golden snapshot
 * committed under tests/snapshot_golden (format version 1), which
 * snapshot_format_test --write-golden DIR writes.
 */
#ifndef RALLY_TESTS_SNAPSHOT_RIG_H
#define RALLY_TESTS_SNAPSHOT_RIG_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "rally/snapshot.h"
#include "snapshot/snapshot.h"
#include "snapshot/store.h"
#include "snapshot/sys.h"
#include "util/config.h"

#include "snapshot_spec.h"

/* The golden snapshot's directory, from the command line (golden_args). */
extern const char *golden_dir;

/* Takes golden_dir from "prog GOLDEN_DIR"; 0, or 2 after the usage line. */
int golden_args(int argc, char **argv);

/* A test's scratch directory: tmp_root, each part's own (snapshot_spec.h's
 * statics are per file, so these are too). */
static inline int setup(void **state)
{
    (void)state;
    return tmp_setup();
}

static inline int teardown(void **state)
{
    (void)state;
    return tmp_teardown();
}

#endif
