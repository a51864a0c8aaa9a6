/*
 * ceiling.c — the ceilings an allreduce on one machine runs into, which
 * bench/run.sh turns into each size's floor time:
 *
 *   memcpy   single-thread memcpy bandwidth between two 64 MiB buffers
 *            (bytes copied per second; best of several passes);
 *   memcpy-at BYTES THREADS
 *            the same at a working set of BYTES per buffer (capped at
 *            64 MiB: beyond it every size runs at memory speed), THREADS
 *            threads at once, each between its own two warm buffers; the
 *            aggregate bytes copied per second, best of several passes.
 *            A copied byte is one read and one write, so memory moves
 *            2 x this many bytes per second;
 *   tcp      one TCP stream over 127.0.0.1 (a forked sender writes 1 GiB in
 *            1 MiB writes; the receiver times from first to last byte);
 *   fresh    first touch: memset of 64 MiB of fresh anonymous pages (a page
 *            fault and the kernel's zeroing per page), best of 3: what a
 *            call pays per byte of a buffer it allocates afresh;
 *   tcp-par STREAMS
 *            STREAMS such streams at once, 256 MiB each (the N links of a
 *            ring all carry data at the same time): the aggregate rate from
 *            the first byte of any to the last byte of all.
 *
 * Prints machine-readable lines:   CEILING memcpy <GB/s>   CEILING tcp <GB/s>
 * CEILING memcpy-at <bytes> <threads> <GB/s>   CEILING tcp-par <streams> <GB/s>
 * CEILING fresh <GB/s>   (GB = 1e9 bytes).  Usage: ceiling [memcpy|tcp|fresh|
 * memcpy-at BYTES THREADS|tcp-par STREAMS]  (memcpy and tcp when no argument).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* First touch: memset of 64 MiB of fresh anonymous pages (each page a fault
 * and a zeroing by the kernel), best of 3; bytes per second. */
static int fresh_bw(void)
{
    const size_t n = (size_t)64 << 20;
    double best = 0;
    for (int i = 0; i < 3; i++) {
        char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            perror("ceiling: mmap");
            return 1;
        }
        double t0 = now_s();
        memset(p, 3, n);
        double dt = now_s() - t0;
        best = n / dt > best ? n / dt : best;
        munmap(p, n);
    }
    printf("CEILING fresh %.3f\n", best / 1e9);
    return 0;
}

struct copier {
    pthread_barrier_t *bar;
    char *a, *b;
    size_t n;
    int laps, passes;
    double *t; /* per pass: the start (thread 0) and the end, per thread */
};

static void *copy_laps(void *arg)
{
    struct copier *c = arg;
    memset(c->a, 1, c->n); /* first touch: fresh pages are not what we measure */
    memset(c->b, 2, c->n);
    for (int p = 0; p < c->passes; p++) {
        pthread_barrier_wait(c->bar);
        double t0 = now_s();
        for (int l = 0; l < c->laps; l++)
            memcpy((l & 1) ? c->a : c->b, (l & 1) ? c->b : c->a, c->n);
        c->t[2 * p] = t0;
        c->t[2 * p + 1] = now_s();
        pthread_barrier_wait(c->bar);
    }
    return NULL;
}

