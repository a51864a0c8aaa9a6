/*
 * fuzz_manifest.c — libFuzzer target for the snapshot manifest's parser
 * (src/snapshot/manifest.c; tests/fuzz/fuzz.cmake).
 *
 * The input is a MANIFEST.json.  Besides "never crash, never leak", it
 * checks that an error always comes with a message, and that whatever the
 * parser accepts the encoder writes back as a manifest that parses to the
 * same bytes again (encode is a fixed point after one round).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/snapshot.h"

static void die(const char *what, const char *err)
{
    fprintf(stderr, "fuzz_manifest: %s%s%s\n", what, err ? ": " : "", err ? err : "");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rally__err e = {0};
    struct rally__snap_manifest *m = NULL, *m2 = NULL;
    int rc = rally__snap_manifest_parse((const char *)data, size, &e, &m);
    if (rc != RALLY_OK) {
        if (e.code != rc || e.msg[0] == '\0')
            die("an error without a message", NULL);
        if (m != NULL)
            die("a failed parse wrote its out-parameter", NULL);
        return 0;
    }
    char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    if (rally__snap_manifest_encode(m, &e, &a, &na) != RALLY_OK)
        die("an accepted manifest does not encode", e.msg);
    if (rally__snap_manifest_parse(a, na, &e, &m2) != RALLY_OK)
        die("an encoded manifest does not parse", e.msg);
    if (rally__snap_manifest_encode(m2, &e, &b, &nb) != RALLY_OK)
        die("a re-parsed manifest does not encode", e.msg);
    if (na != nb || memcmp(a, b, na) != 0)
        die("encode(parse(encode(m))) differs from encode(m)", NULL);
    if (m2->version != m->version || m2->world != m->world || m2->nfiles != m->nfiles ||
        strcmp(m2->run_id, m->run_id) != 0)
        die("a round trip changed a field", NULL);
    free(a);
    free(b);
    rally__snap_manifest_free(m);
    rally__snap_manifest_free(m2);
    return 0;
}
