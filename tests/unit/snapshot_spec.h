/*
 * snapshot_spec.h — the snapshots the snapshot tests write, the same on
 * every store (a directory, an object store): a model's bytes from its
 * rank and version, its parts and manifest from a spec.  Included by
 * snapshot_rig.h (the snapshot_*_test.c) and snapshot_s3_test.c.
 */
#ifndef RALLY_TESTS_SNAPSHOT_SPEC_H
#define RALLY_TESTS_SNAPSHOT_SPEC_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/snapshot.h"
#include "snapshot/sys.h"

/* Each test's scratch directory, made by tmp_setup, removed by
 * tmp_teardown (both put the real syscall table back). */
static char tmp_root[256];

static inline int tmp_setup(void)
{
    snprintf(tmp_root, sizeof tmp_root, "/tmp/rally-snapshot-test-XXXXXX");
    rally__snap_sys = rally__snap_sys_real;
    return mkdtemp(tmp_root) != NULL ? 0 : -1;
}

static inline int tmp_teardown(void)
{
    char cmd[512];
    rally__snap_sys = rally__snap_sys_real;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    return system(cmd) == 0 ? 0 : -1;
}

#define RUN_A "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"
#define RUN_B "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"
#define SNAP_ID "5b0d3c1e-6f29-4c38-9d0e-1a2b3c4d5e6f"

/* The inputs of one snapshot; a model's byte i is (i * mul + add) & 0xff. */
struct spec {
    const char *job, *run, *started, *created;
    uint64_t version;
    int world;
    int locals;
    uint64_t global_nbytes, local_nbytes;
};

static inline unsigned char *model(int rank, uint64_t version, uint64_t n)
{
    unsigned char *p = malloc(n ? n : 1);
    for (uint64_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * (uint64_t)(rank + 3) + version * 11 + 5);
    return p;
}

static char *hosts2[] = {"node-a", "node-b", "node-c", "node-d"};
static char *fps2[] = {"0123456789abcdef", "fedcba9876543210", "", "00000000000000ff"};
static struct rally__snap_setting settings2[] = {{"rally_timeout_ms", "60000"},
                                                 {"rally_local_replica", "2"}};

/* Writes every part of s into root and fills m (pointers into statics and
 * files[]) without committing. */
static inline int write_parts(const char *root, const struct spec *s, struct rally__snap_manifest *m,
                       struct rally__snap_file *files, struct rally__err *e)
{
    struct rally__snap_target t = {root, s->job, s->run, s->version, s->world, NULL};
    int nf = 0, rc;
    for (int r = -1; r < (s->locals ? s->world : 0); r++) {
        uint64_t n = r < 0 ? s->global_nbytes : s->local_nbytes;
        unsigned char *p = model(r, s->version, n);
        rc = rally__snap_write_part(&t, r, p, n, e, &files[nf]);
        free(p);
        if (rc != RALLY_OK)
            return rc;
        nf++;
    }
    memset(m, 0, sizeof *m);
    m->format_version = RALLY__SNAP_FORMAT;
    snprintf(m->rally_version, sizeof m->rally_version, "%s", "0.1.0");
    snprintf(m->job, sizeof m->job, "%s", s->job);
    snprintf(m->snapshot_id, sizeof m->snapshot_id, "%s", SNAP_ID);
    snprintf(m->run_id, sizeof m->run_id, "%s", s->run);
    snprintf(m->run_started, sizeof m->run_started, "%s", s->started);
    snprintf(m->created, sizeof m->created, "%s", s->created);
    m->version = s->version;
    m->world = s->world;
    m->hosts = hosts2;
    m->settings = settings2;
    m->nsettings = 2;
    m->app_name = "golden";
    m->app_config = "--k 3 --iters 20";
    m->partitioning = "hash";
    m->fingerprints = fps2;
    m->files = files;
    m->nfiles = (size_t)nf;
    return RALLY_OK;
}

static inline int write_snapshot(const char *root, const struct spec *s, struct rally__err *e)
{
    struct rally__snap_manifest m;
    struct rally__snap_file files[8];
    int rc = write_parts(root, s, &m, files, e);
    return rc != RALLY_OK ? rc : rally__snap_commit(root, &m, e, NULL, 0);
}

static inline struct spec simple(const char *run, const char *started, uint64_t v)
{
    struct spec s = {"job", run, started, "2026-11-30T13:00:00.000000Z", v, 2, 1, 300, 40};
    return s;
}

static inline void snap_path(char *out, size_t cap, const char *root, const char *job, uint64_t v)
{
    snprintf(out, cap, "%s/%s/snap-%08llu", root, job, (unsigned long long)v);
}

static inline int loads(const char *root, const char *job, uint64_t v, struct rally__err *e)
{
    char p[512];
    struct rally__snap *s = NULL;
    snap_path(p, sizeof p, root, job, v);
    int rc = rally__snap_open(p, e, &s);
    rally__snap_close(s);
    return rc;
}

#endif
