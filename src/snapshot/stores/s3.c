/*
 * s3.c — the storage kind "s3://BUCKET/PREFIX": the S3 API through
 * libcurl (util/curl.h), which signs every request itself
 * (CURLOPT_AWS_SIGV4); listings are parsed with expat.  No signing or
 * HTTP is written here.
 *
 * A dir is a key prefix: dir/name is the object PREFIX/dir/name.  An
 * object store has no rename, so put is one PUT (atomic: an object is
 * there whole or not at all) and the commit rule of store.h holds as it
 * is.  There are no directories: removing one is nothing, and a prefix
 * nobody wrote lists empty and is missing.
 *
 * Where and as whom (docs/snapshot-format.md, "On an object store"):
 *   credentials  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
 *                else the profile (AWS_PROFILE, "default") of
 *                AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials)
 *   region       AWS_REGION, AWS_DEFAULT_REGION, else the profile's region
 *                in AWS_CONFIG_FILE (~/.aws/config), else us-east-1
 *   endpoint     AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL (path-style URLs:
 *                ENDPOINT/BUCKET/KEY), else https://BUCKET.s3.REGION.amazonaws.com
 * A request that fails on the way or with a 5xx is tried again, three
 * times in all, after 0.1 and 0.4 s.  Every refusal names S3's reason
 * (its <Code> and <Message>); a HEAD's answer has no body, so a HEAD
 * refused is asked again as a GET of the first byte, whose body says why.
 */
#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "snapshot/store.h"
#include "util/curl.h"

#define TRIES 3
#define ERR_BODY_MAX 4096
#define PEEK_MAX 4096 /* a get of at most this many bytes asks for a range */
#define PUT_MAX ((uint64_t)5 << 30) /* S3: the most bytes of one PUT */

struct s3_store {
    struct rally__store base;
    const struct rally__curl *cu; /* libcurl's calls */
    CURL *curl;
    char bucket[64];
    char prefix[512]; /* "" or "a/b/" */
    char base_url[600];
    char sigv4[128];
    char key_id[256], secret[256], token[2048];
};

/* --- configuration ---------------------------------------------------------------- */

/* libcurl once per process, loaded when the first store opens (util/curl.h:
 * a worker that opens none never maps it).  Each store has its own handle:
 * its requests reuse one connection, closed with the store.  A connection cache shared
 * across stores would outlive them, and a child forked meanwhile would
 * share its sockets: a request of the parent could end a PUT the child
 * left half sent (tests/unit/snapshot_s3_test.c kill9_mid_upload sees it). */

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && *v ? v : NULL;
}

/* key's value in [section] of an ini file (the AWS files' form), into out. */
static int ini_get(const char *path, const char *section, const char *key, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    int in = 0, found = 0;
    if (f == NULL)
        return 0;
    while (!found && fgets(line, sizeof line, f) != NULL) {
        char *p = line + strspn(line, " \t");
        p[strcspn(p, "\r\n")] = '\0';
        if (*p == '[') {
            char *end = strchr(p, ']');
            if (end != NULL) {
                *end = '\0';
                in = strcmp(p + 1, section) == 0;
            }
            continue;
        }
        size_t k = strlen(key);
        if (!in || strncmp(p, key, k) != 0)
            continue;
        char *q = p + k + strspn(p + k, " \t");
        if (*q != '=')
            continue;
        q += 1 + strspn(q + 1, " \t");
        size_t n = strlen(q);
        while (n > 0 && (q[n - 1] == ' ' || q[n - 1] == '\t'))
            q[--n] = '\0';
        found = (size_t)snprintf(out, cap, "%s", q) < cap;
    }
    fclose(f);
    return found;
}

static void aws_file(const char *var, const char *name, char *out, size_t cap)
{
    const char *home = env("HOME");
    if (env(var) != NULL)
        snprintf(out, cap, "%s", env(var));
    else
        snprintf(out, cap, "%s/.aws/%s", home ? home : "", name);
}

