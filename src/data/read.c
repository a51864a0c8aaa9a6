/*
 * read.c — which records are this rank's, and reading them.
 *
 * Range mode (docs/data.md has the rule byte by byte): the file's S bytes
 * are cut at floor(S * r / world); a record belongs to the range holding its
 * first byte.  Rank r reads from start - 1 until the first newline (the
 * partial record before its first one), its records, and the rest of its
 * last record — never more than RALLY__DATA_TAIL_STEP bytes past that — and
 * line 1 when the format needs it.  Hash mode reads every line and keeps
 * those whose record hash modulo world is the rank.
 *
 * Lines go through a struct src: a buffer over pread() that grows up to
 * max_line + 1 bytes, so a line is always contiguous and an over-long line
 * is an error, never an unbounded allocation.  Reads stop at soft_end in big
 * chunks and continue beyond it in small steps.
 *
 * An error inside a record names path:line:column.  A range reader does
 * not know how many lines precede its range; only when it reports an error
 * does it count them (the one time it reads outside its range).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/data.h"

#define CHUNK ((size_t)1 << 20)

struct src {
    int fd;
    const char *name;
    uint64_t size;
    char *buf; /* cap + 1 bytes: room for a NUL after the last line */
    size_t cap, max_cap, max_line;
    uint64_t off;          /* file offset of buf[0] */
    size_t len, pos, scan; /* buf[pos..scan) holds no newline */
    uint64_t soft_end;
    uint64_t lo, hi, nbytes;
    struct rally__err *e;
};

static int src_init(struct src *s, int fd, const char *name, uint64_t size, size_t max_line,
                    size_t first_cap, struct rally__err *e)
{
    memset(s, 0, sizeof *s);
    s->fd = fd;
    s->name = name;
    s->size = size;
    s->max_line = max_line;
    s->max_cap = max_line + 1;
    s->cap = s->max_cap < first_cap ? s->max_cap : first_cap;
    if (s->cap > size + 1)
        s->cap = (size_t)size + 1; /* a small file needs no big buffer */
    s->buf = malloc(s->cap + 1);
    s->lo = UINT64_MAX;
    s->e = e;
    if (s->buf == NULL)
        return rally__fail(e, RALLY_ENOMEM, "%s: cannot allocate a %zu-byte read buffer", name,
                           s->cap + 1);
    return RALLY_OK;
}

static void src_seek(struct src *s, uint64_t off)
{
    s->off = off;
    s->len = s->pos = s->scan = 0;
}

/* Appends bytes to the buffer: 1 read some, 0 end of file, -1 an error
 * (in s->e). */
static int src_fill(struct src *s)
{
    if (s->len == s->cap) {
        if (s->pos > 0) {
            memmove(s->buf, s->buf + s->pos, s->len - s->pos);
            s->off += s->pos;
            s->len -= s->pos;
            s->scan -= s->pos;
            s->pos = 0;
        } else {
            size_t nc = s->cap * 2 < s->max_cap ? s->cap * 2 : s->max_cap;
            char *nb = nc > s->cap ? realloc(s->buf, nc + 1) : NULL;
            if (nb == NULL) {
                rally__fail(s->e, RALLY_ENOMEM, "%s: cannot allocate a %zu-byte line buffer",
                            s->name, nc + 1);
                return -1;
            }
            s->buf = nb;
            s->cap = nc;
        }
    }
    uint64_t at = s->off + s->len;
    if (at >= s->size)
        return 0;
    uint64_t want = s->cap - s->len;
    uint64_t lim = at < s->soft_end ? s->soft_end - at : RALLY__DATA_TAIL_STEP;
    if (want > lim)
        want = lim;
    if (want > s->size - at)
        want = s->size - at;
    ssize_t r;
    do
        r = pread(s->fd, s->buf + s->len, (size_t)want, (off_t)at);
    while (r < 0 && errno == EINTR);
    if (r < 0) {
        rally__fail_errno(s->e, RALLY_ESYS, errno, "%s: cannot read at byte %llu", s->name,
                          (unsigned long long)at);
        return -1;
    }
    if (r == 0) {
        rally__fail(s->e, RALLY_ESYS,
                    "%s: the file ends at byte %llu but was %llu bytes long when opened; "
                    "was it changed while being read?",
                    s->name, (unsigned long long)at, (unsigned long long)s->size);
        return -1;
    }
    if (at < s->lo)
        s->lo = at;
    if (at + (uint64_t)r > s->hi)
        s->hi = at + (uint64_t)r;
    s->nbytes += (uint64_t)r;
    s->len += (size_t)r;
    return 1;
}

