/*
 * link.c — waiting on links and handles: spin briefly (in memory where a
 * link can be read there), then block in poll().
 */
#include "net/link.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <sys/resource.h>

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

/* A pause in a busy loop: lets the sibling hyperthread run and saves power. */
static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* The spin's pace.  A turn (a look at the links in memory and a pause)
 * takes some tens of nanoseconds: the clock is read every SPIN_TURNS of
 * them (a check).  The links' descriptors (hang-ups) and the alarm are
 * polled every SPIN_POLL_US, which nothing but a failure needs sooner.  A
 * rank alone on its core yields only on evidence that the peer is not
 * running: yield_checks checks in a row without news.  A yield that the
 * peer's bytes followed at once says the peer ran in our time, on our core
 * (an unpinned pair often shares one while anything else runs), and the
 * next spin yields at its first check; a yield that nothing followed
 * doubles the checks, up to SPIN_YIELD_CHECKS, so that a rank that has its
 * core does not give it away (a whole time slice to whatever else wants
 * it) in the middle of a message.  SPIN_MOVE_AFTER such yields in a row,
 * and the pair, which has cores enough, takes turns on one: this thread
 * moves to another core (move_off), as a bound OpenMPI rank never has to.
 *
 * A spin alone's yield is also a probe: one that handed the core to
 * another thread (an involuntary switch, getrusage) says the machine is
 * crowded, where a yield costs the yielder its place: the scheduler (EEVDF)
 * pushes its deadline a slice further at each, so a spin of yields ends
 * with the thread behind every other on its core when the peer's bytes
 * come, where a thread that slept is woken at once.  Measured here at load
 * 30 on 2 cores: a numpy training step with one allreduce took 3-11 ms
 * spinning 50 us with yields against 0.6-1.4 ms blocking at once.  So the
 * wait that sees it blocks at once, and for CROWDED_US after it every wait
 * spins spin_us without a yield (the replies of a collective already under
 * way come within it: a wait that gives its core up sooner makes the peer's
 * next message a wake-up, 8 us for an 8-byte allreduce at N = 2 where the
 * spin takes 0.4), then blocks.  Links that share their cores with the
 * job's own ranks (N > cores) yield as before: there the yield hands the
 * core to the peer that needs it. */
enum { SPIN_TURNS = 64, SPIN_POLL_US = 100, SPIN_YIELD_CHECKS = 16, SPIN_MOVE_AFTER = 8 };
enum { CROWDED_US = 50000 };
static _Thread_local int yield_checks = SPIN_YIELD_CHECKS;
static _Thread_local int shared_streak; /* yields in a row that the peer's bytes followed */
static _Thread_local int64_t crowded_until; /* us: a yield handed our core away lately */

_Thread_local struct rally__wait_counts rally__wait_counts;

static int64_t clock_us(void)
{
    rally__wait_counts.clock_reads++;
    return rally__now_us();
}

/* The times another thread took this one's core so far. */
static long switched_out(void)
{
    struct rusage u;
    return getrusage(RUSAGE_THREAD, &u) == 0 ? u.ru_nivcsw : 0;
}

/* Yields the core; 1 when another thread ran meanwhile (the machine is
 * crowded, and crowded_until says so for a while). */
static int yield_crowded(int64_t now)
{
    long before = switched_out();
    rally__wait_counts.yields++;
    sched_yield();
    if (switched_out() == before)
        return 0;
    rally__wait_counts.crowded++;
    crowded_until = now + CROWDED_US;
    return 1;
}

/* Moves this thread off the core it is on, to another its affinity allows,
 * and gives the affinity back as it was: the scheduler keeps it where it
 * went while that core is no busier, and any later choice stays its own.
 * A thread allowed one core stays there. */
static void move_off(void)
{
    cpu_set_t all, others;
    int cpu = sched_getcpu();
    if (cpu < 0 || sched_getaffinity(0, sizeof all, &all) != 0 || CPU_COUNT(&all) < 2 ||
        !CPU_ISSET(cpu, &all))
        return;
    others = all;
    CPU_CLR(cpu, &others);
    rally__wait_counts.moves++;
    if (sched_setaffinity(0, sizeof others, &others) == 0)
        sched_setaffinity(0, sizeof all, &all);
}

/* A link polled in memory: where its handles sit in the pollfd array. */
struct mem {
    struct rally__link *l;
    int want, first, n;
};

static int mem_ready(const struct mem *m, int nm)
{
    for (int i = 0; i < nm; i++)
        if (m[i].l->ops->ready(m[i].l, m[i].want))
            return 1;
    return 0;
}

/* Tells each memory link which of its handles fired (p[].revents). */
static void mem_woken(const struct mem *m, int nm, const struct pollfd *p)
{
    for (int i = 0; i < nm; i++) {
        unsigned fired = 0;
        for (int j = 0; j < m[i].n; j++)
            fired |= p[m[i].first + j].revents != 0 ? 1u << j : 0;
        m[i].l->ops->woken(m[i].l, fired);
    }
}