static int configure(struct s3_store *s, const char *root, struct rally__err *e)
{
    const char *b = root + strlen("s3://");
    size_t bn = strcspn(b, "/");
    if (bn == 0 || bn >= sizeof s->bucket)
        return rally__fail(e, RALLY_EINVAL, "%s: no bucket (s3://BUCKET/PREFIX)", root);
    memcpy(s->bucket, b, bn);
    s->bucket[bn] = '\0';
    const char *p = b + bn + strspn(b + bn, "/");
    size_t pn = strlen(p);
    while (pn > 0 && p[pn - 1] == '/')
        pn--;
    for (size_t i = 0; i < pn; i++) /* the names of the whitelist: nothing to escape */
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/", p[i]) ||
            (p[i] == '/' && p[i + 1] == '/'))
            return rally__fail(e, RALLY_EINVAL,
                               "%s: a prefix is names of [A-Za-z0-9._-] between single '/'",
                               root);
    if (pn + 2 > sizeof s->prefix)
        return rally__fail(e, RALLY_EINVAL, "%s: the prefix is too long", root);
    snprintf(s->prefix, sizeof s->prefix, "%.*s%s", (int)pn, p, pn ? "/" : "");

    char profile[128], creds[1024], config[1024], section[160], region[64] = "";
    snprintf(profile, sizeof profile, "%s", env("AWS_PROFILE") ? env("AWS_PROFILE") : "default");
    aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials", creds, sizeof creds);
    aws_file("AWS_CONFIG_FILE", "config", config, sizeof config);
    snprintf(section, sizeof section, "%s%s", strcmp(profile, "default") ? "profile " : "",
             profile);
    if (env("AWS_ACCESS_KEY_ID") && env("AWS_SECRET_ACCESS_KEY")) {
        snprintf(s->key_id, sizeof s->key_id, "%s", env("AWS_ACCESS_KEY_ID"));
        snprintf(s->secret, sizeof s->secret, "%s", env("AWS_SECRET_ACCESS_KEY"));
        snprintf(s->token, sizeof s->token, "%s",
                 env("AWS_SESSION_TOKEN") ? env("AWS_SESSION_TOKEN") : "");
    } else if (ini_get(creds, profile, "aws_access_key_id", s->key_id, sizeof s->key_id) &&
               ini_get(creds, profile, "aws_secret_access_key", s->secret, sizeof s->secret)) {
        ini_get(creds, profile, "aws_session_token", s->token, sizeof s->token);
    } else {
        return rally__fail(e, RALLY_EINVAL,
                           "%s: no AWS credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                           "or profile %s in %s)",
                           root, profile, creds);
    }
    if (env("AWS_REGION"))
        snprintf(region, sizeof region, "%s", env("AWS_REGION"));
    else if (env("AWS_DEFAULT_REGION"))
        snprintf(region, sizeof region, "%s", env("AWS_DEFAULT_REGION"));
    else if (!ini_get(config, section, "region", region, sizeof region))
        snprintf(region, sizeof region, "us-east-1");
    const char *ep = env("AWS_ENDPOINT_URL_S3") ? env("AWS_ENDPOINT_URL_S3")
                                                : env("AWS_ENDPOINT_URL");
    if (ep != NULL) {
        size_t n = strlen(ep);
        while (n > 0 && ep[n - 1] == '/')
            n--;
        snprintf(s->base_url, sizeof s->base_url, "%.*s/%s/", (int)n, ep, s->bucket);
    } else {
        snprintf(s->base_url, sizeof s->base_url, "https://%s.s3.%s.amazonaws.com/", s->bucket,
                 region);
    }
    snprintf(s->sigv4, sizeof s->sigv4, "aws:amz:%s:s3", region);
    return RALLY_OK;
}

