/*
 * snapshot_mk.c — writes a snapshot with the writer API, for the
 * rally-snapshot tests (tests/jobs/snapshot_tool_test.sh).
 *
 *   snapshot_mk ROOT JOB RUN_ID RUN_STARTED VERSION WORLD [--global FILE]
 *               [--locals] [--no-commit]
 *
 * The global model is FILE's bytes (default: 64 bytes 0, 1, 2, ...); with
 * --locals rank r's local model is 16 bytes of r.  --no-commit writes every
 * part but not the manifest (an incomplete snapshot).  Prints the committed
 * snapshot's path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/snapshot.h"

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)len + 1);
    if (p == NULL || fread(p, 1, (size_t)len, f) != (size_t)len) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return p;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: snapshot_mk ROOT JOB RUN_ID RUN_STARTED VERSION WORLD "
                        "[--global FILE] [--locals] [--no-commit]\n");
        return 2;
    }
    const char *root = argv[1], *global_file = NULL;
    int locals = 0, commit = 1;
    struct rally__snap_target t = {root, argv[2], argv[3], strtoull(argv[5], NULL, 10),
                                   atoi(argv[6]), NULL};
    for (int i = 7; i < argc; i++) {
        if (strcmp(argv[i], "--global") == 0 && i + 1 < argc)
            global_file = argv[++i];
        else if (strcmp(argv[i], "--locals") == 0)
            locals = 1;
        else if (strcmp(argv[i], "--no-commit") == 0)
            commit = 0;
    }
    struct rally__err e = {0};
    int status = 0;
    struct rally__snap_file *files = calloc((size_t)t.world + 1, sizeof *files);
    char **hosts = calloc((size_t)t.world, sizeof *hosts);
    size_t gn = 64;
    unsigned char *g = global_file ? slurp(global_file, &gn) : malloc(gn);
    if (files == NULL || hosts == NULL || g == NULL) {
        fprintf(stderr, "snapshot_mk: cannot read %s or out of memory\n",
                global_file ? global_file : "(none)");
        return 1;
    }
    if (global_file == NULL)
        for (size_t i = 0; i < gn; i++)
            g[i] = (unsigned char)i;
    if (rally__snap_write_part(&t, -1, g, gn, &e, &files[0]) != RALLY_OK)
        goto fail;
    for (int r = 0; locals && r < t.world; r++) {
        unsigned char l[16];
        memset(l, r, sizeof l);
        if (rally__snap_write_part(&t, r, l, sizeof l, &e, &files[r + 1]) != RALLY_OK)
            goto fail;
    }
    struct rally__snap_manifest m = {0};
    if (!commit)
        goto out;
    m.format_version = RALLY__SNAP_FORMAT;
    snprintf(m.rally_version, sizeof m.rally_version, "%s", RALLY_VERSION_STRING);
    snprintf(m.job, sizeof m.job, "%s", t.job);
    if (rally__snap_uuid(m.snapshot_id, &e) != RALLY_OK)
        goto fail;
    snprintf(m.run_id, sizeof m.run_id, "%s", t.run_id);
    snprintf(m.run_started, sizeof m.run_started, "%s", argv[4]);
    rally__snap_now(m.created);
    m.version = t.version;
    m.world = t.world;
    for (int r = 0; r < t.world; r++)
        hosts[r] = "localhost";
    m.hosts = hosts;
    m.app_name = "snapshot_mk";
    m.app_config = "--test";
    m.partitioning = "none";
    m.files = files;
    m.nfiles = locals ? (size_t)t.world + 1 : 1;
    char path[4096];
    if (rally__snap_commit(root, &m, &e, path, sizeof path) != RALLY_OK)
        goto fail;
    printf("%s\n", path);
    goto out;
fail:
    fprintf(stderr, "snapshot_mk: %s\n", e.msg);
    status = 1;
out:
    free(files);
    free(hosts);
    free(g);
    return status;
}
