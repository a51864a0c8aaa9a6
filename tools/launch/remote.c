/*
 * remote.c — parses host lists, builds each rank's wrapper command line
 * around its kind's words (kind.h) and reads the agent's marked lines into
 * an outcome for the policy (remote.h).
 */
#include "remote.h"

#include "kind.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define MARK "@rally-agent "

void rally__launch_hosts_free(struct rally__launch_hosts *hs)
{
    if (hs == NULL)
        return;
    free(hs->h);
    hs->h = NULL;
    hs->n = 0;
}

/* A positive slot count in s[0..n); 0 when it is none. */
static int count(const char *s, size_t n)
{
    long v = 0;
    if (n == 0 || n > 6)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return 0;
        v = v * 10 + (s[i] - '0');
    }
    return (int)v;
}

/* Splits the label off "spec@label" (s[0..*n)) at its first '@': *n becomes
 * the spec's length and lab[0..*ln) the label (none: *ln is 0).  0, or -1
 * when the label is empty or not of letters, digits, '.', '_' and '-' (err
 * written). */
static int take_label(const char *s, size_t *n, const char **lab, size_t *ln, char *err,
                      size_t cap)
{
    const char *at = memchr(s, '@', *n);
    *lab = NULL;
    *ln = 0;
    if (at == NULL)
        return 0;
    *lab = at + 1;
    *ln = *n - (size_t)(at + 1 - s);
    if (*ln == 0) {
        snprintf(err, cap, "'%.*s': the label after '@' is empty", (int)*n, s);
        return -1;
    }
    if (*ln >= RALLY__LAUNCH_LABEL_MAX) {
        snprintf(err, cap, "the label '%.20s...' is longer than %d bytes", *lab,
                 RALLY__LAUNCH_LABEL_MAX - 1);
        return -1;
    }
    for (size_t i = 0; i < *ln; i++)
        if (!isalnum((unsigned char)(*lab)[i]) && strchr("._-", (*lab)[i]) == NULL) {
            snprintf(err, cap, "'%.*s': a label is letters, digits, '.', '_' and '-'", (int)*n, s);
            return -1;
        }
    *n = (size_t)(at - s);
    return 0;
}

/* Appends host name[0..n) with slots and label[0..ln); 0 or -1 (err
 * written). */
