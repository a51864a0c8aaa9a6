/*
 * kind.c — the table of launcher kinds (kind.h): one row a kind.
 */
#include "kind.h"

#include <stdio.h>
#include <string.h>

const struct rally__launch_kind *const rally__launch_kinds[] = {
    &rally__launch_kind_local,
    &rally__launch_kind_ssh,
    &rally__launch_kind_slurm,
    &rally__launch_kind_mpirun,
    NULL,
};

const struct rally__launch_kind *rally__launch_kind_named(const char *name)
{
    for (size_t i = 0; rally__launch_kinds[i] != NULL; i++)
        if (strcmp(name, rally__launch_kinds[i]->name) == 0)
            return rally__launch_kinds[i];
    return NULL;
}

void rally__launch_kind_list(char *buf, size_t cap, int (*pick)(const struct rally__launch_kind *),
                             const char *last)
{
    size_t n = 0, len = 0, k = 0;
    for (size_t i = 0; rally__launch_kinds[i] != NULL; i++)
        n += pick == NULL || pick(rally__launch_kinds[i]);
    buf[0] = '\0';
    for (size_t i = 0; rally__launch_kinds[i] != NULL && len < cap; i++) {
        const struct rally__launch_kind *kd = rally__launch_kinds[i];
        if (pick != NULL && !pick(kd))
            continue;
        int w = k == 0       ? snprintf(buf, cap, "%s", kd->name)
                : k + 1 == n ? snprintf(buf + len, cap - len, " %s %s", last, kd->name)
                             : snprintf(buf + len, cap - len, ", %s", kd->name);
        len += w > 0 ? (size_t)w : 0;
        k++;
    }
}
