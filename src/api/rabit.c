/*
 * rabit.c — rabit's C API (include/rally/rabit_c_api.h) as a process-global
 * layer over one rally handle.
 *
 * It uses only the public API (rally.h): it translates rabit's argument
 * spellings and enumeration values, keeps the models RabitLoadCheckPoint
 * hands out, and turns a failed call into rabit's behaviour (a message and
 * the end of the process).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rally/rabit_c_api.h"
#include "rally/rally.h"

#define HOST_MAX 256

static struct {
    rally_t *r;
    int inited;       /* RabitInit succeeded and RabitFinalize was not called */
    int distributed;  /* a launcher gave us a tracker */
    void *global;     /* the last RabitLoadCheckPoint's models */
    void *local;
    const char *lazy; /* RabitLazyCheckPoint's model */
    rbt_ulong lazy_len;
} g;

/* rabit's way with an error: say what failed and end the process. */
static void die(const char *call, int rc)
{
    fprintf(stderr, "rabit: %s: %s (%s)\n", call, g.r ? rally_errmsg(g.r) : "RabitInit failed",
            rally_strstatus(rc));
    fflush(stderr);
    exit(1);
}

static void need_init(const char *call)
{
    if (!g.inited) {
        fprintf(stderr, "rabit: %s: call RabitInit first (it failed, or was not called)\n", call);
        fflush(stderr);
        exit(1);
    }
}

/* rabit's spelling of an argument, as rally's (a new string), or NULL when
 * arg is not one of rabit's; *ignored is set for a rabit_* key rally cannot
 * honour. */
static char *translate(const char *arg, int *ignored)
{
    static const char *const same[][2] = {{"mock=", "rally_mock="},
                                          {"rabit_local_replica=", "rally_local_replica="},
                                          {"rabit_task_id=", "rally_task_id="},
                                          /* the dmlc tracker (docs/protocol-dmlc.md) */
                                          {"rabit_tracker_uri=", "rally_dmlc_tracker_uri="},
                                          {"rabit_tracker_port=", "rally_dmlc_tracker_port="},
                                          {"rabit_num_trial=", "rally_dmlc_num_attempt="}};
    *ignored = 0;
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        size_t n = strlen(same[i][0]);
        if (strncmp(arg, same[i][0], n) == 0) {
            size_t m = strlen(same[i][1]) + strlen(arg + n) + 1;
            char *s = malloc(m);
            if (s != NULL)
                snprintf(s, m, "%s%s", same[i][1], arg + n);
            return s;
        }
    }
    *ignored = strncmp(arg, "rabit_", 6) == 0 && strchr(arg, '=') != NULL;
    return NULL;
}

bool RabitInit(int argc, char *argv[])
{
    if (g.inited) {
        fprintf(stderr, "rabit: RabitInit: already initialised (call RabitFinalize first)\n");
        return false;
    }
    int n = argc > 0 && argv != NULL ? argc : 0, rc = RALLY_ENOMEM;
    char **args = calloc((size_t)n + 1, sizeof *args); /* what rally_init sees */
    char **owned = calloc((size_t)n + 1, sizeof *owned); /* the translations to free */
    char **skipped = calloc((size_t)n + 1, sizeof *skipped); /* rabit_* rally cannot honour */
    int nargs = 0, nskipped = 0;
    if (args == NULL || owned == NULL || skipped == NULL) {
        fprintf(stderr, "rabit: RabitInit: out of memory\n");
        goto out;
    }
    const char *tracker = getenv("RALLY_TRACKER");
    g.distributed = tracker != NULL && tracker[0] != '\0';
    const char *dmlc = getenv("DMLC_TRACKER_URI"); /* the dmlc tracker */
    g.distributed |= dmlc != NULL && dmlc[0] != '\0';
    for (int i = 0; i < n; i++) {
        int ignored;
        char *t = translate(argv[i], &ignored);
        if (ignored) {
            skipped[nskipped++] = argv[i];
            continue;
        }
        if (t != NULL)
            owned[i] = t;
        else if (strncmp(argv[i], "rally_tracker=", 14) == 0)
            g.distributed = argv[i][14] != '\0';
        if (strncmp(argv[i], "rabit_tracker_uri=", 18) == 0) /* the dmlc tracker */
            g.distributed |= argv[i][18] != '\0';
        args[nargs++] = t != NULL ? t : argv[i];
    }
    char **av = args;
    rc = rally_init(&g.r, &nargs, &av);
    /* once per job: by rank 0's first start (every worker when init failed) */
    for (int i = 0; i < nskipped; i++)
        if (rc != RALLY_OK || (rally_rank(g.r) == 0 && rally_attempt(g.r) == 0))
            fprintf(stderr, "rabit: RabitInit: %s has no rally equivalent; ignored\n",
                    skipped[i]);
    if (rc != RALLY_OK) {
        fprintf(stderr, "rabit: RabitInit: %s (%s)\n", rally_errmsg(g.r), rally_strstatus(rc));
        rally_finalize(g.r);
        g.r = NULL;
        goto out;
    }
    g.inited = 1;
out:
    for (int i = 0; owned != NULL && i < n; i++)
        free(owned[i]);
    free(owned);
    free(skipped);
    free(args);
    return rc == RALLY_OK;
}

