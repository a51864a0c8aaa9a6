/*
 * launch_out_test.c — unit tests of rally-run's output queues
 * (tools/launch/out.h) over a pipe nobody reads yet: no write may block,
 * worker lines beyond the bound are dropped and counted in one notice, the
 * launcher's own lines use the reserve, lines repeating the job's failure
 * are left out, and everything queued arrives in order.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "launch/out.h"

/* Everything the pipe holds now (non-blocking), appended to buf. */
static size_t slurp(int fd, char *buf, size_t cap, size_t len)
{
    ssize_t m;
    while (len < cap && (m = read(fd, buf + len, cap - len)) > 0)
        len += (size_t)m;
    buf[len < cap ? len : cap - 1] = '\0';
    return len;
}

static size_t count(const char *s, const char *what)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

/* A pipe whose reader stalls: the queue grows to the bound, then drops;
 * once the reader drained, the notice counts exactly the dropped lines. */
static void drops_beyond_the_bound(void **state)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    fcntl(p[0], F_SETFL, O_NONBLOCK); /* the writer's end stays as a shell would leave it */
    struct rally__launch_out err, out;
    rally__launch_out_open(&err, p[1], "stderr", 8192, NULL);
    rally__launch_out_open(&out, p[1], "stdout", 8192, &err);
    assert_int_not_equal(out.fd, p[1]); /* our own description, not the shared one */
    assert_int_equal(fcntl(p[1], F_GETFL) & O_NONBLOCK, 0);
    char line[100];
    memset(line, 'x', sizeof line);
    /* 2000 lines of 104 bytes: 208 KB, far beyond the pipe (64 KiB) plus the bound */
    for (int i = 0; i < 2000; i++) {
        rally__launch_out_line(&out, 3, line, sizeof line);
        rally__launch_out_write(&out); /* never blocks: the test would hang */
    }
    assert_true(out.dropped > 0);
    assert_true(out.len <= 8192);
    uint64_t dropped = out.dropped;
    /* the launcher's own line still fits, in the reserve */
    rally__launch_out_say(&out, "own line after the flood");
    char *buf = malloc(1 << 20);
    size_t len = 0;
    for (int k = 0; k < 100 && (out.len > 0 || out.dropped > 0 || err.len > 0); k++) {
        len = slurp(p[0], buf, 1 << 20, len);
        rally__launch_out_write(&out);
        rally__launch_out_write(&err);
    }
    len = slurp(p[0], buf, 1 << 20, len);
    size_t got = count(buf, "[3] xxxx");
    char want[160];
    snprintf(want, sizeof want,
             "rally-run: dropped %llu lines of worker output: the reader of stdout is not "
             "keeping up\n",
             (unsigned long long)dropped);
    assert_non_null(strstr(buf, want));
    assert_int_equal(got + dropped, 2000);
    assert_non_null(strstr(buf, "rally-run: own line after the flood\n"));
    rally__launch_out_finish(&out);
    rally__launch_out_finish(&err);
    free(buf);
    close(p[0]);
    close(p[1]);
}

/* Lines repeating the job's failure are counted, not queued; the others go
 * out in order, each "[rank] line\n". */
static void hides_the_repeated_cause(void **state)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    fcntl(p[0], F_SETFL, O_NONBLOCK); /* the writer's end stays as a shell would leave it */
    struct rally__launch_out out;
    rally__launch_out_open(&out, p[1], "stdout", 0, NULL);
    rally__launch_out_line(&out, 0, "before", 6);
    snprintf(out.hide, sizeof out.hide, "%s", "rank 2 failed: bad input line 7");
    const char *rep = "app: allreduce: rank 2 failed: bad input line 7 (RALLY_EPEER)";
    rally__launch_out_line(&out, 0, rep, strlen(rep));
    rally__launch_out_line(&out, 1, rep, strlen(rep));
    rally__launch_out_line(&out, 1, "after", 5);
    rally__launch_out_write(&out);
    char buf[256];
    slurp(p[0], buf, sizeof buf, 0);
    assert_string_equal(buf, "[0] before\n[1] after\n");
    assert_int_equal(out.hidden, 2);
    rally__launch_out_finish(&out);
    close(p[0]);
    close(p[1]);
}

/* A reader that went away: queued lines are discarded, nothing blocks. */
static void reader_gone(void **state)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    fcntl(p[0], F_SETFL, O_NONBLOCK); /* the writer's end stays as a shell would leave it */
    struct rally__launch_out out;
    rally__launch_out_open(&out, p[1], "stdout", 0, NULL);
    close(p[0]);
    rally__launch_out_line(&out, 0, "lost", 4);
    rally__launch_out_write(&out);
    assert_int_equal(out.len, 0);
    assert_int_equal(rally__launch_out_want(&out), 0);
    rally__launch_out_finish(&out);
    close(p[1]);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(drops_beyond_the_bound),
        cmocka_unit_test(hides_the_repeated_cause),
        cmocka_unit_test(reader_gone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
