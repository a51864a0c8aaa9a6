/*
 * auth.c — the job's secret, and the challenge-response handshake: one pure
 * step function for the accepting side, blocking wrappers over a socket.
 */
#include "net/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/frame.h"
#include "util/wire.h"

#define HELLO_NBYTES (4 + 2 + 2 + 8 + 4 + 4 + RALLY__NONCE_NBYTES)
#define CHAL_SANS_MAC (2 + 2 + 4 + 4 + RALLY__NONCE_NBYTES)
#define CHAL_NBYTES (CHAL_SANS_MAC + RALLY__MAC_NBYTES)

enum { S_HELLO, S_PROOF, S_DONE, S_FAILED };

static int sodium_ready(struct rally__err *e)
{
    if (sodium_init() < 0)
        return rally__fail(e, RALLY_ESYS, "libsodium failed to initialise");
    return RALLY_OK;
}

static void mac(unsigned char out[RALLY__MAC_NBYTES], const struct rally__secret *s,
                const char *label, const unsigned char *a, size_t an)
{
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, s->key, sizeof s->key);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)label, strlen(label));
    crypto_auth_hmacsha256_update(&st, a, an);
    crypto_auth_hmacsha256_final(&st, out);
}

int rally__secret_create(const char *path, struct rally__secret *s, struct rally__err *e)
{
    if (sodium_ready(e) != RALLY_OK)
        return e->code;
    struct rally__secret t;
    randombytes_buf(&t.job_id, sizeof t.job_id);
    randombytes_buf(t.key, sizeof t.key);
    char hex[2 * RALLY__KEY_NBYTES + 1];
    sodium_bin2hex(hex, sizeof hex, t.key, sizeof t.key);
    char line[160];
    int n = snprintf(line, sizeof line, "rally-secret 1 %016" PRIx64 " %s\n", t.job_id, hex);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return rally__fail_errno(e, RALLY_ESYS, errno, "cannot create secret file %s", path);
    ssize_t w = write(fd, line, (size_t)n);
    int err = errno;
    close(fd);
    sodium_memzero(line, sizeof line);
    if (w != n)
        return rally__fail_errno(e, RALLY_ESYS, err, "cannot write secret file %s", path);
    *s = t;
    return RALLY_OK;
}

int rally__secret_load(const char *path, struct rally__secret *s, struct rally__err *e)
{
    if (sodium_ready(e) != RALLY_OK)
        return e->code;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rally__fail_errno(e, RALLY_EAUTH, errno, "cannot open the job's secret file %s", path);
    struct stat st;
    char line[200];
    ssize_t n = -1;
    int mine = fstat(fd, &st) == 0 && st.st_uid == geteuid();
    if (mine && (st.st_mode & 077) == 0)
        n = read(fd, line, sizeof line - 1);
    close(fd);
    if (!mine)
        return rally__fail(e, RALLY_EAUTH,
                           "secret file %s must be owned by the user who reads it (uid %u), "
                           "not uid %u",
                           path, (unsigned)geteuid(), (unsigned)st.st_uid);
    if (n < 0)
        return rally__fail(e, RALLY_EAUTH,
                           "secret file %s must be readable by its owner only (chmod 600)", path);
    line[n] = '\0';
    struct rally__secret t;
    char hex[2 * RALLY__KEY_NBYTES + 2];
    unsigned v = 0;
    size_t klen = 0;
    if (sscanf(line, "rally-secret %u %16" SCNx64 " %65s", &v, &t.job_id, hex) != 3 || v != 1 ||
        sodium_hex2bin(t.key, sizeof t.key, hex, strlen(hex), NULL, &klen, NULL) != 0 ||
        klen != sizeof t.key)
        return rally__fail(e, RALLY_EAUTH, "secret file %s is not a rally secret (version 1)", path);
    sodium_memzero(line, sizeof line);
    *s = t;
    return RALLY_OK;
}

