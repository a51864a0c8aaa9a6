/*
 * status_cli.c — `rally-run status URL`: a running job's rank table in a
 * terminal, from its status server's /status.json (docs/status.md).
 *
 *     rally-run status [--token T] [--json] [--timeout-ms T] URL
 *
 * URL is what rally-run printed at the start ("http://127.0.0.1:41234/",
 * with "?token=..." off loopback), or HOST:PORT, or a bare PORT on this
 * host.  The token may also come from --token or RALLY_STATUS_TOKEN.  Exit
 * status 0, 1 when the job cannot be reached or answers with an error
 * (said in one line), 2 for a usage error.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/sock.h"
#include "run/run.h"
#include "util/curl.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: rally-run status [--token T] [--json] [--timeout-ms T] URL\n"
               "Prints a running job's ranks from its status server (rally-run --status).\n"
               "URL: http://HOST:PORT/[?token=T], HOST:PORT or PORT (this host).\n"
               "  --token T        the token rally-run printed (off loopback; also\n"
               "                   RALLY_STATUS_TOKEN)\n"
               "  --json           print status.json as it came\n"
               "  --timeout-ms T   give up after T ms (default 5000)\n");
}

/* URL into host, port and token (when it carries one). */
static int parse_url(const char *url, char *host, size_t cap, int *port, char *token, size_t tcap)
{
    const char *s = url;
    if (strncmp(s, "http://", 7) == 0)
        s += 7;
    char hp[RALLY__HOST_MAX + 16];
    size_t n = strcspn(s, "/?");
    if (n >= sizeof hp)
        return -1;
    memcpy(hp, s, n);
    hp[n] = '\0';
    const char *q = strstr(s + n, "token=");
    if (q != NULL)
        snprintf(token, tcap, "%.*s", (int)strcspn(q + 6, "&#"), q + 6);
    char *end;
    long p = strtol(hp, &end, 10);
    if (hp[0] && *end == '\0') {
        snprintf(host, cap, "127.0.0.1");
        *port = (int)p;
        return p > 0 && p < 65536 ? 0 : -1;
    }
    struct rally__err e = {0};
    return rally__hostport_split(hp, host, cap, port, &e) == RALLY_OK && *port > 0 ? 0 : -1;
}

/* What libcurl hands us of the answer's body. */
struct body {
    char *p;
    size_t n, cap;
};

static size_t take(char *data, size_t size, size_t count, void *arg)
{
    struct body *b = arg;
    size_t n = size * count;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (p == NULL)
            return 0; /* libcurl stops with CURLE_WRITE_ERROR */
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = '\0';
    return n;
}

/* GET /status.json (libcurl, no proxy): the body, malloc'd, or NULL with
 * why said. */
static char *fetch(const char *host, int port, const char *token, int64_t timeout_ms)
{
    char where[RALLY__HOST_MAX + 16], url[RALLY__HOST_MAX + 48], auth[160];
    rally__hostport_fmt(host, port, where, sizeof where);
    snprintf(url, sizeof url, "http://%s/status.json", where);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    char why[300];
    const struct rally__curl *cu = rally__curl(why, sizeof why);
    if (cu == NULL) {
        fprintf(stderr, "rally-run status: cannot read %s: %s\n", url, why);
        return NULL;
    }
    struct body b = {0};
    struct curl_slist *hdr = token[0] ? cu->slist_append(NULL, auth) : NULL;
    CURL *c = cu->easy_init();
    long code = 0;
    CURLcode rc = CURLE_OUT_OF_MEMORY;
    if (c != NULL && (hdr != NULL || !token[0])) {
        cu->easy_setopt(c, CURLOPT_URL, url);
        cu->easy_setopt(c, CURLOPT_NOPROXY, "*");
        cu->easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
        cu->easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
        cu->easy_setopt(c, CURLOPT_WRITEFUNCTION, take);
        cu->easy_setopt(c, CURLOPT_WRITEDATA, &b);
        if ((rc = cu->easy_perform(c)) == CURLE_OK)
            cu->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    }
    cu->easy_cleanup(c);
    cu->slist_free_all(hdr);
    if (rc != CURLE_OK)
        fprintf(stderr, "rally-run status: cannot read %s: %s\n", url, cu->easy_strerror(rc));
    else if (code == 401)
        fprintf(stderr,
                "rally-run status: %s answered 401: the job asks for its token "
                "(--token, or the URL rally-run printed)\n",
                where);
    else if (code != 200)
        fprintf(stderr, "rally-run status: %s answered %ld: %s", where, code, b.p ? b.p : "\n");
    if (rc == CURLE_OK && code == 200 && b.p != NULL)
        return b.p;
    free(b.p);
    return NULL;
}

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static void secs(double s, char *out, size_t cap)
{
    if (s < 60)
        snprintf(out, cap, "%.1f s", s);
    else if (s < 3600)
        snprintf(out, cap, "%d min %02d s", (int)s / 60, (int)s % 60);
    else
        snprintf(out, cap, "%d h %02d min", (int)s / 3600, (int)s / 60 % 60);
}

