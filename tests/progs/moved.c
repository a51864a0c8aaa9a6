/*
 * moved.c — the bytes a large allreduce moves on one host, counted, not
 * timed (rally__moved_nbytes, util/copy.h).
 *
 *   rally-run -n N moved BYTES [cma|refused] rally_hd_threshold_bytes=0 [rally_key=value ...]
 *
 * A ring allreduce of BYTES of doubles (BYTES a multiple of 8 N) in place,
 * the plain collective then the public call, each after a 3-byte sum that
 * leaves the links' streams off the elements' alignment (so the shared-
 * memory ring's end cuts elements).  Per rank, the plain ring must move
 * 4 (N - 1) / N bytes per byte of the call: each byte it sends written
 * once into the ring (2 (N - 1) / N of the buffer), each byte it receives
 * read where it lies for the reduce-scatter's sums ((N - 1) / N written)
 * and copied once out of the ring for the allgather ((N - 1) / N); a copy
 * out of the ring before the sums would add (N - 1) / N.  The slack is the
 * elements the ring's end cut (copied, 8 bytes each) and the 3-byte sums.
 * The public call moves that plus exactly what it keeps: the whole result
 * at N = 2, rally_result_copies pieces from N = 3.  Both results are
 * checked too.
 *
 * cma (N = 2): the call reads the peer's buffers instead (coll/cma.c):
 * 3 (N - 1) / N, the peer's half copied into scratch, summed, and the
 * peer's sums copied in, with nothing cut.  refused: task 1 installs a
 * seccomp filter before rally_init that answers process_vm_readv with
 * ENOSYS, so its probe of rank 0 fails while rank 0's of it succeeds:
 * both ends must still agree on the rings, 4 (N - 1) / N.  Rank 0 prints "moved N BYTES plain public" (per byte of
 * the call); any failure exits 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "api/api.h"
#include "rally/rally.h"
#include "util/copy.h"

/* process_vm_readv fails with ENOSYS in this process from now on, as
 * under a container's seccomp profile; every other call is allowed. */
static int refuse_cma(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 38 /* ENOSYS */),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
                   prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0
               ? -1
               : 0;
}

static int fail(rally_t *r, const char *what, int rc)
{
    fprintf(stderr, "moved: rank %d: %s: %s: %s\n", rally_rank(r), what, rally_strstatus(rc),
            rally_errmsg(r));
    rally_finalize(r);
    return 1;
}

/* One call (plain or public) of buf: the bytes it moved, or UINT64_MAX. */
static uint64_t one(rally_t *r, struct rally__engine *plain, double *buf, size_t count)
{
    int N = rally_world_size(r), me = rally_rank(r);
    unsigned char odd[3] = {1, 2, 3};
    int rc = rally_allreduce(r, odd, 3, RALLY_UINT8, RALLY_SUM, NULL, NULL);
    if (rc != RALLY_OK)
        return fail(r, "3-byte allreduce", rc), UINT64_MAX;
    for (size_t i = 0; i < count; i++)
        buf[i] = (double)(i % 1000) + me;
    uint64_t m0 = __atomic_load_n(&rally__moved_nbytes, __ATOMIC_RELAXED);
    rc = plain ? rally__engine.plain_allreduce(plain, buf, buf, count, RALLY_DOUBLE, RALLY_SUM)
               : rally_allreduce(r, buf, count, RALLY_DOUBLE, RALLY_SUM, NULL, NULL);
    uint64_t m1 = __atomic_load_n(&rally__moved_nbytes, __ATOMIC_RELAXED);
    if (rc != RALLY_OK)
        return fail(r, plain ? "plain allreduce" : "rally_allreduce", rc), UINT64_MAX;
    for (size_t i = 0; i < count; i++)
        if (buf[i] != N * (double)(i % 1000) + N * (N - 1) / 2.0) {
            fprintf(stderr, "moved: rank %d: element %zu is %g\n", me, i, buf[i]);
            rally_finalize(r);
            return UINT64_MAX;
        }
    return m1 - m0;
}

int main(int argc, char **argv)
{
    rally_t *r = NULL;
    const char *task = getenv("RALLY_TASK_ID");
    int refused = argc > 2 && strcmp(argv[2], "refused") == 0;
    if (refused && task != NULL && strcmp(task, "1") == 0 && refuse_cma() != 0) {
        perror("moved: seccomp");
        return 1;
    }
    int rc = rally_init(&r, &argc, &argv);
    if (rc != RALLY_OK) {
        fprintf(stderr, "moved: rally_init: %s\n", rally_strstatus(rc));
        return 1;
    }
    int N = rally_world_size(r), me = rally_rank(r);
    size_t nbytes = argc > 1 ? strtoull(argv[1], NULL, 10) : 0;
    int cma = argc > 2 && strcmp(argv[2], "cma") == 0;
    struct rally__engine *en = rally__api_engine(r);
    if (nbytes == 0 || nbytes % (8 * (size_t)N) != 0 || en == NULL ||
        rally__engine.plain_allreduce == NULL) {
        fprintf(stderr, "usage: rally-run -n N moved BYTES (a multiple of 8 N)\n");
        rally_finalize(r);
        return 2;
    }
    size_t count = nbytes / 8;
    double *buf = malloc(nbytes);
    if (buf == NULL)
        return fail(r, "malloc", RALLY_ENOMEM);
    uint64_t plain = one(r, en, buf, count);
    uint64_t pub = plain == UINT64_MAX ? plain : one(r, NULL, buf, count);
    free(buf);
    if (pub == UINT64_MAX)
        return 1;
    /* what the robust engine keeps (docs/recovery.md, "Results kept in part") */
    int64_t copies = 2;
    const char *k = getenv("RALLY_RESULT_COPIES");
    if (k != NULL)
        copies = strtoll(k, NULL, 10);
    uint64_t kept = copies == 0 || copies >= N ? nbytes : (uint64_t)copies * nbytes / (uint64_t)N;
    uint64_t floor = (cma ? 3 : 4) * (uint64_t)(N - 1) * nbytes / (uint64_t)N;
    uint64_t slack = 8 * (nbytes / 65536 + 8) + 64; /* cut elements, the 3-byte sums */
    int bad = 0;
    if (plain < floor || plain > floor + slack) {
        fprintf(stderr, "moved: rank %d: the plain collective moved %llu bytes of a %zu-byte call, "
                        "expected %llu (+%llu)\n",
                me, (unsigned long long)plain, nbytes, (unsigned long long)floor,
                (unsigned long long)slack);
        bad = 1;
    }
    if (pub + slack < plain + kept || pub > plain + kept + slack) {
        fprintf(stderr, "moved: rank %d: the public call moved %llu bytes, the plain one %llu: "
                        "expected %llu more (what it keeps)\n",
                me, (unsigned long long)pub, (unsigned long long)plain, (unsigned long long)kept);
        bad = 1;
    }
    if (me == 0)
        printf("moved %d %zu %.3f %.3f\n", N, nbytes, (double)plain / (double)nbytes,
               (double)pub / (double)nbytes);
    rc = rally_finalize(r);
    return bad || rc != RALLY_OK;
}