size_t rally__auth_refusal(unsigned char *out, size_t cap, int code, const char *reason)
{
    struct rally__wbuf w = {out, 0, cap, 0};
    rally__w_u32(&w, (uint32_t)code);
    size_t n = strlen(reason);
    if (n > cap - 8)
        n = cap - 8;
    rally__w_u32(&w, (uint32_t)n);
    rally__w_bytes(&w, reason, n);
    return w.len;
}

/* Reads a REFUSE body into e. */
static int refused(const unsigned char *body, size_t n, const char *what, struct rally__err *e)
{
    struct rally__rbuf r = {body, n, 0, 0};
    int code = (int)rally__r_u32(&r);
    char reason[RALLY__ERR_MSG_MAX - 64];
    rally__r_str(&r, reason, sizeof reason);
    if (r.bad || code <= 0 || code > RALLY_ESTATE)
        return rally__fail(e, RALLY_EAUTH, "%s refused the connection", what);
    return rally__fail(e, code, "%s refused the connection: %s", what, reason);
}

void rally__auth_srv_init(struct rally__auth_srv *a, const struct rally__secret *s,
                          const struct rally__ident *me)
{
    memset(a, 0, sizeof *a);
    a->secret = s;
    a->me = *me;
    a->state = S_HELLO;
}

static int refuse(struct rally__auth_srv *a, uint16_t *out_type, unsigned char *out,
                  size_t *out_nbytes, struct rally__err *e)
{
    a->state = S_FAILED;
    *out_type = RALLY__F_REFUSE;
    *out_nbytes = rally__auth_refusal(out, RALLY__AUTH_OUT_MAX, e->code, e->msg);
    return -1;
}

int rally__auth_srv_step(struct rally__auth_srv *a, uint16_t type, const unsigned char *body,
                         size_t nbytes, uint16_t *out_type, unsigned char *out, size_t *out_nbytes,
                         struct rally__err *e)
{
    if (a->state == S_HELLO) {
        if (type != RALLY__F_HELLO || nbytes != HELLO_NBYTES) {
            rally__fail(e, RALLY_EPROTO, "expected a rally HELLO (%d bytes), got frame type %u of %zu bytes",
                        HELLO_NBYTES, type, nbytes);
            return refuse(a, out_type, out, out_nbytes, e);
        }
        struct rally__rbuf r = {body, nbytes, 0, 0};
        uint32_t magic = rally__r_u32(&r);
        uint16_t ver = rally__r_u16(&r);
        a->peer.role = rally__r_u16(&r);
        uint64_t job = rally__r_u64(&r);
        a->peer.rank = (int32_t)rally__r_u32(&r);
        a->peer.incarnation = rally__r_u32(&r);
        if (magic != RALLY__AUTH_MAGIC) {
            rally__fail(e, RALLY_EPROTO, "not a rally connection (bad magic 0x%08x)", magic);
            return refuse(a, out_type, out, out_nbytes, e);
        }
        if (ver != RALLY__WIRE_VERSION) {
            rally__fail(e, RALLY_EPROTO, "peer speaks protocol version %u, we speak %u", ver,
                        RALLY__WIRE_VERSION);
            return refuse(a, out_type, out, out_nbytes, e);
        }
        if (job != a->secret->job_id) {
            /* the refusal goes to a peer not yet authenticated: never name our job */
            rally__fail(e, RALLY_EAUTH, "peer belongs to job %016" PRIx64 ", not to this one",
                        job);
            return refuse(a, out_type, out, out_nbytes, e);
        }
        memcpy(a->transcript, body, nbytes);
        a->hello_nbytes = nbytes;
        struct rally__wbuf w = {a->transcript + nbytes, 0, CHAL_SANS_MAC, 0};
        rally__w_u16(&w, RALLY__WIRE_VERSION);
        rally__w_u16(&w, 0);
        rally__w_u32(&w, (uint32_t)a->me.rank);
        rally__w_u32(&w, a->me.incarnation);
        unsigned char *nonce = rally__wbuf_take(&w, RALLY__NONCE_NBYTES);
        randombytes_buf(nonce, RALLY__NONCE_NBYTES);
        unsigned char m[RALLY__MAC_NBYTES];
        mac(m, a->secret, "rally-S", a->transcript, nbytes + CHAL_SANS_MAC);
        memcpy(a->transcript + nbytes + CHAL_SANS_MAC, m, sizeof m);
        a->transcript_nbytes = nbytes + CHAL_NBYTES;
        memcpy(out, a->transcript + nbytes, CHAL_NBYTES);
        *out_type = RALLY__F_CHALLENGE;
        *out_nbytes = CHAL_NBYTES;
        a->state = S_PROOF;
        return 0;
    }
    if (a->state == S_PROOF) {
        unsigned char m[RALLY__MAC_NBYTES];
        mac(m, a->secret, "rally-C", a->transcript, a->transcript_nbytes);
        if (type != RALLY__F_PROOF || nbytes != RALLY__MAC_NBYTES ||
            sodium_memcmp(m, body, RALLY__MAC_NBYTES) != 0) {
            rally__fail(e, RALLY_EAUTH,
                        "authentication failed: the connecting side does not know the job's secret");
            return refuse(a, out_type, out, out_nbytes, e);
        }
        a->state = S_DONE;
        *out_type = RALLY__F_WELCOME;
        *out_nbytes = rally__auth_refusal(out, RALLY__AUTH_OUT_MAX, 0, "");
        return 1;
    }
    rally__fail(e, RALLY_EPROTO, "handshake already finished");
    return refuse(a, out_type, out, out_nbytes, e);
}

