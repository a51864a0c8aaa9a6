/*
 * opts.c — the options of rally_data_read (include/rally/data.h): an opaque
 * object set key by key, so that a new option never changes the ABI.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/data.h"

void rally__data_opts_default(struct rally_data_opts *o)
{
    memset(o, 0, sizeof *o);
    o->format = RALLY__FMT_AUTO;
    o->partition = RALLY__PART_RANGE;
    o->csv_header = RALLY__HDR_NO;
    o->csv_label = -1;
    o->delim = '\0';
    o->index_base = 1;
    o->num_features = 0;
    o->max_line = RALLY__DATA_MAX_LINE_DEFAULT;
}

void rally__data_errout(const struct rally__err *e, char *err, size_t errcap)
{
    if (err != NULL && errcap > 0)
        snprintf(err, errcap, "%s", e->msg);
}

int rally_data_opts_new(rally_data_opts_t **out)
{
    if (out == NULL)
        return RALLY_EINVAL;
    struct rally_data_opts *o = malloc(sizeof *o);
    if (o == NULL)
        return RALLY_ENOMEM;
    rally__data_opts_default(o);
    *out = o;
    return RALLY_OK;
}

void rally_data_opts_free(rally_data_opts_t *o)
{
    free(o);
}

/* A decimal unsigned integer, the whole string, at most max. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (*s == '\0')
        return -1;
    for (; *s; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (d > 9 || v > (max - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int set(struct rally_data_opts *o, const char *key, const char *v, struct rally__err *e)
{
    uint64_t u;
    if (strcmp(key, "format") == 0) {
        if (strcmp(v, "auto") == 0)
            o->format = RALLY__FMT_AUTO;
        else if (strcmp(v, "libsvm") == 0)
            o->format = RALLY__FMT_LIBSVM;
        else if (strcmp(v, "csv") == 0)
            o->format = RALLY__FMT_CSV;
        else
            return rally__fail(e, RALLY_EINVAL, "data option format='%s': use auto, libsvm or csv",
                               v);
    } else if (strcmp(key, "partition") == 0) {
        if (strcmp(v, "range") == 0)
            o->partition = RALLY__PART_RANGE;
        else if (strcmp(v, "hash") == 0)
            o->partition = RALLY__PART_HASH;
        else
            return rally__fail(e, RALLY_EINVAL, "data option partition='%s': use range or hash", v);
    } else if (strcmp(key, "csv_header") == 0) {
        if (strcmp(v, "no") == 0 || strcmp(v, "0") == 0)
            o->csv_header = RALLY__HDR_NO;
        else if (strcmp(v, "yes") == 0 || strcmp(v, "1") == 0)
            o->csv_header = RALLY__HDR_YES;
        else if (strcmp(v, "auto") == 0)
            o->csv_header = RALLY__HDR_AUTO;
        else
            return rally__fail(e, RALLY_EINVAL, "data option csv_header='%s': use no, yes or auto",
                               v);
    } else if (strcmp(key, "csv_label") == 0) {
        if (strcmp(v, "none") == 0 || strcmp(v, "-1") == 0)
            o->csv_label = -1;
        else if (parse_u64(v, 1u << 30, &u) == 0)
            o->csv_label = (int64_t)u;
        else
            return rally__fail(e, RALLY_EINVAL,
                               "data option csv_label='%s': use none or a 0-based column number",
                               v);
    } else if (strcmp(key, "csv_delimiter") == 0) {
        char d;
        if (strcmp(v, "comma") == 0)
            d = ',';
        else if (strcmp(v, "tab") == 0 || strcmp(v, "\\t") == 0)
            d = '\t';
        else if (strcmp(v, "space") == 0)
            d = ' ';
        else if (strcmp(v, "semicolon") == 0)
            d = ';';
        else if (strlen(v) == 1)
            d = v[0];
        else
            return rally__fail(e, RALLY_EINVAL,
                               "data option csv_delimiter='%s': use one character, comma, tab, "
                               "space or semicolon",
                               v);
        if ((d >= '0' && d <= '9') || (d >= 'a' && d <= 'z') || (d >= 'A' && d <= 'Z') ||
            strchr("+-.\"\r\n", d) != NULL || ((unsigned char)d < 0x20 && d != '\t'))
            return rally__fail(e, RALLY_EINVAL,
                               "data option csv_delimiter='%s': a delimiter cannot be part of a "
                               "number, a quote or a line end",
                               v);
        o->delim = d;
    } else if (strcmp(key, "libsvm_index_base") == 0) {
        if (strcmp(v, "0") == 0 || strcmp(v, "1") == 0)
            o->index_base = v[0] - '0';
        else
            return rally__fail(e, RALLY_EINVAL, "data option libsvm_index_base='%s': use 0 or 1",
                               v);
    } else if (strcmp(key, "num_features") == 0) {
        if (parse_u64(v, RALLY__DATA_MAX_FEATURES, &u) != 0)
            return rally__fail(e, RALLY_EINVAL,
                               "data option num_features='%s': use 0 (infer) or a count up to %llu",
                               v, (unsigned long long)RALLY__DATA_MAX_FEATURES);
        o->num_features = u;
    } else if (strcmp(key, "max_line_bytes") == 0) {
        if (parse_u64(v, RALLY__DATA_MAX_LINE_LIMIT, &u) != 0 || u == 0)
            return rally__fail(e, RALLY_EINVAL, "data option max_line_bytes='%s': use 1 .. %zu", v,
                               RALLY__DATA_MAX_LINE_LIMIT);
        o->max_line = (size_t)u;
    } else {
        return rally__fail(e, RALLY_EINVAL,
                           "'%s' is not a data option (known: format, partition, csv_header, "
                           "csv_label, csv_delimiter, libsvm_index_base, num_features, "
                           "max_line_bytes)",
                           key);
    }
    return RALLY_OK;
}

int rally_data_opts_set(rally_data_opts_t *o, const char *key, const char *value, char *err,
                        size_t errcap)
{
    struct rally__err e = {0};
    if (o == NULL || key == NULL || value == NULL)
        rally__fail(&e, RALLY_EINVAL, "rally_data_opts_set: options, key and value must be set");
    else
        set(o, key, value, &e);
    if (e.code != RALLY_OK)
        rally__data_errout(&e, err, errcap);
    return e.code;
}

int rally_data_opts_parse(rally_data_opts_t *o, const char *key_value, char *err, size_t errcap)
{
    struct rally__err e = {0};
    const char *eq = key_value ? strchr(key_value, '=') : NULL;
    char key[64];
    if (eq == NULL || (size_t)(eq - key_value) >= sizeof key || eq == key_value) {
        rally__fail(&e, RALLY_EINVAL, "data option '%s' is not of the form key=value",
                    key_value ? key_value : "(null)");
        rally__data_errout(&e, err, errcap);
        return e.code;
    }
    memcpy(key, key_value, (size_t)(eq - key_value));
    key[eq - key_value] = '\0';
    return rally_data_opts_set(o, key, eq + 1, err, errcap);
}