static int s3_open(const char *root, struct rally__err *e, struct rally__store **out)
{
    char why[300];
    const struct rally__curl *cu = rally__curl(why, sizeof why);
    if (cu == NULL)
        return rally__fail(e, RALLY_ESYS, "%s needs libcurl, which does not load: %s", root, why);
    struct s3_store *s = calloc(1, sizeof *s);
    if (s == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory opening %s", root);
    s->cu = cu;
    int rc = configure(s, root, e);
    if (rc == RALLY_OK && (s->curl = cu->easy_init()) == NULL)
        rc = rally__fail(e, RALLY_ENOMEM, "libcurl has no handle for %s", root);
    if (rc != RALLY_OK) {
        free(s);
        return rc;
    }
    *out = &s->base;
    return RALLY_OK;
}

static void s3_close(struct rally__store *st)
{
    struct s3_store *s = (struct s3_store *)st;
    s->cu->easy_cleanup(s->curl);
    free(s);
}

/* --- one request ------------------------------------------------------------------- */

struct req {
    const char *method;  /* "GET", "HEAD", "PUT", "DELETE" */
    char url[4096];
    char what[1200];     /* "read s3://b/p/dir/name", for messages */
    char range[64];      /* "" or a Range header's value */
    /* the body of a PUT */
    const char *name; /* for the fault hook (sys.h) */
    const struct rally__snap_chunk *c;
    int nchunks, at;
    size_t off;
    uint64_t sent;
    int injected; /* the fault hook stopped the upload */
    XXH3_state_t *h;
    /* the response */
    rally__store_sink sink;
    void *arg;
    int stopped;         /* the sink stopped it */
    uint64_t fed;        /* bytes handed to the sink */
    char body[ERR_BODY_MAX + 1]; /* an error's body */
    size_t body_n;
    long status;
    curl_off_t length;
};

static size_t put_body(char *buf, size_t size, size_t nitems, void *arg)
{
    struct req *r = arg;
    size_t cap = size * nitems, n = 0;
    while (n < cap && r->at < r->nchunks) {
        const struct rally__snap_chunk *c = &r->c[r->at];
        size_t k = c->n - r->off;
        if (k > cap - n)
            k = cap - n;
        memcpy(buf + n, (const char *)c->p + r->off, k);
        if (r->h != NULL)
            XXH3_64bits_update(r->h, (const char *)c->p + r->off, k);
        n += k;
        r->off += k;
        if (r->off == c->n) {
            r->at++;
            r->off = 0;
        }
    }
    r->sent += n;
    /* a test's stop, as if killed with the body half sent (sys.h) */
    if (n > 0 && rally__snap_sys.fault != NULL &&
        rally__snap_sys.fault(RALLY__SNAP_AT_WRITE, r->name, r->sent) != 0) {
        r->injected = 1;
        return CURL_READFUNC_ABORT;
    }
    return n;
}

static size_t got_body(char *p, size_t size, size_t nitems, void *arg)
{
    struct req *r = arg;
    size_t n = size * nitems;
    if (r->status == 0 && r->sink != NULL) {
        r->fed += n;
        if (r->sink(r->arg, p, n) != 0) {
            r->stopped = 1;
            return 0; /* stops the transfer */
        }
        return n;
    }
    size_t k = n < ERR_BODY_MAX - r->body_n ? n : ERR_BODY_MAX - r->body_n;
    memcpy(r->body + r->body_n, p, k);
    r->body_n += k;
    return n;
}

/* The status line is known once the headers came: a body then goes to the
 * sink only for a 2xx. */
static size_t got_header(char *p, size_t size, size_t nitems, void *arg)
{
    struct req *r = arg;
    size_t n = size * nitems;
    int code;
    if (n > 9 && strncmp(p, "HTTP/", 5) == 0 && sscanf(p, "HTTP/%*s %d", &code) == 1)
        r->status = code >= 200 && code < 300 ? 0 : code;
    return n;
}

/* What S3 said in an error's body: "Code: Message", or the status. */
static void s3_reason(const struct req *r, long status, char *out, size_t cap)
{
    const char *c = strstr(r->body, "<Code>"), *m = strstr(r->body, "<Message>");
    if (c != NULL) {
        c += 6;
        int cn = (int)strcspn(c, "<");
        int mn = m ? (int)strcspn(m + 9, "<") : 0;
        snprintf(out, cap, "HTTP %ld %.*s%s%.*s", status, cn, c, m ? ": " : "", mn, m ? m + 9 : "");
    } else {
        snprintf(out, cap, "HTTP %ld", status);
    }
}

/* Runs r, trying again on a failure on the way or a 5xx.  *status is the
 * HTTP status (2xx when RALLY_OK). */
static int perform(struct s3_store *s, struct req *r, struct rally__err *e, long *status)
{
    const char *what = r->what;
    const struct rally__curl *cu = s->cu;
    CURL *c = s->curl;
    for (int t = 0; t < TRIES; t++) {
        struct curl_slist *hs = NULL;
        char token_h[2100];
        cu->easy_reset(c);
        cu->easy_setopt(c, CURLOPT_URL, r->url);
        cu->easy_setopt(c, CURLOPT_AWS_SIGV4, s->sigv4);
        cu->easy_setopt(c, CURLOPT_USERNAME, s->key_id);
        cu->easy_setopt(c, CURLOPT_PASSWORD, s->secret);
        cu->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        cu->easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
        cu->easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L); /* a stalled transfer ends */
        cu->easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
        cu->easy_setopt(c, CURLOPT_HEADERFUNCTION, got_header);
        cu->easy_setopt(c, CURLOPT_HEADERDATA, r);
        cu->easy_setopt(c, CURLOPT_WRITEFUNCTION, got_body);
        cu->easy_setopt(c, CURLOPT_WRITEDATA, r);
        if (s->token[0]) {
            snprintf(token_h, sizeof token_h, "x-amz-security-token: %s", s->token);
            hs = cu->slist_append(hs, token_h);
        }
        /* A body is checked by its checksums, not signed (one pass over it).
         * libcurl 7.88 sends no x-amz-content-sha256 of its own and S3 wants
         * one on every request; given here, libcurl signs it.  Every header
         * given is signed, so none is given to be dropped ("Expect:"). */
        hs = cu->slist_append(hs, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
        if (r->range[0]) {
            char h[80];
            snprintf(h, sizeof h, "Range: %s", r->range);
            hs = cu->slist_append(hs, h);
        }
        if (strcmp(r->method, "PUT") == 0) {
            curl_off_t n = 0;
            for (int i = 0; i < r->nchunks; i++)
                n += (curl_off_t)r->c[i].n;
            r->at = 0;
            r->off = 0;
            r->sent = 0;
            if (r->h != NULL)
                XXH3_64bits_reset(r->h);
            cu->easy_setopt(c, CURLOPT_UPLOAD, 1L);
            cu->easy_setopt(c, CURLOPT_INFILESIZE_LARGE, n);
            cu->easy_setopt(c, CURLOPT_READFUNCTION, put_body);
            cu->easy_setopt(c, CURLOPT_READDATA, r);
        } else if (strcmp(r->method, "HEAD") == 0) {
            cu->easy_setopt(c, CURLOPT_NOBODY, 1L);
        } else if (strcmp(r->method, "GET") != 0) {
            cu->easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
        }
        cu->easy_setopt(c, CURLOPT_HTTPHEADER, hs);
        r->status = 0;
        r->body_n = 0;
        r->stopped = 0;
        r->fed = 0;
        r->length = -1;
        CURLcode cc = cu->easy_perform(c);
        long code = 0;
        cu->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        cu->easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &r->length);
        cu->slist_free_all(hs);
        r->body[r->body_n] = '\0';
        if (r->injected)
            return rally__fail(e, RALLY_ESYS, "injected fault after a write: cannot %s", what);
        if (r->stopped || (cc == CURLE_OK && code >= 200 && code < 300)) {
            *status = code;
            return RALLY_OK;
        }
        if (cc == CURLE_OK && code < 500) { /* S3 said no: trying again changes nothing */
            *status = code;
            return RALLY_EPROTO;
        }
        if (t + 1 == TRIES || r->fed > 0) { /* a sink's bytes are not taken twice */
            char why[300];
            if (cc == CURLE_OK)
                s3_reason(r, code, why, sizeof why);
            else
                snprintf(why, sizeof why, "%s", cu->easy_strerror(cc));
            *status = code;
            return rally__fail(e, RALLY_ESYS, "cannot %s (%d tr%s): %s", what, t + 1,
                               t ? "ies" : "y", why);
        }
        struct timespec nap = {0, t == 0 ? 100000000L : 400000000L};
        nanosleep(&nap, NULL);
    }
    return RALLY_ESYS;
}