void rally__auth_cli_init(struct rally__auth_cli *c, const struct rally__secret *s,
                          const struct rally__ident *me, int32_t expect_rank, unsigned char *out,
                          size_t *out_nbytes)
{
    memset(c, 0, sizeof *c);
    c->secret = s;
    c->expect_rank = expect_rank;
    struct rally__wbuf w = {c->transcript, 0, HELLO_NBYTES, 0};
    rally__w_u32(&w, RALLY__AUTH_MAGIC);
    rally__w_u16(&w, RALLY__WIRE_VERSION);
    rally__w_u16(&w, me->role);
    rally__w_u64(&w, s->job_id);
    rally__w_u32(&w, (uint32_t)me->rank);
    rally__w_u32(&w, me->incarnation);
    randombytes_buf(rally__wbuf_take(&w, RALLY__NONCE_NBYTES), RALLY__NONCE_NBYTES);
    memcpy(out, c->transcript, HELLO_NBYTES);
    *out_nbytes = HELLO_NBYTES;
    c->state = S_HELLO;
}

int rally__auth_cli_step(struct rally__auth_cli *c, uint16_t type, const unsigned char *body,
                         size_t n, unsigned char *out, size_t *out_nbytes, const char *what,
                         struct rally__err *e)
{
    if (type == RALLY__F_REFUSE) {
        c->state = S_FAILED;
        refused(body, n, what, e);
        return -1;
    }
    if (c->state == S_HELLO) {
        c->state = S_FAILED;
        if (type != RALLY__F_CHALLENGE || n != CHAL_NBYTES) {
            rally__fail(e, RALLY_EPROTO, "%s answered our HELLO with frame type %u (%zu bytes)",
                        what, type, n);
            return -1;
        }
        memcpy(c->transcript + HELLO_NBYTES, body, CHAL_NBYTES);
        unsigned char m[RALLY__MAC_NBYTES];
        mac(m, c->secret, "rally-S", c->transcript, HELLO_NBYTES + CHAL_SANS_MAC);
        if (sodium_memcmp(m, body + CHAL_SANS_MAC, RALLY__MAC_NBYTES) != 0) {
            rally__fail(e, RALLY_EAUTH,
                        "%s failed authentication: it does not know this job's secret "
                        "(a stale or foreign server, or the wrong secret file)",
                        what);
            return -1;
        }
        struct rally__rbuf r = {body, n, 0, 0};
        uint16_t ver = rally__r_u16(&r);
        rally__r_u16(&r);
        c->peer.role = RALLY__ROLE_PEER;
        c->peer.rank = (int32_t)rally__r_u32(&r);
        c->peer.incarnation = rally__r_u32(&r);
        if (ver != RALLY__WIRE_VERSION) {
            rally__fail(e, RALLY_EPROTO, "%s speaks protocol version %u, we speak %u", what, ver,
                        RALLY__WIRE_VERSION);
            return -1;
        }
        if (c->expect_rank >= 0 && c->peer.rank != c->expect_rank) {
            rally__fail(e, RALLY_EPROTO, "%s says it is rank %d, expected rank %d", what,
                        (int)c->peer.rank, (int)c->expect_rank);
            return -1;
        }
        mac(out, c->secret, "rally-C", c->transcript, sizeof c->transcript);
        *out_nbytes = RALLY__MAC_NBYTES;
        c->state = S_PROOF;
        return 0;
    }
    if (c->state == S_PROOF && type == RALLY__F_WELCOME) {
        c->state = S_DONE;
        *out_nbytes = 0;
        return 1;
    }
    if (c->state == S_PROOF) {
        c->state = S_FAILED;
        rally__fail(e, RALLY_EPROTO, "%s answered our PROOF with frame type %u", what, type);
        return -1;
    }
    c->state = S_FAILED;
    rally__fail(e, RALLY_EPROTO, "%s: handshake already finished", what);
    return -1;
}

