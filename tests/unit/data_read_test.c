/*
 * data_read_test.c — the data layer's readers (data_rig.h): malformed
 * and well-formed libsvm and CSV, files and options.
 *
 * Malformed input: every case names its exact "path:line:column: sentence".
 */
#include "data_rig.h"

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
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
