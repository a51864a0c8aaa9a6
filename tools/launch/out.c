/*
 * out.c — queues rally-run's output lines per stream and writes them
 * without blocking, dropping worker lines beyond a bound (out.h).
 */
#include "out.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void rally__launch_out_open(struct rally__launch_out *o, int fd, const char *name, size_t bound,
                            struct rally__launch_out *notices)
{
    memset(o, 0, sizeof *o);
    o->fd = o->orig = fd;
    o->restore = -1;
    o->name = name;
    o->bound = bound ? bound : RALLY__LAUNCH_OUT_BOUND;
    o->notices = notices ? notices : o;
    struct stat st;
    if (fstat(fd, &st) != 0) { /* closed: nothing can be written */
        o->fd = -1;
        return;
    }
    if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
        o->plain = 1;
        return;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return;
    if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        int mine = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK | (fl & O_APPEND));
        if (mine >= 0) {
            o->fd = mine;
            return;
        }
    }
    if (fl & O_NONBLOCK)
        return;
    if (fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0)
        o->restore = fl;
}

/* Room for need more bytes, growing the queue up to limit; 0 or -1. */
static int room(struct rally__launch_out *o, size_t need, size_t limit)
{
    if (o->len + need > limit)
        return -1;
    if (o->head + o->len + need <= o->cap)
        return 0;
    if (o->head > 0) {
        memmove(o->buf, o->buf + o->head, o->len);
        o->head = 0;
        if (o->len + need <= o->cap)
            return 0;
    }
    size_t cap = o->cap ? o->cap : 4096;
    while (cap < o->len + need)
        cap *= 2;
    char *b = realloc(o->buf, cap);
    if (b == NULL)
        return -1;
    o->buf = b;
    o->cap = cap;
    return 0;
}

static const char erase_line[] = "\r\033[K";

/* A status line is on the screen: erase it before the next line. */
static void erase(struct rally__launch_out *o)
{
    if (o->shown == NULL || !*o->shown ||
        room(o, sizeof erase_line - 1, o->bound + RALLY__LAUNCH_OUT_RESERVE) != 0)
        return;
    memcpy(o->buf + o->head + o->len, erase_line, sizeof erase_line - 1);
    o->len += sizeof erase_line - 1;
    *o->shown = 0;
}

void rally__launch_out_status(struct rally__launch_out *o, const char *s)
{
    size_t n = strlen(s);
    if (o->fd < 0 || o->shown == NULL ||
        room(o, sizeof erase_line - 1 + n, o->bound + RALLY__LAUNCH_OUT_RESERVE) != 0)
        return;
    memcpy(o->buf + o->head + o->len, erase_line, sizeof erase_line - 1);
    memcpy(o->buf + o->head + o->len + sizeof erase_line - 1, s, n);
    o->len += sizeof erase_line - 1 + n;
    *o->shown = 1;
}

void rally__launch_out_line(struct rally__launch_out *o, int rank, const char *s, size_t n)
{
    if (o->fd < 0)
        return;
    erase(o);
    if (o->hide[0] && memmem(s, n, o->hide, strlen(o->hide)) != NULL) {
        o->hidden++;
        return;
    }
    char prefix[16];
    int k = snprintf(prefix, sizeof prefix, "[%d] ", rank);
    if (room(o, (size_t)k + n + 1, o->bound) != 0) {
        o->dropped++;
        return;
    }
    char *at = o->buf + o->head + o->len;
    memcpy(at, prefix, (size_t)k);
    memcpy(at + k, s, n);
    at[(size_t)k + n] = '\n';
    o->len += (size_t)k + n + 1;
}

void rally__launch_out_say(struct rally__launch_out *o, const char *fmt, ...)
{
    if (o->fd < 0)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    erase(o);
    size_t n = (size_t)k < sizeof line - 1 ? (size_t)k : sizeof line - 2;
    line[n++] = '\n';
    static const char who[] = "rally-run: ";
    if (room(o, sizeof who - 1 + n, o->bound + RALLY__LAUNCH_OUT_RESERVE) != 0) {
        o->dropped++;
        return;
    }
    memcpy(o->buf + o->head + o->len, who, sizeof who - 1);
    memcpy(o->buf + o->head + o->len + sizeof who - 1, line, n);
    o->len += sizeof who - 1 + n;
}

/* The notice for the lines dropped since the last, once there is room. */
static void notice(struct rally__launch_out *o)
{
    uint64_t n = o->dropped;
    o->dropped = 0;
    rally__launch_out_say(o->notices,
                          "dropped %llu lines of worker output: the reader of %s is not "
                          "keeping up",
                          (unsigned long long)n, o->name);
}

/* Writes until the queue is empty or the descriptor would block. */
static void put(struct rally__launch_out *o)
{
    while (o->len > 0 && o->fd >= 0) {
        ssize_t w = write(o->fd, o->buf + o->head, o->len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (w <= 0) { /* the reader is gone (EPIPE) or the device failed: discard */
            o->head = o->len = 0;
            return;
        }
        o->head += (size_t)w;
        o->len -= (size_t)w;
    }
    o->head = 0;
}

void rally__launch_out_write(struct rally__launch_out *o)
{
    put(o);
    if (o->dropped > 0 && o->len <= o->bound / 2) {
        notice(o);
        if (o->notices == o)
            put(o);
    }
}

int rally__launch_out_want(const struct rally__launch_out *o)
{
    return o->fd >= 0 && o->len > 0 && !o->plain;
}

void rally__launch_out_finish(struct rally__launch_out *o)
{
    if (o->dropped > 0)
        notice(o);
    if (o->fd >= 0 && !o->plain) {
        int fl = fcntl(o->fd, F_GETFL);
        if (fl >= 0 && o->fd != o->orig)
            fcntl(o->fd, F_SETFL, fl & ~O_NONBLOCK);
        else if (o->restore >= 0)
            fcntl(o->fd, F_SETFL, o->restore);
    }
    put(o); /* blocking now (or, with O_NONBLOCK the shell's own, as far as it goes) */
    if (o->fd >= 0 && o->fd != o->orig)
        close(o->fd);
    free(o->buf);
    o->buf = NULL;
    o->head = o->len = o->cap = 0;
    o->fd = -1;
}
