/*
 * data_rig.c — the rig of the data layer's tests (data_rig.h).
 */
#include "data_rig.h"

char dir[64];
char paths[96][128];
int npaths;

const char *tmp_path(const char *name)
{
    assert_true(npaths < 96);
    snprintf(paths[npaths], sizeof paths[npaths], "%s/%s", dir, name);
    return paths[npaths++];
}

const char *put_file(const char *name, const char *bytes, size_t n)
{
    const char *p = tmp_path(name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    return p;
}

const char *put(const char *name, const char *text)
{
    return put_file(name, text, strlen(text));
}

char *slurp(const char *path, size_t *n)
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

int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/rally-data-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < npaths; i++)
        unlink(paths[i]);
    return rmdir(dir);
}

rally_data_opts_t *opts(const char *kv1, const char *kv2, const char *kv3)
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
void expect_error(const char *path, const rally_data_opts_t *o, int rank, int world,
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

rally_dataset_t *read_ok(const char *path, const rally_data_opts_t *o, int rank, int world)
{
    rally_dataset_t *ds = NULL;
    char err[512];
    int rc = rally_data_read(path, o, rank, world, &ds, err, sizeof err);
    if (rc != RALLY_OK)
        fail_msg("rank %d/%d of %s: %s", rank, world, path, err);
    return ds;
}

const char *gen(const char *name, uint64_t rows, uint32_t f, const char *fmt, int header,
                uint64_t seed)
{
    const char *p = tmp_path(name);
    char err[256];
    if (rally_data_generate(p, rows, f, 3, 1.0, seed, fmt, header, NULL, err, sizeof err))
        fail_msg("%s", err);
    return p;
}
