/*
 * job_rig.h — the rig of the job state machine's tests (tests/unit/job_*_test.c):
 * one job driven synchronously, members that open, register and send
 * frames, a clock the test moves, and looks at the last step's actions.
 * Time is a number the test moves forward; every EVENT of a case is kept in
 * log_, one per line: "[kind rank epoch] text".
 */
#ifndef RALLY_TESTS_JOB_RIG_H
#define RALLY_TESTS_JOB_RIG_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tracker/job.h"
#include "tracker/job_int.h" /* the arena, to see where an event's strings live */
#include "tracker/msg.h"
#include "tracker/proto.h"
#include "util/clock.h"

#define W_MAX 8

/* the job of the case, its members, its clock and its events */
extern struct rally__job *j;
extern struct rally__job_member m[2 * W_MAX];
extern int64_t now_ms;
extern char log_[16384];

/* driving it: one step per event, at now_ms */
void run(struct rally__job_ev ev);
void new_job(int world, int64_t startup_ms);
int done_job(void **state);
void open_m(int i);
void frame(int i, uint16_t type, const void *body, size_t n);
void reg(int i, const char *task, uint32_t world_hint);
void lost(int i);
void rejoin(int i, uint32_t epoch, uint64_t pos, uint32_t version);
void in_step(int i, uint32_t epoch);
void tick_at(int64_t ms);
void input(int i, const char *scheme, uint64_t fp);
void beat(int i, uint64_t pos, int waiting, const char *what, uint64_t for_ms);

/* looking at the last step's actions (job_rig.c says what each returns) */
size_t nacts(const struct rally__job_act **a);
const struct rally__job_act *find(int kind, int i, uint16_t type);
int sent(int i, uint16_t type);
int count_kind(int kind);
const struct rally__tracker_event *event(int kind);
int abort_to(int i, char *s, size_t cap);
uint32_t reset_to(int i, char *s, size_t cap);
struct rally__msg_assign assign_to(int i);
int logged(const char *s);

/* a whole job: members 0..world-1 registered, ready, running */
void join_all(int world);
void ready_all(int world);
void running(int world);

#endif
