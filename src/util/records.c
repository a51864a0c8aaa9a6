/*
 * records.c — local models as records (records.h).
 */
#include "util/records.h"

#include <stdlib.h>

#include "util/wire.h"

int rally__rec_next(const unsigned char *p, uint64_t n, uint64_t *at, struct rally__rec *r)
{
    if (*at >= n)
        return 0;
    if (n - *at < RALLY__REC_HEAD)
        return -1;
    uint64_t len = rally__get_u32(p + *at + 8);
    if (len > n - *at - RALLY__REC_HEAD)
        return -1;
    *r = (struct rally__rec){rally__get_u64(p + *at), p + *at, RALLY__REC_HEAD + len, 0};
    *at += RALLY__REC_HEAD + len;
    return 1;
}

int rally__recs_push(struct rally__recs *l, const struct rally__rec *r)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 1024;
        struct rally__rec *v = realloc(l->v, cap * sizeof *v);
        if (v == NULL)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *r;
    return 0;
}

static int by_id(const void *a, const void *b)
{
    uint64_t x = ((const struct rally__rec *)a)->id, y = ((const struct rally__rec *)b)->id;
    return x < y ? -1 : x > y;
}

void rally__recs_sort(struct rally__recs *l)
{
    if (l->n > 1)
        qsort(l->v, l->n, sizeof *l->v, by_id);
}

void rally__recs_free(struct rally__recs *l)
{
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}