int rally__link_wait(const struct rally__interest *w, int n, const struct rally__handle *alarm,
                     int64_t spin_us, int64_t spin_alone_us, int64_t deadline, int *alarmed,
                     struct rally__err *e)
{
    struct pollfd p[RALLY__WAIT_MAX * RALLY__LINK_HANDLES + 1];
    struct mem m[RALLY__WAIT_MAX];
    int np = 0, nm = 0, nlinks = 0, hot = 0; /* hot: some link needs poll() to spin */
    int yield = 0;                           /* some peer may share our core */
    for (int i = 0; i < n && nlinks < RALLY__WAIT_MAX; i++) {
        if (w[i].want == 0)
            continue;
        struct rally__link *l = w[i].l;
        struct rally__handle h[RALLY__LINK_HANDLES];
        int k = l->ops->handles(l, w[i].want, h);
        if (l->ops->ready != NULL)
            m[nm++] = (struct mem){l, w[i].want, np, k};
        else
            hot = 1;
        yield |= !l->spin_alone;
        for (int j = 0; j < k; j++)
            p[np++] = (struct pollfd){.fd = h[j].fd, .events = events(h[j].want)};
        nlinks++;
    }
    int a = -1;
    if (!rally__handle_is_none(alarm)) {
        a = np;
        p[np++] = (struct pollfd){.fd = alarm->fd, .events = events(alarm->want)};
    }
    *alarmed = 0;
    int k = 0, err = 0;
    if (mem_ready(m, nm))
        return 1; /* already there: no clock read, no system call */
    if (spin_us > 0) {
        int64_t now = clock_us();
        /* pure: only memory is looked at and nobody needs our core, so the
         * clock, the poll and the yield come every SPIN_TURNS turns, not on
         * each: a turn is a look and a pause, and the clock read cost as
         * much as the rest of an 8-byte allreduce */
        int pure = !hot && !yield && nlinks > 0;
        int crowded = pure && now < crowded_until; /* spin_us, no yield, then block */
        if (!crowded && !yield && nlinks > 0 && spin_alone_us > spin_us)
            spin_us = spin_alone_us; /* nobody needs our core: wait as OpenMPI does */
        int64_t until = now + spin_us, poll_at = now + SPIN_POLL_US;
        if (deadline != RALLY__NEVER && until > deadline * 1000)
            until = deadline * 1000; /* a long spin ends at the deadline too */
        int quiet = 0, yielded = 0; /* checks without news; a yield, no check since */
        for (unsigned turn = 1;; turn++) {
            if (mem_ready(m, nm)) {
                if (yielded) {
                    yield_checks = 1;
                    if (++shared_streak == SPIN_MOVE_AFTER) {
                        shared_streak = 0;
                        move_off();
                    }
                }
                return 1;
            }
            if (pure && turn % SPIN_TURNS != 0) {
                relax();
                continue;
            }
            if (yielded) {
                if (yield_checks < SPIN_YIELD_CHECKS)
                    yield_checks *= 2;
                shared_streak = 0;
            }
            yielded = 0;
            now = clock_us();
            if (hot || now >= poll_at) {
                rally__wait_counts.polls++;
                if ((k = poll(p, (nfds_t)np, 0)) != 0) {
                    err = errno;
                    break;
                }
                poll_at = now + SPIN_POLL_US;
            }
            if (now >= until)
                break;
            if (crowded) {
                relax();
            } else if (!pure) { /* the peer may be waiting for this very core */
                rally__wait_counts.yields++;
                sched_yield();
            } else if (++quiet >= yield_checks) {
                /* the scheduler can put a pair on one core even when there
                 * are enough */
                if (yield_crowded(now) && !mem_ready(m, nm))
                    break;
                quiet = 0;
                yielded = 1;
            } else {
                relax();
            }
        }
    }
    if (k == 0) {
        int armed = 0;
        while (armed < nm && !m[armed].l->ops->arm(m[armed].l, m[armed].want))
            armed++;
        if (armed == nm) {
            rally__wait_counts.polls++;
            k = poll(p, (nfds_t)np, rally__ms_left(deadline));
            err = errno;
        } else { /* a link turned ready while the others were armed */
            armed++;
            k = 1;
        }
        mem_woken(m, armed, p);
    } else if (k > 0) {
        mem_woken(m, nm, p);
    }
    if (k < 0 && err != EINTR) /* err: woken() may have made system calls since */
        return rally__fail_errno(e, RALLY_ESYS, err, "poll failed"), -1;
    if (k == 0)
        return 0;
    *alarmed = a >= 0 && p[a].revents != 0;
    return 1;
}
