/*
 * frame.c — length-prefixed frames on control connections: the header, a
 * blocking send and receive, and an incremental reader (frame.h).
 */
#include "net/frame.h"

#include <stdlib.h>

#include "net/sock.h"
#include "util/wire.h"

static int check_hdr(const unsigned char *h, size_t cap, uint16_t *type, size_t *n,
                     const char *what, struct rally__err *e)
{
    uint32_t len = rally__get_u32(h);
    *type = rally__get_u16(h + 4);
    if (rally__get_u16(h + 6) != 0)
        return rally__fail(e, RALLY_EPROTO, "%s sent a frame with unknown flags 0x%x", what,
                           rally__get_u16(h + 6));
    if (len > RALLY__FRAME_MAX || len > cap)
        return rally__fail(e, RALLY_EPROTO,
                           "%s sent a %u-byte frame of type %u; the limit here is %zu bytes", what,
                           len, *type, cap < RALLY__FRAME_MAX ? cap : (size_t)RALLY__FRAME_MAX);
    *n = len;
    return RALLY_OK;
}

void rally__frame_hdr(unsigned char h[RALLY__FRAME_HDR], uint16_t type, size_t nbytes)
{
    rally__put_u32(h, (uint32_t)nbytes);
    rally__put_u16(h + 4, type);
    rally__put_u16(h + 6, 0);
}

int rally__frame_send(int fd, uint16_t type, const void *body, size_t nbytes, int64_t deadline,
                      const char *what, struct rally__err *e)
{
    if (nbytes > RALLY__FRAME_MAX)
        return rally__fail(e, RALLY_EINVAL, "a %zu-byte message exceeds the frame limit", nbytes);
    unsigned char h[RALLY__FRAME_HDR];
    rally__frame_hdr(h, type, nbytes);
    if (rally__send_all(fd, h, sizeof h, deadline, what, e) != RALLY_OK)
        return e->code;
    return rally__send_all(fd, body, nbytes, deadline, what, e);
}

int rally__frame_recv(int fd, uint16_t *type, void *body, size_t cap, size_t *nbytes,
                      int64_t deadline, const char *what, struct rally__err *e)
{
    unsigned char h[RALLY__FRAME_HDR];
    uint16_t t = 0;
    size_t n = 0;
    if (rally__recv_all(fd, h, sizeof h, deadline, what, e) != RALLY_OK ||
        check_hdr(h, cap, &t, &n, what, e) != RALLY_OK ||
        rally__recv_all(fd, body, n, deadline, what, e) != RALLY_OK)
        return e->code;
    *type = t;
    *nbytes = n;
    return RALLY_OK;
}

int rally__frame_in_feed(struct rally__frame_in *f, int fd, const char *what, struct rally__err *e)
{
    if (f->ready) {
        f->ready = 0;
        f->hdr_got = f->body_got = 0;
    }
    while (f->hdr_got < RALLY__FRAME_HDR) {
        long k = rally__recv_some(fd, f->hdr + f->hdr_got, RALLY__FRAME_HDR - f->hdr_got, what, e);
        if (k < 0)
            return -1;
        if (k == 0)
            return 0;
        f->hdr_got += (size_t)k;
        if (f->hdr_got == RALLY__FRAME_HDR &&
            check_hdr(f->hdr, RALLY__FRAME_MAX, &f->type, &f->nbytes, what, e) != RALLY_OK)
            return -1;
    }
    if (f->body == NULL && f->nbytes > 0) {
        f->body = malloc(RALLY__FRAME_MAX);
        if (f->body == NULL) {
            rally__fail(e, RALLY_ENOMEM, "out of memory reading from %s", what);
            return -1;
        }
    }
    while (f->body_got < f->nbytes) {
        long k = rally__recv_some(fd, f->body + f->body_got, f->nbytes - f->body_got, what, e);
        if (k < 0)
            return -1;
        if (k == 0)
            return 0;
        f->body_got += (size_t)k;
    }
    f->ready = 1;
    return 1;
}

void rally__frame_in_free(struct rally__frame_in *f)
{
    if (f != NULL) {
        free(f->body);
        f->body = NULL;
    }
}
