/*
 * model.c — how a boosted-tree model is stored: its bytes (the checkpoint and
 * what model_digest hashes), its JSON form (--model-out, --json, --show and
 * what `rally-gbdt predict` reads), and the durable file write.
 *
 * The bytes, little-endian and fixed width (README.md, "Model format"):
 * magic "RALLYGB\0", format version, objective, max_depth, max_bin, the
 * feature count, the tree count, eta, lambda, gamma, min_child_weight,
 * base_score; then per tree its node count and per node feature (int32),
 * left, right, split_bin, threshold (binary32 bits), default_left, value,
 * gain, cover (binary64 bits); last rally_digest64 (XXH3-64) of everything before it.
 * The JSON carries every field exactly (doubles at %.17g, thresholds at
 * %.9g), so reading it back gives the same bytes and the same digest.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "gbdt.h"

#define GB_MAGIC "RALLYGB"
#define GB_FORMAT 1u
#define GB_HEADER_NBYTES 72u
#define GB_NODE_NBYTES 48u

static uint32_t fbits(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static float bitsf(uint32_t b)
{
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* --- the model in memory -------------------------------------------------------- */

int gb_model_push(struct gb_model *m, struct gb_tree t)
{
    if (m->ntrees == m->cap) {
        uint32_t cap = m->cap ? 2 * m->cap : 64;
        struct gb_tree *nt = realloc(m->trees, cap * sizeof *nt);
        if (nt == NULL)
            return -1;
        m->trees = nt;
        m->cap = cap;
    }
    m->trees[m->ntrees++] = t;
    return 0;
}

void gb_model_free(struct gb_model *m)
{
    for (uint32_t t = 0; t < m->ntrees; t++)
        free(m->trees[t].nodes);
    free(m->trees);
    m->trees = NULL;
    m->ntrees = m->cap = 0;
}

/* --- the bytes ------------------------------------------------------------------- */

size_t gb_model_nbytes(const struct gb_model *m)
{
    size_t n = GB_HEADER_NBYTES + 8;
    for (uint32_t t = 0; t < m->ntrees; t++)
        n += 4 + (size_t)m->trees[t].n * GB_NODE_NBYTES;
    return n;
}

void gb_model_encode(const struct gb_model *m, unsigned char *b)
{
    unsigned char *p = b;
    memcpy(p, GB_MAGIC, 8);
    ex_put32(p + 8, GB_FORMAT);
    ex_put32(p + 12, m->p.objective);
    ex_put32(p + 16, m->p.max_depth);
    ex_put32(p + 20, m->p.max_bin);
    ex_put32(p + 24, m->d);
    ex_put32(p + 28, m->ntrees);
    ex_put64(p + 32, ex_dbits(m->p.eta));
    ex_put64(p + 40, ex_dbits(m->p.lambda));
    ex_put64(p + 48, ex_dbits(m->p.gamma));
    ex_put64(p + 56, ex_dbits(m->p.min_child_weight));
    ex_put64(p + 64, ex_dbits(m->p.base_score));
    p += GB_HEADER_NBYTES;
    for (uint32_t t = 0; t < m->ntrees; t++) {
        const struct gb_tree *tr = &m->trees[t];
        ex_put32(p, tr->n);
        p += 4;
        for (uint32_t k = 0; k < tr->n; k++, p += GB_NODE_NBYTES) {
            const struct gb_node *n = &tr->nodes[k];
            ex_put32(p, (uint32_t)n->feature);
            ex_put32(p + 4, n->left);
            ex_put32(p + 8, n->right);
            ex_put32(p + 12, n->split_bin);
            ex_put32(p + 16, fbits(n->threshold));
            ex_put32(p + 20, n->default_left);
            ex_put64(p + 24, ex_dbits(n->value));
            ex_put64(p + 32, ex_dbits(n->gain));
            ex_put64(p + 40, ex_dbits(n->cover));
        }
    }
    ex_put64(p, rally_digest64(b, (size_t)(p - b)));
}

