/*
 * msg.c — the one encoder and the one decoder of every tracker message body
 * (msg.h).
 *
 * Each decoder reads with a latching struct rally__rbuf and accepts the body
 * only when every field was there and nothing is left over.
 */
#include "tracker/msg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *rally__msg_name(uint16_t type)
{
    switch (type) {
    case RALLY__T_REGISTER: return "REGISTER";
    case RALLY__T_ASSIGN: return "ASSIGN";
    case RALLY__T_READY: return "READY";
    case RALLY__T_GO: return "GO";
    case RALLY__T_PRINT: return "PRINT";
    case RALLY__T_ERROR: return "ERROR";
    case RALLY__T_ABORT: return "ABORT";
    case RALLY__T_SHUTDOWN: return "SHUTDOWN";
    case RALLY__T_BYE: return "BYE";
    case RALLY__T_RESET: return "RESET";
    case RALLY__T_REJOIN: return "REJOIN";
    case RALLY__T_HEARTBEAT: return "HEARTBEAT";
    case RALLY__T_LINK_FAILED: return "LINK_FAILED";
    case RALLY__T_INPUT: return "INPUT";
    case RALLY__T_INPUT_OK: return "INPUT_OK";
    case RALLY__T_GROW: return "GROW";
    case RALLY__T_GROW_READY: return "GROW_READY";
    case RALLY__T_REPORT:
        return "REPORT";
    case RALLY__T_IN_STEP: return "IN_STEP";
    default: return "an unknown type";
    }
}

/* A string cut to at most max bytes. */
static void put_cut(struct rally__wbuf *w, const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n > max)
        n = max;
    rally__w_u32(w, (uint32_t)n);
    rally__w_bytes(w, s, n);
}

/* 0 when r read everything, exactly. */
static int done(const struct rally__rbuf *r)
{
    return r->bad || r->pos != r->len ? -1 : 0;
}

void rally__msg_register_put(struct rally__wbuf *w, const struct rally__msg_register *m)
{
    rally__w_str(w, m->task_id);
    rally__w_u32(w, (uint32_t)m->want_rank);
    rally__w_u32(w, m->world_hint);
    rally__w_u16(w, m->listen_port);
    rally__w_str(w, m->listen_host);
    rally__w_str(w, m->processor);
    rally__w_str(w, m->domain);
}

int rally__msg_register_get(const unsigned char *b, size_t n, struct rally__msg_register *m)
{
    struct rally__rbuf r = {b, n, 0, 0};
    rally__r_str(&r, m->task_id, sizeof m->task_id);
    m->want_rank = (int32_t)rally__r_u32(&r);
    m->world_hint = rally__r_u32(&r);
    m->listen_port = rally__r_u16(&r);
    rally__r_str(&r, m->listen_host, sizeof m->listen_host);
    rally__r_str(&r, m->processor, sizeof m->processor);
    rally__r_str(&r, m->domain, sizeof m->domain);
    return done(&r);
}

void rally__msg_assign_head(struct rally__wbuf *w, int32_t rank, uint32_t world,
                            uint32_t incarnation)
{
    rally__w_u32(w, (uint32_t)rank);
    rally__w_u32(w, world);
    rally__w_u32(w, incarnation);
}

void rally__msg_book_entry(struct rally__wbuf *w, const char *host, uint16_t port,
                           uint32_t incarnation, const char *domain)
{
    rally__w_str(w, host);
    rally__w_u16(w, port);
    rally__w_u32(w, incarnation);
    rally__w_str(w, domain);
}

size_t rally__msg_book_entry_nbytes(const char *host, const char *domain)
{
    return 4 + strlen(host) + 2 + 4 + 4 + strlen(domain);
}

void rally__msg_assign_tail(struct rally__wbuf *w, uint32_t epoch, uint32_t members,
                            uint32_t flags)
{
    rally__w_u32(w, epoch);
    rally__w_u32(w, members);
    rally__w_u32(w, flags);
}