static int add(struct rally__launch_hosts *hs, const char *name, size_t n, int slots,
               const char *label, size_t ln, char *err, size_t cap)
{
    if (n == 0) {
        snprintf(err, cap, "an empty host name");
        return -1;
    }
    if (n >= RALLY__LAUNCH_HOST_MAX) {
        snprintf(err, cap, "the host name '%.40s...' is longer than %d bytes", name,
                 RALLY__LAUNCH_HOST_MAX - 1);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (isspace((unsigned char)name[i]) || name[i] == ',' || name[i] == '\'' ||
            name[i] == '"' || name[i] == '\\') {
            snprintf(err, cap, "the host name '%.*s' holds a space, comma or quote", (int)n, name);
            return -1;
        }
    if (name[0] == '-') {
        snprintf(err, cap, "the host name '%.*s' starts with '-'", (int)n, name);
        return -1;
    }
    /* a host is one failure domain: its ranks must agree on their rack */
    for (size_t i = 0; i < hs->n; i++)
        if (strlen(hs->h[i].name) == n && memcmp(hs->h[i].name, name, n) == 0 &&
            (strlen(hs->h[i].label) != ln || memcmp(hs->h[i].label, label, ln) != 0)) {
            snprintf(err, cap, "host %.*s has two labels, %s and %.*s", (int)n, name,
                     hs->h[i].label[0] ? hs->h[i].label : "none", (int)ln, ln ? label : "none");
            return -1;
        }
    struct rally__launch_host *h = realloc(hs->h, (hs->n + 1) * sizeof *h);
    if (h == NULL) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    hs->h = h;
    memcpy(h[hs->n].name, name, n);
    h[hs->n].name[n] = '\0';
    h[hs->n].slots = slots;
    memcpy(h[hs->n].label, label ? label : "", ln);
    h[hs->n].label[ln] = '\0';
    hs->n++;
    return 0;
}

/* "host", "host:K", "[v6]" or "[v6]:K" in s[0..n), with label[0..ln); a v6
 * host is kept without its brackets (ssh, srun and mpirun take it so). */
static int add_spec(struct rally__launch_hosts *hs, const char *s, size_t n, const char *label,
                    size_t ln, char *err, size_t cap)
{
    const char *name = s, *close = n && s[0] == '[' ? memchr(s, ']', n) : NULL;
    size_t len;
    const char *colon;
    if (close != NULL) {
        name = s + 1;
        len = (size_t)(close - name);
        colon = close + 1 < s + n ? close + 1 : NULL;
        if (len == 0 || (colon != NULL && *colon != ':')) {
            snprintf(err, cap, "'%.*s' is not [ADDRESS] or [ADDRESS]:SLOTS", (int)n, s);
            return -1;
        }
    } else {
        colon = memchr(s, ':', n);
        len = colon ? (size_t)(colon - s) : n;
        if (colon != NULL && memchr(colon + 1, ':', n - (size_t)(colon + 1 - s)) != NULL) {
            snprintf(err, cap, "'%.*s': write an IPv6 host in brackets, e.g. [fd00::1]:4", (int)n,
                     s);
            return -1;
        }
    }
    if (colon == NULL)
        return add(hs, name, len, 1, label, ln, err, cap);
    int k = count(colon + 1, n - (size_t)(colon + 1 - s));
    if (k <= 0) {
        snprintf(err, cap, "'%.*s': the slots after ':' must be a number from 1 to 999999", (int)n,
                 s);
        return -1;
    }
    return add(hs, name, len, k, label, ln, err, cap);
}

int rally__launch_hosts_parse(struct rally__launch_hosts *hs, const char *list, char *err,
                              size_t cap)
{
    const char *s = list;
    if (*s == '\0') {
        snprintf(err, cap, "--hosts is empty");
        return -1;
    }
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s), ln;
        const char *label;
        if (take_label(s, &n, &label, &ln, err, cap) != 0 ||
            add_spec(hs, s, n, label, ln, err, cap) != 0)
            return -1;
        if (comma == NULL)
            return 0;
        s = comma + 1;
    }
}

int rally__launch_hostfile_parse(struct rally__launch_hosts *hs, const char *text, char *err,
                                 size_t cap)
{
    int lineno = 0;
    char why[256];
    for (const char *s = text; *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        lineno++;
        const char *hash = memchr(s, '#', n);
        if (hash != NULL)
            n = (size_t)(hash - s);
        while (n > 0 && isspace((unsigned char)*s))
            s++, n--;
        while (n > 0 && isspace((unsigned char)s[n - 1]))
            n--;
        if (n > 0) {
            size_t w = 0;
            while (w < n && !isspace((unsigned char)s[w]))
                w++;
            const char *rest = s + w, *label;
            size_t m = n - w, ln;
            while (m > 0 && isspace((unsigned char)*rest))
                rest++, m--;
            int rc = take_label(s, &w, &label, &ln, why, sizeof why);
            /* "host:K" and "[v6]" / "[v6]:K"; a bare v6 address is a host */
            if (rc == 0 && m == 0 &&
                (s[0] == '[' ||
                 (memchr(s, ':', w) != NULL && memchr(s, ':', w) == memrchr(s, ':', w))))
                rc = add_spec(hs, s, w, label, ln, why, sizeof why);
            else if (rc == 0 && m == 0)
                rc = add(hs, s, w, 1, label, ln, why, sizeof why);
            else if (rc == 0 && m > 6 && strncmp(rest, "slots=", 6) == 0 &&
                     count(rest + 6, m - 6) > 0)
                rc = add(hs, s, w, count(rest + 6, m - 6), label, ln, why, sizeof why);
            else if (rc == 0) {
                snprintf(why, sizeof why, "'%.*s' is not 'slots=K' (K from 1 to 999999)", (int)m,
                         rest);
                rc = -1;
            }
            if (rc != 0) {
                snprintf(err, cap, "line %d: %s", lineno, why);
                return -1;
            }
        }
        s = nl ? nl + 1 : s + strlen(s);
    }
    if (hs->n == 0) {
        snprintf(err, cap, "it names no host");
        return -1;
    }
    return 0;
}

