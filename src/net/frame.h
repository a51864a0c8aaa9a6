/*
 * frame.h — length-prefixed messages on control connections (worker <->
 * tracker, control clients).  A frame is an 8-byte header
 *
 *     u32 body_nbytes | u16 type | u16 flags (0)
 *
 * then body_nbytes bytes, all little-endian (docs/protocol.md).  Bodies over
 * RALLY__FRAME_MAX, or over the caller's buffer, are RALLY_EPROTO: a
 * malformed peer costs an error, never a crash or an unbounded allocation.
 */
#ifndef RALLY_NET_FRAME_H
#define RALLY_NET_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define RALLY__FRAME_HDR 8
#define RALLY__FRAME_MAX (1u << 20)

/* Writes the header of a frame of type with nbytes of body to h: the only
 * place a frame header is made. */
void rally__frame_hdr(unsigned char h[RALLY__FRAME_HDR], uint16_t type, size_t nbytes);

/* Blocking (with deadline) send of one frame. */
int rally__frame_send(int fd, uint16_t type, const void *body, size_t nbytes, int64_t deadline,
                      const char *what, struct rally__err *e);

/* Blocking (with deadline) receive of one frame into body[0..cap). */
int rally__frame_recv(int fd, uint16_t *type, void *body, size_t cap, size_t *nbytes,
                      int64_t deadline, const char *what, struct rally__err *e);

/* An incremental reader for event loops: call rally__frame_in_feed() when fd
 * is readable; it returns 1 when a whole frame sits in f (type, body, nbytes;
 * valid until the next feed), 0 when more bytes are needed, -1 on error
 * (EOF, oversized, I/O) with e set. */
struct rally__frame_in {
    unsigned char hdr[RALLY__FRAME_HDR];
    size_t hdr_got;
    unsigned char *body; /* RALLY__FRAME_MAX bytes, allocated on first use */
    size_t body_got;
    uint16_t type;
    size_t nbytes;
    int ready;
};
int rally__frame_in_feed(struct rally__frame_in *f, int fd, const char *what, struct rally__err *e);
void rally__frame_in_free(struct rally__frame_in *f);

#endif
