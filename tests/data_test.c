/*
 * data_test.c — the data layer (src/data, include/rally/data.h): readers,
 * partitioning, fingerprints and the generator.
 *
 * Malformed input: every case names its exact "path:line:column: sentence".
 * Partitioning: for world = 1..9 and several files (generated blobs, CRLF,
 * no final newline, a huge record straddling ranges, fewer records than
 * workers, a CSV header, blank lines) the shards' rows, found by their file
 * offsets, are disjoint and cover the file's records exactly, each row equals
 * the same row read by a single worker, each rank's rows obey the range or
 * hash rule, and a range reader read nothing outside [start - 1, end of its
 * last record + one tail step) besides line 1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>

#include "data/data.h"
#include "rally/data.h"

double rally__data_log(double x);
double rally__data_sqrt(double y);
int rally__data_fmt_float(char *out, float f);

static char dir[64];
static char paths[96][128];
static int npaths;

static const char *tmp_path(const char *name)
{
    assert_true(npaths < 96);
    snprintf(paths[npaths], sizeof paths[npaths], "%s/%s", dir, name);
    return paths[npaths++];
}

static const char *put_file(const char *name, const char *bytes, size_t n)
{
    const char *p = tmp_path(name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    return p;
}

static const char *put(const char *name, const char *text)
{
    return put_file(name, text, strlen(text));
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    b[len] = '\0';
    *n = (size_t)len;
    return b;
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/rally-data-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < npaths; i++)
        unlink(paths[i]);
    return rmdir(dir);
}

static rally_data_opts_t *opts(const char *kv1, const char *kv2, const char *kv3)
{
    rally_data_opts_t *o;
    char err[256];
    assert_int_equal(rally_data_opts_new(&o), RALLY_OK);
    const char *kv[] = {kv1, kv2, kv3};
    for (int i = 0; i < 3; i++)
        if (kv[i])
            assert_int_equal(rally_data_opts_parse(o, kv[i], err, sizeof err), RALLY_OK);
    return o;
}

/* Reads and expects failure with status code and message exactly. */
static void expect_error(const char *path, const rally_data_opts_t *o, int rank, int world,
                         int code, const char *msg_after_path)
{
    rally_dataset_t *ds = (rally_dataset_t *)0x1;
    char err[512], want[512];
    int rc = rally_data_read(path, o, rank, world, &ds, err, sizeof err);
    if (rc != code)
        fail_msg("%s: want status %d, got %d (%s)", path, code, rc, rc ? err : "");
    assert_ptr_equal(ds, (rally_dataset_t *)0x1); /* untouched on failure */
    snprintf(want, sizeof want, "%s%s", path, msg_after_path);
    assert_string_equal(err, want);
}

static rally_dataset_t *read_ok(const char *path, const rally_data_opts_t *o, int rank, int world)
{
    rally_dataset_t *ds = NULL;
    char err[512];
    int rc = rally_data_read(path, o, rank, world, &ds, err, sizeof err);
    if (rc != RALLY_OK)
        fail_msg("rank %d/%d of %s: %s", rank, world, path, err);
    return ds;
}

/* --- malformed input ------------------------------------------------------- */

static void libsvm_errors(void **state)
{
    (void)state;
    rally_data_opts_t *o = opts("format=libsvm", NULL, NULL);
    expect_error(put("bad_label.svm", "1 1:2\nx 1:2\n"), o, 0, 1, RALLY_EPROTO,
                 ":2:1: the label 'x' is not a number");
    expect_error(put("bad_value.svm", "1 1:2\n0 1:0.5 2:abc\n"), o, 0, 1, RALLY_EPROTO,
                 ":2:11: the value of feature 2 'abc' is not a number");
    expect_error(put("empty_value.svm", "0 1:\n"), o, 0, 1, RALLY_EPROTO,
                 ":1:5: the value of feature 1 is empty; expected a number");
    expect_error(put("nan.svm", "0 1:nan\n"), o, 0, 1, RALLY_EPROTO,
                 ":1:5: the value of feature 1 'nan' is not a number");
    expect_error(put("inf.svm", "0 1:-inf\n"), o, 0, 1, RALLY_EPROTO,
                 ":1:5: the value of feature 1 '-inf' is not a number");
    expect_error(put("hex.svm", "0 1:0x10\n"), o, 0, 1, RALLY_EPROTO,
                 ":1:5: the value of feature 1 '0x10' is not a number");
    expect_error(put("huge.svm", "0 1:1e39\n"), o, 0, 1, RALLY_EPROTO,
                 ":1:5: the value of feature 1 '1e39' is out of the range of a 32-bit float");
    expect_error(put("trailing.svm", "0 1:1.5x\n"), o, 0, 1, RALLY_EPROTO,
                 ":1:5: the value of feature 1 '1.5x' is not a number");
    expect_error(put("not_inc.svm", "1 2:1 2:3\n"), o, 0, 1, RALLY_EPROTO,
                 ":1:7: feature index 2 does not increase (the previous index on this line is 2)");
    expect_error(put("dec.svm", "1 5:1 3:3\n"), o, 0, 1, RALLY_EPROTO,
                 ":1:7: feature index 3 does not increase (the previous index on this line is 5)");
    expect_error(put("zero.svm", "1 0:1\n"), o, 0, 1, RALLY_EPROTO,
                 ":1:3: feature index 0 is out of range: indices start at 1 "
                 "(libsvm_index_base=1)");
    expect_error(put("neg.svm", "1 -1:1\n"), o, 0, 1, RALLY_EPROTO,
                 ":1:3: feature index '-1' is not a non-negative integer");
    expect_error(put("big_index.svm", "1 99999999999999999999:1\n"), o, 0, 1, RALLY_EPROTO,
                 ":1:3: feature index '99999999999999999999' is out of range (the limit is "
                 "2147483646)");
    expect_error(put("limit.svm", "1 2147483648:1\n"), o, 0, 1, RALLY_EPROTO,
                 ":1:3: feature index 2147483648 is out of range (the limit is 2147483647)");
    expect_error(put("no_colon.svm", "1 1:1 3\n"), o, 0, 1, RALLY_EPROTO,
                 ":1:7: expected index:value, found '3'");
    expect_error(put("crlf.svm", "1 1:1\r\n1 1:1 1:2\r\n"), o, 0, 1, RALLY_EPROTO,
                 ":2:7: feature index 1 does not increase (the previous index on this line is 1)");
    rally_data_opts_free(o);

    o = opts("format=libsvm", "num_features=3", NULL);
    expect_error(put("range.svm", "1 1:1 3:1\n1 2:2 4:1\n"), o, 0, 1, RALLY_EPROTO,
                 ":2:7: feature index 4 is out of range: num_features is 3, so the largest "
                 "index is 3");
    rally_data_opts_free(o);
    o = opts("format=libsvm", "libsvm_index_base=0", "num_features=3");
    expect_error(put("range0.svm", "1 0:1 3:1\n"), o, 0, 1, RALLY_EPROTO,
                 ":1:7: feature index 3 is out of range: num_features is 3, so the largest "
                 "index is 2");
    rally_data_opts_free(o);
}