static void object_url(struct s3_store *s, const char *dir, const char *name, char *out,
                       size_t cap)
{
    snprintf(out, cap, "%s%s%s%s%s", s->base_url, s->prefix, dir, *dir && name ? "/" : "",
             name ? name : "");
}

/* A request of method on dir/name; what it does (verb) for messages.
 * NULL (e's ENOMEM) when out of memory. */
static struct req *new_req(struct rally__store *st, const char *method, const char *verb,
                           const char *dir, const char *name, struct rally__err *e)
{
    char where[1100];
    struct req *r = calloc(1, sizeof *r);
    rally__store_where(st, dir, where, sizeof where);
    if (r == NULL) {
        rally__fail(e, RALLY_ENOMEM, "out of memory: cannot %s %s/%s", verb, where, name);
        return NULL;
    }
    r->method = method;
    r->name = name;
    snprintf(r->what, sizeof r->what, "%s %s/%s", verb, where, name);
    object_url((struct s3_store *)st, dir, name, r->url, sizeof r->url);
    return r;
}

/* A HEAD refused (status) with no body: r's body becomes that of a GET of
 * the object's first byte (Range: bytes=0-0) when it is refused alike, so
 * that the refusal names S3's reason.  A 404 is left as it is: a missing
 * object is no refusal, and is looked at before every write; a missing
 * bucket is named by the write that follows. */
