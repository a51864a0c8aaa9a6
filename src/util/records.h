/*
 * records.h — local models as records (rally_set_local_records): each an
 * 8-byte little-endian id, a 4-byte little-endian length and that many
 * bytes.  Reading them one at a time, and a growing list sorted by id,
 * for the engine that moves them (robust/reshard.c) and the snapshot layer
 * that resumes them (api/resume.c).
 */
#ifndef RALLY_UTIL_RECORDS_H
#define RALLY_UTIL_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#define RALLY__REC_HEAD 12

struct rally__rec {
    uint64_t id;
    const unsigned char *p; /* the whole record, head included */
    uint64_t n;
    int slot; /* the caller's: where it goes */
};

/* The record at *at of p[0..n): 1 (*r filled, *at past it), 0 at the end,
 * -1 when the bytes at *at are not a record (too few for a head, or a
 * length past the end). */
int rally__rec_next(const unsigned char *p, uint64_t n, uint64_t *at, struct rally__rec *r);

struct rally__recs {
    struct rally__rec *v;
    size_t n, cap;
};

/* Appends r; -1 when out of memory. */
int rally__recs_push(struct rally__recs *l, const struct rally__rec *r);
/* Sorts by id (ids are distinct where it matters: the caller checks). */
void rally__recs_sort(struct rally__recs *l);
void rally__recs_free(struct rally__recs *l);

#endif
