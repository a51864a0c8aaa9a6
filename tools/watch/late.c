/*
 * late.c — the straggler measure (late.h).
 */
#include "watch/late.h"

#include <math.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void rally__late_measure(const struct rally__late *in, int n, double *late, double *scratch)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        late[i] = NAN;
        if (in[i].win >= RALLY__LATE_MIN_CALLS && in[i].span_ms >= RALLY__LATE_MIN_SPAN_MS)
            scratch[k++] = (double)in[i].wait_ms / (double)in[i].span_ms;
    }
    if (k < 2)
        return;
    qsort(scratch, (size_t)k, sizeof *scratch, cmp);
    double median = k % 2 ? scratch[k / 2] : (scratch[k / 2 - 1] + scratch[k / 2]) / 2;
    for (int i = 0; i < n; i++)
        if (in[i].win >= RALLY__LATE_MIN_CALLS && in[i].span_ms >= RALLY__LATE_MIN_SPAN_MS)
            late[i] = median - (double)in[i].wait_ms / (double)in[i].span_ms;
}