static void csv_errors(void **state)
{
    (void)state;
    rally_data_opts_t *o = opts("format=csv", NULL, NULL);
    expect_error(put("short.csv", "1,2,3\n4,5\n"), o, 0, 1, RALLY_EPROTO,
                 ":2:4: expected 3 fields (as on line 1), found 2");
    expect_error(put("long.csv", "1,2\n3,4,5,6\n"), o, 0, 1, RALLY_EPROTO,
                 ":2:5: expected 2 fields (as on line 1), found 4");
    expect_error(put("bad.csv", "1,2\n3, x \n"), o, 0, 1, RALLY_EPROTO,
                 ":2:4: the field 'x' is not a number");
    expect_error(put("crlf_bad.csv", "1,2\r\n3,4\r\n5,6e\r\n"), o, 0, 1, RALLY_EPROTO,
                 ":3:3: the field '6e' is not a number");
    expect_error(put("first_blank.csv", "\n1,2\n"), o, 0, 1, RALLY_EPROTO,
                 ":1:1: line 1 is empty; a CSV file's column count comes from line 1");
    rally_data_opts_free(o);

    o = opts("format=csv", "csv_header=yes", NULL);
    expect_error(put("only_header.csv", "a,b,c\n"), o, 0, 1, RALLY_EPROTO,
                 ":2:1: the file has a header but no records");
    expect_error(put("only_header2.csv", "a,b,c"), o, 2, 3, RALLY_EPROTO,
                 ":2:1: the file has a header but no records");
    rally_data_opts_free(o);

    o = opts("format=csv", "csv_label=1", NULL);
    expect_error(put("no_label.csv", "1,2,3\n4,,6\n"), o, 0, 1, RALLY_EPROTO,
                 ":2:3: the label is empty; expected a number");
    rally_data_opts_free(o);
    o = opts("format=csv", "csv_label=3", NULL);
    expect_error(put("label_col.csv", "1,2,3\n"), o, 0, 1, RALLY_EINVAL,
                 ":1:1: csv_label is column 3 but line 1 has 3 fields (columns count from 0)");
    rally_data_opts_free(o);
}

static void file_errors(void **state)
{
    (void)state;
    expect_error(put("empty.svm", ""), NULL, 0, 1, RALLY_EPROTO, ":1:1: the file is empty");
    expect_error(put("empty.csv", ""), NULL, 3, 4, RALLY_EPROTO, ":1:1: the file is empty");
    expect_error(tmp_path("missing.svm"), NULL, 0, 1, RALLY_ESYS,
                 ": cannot open for reading: No such file or directory");
    expect_error(dir, NULL, 0, 1, RALLY_ESYS, ": cannot read at byte 0: Is a directory");
    rally_data_opts_t *o = opts("max_line_bytes=8", NULL, NULL);
    expect_error(put("longline.svm", "1 1:2\n1 1:2 2:3\n"), o, 0, 1, RALLY_EPROTO,
                 ":2:9: the line is longer than max_line_bytes (8 bytes)");
    rally_data_opts_free(o);
    /* Bad arguments. */
    rally_dataset_t *ds = NULL;
    char err[256];
    assert_int_equal(rally_data_read(paths[0], NULL, 1, 1, &ds, err, sizeof err), RALLY_EINVAL);
    assert_int_equal(rally_data_read(paths[0], NULL, -1, 2, &ds, err, sizeof err), RALLY_EINVAL);
    assert_int_equal(rally_data_read(NULL, NULL, 0, 1, &ds, err, sizeof err), RALLY_EINVAL);
    assert_int_equal(rally_data_read(paths[0], NULL, 0, 1, NULL, NULL, 0), RALLY_EINVAL);
    assert_null(ds);
}