int rally__auth_connect(int fd, const struct rally__secret *s, const struct rally__ident *me,
                        int32_t expect_rank, struct rally__ident *peer, int64_t deadline,
                        const char *what, struct rally__err *e)
{
    if (sodium_ready(e) != RALLY_OK)
        return e->code;
    struct rally__auth_cli c;
    unsigned char out[RALLY__AUTH_OUT_MAX], body[RALLY__AUTH_OUT_MAX];
    size_t on;
    rally__auth_cli_init(&c, s, me, expect_rank, out, &on);
    uint16_t ot = RALLY__F_HELLO;
    for (;;) {
        if (rally__frame_send(fd, ot, out, on, deadline, what, e) != RALLY_OK)
            return e->code;
        uint16_t type;
        size_t n;
        if (rally__frame_recv(fd, &type, body, sizeof body, &n, deadline, what, e) != RALLY_OK)
            return e->code;
        int rc = rally__auth_cli_step(&c, type, body, n, out, &on, what, e);
        if (rc < 0)
            return e->code;
        if (rc == 1) {
            *peer = c.peer;
            return RALLY_OK;
        }
        ot = RALLY__F_PROOF;
    }
}

int rally__auth_accept(int fd, const struct rally__secret *s, const struct rally__ident *me,
                       rally__auth_check_fn check, void *check_arg, struct rally__ident *peer,
                       int64_t deadline, const char *what, struct rally__err *e)
{
    if (sodium_ready(e) != RALLY_OK)
        return e->code;
    struct rally__auth_srv a;
    rally__auth_srv_init(&a, s, me);
    unsigned char in[RALLY__AUTH_OUT_MAX], out[RALLY__AUTH_OUT_MAX];
    for (;;) {
        uint16_t type, ot;
        size_t n, on;
        if (rally__frame_recv(fd, &type, in, sizeof in, &n, deadline, what, e) != RALLY_OK)
            return e->code;
        int rc = rally__auth_srv_step(&a, type, in, n, &ot, out, &on, e);
        if (rc == 1 && check != NULL && check(&a.peer, check_arg, e) != RALLY_OK) {
            ot = RALLY__F_REFUSE;
            on = rally__auth_refusal(out, sizeof out, e->code, e->msg);
            rc = -1;
        }
        struct rally__err ignore = {0, ""};
        rally__frame_send(fd, ot, out, on, deadline, what, rc < 0 ? &ignore : e);
        if (rc < 0)
            return e->code;
        if (e->code != RALLY_OK)
            return e->code;
        if (rc == 1) {
            *peer = a.peer;
            return RALLY_OK;
        }
    }
}
