/*
 * curl.c — libcurl loaded on first use (curl.h says why).
 */
#include "util/curl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct rally__curl calls;
static char load_err[256]; /* "" once libcurl is loaded and started */

#define LOAD(h, f) ((calls.f = (__typeof__(calls.f))dlsym(h, "curl_" #f)) != NULL)

static void load(void)
{
    void *h = dlopen(RALLY__CURL_SO, RTLD_NOW | RTLD_LOCAL);
    CURLcode (*global_init)(long) = NULL;
    if (h == NULL) {
        snprintf(load_err, sizeof load_err, "%s", dlerror());
        return;
    }
    if (!(LOAD(h, easy_init) && LOAD(h, easy_cleanup) && LOAD(h, easy_reset) &&
          LOAD(h, easy_setopt) && LOAD(h, easy_perform) && LOAD(h, easy_getinfo) &&
          LOAD(h, easy_strerror) && LOAD(h, slist_append) && LOAD(h, slist_free_all) &&
          (global_init = (__typeof__(global_init))dlsym(h, "curl_global_init")) != NULL)) {
        snprintf(load_err, sizeof load_err, "%s", dlerror());
        return;
    }
    CURLcode rc = global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK)
        snprintf(load_err, sizeof load_err, "libcurl does not start: %s",
                 calls.easy_strerror(rc));
}

const struct rally__curl *rally__curl(char *why, size_t cap)
{
    pthread_once(&once, load);
    if (load_err[0]) {
        snprintf(why, cap, "%s (%s)", load_err, RALLY__CURL_SO);
        return NULL;
    }
    return &calls;
}