/* A range reader names the absolute line even deep inside another range. */
static void error_line_from_later_rank(void **state)
{
    (void)state;
    char text[8192];
    size_t n = 0;
    for (int i = 1; i <= 100; i++)
        n += (size_t)snprintf(text + n, sizeof text - n,
                              i == 77 ? "%d 1:1 2:x%d\n" : "%d 1:1 2:%d\n", i % 2, i);
    const char *p = put("line77.svm", text);
    int world = 4, bad_rank = -1;
    const char *l77 = strstr(text, "2:x77");
    uint64_t off = (uint64_t)(l77 - text);
    for (int r = 0; r < world; r++)
        if (off >= rally__data_split(n, r, world) && off < rally__data_split(n, r + 1, world))
            bad_rank = r;
    assert_true(bad_rank > 0);
    for (int r = 0; r < world; r++) {
        if (r == bad_rank) {
            expect_error(p, NULL, r, world, RALLY_EPROTO,
                         ":77:9: the value of feature 2 'x77' is not a number");
        } else {
            rally_dataset_t *ds = read_ok(p, NULL, r, world);
            rally_data_free(ds);
        }
    }
}

static void options(void **state)
{
    (void)state;
    rally_data_opts_t *o;
    char err[512];
    assert_int_equal(rally_data_opts_new(&o), RALLY_OK);
    assert_int_equal(rally_data_opts_set(o, "colour", "red", err, sizeof err), RALLY_EINVAL);
    assert_non_null(strstr(err, "'colour' is not a data option (known: format,"));
    assert_int_equal(rally_data_opts_set(o, "format", "json", err, sizeof err), RALLY_EINVAL);
    assert_string_equal(err, "data option format='json': use auto, libsvm or csv");
    assert_int_equal(rally_data_opts_set(o, "csv_delimiter", "1", err, sizeof err), RALLY_EINVAL);
    assert_int_equal(rally_data_opts_set(o, "csv_delimiter", ".", err, sizeof err), RALLY_EINVAL);
    assert_int_equal(rally_data_opts_set(o, "csv_delimiter", "ab", err, sizeof err), RALLY_EINVAL);
    assert_int_equal(rally_data_opts_set(o, "csv_delimiter", "tab", err, sizeof err), RALLY_OK);
    assert_int_equal(rally_data_opts_set(o, "max_line_bytes", "0", err, sizeof err), RALLY_EINVAL);
    assert_int_equal(rally_data_opts_set(o, "num_features", "-3", err, sizeof err), RALLY_EINVAL);
    assert_int_equal(rally_data_opts_set(o, "csv_label", "x", err, sizeof err), RALLY_EINVAL);
    assert_int_equal(rally_data_opts_parse(o, "partition", err, sizeof err), RALLY_EINVAL);
    assert_string_equal(err, "data option 'partition' is not of the form key=value");
    assert_int_equal(rally_data_opts_parse(o, "partition=hash", err, sizeof err), RALLY_OK);
    assert_int_equal(o->partition, RALLY__PART_HASH);
    assert_int_equal(o->delim, '\t');
    rally_data_opts_free(o);
    rally_data_opts_free(NULL);
}

/* --- well-formed input ------------------------------------------------------- */

static void libsvm_values(void **state)
{
    (void)state;
    const char *p = put("vals.svm", "+1 qid:3 1:0.5 3:-2e-3 # a comment\n"
                                    "\n"
                                    "-1\t2:7 10:.25   \r\n"
                                    "  0 \n"
                                    "3 1:1");
    rally_dataset_t *ds = read_ok(p, NULL, 0, 1);
    assert_string_equal(rally_data_format(ds), "libsvm");
    assert_int_equal(rally_data_num_rows(ds), 4);
    assert_int_equal(rally_data_num_features(ds), 10);
    assert_int_equal(rally_data_num_entries(ds), 5);
    const float *lab = rally_data_labels(ds);
    assert_true(lab[0] == 1.0f && lab[1] == -1.0f && lab[2] == 0.0f && lab[3] == 3.0f);
    const uint64_t *rp;
    const uint32_t *ix;
    const float *v;
    rally_data_csr(ds, &rp, &ix, &v);
    assert_int_equal(rp[0], 0);
    assert_int_equal(rp[1], 2);
    assert_int_equal(rp[2], 4);
    assert_int_equal(rp[3], 4);
    assert_int_equal(rp[4], 5);
    assert_int_equal(ix[0], 0);
    assert_int_equal(ix[1], 2);
    assert_int_equal(ix[2], 1);
    assert_int_equal(ix[3], 9);
    assert_true(v[0] == 0.5f && v[1] == -2e-3f && v[2] == 7.0f && v[3] == 0.25f);
    float row[10];
    assert_int_equal(rally_data_row_dense(ds, 1, row, 10, -9.0f), RALLY_OK);
    assert_true(row[0] == -9.0f && row[1] == 7.0f && row[9] == 0.25f);
    assert_int_equal(rally_data_row_dense(ds, 1, row, 9, 0), RALLY_EINVAL);
    assert_int_equal(rally_data_row_dense(ds, 4, row, 10, 0), RALLY_EINVAL);
    assert_int_equal(rally_data_row_offset(ds, 0), 0);
    assert_int_equal(rally_data_row_offset(ds, 1), 36);
    assert_int_equal(rally_data_row_offset(ds, 9), UINT64_MAX);
    assert_null(rally_data_feature_name(ds, 0));
    rally_data_free(ds);

    rally_data_opts_t *o = opts("libsvm_index_base=0", "num_features=20", NULL);
    ds = read_ok(p, o, 0, 1);
    assert_int_equal(rally_data_num_features(ds), 20);
    rally_data_csr(ds, &rp, &ix, &v);
    assert_int_equal(ix[0], 1);
    rally_data_free(ds);
    rally_data_opts_free(o);
}

