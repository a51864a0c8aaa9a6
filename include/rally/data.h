/*
 * data.h — reading a worker's shard of a LIBSVM or CSV file, and generating
 * synthetic data sets from a seed.
 *
 * A worker of an N-worker job calls
 *
 *     rally_dataset_t *ds;
 *     char err[512];
 *     if (rally_data_read(path, opts, rally_rank(r), rally_world_size(r), &ds,
 *                         err, sizeof err) != RALLY_OK) ...print err...
 *
 * and gets the rows of its shard only.  The shard depends on nothing but the
 * file's bytes, the world size and the rank, so a worker restarted with the
 * same rank reads exactly the rows it had (docs/data.md explains why that
 * matters for recovery, and the partitioning rules byte by byte).  The data
 * layer knows nothing of the network: rank and world are plain integers.
 *
 * Conventions, for every function below:
 *   - it returns RALLY_OK (0) or a status code from rally.h; when the caller
 *     passes err/errcap, err then holds a NUL-terminated sentence (truncated
 *     to errcap) — for malformed input "path:line:column: what is wrong";
 *   - out-parameters are written only on success;
 *   - nothing aborts or exits; every limit is checked;
 *   - a dataset is immutable after rally_data_read, so several threads may
 *     read it; an options object is used by one thread at a time.
 *
 * Status codes: RALLY_EINVAL (a bad option or argument), RALLY_ESYS (the
 * file cannot be opened or read), RALLY_EPROTO (malformed content: bad
 * number, wrong column count, index out of range or not increasing, a line
 * over the length limit, an empty file), RALLY_ENOMEM.
 */
#ifndef RALLY_DATA_H
#define RALLY_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "rally/rally.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rally_dataset rally_dataset_t;
typedef struct rally_data_opts rally_data_opts_t;

/* --- options --------------------------------------------------------------- */

/* A new options object holding the defaults (docs/data.md lists them). */
RALLY_API int rally_data_opts_new(rally_data_opts_t **out);
RALLY_API void rally_data_opts_free(rally_data_opts_t *o);

/* Sets one option; an unknown key or a bad value is RALLY_EINVAL and leaves
 * the options as they were.  Keys and values:
 *   format            auto (default) | libsvm | csv
 *   partition         range (default) | hash
 *   csv_header        no (default) | yes | auto   (auto: line 1 is a header
 *                     when one of its fields is not a number)
 *   csv_label         none (default) | a 0-based column number
 *   csv_delimiter     one character, or comma | tab | space | semicolon
 *   libsvm_index_base 1 (default, the LIBSVM convention) | 0
 *   num_features      0 (default: inferred) | n — LIBSVM indices must be
 *                     below n (after subtracting the base)
 *   max_line_bytes    default 16777216; 1 .. 1073741824 */
RALLY_API int rally_data_opts_set(rally_data_opts_t *o, const char *key, const char *value,
                                  char *err, size_t errcap);

/* As rally_data_opts_set with "key=value" in one string (handy for argv). */
RALLY_API int rally_data_opts_parse(rally_data_opts_t *o, const char *key_value, char *err,
                                    size_t errcap);

/* --- reading ---------------------------------------------------------------- */

/* Reads rank's shard of the file at path for a job of world workers
 * (0 <= rank < world).  opts may be NULL for the defaults.  Blocks on file
 * I/O.  In range mode (the default) it reads only its byte range plus the
 * rest of one record (and line 1 when the format needs it); in hash mode
 * every rank reads the whole file.  Only the records of this shard are
 * parsed and checked; a malformed record in another shard is that rank's
 * error.  On success *out is a new dataset (free with rally_data_free). */
RALLY_API int rally_data_read(const char *path, const rally_data_opts_t *opts, int rank, int world,
                              rally_dataset_t **out, char *err, size_t errcap);

RALLY_API void rally_data_free(rally_dataset_t *ds);

/* Rows in this shard (may be 0: fewer records than workers). */
RALLY_API uint64_t rally_data_num_rows(const rally_dataset_t *ds);

/* CSV: the number of feature columns (columns minus the label column), the
 * same on every rank.  LIBSVM: num_features when set, else the largest
 * index in this shard + 1 — which can differ between ranks (reduce it with
 * RALLY_MAX before sizing a model). */
RALLY_API uint64_t rally_data_num_features(const rally_dataset_t *ds);

/* Entries stored (present values) in this shard. */
RALLY_API uint64_t rally_data_num_entries(const rally_dataset_t *ds);

/* "libsvm" or "csv": the format that was read (useful after auto). */
RALLY_API const char *rally_data_format(const rally_dataset_t *ds);

/* The labels, one per row, or NULL when the data has none (CSV without a
 * label column).  Owned by the dataset. */
RALLY_API const float *rally_data_labels(const rally_dataset_t *ds);

/* The rows in compressed sparse row form, owned by the dataset: row i's
 * entries are k in [row_ptr[i], row_ptr[i+1]), feature indices[k] (0-based,
 * strictly increasing within a row) with value values[k].  row_ptr has
 * num_rows + 1 elements.  A dense CSV row stores every column; an empty CSV
 * field is a missing value and is not stored. */