int rally__launch_slurm_slots(struct rally__launch_hosts *hs, const char *tpn, char *err,
                              size_t cap)
{
    size_t i = 0;
    const char *s = tpn;
    while (*s) {
        char *end;
        long k = strtol(s, &end, 10);
        long rep = 1;
        if (end == s || k <= 0 || k > 999999)
            goto bad;
        s = end;
        if (strncmp(s, "(x", 2) == 0) {
            rep = strtol(s + 2, &end, 10);
            if (end == s + 2 || rep <= 0 || *end != ')')
                goto bad;
            s = end + 1;
        }
        for (long j = 0; j < rep; j++, i++)
            if (i < hs->n)
                hs->h[i].slots = (int)k;
        if (*s == ',')
            s++;
        else if (*s)
            goto bad;
    }
    if (i != hs->n) {
        snprintf(err, cap, "SLURM_TASKS_PER_NODE=%s counts %zu nodes, the node list %zu", tpn, i,
                 hs->n);
        return -1;
    }
    return 0;
bad:
    snprintf(err, cap, "SLURM_TASKS_PER_NODE=%s is not like 2(x3),1", tpn);
    return -1;
}

int rally__launch_place(const struct rally__launch_hosts *hs, int world, int *host_of, char *err,
                        size_t cap)
{
    int r = 0;
    long total = 0;
    for (size_t i = 0; i < hs->n; i++) {
        total += hs->h[i].slots;
        for (int k = 0; k < hs->h[i].slots && r < world; k++)
            host_of[r++] = (int)i;
    }
    if (r < world) {
        snprintf(err, cap, "the hosts have %ld slot%s for %d workers: give more hosts or slots",
                 total, total == 1 ? "" : "s", world);
        return -1;
    }
    return 0;
}

int rally__launch_place_one(const struct rally__launch_hosts *hs, const int *host_of,
                            const unsigned char *held, int n, const unsigned char *avoid)
{
    int fallback = -1;
    for (size_t h = 0; h < hs->n; h++) {
        int used = 0;
        for (int r = 0; r < n; r++)
            used += held[r] && host_of[r] == (int)h;
        if (used >= hs->h[h].slots)
            continue;
        if (avoid == NULL || !avoid[h])
            return (int)h;
        if (fallback < 0)
            fallback = (int)h;
    }
    return fallback;
}

int rally__launch_hosts_merge(struct rally__launch_hosts *hs,
                              const struct rally__launch_hosts *fresh)
{
    size_t n = hs->n; /* room for hs's hosts and every one new (a name twice: more room) */
    for (size_t i = 0; i < fresh->n; i++) {
        size_t k = 0;
        while (k < hs->n && strcmp(hs->h[k].name, fresh->h[i].name) != 0)
            k++;
        n += k == hs->n;
    }
    if (n > hs->n) {
        struct rally__launch_host *h = realloc(hs->h, n * sizeof *h);
        if (h == NULL)
            return -1;
        hs->h = h;
    }
    size_t old = hs->n;
    for (size_t k = 0; k < old; k++)
        hs->h[k].slots = 0;
    for (size_t i = 0; i < fresh->n; i++) {
        size_t k = 0;
        while (k < hs->n && strcmp(hs->h[k].name, fresh->h[i].name) != 0)
            k++;
        if (k == hs->n)
            hs->h[hs->n++] = fresh->h[i];
        else
            hs->h[k].slots += fresh->h[i].slots;
    }
    return 0;
}

/* --- command lines ------------------------------------------------------- */

char *rally__launch_quote(const char *w)
{
    size_t n = strlen(w), extra = 2;
    int safe = n > 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)w[i];
        if (!(isalnum(c) || strchr("_@%+=:,./-", c) != NULL))
            safe = 0;
        if (c == '\'')
            extra += 3;
    }
    char *q = malloc(n + extra + 1);
    if (q == NULL)
        return NULL;
    if (safe) {
        memcpy(q, w, n + 1);
        return q;
    }
    char *p = q;
    *p++ = '\'';
    for (size_t i = 0; i < n; i++) {
        if (w[i] == '\'') {
            memcpy(p, "'\\''", 4);
            p += 4;
        } else {
            *p++ = w[i];
        }
    }
    *p++ = '\'';
    *p = '\0';
    return q;
}

