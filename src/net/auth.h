/*
 * auth.h — mutual challenge-response on every connection.
 *
 * Both ends know the job's secret key.  The connecting side (C) and the
 * accepting side (S) exchange four frames (docs/protocol.md has the bytes):
 *
 *   C -> S  HELLO      magic, protocol version, role, job id, C's rank and
 *                      incarnation, nonce_c (32 random bytes)
 *   S -> C  CHALLENGE  S's rank and incarnation, nonce_s,
 *                      mac_s = HMAC(key, "rally-S" | HELLO | CHALLENGE-sans-mac)
 *   C -> S  PROOF      mac_c = HMAC(key, "rally-C" | HELLO | CHALLENGE)
 *   S -> C  WELCOME    status 0, or REFUSE with a reason
 *
 * C believes S after checking mac_s (a fake tracker fails here); S believes C
 * after checking mac_c.  Fresh nonces on both sides make a recorded handshake
 * useless for a replay.  Either side may answer REFUSE (code + sentence)
 * instead of its next frame; the other side reports that sentence.
 * HMAC-SHA-256 from libsodium.  Not protected: anyone who can read the
 * secret file (same uid), and the bytes after the handshake (no integrity or
 * secrecy on the data stream).
 */
#ifndef RALLY_NET_AUTH_H
#define RALLY_NET_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define RALLY__WIRE_VERSION 1
#define RALLY__AUTH_MAGIC 0x594c4152u /* "RALY" little-endian */
#define RALLY__KEY_NBYTES 32
#define RALLY__NONCE_NBYTES 32
#define RALLY__MAC_NBYTES 32

/* Frame types of the handshake (net/frame.h). */
enum {
    RALLY__F_HELLO = 1,
    RALLY__F_CHALLENGE = 2,
    RALLY__F_PROOF = 3,
    RALLY__F_WELCOME = 4,
    RALLY__F_REFUSE = 5
};

/* Who is connecting. */
enum { RALLY__ROLE_WORKER = 1, RALLY__ROLE_PEER = 2, RALLY__ROLE_CONTROL = 3 };

struct rally__secret {
    uint64_t job_id;
    unsigned char key[RALLY__KEY_NBYTES];
};

struct rally__ident {
    uint16_t role;
    int32_t rank; /* -1: not yet assigned */
    uint32_t incarnation;
};

/* Makes a fresh random secret and writes it to path, created 0600 and
 * exclusively (an existing file is an error). */
int rally__secret_create(const char *path, struct rally__secret *s, struct rally__err *e);
/* Reads a secret file; refuses one that group or others may read. */
int rally__secret_load(const char *path, struct rally__secret *s, struct rally__err *e);

/* The connecting side, blocking until deadline.  expect_rank >= 0 demands the
 * acceptor be that rank (peer links); -1 takes any.  *peer gets the
 * acceptor's identity. */
int rally__auth_connect(int fd, const struct rally__secret *s, const struct rally__ident *me,
                        int32_t expect_rank, struct rally__ident *peer, int64_t deadline,
                        const char *what, struct rally__err *e);

/* The connecting side as a state machine (rally__auth_connect runs it over a
 * blocking socket; the mesh runs many at once in its poll loop).  init puts
 * the HELLO in out; step takes each frame the acceptor sends and returns 0
 * with the next frame (the PROOF) in out, 1 when the acceptor said WELCOME
 * (c->peer is its identity), -1 with e set on a refusal, a bad or forged
 * answer, or the wrong rank. */
struct rally__auth_cli {
    const struct rally__secret *secret;
    int32_t expect_rank;
    struct rally__ident peer;
    int state;
    unsigned char transcript[4 + 2 + 2 + 8 + 4 + 4 + RALLY__NONCE_NBYTES + 2 + 2 + 4 + 4 +
                             RALLY__NONCE_NBYTES + RALLY__MAC_NBYTES]; /* HELLO, CHALLENGE */
};
void rally__auth_cli_init(struct rally__auth_cli *c, const struct rally__secret *s,
                          const struct rally__ident *me, int32_t expect_rank, unsigned char *out,
                          size_t *out_nbytes);
int rally__auth_cli_step(struct rally__auth_cli *c, uint16_t type, const unsigned char *body,
                         size_t n, unsigned char *out, size_t *out_nbytes, const char *what,
                         struct rally__err *e);

/* The accepting side, as a state machine usable from an event loop: feed it
 * each frame the connector sends; it returns the frame to send back in
 * out[0..*out_nbytes) with *out_type.  Returns 1 when the connector is
 * authenticated (send the WELCOME in out, then use the connection), 0 when
 * more frames are needed, -1 when refused (send the REFUSE in out, then close;
 * e says why). */
struct rally__auth_srv {
    const struct rally__secret *secret;
    struct rally__ident me;
    struct rally__ident peer;
    int state;
    unsigned char transcript[128]; /* HELLO body then CHALLENGE body */
    size_t hello_nbytes, transcript_nbytes;
};
#define RALLY__AUTH_OUT_MAX 600
void rally__auth_srv_init(struct rally__auth_srv *a, const struct rally__secret *s,
                          const struct rally__ident *me);
int rally__auth_srv_step(struct rally__auth_srv *a, uint16_t type, const unsigned char *body,
                         size_t nbytes, uint16_t *out_type, unsigned char *out, size_t *out_nbytes,
                         struct rally__err *e);

/* Blocking accepting side built on the state machine.  check (may be NULL)
 * vets the connector's identity once its proof is verified: it returns
 * RALLY_OK or fills e and returns an error, which is sent as the refusal. */
typedef int (*rally__auth_check_fn)(const struct rally__ident *peer, void *arg,
                                    struct rally__err *e);
int rally__auth_accept(int fd, const struct rally__secret *s, const struct rally__ident *me,
                       rally__auth_check_fn check, void *check_arg, struct rally__ident *peer,
                       int64_t deadline, const char *what, struct rally__err *e);

/* Builds a REFUSE body: u32 code, string reason. */
size_t rally__auth_refusal(unsigned char *out, size_t cap, int code, const char *reason);

#endif
