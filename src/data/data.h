/*
 * data.h — the data layer's internals (src/data): options, the dataset
 * builder, the record parsers, the shard reader and the hashes.
 *
 * The layer uses only src/util.  rally_data_read() (read.c) opens the file
 * and calls rally__data_read_fd(), which decides the shard (docs/data.md),
 * walks its lines with a bounded buffer and hands each record to a parser
 * (parse.c) that appends to a struct rally_dataset.  Tests and the fuzzers
 * call rally__data_read_fd() directly and look at the io_* fields to prove
 * a worker read only its byte range.
 */
#ifndef RALLY_DATA_DATA_H
#define RALLY_DATA_DATA_H

#include <locale.h>
#include <stddef.h>
#include <stdint.h>

#include "rally/data.h"
#include "util/err.h"

enum { RALLY__FMT_AUTO = 0, RALLY__FMT_LIBSVM = 1, RALLY__FMT_CSV = 2 };
enum { RALLY__PART_RANGE = 0, RALLY__PART_HASH = 1 };
enum { RALLY__HDR_NO = 0, RALLY__HDR_YES = 1, RALLY__HDR_AUTO = 2 };

#define RALLY__DATA_MAX_LINE_DEFAULT ((size_t)16 << 20)
#define RALLY__DATA_MAX_LINE_LIMIT ((size_t)1 << 30)
/* Feature indices (0-based, after the LIBSVM base) stay below this. */
#define RALLY__DATA_MAX_FEATURES ((uint64_t)INT32_MAX)
/* A number token longer than this is an error, not work for strtof. */
#define RALLY__DATA_MAX_NUMBER 256
/* Past its end offset a range reader reads in steps this big. */
#define RALLY__DATA_TAIL_STEP 4096

struct rally_data_opts {
    int format;
    int partition;
    int csv_header;
    int64_t csv_label; /* -1: none */
    char delim;        /* '\0': by format/extension (',' or '\t' for .tsv) */
    int index_base;
    uint64_t num_features; /* 0: infer */
    size_t max_line;
};

struct rally_dataset {
    char *name;
    int format, partition, rank, world;
    uint64_t nrows, nfeat, nent;
    uint64_t *row_ptr; /* nrows + 1 */
    uint32_t *idx;
    float *val;
    float *label; /* NULL: no labels */
    uint64_t *row_off;
    char **names; /* CSV header: nfeat names, else NULL */
    uint64_t fsize, first, end;
    uint64_t fp;
    /* What the reader read: line 1 (the probe) [0, io_probe_end), and the
     * shard [io_lo, io_hi); io_bytes counts every byte read, both parts. */
    uint64_t io_probe_end, io_lo, io_hi, io_bytes;
    /* builder capacities */
    uint64_t cap_rows, cap_ent;
};

/* A parse error inside one line: the 1-based byte column and a sentence. */
struct rally__perr {
    size_t col;
    char msg[256];
};

struct rally__parser {
    const struct rally_data_opts *o;
    int format;
    char delim;
    uint64_t ncols;    /* CSV: fields per line (from line 1) */
    int64_t label_col; /* CSV: -1 none */
    locale_t loc;
    struct rally_dataset *ds;
};

/* Parses one record (line without its line end, NUL-terminated at line[n],
 * not blank) that starts at file offset off, appending a row to p->ds.
 * RALLY_EPROTO with *pe filled for malformed input, RALLY_ENOMEM. */
int rally__data_parse_line(struct rally__parser *p, char *line, size_t n, uint64_t off,
                           struct rally__perr *pe);

/* Strict decimal number syntax: [+-]? (d+ (. d*)? | . d+) ([eE] [+-]? d+)? */
int rally__data_is_number(const char *s, size_t n);

/* Quotes at most 40 bytes of s for a message, replacing unprintable bytes. */
void rally__data_quote(char *out, size_t cap, const char *s, size_t n);

int rally__data_read_fd(int fd, const char *name, const struct rally_data_opts *o, int rank,
                        int world, struct rally_dataset **out, struct rally__err *e);

void rally__data_opts_default(struct rally_data_opts *o);

/* Copies e's message into err[0..errcap) (err may be NULL). */
void rally__data_errout(const struct rally__err *e, char *err, size_t errcap);

/* The first byte of rank r's range among world ranks in a file of size bytes:
 * floor(size * r / world) without overflow. */
uint64_t rally__data_split(uint64_t size, int r, int world);

#define RALLY__FNV_INIT 0xcbf29ce484222325ULL
#define RALLY__FNV_PRIME 0x100000001b3ULL

static inline uint64_t rally__fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * RALLY__FNV_PRIME;
    return h;
}

static inline uint64_t rally__fnv1a_u64(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        h = (h ^ ((v >> (8 * i)) & 0xff)) * RALLY__FNV_PRIME;
    return h;
}

/* The 64-bit finaliser of MurmurHash3 (fmix64): spreads FNV's weak low bits
 * before the hash partition takes h mod world. */
static inline uint64_t rally__mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

/* The record hash of hash partitioning (docs/data.md): over the record's
 * bytes without its line end. */
static inline uint64_t rally__data_record_hash(const void *p, size_t n)
{
    return rally__mix64(rally__fnv1a(RALLY__FNV_INIT, p, n));
}

#endif
