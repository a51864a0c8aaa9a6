/*
 * mock.c — parses rally_mock kill points and, in librally_mock only, kills
 * the worker when it reaches one (mock.h).
 */
#include "mock/mock.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const phases[] = {"op", "checkpoint", "recovery", "load"};

int rally__mock_parse(struct rally__mock *m, const char *spec, struct rally__err *e)
{
    m->pts = NULL;
    m->n = 0;
    if (spec == NULL || spec[0] == '\0')
        return RALLY_OK;
#ifndef RALLY_MOCK
    return rally__fail(e, RALLY_ECONFIG,
                       "rally_mock=%s needs the failure-injection library: link -lrally_mock", spec);
#else
    int cap = 1;
    for (const char *p = spec; *p; p++)
        cap += *p == ';';
    m->pts = calloc((size_t)cap, sizeof *m->pts);
    if (m->pts == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory");
    const char *p = spec;
    while (*p) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[128], ph[32] = "op";
        if (len >= sizeof item)
            return rally__fail(e, RALLY_ECONFIG, "rally_mock: point too long");
        memcpy(item, p, len);
        item[len] = '\0';
        struct rally__mock_point *q = &m->pts[m->n];
        unsigned long long v, s;
        unsigned nd;
        int used = 0;
        int k = sscanf(item, "%d,%llu,%llu,%u%n,%31[a-z]%n", &q->rank, &v, &s, &nd, &used, ph, &used);
        q->phase = -1;
        for (int i = 0; i < 4; i++)
            if (strcmp(ph, phases[i]) == 0)
                q->phase = i;
        if (k < 4 || (size_t)used != len || q->rank < 0 || q->phase < 0)
            return rally__fail(e, RALLY_ECONFIG,
                               "rally_mock=%s is not rank,version,seq,ndeath[,op|checkpoint|"
                               "recovery|load]",
                               item);
        q->version = v;
        q->seq = s;
        q->ndeath = nd;
        m->n++;
        p += len + (end != NULL);
    }
    return RALLY_OK;
#endif
}

void rally__mock_free(struct rally__mock *m)
{
    free(m->pts);
    m->pts = NULL;
    m->n = 0;
}

void rally__mock_check(const struct rally__mock *m, int rank, uint64_t version, uint64_t seq,
                       uint32_t ndeath, int phase)
{
    for (int i = 0; i < m->n; i++) {
        const struct rally__mock_point *q = &m->pts[i];
        if (q->rank == rank && q->version == version && q->seq == seq && q->ndeath == ndeath &&
            q->phase == phase) {
            char msg[160];
            int n = snprintf(msg, sizeof msg,
                             "rally mock: killing rank %d at version %llu seq %llu ndeath %u (%s)\n",
                             rank, (unsigned long long)version, (unsigned long long)seq, ndeath,
                             phases[phase]);
            if (write(2, msg, (size_t)n) < 0) {
                /* dying anyway */
            }
            raise(SIGKILL);
        }
    }
}