bool RabitFinalize(void)
{
    int rc = rally_finalize(g.r);
    if (rc != RALLY_OK)
        fprintf(stderr, "rabit: RabitFinalize: %s\n", rally_strstatus(rc));
    rally_free(g.global);
    rally_free(g.local);
    memset(&g, 0, sizeof g);
    return rc == RALLY_OK;
}

int RabitGetRank(void)
{
    return rally_rank(g.r);
}

int RabitGetWorldSize(void)
{
    return rally_world_size(g.r);
}

int RabitIsDistributed(void)
{
    return g.inited && g.distributed;
}

void RabitTrackerPrint(const char *msg)
{
    need_init("RabitTrackerPrint");
    size_t n = msg != NULL ? strlen(msg) : 0;
    char *line = malloc(n + 1);
    if (line == NULL) {
        fprintf(stderr, "rabit: RabitTrackerPrint: out of memory\n");
        exit(1);
    }
    if (n > 0)
        memcpy(line, msg, n);
    if (n > 0 && line[n - 1] == '\n')
        n--;
    line[n] = '\0';
    int rc = rally_tracker_print(g.r, line);
    free(line);
    if (rc != RALLY_OK)
        die("RabitTrackerPrint", rc);
}

void RabitGetProcessorName(char *out_name, rbt_ulong *out_len, rbt_ulong max_len)
{
    need_init("RabitGetProcessorName");
    char host[HOST_MAX];
    int rc = rally_processor_name(g.r, host, sizeof host);
    if (rc != RALLY_OK)
        die("RabitGetProcessorName", rc);
    size_t n = strlen(host);
    if (max_len == 0)
        return;
    if (n > max_len - 1)
        n = max_len - 1;
    memcpy(out_name, host, n);
    out_name[n] = '\0';
    if (out_len != NULL)
        *out_len = n;
}

void RabitBroadcast(void *sendrecv_data, rbt_ulong size, int root)
{
    need_init("RabitBroadcast");
    int rc = rally_broadcast(g.r, sendrecv_data, size, root);
    if (rc != RALLY_OK)
        die("RabitBroadcast", rc);
}

/* rabit's DataType as rally's element type: the C type of that name here. */
static int dtype_of(int enum_dtype)
{
    static const int sized[2][9] = {
        /* signed by size, unsigned by size (index: bytes) */
        {-1, RALLY_INT8, RALLY_INT16, -1, RALLY_INT32, -1, -1, -1, RALLY_INT64},
        {-1, RALLY_UINT8, RALLY_UINT16, -1, RALLY_UINT32, -1, -1, -1, RALLY_UINT64}};
    switch (enum_dtype) {
    case RABIT_CHAR: return CHAR_MIN < 0 ? RALLY_INT8 : RALLY_UINT8;
    case RABIT_UCHAR: return RALLY_UINT8;
    case RABIT_INT: return sized[0][sizeof(int)];
    case RABIT_UINT: return sized[1][sizeof(unsigned)];
    case RABIT_LONG: return sized[0][sizeof(long)];
    case RABIT_ULONG: return sized[1][sizeof(unsigned long)];
    case RABIT_FLOAT: return RALLY_FLOAT;
    case RABIT_DOUBLE: return RALLY_DOUBLE;
    case RABIT_LONGLONG: return sized[0][sizeof(long long)];
    case RABIT_ULONGLONG: return sized[1][sizeof(unsigned long long)];
    default: return -1;
    }
}

