/*
 * manifest.c — MANIFEST.json: its rules, parsed and encoded with jansson;
 * and the small things every snapshot file names (checksums, UUIDs, times,
 * the whitelist of names, a model file's header).
 */
#include <ctype.h>
#include <jansson.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "snapshot/internal.h"
#include "snapshot/snapshot.h"
#include "util/wire.h"

#define SETTINGS_MAX 4096
#define PARTITIONING_MAX 64

/* --- helpers ---------------------------------------------------------------- */

uint64_t rally__snap_xxh3(const void *p, size_t n)
{
    return (uint64_t)XXH3_64bits(p, n);
}

int rally__snap_uuid(char out[RALLY__SNAP_UUID_LEN + 1], struct rally__err *e)
{
    unsigned char b[16];
    if (sodium_init() < 0)
        return rally__fail(e, RALLY_ESYS, "libsodium failed to initialise");
    randombytes_buf(b, sizeof b);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    char *q = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *q++ = '-';
        q += snprintf(q, 3, "%02x", b[i]);
    }
    *q = '\0';
    return RALLY_OK;
}

void rally__snap_now(char out[RALLY__SNAP_TIME_LEN + 1])
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    char head[64];
    unsigned usec = (unsigned)(ts.tv_nsec / 1000) % 1000000u;
    if (tm.tm_year + 1900 > 9999 || tm.tm_year < -1900)
        tm.tm_year = 9999 - 1900; /* the format has four digits of year */
    size_t n = strftime(head, sizeof head, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(head + n, sizeof head - n, ".%06uZ", usec);
    memcpy(out, head, RALLY__SNAP_TIME_LEN);
    out[RALLY__SNAP_TIME_LEN] = '\0';
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

int rally__snap_uuid_bytes(const char *s, unsigned char out[16])
{
    if (strlen(s) != RALLY__SNAP_UUID_LEN)
        return -1;
    int k = 0;
    for (int i = 0; i < RALLY__SNAP_UUID_LEN;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i++] != '-')
                return -1;
            continue;
        }
        int hi = hexval(s[i]), lo = hexval(s[i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[k++] = (unsigned char)(hi << 4 | lo);
        i += 2;
    }
    return 0;
}

