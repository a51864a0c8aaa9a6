/*
 * flood.c — a stranger that floods a port with idle connections, for the
 * tracker's tests: it keeps N connections open to HOST:PORT (none sends a
 * byte), opens a new one for each the server closes, and prints
 * "flood: N open" once all N were open at the same time.  It runs until
 * killed.
 *
 *   flood HOST PORT N
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static struct sockaddr_in addr;

/* A connection being opened (non-blocking), or -1. */
static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: flood HOST PORT N\n");
        return 2;
    }
    int n = atoi(argv[3]);
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)atoi(argv[2]));
    if (n < 1 || inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) {
        fprintf(stderr, "flood: bad arguments\n");
        return 2;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n + 16) {
        rl.rlim_cur = (rlim_t)n + 16 < rl.rlim_max ? (rlim_t)n + 16 : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    struct pollfd *p = calloc((size_t)n, sizeof *p);
    if (p == NULL)
        return 1;
    for (int i = 0; i < n; i++)
        p[i] = (struct pollfd){.fd = dial(), .events = POLLIN};
    int said = 0;
    for (;;) {
        int open = 0;
        for (int i = 0; i < n; i++)
            open += p[i].fd >= 0;
        if (open == n && !said) {
            printf("flood: %d open\n", n);
            fflush(stdout);
            said = 1;
        }
        poll(p, (nfds_t)n, 50);
        for (int i = 0; i < n; i++) {
            char b[256];
            if (p[i].fd >= 0 && p[i].revents != 0 && recv(p[i].fd, b, sizeof b, 0) > 0)
                continue; /* bytes from the server: read and ignored */
            if (p[i].fd >= 0 && p[i].revents == 0)
                continue;
            if (p[i].fd >= 0)
                close(p[i].fd);
            p[i].fd = dial(); /* closed (or never opened): again */
        }
    }
}