static void csv_values(void **state)
{
    (void)state;
    const char *p = put("vals.csv", "\"y\", height ,w\n1,2.5,3\r\n0,,-1\n\n4, 5 ,6");
    rally_data_opts_t *o = opts("csv_header=auto", "csv_label=0", NULL);
    rally_dataset_t *ds = read_ok(p, o, 0, 1);
    assert_string_equal(rally_data_format(ds), "csv");
    assert_int_equal(rally_data_num_rows(ds), 3);
    assert_int_equal(rally_data_num_features(ds), 2);
    assert_int_equal(rally_data_num_entries(ds), 5);
    assert_string_equal(rally_data_feature_name(ds, 0), "height");
    assert_string_equal(rally_data_feature_name(ds, 1), "w");
    assert_null(rally_data_feature_name(ds, 2));
    const float *lab = rally_data_labels(ds);
    assert_true(lab[0] == 1 && lab[1] == 0 && lab[2] == 4);
    float row[2];
    assert_int_equal(rally_data_row_dense(ds, 1, row, 2, 42), RALLY_OK);
    assert_true(row[0] == 42 && row[1] == -1);
    assert_int_equal(rally_data_row_dense(ds, 2, row, 2, 42), RALLY_OK);
    assert_true(row[0] == 5 && row[1] == 6);
    rally_data_free(ds);
    rally_data_opts_free(o);

    /* No label: labels are NULL; auto header sees numbers, so no header. */
    p = put("nolabel.csv", "1;2\n3;4\n");
    o = opts("csv_delimiter=;", "csv_header=auto", NULL);
    ds = read_ok(p, o, 0, 1);
    assert_int_equal(rally_data_num_rows(ds), 2);
    assert_int_equal(rally_data_num_features(ds), 2);
    assert_null(rally_data_labels(ds));
    assert_null(rally_data_feature_name(ds, 0));
    rally_data_free(ds);
    rally_data_opts_free(o);

    /* Format by content: no ':' on line 1 means CSV; .tsv means tabs. */
    ds = read_ok(put("data.txt", "1,2\n"), NULL, 0, 1);
    assert_string_equal(rally_data_format(ds), "csv");
    rally_data_free(ds);
    ds = read_ok(put("data.tsv", "1\t2\t3\n"), NULL, 0, 1);
    assert_int_equal(rally_data_num_features(ds), 3);
    rally_data_free(ds);
    ds = read_ok(put("data.dat", "1 3:4\n"), NULL, 0, 1);
    assert_string_equal(rally_data_format(ds), "libsvm");
    rally_data_free(ds);
}

/* --- partitioning -------------------------------------------------------------- */

