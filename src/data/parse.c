/*
 * parse.c — one LIBSVM or CSV record into the dataset's CSR arrays.
 *
 * A record arrives as a line without its line end, NUL-terminated, so that
 * strtof_l stops at the NUL at worst.  Numbers are checked against a strict
 * decimal grammar before strtof_l (in the "C" locale) converts them: no
 * nan, inf, hex floats or trailing bytes, and nothing strtof would accept
 * that the grammar does not.  Errors name the 1-based byte column; the
 * reader adds the file and line.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/data.h"

static int is_digit(char c)
{
    return (unsigned)(c - '0') < 10u;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

int rally__data_is_number(const char *s, size_t n)
{
    size_t i = 0, digits = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    for (; i < n && is_digit(s[i]); i++)
        digits++;
    if (i < n && s[i] == '.')
        for (i++; i < n && is_digit(s[i]); i++)
            digits++;
    if (digits == 0)
        return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t ed = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        for (; i < n && is_digit(s[i]); i++)
            ed++;
        if (ed == 0)
            return 0;
    }
    return i == n;
}

void rally__data_quote(char *out, size_t cap, const char *s, size_t n)
{
    size_t k = 0, lim = n > 40 ? 40 : n;
    if (cap < 8) {
        if (cap)
            out[0] = '\0';
        return;
    }
    out[k++] = '\'';
    for (size_t i = 0; i < lim && k + 5 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        out[k++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (lim < n && k + 5 < cap) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k++] = '\'';
    out[k] = '\0';
}

static int perr(struct rally__perr *pe, const char *line, const char *at, const char *fmt, ...)
    RALLY__PRINTF(4, 5);

static int perr(struct rally__perr *pe, const char *line, const char *at, const char *fmt, ...)
{
    va_list ap;
    pe->col = (size_t)(at - line) + 1;
    va_start(ap, fmt);
    vsnprintf(pe->msg, sizeof pe->msg, fmt, ap);
    va_end(ap);
    return RALLY_EPROTO;
}

/* 0 ok; -1 not a number; -2 out of float range; -3 too long. */
static int to_float(const char *s, size_t n, locale_t loc, float *out)
{
    if (n > RALLY__DATA_MAX_NUMBER)
        return -3;
    if (!rally__data_is_number(s, n))
        return -1;
    char *end;
    float v = strtof_l(s, &end, loc);
    if (end != s + n)
        return -1;
    if (isinf(v))
        return -2;
    *out = v;
    return 0;
}

static int bad_number(struct rally__perr *pe, const char *line, const char *s, size_t n, int why,
                      const char *what)
{
    char q[64];
    rally__data_quote(q, sizeof q, s, n);
    if (why == -2)
        return perr(pe, line, s, "%s %s is out of the range of a 32-bit float", what, q);
    if (why == -3)
        return perr(pe, line, s, "%s %s is longer than %d bytes", what, q, RALLY__DATA_MAX_NUMBER);
    if (n == 0)
        return perr(pe, line, s, "%s is empty; expected a number", what);
    return perr(pe, line, s, "%s %s is not a number", what, q);
}

/* --- the builder ----------------------------------------------------------- */

static int grow(void **p, uint64_t *cap, uint64_t need, size_t elem)
{
    if (need <= *cap)
        return RALLY_OK;
    uint64_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    if (c > SIZE_MAX / elem)
        return RALLY_ENOMEM;
    void *q = realloc(*p, (size_t)c * elem);
    if (q == NULL)
        return RALLY_ENOMEM;
    *p = q;
    *cap = c;
    return RALLY_OK;
}

static int row_begin(struct rally_dataset *ds, uint64_t off, int labeled, float label)
{
    uint64_t need = ds->nrows + 2, c;
    c = ds->cap_rows;
    if (grow((void **)&ds->row_ptr, &c, need, sizeof *ds->row_ptr) != RALLY_OK)
        return RALLY_ENOMEM;
    c = ds->cap_rows;
    if (grow((void **)&ds->row_off, &c, need, sizeof *ds->row_off) != RALLY_OK)
        return RALLY_ENOMEM;
    if (labeled) {
        c = ds->cap_rows;
        if (grow((void **)&ds->label, &c, need, sizeof *ds->label) != RALLY_OK)
            return RALLY_ENOMEM;
        ds->label[ds->nrows] = label;
    }
    ds->cap_rows = c;
    ds->row_off[ds->nrows] = off;
    ds->row_ptr[ds->nrows] = ds->nent;
    return RALLY_OK;
}