static int time_ok(const char *s)
{
    /* YYYY-MM-DDTHH:MM:SS.ffffffZ */
    static const char shape[] = "dddd-dd-ddTdd:dd:dd.ddddddZ";
    if (strlen(s) != RALLY__SNAP_TIME_LEN)
        return 0;
    for (int i = 0; i < RALLY__SNAP_TIME_LEN; i++)
        if (shape[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != shape[i])
            return 0;
    int mon = atoi(s + 5), day = atoi(s + 8), h = atoi(s + 11), m = atoi(s + 14),
        sec = atoi(s + 17);
    return mon >= 1 && mon <= 12 && day >= 1 && day <= 31 && h <= 23 && m <= 59 && sec <= 60;
}

int rally__snap_hex16(const char *s, uint64_t *v)
{
    if (strlen(s) != 16)
        return -1;
    uint64_t x = 0;
    for (int i = 0; i < 16; i++) {
        int d = hexval(s[i]);
        if (d < 0)
            return -1;
        x = x << 4 | (uint64_t)d;
    }
    *v = x;
    return 0;
}

int rally__snap_job_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > RALLY__SNAP_JOB_MAX || s[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
            return 0;
    return 1;
}

void rally__snap_job_from(const char *prog, char out[RALLY__SNAP_JOB_MAX + 1])
{
    const char *b = prog ? strrchr(prog, '/') : NULL;
    b = b ? b + 1 : prog ? prog : "";
    size_t n = 0;
    for (; b[n] && n < RALLY__SNAP_JOB_MAX; n++) {
        char ch = b[n];
        out[n] = isalnum((unsigned char)ch) || ch == '.' || ch == '_' || ch == '-' ? ch : '_';
    }
    out[n] = '\0';
    if (n == 0)
        snprintf(out, RALLY__SNAP_JOB_MAX + 1, "job");
    else if (out[0] == '.')
        out[0] = 'j';
}

void rally__snap_file_name(int rank, char out[RALLY__SNAP_NAME_MAX])
{
    if (rank < 0)
        snprintf(out, RALLY__SNAP_NAME_MAX, "%s", RALLY__SNAP_GLOBAL);
    else
        snprintf(out, RALLY__SNAP_NAME_MAX, "local-%04d.bin", rank);
}

void rally__snap_dir_name(uint64_t version, char out[RALLY__SNAP_NAME_MAX])
{
    snprintf(out, RALLY__SNAP_NAME_MAX, "snap-%08llu", (unsigned long long)version);
}

/* The digits of s as a number when s is exactly what fmt-like zero padding
 * to width would print: no sign, no excess leading zeros. */
static int canon_num(const char *s, size_t len, int width, uint64_t max, uint64_t *v)
{
    if (len == 0 || len > 20)
        return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (x > (max - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    char back[24];
    snprintf(back, sizeof back, "%0*llu", width, (unsigned long long)x);
    if (strlen(back) != len || memcmp(back, s, len) != 0)
        return -1;
    *v = x;
    return 0;
}

int rally__snap_file_rank(const char *name)
{
    if (strcmp(name, RALLY__SNAP_GLOBAL) == 0)
        return -1;
    size_t n = strlen(name);
    uint64_t r;
    if (n < 10 || strncmp(name, "local-", 6) != 0 || strcmp(name + n - 4, ".bin") != 0 ||
        canon_num(name + 6, n - 10, 4, RALLY__SNAP_WORLD_MAX - 1, &r) != 0)
        return -2;
    return (int)r;
}

int rally__snap_dir_version(const char *name, uint64_t *v)
{
    if (strncmp(name, "snap-", 5) != 0)
        return -1;
    return canon_num(name + 5, strlen(name + 5), 8, (uint64_t)INT64_MAX, v);
}

int rally__snap_known_name(const char *name)
{
    if (strcmp(name, RALLY__SNAP_MANIFEST) == 0 || rally__snap_file_rank(name) != -2)
        return 1;
    size_t n = strlen(name);
    if (n > 5 && name[0] == '.' && strcmp(name + n - 4, ".tmp") == 0) {
        char inner[RALLY__SNAP_NAME_MAX];
        if (n - 5 >= sizeof inner)
            return 0;
        memcpy(inner, name + 1, n - 5);
        inner[n - 5] = '\0';
        return strcmp(inner, RALLY__SNAP_MANIFEST) == 0 || rally__snap_file_rank(inner) != -2;
    }
    return 0;
}

/* --- a model file's header ----------------------------------------------------- */

void rally__snap_header_encode(const struct snap_header *h,
                               unsigned char out[RALLY__SNAP_HEADER_NBYTES])
{
    memcpy(out, SNAP_MAGIC, 8);
    rally__put_u32(out + 8, RALLY__SNAP_FORMAT);
    rally__put_u32(out + 12, h->kind);
    rally__put_u32(out + 16, h->rank);
    rally__put_u32(out + 20, h->world);
    rally__put_u64(out + 24, h->version);
    memcpy(out + 32, h->run, 16);
    rally__put_u64(out + 48, h->payload_nbytes);
    rally__put_u64(out + 56, h->payload_xxh3);
    rally__put_u64(out + 64, rally__snap_xxh3(out, 64));
}

int rally__snap_header_decode(const unsigned char in[RALLY__SNAP_HEADER_NBYTES], const char *name,
                              struct rally__err *e, struct snap_header *out)
{
    if (memcmp(in, SNAP_MAGIC, 8) != 0)
        return rally__fail(e, RALLY_EPROTO, "%s is not a rally snapshot file (bad magic)", name);
    uint32_t fv = rally__get_u32(in + 8);
    if (fv != RALLY__SNAP_FORMAT)
        return rally__fail(e, RALLY_EPROTO,
                           "%s has snapshot format version %u, this rally "
                           "reads %u",
                           name, fv, RALLY__SNAP_FORMAT);
    uint64_t want = rally__get_u64(in + 64), got = rally__snap_xxh3(in, 64);
    if (want != got)
        return rally__fail(e, RALLY_EPROTO,
                           "%s's header checksum is %016llx, its bytes hash to "
                           "%016llx: the header is damaged",
                           name, (unsigned long long)want, (unsigned long long)got);
    struct snap_header h;
    h.format_version = fv;
    h.kind = rally__get_u32(in + 12);
    h.rank = rally__get_u32(in + 16);
    h.world = rally__get_u32(in + 20);
    h.version = rally__get_u64(in + 24);
    memcpy(h.run, in + 32, 16);
    h.payload_nbytes = rally__get_u64(in + 48);
    h.payload_xxh3 = rally__get_u64(in + 56);
    *out = h;
    return RALLY_OK;
}

/* --- parsing ----------------------------------------------------------------------- */

static int bad(struct rally__err *e, const char *fmt, ...) RALLY__PRINTF(2, 3);
static int bad(struct rally__err *e, const char *fmt, ...)
{
    char msg[RALLY__ERR_MSG_MAX - 16];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rally__fail(e, RALLY_EPROTO, "manifest: %s", msg);
}

static const char *str_of(json_t *o, const char *key, const char *where, struct rally__err *e)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v)) {
        bad(e, "%s\"%s\" is %s, want a string", where, key, v ? "not a string" : "missing");
        return NULL;
    }
    return json_string_value(v);
}