RALLY_API void rally_data_csr(const rally_dataset_t *ds, const uint64_t **row_ptr,
                              const uint32_t **indices, const float **values);

/* Writes row `row` into out[0..count): present values, `missing` elsewhere.
 * RALLY_EINVAL if row is out of range or the row has an index >= count. */
RALLY_API int rally_data_row_dense(const rally_dataset_t *ds, uint64_t row, float *out,
                                   size_t count, float missing);

/* The file offset of the first byte of row `row`'s record (UINT64_MAX when
 * row is out of range): which line a row came from, and how tests prove
 * shards disjoint. */
RALLY_API uint64_t rally_data_row_offset(const rally_dataset_t *ds, uint64_t row);

/* CSV with a header: the name of feature column j (label excluded), else
 * NULL. */
RALLY_API const char *rally_data_feature_name(const rally_dataset_t *ds, uint64_t j);

/* Range mode: the shard's records occupy file bytes [*first, *end) (line
 * ends included; *first == *end for an empty shard).  Hash mode: the first
 * and one past the last byte of the records kept. */
RALLY_API void rally_data_shard_range(const rally_dataset_t *ds, uint64_t *first, uint64_t *end);

/* The shard fingerprint as 16 lowercase hex digits (cap >= 17): a 64-bit
 * FNV-1a hash over the partition mode, world, rank, file size, the shard's
 * byte range, its row count and the bytes of its records.  The same file,
 * world and rank always give the same fingerprint; log it to check that a
 * restarted worker read what it read before.  RALLY_EINVAL if cap < 17. */
RALLY_API int rally_data_fingerprint(const rally_dataset_t *ds, char *out, size_t cap);

/* The partitioning scheme the shard was read with: "range" or "hash" (what
 * rally_set_input takes as its scheme). */
RALLY_API const char *rally_data_partition(const rally_dataset_t *ds);

/* The size in bytes of the file the shard was read from. */
RALLY_API uint64_t rally_data_file_size(const rally_dataset_t *ds);

/* Range mode's rule, for a record-keyed local model (rally_set_local_records)
 * whose ids are the records' byte offsets (rally_data_row_offset): the rank
 * of a `world`-worker job whose shard holds the record starting at byte
 * `offset` of a file of `file_size` bytes, the r with
 * floor(S * r / world) <= offset < floor(S * (r + 1) / world).  An offset
 * past the end maps to the last rank; world < 1 gives -1. */
RALLY_API int rally_data_range_owner(uint64_t file_size, uint64_t offset, int world);

/* A one-line summary for logs, e.g.
 * "blobs.csv shard 3/8 (range): bytes [1234, 5678), 120 rows, 32 features,
 * fingerprint 0123456789abcdef".  Truncated to cap. */
RALLY_API void rally_data_describe(const rally_dataset_t *ds, char *out, size_t cap);

/* --- generating --------------------------------------------------------------- */

/* Writes a synthetic data set of Gaussian blobs to path (through a temporary
 * file renamed into place): `centers` centres with coordinates uniform in
 * [-10, 10), then `rows` rows, each drawn from a centre chosen uniformly with
 * per-feature standard deviation `spread`; the label is the centre's number.
 * format is "libsvm" or "csv"; csv_header writes "label,f0,f1,..." first.
 * centers_path, when not NULL, receives the true centres (one CSV line
 * each).  The output depends only on the arguments (docs/data.md gives the
 * generator exactly).  Blocks on file I/O.  RALLY_EINVAL for bad arguments
 * (rows, features, centers >= 1; features <= 1000000; spread finite,
 * >= 0), RALLY_ESYS when the file cannot be written. */
RALLY_API int rally_data_generate(const char *path, uint64_t rows, uint32_t features,
                                  uint32_t centers, double spread, uint64_t seed,
                                  const char *format, int csv_header, const char *centers_path,
                                  char *err, size_t errcap);

/* Writes `docs` documents for topic models to path as LIBSVM lines
 * (`label word:count ...`, words 1-based and increasing, the label the
 * document's heaviest topic), through a temporary file renamed into place:
 * `topics` random topics over `vocab` words; each document draws its length
 * (doc_words / 2 + 1 to 3 * doc_words / 2 words), its own mix of the topics,
 * then each word from a topic of that mix.  topics_path, when not NULL,
 * receives the true topics (one CSV line of vocab word probabilities each).
 * The output depends only on the arguments (src/data/gen.c gives the
 * generator exactly).  RALLY_EINVAL for bad arguments (docs >= 1,
 * 1 <= vocab <= 1000000, 1 <= topics <= 65535, topics * vocab <= 1e8,
 * 1 <= doc_words <= 1000000), RALLY_ESYS when a file cannot be written. */
RALLY_API int rally_data_generate_corpus(const char *path, uint64_t docs, uint32_t vocab,
                                         uint32_t topics, uint32_t doc_words, uint64_t seed,
                                         const char *topics_path, char *err, size_t errcap);

#ifdef __cplusplus
}
#endif
#endif