/* Aggregate memcpy bandwidth of `threads` threads at a working set of n bytes per buffer. */
static int memcpy_at(size_t req, int threads)
{
    enum { PASSES = 6, MAXT = 64 };
    size_t n = req > ((size_t)64 << 20) ? (size_t)64 << 20 : req < 4096 ? 4096 : req;
    if (threads < 1 || threads > MAXT) {
        fprintf(stderr, "ceiling: memcpy-at: threads must be 1..%d\n", MAXT);
        return 1;
    }
    /* enough laps that one pass moves >= 128 MiB per thread */
    int laps = (int)((((size_t)128 << 20) + n - 1) / n);
    pthread_barrier_t bar;
    struct copier c[MAXT];
    pthread_t th[MAXT];
    double t[MAXT][2 * PASSES];
    int rc = 0;
    for (int i = 0; i < threads; i++) {
        c[i] = (struct copier){&bar, malloc(n), malloc(n), n, laps, PASSES, t[i]};
        rc |= !c[i].a || !c[i].b;
    }
    if (rc)
        perror("ceiling: malloc");
    if (rc == 0) {
        pthread_barrier_init(&bar, NULL, (unsigned)threads);
        for (int i = 0; i < threads; i++)
            if (pthread_create(&th[i], NULL, copy_laps, &c[i]) != 0) {
                perror("ceiling: pthread_create"); /* the others would wait for it forever */
                exit(1);
            }
        for (int i = 0; i < threads; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&bar);
        double best = 0;
        for (int p = 1; p < PASSES; p++) { /* pass 0 warms up */
            double t0 = t[0][2 * p], t1 = t[0][2 * p + 1];
            for (int i = 1; i < threads; i++) {
                t0 = t[i][2 * p] < t0 ? t[i][2 * p] : t0;
                t1 = t[i][2 * p + 1] > t1 ? t[i][2 * p + 1] : t1;
            }
            double bw = (double)threads * laps * (double)n / (t1 - t0);
            best = bw > best ? bw : best;
        }
        printf("CEILING memcpy-at %zu %d %.2f\n", req, threads, best / 1e9);
    }
    for (int i = 0; i < threads; i++) {
        free(c[i].a);
        free(c[i].b);
    }
    return rc;
}

/* One loopback stream of total bytes: a forked sender, this process receives;
 * the times of the first and the last byte. */
static int stream(size_t total, double *first, double *last)
{
    const size_t chunk = (size_t)1 << 20;
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
    *first = t0;
    *last = t0 + dt;
    return 0;
}

static int tcp_bw(void)
{
    const size_t total = (size_t)1 << 30;
    double t0, t1;
    if (stream(total, &t0, &t1) != 0)
        return 1;
    printf("CEILING tcp %.2f\n", (double)total / (t1 - t0) / 1e9);
    return 0;
}

/* k loopback streams at once (k receiver processes, each with its sender),
 * 256 MiB each: the aggregate rate from the first byte to the last. */
static int tcp_par(int k)
{
    const size_t each = (size_t)256 << 20;
    int fd[2];
    if (k < 1 || k > 64 || pipe(fd) != 0) {
        fprintf(stderr, "ceiling: tcp-par: streams must be 1..64\n");
        return 1;
    }
    fflush(stdout);
    for (int i = 0; i < k; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("ceiling: fork");
            exit(1);
        }
        if (pid == 0) {
            double t[2];
            close(fd[0]);
            int rc = stream(each, &t[0], &t[1]);
            if (rc == 0 && write(fd[1], t, sizeof t) != (ssize_t)sizeof t)
                rc = 1;
            _exit(rc);
        }
    }
    close(fd[1]);
    double first = 0, last = 0, t[2];
    int got = 0, rc = 0;
    while (read(fd[0], t, sizeof t) == (ssize_t)sizeof t) {
        first = got == 0 || t[0] < first ? t[0] : first;
        last = got == 0 || t[1] > last ? t[1] : last;
        got++;
    }
    close(fd[0]);
    for (int i = 0; i < k; i++) {
        int st = 0;
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            rc = 1;
    }
    if (rc || got != k) {
        fprintf(stderr, "ceiling: tcp-par: a stream failed\n");
        return 1;
    }
    printf("CEILING tcp-par %d %.2f\n", k, (double)k * each / (last - first) / 1e9);
    return 0;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    int rc = 0;
    if (!strcmp(what, "fresh"))
        return fresh_bw();
    if (!strcmp(what, "tcp-par")) {
        if (argc != 3) {
            fprintf(stderr, "usage: ceiling tcp-par STREAMS\n");
            return 2;
        }
        return tcp_par(atoi(argv[2]));
    }
    if (!strcmp(what, "memcpy-at")) {
        if (argc != 4) {
            fprintf(stderr, "usage: ceiling memcpy-at BYTES THREADS\n");
            return 2;
        }
        return memcpy_at((size_t)strtoull(argv[2], NULL, 10), atoi(argv[3]));
    }
    if (!*what || !strcmp(what, "memcpy"))
        rc |= memcpy_bw();
    if (!*what || !strcmp(what, "tcp"))
        rc |= tcp_bw();
    return rc;
}
