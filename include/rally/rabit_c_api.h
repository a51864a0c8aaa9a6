/*
 * rabit_c_api.h — rabit's C API (its c_api.h) over rally, so that a program
 * written for rabit builds against rally unchanged and runs under rally-run.
 *
 * The names, argument lists and enumeration values are rabit's; the
 * functions are a thin process-global layer over one rally handle
 * (rally.h), made by RabitInit and freed by RabitFinalize.  As in rabit:
 *
 *   - every call but RabitInit and RabitFinalize returns only when it
 *     succeeded; an error that rally cannot recover from prints
 *     "rabit: <call>: <rally's sentence>" on standard error and exits the
 *     process with status 1 (the launcher then sees a failed worker);
 *   - a worker that dies is restarted and recovered: it calls
 *     RabitLoadCheckPoint again and gets the newest checkpoint, and its
 *     collectives up to the point where the job is return the results the
 *     job computed the first time (docs/recovery.md);
 *   - one thread uses the API at a time.
 *
 * RabitInit reads rabit's argument spellings where they mean the same as a
 * rally setting, leaves argv as it is (rally's own rally_key=value arguments
 * work too) and ignores other arguments:
 *
 *   mock=rank,version,seq,ndeath   rally_mock=... (link -lrally_mock)
 *   rabit_local_replica=K          rally_local_replica=K
 *   rabit_task_id=ID               rally_task_id=ID
 *
 * Other rabit_* settings (rabit_tracker_uri, rabit_tracker_port,
 * rabit_world_size, rabit_num_trial, rabit_reduce_buffer,
 * rabit_reduce_ring_mincount, rabit_global_replica, rabit_timeout,
 * rabit_timeout_sec, rabit_hadoop_mode, rabit_debug, rabit_bootstrap_cache,
 * rabit_enable_tcp_no_delay) have no rally equivalent with the same
 * meaning: RabitInit names each on standard error and ignores it (README.md,
 * "rabit's C API").
 *
 * Link with -lrally (or -lrally_mock for mock= kill points).
 */
#ifndef RALLY_RABIT_C_API_H
#define RALLY_RABIT_C_API_H

#include <stddef.h>

#ifdef __cplusplus
#define RABIT_EXTERN_C extern "C"
#else
#include <stdbool.h>
#define RABIT_EXTERN_C
#endif

#if defined(__GNUC__)
#define RABIT_DLL RABIT_EXTERN_C __attribute__((visibility("default")))
#else
#define RABIT_DLL RABIT_EXTERN_C
#endif

/* rabit's unsigned long type. */
typedef unsigned long rbt_ulong; /* NOLINT */

/* RabitAllreduce's enum_dtype: rabit::engine::mpi::DataType.  Each is the C
 * type of that name on this platform (char's signedness included). */
enum {
    RABIT_CHAR = 0,
    RABIT_UCHAR = 1,
    RABIT_INT = 2,
    RABIT_UINT = 3,
    RABIT_LONG = 4,
    RABIT_ULONG = 5,
    RABIT_FLOAT = 6,
    RABIT_DOUBLE = 7,
    RABIT_LONGLONG = 8,
    RABIT_ULONGLONG = 9
};

/* RabitAllreduce's enum_op: rabit::engine::mpi::OpType.  BITOR takes
 * integer types only. */
enum { RABIT_MAX = 0, RABIT_MIN = 1, RABIT_SUM = 2, RABIT_BITOR = 3 };

/* Joins the job (rally_init).  Returns true on success; on failure prints
 * why on standard error and returns false (every later call but
 * RabitFinalize then exits the process). */
RABIT_DLL bool RabitInit(int argc, char *argv[]);

/* Leaves the job and frees what RabitLoadCheckPoint returned.  true on
 * success. */
RABIT_DLL bool RabitFinalize(void);

/* This worker's rank, and the number of workers (0 and 1 before RabitInit). */
RABIT_DLL int RabitGetRank(void);
RABIT_DLL int RabitGetWorldSize(void);

/* 1 when the worker runs under a launcher (rally-run, rally-tracker), 0 when
 * it runs alone. */
RABIT_DLL int RabitIsDistributed(void);

/* Prints msg on the launcher's standard output, behind this worker's rank;
 * one trailing newline in msg is dropped (rally ends the line). */
RABIT_DLL void RabitTrackerPrint(const char *msg);

/* Copies the host name into out_name (truncated to max_len - 1 bytes and
 * NUL-terminated) and its length into *out_len. */
RABIT_DLL void RabitGetProcessorName(char *out_name, rbt_ulong *out_len, rbt_ulong max_len);

/* In place: root's size bytes at sendrecv_data reach every worker. */
RABIT_DLL void RabitBroadcast(void *sendrecv_data, rbt_ulong size, int root);

/* In place: count elements of enum_dtype, reduced with enum_op over every
 * worker.  prepare_fun(prepare_arg), when not NULL, fills sendrecvbuf first;
 * it is not called when the result is recovered from other workers. */
RABIT_DLL void RabitAllreduce(void *sendrecvbuf, size_t count, int enum_dtype, int enum_op,
                              void (*prepare_fun)(void *arg), void *prepare_arg);

/* Loads the newest checkpoint and returns its version: 0 on a fresh start
 * (the outputs are not touched), >= 1 after a restart.  The models stay
 * owned by this layer, valid until the next RabitLoadCheckPoint or
 * RabitFinalize; out_local_model and out_local_len may be NULL. */
RABIT_DLL int RabitLoadCheckPoint(char **out_global_model, rbt_ulong *out_global_len,
                                  char **out_local_model, rbt_ulong *out_local_len);

/* Checkpoints the models (copied): the version goes up by one.
 * local_model may be NULL (local_len 0) when the job has no local model. */
RABIT_DLL void RabitCheckPoint(const char *global_model, rbt_ulong global_len,
                               const char *local_model, rbt_ulong local_len);

/* A checkpoint that copies nothing (rabit's LazyCheckPoint, which rabit's C
 * API lacks): global_len bytes at global_model are read only when a
 * recovering worker needs them, so they must stay unchanged until the last
 * collective before the next checkpoint has returned.  No local model. */
RABIT_DLL void RabitLazyCheckPoint(const char *global_model, rbt_ulong global_len);

/* How many checkpoints the job has taken. */
RABIT_DLL int RabitVersionNumber(void);

/* A dummy that forces the API into a link (rabit's idiom); returns 0. */
RABIT_DLL int RabitLinkTag(void);

/* Not rabit's: the rally handle this layer runs on (rally.h), NULL before
 * RabitInit and after RabitFinalize.  The C++ layer (rabit/rabit.h) uses it
 * for what rabit's C API lacks (custom reducers, lazy checkpoints of a
 * serialised model); it stays owned by this layer: never finalize it. */
struct rally;
RABIT_DLL struct rally *RabitRallyHandle(void);

#endif
