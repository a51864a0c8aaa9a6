/*
 * config.c — reads the engine's settings from defaults, RALLY_* variables
 * and rally_key=value arguments, checking each against its key's table
 * entry (config.h); a RALLY_* variable or rally_* argument that names no
 * key is an error naming the nearest one.  The dmlc launchers' variables
 * count as arguments too (DMLC_NUM_ATTEMPT=2: dmlc-submit --cluster local
 * restarts a worker so), taken as rabit's SetParam takes them.
 */
#include "util/config.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { STR, INT, SIZE, LIST, CHOICE };

struct key {
    const char *name; /* without the rally_ prefix */
    enum kind kind;
    size_t off;
    const char *def;
    int64_t min, max;
    const char *const *words; /* CHOICE: the value is the index of its word */
};

static const char *const transports[] = {"tcp", "auto", "shm", NULL}; /* RALLY__TRANSPORT_* */
static const char *const hiers[] = {"off", "auto", NULL};             /* RALLY__HIER_* */
static const char *const spreads[] = {"auto", "host", "rack", NULL}; /* RALLY__SPREAD_* */
static const char *const busy[] = {"wait", "skip", NULL};             /* RALLY__SNAP_BUSY_* */
static const char *const schemes[] = {"copies", "xor", NULL};         /* RALLY__LOCAL_* */

#define K(n, k, field, d, lo, hi)                                                                  \
    {                                                                                              \
        n, k, offsetof(struct rally__config, field), d, lo, hi, NULL                               \
    }
#define C(n, field, d, w)                                                                          \
    {                                                                                              \
        n, CHOICE, offsetof(struct rally__config, field), d, 0, 0, w                               \
    }
static const struct key keys[] = {
    K("tracker", STR, tracker, "", 0, 0),
    K("secret_file", STR, secret_file, "", 0, 0),
    K("task_id", STR, task_id, "", 0, 0),
    K("interface", STR, interface, "", 0, 0),
    K("dmlc_tracker_uri", STR, dmlc_tracker_uri, "", 0, 0),
    K("dmlc_tracker_port", INT, dmlc_tracker_port, "9091", 1, 65535),
    K("dmlc_num_attempt", INT, dmlc_num_attempt, "0", 0, 1000000),
    K("connect_timeout_ms", INT, connect_timeout_ms, "60000", 1, INT64_MAX / 4),
    K("timeout_ms", INT, timeout_ms, "1800000", 1, INT64_MAX / 4),
    K("progress_timeout_ms", INT, progress_timeout_ms, "600000", 0, INT64_MAX / 4),
    K("ring_threshold_bytes", SIZE, ring_threshold_bytes, "256K", 0, INT64_MAX / 4),
    K("hd_threshold_bytes", SIZE, hd_threshold_bytes, "8M", 0, INT64_MAX / 4),
    K("rd_threshold_bytes", SIZE, rd_threshold_bytes, "16K", 0, INT64_MAX / 4),
    K("chunk_bytes", SIZE, chunk_bytes, "256K", 64, 1 << 30),
    K("heartbeat_ms", INT, heartbeat_ms, "1000", 10, 3600000),
    K("link_timeout_ms", INT, link_timeout_ms, "30000", 0, 3600000),
    K("cache_max_bytes", SIZE, cache_max_bytes, "4G", 0, INT64_MAX / 4),
    K("local_replica", INT, local_replica, "2", 0, 7),
    K("result_copies", INT, result_copies, "2", 0, 65536),
    K("verify_every", INT, verify_every, "0", 0, 1000000000),
    K("lateness_window", INT, lateness_window, "200", 0, RALLY__LATE_MAX),
    K("spin_us", INT, spin_us, "50", 0, 1000000),
    K("spin_alone_us", INT, spin_alone_us, "2000", 0, 1000000),
    K("sock_buf_bytes", SIZE, sock_buf_bytes, "auto", -1, 1 << 30),
    C("transport", transport, "auto", transports),
    K("cma", INT, cma, "1", 0, 1),
    C("hier", hier, "auto", hiers),
    K("host_group", INT, host_group, "0", 0, 65536),
    K("domain", STR, domain, "", 0, 0),
    C("spread", spread, "auto", spreads),
    C("local_scheme", local_scheme, "copies", schemes),
    C("result_scheme", result_scheme, "copies", schemes),
    K("xor_set", INT, xor_set, "0", 0, RALLY__XOR_MAX),
    K("mock", LIST, mock, "", 0, 0),
    K("mock_sync", STR, mock_sync, "", 0, 0),
    K("mock_deaths", INT, mock_deaths, "0", 0, 1000000),
    K("snapshot_dir", STR, snapshot_dir, "", 0, 0),
    K("snapshot_job", STR, snapshot_job, "", 0, 0),
    K("snapshot_copy", STR, snapshot_copy, "", 0, 0),
    K("snapshot_every", INT, snapshot_every, "0", 0, INT64_MAX / 4),
    K("snapshot_every_ms", INT, snapshot_every_ms, "0", 0, INT64_MAX / 4),
    K("snapshot_keep", INT, snapshot_keep, "2", 1, 1000000),
    K("snapshot_required", INT, snapshot_required, "0", 0, 1),
    K("snapshot_local", INT, snapshot_local, "0", 0, 1),
    K("snapshot_final", INT, snapshot_final, "0", 0, 1),
    C("snapshot_busy", snapshot_busy, "wait", busy),
    K("run_id", STR, run_id, "", 0, 0),
    K("run_started", STR, run_started, "", 0, 0),
    K("resume", STR, resume, "", 0, 0),
    K("resume_force", INT, resume_force, "0", 0, 1),
    K("overwrite", INT, overwrite, "0", 0, 1),
    K("keep_snapshots", INT, keep_snapshots, "0", 0, 1),
    K("input_check", INT, input_check, "1", 0, 1),
    K("elastic", INT, elastic, "0", 0, 1),
};
#undef K
#undef C