static void head_reason(struct s3_store *s, struct req *r, long status)
{
    if (strcmp(r->method, "HEAD") != 0 || r->body_n > 0 || status == 404)
        return;
    struct req *g = calloc(1, sizeof *g);
    struct rally__err e = {0, ""};
    long got = 0;
    if (g == NULL)
        return; /* out of memory: the status alone */
    g->method = "GET";
    memcpy(g->url, r->url, sizeof g->url);
    memcpy(g->what, r->what, sizeof g->what);
    snprintf(g->range, sizeof g->range, "bytes=0-0");
    if (perform(s, g, &e, &got) == RALLY_EPROTO && got == status) {
        memcpy(r->body, g->body, g->body_n + 1);
        r->body_n = g->body_n;
    }
    free(g);
}

/* After perform said no: the message for what (missing for a 404). */
static int refused(struct s3_store *s, const struct req *r, long status, struct rally__err *e,
                   int *missing)
{
    const char *what = r->what;
    char why[300];
    s3_reason(r, status, why, sizeof why);
    if (missing != NULL)
        *missing = status == 404 && strstr(r->body, "NoSuchBucket") == NULL;
    if (status == 404 && strstr(r->body, "NoSuchBucket") != NULL)
        return rally__fail(e, RALLY_ESYS, "cannot %s: the bucket %s does not exist (%s)", what,
                           s->bucket, why);
    if (strstr(r->body, "<Code>InvalidBucketName<") != NULL)
        return rally__fail(e, RALLY_ESYS,
                           "cannot %s: the bucket name %s is not valid (%s); a bucket's name "
                           "is 3 to 63 characters of a-z 0-9 . -, beginning and ending with a "
                           "letter or a digit",
                           what, s->bucket, why);
    if (status == 404)
        return rally__fail(e, RALLY_EPROTO, "%s is missing", what + strcspn(what, " ") + 1);
    if (status == 403)
        return rally__fail(e, RALLY_ESYS,
                           "cannot %s: access denied (%s; check the AWS credentials and region)",
                           what, why);
    return rally__fail(e, RALLY_ESYS, "cannot %s: %s", what, why);
}

