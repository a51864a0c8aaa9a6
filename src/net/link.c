/*
 * link.c — waiting on links and handles: spin briefly, then block in poll().
 */
#include "net/link.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>

#include "util/clock.h"

void rally__link_close(struct rally__link *l)
{
    if (l == NULL || l->ops == NULL)
        return;
    l->ops->close(l);
    l->ops = NULL;
}

struct rally__handle rally__handle_fd(int fd)
{
    return (struct rally__handle){fd, fd >= 0 ? RALLY__WANT_IN : 0};
}

struct rally__handle rally__handle_none(void)
{
    return (struct rally__handle){-1, 0};
}

int rally__handle_is_none(const struct rally__handle *h)
{
    return h == NULL || h->fd < 0;
}

static short events(int want)
{
    return (short)(((want & RALLY__WANT_IN) ? POLLIN : 0) |
                   ((want & RALLY__WANT_OUT) ? POLLOUT : 0));
}

int rally__link_wait(const struct rally__interest *w, int n, const struct rally__handle *alarm,
                     int64_t spin_us, int64_t deadline, int *alarmed, struct rally__err *e)
{
    struct pollfd p[RALLY__WAIT_MAX + 1];
    int np = 0;
    for (int i = 0; i < n && np < RALLY__WAIT_MAX; i++) {
        if (w[i].want == 0)
            continue;
        struct rally__handle h = w[i].l->ops->handle(w[i].l, w[i].want);
        p[np++] = (struct pollfd){.fd = h.fd, .events = events(h.want)};
    }
    int a = -1;
    if (!rally__handle_is_none(alarm)) {
        a = np;
        p[np++] = (struct pollfd){.fd = alarm->fd, .events = events(alarm->want)};
    }
    int k = 0;
    if (spin_us > 0) {
        int64_t until = rally__now_us() + spin_us;
        while ((k = poll(p, (nfds_t)np, 0)) == 0 && rally__now_us() < until)
            sched_yield();
    }
    if (k == 0)
        k = poll(p, (nfds_t)np, rally__ms_left(deadline));
    if (k < 0 && errno != EINTR)
        return rally__fail_errno(e, RALLY_ESYS, errno, "poll failed"), -1;
    if (k == 0)
        return 0;
    *alarmed = a >= 0 && p[a].revents != 0;
    return 1;
}