void rally__launch_argv_free(char **argv)
{
    if (argv == NULL)
        return;
    for (char **a = argv; *a; a++)
        free(*a);
    free(argv);
}

void rally__launch_words_push(struct rally__launch_words *x, const char *s, int quote)
{
    if (x->oom)
        return;
    if (x->n + 2 > x->cap) {
        size_t c = x->cap ? 2 * x->cap : 32;
        char **v = realloc(x->v, c * sizeof *v);
        if (v == NULL) {
            x->oom = 1;
            return;
        }
        x->v = v;
        x->cap = c;
    }
    char *w = quote ? rally__launch_quote(s) : strdup(s);
    if (w == NULL) {
        x->oom = 1;
        return;
    }
    x->v[x->n++] = w;
    x->v[x->n] = NULL;
}

char **rally__launch_command(const struct rally__launch_cmd_in *in)
{
    struct rally__launch_words x = {NULL, 0, 0, 0};
    int q = in->kind->quotes; /* the remote shell reads these words */
    if (in->kind->wrap == NULL)
        return NULL;
    in->kind->wrap(&x, in);
    rally__launch_words_push(&x, in->agent, q);
    for (size_t i = 0; in->env && in->env[i] != NULL; i++) {
        rally__launch_words_push(&x, "--env", 0);
        rally__launch_words_push(&x, in->env[i], q);
    }
    rally__launch_words_push(&x, "--", 0);
    for (char *const *a = in->prog; *a; a++)
        rally__launch_words_push(&x, *a, q);
    if (x.oom) {
        rally__launch_argv_free(x.v);
        return NULL;
    }
    return x.v;
}

char *rally__launch_argv_line(char *const *argv)
{
    char *line = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&line, &n);
    if (f == NULL)
        return NULL;
    int bad = 0;
    for (char *const *a = argv; *a; a++) {
        char *w = rally__launch_quote(*a);
        if (w == NULL) {
            bad = 1;
            break;
        }
        fprintf(f, "%s%s", a == argv ? "" : " ", w);
        free(w);
    }
    if (fclose(f) != 0 || bad) {
        free(line);
        return NULL;
    }
    return line;
}

/* --- the agent's lines and the outcome ---------------------------------- */

void rally__launch_seen_reset(struct rally__launch_seen *s)
{
    memset(s, 0, sizeof *s);
}

/* Keeps line in the held text, dropping the oldest lines when full. */
static void hold(struct rally__launch_seen *s, const char *line, size_t n)
{
    if (n + 1 > sizeof s->held - 1)
        n = sizeof s->held - 2;
    while (s->nheld + n + 1 > sizeof s->held - 1) {
        char *nl = memchr(s->held, '\n', s->nheld);
        size_t k = nl ? (size_t)(nl - s->held) + 1 : s->nheld;
        memmove(s->held, s->held + k, s->nheld - k);
        s->nheld -= k;
    }
    memcpy(s->held + s->nheld, line, n);
    s->nheld += n;
    s->held[s->nheld++] = '\n';
    s->held[s->nheld] = '\0';
}

int rally__launch_seen_line(struct rally__launch_seen *s, const char *line, size_t n, int *flush)
{
    *flush = 0;
    size_t m = sizeof MARK - 1;
    if (n < m || memcmp(line, MARK, m) != 0) {
        if (s->started)
            return 0;
        hold(s, line, n);
        return 1;
    }
    char buf[256];
    size_t k = n - m < sizeof buf - 1 ? n - m : sizeof buf - 1;
    memcpy(buf, line + m, k);
    buf[k] = '\0';
    int v, at = 0;
    if (strcmp(buf, "started") == 0) {
        s->started = 1;
        *flush = s->nheld > 0;
    } else if (sscanf(buf, "exit %d", &v) == 1) {
        s->verdict = 'e', s->code = v;
    } else if (sscanf(buf, "signal %d", &v) == 1) {
        s->verdict = 's', s->code = v;
    } else if (sscanf(buf, "exec %d %n", &v, &at) == 1) {
        s->verdict = 'x', s->code = v;
        snprintf(s->text, sizeof s->text, "%s", at > 0 ? buf + at : "");
    } else {
        return s->started ? 0 : (hold(s, line, n), 1); /* not ours after all */
    }
    return 1;
}

