/*
 * fuzz_msg.c — libFuzzer target for the tracker's message decoders
 * (src/tracker/msg.c) and the job state machine behind them
 * (src/tracker/job*.c); tests/fuzz/fuzz.cmake builds it.
 *
 * The first byte chooses the mode.  Below 0x80 the rest is one frame body,
 * decoded as message type 16 + byte % 18 (REGISTER to REPORT): a decoder must never crash or
 * leak, and a body it accepts must encode again into a body that decodes to
 * the same values (strings compare up to their first NUL, which is where
 * the encoder stops).  From 0x80 up the rest is a script for a job of 1 to
 * 4 workers: each step is (member byte, type byte, length byte, body), fed
 * as frames, opens, losses, deaths and ticks; the job must never crash, and
 * every action it asks for must be well formed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/frame.h"
#include "tracker/job.h"
#include "tracker/msg.h"
#include "tracker/proto.h"

static void die(const char *what)
{
    fprintf(stderr, "fuzz_msg: %s\n", what);
    abort();
}

static unsigned char out[RALLY__FRAME_MAX];

/* Decodes body as type; re-encodes what was accepted and checks it. */
static void one(uint16_t type, const unsigned char *b, size_t n)
{
    struct rally__wbuf w = {out, 0, sizeof out, 0};
    switch (type) {
    case RALLY__T_REGISTER: {
        struct rally__msg_register m, m2;
        if (rally__msg_register_get(b, n, &m) != 0)
            return;
        rally__msg_register_put(&w, &m);
        if (w.bad || w.len > n || rally__msg_register_get(out, w.len, &m2) != 0 ||
            strcmp(m.task_id, m2.task_id) || strcmp(m.listen_host, m2.listen_host) ||
            strcmp(m.processor, m2.processor) || strcmp(m.domain, m2.domain) ||
            m.want_rank != m2.want_rank ||
            m.world_hint != m2.world_hint || m.listen_port != m2.listen_port)
            die("REGISTER does not survive a round trip");
        return;
    }
    case RALLY__T_ASSIGN: {
        struct rally__msg_assign m, m2;
        int k = rally__msg_assign_get(b, n, &m);
        if (k != 0) {
            if (m.peers != NULL)
                die("a refused ASSIGN left a book");
            return;
        }
        rally__msg_assign_head(&w, m.rank, m.world, m.incarnation);
        for (uint32_t i = 0; i < m.world; i++)
            rally__msg_book_entry(&w, m.peers[i].host, (uint16_t)m.peers[i].port,
                                  m.peers[i].incarnation, m.peers[i].domain);
        rally__msg_assign_tail(&w, m.epoch, m.members, m.flags);
        if (w.bad || w.len > n || rally__msg_assign_get(out, w.len, &m2) != 0)
            die("ASSIGN does not survive a round trip");
        if (m.rank != m2.rank || m.world != m2.world || m.epoch != m2.epoch ||
            m.incarnation != m2.incarnation)
            die("ASSIGN's head changed in a round trip");
        for (uint32_t i = 0; i < m.world; i++)
            if (strcmp(m.peers[i].host, m2.peers[i].host) ||
                strcmp(m.peers[i].domain, m2.peers[i].domain) || m.peers[i].port != m2.peers[i].port ||
                m.peers[i].incarnation != m2.peers[i].incarnation)
                die("ASSIGN's book changed in a round trip");
        free(m.peers);
        free(m2.peers);
        return;
    }
    case RALLY__T_PRINT: {
        static char s[RALLY__PRINT_MAX + 1], s2[RALLY__PRINT_MAX + 1];
        if (rally__msg_print_get(b, n, s, sizeof s) != 0)
            return;
        rally__msg_print_put(&w, s);
        if (w.bad || rally__msg_print_get(out, w.len, s2, sizeof s2) != 0 || strcmp(s, s2))
            die("PRINT does not survive a round trip");
        return;
    }
    case RALLY__T_ERROR:
    case RALLY__T_ABORT:
    case RALLY__T_LINK_FAILED: {
        char s[RALLY__ERR_MSG_MAX], s2[RALLY__ERR_MSG_MAX];
        uint32_t x, x2;
        if (rally__msg_fail_get(b, n, &x, s, sizeof s) != 0)
            return;
        if (type == RALLY__T_LINK_FAILED)
            rally__msg_link_failed_put(&w, x, s);
        else
            rally__msg_fail_put(&w, x, s);
        if (w.bad || rally__msg_link_failed_get(out, w.len, &x2, s2, sizeof s2) != 0 || x != x2 ||
            strcmp(s, s2))
            die("a sentence does not survive a round trip");
        return;
    }
    case RALLY__T_RESET: {
        char s[RALLY__REASON_MAX], s2[RALLY__REASON_MAX];
        uint32_t x, x2;
        if (rally__msg_reset_get(b, n, &x, s, sizeof s) != 0)
            return;
        rally__msg_reset_put(&w, x, s);
        if (w.bad || rally__msg_reset_get(out, w.len, &x2, s2, sizeof s2) != 0 || x != x2 ||
            strcmp(s, s2))
            die("RESET does not survive a round trip");
        return;
    }
    case RALLY__T_REJOIN: {
        uint32_t e, v, e2, v2;
        uint64_t p, p2;
        if (rally__msg_rejoin_get(b, n, &e, &p, &v) != 0)
            return;
        rally__msg_rejoin_put(&w, e, p, v);
        if (w.bad || w.len != n || memcmp(out, b, n) != 0 ||
            rally__msg_rejoin_get(out, w.len, &e2, &p2, &v2) != 0)
            die("REJOIN does not survive a round trip");
        return;
    }
    case RALLY__T_INPUT: {
        char s[RALLY__SCHEME_MAX], s2[RALLY__SCHEME_MAX];
        uint64_t f, f2;
        if (rally__msg_input_get(b, n, s, sizeof s, &f) != 0)
            return;
        rally__msg_input_put(&w, s, f);
        if (w.bad || w.len != n || memcmp(out, b, n) != 0 ||
            rally__msg_input_get(out, w.len, s2, sizeof s2, &f2) != 0 || f != f2 ||
            strcmp(s, s2))
            die("INPUT does not survive a round trip");
        return;
    }
    case RALLY__T_HEARTBEAT: {
        struct rally__msg_heartbeat h, h2;
        if (rally__msg_heartbeat_get(b, n, &h) != 0)
            return;
        if (h.has_position)
            rally__msg_heartbeat_put(&w, &h);
        if (w.bad || rally__msg_heartbeat_get(out, w.len, &h2) != 0 ||
            h.has_position != h2.has_position || h.position != h2.position ||
            h.waiting != h2.waiting || h.for_ms != h2.for_ms || strcmp(h.what, h2.what) ||
            h.calls != h2.calls || h.nbytes != h2.nbytes)
            die("HEARTBEAT does not survive a round trip");
        return;
    }
    case RALLY__T_REPORT: {
        static struct rally__msg_report r, r2;
        if (rally__msg_report_get(b, n, &r) != 0)
            return;
        rally__msg_report_put(&w, &r);
        if (w.bad || rally__msg_report_get(out, w.len, &r2) != 0 || r.kind != r2.kind ||
            r.version != r2.version || memcmp(&r.value, &r2.value, sizeof r.value) != 0 ||
            r.nbytes != r2.nbytes || strcmp(r.key, r2.key) || strcmp(r.text, r2.text))
            die("REPORT does not survive a round trip");
        return;
    }
    default:
        if (rally__msg_empty_get(b, n) == 0) {
            rally__msg_empty_put(&w);
            if (n != 0 || w.len != 0)
                die("an empty message is not empty");
        }
        return;
    }
}

