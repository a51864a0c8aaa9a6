/*
 * fuzz_data.c — libFuzzer target for the LIBSVM or CSV reader (compiled
 * twice, with FUZZ_CSV 0 or 1; tests/fuzz/fuzz.cmake).
 *
 * The input's first byte chooses options (partition, header, label column,
 * delimiter, index base, a small line limit, auto format); the rest is the
 * file, served from a memfd.  Besides "never crash, never leak", it checks
 * the partition invariant: when one worker reads the file without error,
 * so does every rank of 2 and 3 workers, in range and hash mode, and their
 * rows add up to the single worker's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "data/data.h"

#ifndef FUZZ_CSV
#define FUZZ_CSV 0
#endif

static int fd = -1;

static void die(const char *what, const char *err)
{
    fprintf(stderr, "fuzz_data: %s%s%s\n", what, err ? ": " : "", err ? err : "");
    abort();
}

static int read_all(const struct rally_data_opts *o, int world, uint64_t *rows, uint64_t *ent,
                    struct rally__err *first_err)
{
    *rows = *ent = 0;
    for (int r = 0; r < world; r++) {
        struct rally__err e = {0};
        struct rally_dataset *ds = NULL;
        int rc = rally__data_read_fd(fd, FUZZ_CSV ? "fuzz.csv" : "fuzz.svm", o, r, world, &ds, &e);
        if (rc != RALLY_OK) {
            if (e.code != rc || e.msg[0] == '\0')
                die("an error without a message", NULL);
            if (strncmp(e.msg, "fuzz.", 5) != 0)
                die("an error that does not name the file", e.msg);
            if (first_err)
                *first_err = e;
            return rc;
        }
        const uint64_t *rp;
        const uint32_t *ix;
        const float *v;
        rally_data_csr(ds, &rp, &ix, &v);
        for (uint64_t i = 0; i < ds->nrows; i++) {
            if (rp[i] > rp[i + 1])
                die("row pointers decrease", NULL);
            for (uint64_t k = rp[i]; k < rp[i + 1]; k++)
                if ((k > rp[i] && ix[k] <= ix[k - 1]) || ix[k] >= ds->nfeat)
                    die("indices not increasing or beyond num_features", NULL);
        }
        char fp[17];
        if (rally_data_fingerprint(ds, fp, sizeof fp) != RALLY_OK)
            die("no fingerprint", NULL);
        *rows += ds->nrows;
        *ent += ds->nent;
        rally_data_free(ds);
    }
    return RALLY_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (fd < 0 && (fd = memfd_create("fuzz", 0)) < 0)
        die("memfd_create", NULL);
    unsigned ctl = data[0];
    data++;
    size--;
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        die("cannot write the memfd", NULL);

    struct rally_data_opts o;
    rally__data_opts_default(&o);
    o.format = (ctl & 0x80) ? RALLY__FMT_AUTO : (FUZZ_CSV ? RALLY__FMT_CSV : RALLY__FMT_LIBSVM);
    o.max_line = (ctl & 0x40) ? 64 : RALLY__DATA_MAX_LINE_DEFAULT;
    if (FUZZ_CSV) {
        o.csv_header = ctl & 3; /* no, yes, auto, (3: no) */
        if (o.csv_header == 3)
            o.csv_header = RALLY__HDR_NO;
        o.csv_label = (ctl & 4) ? (int64_t)((ctl >> 3) & 3) : -1;
        o.delim = (ctl & 0x20) ? '\t' : '\0';
    } else {
        o.index_base = ctl & 1;
        o.num_features = (ctl & 2) ? 8 : 0;
    }
    uint64_t rows1, ent1;
    for (int mode = 0; mode < 2; mode++) {
        o.partition = mode;
        struct rally__err e1 = {0};
        if (read_all(&o, 1, &rows1, &ent1, &e1) != RALLY_OK)
            continue;
        for (int world = 2; world <= 3; world++) {
            uint64_t rows, ent;
            struct rally__err e = {0};
            if (read_all(&o, world, &rows, &ent, &e) != RALLY_OK)
                die("one worker read the file but a shard failed", e.msg);
            if (rows != rows1 || ent != ent1)
                die("shards do not add up to the whole file", NULL);
        }
    }
    return 0;
}