/* Runs r: RALLY_OK when S3 did it, or answered the status done (0: none)
 * but for a missing bucket; else the refusal's sentence. */
static int ask(struct s3_store *s, struct req *r, long done, struct rally__err *e, int *missing)
{
    long status = 0;
    int rc = perform(s, r, e, &status);
    if (rc != RALLY_EPROTO)
        return rc;
    if (done != 0 && status == done && strstr(r->body, "NoSuchBucket") == NULL)
        return RALLY_OK;
    head_reason(s, r, status);
    return refused(s, r, status, e, missing);
}

/* --- the operations ---------------------------------------------------------------- */

static int s3_put(struct rally__store *st, const char *dir, const char *name,
                  const struct rally__snap_chunk *c, int nchunks, struct rally__err *e,
                  uint64_t *xxh3)
{
    struct s3_store *s = (struct s3_store *)st;
    struct req *r = new_req(st, "PUT", "write", dir, name, e);
    if (r == NULL)
        return e->code;
    if (xxh3 != NULL && (r->h = XXH3_createState()) == NULL) {
        int rc = rally__fail(e, RALLY_ENOMEM, "out of memory: cannot %s", r->what);
        free(r);
        return rc;
    }
    r->c = c;
    r->nchunks = nchunks;
    uint64_t total = 0;
    for (int i = 0; i < nchunks; i++)
        total += c[i].n;
    if (total > PUT_MAX) { /* S3's limit for one PUT; no multipart upload here yet */
        int rc = rally__fail(e, RALLY_EINVAL,
                             "cannot %s: %llu bytes is over the 5 GiB one PUT may carry", r->what,
                             (unsigned long long)total);
        XXH3_freeState(r->h);
        free(r);
        return rc;
    }
    int rc = ask(s, r, 0, e, NULL);
    if (rc == RALLY_OK && xxh3 != NULL)
        *xxh3 = XXH3_64bits_digest(r->h);
    XXH3_freeState(r->h);
    free(r);
    return rc;
}

static int s3_size(struct rally__store *st, const char *dir, const char *name,
                   struct rally__err *e, int *missing, uint64_t *nbytes)
{
    struct s3_store *s = (struct s3_store *)st;
    struct req *r = new_req(st, "HEAD", "look at", dir, name, e);
    if (r == NULL)
        return e->code;
    int rc = ask(s, r, 0, e, missing);
    if (rc == RALLY_OK && r->length < 0)
        rc = rally__fail(e, RALLY_EPROTO, "cannot %s: the store gave no size", r->what);
    else if (rc == RALLY_OK)
        *nbytes = (uint64_t)r->length;
    free(r);
    return rc;
}

static int s3_get(struct rally__store *st, const char *dir, const char *name, uint64_t max,
                  rally__store_sink sink, void *arg, struct rally__err *e, int *missing)
{
    struct s3_store *s = (struct s3_store *)st;
    if (max == 0)
        return RALLY_OK;
    struct req *r = new_req(st, "GET", "read", dir, name, e);
    if (r == NULL)
        return e->code;
    if (max <= PEEK_MAX)
        snprintf(r->range, sizeof r->range, "bytes=0-%llu", (unsigned long long)max - 1);
    r->sink = sink;
    r->arg = arg;
    int rc = ask(s, r, 416, e, missing); /* 416: a range of an empty object, no bytes */
    free(r);
    return rc;
}