/* The dmlc launchers' variables (docs/protocol-dmlc.md), below RALLY_*. */
static const char *const dmlc_env[][2] = {{"DMLC_TRACKER_URI", "dmlc_tracker_uri"},
                                          {"DMLC_TRACKER_PORT", "dmlc_tracker_port"},
                                          {"DMLC_TASK_ID", "task_id"},
                                          {"DMLC_NUM_ATTEMPT", "dmlc_num_attempt"}};

/* The dmlc_env row an argument NAME=value names (dmlc-submit --cluster local
 * passes DMLC_NUM_ATTEMPT=N to a restarted worker, as rabit reads it), or -1. */
static int dmlc_arg(const char *a)
{
    for (size_t i = 0; i < sizeof dmlc_env / sizeof dmlc_env[0]; i++) {
        size_t n = strlen(dmlc_env[i][0]);
        if (strncmp(a, dmlc_env[i][0], n) == 0 && a[n] == '=')
            return (int)i;
    }
    return -1;
}

int rally__parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int rally__parse_size(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno != 0 || v < 0)
        return -1;
    int64_t mul = 1;
    switch (*end) {
    case 'k':
    case 'K':
        mul = 1 << 10;
        end++;
        break;
    case 'm':
    case 'M':
        mul = 1 << 20;
        end++;
        break;
    case 'g':
    case 'G':
        mul = 1 << 30;
        end++;
        break;
    default:
        break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || v > INT64_MAX / mul)
        return -1;
    *out = v * mul;
    return 0;
}

