/*
 * file.h — the examples' model files: a durable write (temporary name,
 * write, fsync, rename, fsync of the directory) and reading a whole file.
 */
#ifndef RALLY_EXAMPLES_FILE_H
#define RALLY_EXAMPLES_FILE_H

#include <stddef.h>

/* Writes n bytes to path so that a crash leaves the old file or the new one,
 * never a torn one.  0, or -1 with a sentence in err. */
int ex_write_file(const char *path, const void *buf, size_t n, char *err, size_t cap);

/* Reads all of path (at most max_nbytes) into *out (malloc'd, the caller
 * frees).  0, or -1 with a sentence in err. */
int ex_slurp(const char *path, size_t max_nbytes, unsigned char **out, size_t *nbytes, char *err,
             size_t cap);

#endif