static int entry(struct rally_dataset *ds, uint64_t j, float v)
{
    if (ds->nent == ds->cap_ent) {
        uint64_t c = ds->cap_ent;
        if (grow((void **)&ds->idx, &c, ds->nent + 1, sizeof *ds->idx) != RALLY_OK)
            return RALLY_ENOMEM;
        c = ds->cap_ent;
        if (grow((void **)&ds->val, &c, ds->nent + 1, sizeof *ds->val) != RALLY_OK)
            return RALLY_ENOMEM;
        ds->cap_ent = c;
    }
    ds->idx[ds->nent] = (uint32_t)j;
    ds->val[ds->nent] = v;
    ds->nent++;
    return RALLY_OK;
}

static void row_end(struct rally_dataset *ds)
{
    ds->nrows++;
    ds->row_ptr[ds->nrows] = ds->nent;
}

/* --- LIBSVM ---------------------------------------------------------------- */

static int parse_libsvm(struct rally__parser *p, char *line, size_t n, uint64_t off,
                        struct rally__perr *pe)
{
    struct rally_dataset *ds = p->ds;
    const struct rally_data_opts *o = p->o;
    size_t i = 0;
    char q[64];
    while (i < n && is_blank(line[i]))
        i++;
    size_t t = i;
    while (i < n && !is_blank(line[i]))
        i++;
    float label;
    int why = to_float(line + t, i - t, p->loc, &label);
    if (why != 0)
        return bad_number(pe, line, line + t, i - t, why, "the label");
    if (row_begin(ds, off, 1, label) != RALLY_OK)
        return RALLY_ENOMEM;
    uint64_t prev = 0;
    int have_prev = 0;
    for (;;) {
        while (i < n && is_blank(line[i]))
            i++;
        if (i == n || line[i] == '#')
            break;
        t = i;
        while (i < n && !is_blank(line[i]))
            i++;
        char *tok = line + t;
        size_t tn = i - t;
        char *colon = memchr(tok, ':', tn);
        if (colon == NULL) {
            rally__data_quote(q, sizeof q, tok, tn);
            return perr(pe, line, tok, "expected index:value, found %s", q);
        }
        size_t kn = (size_t)(colon - tok);
        char *vs = colon + 1;
        size_t vn = tn - kn - 1;
        if (kn == 3 && memcmp(tok, "qid", 3) == 0 && !have_prev) {
            int ok = vn > 0 && vn <= 19;
            for (size_t k = 0; k < vn && ok; k++)
                ok = is_digit(vs[k]);
            if (!ok) {
                rally__data_quote(q, sizeof q, vs, vn);
                return perr(pe, line, vs, "qid %s is not a non-negative integer", q);
            }
            continue;
        }
        uint64_t idx = 0;
        int digits = kn > 0;
        for (size_t k = 0; k < kn && digits; k++)
            digits = is_digit(tok[k]);
        for (size_t k = 0; k < kn && k < 19 && digits; k++)
            idx = idx * 10 + (uint64_t)(tok[k] - '0');
        if (!digits || kn > 19) {
            rally__data_quote(q, sizeof q, tok, kn);
            if (digits)
                return perr(pe, line, tok, "feature index %s is out of range (the limit is %llu)",
                            q, (unsigned long long)RALLY__DATA_MAX_FEATURES - 1);
            return perr(pe, line, tok, "feature index %s is not a non-negative integer", q);
        }
        if (idx < (uint64_t)o->index_base)
            return perr(pe, line, tok,
                        "feature index %llu is out of range: indices start at %d "
                        "(libsvm_index_base=%d)",
                        (unsigned long long)idx, o->index_base, o->index_base);
        uint64_t j = idx - (uint64_t)o->index_base;
        if (o->num_features != 0 && j >= o->num_features)
            return perr(pe, line, tok,
                        "feature index %llu is out of range: num_features is %llu, so the "
                        "largest index is %llu",
                        (unsigned long long)idx, (unsigned long long)o->num_features,
                        (unsigned long long)(o->num_features - 1 + (uint64_t)o->index_base));
        if (j >= RALLY__DATA_MAX_FEATURES)
            return perr(
                pe, line, tok, "feature index %llu is out of range (the limit is %llu)",
                (unsigned long long)idx,
                (unsigned long long)(RALLY__DATA_MAX_FEATURES - 1 + (uint64_t)o->index_base));
        if (have_prev && idx <= prev)
            return perr(pe, line, tok,
                        "feature index %llu does not increase (the previous index on this line "
                        "is %llu)",
                        (unsigned long long)idx, (unsigned long long)prev);
        float v;
        why = to_float(vs, vn, p->loc, &v);
        if (why != 0) {
            char what[48];
            snprintf(what, sizeof what, "the value of feature %llu", (unsigned long long)idx);
            return bad_number(pe, line, vs, vn, why, what);
        }
        if (entry(ds, j, v) != RALLY_OK)
            return RALLY_ENOMEM;
        if (o->num_features == 0 && j + 1 > ds->nfeat)
            ds->nfeat = j + 1;
        prev = idx;
        have_prev = 1;
    }
    row_end(ds);
    return RALLY_OK;
}