/* A ListObjectsV2 page, parsed. */
struct listing {
    XML_Parser xp;
    char text[1100];
    size_t text_n;
    int in_contents, in_prefixes, truncated;
    char token[1100];
    size_t plen; /* the listed prefix's length */
    char **v;
    uint64_t *sz; /* v[i]'s size; UINT64_MAX for a prefix (a "directory") */
    size_t n, cap;
    int nomem, last; /* last: the entry a Size in Contents belongs to, -1 none */
};

static void add_name(struct listing *l, const char *full, int is_prefix)
{
    if (strlen(full) <= l->plen)
        return;
    const char *name = full + l->plen;
    size_t k = strlen(name) - (is_prefix && name[strlen(name) - 1] == '/');
    if (k == 0 || memchr(name, '/', k) != NULL)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        char **nv = realloc(l->v, cap * sizeof *nv);
        uint64_t *ns = nv ? realloc(l->sz, cap * sizeof *ns) : NULL;
        if (nv != NULL)
            l->v = nv;
        if (ns == NULL) {
            l->nomem = 1;
            return;
        }
        l->sz = ns;
        l->cap = cap;
    }
    if ((l->v[l->n] = strndup(name, k)) == NULL) {
        l->nomem = 1;
        return;
    }
    l->sz[l->n] = UINT64_MAX;
    l->last = is_prefix ? -1 : (int)l->n;
    l->n++;
}

static void XMLCALL x_start(void *arg, const XML_Char *el, const XML_Char **attr)
{
    struct listing *l = arg;
    (void)attr;
    l->text_n = 0;
    if (strcmp(el, "Contents") == 0) {
        l->in_contents = 1;
        l->last = -1;
    } else if (strcmp(el, "CommonPrefixes") == 0) {
        l->in_prefixes = 1;
    }
}

static void XMLCALL x_end(void *arg, const XML_Char *el)
{
    struct listing *l = arg;
    l->text[l->text_n] = '\0';
    if (strcmp(el, "Contents") == 0)
        l->in_contents = 0;
    else if (strcmp(el, "CommonPrefixes") == 0)
        l->in_prefixes = 0;
    else if (strcmp(el, "Key") == 0 && l->in_contents)
        add_name(l, l->text, 0);
    else if (strcmp(el, "Prefix") == 0 && l->in_prefixes)
        add_name(l, l->text, 1);
    else if (strcmp(el, "Size") == 0 && l->in_contents && l->last >= 0)
        l->sz[l->last] = strtoull(l->text, NULL, 10);
    else if (strcmp(el, "IsTruncated") == 0)
        l->truncated = strcmp(l->text, "true") == 0;
    else if (strcmp(el, "NextContinuationToken") == 0)
        snprintf(l->token, sizeof l->token, "%s", l->text);
    l->text_n = 0;
}

static void XMLCALL x_text(void *arg, const XML_Char *s, int len)
{
    struct listing *l = arg;
    size_t k = (size_t)len < sizeof l->text - 1 - l->text_n ? (size_t)len
                                                            : sizeof l->text - 1 - l->text_n;
    memcpy(l->text + l->text_n, s, k);
    l->text_n += k;
}

static int list_sink(void *arg, const void *p, size_t n)
{
    struct listing *l = arg;
    return XML_Parse(l->xp, p, (int)n, 0) == XML_STATUS_ERROR;
}

/* A query value as the canonical request wants it (RFC 3986, %XX). */
static void encode(const char *s, char *out, size_t cap)
{
    size_t k = 0;
    for (; *s && k + 4 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~')
            out[k++] = (char)ch;
        else
            k += (size_t)snprintf(out + k, cap - k, "%%%02X", ch);
    }
    out[k] = '\0';
}

