/*
 * compat.c — whether a job may resume from a snapshot: the manifest held
 * against what the resuming job is, every refusal naming both values.
 */
#include <stdio.h>
#include <string.h>

#include "snapshot/snapshot.h"

/* The manifest's rally version against ours: 0 when compatible (same major;
 * same minor too while the major is 0). */
static int version_differs(const char *theirs, unsigned *maj, unsigned *min)
{
    unsigned pat;
    if (sscanf(theirs, "%u.%u.%u", maj, min, &pat) != 3)
        return 1;
    if (*maj != RALLY_VERSION_MAJOR)
        return 1;
    return RALLY_VERSION_MAJOR == 0 && *min != RALLY_VERSION_MINOR;
}

int rally__snap_compatible(const struct rally__snap_manifest *m, const struct rally__snap_expect *x,
                           int force, struct rally__err *e, char *note, size_t cap)
{
    char hint[96];
    snprintf(hint, sizeof hint, " (%s resumes anyway)", x->force ? x->force : "--force");
    int local = m->nfiles > 1;
    unsigned maj = 0, min = 0;
    if (note != NULL && cap > 0)
        note[0] = '\0';
    if (x->world != m->world && local && !m->records)
        return rally__fail(e, RALLY_EMISMATCH,
                           "the snapshot was taken by %d workers and holds "
                           "a local model per rank; this job has %d workers (local models "
                           "cannot be redistributed: run with -n %d, or declare them as "
                           "records with rally_set_local_records)",
                           m->world, x->world, m->world);
    if (local && m->records && x->records == 0)
        return rally__fail(e, RALLY_EMISMATCH,
                           "the snapshot's local models are records (rally_set_local_records), "
                           "but this job passes opaque ones: it must call "
                           "rally_set_local_records before rally_load_checkpoint");
    if (!force && version_differs(m->rally_version, &maj, &min))
        return rally__fail(e, RALLY_EMISMATCH,
                           "the snapshot was written by rally %s, this is "
                           "rally %s, whose checkpoints may differ%s",
                           m->rally_version, RALLY_VERSION_STRING, hint);
    if (!force && x->app_name != NULL && strcmp(x->app_name, m->app_name) != 0)
        return rally__fail(e, RALLY_EMISMATCH,
                           "the snapshot is of application \"%.100s\", this "
                           "job is \"%.100s\"%s",
                           m->app_name, x->app_name, hint);
    if (!force && x->app_config != NULL &&
        rally__snap_xxh3(x->app_config, strlen(x->app_config)) != m->app_config_xxh3)
        return rally__fail(
            e, RALLY_EMISMATCH,
            "the snapshot's configuration is \"%.120s\" "
            "(xxh3-64 %016llx), this job's is \"%.120s\" (xxh3-64 %016llx)%s",
            m->app_config, (unsigned long long)m->app_config_xxh3, x->app_config,
            (unsigned long long)rally__snap_xxh3(x->app_config, strlen(x->app_config)), hint);
    if (!force && x->partitioning != NULL && strcmp(x->partitioning, m->partitioning) != 0)
        return rally__fail(e, RALLY_EMISMATCH,
                           "the snapshot's input was partitioned by "
                           "\"%.64s\", this job's by \"%.64s\"%s",
                           m->partitioning, x->partitioning, hint);
    if (x->world != m->world) {
        /* records move whole to the rank owning their id: what the job
         * computes from them is its own, so no claim about its bits */
        if (note != NULL && local)
            snprintf(note, cap,
                     "resuming the records of %d workers on %d: each record goes to the rank "
                     "that owns its id",
                     m->world, x->world);
        else if (note != NULL)
            snprintf(note, cap,
                     "resuming a global model taken by %d workers on %d: the "
                     "result is correct but not bit-identical to an uninterrupted run",
                     m->world, x->world);
        return RALLY_OK;
    }
    for (int r = 0; !force && x->fingerprints != NULL && m->fingerprints != NULL && r < m->world;
         r++)
        if (strcmp(x->fingerprints[r], m->fingerprints[r]) != 0)
            return rally__fail(e, RALLY_EMISMATCH,
                               "rank %d's input fingerprint was %s in the "
                               "snapshot and is %s now: the data changed%s",
                               r, m->fingerprints[r][0] ? m->fingerprints[r] : "(none)",
                               x->fingerprints[r][0] ? x->fingerprints[r] : "(none)", hint);
    return RALLY_OK;
}
