/*
 * data_partition_test.c — partitioning and fingerprints (data_rig.h).
 *
 * Partitioning: for world = 1..9 and several files (generated blobs, CRLF,
 * no final newline, a huge record straddling ranges, fewer records than
 * workers, a CSV header, blank lines) the shards' rows, found by their file
 * offsets, are disjoint and cover the file's records exactly, each row equals
 * the same row read by a single worker, each rank's rows obey the range or
 * hash rule, and a range reader read nothing outside [start - 1, end of its
 * last record + one tail step) besides line 1.
 */
#include "data_rig.h"

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


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(partition_generated),
        cmocka_unit_test(partition_edge_cases),
        cmocka_unit_test(partition_huge_record),
        cmocka_unit_test(crlf_matches_lf),
        cmocka_unit_test(fingerprints_differ),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