static int s3_list_sized(struct rally__store *st, const char *dir, struct rally__err *e,
                         int *missing, char ***names, uint64_t **sizes, size_t *count)
{
    struct s3_store *s = (struct s3_store *)st;
    struct listing l = {0};
    l.last = -1;
    struct req *r = calloc(1, sizeof *r);
    char prefix[600], pq[700], tq[1100] = "", where[1100];
    int rc = RALLY_OK;
    if (missing != NULL)
        *missing = 0;
    if (r == NULL)
        return rally__fail(e, RALLY_ENOMEM, "out of memory listing %s", st->where);
    rally__store_where(st, dir, where, sizeof where);
    snprintf(r->what, sizeof r->what, "list %s", where);
    snprintf(prefix, sizeof prefix, "%s%s%s", s->prefix, dir, *dir ? "/" : "");
    l.plen = strlen(prefix);
    encode(prefix, pq, sizeof pq);
    do {
        if ((l.xp = XML_ParserCreate(NULL)) == NULL) {
            rc = rally__fail(e, RALLY_ENOMEM, "out of memory listing %s", where);
            break;
        }
        XML_SetUserData(l.xp, &l);
        XML_SetElementHandler(l.xp, x_start, x_end);
        XML_SetCharacterDataHandler(l.xp, x_text);
        l.truncated = 0;
        /* the query in the canonical order (by name), encoded: signed as it is */
        snprintf(r->url, sizeof r->url, "%s?%s%s%sdelimiter=%%2F&list-type=2&prefix=%s",
                 s->base_url, tq[0] ? "continuation-token=" : "", tq, tq[0] ? "&" : "", pq);
        r->method = "GET";
        r->sink = list_sink;
        r->arg = &l;
        rc = ask(s, r, 0, e, missing);
        if (rc == RALLY_OK && (r->stopped || XML_Parse(l.xp, "", 0, 1) == XML_STATUS_ERROR))
            rc = rally__fail(e, RALLY_EPROTO, "cannot %s: the store's answer is not a listing",
                             r->what);
        else if (rc == RALLY_OK && l.nomem)
            rc = rally__fail(e, RALLY_ENOMEM, "out of memory listing %s", where);
        XML_ParserFree(l.xp);
        encode(l.token, tq, sizeof tq);
    } while (rc == RALLY_OK && l.truncated && l.token[0]);
    free(r);
    if (rc != RALLY_OK) {
        rally__store_free_names(l.v, l.n);
        free(l.sz);
        return rc;
    }
    *names = l.v;
    *count = l.n;
    if (missing != NULL)
        *missing = l.n == 0; /* no directories: one that holds nothing is not there */
    if (sizes != NULL)
        *sizes = l.sz;
    else
        free(l.sz);
    return RALLY_OK;
}

static int s3_list(struct rally__store *st, const char *dir, struct rally__err *e, int *missing,
                   char ***names, size_t *count)
{
    return s3_list_sized(st, dir, e, missing, names, NULL, count);
}

static int s3_remove(struct rally__store *st, const char *dir, const char *name, int durable,
                     struct rally__err *e)
{
    struct s3_store *s = (struct s3_store *)st;
    (void)durable; /* a DELETE that answered is done */
    if (name == NULL)
        return RALLY_OK; /* no directories */
    struct req *r = new_req(st, "DELETE", "remove", dir, name, e);
    if (r == NULL)
        return e->code;
    int rc = ask(s, r, 404, e, NULL); /* 404: gone already */
    free(r);
    return rc;
}

const struct rally__store_ops rally__store_s3 = {
    .scheme = "s3",
    .open = s3_open,
    .close = s3_close,
    .put = s3_put,
    .size = s3_size,
    .get = s3_get,
    .list = s3_list,
    .list_sized = s3_list_sized,
    .remove = s3_remove,
};