/* The 1-based line holding byte off (0 when the file cannot be read). */
static uint64_t line_of(int fd, uint64_t off)
{
    char b[65536];
    uint64_t pos = 0, line = 1;
    while (pos < off) {
        size_t want = off - pos < sizeof b ? (size_t)(off - pos) : sizeof b;
        ssize_t r = pread(fd, b, want, (off_t)pos);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        for (const char *p = b, *end = b + r; (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
            line++;
        pos += (uint64_t)r;
    }
    return line;
}

static int fail_at(struct src *s, int code, uint64_t line_off, size_t col, const char *fmt, ...)
    RALLY__PRINTF(5, 6);

static int fail_at(struct src *s, int code, uint64_t line_off, size_t col, const char *fmt, ...)
{
    char msg[RALLY__ERR_MSG_MAX], where[48];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    uint64_t line = line_of(s->fd, line_off);
    if (line)
        snprintf(where, sizeof where, "%llu", (unsigned long long)line);
    else
        snprintf(where, sizeof where, "(line of byte %llu)", (unsigned long long)line_off);
    return rally__fail(s->e, code, "%s:%s:%zu: %s", s->name, where, col, msg);
}

static int too_long(struct src *s)
{
    fail_at(s, RALLY_EPROTO, s->off + s->pos, s->max_line + 1,
            "the line is longer than max_line_bytes (%zu bytes)", s->max_line);
    return -1;
}

/* The next line from the current position: 1 and *line (not
 * NUL-terminated, without its '\n'), *n, *off, *term (1 when a '\n' ended
 * it); 0 at the end of the file; -1 an error (in s->e). */
static int get_line(struct src *s, char **line, size_t *n, uint64_t *off, int *term)
{
    for (;;) {
        if (s->scan < s->len) {
            char *q = memchr(s->buf + s->scan, '\n', s->len - s->scan);
            if (q != NULL) {
                size_t ln = (size_t)(q - (s->buf + s->pos));
                if (ln > s->max_line)
                    return too_long(s);
                *line = s->buf + s->pos;
                *n = ln;
                *off = s->off + s->pos;
                *term = 1;
                s->pos = s->scan = (size_t)(q - s->buf) + 1;
                return 1;
            }
            s->scan = s->len;
        }
        if (s->len - s->pos > s->max_line)
            return too_long(s);
        int r = src_fill(s);
        if (r == 0) {
            if (s->pos == s->len)
                return 0;
            *line = s->buf + s->pos;
            *n = s->len - s->pos;
            *off = s->off + s->pos;
            *term = 0;
            s->pos = s->scan = s->len;
            return 1;
        }
        if (r < 0)
            return -1;
    }
}

/* Range mode: the offset just after the first '\n' in [from, limit - 1), or
 * limit when there is none (no record starts in [from + 1, limit)). */
static int skip_partial(struct src *s, uint64_t from, uint64_t limit, uint64_t *p)
{
    src_seek(s, from);
    for (;;) {
        char *q = memchr(s->buf + s->pos, '\n', s->len - s->pos);
        if (q != NULL) {
            s->pos = s->scan = (size_t)(q - s->buf) + 1;
            uint64_t at = s->off + s->pos;
            *p = at < limit ? at : limit;
            return RALLY_OK;
        }
        src_seek(s, s->off + s->len);
        if (s->off + 1 >= limit) {
            *p = limit;
            return RALLY_OK;
        }
        int r = src_fill(s);
        if (r == 0) {
            *p = limit;
            return RALLY_OK;
        }
        if (r < 0)
            return s->e->code;
    }
}

static int blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t')
            return 0;
    return 1;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void free_names(char **names, uint64_t n)
{
    if (names == NULL)
        return;
    for (uint64_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The CSV header's feature names (the label column left out). */
static int header_names(struct rally__parser *p, const char *l1, size_t n, char ***out)
{
    uint64_t nf = p->ncols - (p->label_col >= 0 ? 1 : 0);
    char **names = calloc(nf ? nf : 1, sizeof *names);
    if (names == NULL)
        return RALLY_ENOMEM;
    const int trim = p->delim != ' ' && p->delim != '\t';
    size_t i = 0;
    uint64_t j = 0;
    for (uint64_t col = 0; col < p->ncols; col++) {
        const char *nx = memchr(l1 + i, p->delim, n - i);
        size_t e = nx ? (size_t)(nx - l1) : n, s = i;
        while (trim && s < e && blank(l1 + s, 1))
            s++;
        while (trim && e > s && blank(l1 + e - 1, 1))
            e--;
        if (e - s >= 2 && l1[s] == '"' && l1[e - 1] == '"') {
            s++;
            e--;
        }
        if ((int64_t)col != p->label_col) {
            names[j] = malloc(e - s + 1);
            if (names[j] == NULL) {
                free_names(names, nf);
                return RALLY_ENOMEM;
            }
            memcpy(names[j], l1 + s, e - s);
            names[j][e - s] = '\0';
            j++;
        }
        i = nx ? (size_t)(nx - l1) + 1 : n;
    }
    *out = names;
    return RALLY_OK;
}

/* Does line 1 look like a header: is one of its fields not a number? */
static int looks_like_header(const char *l1, size_t n, char d)
{
    const int trim = d != ' ' && d != '\t';
    size_t i = 0;
    for (;;) {
        const char *nx = memchr(l1 + i, d, n - i);
        size_t e = nx ? (size_t)(nx - l1) : n, s = i;
        while (trim && s < e && blank(l1 + s, 1))
            s++;
        while (trim && e > s && blank(l1 + e - 1, 1))
            e--;
        if (e > s && !rally__data_is_number(l1 + s, e - s))
            return 1;
        if (nx == NULL)
            return 0;
        i = (size_t)(nx - l1) + 1;
    }
}

uint64_t rally__data_split(uint64_t size, int r, int world)
{
    uint64_t n = (uint64_t)world, q = size / n, m = size % n;
    return q * (uint64_t)r + m * (uint64_t)r / n;
}

void rally_data_free(rally_dataset_t *ds)
{
    if (ds == NULL)
        return;
    free(ds->name);
    free(ds->row_ptr);
    free(ds->idx);
    free(ds->val);
    free(ds->label);
    free(ds->row_off);
    free_names(ds->names, ds->nfeat);
    free(ds);
}

struct reader {
    struct src s, probe;
    struct rally__parser p;
    struct rally_dataset *ds;
    uint64_t bytes_fp; /* FNV-1a over the shard's bytes */
};

/* One line of the shard: hash it, skip it when blank, parse it otherwise. */
static int take(struct reader *rd, char *line, size_t n, uint64_t off, int term)
{
    struct rally__perr pe;
    const uint64_t next = off + n + (size_t)term;
    if (rd->ds->partition == RALLY__PART_RANGE) {
        rd->bytes_fp = rally__fnv1a(rd->bytes_fp, line, n);
        if (term)
            rd->bytes_fp = rally__fnv1a(rd->bytes_fp, "\n", 1);
    }
    if (n > 0 && line[n - 1] == '\r')
        n--;
    if (blank(line, n))
        return RALLY_OK;
    if (rd->ds->partition == RALLY__PART_HASH) {
        if (rally__data_record_hash(line, n) % (uint64_t)rd->ds->world != (uint64_t)rd->ds->rank)
            return RALLY_OK;
        rd->bytes_fp = rally__fnv1a_u64(rd->bytes_fp, off);
        rd->bytes_fp = rally__fnv1a(rd->bytes_fp, line, n);
        if (rd->ds->nrows == 0)
            rd->ds->first = off;
        rd->ds->end = next;
    }
    line[n] = '\0';
    int rc = rally__data_parse_line(&rd->p, line, n, off, &pe);
    if (rc == RALLY_ENOMEM)
        return rally__fail(rd->s.e, rc, "%s: out of memory after %llu rows", rd->ds->name,
                           (unsigned long long)rd->ds->nrows);
    if (rc != RALLY_OK)
        return fail_at(&rd->s, rc, off, pe.col, "%s", pe.msg);
    return RALLY_OK;
}

/* Line 1 decides the format (when auto) and, for CSV, the column count and
 * the header.  *body is the offset of the first byte that can be a record. */
static int probe(struct reader *rd, const struct rally_data_opts *o, uint64_t *body)
{
    struct rally_dataset *ds = rd->ds;
    struct src *s = &rd->probe;
    int fmt = o->format, tsv = ends_with(ds->name, ".tsv");
    if (fmt == RALLY__FMT_AUTO) {
        if (ends_with(ds->name, ".csv") || tsv)
            fmt = RALLY__FMT_CSV;
        else if (ends_with(ds->name, ".svm") || ends_with(ds->name, ".libsvm"))
            fmt = RALLY__FMT_LIBSVM;
    }
    *body = 0;
    char *l1 = NULL;
    size_t n1 = 0;
    if (fmt != RALLY__FMT_LIBSVM) {
        uint64_t off;
        int term, rc = get_line(s, &l1, &n1, &off, &term);
        if (rc < 0)
            return s->e->code;
        if (rc == 0) /* cannot happen: the file is not empty */
            return rally__fail(s->e, RALLY_ESYS, "%s: cannot read line 1", ds->name);
        ds->io_probe_end = s->hi;
        *body = off + n1 + (size_t)term; /* after line 1 */
        if (n1 > 0 && l1[n1 - 1] == '\r')
            n1--;
        if (fmt == RALLY__FMT_AUTO)
            fmt = memchr(l1, ':', n1) != NULL ? RALLY__FMT_LIBSVM : RALLY__FMT_CSV;
    }
    rd->p.format = ds->format = fmt;
    if (fmt == RALLY__FMT_LIBSVM) {
        *body = 0;
        return RALLY_OK;
    }
    struct rally__parser *p = &rd->p;
    p->delim = o->delim ? o->delim : (tsv ? '\t' : ',');
    if (blank(l1, n1))
        return fail_at(s, RALLY_EPROTO, 0, 1,
                       "line 1 is empty; a CSV file's column count comes from line 1");
    p->ncols = 1;
    for (size_t i = 0; i < n1; i++)
        p->ncols += l1[i] == p->delim;
    p->label_col = o->csv_label;
    if (p->label_col >= 0 && (uint64_t)p->label_col >= p->ncols)
        return fail_at(s, RALLY_EINVAL, 0, 1,
                       "csv_label is column %lld but line 1 has %llu fields (columns count "
                       "from 0)",
                       (long long)p->label_col, (unsigned long long)p->ncols);
    ds->nfeat = p->ncols - (p->label_col >= 0 ? 1 : 0);
    int header = o->csv_header == RALLY__HDR_YES ||
                 (o->csv_header == RALLY__HDR_AUTO && looks_like_header(l1, n1, p->delim));
    if (!header) {
        *body = 0;
        return RALLY_OK;
    }
    if (header_names(p, l1, n1, &ds->names) != RALLY_OK)
        return rally__fail(s->e, RALLY_ENOMEM, "%s: out of memory reading the header", ds->name);
    if (*body >= ds->fsize)
        return rally__fail(s->e, RALLY_EPROTO, "%s:2:1: the file has a header but no records",
                           ds->name);
    return RALLY_OK;
}

static int finish(struct reader *rd)
{
    struct rally_dataset *ds = rd->ds;
    /* Never hand out NULL arrays, even for an empty shard. */
    if (ds->row_ptr == NULL && (ds->row_ptr = calloc(1, sizeof *ds->row_ptr)) == NULL)
        return RALLY_ENOMEM;
    if (ds->row_off == NULL && (ds->row_off = calloc(1, sizeof *ds->row_off)) == NULL)
        return RALLY_ENOMEM;
    if (ds->idx == NULL && (ds->idx = calloc(1, sizeof *ds->idx)) == NULL)
        return RALLY_ENOMEM;
    if (ds->val == NULL && (ds->val = calloc(1, sizeof *ds->val)) == NULL)
        return RALLY_ENOMEM;
    int labeled = ds->format == RALLY__FMT_LIBSVM || rd->p.label_col >= 0;
    if (ds->format == RALLY__FMT_LIBSVM && rd->p.o->num_features != 0)
        ds->nfeat = rd->p.o->num_features;
    if (labeled && ds->label == NULL && (ds->label = calloc(1, sizeof *ds->label)) == NULL)
        return RALLY_ENOMEM;
    uint64_t h = rally__fnv1a(RALLY__FNV_INIT, "rally-shard-v1", 14);
    h = rally__fnv1a_u64(h, (uint64_t)ds->partition);
    h = rally__fnv1a_u64(h, (uint64_t)ds->world);
    h = rally__fnv1a_u64(h, (uint64_t)ds->rank);
    h = rally__fnv1a_u64(h, ds->fsize);
    h = rally__fnv1a_u64(h, ds->first);
    h = rally__fnv1a_u64(h, ds->end);
    h = rally__fnv1a_u64(h, ds->nrows);
    ds->fp = rally__fnv1a_u64(h, rd->bytes_fp);
    ds->io_lo = rd->s.lo == UINT64_MAX ? 0 : rd->s.lo;
    ds->io_hi = rd->s.hi;
    ds->io_bytes = rd->s.nbytes + rd->probe.nbytes;
    return RALLY_OK;
}

static int read_shard(struct reader *rd, const struct rally_data_opts *o)
{
    struct rally_dataset *ds = rd->ds;
    struct src *s = &rd->s;
    uint64_t size = ds->fsize, body;
    if (size == 0)
        return rally__fail(s->e, RALLY_EPROTO, "%s:1:1: the file is empty", ds->name);
    int rc = probe(rd, o, &body);
    if (rc != RALLY_OK)
        return rc;
    char *line;
    size_t n;
    uint64_t off;
    int term;
    if (ds->partition == RALLY__PART_HASH) {
        s->soft_end = size;
        src_seek(s, body);
        ds->first = ds->end = body;
        while ((rc = get_line(s, &line, &n, &off, &term)) == 1)
            if ((rc = take(rd, line, n, off, term)) != RALLY_OK)
                return rc;
        return rc == 0 ? finish(rd) : s->e->code;
    }
    uint64_t start = rally__data_split(size, ds->rank, ds->world);
    uint64_t end = rally__data_split(size, ds->rank + 1, ds->world);
    uint64_t p = body;
    s->soft_end = end;
    if (start > body) {
        if ((rc = skip_partial(s, start - 1, end, &p)) != RALLY_OK)
            return rc;
    } else {
        src_seek(s, body);
    }
    ds->first = ds->end = p;
    while (p < end && (rc = get_line(s, &line, &n, &off, &term)) == 1) {
        p = off + n + (size_t)term;
        if ((rc = take(rd, line, n, off, term)) != RALLY_OK)
            return rc;
    }
    if (rc < 0)
        return s->e->code;
    if (p > ds->first)
        ds->end = p;
    return finish(rd);
}

int rally__data_read_fd(int fd, const char *name, const struct rally_data_opts *o, int rank,
                        int world, struct rally_dataset **out, struct rally__err *e)
{
    struct rally_data_opts defaults;
    if (o == NULL) {
        rally__data_opts_default(&defaults);
        o = &defaults;
    }
    if (world < 1 || rank < 0 || rank >= world)
        return rally__fail(e, RALLY_EINVAL, "%s: rank %d is not in [0, %d)", name, rank, world);
    struct stat st;
    if (fstat(fd, &st) != 0)
        return rally__fail_errno(e, RALLY_ESYS, errno, "%s: cannot stat", name);
    struct reader rd;
    memset(&rd, 0, sizeof rd);
    int rc = RALLY_ENOMEM;
    rd.ds = calloc(1, sizeof *rd.ds);
    if (rd.ds == NULL || (rd.ds->name = strdup(name)) == NULL) {
        rally__fail(e, RALLY_ENOMEM, "%s: out of memory", name);
        goto out;
    }
    rd.ds->fsize = (uint64_t)st.st_size;
    rd.ds->rank = rank;
    rd.ds->world = world;
    rd.ds->partition = o->partition;
    rd.bytes_fp = RALLY__FNV_INIT;
    rd.p.o = o;
    rd.p.ds = rd.ds;
    rd.p.label_col = -1;
    rd.p.loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (rd.p.loc == (locale_t)0) {
        rc = rally__fail_errno(e, RALLY_ENOMEM, errno, "%s: cannot create the C locale", name);
        goto out;
    }
    if ((rc = src_init(&rd.s, fd, rd.ds->name, rd.ds->fsize, o->max_line, CHUNK, e)) != RALLY_OK ||
        (rc = src_init(&rd.probe, fd, rd.ds->name, rd.ds->fsize, o->max_line, RALLY__DATA_TAIL_STEP,
                       e)) != RALLY_OK)
        goto out;
    if ((rc = read_shard(&rd, o)) == RALLY_ENOMEM && e->code == RALLY_OK)
        rally__fail(e, RALLY_ENOMEM, "%s: out of memory", name);
out:
    if (rd.p.loc != (locale_t)0)
        freelocale(rd.p.loc);
    free(rd.s.buf);
    free(rd.probe.buf);
    if (rc != RALLY_OK) {
        rally_data_free(rd.ds);
        return rc;
    }
    *out = rd.ds;
    return RALLY_OK;
}

int rally_data_read(const char *path, const rally_data_opts_t *opts, int rank, int world,
                    rally_dataset_t **out, char *err, size_t errcap)
{
    struct rally__err e = {0};
    if (path == NULL || out == NULL) {
        rally__fail(&e, RALLY_EINVAL, "rally_data_read: path and out must not be NULL");
    } else {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            rally__fail_errno(&e, RALLY_ESYS, errno, "%s: cannot open for reading", path);
        } else {
            rally__data_read_fd(fd, path, opts, rank, world, out, &e);
            close(fd);
        }
    }
    if (e.code != RALLY_OK)
        rally__data_errout(&e, err, errcap);
    return e.code;
}
