/*
 * shm.h — what the shared-memory link's two files share, inside net/ alone:
 * the link's state, and the segment's making (shm.c) for the set-up
 * (shm_setup.c).
 */
#ifndef RALLY_NET_TRANSPORTS_SHM_H
#define RALLY_NET_TRANSPORTS_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "net/link.h"
#include "util/err.h"

struct ctl; /* one direction's counters, in the segment (shm.c) */

struct ring {
    struct ctl *c;
    unsigned char *data;
    uint64_t mine; /* our own counter, as last stored: head out, tail in */
};

struct shm {
    unsigned char *base;
    size_t nbytes, cap;
    struct ring out, in;
    int bell;      /* ours: the peer rings it */
    int peer_bell; /* the peer's */
    int fd;        /* the connection: silent, watched for the hang-up */
    int armed;     /* RALLY__WANT_* flags arm raised */
    int dead;      /* 0, or the code the next op that needs the peer fails with */
    int peer_pid;  /* the peer's process (its Unix socket's credentials), 0: unknown */
    char why[64];  /* what the peer did, for the message */
};

/* The link's operations (shm.c); the second set also reads the peer's
 * memory (peer_read), for a link whose set-up found both ends may. */
extern const struct rally__link_ops rally__shm_ops, rally__shm_cma_ops;

/* 1 when the kernel lets this process read pid's memory (process_vm_readv),
 * asked once at set-up; 0 when it refuses (Yama, seccomp, another user, no
 * such call). */
int rally__shm_can_read(int pid);

/* A link's state with no segment yet (descriptors -1); NULL out of memory. */
struct shm *rally__shm_new(void);
void rally__shm_free(struct shm *s); /* NULL is accepted */

/* Maps memfd mfd (checking its header when check) and points s's rings at
 * it; the connector's rings are [0] out, [1] in. */
int rally__shm_map(struct shm *s, int mfd, size_t ring_nbytes, int connector, int check,
                   struct rally__err *e);

/* Creates the segment and both doorbells: fds[0] the memfd, fds[1] the
 * acceptor's doorbell, fds[2] the connector's; and maps it (the connector). */
int rally__shm_create(struct shm *s, size_t ring_nbytes, int fds[3], struct rally__err *e);

#endif