int rally__msg_assign_get(const unsigned char *b, size_t n, struct rally__msg_assign *m)
{
    struct rally__rbuf r = {b, n, 0, 0};
    m->peers = NULL;
    m->rank = (int32_t)rally__r_u32(&r);
    m->world = rally__r_u32(&r);
    m->incarnation = rally__r_u32(&r);
    if (r.bad || m->world < 1 || m->world > RALLY__WORLD_MAX || m->rank < 0 ||
        (uint32_t)m->rank >= m->world)
        return -1;
    /* every entry takes at least 14 bytes: a short body cannot ask for a big book */
    if ((n - r.pos) / 14 < m->world)
        return -3;
    struct rally__peer_addr *p = calloc(m->world, sizeof *p);
    if (p == NULL)
        return -2;
    for (uint32_t i = 0; i < m->world; i++) {
        rally__r_str(&r, p[i].host, sizeof p[i].host);
        p[i].port = rally__r_u16(&r);
        p[i].incarnation = rally__r_u32(&r);
        rally__r_str(&r, p[i].domain, sizeof p[i].domain);
    }
    m->epoch = rally__r_u32(&r);
    m->members = rally__r_u32(&r);
    m->flags = rally__r_u32(&r);
    if (done(&r) != 0) {
        free(p);
        return -3;
    }
    m->peers = p;
    return 0;
}

void rally__msg_u32_put(struct rally__wbuf *w, uint32_t v)
{
    rally__w_u32(w, v);
}

int rally__msg_u32_get(const unsigned char *b, size_t n, uint32_t *v)
{
    struct rally__rbuf r = {b, n, 0, 0};
    *v = rally__r_u32(&r);
    return done(&r);
}

void rally__msg_print_put(struct rally__wbuf *w, const char *msg)
{
    put_cut(w, msg, RALLY__PRINT_MAX);
}

int rally__msg_print_get(const unsigned char *b, size_t n, char *msg, size_t cap)
{
    struct rally__rbuf r = {b, n, 0, 0};
    rally__r_str(&r, msg, cap);
    return done(&r);
}

void rally__msg_fail_put(struct rally__wbuf *w, uint32_t code, const char *sentence)
{
    rally__w_u32(w, code);
    put_cut(w, sentence, RALLY__ERR_MSG_MAX - 1);
}

int rally__msg_fail_get(const unsigned char *b, size_t n, uint32_t *code, char *sentence,
                        size_t cap)
{
    struct rally__rbuf r = {b, n, 0, 0};
    *code = rally__r_u32(&r);
    rally__r_str(&r, sentence, cap);
    return done(&r);
}

void rally__msg_reset_put(struct rally__wbuf *w, uint32_t epoch, const char *reason)
{
    rally__w_u32(w, epoch);
    put_cut(w, reason, RALLY__REASON_MAX - 1);
}

int rally__msg_reset_get(const unsigned char *b, size_t n, uint32_t *epoch, char *reason,
                         size_t cap)
{
    struct rally__rbuf r = {b, n, 0, 0};
    *epoch = rally__r_u32(&r);
    rally__r_str(&r, reason, cap);
    return done(&r);
}

void rally__msg_rejoin_put(struct rally__wbuf *w, uint32_t epoch, uint64_t position,
                           uint32_t version)
{
    rally__w_u32(w, epoch);
    rally__w_u64(w, position);
    rally__w_u32(w, version);
}

int rally__msg_rejoin_get(const unsigned char *b, size_t n, uint32_t *epoch, uint64_t *position,
                          uint32_t *version)
{
    struct rally__rbuf r = {b, n, 0, 0};
    *epoch = rally__r_u32(&r);
    *position = rally__r_u64(&r);
    *version = rally__r_u32(&r);
    return done(&r);
}

void rally__msg_link_failed_put(struct rally__wbuf *w, uint32_t epoch, const char *sentence)
{
    rally__msg_fail_put(w, epoch, sentence);
}

int rally__msg_link_failed_get(const unsigned char *b, size_t n, uint32_t *epoch, char *sentence,
                               size_t cap)
{
    return rally__msg_fail_get(b, n, epoch, sentence, cap);
}

void rally__msg_input_put(struct rally__wbuf *w, const char *scheme, uint64_t fingerprint)
{
    put_cut(w, scheme, RALLY__SCHEME_MAX - 1);
    rally__w_u64(w, fingerprint);
}

