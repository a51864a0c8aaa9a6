/*
 * data.h — reading a worker's shard of a LIBSVM or CSV file, generating
 * synthetic data sets from a seed, and the data cursor of a minibatch job.
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

/* --- the data cursor: every sample once per epoch, at any world size ---------
 *
 * A cursor is the data position of a minibatch job, the same on every rank:
 * (seed, count samples, global batch, epoch, position).  Epoch e visits the
 * sample ids 0 .. count-1 in an order that depends on (seed, e) alone (a
 * keyed Feistel permutation, docs/data.md "The data cursor"), never on the
 * world size.  Each step takes the next `batch` ids of that order (the last
 * step of an epoch takes what is left, so it may be shorter) and splits them
 * among the ranks by the range rule: of b ids, rank r of w takes
 * [floor(b r / w), floor(b (r + 1) / w)).  So the step's ids do not depend on
 * N, and after a failure or a change of the world size the ranks simply go
 * on from the position they load: nothing moves.
 *
 * The user's part: one rally_cursor_next per step on every rank, and the
 * cursor's bytes (rally_cursor_save) in the same checkpoint as the model
 * they trained; after rally_load_checkpoint, rally_cursor_load them.  A
 * cursor is not thread-safe; it allocates nothing after rally_cursor_new. */
typedef struct rally_cursor rally_cursor_t;

/* The bytes of a saved cursor (docs/data.md gives them). */
#define RALLY_CURSOR_NBYTES 64

/* A cursor at epoch 0, position 0 over `count` samples with a global batch
 * of `batch` ids.  RALLY_EINVAL unless 1 <= count < 2^62 and batch >= 1,
 * RALLY_ENOMEM.  Free it with rally_cursor_free (NULL is accepted). */
RALLY_API int rally_cursor_new(uint64_t count, uint64_t batch, uint64_t seed,
                               rally_cursor_t **out);
RALLY_API void rally_cursor_free(rally_cursor_t *c);

/* The step: writes rank's share of the next batch into ids[0 .. *n) and
 * moves the cursor past the whole batch (every rank's share); when that
 * ends the epoch, the cursor goes to position 0 of the next.  Needs cap >=
 * batch / world + 1 (enough for any share).  RALLY_EINVAL (and the cursor
 * unmoved) for a rank outside [0, world) or a cap too small.  Never
 * blocks. */
RALLY_API int rally_cursor_next(rally_cursor_t *c, int rank, int world, uint64_t *ids, size_t cap,
                                size_t *n);

/* The epoch the next step belongs to, and its position in the epoch's
 * order (how many ids of the epoch the steps so far took). */
RALLY_API uint64_t rally_cursor_epoch(const rally_cursor_t *c);
RALLY_API uint64_t rally_cursor_position(const rally_cursor_t *c);

/* The k-th id of epoch's order (k < count), else UINT64_MAX. */
RALLY_API uint64_t rally_cursor_id(const rally_cursor_t *c, uint64_t epoch, uint64_t k);

/* Writes the cursor's RALLY_CURSOR_NBYTES bytes to out (little-endian,
 * magic, version and checksum).  RALLY_EINVAL if cap is smaller. */
RALLY_API int rally_cursor_save(const rally_cursor_t *c, void *out, size_t cap);

/* Sets c's epoch and position from saved bytes.  RALLY_EPROTO when they are
 * no cursor (size, magic, version, checksum) or a cursor of another count,
 * batch or seed (another data set or job), with the reason in err. */
RALLY_API int rally_cursor_load(rally_cursor_t *c, const void *bytes, size_t nbytes, char *err,
                                size_t errcap);

/* An order-free digest of a multiset of ids: the sum modulo 2^64 of a
 * 64-bit hash of each (docs/data.md gives it).  Digests of parts add up
 * (mod 2^64) to the digest of the whole, so ranks combine theirs with a
 * RALLY_SUM allreduce of RALLY_UINT64. */
RALLY_API uint64_t rally_ids_digest(const uint64_t *ids, size_t count);

#ifdef __cplusplus
}
#endif
#endif