static int set(struct rally__config *c, const struct key *k, const char *val, const char *from,
               struct rally__err *e)
{
    void *p = (char *)c + k->off;
    if (k->kind == LIST) { /* repeatable: values accumulate, ';'-separated */
        size_t have = strlen(p), n = strlen(val);
        if (n == 0)
            return RALLY_OK;
        if (have + n + 2 > sizeof c->mock)
            return rally__fail(e, RALLY_ECONFIG, "%s: too many rally_%s values", from, k->name);
        if (have)
            strcat(p, ";");
        strcat(p, val);
        return RALLY_OK;
    }
    if (k->kind == STR) {
        if (strlen(val) >= RALLY__STR_MAX)
            return rally__fail(e, RALLY_ECONFIG, "%s: rally_%s is longer than %d bytes", from,
                               k->name, RALLY__STR_MAX - 1);
        strcpy(p, val);
        return RALLY_OK;
    }
    if (k->kind == CHOICE) {
        for (int64_t i = 0; k->words[i] != NULL; i++)
            if (strcmp(val, k->words[i]) == 0) {
                *(int64_t *)p = i;
                return RALLY_OK;
            }
        char known[128] = "";
        for (size_t i = 0, n = 0; k->words[i] != NULL && n < sizeof known; i++)
            n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "", k->words[i]);
        return rally__fail(e, RALLY_ECONFIG, "%s: rally_%s=%s is not one of %s", from, k->name, val,
                           known);
    }
    int64_t v;
    char *end;
    if (k->kind == SIZE && k->min < 0 && strcmp(val, "auto") == 0) {
        v = -1; /* a size that the engine chooses */
    } else if (k->kind == SIZE) {
        if (rally__parse_size(val, &v) != 0)
            return rally__fail(e, RALLY_ECONFIG,
                               "%s: rally_%s=%s is not a size (say 4096, 64K, 1M or 2G)", from,
                               k->name, val);
    } else {
        errno = 0;
        v = strtoll(val, &end, 10);
        if (end == val || *end != '\0' || errno != 0)
            return rally__fail(e, RALLY_ECONFIG, "%s: rally_%s=%s is not an integer", from, k->name,
                               val);
    }
    if (v < k->min || v > k->max)
        return rally__fail(e, RALLY_ECONFIG, "%s: rally_%s=%s is out of range [%lld, %lld]", from,
                           k->name, val, (long long)k->min, (long long)k->max);
    *(int64_t *)p = v;
    return RALLY_OK;
}

static const struct key *find(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strlen(keys[i].name) == len && strncmp(keys[i].name, name, len) == 0)
            return &keys[i];
    return NULL;
}

/* Edit distance (insert, delete, substitute, swap two neighbours) between
 * a and b, both lower case; names are short, so a row of 64 is plenty. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 62 || lb > 62)
        return (size_t)-1;
    size_t d[64][64];
    for (size_t i = 0; i <= la; i++)
        for (size_t j = 0; j <= lb; j++) {
            if (i == 0 || j == 0) {
                d[i][j] = i + j;
                continue;
            }
            size_t c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < c)
                c = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < c)
                c = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < c)
                c = d[i - 2][j - 2] + 1;
            d[i][j] = c;
        }
    return d[la][lb];
}

/* The known key nearest to name (lower case, without the prefix). */
static const struct key *closest(const char *name)
{
    const struct key *best = &keys[0];
    size_t bd = (size_t)-1;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        size_t dd = distance(name, keys[i].name);
        if (dd < bd) {
            bd = dd;
            best = &keys[i];
        }
    }
    return best;
}

/* RALLY_* variables that are rally's but not settings of the library: the
 * Python package's (bindings/python), scripts/deps.sh's and, by prefix,
 * test harnesses'. */
static const char *const not_settings[] = {"LIBRARY", "MOCK_LIBRARY", "PYTHON_MOCK", "DEPS_EXTRA",
                                           NULL};
#define TEST_PREFIX "RALLY_TEST_"

/* An unknown RALLY_* variable is as wrong as the same typo as an argument:
 * RALLY_ECONFIG naming the nearest key. */
static int check_environment(struct rally__err *e)
{
    extern char **environ;
    for (char **ep = environ; ep != NULL && *ep != NULL; ep++) {
        const char *v = *ep, *eq = strchr(v, '=');
        if (strncmp(v, "RALLY_", 6) != 0 || eq == NULL || strncmp(v, TEST_PREFIX, 11) == 0)
            continue;
        char name[64];
        size_t n = (size_t)(eq - v) - 6, i;
        if (n >= sizeof name)
            n = sizeof name - 1;
        for (i = 0; i < n; i++)
            name[i] = v[6 + i];
        name[n] = '\0';
        int ok = 0;
        for (i = 0; not_settings[i] != NULL && !ok; i++)
            ok = strcmp(name, not_settings[i]) == 0;
        for (i = 0; i < n; i++)
            name[i] = (char)tolower((unsigned char)name[i]);
        if (ok || find(name, n) != NULL)
            continue;
        char near[64];
        const struct key *k = closest(name);
        for (i = 0; k->name[i] && i + 1 < sizeof near; i++)
            near[i] = (char)toupper((unsigned char)k->name[i]);
        near[i] = '\0';
        return rally__fail(e, RALLY_ECONFIG,
                           "the environment variable %.*s is not a rally setting; did you mean "
                           "RALLY_%s? (docs/config.md lists them; unset it if it is not for "
                           "rally)",
                           (int)(eq - v), v, near);
    }
    return RALLY_OK;
}