/* The offsets of the records of a file, found independently of the reader. */
static size_t reference_records(const char *b, size_t n, int header, uint64_t *offs)
{
    size_t k = 0, i = 0;
    int line = 0;
    while (i < n) {
        size_t e = i;
        while (e < n && b[e] != '\n')
            e++;
        size_t le = e;
        if (le > i && b[le - 1] == '\r')
            le--;
        int blank = 1;
        for (size_t j = i; j < le; j++)
            blank &= b[j] == ' ' || b[j] == '\t';
        if (!(header && line == 0) && !blank)
            offs[k++] = i;
        line++;
        i = e + 1;
    }
    return k;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int find_row(const rally_dataset_t *ds, uint64_t off)
{
    uint64_t lo = 0, hi = rally_data_num_rows(ds);
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        if (rally_data_row_offset(ds, mid) < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < rally_data_num_rows(ds) && rally_data_row_offset(ds, lo) == off ? (int)lo : -1;
}

static void same_row(const rally_dataset_t *a, uint64_t ra, const rally_dataset_t *b, uint64_t rb)
{
    const uint64_t *pa, *pb;
    const uint32_t *ia, *ib;
    const float *va, *vb;
    rally_data_csr(a, &pa, &ia, &va);
    rally_data_csr(b, &pb, &ib, &vb);
    assert_int_equal(pa[ra + 1] - pa[ra], pb[rb + 1] - pb[rb]);
    for (uint64_t k = 0; k < pa[ra + 1] - pa[ra]; k++) {
        assert_int_equal(ia[pa[ra] + k], ib[pb[rb] + k]);
        assert_memory_equal(&va[pa[ra] + k], &vb[pb[rb] + k], sizeof(float));
    }
    if (rally_data_labels(a))
        assert_true(rally_data_labels(a)[ra] == rally_data_labels(b)[rb]);
}

/* The core check: world = 1..9, both modes. */
static void check_partition(const char *path, const char *o1, const char *o2, int header)
{
    size_t n;
    char *bytes = slurp(path, &n);
    uint64_t *ref = malloc((n + 1) * sizeof *ref);
    uint64_t *got = malloc((n + 1) * sizeof *got);
    assert_true(ref && got);
    size_t nref = reference_records(bytes, n, header, ref);
    uint64_t line1_end = 0;
    while (line1_end < n && bytes[line1_end] != '\n')
        line1_end++;
    for (int mode = 0; mode < 2; mode++) {
        rally_data_opts_t *o = opts(o1, o2, mode ? "partition=hash" : "partition=range");
        rally_dataset_t *whole = read_ok(path, o, 0, 1);
        assert_int_equal(rally_data_num_rows(whole), nref);
        for (int world = 1; world <= 9; world++) {
            size_t ngot = 0;
            uint64_t nfeat = 0;
            for (int r = 0; r < world; r++) {
                rally_dataset_t *ds = read_ok(path, o, r, world);
                uint64_t start = rally__data_split(n, r, world);
                uint64_t end = rally__data_split(n, r + 1, world);
                for (uint64_t i = 0; i < rally_data_num_rows(ds); i++) {
                    uint64_t off = rally_data_row_offset(ds, i);
                    if (mode == 0) {
                        /* the rule: the record's first byte lies in [start, end),
                         * and rally_data_range_owner names this rank for it */
                        assert_true(off >= start && off < end);
                        assert_int_equal(rally_data_range_owner(n, off, world), r);
                        assert_int_equal(rally_data_file_size(ds), n);
                    } else {
                        size_t le = off;
                        while (le < n && bytes[le] != '\n')
                            le++;
                        if (le > off && bytes[le - 1] == '\r')
                            le--;
                        assert_int_equal(rally__data_record_hash(bytes + off, le - off) %
                                             (uint64_t)world,
                                         (uint64_t)r);
                    }
                    int w = find_row(whole, off);
                    assert_true(w >= 0);
                    same_row(ds, i, whole, (uint64_t)w);
                    got[ngot++] = off;
                }
                if (header)
                    assert_int_equal(rally_data_num_features(ds), rally_data_num_features(whole));
                if (rally_data_num_features(ds) > nfeat)
                    nfeat = rally_data_num_features(ds);
                if (mode == 0) {
                    /* Read only [start - 1, last record end + a tail step) and line 1. */
                    uint64_t lo = start ? start - 1 : 0;
                    uint64_t hi_ok = (end > ds->end ? end : ds->end) + RALLY__DATA_TAIL_STEP;
                    if (ds->io_bytes > 0 && ds->io_hi > ds->io_lo) {
                        assert_true(ds->io_lo >= lo || ds->io_lo >= ds->first);
                        assert_true(ds->io_hi <= hi_ok);
                    }
                    assert_true(ds->io_probe_end <= line1_end + 1 + RALLY__DATA_TAIL_STEP);
                    if (world > 1 && n > 4 * (size_t)world * RALLY__DATA_TAIL_STEP &&
                        ds->end - ds->first < n / 2)
                        assert_true(ds->io_bytes < n);
                }
                /* Same file, world, rank: same fingerprint. */
                rally_dataset_t *again = read_ok(path, o, r, world);
                char f1[17], f2[17];
                assert_int_equal(rally_data_fingerprint(ds, f1, sizeof f1), RALLY_OK);
                assert_int_equal(rally_data_fingerprint(again, f2, sizeof f2), RALLY_OK);
                assert_string_equal(f1, f2);
                assert_int_equal(strlen(f1), 16);
                rally_data_free(again);
                rally_data_free(ds);
            }
            assert_int_equal(ngot, nref);
            qsort(got, ngot, sizeof *got, cmp_u64);
            for (size_t i = 0; i < nref; i++)
                assert_int_equal(got[i], ref[i]); /* disjoint and covering */
            assert_int_equal(nfeat, rally_data_num_features(whole));
        }
        rally_data_free(whole);
        rally_data_opts_free(o);
    }
    free(ref);
    free(got);
    free(bytes);
}

static const char *gen(const char *name, uint64_t rows, uint32_t f, const char *fmt, int header,
                       uint64_t seed)
{
    const char *p = tmp_path(name);
    char err[256];
    if (rally_data_generate(p, rows, f, 3, 1.0, seed, fmt, header, NULL, err, sizeof err))
        fail_msg("%s", err);
    return p;
}

/* Rewrites a file: LF -> CRLF, drop the final newline, or both. */
static const char *transform(const char *src, const char *name, int crlf, int drop_last_nl)
{
    size_t n;
    char *b = slurp(src, &n);
    char *o = malloc(2 * n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (b[i] == '\n' && crlf)
            o[k++] = '\r';
        o[k++] = b[i];
    }
    if (drop_last_nl && k && o[k - 1] == '\n')
        k -= (crlf && k > 1 && o[k - 2] == '\r') ? 2 : 1;
    const char *p = put_file(name, o, k);
    free(b);
    free(o);
    return p;
}

static void partition_generated(void **state)
{
    (void)state;
    const char *svm = gen("p1.svm", 500, 6, "libsvm", 0, 1);
    check_partition(svm, NULL, NULL, 0);
    const char *csv = gen("p1.csv", 300, 4, "csv", 1, 2);
    check_partition(csv, "csv_header=yes", "csv_label=0", 1);
    check_partition(transform(csv, "p1crlf.csv", 1, 0), "csv_header=yes", "csv_label=0", 1);
    check_partition(transform(svm, "p1crlf.svm", 1, 1), NULL, NULL, 0);
    check_partition(transform(svm, "p1nonl.svm", 0, 1), NULL, NULL, 0);
    /* Large enough that no worker may read the whole file. */
    check_partition(gen("p2.svm", 20000, 4, "libsvm", 0, 3), NULL, NULL, 0);
}

static void partition_edge_cases(void **state)
{
    (void)state;
    /* Fewer records than workers, with and without a final newline. */
    check_partition(put("three.svm", "1 1:1\n0 2:2\n1 3:3\n"), NULL, NULL, 0);
    check_partition(put("three_nonl.svm", "1 1:1\n0 2:2\n1 3:3"), NULL, NULL, 0);
    check_partition(put("one.csv", "h1,h2\n7,8"), "csv_header=yes", NULL, 1);
    check_partition(put("onechar.csv", "5"), NULL, NULL, 0);
    /* Blank and whitespace-only lines are not records. */
    check_partition(put("blanks.svm", "\n\n1 1:1\n  \n\t\r\n0 2:2\n\n\n1 1:3\n\n"), NULL, NULL, 0);
    /* A header longer than some ranges. */
    char hdr[4000];
    size_t k = 0;
    for (int j = 0; j < 400; j++)
        k += (size_t)snprintf(hdr + k, sizeof hdr - k, "%scolumn%d", j ? "," : "", j % 7);
    char *text = malloc(k + 3 * 2 * 400 + 16);
    memcpy(text, hdr, k);
    text[k++] = '\n';
    for (int r = 0; r < 3; r++) {
        for (int j = 0; j < 400; j++)
            k += (size_t)sprintf(text + k, "%s%d", j ? "," : "", (r + j) % 10);
        text[k++] = '\n';
    }
    check_partition(put_file("wide.csv", text, k), "csv_header=yes", NULL, 1);
    free(text);
}

/* One record much longer than a range, so range boundaries fall inside it. */
static void partition_huge_record(void **state)
{
    (void)state;
    size_t cap = 1 << 20, k = 0;
    char *t = malloc(cap);
    for (int i = 0; i < 20; i++)
        k += (size_t)sprintf(t + k, "%d 1:%d 2:0.5\n", i % 2, i);
    k += (size_t)sprintf(t + k, "1");
    for (int j = 1; j <= 40000; j++)
        k += (size_t)sprintf(t + k, " %d:%d", j, j % 100);
    t[k++] = '\n';
    for (int i = 0; i < 20; i++)
        k += (size_t)sprintf(t + k, "%d 3:%d\n", i % 2, i);
    assert_true(k < cap);
    const char *p = put_file("huge.svm", t, k);
    check_partition(p, NULL, NULL, 0);
    /* Ranks whose whole range lies inside the record read only that range. */
    int world = 9, inside = 0;
    for (int r = 1; r < world; r++) {
        rally_dataset_t *ds = read_ok(p, NULL, r, world);
        if (rally_data_num_rows(ds) == 0) {
            inside++;
            assert_true(ds->io_lo >= rally__data_split(k, r, world) - 1);
            assert_true(ds->io_hi <= rally__data_split(k, r + 1, world));
        }
        rally_data_free(ds);
    }
    assert_true(inside >= 3);
    free(t);
}

/* LF and CRLF copies give the same rows; hash mode even the same split. */
static void crlf_matches_lf(void **state)
{
    (void)state;
    const char *lf = gen("cr.svm", 200, 3, "libsvm", 0, 9);
    const char *cr = transform(lf, "cr2.svm", 1, 0);
    rally_data_opts_t *o = opts("partition=hash", NULL, NULL);
    for (int r = 0; r < 4; r++) {
        rally_dataset_t *a = read_ok(lf, o, r, 4), *b = read_ok(cr, o, r, 4);
        assert_int_equal(rally_data_num_rows(a), rally_data_num_rows(b));
        for (uint64_t i = 0; i < rally_data_num_rows(a); i++)
            same_row(a, i, b, i);
        rally_data_free(a);
        rally_data_free(b);
    }
    rally_data_opts_free(o);
}

static void fingerprints_differ(void **state)
{
    (void)state;
    const char *p = gen("fp.svm", 100, 3, "libsvm", 0, 5);
    char f[4][17], d[256];
    for (int r = 0; r < 3; r++) {
        rally_dataset_t *ds = read_ok(p, NULL, r, 3);
        rally_data_fingerprint(ds, f[r], sizeof f[r]);
        if (r == 1) {
            rally_data_describe(ds, d, sizeof d);
            assert_non_null(strstr(d, "fp.svm shard 1/3 (range): bytes ["));
            assert_non_null(strstr(d, f[1]));
        }
        char small[16];
        assert_int_equal(rally_data_fingerprint(ds, small, sizeof small), RALLY_EINVAL);
        rally_data_free(ds);
    }
    rally_data_opts_t *o = opts("partition=hash", NULL, NULL);
    rally_dataset_t *ds = read_ok(p, o, 0, 3);
    rally_data_fingerprint(ds, f[3], sizeof f[3]);
    rally_data_free(ds);
    rally_data_opts_free(o);
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            assert_string_not_equal(f[i], f[j]);
}

/* --- the generator ------------------------------------------------------------- */

static void generator_deterministic(void **state)
{
    (void)state;
    const char *a = gen("ga.csv", 300, 5, "csv", 1, 77), *b = gen("gb.csv", 300, 5, "csv", 1, 77);
    const char *c = gen("gc.csv", 300, 5, "csv", 1, 78);
    size_t na, nb, nc;
    char *ba = slurp(a, &na), *bb = slurp(b, &nb), *bc = slurp(c, &nc);
    assert_int_equal(na, nb);
    assert_memory_equal(ba, bb, na);
    assert_true(na != nc || memcmp(ba, bc, na) != 0);
    free(ba);
    free(bb);
    free(bc);
}

/* The generator's bytes are pinned: a change to the PRNG, the normal
 * sampler, the formatter or the layout shows up here (docs/data.md). */
static void generator_golden(void **state)
{
    (void)state;
    const char *p = tmp_path("golden.svm"), *cp = tmp_path("golden_centers.csv");
    char err[256];
    assert_int_equal(rally_data_generate(p, 4, 3, 2, 0.5, 12345, "libsvm", 0, cp, err, sizeof err),
                     RALLY_OK);
    size_t n, m;
    char *b = slurp(p, &n), *c = slurp(cp, &m);
    assert_string_equal(b, "1 1:-9.79423237 2:0.678652704 3:-9.73470783\n"
                           "0 1:4.91167164 2:-7.46550512 3:9.83352947\n"
                           "1 1:-9.10466766 2:0.67421627 3:-9.97685623\n"
                           "0 1:4.46014595 2:-7.73570871 3:9.30817986\n");
    assert_string_equal(c, "4.87616348,-7.39908934,9.26669025\n"
                           "-9.0331974,1.10365713,-9.78643894\n");
    free(b);
    free(c);
}

/* Documents for topic models: the same arguments give the same bytes, a
 * seed other ones; every line reads back as LIBSVM with words in 1..vocab,
 * a label below topics and a length in [doc_words / 2 + 1, 3 doc_words / 2];
 * the topics file holds topics lines of vocab probabilities summing to 1;
 * bad arguments are refused with the bounds. */
static void corpus_generator(void **state)
{
    (void)state;
    const char *a = tmp_path("ca.svm"), *b = tmp_path("cb.svm"), *c = tmp_path("cc.svm");
    const char *t = tmp_path("ct.csv");
    char err[512];
    assert_int_equal(rally_data_generate_corpus(a, 300, 50, 4, 40, 9, t, err, sizeof err), RALLY_OK);
    assert_int_equal(rally_data_generate_corpus(b, 300, 50, 4, 40, 9, NULL, err, sizeof err), RALLY_OK);
    assert_int_equal(rally_data_generate_corpus(c, 300, 50, 4, 40, 10, NULL, err, sizeof err), RALLY_OK);
    size_t na, nb, nc;
    char *ba = slurp(a, &na), *bb = slurp(b, &nb), *bc = slurp(c, &nc);
    assert_int_equal(na, nb);
    assert_memory_equal(ba, bb, na);
    assert_true(na != nc || memcmp(ba, bc, na) != 0);
    free(ba);
    free(bb);
    free(bc);
    rally_data_opts_t *o = opts("format=libsvm", NULL, NULL);
    rally_dataset_t *ds = read_ok(a, o, 0, 1);
    assert_int_equal(rally_data_num_rows(ds), 300);
    assert_true(rally_data_num_features(ds) <= 50);
    const uint64_t *rp;
    const uint32_t *idx;
    const float *val;
    rally_data_csr(ds, &rp, &idx, &val);
    for (uint64_t i = 0; i < 300; i++) {
        float words = 0;
        for (uint64_t e = rp[i]; e < rp[i + 1]; e++)
            words += val[e];
        assert_true(words >= 21 && words <= 60);
        assert_true(rally_data_labels(ds)[i] >= 0 && rally_data_labels(ds)[i] < 4);
    }
    rally_data_free(ds);
    rally_data_opts_free(o);
    o = opts("format=csv", NULL, NULL);
    ds = read_ok(t, o, 0, 1);
    assert_int_equal(rally_data_num_rows(ds), 4);
    assert_int_equal(rally_data_num_features(ds), 50);
    rally_data_free(ds);
    rally_data_opts_free(o);
    size_t nt;
    char *bt = slurp(t, &nt), *p = bt;
    for (int k = 0; k < 4; k++) {
        double sum = 0;
        for (int w = 0; w < 50; w++) {
            char *end;
            sum += strtod(p, &end);
            assert_true(end > p && *end == (w + 1 < 50 ? ',' : '\n'));
            p = end + 1;
        }
        assert_true(sum > 1 - 1e-5 && sum < 1 + 1e-5);
    }
    assert_true(*p == '\0');
    free(bt);
    assert_int_equal(rally_data_generate_corpus(a, 0, 50, 4, 40, 9, NULL, err, sizeof err),
                     RALLY_EINVAL);
    assert_non_null(strstr(err, "docs >= 1"));
    assert_int_equal(rally_data_generate_corpus(a, 5, 50, 70000, 40, 9, NULL, err, sizeof err),
                     RALLY_EINVAL);
    assert_int_equal(rally_data_generate_corpus("/nonexistent/x.svm", 5, 50, 4, 40, 9, NULL, err,
                                                sizeof err),
                     RALLY_ESYS);
}

static void generator_statistics(void **state)
{
    (void)state;
    const char *p = tmp_path("stats.svm"), *cp = tmp_path("stats_centers.csv");
    char err[256];
    uint32_t f = 4, k = 3;
    uint64_t rows = 30000;
    double spread = 0.75;
    assert_int_equal(
        rally_data_generate(p, rows, f, k, spread, 3, "libsvm", 0, cp, err, sizeof err), RALLY_OK);
    rally_data_opts_t *o = opts("format=csv", NULL, NULL);
    rally_dataset_t *cs = read_ok(cp, o, 0, 1);
    rally_data_opts_free(o);
    assert_int_equal(rally_data_num_rows(cs), k);
    assert_int_equal(rally_data_num_features(cs), f);
    rally_dataset_t *ds = read_ok(p, NULL, 0, 1);
    assert_int_equal(rally_data_num_rows(ds), rows);
    assert_int_equal(rally_data_num_features(ds), f);
    double sum[3][4] = {{0}}, sq[3][4] = {{0}};
    uint64_t cnt[3] = {0};
    const float *lab = rally_data_labels(ds);
    for (uint64_t i = 0; i < rows; i++) {
        float row[4];
        assert_int_equal(rally_data_row_dense(ds, i, row, f, NAN), RALLY_OK);
        int c = (int)lab[i];
        assert_true(c >= 0 && c < (int)k && (float)c == lab[i]);
        cnt[c]++;
        for (uint32_t j = 0; j < f; j++) {
            sum[c][j] += row[j];
            sq[c][j] += (double)row[j] * row[j];
        }
    }
    for (uint32_t c = 0; c < k; c++) {
        assert_true(cnt[c] > rows / k * 9 / 10 && cnt[c] < rows / k * 11 / 10);
        float centre[4];
        assert_int_equal(rally_data_row_dense(cs, c, centre, f, NAN), RALLY_OK);
        for (uint32_t j = 0; j < f; j++) {
            assert_true(centre[j] >= -10 && centre[j] < 10);
            double mean = sum[c][j] / (double)cnt[c];
            double var = sq[c][j] / (double)cnt[c] - mean * mean;
            assert_true(fabs(mean - centre[j]) < 0.05);
            assert_true(fabs(sqrt(var) - spread) < 0.03);
        }
    }
    rally_data_free(ds);
    rally_data_free(cs);
}

static void generator_errors(void **state)
{
    (void)state;
    char err[512];
    const char *p = tmp_path("never.svm");
    assert_int_equal(rally_data_generate(p, 0, 3, 2, 1, 1, "libsvm", 0, NULL, err, sizeof err),
                     RALLY_EINVAL);
    assert_int_equal(rally_data_generate(p, 3, 3, 0, 1, 1, "libsvm", 0, NULL, err, sizeof err),
                     RALLY_EINVAL);
    assert_int_equal(rally_data_generate(p, 3, 3, 2, -1, 1, "libsvm", 0, NULL, err, sizeof err),
                     RALLY_EINVAL);
    assert_int_equal(rally_data_generate(p, 3, 3, 2, NAN, 1, "libsvm", 0, NULL, err, sizeof err),
                     RALLY_EINVAL);
    assert_int_equal(rally_data_generate(p, 3, 3, 2, 1, 1, "json", 0, NULL, err, sizeof err),
                     RALLY_EINVAL);
    assert_string_equal(err, "rally_data_generate: format 'json' is not libsvm or csv");
    assert_int_equal(rally_data_generate("/nonexistent-dir/x.svm", 3, 3, 2, 1, 1, "libsvm", 0, NULL,
                                         err, sizeof err),
                     RALLY_ESYS);
    assert_non_null(strstr(err, "/nonexistent-dir/x.svm.tmp."));
    assert_non_null(strstr(err, ": cannot create: No such file or directory"));
    assert_int_equal(access(p, F_OK), -1);
}

/* Our log, sqrt and float printer against libm and strtof. */
static void generator_math(void **state)
{
    (void)state;
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double u = (double)((x >> 11) + 1) * 0x1.0p-53; /* (0, 1] */
        double l = rally__data_log(u), ref = log(u);
        assert_true(fabs(l - ref) <= 8e-16 * fabs(ref)); /* a few ulps */
        double s = rally__data_sqrt(u * 1000.0);
        assert_true(fabs(s - sqrt(u * 1000.0)) <= 4.5e-16 * s);
        uint32_t bits = (uint32_t)(x >> 17);
        float f;
        memcpy(&f, &bits, sizeof f);
        if (isnan(f) || isinf(f))
            continue;
        char buf[32], ref9[32];
        int n = rally__data_fmt_float(buf, f);
        buf[n] = '\0';
        assert_true(n <= 16);
        assert_true(rally__data_is_number(buf, (size_t)n));
        float back = strtof(buf, NULL);
        if (memcmp(&back, &f, sizeof f) != 0 && !(f == 0 && back == 0))
            fail_msg("%a printed as %s reads back as %a", (double)f, buf, (double)back);
        snprintf(ref9, sizeof ref9, "%.9g", (double)f);
        if (strcmp(buf, ref9) != 0 && !(f == 0))
            fail_msg("%a printed as %s, %%.9g prints %s", (double)f, buf, ref9);
    }
    char buf[32];
    const float cases[] = {1.0f, -2.5f, 100000000.0f, 1e9f, 0.001f, 0.00001f, 123456.789f, 0.5f};
    const char *want[] = {
        "1", "-2.5", "100000000", "1e+09", "0.00100000005", "9.99999975e-06", "123456.789", "0.5"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n = rally__data_fmt_float(buf, cases[i]);
        buf[n] = '\0';
        assert_string_equal(buf, want[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(libsvm_errors),
        cmocka_unit_test(csv_errors),
        cmocka_unit_test(file_errors),
        cmocka_unit_test(error_line_from_later_rank),
        cmocka_unit_test(options),
        cmocka_unit_test(libsvm_values),
        cmocka_unit_test(csv_values),
        cmocka_unit_test(partition_generated),
        cmocka_unit_test(partition_edge_cases),
        cmocka_unit_test(partition_huge_record),
        cmocka_unit_test(crlf_matches_lf),
        cmocka_unit_test(fingerprints_differ),
        cmocka_unit_test(generator_deterministic),
        cmocka_unit_test(generator_golden),
        cmocka_unit_test(generator_statistics),
        cmocka_unit_test(corpus_generator),
        cmocka_unit_test(generator_errors),
        cmocka_unit_test(generator_math),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