/* Whether tree t's links make a tree: children after their parent, in range. */
static int well_formed(const struct gb_tree *t, uint32_t d)
{
    if (t->n == 0)
        return 0;
    for (uint32_t k = 0; k < t->n; k++) {
        const struct gb_node *n = &t->nodes[k];
        if (n->feature >= 0 && ((uint32_t)n->feature >= d || n->left <= k || n->right <= k ||
                                n->left >= t->n || n->right >= t->n))
            return 0;
    }
    return 1;
}

int gb_model_decode(const unsigned char *b, size_t n, struct gb_model *m, const char **why)
{
    struct gb_model x = {0};
    if (n < GB_HEADER_NBYTES + 8 || memcmp(b, GB_MAGIC, 8) != 0) {
        *why = "not a rally-gbdt model (bad magic or too short)";
        return -1;
    }
    if (ex_get32(b + 8) != GB_FORMAT) {
        *why = "an unknown model format version";
        return -1;
    }
    if (ex_get64(b + n - 8) != rally_digest64(b, n - 8)) {
        *why = "a checksum mismatch (the bytes are corrupt)";
        return -1;
    }
    x.p.objective = ex_get32(b + 12);
    x.p.max_depth = ex_get32(b + 16);
    x.p.max_bin = ex_get32(b + 20);
    x.d = ex_get32(b + 24);
    uint32_t ntrees = ex_get32(b + 28);
    x.p.eta = ex_bitsd(ex_get64(b + 32));
    x.p.lambda = ex_bitsd(ex_get64(b + 40));
    x.p.gamma = ex_bitsd(ex_get64(b + 48));
    x.p.min_child_weight = ex_bitsd(ex_get64(b + 56));
    x.p.base_score = ex_bitsd(ex_get64(b + 64));
    const unsigned char *p = b + GB_HEADER_NBYTES, *end = b + n - 8;
    for (uint32_t t = 0; t < ntrees; t++) {
        struct gb_tree tr = {0};
        if (end - p < 4 || (tr.n = ex_get32(p)) > (size_t)(end - p - 4) / GB_NODE_NBYTES)
            goto bad;
        p += 4;
        if ((tr.nodes = calloc(tr.n + 1, sizeof *tr.nodes)) == NULL) {
            *why = "out of memory";
            gb_model_free(&x);
            return -1;
        }
        for (uint32_t k = 0; k < tr.n; k++, p += GB_NODE_NBYTES)
            tr.nodes[k] = (struct gb_node){(int32_t)ex_get32(p),
                                           ex_get32(p + 4),
                                           ex_get32(p + 8),
                                           ex_get32(p + 12),
                                           bitsf(ex_get32(p + 16)),
                                           ex_get32(p + 20),
                                           ex_bitsd(ex_get64(p + 24)),
                                           ex_bitsd(ex_get64(p + 32)),
                                           ex_bitsd(ex_get64(p + 40))};
        if (!well_formed(&tr, x.d) || gb_model_push(&x, tr) != 0) {
            free(tr.nodes);
            goto bad;
        }
    }
    if (p != end)
        goto bad;
    *m = x;
    return 0;
bad:
    gb_model_free(&x);
    *why = "malformed trees";
    return -1;
}

uint64_t gb_model_digest(const struct gb_model *m)
{
    size_t n = gb_model_nbytes(m);
    unsigned char *b = malloc(n);
    if (b == NULL)
        return UINT64_MAX;
    gb_model_encode(m, b);
    uint64_t h = rally_digest64(b, n);
    free(b);
    return h;
}

/* --- JSON ------------------------------------------------------------------------ */

/* A growing text buffer. */
struct text {
    char *s;
    size_t n, cap;
    int oom;
};

