/*
 * ceiling.c — the two ceilings an allreduce on one machine runs into:
 *
 *   memcpy   single-thread memcpy bandwidth between two 64 MiB buffers
 *            (bytes copied per second; best of several passes);
 *   tcp      one TCP stream over 127.0.0.1 (a forked sender writes 1 GiB in
 *            1 MiB writes; the receiver times from first to last byte).
 *
 * Prints machine-readable lines:   CEILING memcpy <GB/s>   CEILING tcp <GB/s>
 * (GB = 1e9 bytes).  Usage: ceiling [memcpy|tcp]  (both when no argument).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int memcpy_bw(void)
{
    const size_t n = (size_t)64 << 20;
    char *a = malloc(n), *b = malloc(n);
    if (!a || !b) {
        perror("ceiling: malloc");
        return 1;
    }
    memset(a, 1, n);
    memset(b, 2, n);
    double best = 0;
    for (int i = 0; i < 8; i++) {
        double t0 = now_s();
        memcpy((i & 1) ? a : b, (i & 1) ? b : a, n);
        double dt = now_s() - t0;
        if (i > 0 && n / dt > best) /* the first pass warms the pages up */
            best = n / dt;
    }
    /* Keep the copies observable. */
    if (a[n / 2] + b[n / 3] == 0)
        printf("#\n");
    printf("CEILING memcpy %.2f\n", best / 1e9);
    free(a);
    free(b);
    return 0;
}

static int tcp_bw(void)
{
    const size_t chunk = (size_t)1 << 20, total = (size_t)1 << 30;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(ls, 1) < 0 ||
        getsockname(ls, (struct sockaddr *)&sa, &len) < 0) {
        perror("ceiling: listen");
        return 1;
    }
    char *buf = malloc(chunk);
    if (!buf)
        return 1;
    memset(buf, 7, chunk);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("ceiling: fork");
        return 1;
    }
    if (pid == 0) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof sa) < 0)
            _exit(1);
        for (size_t sent = 0; sent < total;) {
            ssize_t k = write(s, buf, chunk);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0)
                _exit(1);
            sent += (size_t)k;
        }
        close(s);
        _exit(0);
    }
    int c = accept(ls, NULL, NULL);
    if (c < 0) {
        perror("ceiling: accept");
        return 1;
    }
    size_t got = 0;
    double t0 = 0;
    while (got < total) {
        ssize_t k = read(c, buf, chunk);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        if (got == 0)
            t0 = now_s();
        got += (size_t)k;
    }
    double dt = now_s() - t0;
    int st = 0;
    waitpid(pid, &st, 0);
    close(c);
    close(ls);
    free(buf);
    if (got < total || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "ceiling: the loopback stream broke after %zu bytes\n", got);
        return 1;
    }
    printf("CEILING tcp %.2f\n", (double)total / dt / 1e9);
    return 0;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    int rc = 0;
    if (!*what || !strcmp(what, "memcpy"))
        rc |= memcpy_bw();
    if (!*what || !strcmp(what, "tcp"))
        rc |= tcp_bw();
    return rc;
}