/* A string that must fit cap-1 bytes and be non-empty unless empty_ok. */
static int copy_str(json_t *o, const char *key, const char *where, char *dst, size_t cap,
                    int empty_ok, struct rally__err *e)
{
    const char *s = str_of(o, key, where, e);
    if (s == NULL)
        return RALLY_EPROTO;
    size_t n = strlen(s);
    if (n >= cap || (!empty_ok && n == 0))
        return bad(e, "%s\"%s\" is %zu bytes long, want 1 to %zu", where, key, n, cap - 1);
    memcpy(dst, s, n + 1);
    return RALLY_OK;
}

static int dup_str(json_t *o, const char *key, const char *where, size_t max, char **dst,
                   struct rally__err *e)
{
    const char *s = str_of(o, key, where, e);
    if (s == NULL)
        return RALLY_EPROTO;
    if (strlen(s) > max)
        return bad(e, "%s\"%s\" is longer than %zu bytes", where, key, max);
    if ((*dst = strdup(s)) == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory reading the manifest");
    return RALLY_OK;
}

static int int_of(json_t *o, const char *key, const char *where, long long lo, long long hi,
                  long long *out, struct rally__err *e)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        return bad(e, "%s\"%s\" is %s, want an integer", where, key,
                   v ? "not an integer" : "missing");
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return bad(e, "%s\"%s\" is %lld, want %lld to %lld", where, key, x, lo, hi);
    *out = x;
    return RALLY_OK;
}

static int hex_of(json_t *o, const char *key, const char *where, uint64_t *out,
                  struct rally__err *e)
{
    const char *s = str_of(o, key, where, e);
    if (s == NULL)
        return RALLY_EPROTO;
    if (rally__snap_hex16(s, out) != 0)
        return bad(e, "%s\"%s\" is \"%.40s\", want 16 lowercase hex digits", where, key, s);
    return RALLY_OK;
}

static json_t *obj_of(json_t *o, const char *key, int (*is)(const json_t *), const char *what,
                      struct rally__err *e)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL || !is(v)) {
        bad(e, "\"%s\" is %s, want %s", key, v ? "of the wrong type" : "missing", what);
        return NULL;
    }
    return v;
}

static int is_object(const json_t *v)
{
    return json_is_object(v);
}

static int is_array(const json_t *v)
{
    return json_is_array(v);
}