static void table(json_t *st)
{
    char up[32];
    secs(json_number_value(json_object_get(st, "uptime_seconds")), up, sizeof up);
    printf("job %s  run %.8s  launcher %s  phase %s  epoch %" JSON_INTEGER_FORMAT
           "  ranks %" JSON_INTEGER_FORMAT "  up %s\n",
           str(st, "job"), str(st, "run_id"), str(st, "launcher"), str(st, "phase"),
           json_integer_value(json_object_get(st, "epoch")),
           json_integer_value(json_object_get(st, "world")), up);
    json_t *p = json_object_get(st, "progress");
    if (json_is_integer(json_object_get(p, "iteration"))) {
        printf("progress: iteration %" JSON_INTEGER_FORMAT,
               json_integer_value(json_object_get(p, "iteration")));
        if (json_is_integer(json_object_get(p, "total")))
            printf(" of %" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(p, "total")));
        if (json_is_number(json_object_get(p, "rate_per_second")))
            printf(", %.3g it/s", json_number_value(json_object_get(p, "rate_per_second")));
        if (json_is_number(json_object_get(p, "eta_seconds"))) {
            char eta[32];
            secs(json_number_value(json_object_get(p, "eta_seconds")), eta, sizeof eta);
            printf(", ETA %s", eta);
        }
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(p, "values"), i, v)
        {
            if (json_is_number(json_object_get(v, "value")))
                printf(", %s %.6g", str(v, "key"), json_number_value(json_object_get(v, "value")));
        }
        printf("\n");
    }
    printf("%4s  %-16s %8s %4s  %-10s %7s  %-24s %9s %6s\n", "RANK", "HOST", "PID", "INC", "STATE",
           "VERSION", "COLLECTIVE", "HEARTBEAT", "DEATHS");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(st, "ranks"), i, r)
    {
        char rank[16], pid[16], ver[24], op[64] = "", hb[24] = "-";
        json_t *x = json_object_get(r, "rank");
        if (json_is_integer(x))
            snprintf(rank, sizeof rank, "%" JSON_INTEGER_FORMAT, json_integer_value(x));
        else
            snprintf(rank, sizeof rank, "(%" JSON_INTEGER_FORMAT ")",
                     json_integer_value(json_object_get(r, "launched_as")));
        x = json_object_get(r, "pid");
        snprintf(pid, sizeof pid, "%s", "-");
        if (json_is_integer(x))
            snprintf(pid, sizeof pid, "%" JSON_INTEGER_FORMAT, json_integer_value(x));
        x = json_object_get(r, "version");
        snprintf(ver, sizeof ver, "%s", "-");
        if (json_is_integer(x))
            snprintf(ver, sizeof ver, "%" JSON_INTEGER_FORMAT, json_integer_value(x));
        json_t *c = json_object_get(r, "collective");
        if (json_is_object(c)) {
            char t[32];
            secs(json_number_value(json_object_get(c, "seconds")), t, sizeof t);
            const char *kind = str(c, "kind");
            json_t *seq = json_object_get(c, "seq");
            if (json_is_true(json_object_get(c, "inside")) && json_is_integer(seq))
                snprintf(op, sizeof op, "in %s #%" JSON_INTEGER_FORMAT " %s", kind[0] ? kind : "op",
                         json_integer_value(seq), t);
            else if (json_is_true(json_object_get(c, "inside")))
                snprintf(op, sizeof op, "in %s %s", kind[0] ? kind : "checkpoint", t);
            else
                snprintf(op, sizeof op, "computing %s", t);
        }
        x = json_object_get(r, "heartbeat_age_seconds");
        if (json_is_number(x))
            secs(json_number_value(x), hb, sizeof hb);
        printf("%4s  %-16.16s %8s %4" JSON_INTEGER_FORMAT
               "  %-10s %7s  %-24.24s %9s %6" JSON_INTEGER_FORMAT "%s\n",
               rank, str(r, "host"), pid, json_integer_value(json_object_get(r, "incarnation")),
               str(r, "state"), ver, op, hb, json_integer_value(json_object_get(r, "deaths")),
               json_is_true(json_object_get(r, "waited_on")) ? "  <- the job waits for it" : "");
    }
    json_t *snaps = json_object_get(st, "snapshots"), *t = json_object_get(st, "totals");
    json_t *last = json_array_get(snaps, json_array_size(snaps) - 1);
    printf("snapshots: %" JSON_INTEGER_FORMAT " committed, %" JSON_INTEGER_FORMAT " void",
           json_integer_value(json_object_get(t, "snapshots_committed")),
           json_integer_value(json_object_get(t, "snapshots_void")));
    if (last)
        printf("; newest: version %" JSON_INTEGER_FORMAT " %s%s%s",
               json_integer_value(json_object_get(last, "version")), str(last, "state"),
               str(last, "tier")[0] ? " to " : "", str(last, "tier"));
    printf("\ndeaths %" JSON_INTEGER_FORMAT ", recovered %" JSON_INTEGER_FORMAT
           ", recovery rounds %" JSON_INTEGER_FORMAT ", restarts %" JSON_INTEGER_FORMAT "\n",
           json_integer_value(json_object_get(t, "deaths")),
           json_integer_value(json_object_get(t, "recovered")),
           json_integer_value(json_object_get(t, "epochs")),
           json_integer_value(json_object_get(t, "restarts")));
    json_t *e;
    json_array_foreach(json_object_get(st, "epochs"), i, e)
    {
        json_t *rs = json_object_get(e, "recovered_seconds");
        printf("  epoch %" JSON_INTEGER_FORMAT ": %s; ",
               json_integer_value(json_object_get(e, "epoch")), str(e, "cause"));
        if (json_is_number(rs))
            printf("back in step after %.2f s\n", json_number_value(rs));
        else
            printf("recovering\n");
    }
}