static void add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = t->oom ? 0 : vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
        va_end(ap);
        if (t->oom)
            return;
        if ((size_t)k < t->cap - t->n) {
            t->n += (size_t)k;
            return;
        }
        size_t cap = 2 * t->cap + (size_t)k + 1;
        char *s = realloc(t->s, cap);
        if (s == NULL) {
            t->oom = 1;
            return;
        }
        t->s = s;
        t->cap = cap;
    }
}

/* A double as a JSON real that reads back to the same bits (-0 stays -0). */
static void real(struct text *t, double v)
{
    char b[40];
    snprintf(b, sizeof b, "%.17g", v);
    add(t, "%s%s", b, strpbrk(b, ".en") ? "" : ".0");
}

/* A float likewise, at %.9g (enough to read back the same binary32). */
static void realf(struct text *t, float v)
{
    char b[40];
    snprintf(b, sizeof b, "%.9g", (double)v);
    add(t, "%s%s", b, strpbrk(b, ".en") ? "" : ".0");
}

static const char *objective_name(uint32_t o)
{
    return o == GB_LOGISTIC ? "binary:logistic" : "reg:squarederror";
}

int gb_model_json(const struct gb_model *m, char **out, size_t *n)
{
    struct text t = {0};
    uint64_t digest = gb_model_digest(m);
    if (digest == UINT64_MAX)
        return -1;
    add(&t,
        "{\"format\": \"rally-gbdt\", \"format_version\": %u,\n \"objective\": \"%s\", "
        "\"num_features\": %" PRIu32 ", \"num_trees\": %" PRIu32 ",\n \"params\": {",
        GB_FORMAT, objective_name(m->p.objective), m->d, m->ntrees);
    add(&t, "\"max_depth\": %" PRIu32 ", \"max_bin\": %" PRIu32 ", \"eta\": ", m->p.max_depth,
        m->p.max_bin);
    real(&t, m->p.eta);
    add(&t, ", \"lambda\": ");
    real(&t, m->p.lambda);
    add(&t, ", \"gamma\": ");
    real(&t, m->p.gamma);
    add(&t, ", \"min_child_weight\": ");
    real(&t, m->p.min_child_weight);
    add(&t, ", \"base_score\": ");
    real(&t, m->p.base_score);
    add(&t, "},\n \"model_digest\": \"%016" PRIx64 "\",\n \"trees\": [", digest);
    for (uint32_t k = 0; k < m->ntrees; k++) {
        const struct gb_tree *tr = &m->trees[k];
        add(&t, "%s\n  [", k ? "," : "");
        for (uint32_t i = 0; i < tr->n; i++) {
            const struct gb_node *nd = &tr->nodes[i];
            add(&t, "%s\n   {\"id\": %" PRIu32 ", ", i ? "," : "", i);
            if (nd->feature < 0) {
                add(&t, "\"leaf\": ");
                real(&t, nd->value);
            } else {
                add(&t,
                    "\"feature\": %" PRId32 ", \"split_bin\": %" PRIu32
                    ", \"default_left\": %s, \"yes\": %" PRIu32 ", \"no\": %" PRIu32
                    ", \"threshold\": ",
                    nd->feature, nd->split_bin, nd->default_left ? "true" : "false", nd->left,
                    nd->right);
                realf(&t, nd->threshold);
                add(&t, ", \"gain\": ");
                real(&t, nd->gain);
            }
            add(&t, ", \"cover\": ");
            real(&t, nd->cover);
            add(&t, "}");
        }
        add(&t, "]");
    }
    add(&t, "\n ]}\n");
    if (t.oom) {
        free(t.s);
        return -1;
    }
    *out = t.s;
    *n = t.n;
    return 0;
}

static int num(json_t *o, const char *key, double *v)
{
    json_t *x = json_object_get(o, key);
    if (!json_is_number(x))
        return -1;
    *v = json_number_value(x);
    return 0;
}

static int whole(json_t *o, const char *key, uint32_t *v)
{
    json_t *x = json_object_get(o, key);
    if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > UINT32_MAX)
        return -1;
    *v = (uint32_t)json_integer_value(x);
    return 0;
}

