/*
 * tracker_rig.h — the rig of tests/unit/tracker_test.c and
 * tests/unit/tracker_recover_test.c: an embedded tracker whose poll loop runs in
 * its own thread (a pipe stops it), talked to over 127.0.0.1 through
 * rally__tclient_join for well-behaved workers, or through raw sockets that
 * send exactly the bytes a test wants.  The tracker is not thread-safe, so
 * the loop holds fx.mu while it touches it and a test takes fx.mu to read
 * its state or the event log it writes (fx.log, fx.prints).
 */
#ifndef RALLY_TESTS_TRACKER_RIG_H
#define RALLY_TESTS_TRACKER_RIG_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/auth.h"
#include "net/frame.h"
#include "net/sock.h"
#include "tracker/client.h"
#include "tracker/proto.h"
#include "tracker/server.h"
#include "util/clock.h"
#include "util/wire.h"

#define WAIT_MS 5000

struct fixture {
    struct rally__tracker *t;
    pthread_t th;
    int stop[2];
    pthread_mutex_t mu;
    char log[32768];
    char prints[4096];
    int nprints;
    char dir[64], secret_path[128], addr[64];
    struct rally__secret s;
};
extern struct fixture fx;

/* a worker joining in a thread of its own */
struct async_join {
    pthread_t th;
    const char *task;
    struct rally__tclient c;
    struct rally__err e;
    int rc;
};

/* the tracker of a test: started, stopped, its state and its log */
void start(int world, int64_t startup_ms, int64_t handshake_ms);
void stop(void);
int state(const char **sentence);
int logged(const char *buf, const char *what);

/* well-behaved workers (tracker_rig.c says what each returns) */
int joinc(struct rally__tclient *c, const char *task, const char *secret_path,
          struct rally__err *e);
void join_start(struct async_join *j, const char *task);
int join_end(struct async_join *j);

/* raw sockets that send exactly the bytes a test wants */
int raw_connect(void);
int raw_authed(void);
void raw_send(int fd, uint16_t type, const void *body, size_t n);
int closed_by_tracker(int fd, uint16_t *last_type);
size_t register_body(unsigned char *b, size_t cap, const char *task, uint32_t world_hint);
void foreign_secret(char *path, size_t cap, int other_job);

#endif
