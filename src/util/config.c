/*
 * config.c — reads the engine's settings from defaults, RALLY_* variables
 * and rally_key=value arguments, checking each against its key's table
 * entry (config.h).
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
static const char *const busy[] = {"wait", "skip", NULL};             /* RALLY__SNAP_BUSY_* */

#define K(n, k, field, d, lo, hi) {n, k, offsetof(struct rally__config, field), d, lo, hi, NULL}
#define C(n, field, d, w) {n, CHOICE, offsetof(struct rally__config, field), d, 0, 0, w}
static const struct key keys[] = {
    K("tracker", STR, tracker, "", 0, 0),
    K("secret_file", STR, secret_file, "", 0, 0),
    K("task_id", STR, task_id, "", 0, 0),
    K("connect_timeout_ms", INT, connect_timeout_ms, "60000", 1, INT64_MAX / 4),
    K("timeout_ms", INT, timeout_ms, "1800000", 1, INT64_MAX / 4),
    K("ring_threshold_bytes", SIZE, ring_threshold_bytes, "256K", 0, INT64_MAX / 4),
    K("hd_threshold_bytes", SIZE, hd_threshold_bytes, "8M", 0, INT64_MAX / 4),
    K("chunk_bytes", SIZE, chunk_bytes, "256K", 64, 1 << 30),
    K("heartbeat_ms", INT, heartbeat_ms, "1000", 10, 3600000),
    K("cache_max_bytes", SIZE, cache_max_bytes, "4G", 0, INT64_MAX / 4),
    K("local_replica", INT, local_replica, "2", 0, 7),
    K("spin_us", INT, spin_us, "50", 0, 1000000),
    K("sock_buf_bytes", SIZE, sock_buf_bytes, "auto", -1, 1 << 30),
    C("transport", transport, "auto", transports),
    K("mock", LIST, mock, "", 0, 0),
    K("mock_sync", STR, mock_sync, "", 0, 0),
    K("snapshot_dir", STR, snapshot_dir, "", 0, 0),
    K("snapshot_job", STR, snapshot_job, "job", 0, 0),
    K("snapshot_every", INT, snapshot_every, "0", 0, INT64_MAX / 4),
    K("snapshot_every_ms", INT, snapshot_every_ms, "0", 0, INT64_MAX / 4),
    K("snapshot_keep", INT, snapshot_keep, "2", 1, 1000000),
    K("snapshot_required", INT, snapshot_required, "0", 0, 1),
    K("snapshot_final", INT, snapshot_final, "0", 0, 1),
    C("snapshot_busy", snapshot_busy, "wait", busy),
    K("run_id", STR, run_id, "", 0, 0),
    K("run_started", STR, run_started, "", 0, 0),
    K("resume", STR, resume, "", 0, 0),
    K("resume_force", INT, resume_force, "0", 0, 1),
};
#undef K
#undef C

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
    case 'k': case 'K': mul = 1 << 10; end++; break;
    case 'm': case 'M': mul = 1 << 20; end++; break;
    case 'g': case 'G': mul = 1 << 30; end++; break;
    default: break;
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
        return rally__fail(e, RALLY_ECONFIG, "%s: rally_%s=%s is not one of %s", from, k->name,
                           val, known);
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
            return rally__fail(e, RALLY_ECONFIG, "%s: rally_%s=%s is not an integer", from,
                               k->name, val);
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

static void list_keys(char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%srally_%s", i ? ", " : "", keys[i].name);
}

int rally__config_load(struct rally__config *c, int *argc, char ***argv, struct rally__err *e)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (set(c, &keys[i], keys[i].def, "default", e) != RALLY_OK)
            return e->code;

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
        if (i == 0 || strncmp(a, "rally_", 6) != 0) {
            (*argv)[out++] = (*argv)[i];
            continue;
        }
        const char *eq = strchr(a, '=');
        const struct key *k = eq ? find(a + 6, (size_t)(eq - a - 6)) : NULL;
        if (k == NULL) {
            char known[512];
            list_keys(known, sizeof known);
            return rally__fail(e, RALLY_ECONFIG,
                               "argument '%s' is not a known rally_key=value setting (known: %s)",
                               a, known);
        }
        if (set(c, k, eq + 1, "argument", e) != RALLY_OK)
            return e->code;
    }
    if (out < *argc)
        (*argv)[out] = NULL;
    *argc = out;
    return RALLY_OK;
}

int rally__config_get(const struct rally__config *c, size_t i, char *key, size_t key_cap,
                      char *val, size_t val_cap)
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
