/*
 * say.c — what the snapshot job tells, at the bottom of src/snapjob (its
 * other files call it, it calls none of them): a line on stderr behind the
 * rank, and rank 0's word to the launcher's observers of what became of a
 * snapshot (a REPORT through the engine).
 */
#include <stdarg.h>
#include <stdio.h>

#include "snapjob/snapjob.h"

#define E (&rally__engine)

void rally__snapjob_say(const struct rally__snapjob *sj, const char *fmt, ...)
{
    char line[RALLY__ERR_MSG_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rally: rank %d: snapshot: %s\n", sj->rank, line);
}

void rally__snapjob_tell(struct rally__snapjob *sj, const char *tier, int ok, uint64_t v,
                         uint64_t nbytes, const char *where)
{
    E->report(sj->en, ok ? RALLY__REPORT_SNAPSHOT : RALLY__REPORT_SNAPSHOT_VOID, tier, 0, v,
              ok ? nbytes : 0, where);
}