int rally__config_load(struct rally__config *c, int *argc, char ***argv, struct rally__err *e)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (set(c, &keys[i], keys[i].def, "default", e) != RALLY_OK)
            return e->code;

    if (check_environment(e) != RALLY_OK)
        return e->code;
    for (size_t i = 0; i < sizeof dmlc_env / sizeof dmlc_env[0]; i++) {
        const char *v = getenv(dmlc_env[i][0]);
        if (v != NULL &&
            set(c, find(dmlc_env[i][1], strlen(dmlc_env[i][1])), v, dmlc_env[i][0], e) != RALLY_OK)
            return e->code;
    }
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char env[64] = "RALLY_";
        for (size_t j = 0; keys[i].name[j] && j + 7 < sizeof env; j++)
            env[6 + j] = (char)toupper((unsigned char)keys[i].name[j]);
        const char *v = getenv(env);
        if (v != NULL && set(c, &keys[i], v, env, e) != RALLY_OK)
            return e->code;
    }

    if (argc == NULL || argv == NULL || *argv == NULL)
        return RALLY_OK;
    int out = 0;
    for (int i = 0; i < *argc; i++) {
        const char *a = (*argv)[i];
        int d = i > 0 ? dmlc_arg(a) : -1;
        if (d >= 0) { /* DMLC_NUM_ATTEMPT=1 from dmlc-submit: as rabit's SetParam */
            const char *key = dmlc_env[d][1];
            if (set(c, find(key, strlen(key)), strchr(a, '=') + 1, "argument", e) != RALLY_OK)
                return e->code;
            continue;
        }
        if (i == 0 || strncmp(a, "rally_", 6) != 0) {
            (*argv)[out++] = (*argv)[i];
            continue;
        }
        const char *eq = strchr(a, '=');
        const struct key *k = eq ? find(a + 6, (size_t)(eq - a - 6)) : NULL;
        if (k == NULL) {
            char name[64];
            size_t n = eq ? (size_t)(eq - a - 6) : strlen(a + 6);
            snprintf(name, sizeof name, "%.*s", (int)n, a + 6);
            return rally__fail(e, RALLY_ECONFIG,
                               "argument '%s' is not a known rally_key=value setting; did you "
                               "mean rally_%s? (docs/config.md lists them)",
                               a, closest(name)->name);
        }
        if (set(c, k, eq + 1, "argument", e) != RALLY_OK)
            return e->code;
    }
    if (out < *argc)
        (*argv)[out] = NULL;
    *argc = out;
    return RALLY_OK;
}

void rally__config_contact(struct rally__config *c)
{
    static const char *const names[] = {"tracker", "secret_file", "task_id", "connect_timeout_ms"};
    struct rally__err ignore = {0, ""};
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        set(c, &keys[i], keys[i].def, "default", &ignore);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char env[64] = "RALLY_";
        for (size_t j = 0; names[i][j] && j + 7 < sizeof env; j++)
            env[6 + j] = (char)toupper((unsigned char)names[i][j]);
        const char *v = getenv(env);
        const struct key *k = find(names[i], strlen(names[i]));
        rally__err_clear(&ignore);
        if (v != NULL && set(c, k, v, env, &ignore) != RALLY_OK)
            set(c, k, k->def, "default", &ignore); /* a bad value: the default */
    }
}

int rally__config_get(const struct rally__config *c, size_t i, char *key, size_t key_cap, char *val,
                      size_t val_cap)
{
    if (i >= sizeof keys / sizeof keys[0])
        return 0;
    const struct key *k = &keys[i];
    const void *p = (const char *)c + k->off;
    snprintf(key, key_cap, "rally_%s", k->name);
    if (k->kind == STR || k->kind == LIST)
        snprintf(val, val_cap, "%s", (const char *)p);
    else if (k->kind == CHOICE)
        snprintf(val, val_cap, "%s", k->words[*(const int64_t *)p]);
    else
        snprintf(val, val_cap, "%lld", (long long)*(const int64_t *)p);
    return 1;
}