int rally__msg_input_get(const unsigned char *b, size_t n, char *scheme, size_t cap,
                         uint64_t *fingerprint)
{
    struct rally__rbuf r = {b, n, 0, 0};
    char s[RALLY__SCHEME_MAX];
    rally__r_str(&r, s, sizeof s);
    size_t len = r.bad ? 0 : r.pos - 4; /* the declared length: no NUL inside */
    *fingerprint = rally__r_u64(&r);
    if (done(&r) != 0 || s[0] == '\0' || strlen(s) != len || len >= cap)
        return -1;
    memcpy(scheme, s, strlen(s) + 1);
    return 0;
}

void rally__msg_heartbeat_put(struct rally__wbuf *w, const struct rally__msg_heartbeat *m)
{
    rally__w_u64(w, m->position);
    rally__w_u8(w, m->waiting ? 1 : 0);
    rally__w_u64(w, m->for_ms);
    put_cut(w, m->what, RALLY__WHAT_MAX - 1);
    rally__w_u64(w, m->calls);
    rally__w_u64(w, m->nbytes);
    rally__w_u32(w, m->win);
    rally__w_u64(w, m->win_wait_ms);
    rally__w_u64(w, m->win_span_ms);
}

int rally__msg_heartbeat_get(const unsigned char *b, size_t n, struct rally__msg_heartbeat *m)
{
    memset(m, 0, sizeof *m);
    if (n == 0)
        return 0;
    struct rally__rbuf r = {b, n, 0, 0};
    m->has_position = 1;
    m->position = rally__r_u64(&r);
    uint8_t waiting = rally__r_u8(&r);
    m->waiting = waiting;
    m->for_ms = rally__r_u64(&r);
    rally__r_str(&r, m->what, sizeof m->what);
    if (!r.bad && r.pos < r.len) { /* the counters, from a worker that sends them */
        m->calls = rally__r_u64(&r);
        m->nbytes = rally__r_u64(&r);
    }
    if (!r.bad && r.pos < r.len) { /* the straggler window, from a worker that sends it */
        m->win = rally__r_u32(&r);
        m->win_wait_ms = rally__r_u64(&r);
        m->win_span_ms = rally__r_u64(&r);
    }
    return waiting > 1 ? -1 : done(&r);
}

void rally__msg_report_put(struct rally__wbuf *w, const struct rally__msg_report *m)
{
    uint64_t bits;
    memcpy(&bits, &m->value, sizeof bits);
    rally__w_u8(w, (uint8_t)m->kind);
    rally__w_u64(w, m->version);
    rally__w_u64(w, bits);
    rally__w_u64(w, m->nbytes);
    rally__w_str(w, m->key);
    put_cut(w, m->text, RALLY__REPORT_TEXT_MAX - 1);
}

int rally__msg_report_get(const unsigned char *b, size_t n, struct rally__msg_report *m)
{
    struct rally__rbuf r = {b, n, 0, 0};
    m->kind = rally__r_u8(&r);
    m->version = rally__r_u64(&r);
    uint64_t bits = rally__r_u64(&r);
    memcpy(&m->value, &bits, sizeof bits);
    m->nbytes = rally__r_u64(&r);
    size_t at = r.pos;
    rally__r_str(&r, m->key, sizeof m->key);
    size_t keylen = r.bad ? 0 : r.pos - at - 4; /* the declared length: no NUL inside */
    rally__r_str(&r, m->text, sizeof m->text);
    if (done(&r) != 0 || m->kind < RALLY__REPORT_VALUE || m->kind > RALLY__REPORT_SNAPSHOT_VOID ||
        !isfinite(m->value) || strlen(m->key) != keylen)
        return -1;
    if (m->kind == RALLY__REPORT_VALUE && !rally__report_key_ok(m->key))
        return -1;
    return 0;
}

void rally__msg_empty_put(struct rally__wbuf *w)
{
    (void)w;
}

int rally__msg_empty_get(const unsigned char *b, size_t n)
{
    (void)b;
    return n == 0 ? 0 : -1;
}
