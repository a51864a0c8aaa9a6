/*
 * data_rig.h — the rig of the data layer's tests (tests/unit/data_*_test.c; src/data,
 * include/rally/data.h): each test binary's files in one scratch directory,
 * made by setup and removed with them by teardown, and reads that must
 * succeed or fail with an exact message.
 */
#ifndef RALLY_TESTS_DATA_RIG_H
#define RALLY_TESTS_DATA_RIG_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>

#include "data/data.h"
#include "rally/data.h"

/* the scratch directory and the files made in it (removed by teardown) */
extern char dir[64];
extern char paths[96][128];
extern int npaths;

/* group setup and teardown: the scratch directory */
int setup(void **state);
int teardown(void **state);

/* a path in it; a file of bytes or text put there; a file's bytes, NUL-ended */
const char *tmp_path(const char *name);
const char *put_file(const char *name, const char *bytes, size_t n);
const char *put(const char *name, const char *text);
char *slurp(const char *path, size_t *n);
/* a file of rows generated there (rally_data_generate) */
const char *gen(const char *name, uint64_t rows, uint32_t f, const char *fmt, int header,
                uint64_t seed);

/* options from up to three key=value words (NULL for none) */
rally_data_opts_t *opts(const char *kv1, const char *kv2, const char *kv3);
void expect_error(const char *path, const rally_data_opts_t *o, int rank, int world, int code,
                  const char *msg_after_path);
rally_dataset_t *read_ok(const char *path, const rally_data_opts_t *o, int rank, int world);

#endif
