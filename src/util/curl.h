/*
 * curl.h — libcurl, loaded when first asked for (dlopen), not linked.
 *
 * Linked, libcurl and the thirty libraries under it (TLS, LDAP, Kerberos,
 * ...) were mapped and relocated by every process at start: 3 ms of the
 * loader in each worker, and a fork of the launcher copying their mappings
 * once per worker, which a launch of 1024 workers on two cores paid
 * seconds for (issue 48, start-up at scale).  Only the s3:// store and
 * rally-run's status client speak HTTP; they ask rally__curl() first.
 */
#ifndef RALLY_UTIL_CURL_H
#define RALLY_UTIL_CURL_H

#include <curl/curl.h>
#include <stddef.h>

#define RALLY__CURL_SO "libcurl.so.4"

/* The calls of libcurl that rally makes, named as in libcurl without
 * "curl_": curl_easy_setopt is easy_setopt. */
struct rally__curl {
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *);
    void (*easy_reset)(CURL *);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
};

/* Loads libcurl and starts it (curl_global_init) once per process; safe
 * from any thread.  Returns its calls, or NULL with the reason (the
 * loader's or libcurl's) in why. */
const struct rally__curl *rally__curl(char *why, size_t cap);

#endif