/* A line of dashes only: the frame of OpenMPI's help messages. */
static int rule(const char *l, size_t n)
{
    if (n < 8)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (l[i] != '-')
            return 0;
    return 1;
}

/* What the held lines say (without a newline) into out: the last line, or,
 * when that closes a box of dashes (OpenMPI's help messages), the box's
 * first line, its headline ("mpirun has detected an attempt to run as
 * root."). */
static void last_held(const struct rally__launch_seen *s, char *out, size_t cap)
{
    const char *line[64];
    size_t len[64], n = 0;
    for (const char *p = s->held, *nl; *p && (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
        if (nl == p)
            continue;
        if (n == 64) { /* keep the newest lines */
            memmove(line, line + 1, sizeof line - sizeof *line);
            memmove(len, len + 1, sizeof len - sizeof *len);
            n--;
        }
        line[n] = p;
        len[n++] = (size_t)(nl - p);
    }
    if (n == 0) {
        snprintf(out, cap, "no message");
        return;
    }
    size_t k = n - 1;
    if (rule(line[k], len[k])) {
        size_t open = k;
        while (open > 0 && !rule(line[open - 1], len[open - 1]))
            open--;
        if (open < k) /* the line after the opening rule, or the first kept */
            k = open;
    }
    snprintf(out, cap, "%.*s", (int)len[k], line[k]);
}

int rally__launch_outcome(const struct rally__launch_seen *s, int st,
                          const struct rally__launch_kind *kind, const char *host, int rank,
                          const char *agent, const char *prog, char *why, size_t cap, int *out_st)
{
    why[0] = '\0';
    if (s->verdict == 'e' && s->code >= 0 && s->code <= 255) {
        *out_st = s->code << 8; /* a wait status: exited with code */
        return RALLY__LAUNCH_AS_STATUS;
    }
    if (s->verdict == 's' && s->code > 0 && s->code < 128) {
        *out_st = s->code; /* a wait status: killed by that signal */
        return RALLY__LAUNCH_AS_STATUS;
    }
    if (s->verdict == 'x') {
        if (s->code == ENOENT)
            snprintf(why, cap, "host %s (rank %d): %s: not found", host, rank, prog);
        else
            snprintf(why, cap, "host %s (rank %d): %s: cannot be run: %s", host, rank, prog,
                     s->text);
        *out_st = 127;
        return RALLY__LAUNCH_AS_FAILED;
    }
    if (WIFSIGNALED(st)) { /* the wrapper itself: we stopped it, or someone did */
        *out_st = st;
        return RALLY__LAUNCH_AS_STATUS;
    }
    if (s->started)
        return RALLY__LAUNCH_AS_LOST;
    char line[512];
    last_held(s, line, sizeof line);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    int missing = strstr(s->held, agent) != NULL &&
                  (strstr(s->held, "No such file") != NULL || strstr(s->held, "not found") != NULL);
    if (kind->unreachable != 0 && code == kind->unreachable) {
        snprintf(why, cap, "host %s (rank %d): cannot be reached: %s", host, rank, line);
        *out_st = 1;
        return RALLY__LAUNCH_AS_UNREACHABLE;
    }
    if (code == 127 || missing) {
        snprintf(why, cap, "host %s (rank %d): %s: not found", host, rank, agent);
        *out_st = 127;
    } else {
        snprintf(why, cap, "host %s (rank %d): cannot start %s: %s (%s exited with status %d)%s",
                 host, rank, agent, line, kind->wrapper ? kind->wrapper : kind->name, code,
                 kind->hint ? kind->hint(s->held) : "");
        *out_st = 1;
    }
    return RALLY__LAUNCH_AS_FAILED;
}