static void check_actions(struct rally__job *j, struct rally__job_member *m, size_t nm)
{
    const struct rally__job_act *a;
    size_t n = rally__job_actions(j, &a);
    for (size_t i = 0; i < n; i++) {
        if (a[i].m != NULL && (a[i].m < m || a[i].m >= m + nm))
            die("an action names a member the job was never given");
        if (a[i].kind == RALLY__JOB_SEND && a[i].nbytes > 0 && a[i].body == NULL)
            die("a SEND without its body");
        if ((a[i].kind == RALLY__JOB_EVENT || a[i].kind == RALLY__JOB_PRINT) &&
            (a[i].ev.text == NULL || a[i].ev.task_id == NULL || a[i].ev.key == NULL))
            die("an event without its text");
    }
}

/* A job driven by the script in b. */
static void script(unsigned ctl, const unsigned char *b, size_t n)
{
    enum { NM = 8 };
    static struct rally__job_member m[NM];
    struct rally__job *j;
    struct rally__err e = {0, ""};
    struct rally__job_opts o = {1 + (int)(ctl & 3), (ctl & 4) ? 500 : 0};
    int64_t now = 1000000;
    memset(m, 0, sizeof m);
    if (rally__job_new(&j, &o, now * 1000, &e) != RALLY_OK)
        die("no job");
    rally__job_set_heartbeat_timeout(j, (ctl & 8) ? 300 : 0);
    rally__job_set_recovery(j, !(ctl & 16));
    size_t pos = 0;
    while (pos + 3 <= n) {
        unsigned who = b[pos] % NM, op = b[pos] / NM, type = b[pos + 1], len = b[pos + 2];
        pos += 3;
        if (len > n - pos)
            len = (unsigned)(n - pos);
        struct rally__job_ev ev = {.now_us = now * 1000, .m = &m[who]};
        switch (op % 8) {
        case 0: /* open: a fresh connection in slot who, unless one lives there */
            if (m[who].owner != NULL)
                goto frame;
            memset(&m[who], 0, sizeof m[who]); /* the owner's fresh member */
            m[who].owner = &m[who];
            snprintf(m[who].peer, sizeof m[who].peer, "10.0.0.%u", who);
            snprintf(m[who].what, sizeof m[who].what, "connection %u", who);
            ev.kind = RALLY__JOB_EV_OPEN;
            break;
        case 1: ev.kind = RALLY__JOB_EV_LOST; ev.text = "lost"; break;
        case 2: ev.kind = RALLY__JOB_EV_DIED; ev.rank = (int)type % 5 - 1; ev.text = "died"; break;
        case 3: now += type * 10; ev.kind = RALLY__JOB_EV_TICK; break;
        default:
        frame:
            ev.kind = RALLY__JOB_EV_FRAME;
            ev.type = (uint16_t)(RALLY__T_REGISTER + type % 18);
            ev.body = b + pos;
            ev.nbytes = len;
            pos += len;
            break;
        }
        if (m[who].owner == NULL && ev.kind != RALLY__JOB_EV_DIED && ev.kind != RALLY__JOB_EV_TICK)
            continue; /* the owner never reports a connection the job was not given */
        rally__job_step(j, &ev);
        check_actions(j, m, NM);
        /* the owner closes what the job lets go of: the slot is free again */
        const struct rally__job_act *a;
        size_t na = rally__job_actions(j, &a);
        for (size_t i = 0; i < na; i++)
            if (a[i].kind == RALLY__JOB_CLOSE || a[i].kind == RALLY__JOB_REFUSE)
                a[i].m->owner = NULL;
        for (unsigned k = 0; k < NM; k++) /* a member the owner closed: lost to the job */
            if (m[k].owner == NULL && m[k].state != 0)
                die("a member the job let go of is still on its books");
    }
    rally__job_free(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned ctl = data[0];
    if (ctl < 0x80)
        one((uint16_t)(RALLY__T_REGISTER + ctl % 18), data + 1, size - 1);
    else
        script(ctl, data + 1, size - 1);
    return 0;
}
