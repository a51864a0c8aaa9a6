/*
 * types.c — rally's element types, operators, custom reducers and errors in
 * MPI's terms.
 *
 * Built-in operators map to MPI's own (MPI_SUM, MPI_MAX, MPI_MIN, MPI_BOR),
 * except where MPI's would give other results than rally documents: those
 * run rally's own kernels as user-defined operators.
 * A custom reducer becomes a user-defined operator over a contiguous type of
 * its element size, commutative as registered.  MPI's callback has no
 * argument of its own, so the reducer in use is this thread's "current" one,
 * set just before the reduction and cleared after.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util/reduce.h"
#include "mpi/mpi_engine.h"

int rally__mpi_fail(struct rally__engine *en, int rc, const char *call)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0, cls = MPI_ERR_OTHER;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        len = 0;
    text[len] = '\0';
    MPI_Error_class(rc, &cls);
    int code = RALLY_EPEER;
    if (cls == MPI_ERR_NO_MEM)
        code = RALLY_ENOMEM;
    else if (cls == MPI_ERR_TRUNCATE)
        code = RALLY_EMISMATCH;
    else if (cls == MPI_ERR_ARG || cls == MPI_ERR_COUNT || cls == MPI_ERR_TYPE ||
             cls == MPI_ERR_BUFFER || cls == MPI_ERR_ROOT || cls == MPI_ERR_OP)
        code = RALLY_EINVAL;
    return rally__fail(en->err, code, "%s failed on rank %d: %s%s", call, en->rank,
                       len ? text : "unknown MPI error",
                       code == RALLY_EINVAL ? "" : " (the MPI backend does not recover from it)");
}

MPI_Datatype rally__mpi_dtype(int dtype)
{
    switch (dtype) {
    case RALLY_INT8:
        return MPI_INT8_T;
    case RALLY_UINT8:
        return MPI_UINT8_T;
    case RALLY_INT16:
        return MPI_INT16_T;
    case RALLY_UINT16:
        return MPI_UINT16_T;
    case RALLY_INT32:
        return MPI_INT32_T;
    case RALLY_UINT32:
        return MPI_UINT32_T;
    case RALLY_INT64:
        return MPI_INT64_T;
    case RALLY_UINT64:
        return MPI_UINT64_T;
    case RALLY_FLOAT:
        return MPI_FLOAT;
    default:
        return MPI_DOUBLE;
    }
}

/* Where MPI's built-in operator differs from rally's documented one, the
 * operator runs rally's kernel: float MAX/MIN (MPI's keep or drop a NaN
 * depending on the side it is on)
 * and the SUM of 8- and 16-bit integers (OpenMPI 4.1's vectorised kernels
 * saturate where rally wraps, signed and unsigned;
 * coll_matrix caught it). */
static int own_kernel(int dtype, int op)
{
    if (dtype == RALLY_FLOAT || dtype == RALLY_DOUBLE)
        return op == RALLY_MAX || op == RALLY_MIN;
    return op == RALLY_SUM && rally__dtype_size(dtype) <= 2;
}

MPI_Op rally__mpi_op(const struct rally__engine *en, int dtype, int op)
{
    if (own_kernel(dtype, op))
        return en->kernel[op];
    switch (op) {
    case RALLY_MAX:
        return MPI_MAX;
    case RALLY_MIN:
        return MPI_MIN;
    case RALLY_SUM:
        return MPI_SUM;
    default:
        return MPI_BOR;
    }
}

/* rally's kernel of op on the dtype of an MPI datatype; MPI's user
 * functions compute inout[i] = in[i] (+) inout[i], and these operators are
 * commutative, so the order is free. */
static void kernel(void *in, void *inout, int *len, MPI_Datatype *type, int op)
{
    int dtype = RALLY_DOUBLE;
    while (dtype > 0 && rally__mpi_dtype(dtype) != *type)
        dtype--;
    struct rally__reducer rd;
    rally__reducer_builtin(&rd, dtype, op);
    rally__reduce(&rd, inout, in, (size_t)*len);
}

static void kernel_max(void *in, void *inout, int *len, MPI_Datatype *type)
{
    kernel(in, inout, len, type, RALLY_MAX);
}

static void kernel_min(void *in, void *inout, int *len, MPI_Datatype *type)
{
    kernel(in, inout, len, type, RALLY_MIN);
}

static void kernel_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    kernel(in, inout, len, type, RALLY_SUM);
}

/* The reducer of the reduction running on this thread, and room for the
 * left operand of a non-commutative one. */
static _Thread_local struct {
    const struct rally__reducer *rd;
    unsigned char *scratch;
    size_t cap;
} current;

