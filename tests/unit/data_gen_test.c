/*
 * data_gen_test.c — the generator (data_rig.h; tools/rally-datagen):
 * deterministic, its bytes pinned by a golden, its corpus and statistics, its
 * refusals, and its own log, sqrt and float printer.
 */
#include "data_rig.h"

/* ours, against libm and strtof in generator_math */
double rally__data_log(double x);
double rally__data_sqrt(double y);
int rally__data_fmt_float(char *out, float f);

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
        cmocka_unit_test(generator_deterministic),
        cmocka_unit_test(generator_golden),
        cmocka_unit_test(corpus_generator),
        cmocka_unit_test(generator_statistics),
        cmocka_unit_test(generator_errors),
        cmocka_unit_test(generator_math),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