static int parse_members(json_t *root, struct rally__snap_manifest *m, struct rally__err *e)
{
    json_t *a = obj_of(root, "membership", is_array, "an array", e);
    if (a == NULL)
        return RALLY_EPROTO;
    if (json_array_size(a) != (size_t)m->world)
        return bad(e, "\"membership\" has %zu entries, \"world_size\" is %d", json_array_size(a),
                   m->world);
    if ((m->hosts = calloc((size_t)m->world, sizeof *m->hosts)) == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory reading the manifest");
    for (int r = 0; r < m->world; r++) {
        json_t *x = json_array_get(a, (size_t)r);
        char where[48];
        snprintf(where, sizeof where, "membership[%d].", r);
        long long rank = 0;
        if (!json_is_object(x))
            return bad(e, "membership[%d] is not an object", r);
        if (int_of(x, "rank", where, 0, RALLY__SNAP_WORLD_MAX, &rank, e) != RALLY_OK)
            return RALLY_EPROTO;
        if (rank != r)
            return bad(e, "membership[%d] is rank %lld, want %d (rank order)", r, rank, r);
        if (dup_str(x, "host", where, RALLY__SNAP_HOST_MAX, &m->hosts[r], e) != RALLY_OK)
            return e->code;
        if (m->hosts[r][0] == '\0')
            return bad(e, "membership[%d].\"host\" is empty", r);
    }
    return RALLY_OK;
}

static int parse_settings(json_t *root, struct rally__snap_manifest *m, struct rally__err *e)
{
    json_t *o = obj_of(root, "settings", is_object, "an object", e);
    if (o == NULL)
        return RALLY_EPROTO;
    size_t n = json_object_size(o);
    if (n > SETTINGS_MAX)
        return bad(e, "\"settings\" has %zu keys, at most %d", n, SETTINGS_MAX);
    if (n > 0 && (m->settings = calloc(n, sizeof *m->settings)) == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory reading the manifest");
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        if (!json_is_string(v))
            return bad(e, "settings.\"%.64s\" is not a string", k);
        struct rally__snap_setting *s = &m->settings[m->nsettings++];
        s->key = strdup(k);
        s->value = strdup(json_string_value(v));
        if (s->key == NULL || s->value == NULL)
            return rally__fail(e, RALLY_ENOMEM, "out of memory reading the manifest");
    }
    return RALLY_OK;
}

static int parse_app_data(json_t *root, struct rally__snap_manifest *m, struct rally__err *e)
{
    json_t *app = obj_of(root, "app", is_object, "an object", e);
    if (app == NULL || dup_str(app, "name", "app.", 4096, &m->app_name, e) != RALLY_OK ||
        dup_str(app, "config", "app.", RALLY__SNAP_MANIFEST_MAX, &m->app_config, e) != RALLY_OK ||
        hex_of(app, "config_xxh3_64", "app.", &m->app_config_xxh3, e) != RALLY_OK)
        return e->code ? e->code : RALLY_EPROTO;
    uint64_t h = rally__snap_xxh3(m->app_config, strlen(m->app_config));
    if (h != m->app_config_xxh3)
        return bad(e, "app.\"config_xxh3_64\" is %016llx, the config hashes to %016llx",
                   (unsigned long long)m->app_config_xxh3, (unsigned long long)h);
    json_t *data = obj_of(root, "data", is_object, "an object", e);
    if (data == NULL ||
        dup_str(data, "partitioning", "data.", PARTITIONING_MAX, &m->partitioning, e) != RALLY_OK)
        return e->code ? e->code : RALLY_EPROTO;
    json_t *fp = obj_of(data, "fingerprints", is_array, "an array", e);
    if (fp == NULL)
        return bad(e, "data.\"fingerprints\" is missing or not an array");
    size_t n = json_array_size(fp);
    if (n == 0)
        return RALLY_OK;
    if (n != (size_t)m->world)
        return bad(e, "data.\"fingerprints\" has %zu entries, want 0 or \"world_size\" %d", n,
                   m->world);
    if ((m->fingerprints = calloc(n, sizeof *m->fingerprints)) == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory reading the manifest");
    for (size_t r = 0; r < n; r++) {
        json_t *x = json_array_get(fp, r);
        uint64_t ignored;
        const char *s = json_is_string(x) ? json_string_value(x) : NULL;
        if (s == NULL || (s[0] != '\0' && rally__snap_hex16(s, &ignored) != 0))
            return bad(e, "data.fingerprints[%zu] is not \"\" or 16 lowercase hex digits", r);
        if ((m->fingerprints[r] = strdup(s)) == NULL)
            return rally__fail(e, RALLY_ENOMEM, "out of memory reading the manifest");
    }
    return RALLY_OK;
}

/* "world_changes" (optional): an elastic job's changes of its workers so
 * far, oldest first: each {"version": V, "world_size": W}, V rising and at
 * most the checkpoint's, the last W the snapshot's world size. */
static int parse_changes(json_t *root, struct rally__snap_manifest *m, struct rally__err *e)
{
    json_t *a = json_object_get(root, "world_changes");
    if (a == NULL)
        return RALLY_OK;
    if (!json_is_array(a) || json_array_size(a) == 0 || json_array_size(a) > 1000000)
        return bad(e, "\"world_changes\" is not a non-empty array");
    size_t n = json_array_size(a);
    if ((m->changes = calloc(n, sizeof *m->changes)) == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory reading the manifest");
    m->nchanges = n;
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(a, i);
        long long v = 0, w = 0;
        char where[48];
        snprintf(where, sizeof where, "world_changes[%zu].", i);
        if (!json_is_object(c))
            return bad(e, "world_changes[%zu] is not an object", i);
        if (int_of(c, "version", where, 0, (long long)m->version, &v, e) != RALLY_OK ||
            int_of(c, "world_size", where, 1, RALLY__SNAP_WORLD_MAX, &w, e) != RALLY_OK)
            return RALLY_EPROTO;
        if (i > 0 && (uint64_t)v < m->changes[i - 1].version)
            return bad(e, "world_changes[%zu].version %lld is older than the one before", i,
                       (long long)v);
        m->changes[i] = (struct rally__snap_change){(uint64_t)v, (int)w};
    }
    if (m->changes[n - 1].world != m->world)
        return bad(e, "the last of \"world_changes\" has world_size %d, the snapshot %d",
                   m->changes[n - 1].world, m->world);
    return RALLY_OK;
}

static int parse_files(json_t *root, struct rally__snap_manifest *m, struct rally__err *e)
{
    json_t *a = obj_of(root, "files", is_array, "an array", e);
    if (a == NULL)
        return RALLY_EPROTO;
    size_t n = json_array_size(a);
    if (n != 1 && n != (size_t)m->world + 1)
        return bad(e,
                   "\"files\" has %zu entries, want 1 (global.bin) or %d (global.bin and a "
                   "local model per rank)",
                   n, m->world + 1);
    unsigned char *seen = calloc((size_t)m->world + 1, 1);
    m->files = calloc(n, sizeof *m->files);
    if (seen == NULL || m->files == NULL) {
        free(seen);
        return rally__fail(e, RALLY_ENOMEM, "out of memory reading the manifest");
    }
    int rc = RALLY_OK;
    for (size_t i = 0; i < n && rc == RALLY_OK; i++) {
        json_t *x = json_array_get(a, i);
        struct rally__snap_file *f = &m->files[i];
        char where[32];
        long long nb = 0;
        snprintf(where, sizeof where, "files[%zu].", i);
        if (!json_is_object(x)) {
            rc = bad(e, "files[%zu] is not an object", i);
            break;
        }
        if ((rc = copy_str(x, "name", where, f->name, sizeof f->name, 0, e)) != RALLY_OK)
            break;
        int rank = rally__snap_file_rank(f->name);
        if (rank == -2 || rank >= m->world) {
            rc = bad(e,
                     "files[%zu] is \"%s\", not global.bin or local-NNNN.bin of a rank below "
                     "%d",
                     i, f->name, m->world);
            break;
        }
        if (seen[rank + 1]++) {
            rc = bad(e, "files[%zu]: \"%s\" is listed twice", i, f->name);
            break;
        }
        if ((rc = int_of(x, "nbytes", where, RALLY__SNAP_HEADER_NBYTES, INT64_MAX, &nb, e)) !=
                RALLY_OK ||
            (rc = hex_of(x, "xxh3_64", where, &f->xxh3, e)) != RALLY_OK)
            break;
        f->nbytes = (uint64_t)nb;
        m->nfiles++;
    }
    if (rc == RALLY_OK && !seen[0])
        rc = bad(e, "\"files\" does not list global.bin");
    free(seen);
    return rc;
}

int rally__snap_manifest_parse(const char *buf, size_t n, struct rally__err *e,
                               struct rally__snap_manifest **out)
{
    json_error_t jerr;
    struct rally__snap_manifest *m = NULL;
    int rc = RALLY_EPROTO;
    long long x;
    if (n > RALLY__SNAP_MANIFEST_MAX)
        return bad(e, "%zu bytes, at most %u", n, RALLY__SNAP_MANIFEST_MAX);
    json_t *root = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL)
        return bad(e, "not valid JSON at line %d, column %d: %s", jerr.line, jerr.column,
                   jerr.text);
    if (!json_is_object(root)) {
        bad(e, "the top level is not an object");
        goto out;
    }
    if ((m = calloc(1, sizeof *m)) == NULL) {
        rc = rally__fail(e, RALLY_ENOMEM, "out of memory reading the manifest");
        goto out;
    }
    const char *fmt = str_of(root, "format", "", e);
    if (fmt == NULL)
        goto out;
    if (strcmp(fmt, "rally-snapshot") != 0) {
        bad(e, "\"format\" is \"%.64s\", want \"rally-snapshot\"", fmt);
        goto out;
    }
    json_t *fv = json_object_get(root, "format_version");
    if (!json_is_integer(fv)) {
        bad(e, "\"format_version\" is missing or not an integer");
        goto out;
    }
    if (json_integer_value(fv) != RALLY__SNAP_FORMAT) {
        rally__fail(e, RALLY_EPROTO, "snapshot format version %lld, this rally reads %u",
                    (long long)json_integer_value(fv), RALLY__SNAP_FORMAT);
        goto out;
    }
    m->format_version = RALLY__SNAP_FORMAT;
    if (copy_str(root, "rally_version", "", m->rally_version, sizeof m->rally_version, 0, e) ||
        copy_str(root, "job", "", m->job, sizeof m->job, 0, e) ||
        copy_str(root, "snapshot_id", "", m->snapshot_id, sizeof m->snapshot_id, 0, e) ||
        copy_str(root, "run_id", "", m->run_id, sizeof m->run_id, 0, e) ||
        copy_str(root, "run_started", "", m->run_started, sizeof m->run_started, 0, e) ||
        copy_str(root, "created", "", m->created, sizeof m->created, 0, e))
        goto out;
    unsigned maj, min, pat;
    char tail;
    unsigned char uu[16];
    if (sscanf(m->rally_version, "%u.%u.%u%c", &maj, &min, &pat, &tail) != 3 ||
        !isdigit((unsigned char)m->rally_version[0])) {
        bad(e, "\"rally_version\" is \"%s\", want MAJOR.MINOR.PATCH", m->rally_version);
        goto out;
    }
    if (!rally__snap_job_ok(m->job)) {
        bad(e, "\"job\" is \"%s\", want 1 to %d of [A-Za-z0-9._-], not starting with '.'", m->job,
            RALLY__SNAP_JOB_MAX);
        goto out;
    }
    if (rally__snap_uuid_bytes(m->snapshot_id, uu) != 0 ||
        rally__snap_uuid_bytes(m->run_id, uu) != 0) {
        bad(e, "\"snapshot_id\" \"%s\" or \"run_id\" \"%s\" is not a lowercase UUID",
            m->snapshot_id, m->run_id);
        goto out;
    }
    if (!time_ok(m->run_started) || !time_ok(m->created)) {
        bad(e, "\"run_started\" \"%s\" or \"created\" \"%s\" is not YYYY-MM-DDTHH:MM:SS.ffffffZ",
            m->run_started, m->created);
        goto out;
    }
    if (int_of(root, "checkpoint_version", "", 0, INT64_MAX, &x, e) != RALLY_OK)
        goto out;
    m->version = (uint64_t)x;
    if (int_of(root, "world_size", "", 1, RALLY__SNAP_WORLD_MAX, &x, e) != RALLY_OK)
        goto out;
    m->world = (int)x;
    m->records = json_is_true(json_object_get(root, "local_records"));
    if (parse_members(root, m, e) != RALLY_OK || parse_settings(root, m, e) != RALLY_OK ||
        parse_app_data(root, m, e) != RALLY_OK || parse_files(root, m, e) != RALLY_OK ||
        parse_changes(root, m, e) != RALLY_OK) {
        rc = e->code;
        goto out;
    }
    json_t *lr = json_object_get(root, "local_records");
    if (lr != NULL && (!json_is_boolean(lr) || m->nfiles < 2)) {
        bad(e, "\"local_records\" is %s", json_is_boolean(lr) ? "set without local models"
                                                             : "not true or false");
        rc = e->code;
        goto out;
    }
    *out = m;
    m = NULL;
    rc = RALLY_OK;
out:
    if (rc != RALLY_OK && e != NULL && e->code != RALLY_OK)
        rc = e->code;
    rally__snap_manifest_free(m);
    json_decref(root);
    return rc;
}

uint64_t rally__snap_manifest_nbytes(const struct rally__snap_manifest *m)
{
    uint64_t n = 0;
    for (size_t i = 0; i < m->nfiles; i++)
        n += m->files[i].nbytes;
    return n;
}

void rally__snap_manifest_free(struct rally__snap_manifest *m)
{
    if (m == NULL)
        return;
    for (int r = 0; m->hosts && r < m->world; r++)
        free(m->hosts[r]);
    free(m->hosts);
    for (size_t i = 0; i < m->nsettings; i++) {
        free(m->settings[i].key);
        free(m->settings[i].value);
    }
    free(m->settings);
    free(m->app_name);
    free(m->app_config);
    free(m->partitioning);
    for (int r = 0; m->fingerprints && r < m->world; r++)
        free(m->fingerprints[r]);
    free(m->fingerprints);
    free(m->files);
    free(m->changes);
    free(m);
}

/* --- encoding ------------------------------------------------------------------------ */

/* Sets key to a new value; a NULL value (jansson refuses a string that is
 * not UTF-8) latches *ok to 0. */
static void put(json_t *o, const char *key, json_t *v, int *ok)
{
    if (v == NULL || json_object_set_new(o, key, v) != 0)
        *ok = 0;
}

static void push(json_t *a, json_t *v, int *ok)
{
    if (v == NULL || json_array_append_new(a, v) != 0)
        *ok = 0;
}

static json_t *hexstr(uint64_t v)
{
    char s[17];
    snprintf(s, sizeof s, "%016llx", (unsigned long long)v);
    return json_string(s);
}

int rally__snap_manifest_encode(const struct rally__snap_manifest *m, struct rally__err *e,
                                char **out, size_t *n)
{
    int ok = 1;
    if (m->version > (uint64_t)INT64_MAX)
        return rally__fail(e, RALLY_EINVAL, "checkpoint version %llu is beyond 2^63-1",
                           (unsigned long long)m->version);
    json_t *root = json_object();
    json_t *members = json_array(), *settings = json_object(), *app = json_object(),
           *data = json_object(), *fps = json_array(), *files = json_array();
    const char *cfg = m->app_config ? m->app_config : "";
    put(root, "format", json_string("rally-snapshot"), &ok);
    put(root, "format_version", json_integer(RALLY__SNAP_FORMAT), &ok);
    put(root, "rally_version", json_string(m->rally_version), &ok);
    put(root, "job", json_string(m->job), &ok);
    put(root, "snapshot_id", json_string(m->snapshot_id), &ok);
    put(root, "run_id", json_string(m->run_id), &ok);
    put(root, "run_started", json_string(m->run_started), &ok);
    put(root, "checkpoint_version", json_integer((json_int_t)m->version), &ok);
    put(root, "created", json_string(m->created), &ok);
    put(root, "world_size", json_integer(m->world), &ok);
    for (int r = 0; r < m->world; r++) {
        json_t *x = json_object();
        put(x, "rank", json_integer(r), &ok);
        put(x, "host", json_string(m->hosts ? m->hosts[r] : ""), &ok);
        push(members, x, &ok);
    }
    put(root, "membership", members, &ok);
    for (size_t i = 0; i < m->nsettings; i++)
        put(settings, m->settings[i].key, json_string(m->settings[i].value), &ok);
    put(root, "settings", settings, &ok);
    put(app, "name", json_string(m->app_name ? m->app_name : ""), &ok);
    put(app, "config", json_string(cfg), &ok);
    put(app, "config_xxh3_64", hexstr(rally__snap_xxh3(cfg, strlen(cfg))), &ok);
    put(root, "app", app, &ok);
    put(data, "partitioning", json_string(m->partitioning ? m->partitioning : "none"), &ok);
    for (int r = 0; m->fingerprints && r < m->world; r++)
        push(fps, json_string(m->fingerprints[r] ? m->fingerprints[r] : ""), &ok);
    put(data, "fingerprints", fps, &ok);
    put(root, "data", data, &ok);
    for (size_t i = 0; i < m->nfiles; i++) {
        json_t *x = json_object();
        put(x, "name", json_string(m->files[i].name), &ok);
        put(x, "nbytes", json_integer((json_int_t)m->files[i].nbytes), &ok);
        put(x, "xxh3_64", hexstr(m->files[i].xxh3), &ok);
        push(files, x, &ok);
    }
    put(root, "files", files, &ok);
    if (m->records && m->nfiles > 1)
        put(root, "local_records", json_true(), &ok);
    if (m->nchanges > 0) { /* an elastic job's: absent when the workers never changed */
        json_t *changes = json_array();
        for (size_t i = 0; i < m->nchanges; i++) {
            json_t *x = json_object();
            put(x, "version", json_integer((json_int_t)m->changes[i].version), &ok);
            put(x, "world_size", json_integer(m->changes[i].world), &ok);
            push(changes, x, &ok);
        }
        put(root, "world_changes", changes, &ok);
    }
    char *text = ok ? json_dumps(root, JSON_INDENT(2)) : NULL;
    json_decref(root);
    if (text == NULL)
        return rally__fail(e, ok ? RALLY_ENOMEM : RALLY_EINVAL,
                           ok ? "out of memory encoding the manifest"
                              : "cannot encode the manifest: a string is not UTF-8");
    size_t len = strlen(text);
    char *buf = malloc(len + 2);
    if (buf == NULL) {
        free(text);
        return rally__fail(e, RALLY_ENOMEM, "out of memory encoding the manifest");
    }
    memcpy(buf, text, len);
    buf[len] = '\n';
    buf[len + 1] = '\0';
    free(text);
    /* What we write must be what we read: refuse a manifest the parser would. */
    struct rally__snap_manifest *back = NULL;
    struct rally__err pe = {0};
    if (rally__snap_manifest_parse(buf, len + 1, &pe, &back) != RALLY_OK) {
        free(buf);
        return rally__fail(e, RALLY_EINVAL, "refusing to write a bad manifest: %s", pe.msg);
    }
    rally__snap_manifest_free(back);
    *out = buf;
    *n = len + 1;
    return RALLY_OK;
}