int run_status_cli(int argc, char **argv)
{
    const char *url = NULL, *env = getenv("RALLY_STATUS_TOKEN");
    char token[128];
    snprintf(token, sizeof token, "%s", env ? env : "");
    int raw = 0;
    int64_t timeout_ms = 5000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            raw = 1;
        } else if (strcmp(argv[i], "--token") == 0 && i + 1 < argc) {
            snprintf(token, sizeof token, "%s", argv[++i]);
        } else if (strcmp(argv[i], "--timeout-ms") == 0 && i + 1 < argc) {
            timeout_ms = strtoll(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] != '-' && url == NULL) {
            url = argv[i];
        } else {
            fprintf(stderr, "rally-run status: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    char host[RALLY__HOST_MAX];
    int port = 0;
    if (url == NULL) {
        usage(stderr);
        return 2;
    }
    if (parse_url(url, host, sizeof host, &port, token, sizeof token) != 0) {
        fprintf(stderr, "rally-run status: '%s' is not http://HOST:PORT/, HOST:PORT or PORT\n",
                url);
        return 2;
    }
    char *body = fetch(host, port, token, timeout_ms > 0 ? timeout_ms : 5000);
    if (body == NULL)
        return 1;
    if (raw) {
        fputs(body, stdout);
        free(body);
        return 0;
    }
    json_error_t err;
    json_t *st = json_loads(body, 0, &err);
    free(body);
    if (st == NULL || strcmp(str(st, "schema"), "rally-status/1") != 0) {
        fprintf(stderr, "rally-run status: the answer is not rally-status/1 JSON%s%s\n",
                st ? "" : ": ", st ? "" : err.text);
        json_decref(st);
        return 1;
    }
    table(st);
    json_decref(st);
    return 0;
}