static void custom_comm(void *in, void *inout, int *len, MPI_Datatype *type)
{
    rally__reduce(current.rd, inout, in, (size_t)*len);
}

/* inout = in (+) inout, where rally's function writes its left operand: in
 * goes through the scratch buffer a block at a time. */
static void custom_ordered(void *in, void *inout, int *len, MPI_Datatype *type)
{
    const struct rally__reducer *rd = current.rd;
    size_t es = rd->elem_nbytes, n = (size_t)*len, per = current.cap / es;
    unsigned char *a = in, *b = inout;
    for (size_t i = 0; i < n; i += per) {
        size_t m = n - i < per ? n - i : per;
        memcpy(current.scratch, a + i * es, m * es);
        rd->fn(current.scratch, b + i * es, m, rd->arg);
        memcpy(b + i * es, current.scratch, m * es);
    }
}

int rally__mpi_ops_init(struct rally__engine *en)
{
    int rc;
    if ((rc = MPI_Op_create(kernel_max, 1, &en->kernel[RALLY_MAX])) != MPI_SUCCESS ||
        (rc = MPI_Op_create(kernel_min, 1, &en->kernel[RALLY_MIN])) != MPI_SUCCESS ||
        (rc = MPI_Op_create(kernel_sum, 1, &en->kernel[RALLY_SUM])) != MPI_SUCCESS ||
        (rc = MPI_Op_create(custom_comm, 1, &en->custom_comm)) != MPI_SUCCESS ||
        (rc = MPI_Op_create(custom_ordered, 0, &en->custom)) != MPI_SUCCESS)
        return rally__mpi_fail(en, rc, "MPI_Op_create");
    return RALLY_OK;
}

void rally__mpi_ops_free(struct rally__engine *en)
{
    MPI_Op *ops[] = {&en->kernel[RALLY_MAX], &en->kernel[RALLY_MIN], &en->kernel[RALLY_SUM],
                     &en->custom_comm, &en->custom};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (*ops[i] != MPI_OP_NULL)
            MPI_Op_free(ops[i]);
    for (int i = 0; i < RALLY__MPI_NREDUCERS; i++)
        if (en->elems[i].elem_nbytes != 0) {
            MPI_Type_free(&en->elems[i].type);
            en->elems[i].elem_nbytes = 0;
        }
}

/* A block of at least 64 KiB (and one element) for the left operands. */
#define SCRATCH_MIN (64u << 10)

int rally__mpi_custom(struct rally__engine *en, int reducer_id, const struct rally__reducer *rd,
                      MPI_Datatype *type, MPI_Op *op)
{
    struct rally__mpi_elem *el = &en->elems[reducer_id];
    int rc;
    if (el->elem_nbytes != rd->elem_nbytes) { /* first use, or registered anew */
        if (el->elem_nbytes != 0)
            MPI_Type_free(&el->type);
        el->elem_nbytes = 0;
        if (rd->elem_nbytes > INT_MAX)
            return rally__fail(en->err, RALLY_EINVAL,
                               "allreduce_custom: MPI takes elements of at most %d bytes, "
                               "reducer %d has %zu",
                               INT_MAX, reducer_id, rd->elem_nbytes);
        if ((rc = MPI_Type_contiguous((int)rd->elem_nbytes, MPI_BYTE, &el->type)) != MPI_SUCCESS)
            return rally__mpi_fail(en, rc, "MPI_Type_contiguous");
        if ((rc = MPI_Type_commit(&el->type)) != MPI_SUCCESS) {
            MPI_Type_free(&el->type);
            return rally__mpi_fail(en, rc, "MPI_Type_commit");
        }
        el->elem_nbytes = rd->elem_nbytes;
    }
    if (!rd->commutative) {
        size_t want = rd->elem_nbytes > SCRATCH_MIN ? rd->elem_nbytes : SCRATCH_MIN;
        if (en->scratch_cap < want) {
            unsigned char *s = realloc(en->scratch, want);
            if (s == NULL)
                return rally__fail(en->err, RALLY_ENOMEM,
                                   "allreduce_custom: out of memory for a %zu-byte element", want);
            en->scratch = s;
            en->scratch_cap = want;
        }
    }
    current.rd = rd;
    current.scratch = en->scratch;
    current.cap = en->scratch_cap;
    *type = el->type;
    *op = rd->commutative ? en->custom_comm : en->custom;
    return RALLY_OK;
}

void rally__mpi_custom_done(void)
{
    current.rd = NULL;
    current.scratch = NULL;
    current.cap = 0;
}