/* One node from its JSON object into n.  0, or -1. */
static int node_of(json_t *o, uint32_t id, struct gb_node *n)
{
    uint32_t k, f;
    double thr;
    if (whole(o, "id", &k) != 0 || k != id || num(o, "cover", &n->cover) != 0)
        return -1;
    if (json_object_get(o, "leaf") != NULL) {
        n->feature = -1;
        return num(o, "leaf", &n->value);
    }
    json_t *dl = json_object_get(o, "default_left");
    if (whole(o, "feature", &f) != 0 || f > INT32_MAX || num(o, "threshold", &thr) != 0 ||
        whole(o, "split_bin", &n->split_bin) != 0 || whole(o, "yes", &n->left) != 0 ||
        whole(o, "no", &n->right) != 0 || num(o, "gain", &n->gain) != 0 || !json_is_boolean(dl))
        return -1;
    n->feature = (int32_t)f;
    n->threshold = (float)thr;
    n->default_left = json_is_true(dl);
    return 0;
}

int gb_model_read_json(const char *path, struct gb_model *m, char *err, size_t cap)
{
    json_error_t je;
    struct gb_model x = {0};
    const char *why = "not a rally-gbdt model";
    json_t *root = json_load_file(path, 0, &je);
    int rc = -1;
    if (root == NULL) {
        snprintf(err, cap, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        return -1;
    }
    json_t *fmt = json_object_get(root, "format"), *params = json_object_get(root, "params");
    json_t *trees = json_object_get(root, "trees"), *obj = json_object_get(root, "objective");
    json_t *dig = json_object_get(root, "model_digest");
    uint32_t version;
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "rally-gbdt") != 0 ||
        whole(root, "format_version", &version) != 0 || !json_is_string(obj) ||
        !json_is_object(params) || !json_is_array(trees) || !json_is_string(dig))
        goto out;
    if (version != GB_FORMAT) {
        why = "an unknown model format version";
        goto out;
    }
    if (strcmp(json_string_value(obj), "binary:logistic") == 0)
        x.p.objective = GB_LOGISTIC;
    else if (strcmp(json_string_value(obj), "reg:squarederror") == 0)
        x.p.objective = GB_SQUARED;
    else
        goto out;
    if (whole(root, "num_features", &x.d) != 0 || whole(params, "max_depth", &x.p.max_depth) ||
        whole(params, "max_bin", &x.p.max_bin) || num(params, "eta", &x.p.eta) ||
        num(params, "lambda", &x.p.lambda) || num(params, "gamma", &x.p.gamma) ||
        num(params, "min_child_weight", &x.p.min_child_weight) ||
        num(params, "base_score", &x.p.base_score))
        goto out;
    why = "malformed trees";
    for (size_t t = 0; t < json_array_size(trees); t++) {
        json_t *nodes = json_array_get(trees, t);
        struct gb_tree tr = {(uint32_t)json_array_size(nodes), NULL};
        if (!json_is_array(nodes) || tr.n == 0 ||
            (tr.nodes = calloc(tr.n, sizeof *tr.nodes)) == NULL)
            goto out;
        for (uint32_t k = 0; k < tr.n; k++)
            if (node_of(json_array_get(nodes, k), k, &tr.nodes[k]) != 0) {
                free(tr.nodes);
                goto out;
            }
        if (!well_formed(&tr, x.d) || gb_model_push(&x, tr) != 0) {
            free(tr.nodes);
            goto out;
        }
    }
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, gb_model_digest(&x));
    if (strcmp(hex, json_string_value(dig)) != 0) {
        why = "a model whose trees do not give its model_digest (edited or corrupt)";
        goto out;
    }
    *m = x;
    x = (struct gb_model){0};
    rc = 0;
out:
    if (rc != 0)
        snprintf(err, cap, "%s: %s", path, why);
    gb_model_free(&x);
    json_decref(root);
    return rc;
}