void RabitAllreduce(void *sendrecvbuf, size_t count, int enum_dtype, int enum_op,
                    void (*prepare_fun)(void *arg), void *prepare_arg)
{
    need_init("RabitAllreduce");
    int dtype = dtype_of(enum_dtype);
    if (dtype < 0 || enum_op < RABIT_MAX || enum_op > RABIT_BITOR) {
        fprintf(stderr,
                "rabit: RabitAllreduce: data type %d or operator %d is not rabit's (types 0..9, "
                "operators 0 max, 1 min, 2 sum, 3 bitwise or)\n",
                enum_dtype, enum_op);
        exit(1);
    }
    /* rabit's operator numbers are rally's */
    int rc = rally_allreduce(g.r, sendrecvbuf, count, dtype, enum_op, prepare_fun, prepare_arg);
    if (rc != RALLY_OK)
        die("RabitAllreduce", rc);
}

int RabitLoadCheckPoint(char **out_global_model, rbt_ulong *out_global_len,
                        char **out_local_model, rbt_ulong *out_local_len)
{
    need_init("RabitLoadCheckPoint");
    void *global = NULL, *local = NULL;
    uint64_t global_n = 0, local_n = 0, version = 0;
    int want_local = out_local_model != NULL && out_local_len != NULL;
    int rc = rally_load_checkpoint(g.r, &global, &global_n, want_local ? &local : NULL,
                                   want_local ? &local_n : NULL, &version);
    if (rc != RALLY_OK)
        die("RabitLoadCheckPoint", rc);
    if (version == 0)
        return 0;
    rally_free(g.global);
    rally_free(g.local);
    g.global = global;
    g.local = local;
    if (out_global_model != NULL)
        *out_global_model = global;
    if (out_global_len != NULL)
        *out_global_len = (rbt_ulong)global_n;
    if (want_local) {
        *out_local_model = local;
        *out_local_len = (rbt_ulong)local_n;
    }
    return (int)version;
}

void RabitCheckPoint(const char *global_model, rbt_ulong global_len, const char *local_model,
                     rbt_ulong local_len)
{
    need_init("RabitCheckPoint");
    int rc = rally_checkpoint(g.r, global_model, global_len, local_model,
                              local_model != NULL ? local_len : 0);
    if (rc != RALLY_OK)
        die("RabitCheckPoint", rc);
}

/* RabitLazyCheckPoint's serializer: the bytes the caller left in place. */
static uint64_t lazy_bytes(void *arg, void *buf, uint64_t cap)
{
    (void)arg;
    if (cap >= g.lazy_len && g.lazy_len > 0)
        memcpy(buf, g.lazy, g.lazy_len);
    return g.lazy_len;
}

void RabitLazyCheckPoint(const char *global_model, rbt_ulong global_len)
{
    need_init("RabitLazyCheckPoint");
    if (global_model == NULL && global_len > 0) {
        fprintf(stderr, "rabit: RabitLazyCheckPoint: a NULL model of %lu bytes\n", global_len);
        exit(1);
    }
    g.lazy = global_model;
    g.lazy_len = global_len;
    int rc = rally_lazy_checkpoint(g.r, lazy_bytes, NULL);
    if (rc != RALLY_OK)
        die("RabitLazyCheckPoint", rc);
}

int RabitVersionNumber(void)
{
    return (int)rally_checkpoint_version(g.r);
}

int RabitLinkTag(void)
{
    return 0;
}

struct rally *RabitRallyHandle(void)
{
    return g.inited ? g.r : NULL;
}