/* --- CSV ------------------------------------------------------------------- */

static int parse_csv(struct rally__parser *p, char *line, size_t n, uint64_t off,
                     struct rally__perr *pe)
{
    struct rally_dataset *ds = p->ds;
    const char d = p->delim;
    const int trim = !is_blank(d);
    size_t i = 0;
    uint64_t col = 0;
    int64_t lc = p->label_col;
    float label = 0;
    /* The label may sit anywhere in the line: find it first. */
    if (lc >= 0) {
        size_t s = 0;
        for (int64_t k = 0; k < lc; k++) {
            char *nx = memchr(line + s, d, n - s);
            if (nx == NULL) {
                s = n + 1;
                break;
            }
            s = (size_t)(nx - line) + 1;
        }
        if (s <= n) {
            char *nx = memchr(line + s, d, n - s);
            size_t e = nx ? (size_t)(nx - line) : n;
            while (trim && s < e && is_blank(line[s]))
                s++;
            while (trim && e > s && is_blank(line[e - 1]))
                e--;
            int why = to_float(line + s, e - s, p->loc, &label);
            if (why != 0)
                return bad_number(pe, line, line + s, e - s, why, "the label");
        }
        /* else: too few fields, reported below */
    }
    if (row_begin(ds, off, lc >= 0, label) != RALLY_OK)
        return RALLY_ENOMEM;
    for (;;) {
        char *nx = memchr(line + i, d, n - i);
        size_t e = nx ? (size_t)(nx - line) : n;
        if (col >= p->ncols) {
            uint64_t found = col + 1;
            for (size_t k = e; k < n; k++)
                found += line[k] == d;
            return perr(pe, line, line + i, "expected %llu fields (as on line 1), found %llu",
                        (unsigned long long)p->ncols, (unsigned long long)found);
        }
        size_t s = i;
        while (trim && s < e && is_blank(line[s]))
            s++;
        size_t te = e;
        while (trim && te > s && is_blank(line[te - 1]))
            te--;
        if ((int64_t)col != lc && te > s) {
            float v;
            int why = to_float(line + s, te - s, p->loc, &v);
            if (why != 0)
                return bad_number(pe, line, line + s, te - s, why, "the field");
            uint64_t j = (lc >= 0 && (int64_t)col > lc) ? col - 1 : col;
            if (entry(ds, j, v) != RALLY_OK)
                return RALLY_ENOMEM;
        }
        col++;
        if (nx == NULL)
            break;
        i = e + 1;
    }
    if (col < p->ncols)
        return perr(pe, line, line + n, "expected %llu fields (as on line 1), found %llu",
                    (unsigned long long)p->ncols, (unsigned long long)col);
    row_end(ds);
    return RALLY_OK;
}

int rally__data_parse_line(struct rally__parser *p, char *line, size_t n, uint64_t off,
                           struct rally__perr *pe)
{
    if (p->format == RALLY__FMT_LIBSVM)
        return parse_libsvm(p, line, n, off, pe);
    return parse_csv(p, line, n, off, pe);
}
