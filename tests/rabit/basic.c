/*
 * basic.c — a program written to rabit's C API (its c_api.h, here
 * rally/rabit_c_api.h): every rabit data type and operator by rabit's
 * enumeration numbers, broadcast, rank and world, the processor name and a
 * tracker print.  Each rank knows every rank's operand, so it checks its
 * results itself; prints "rabit_basic_ok rank R" (through the tracker).
 *
 *   rally-run -n N rabit_basic [baddtype] [rabit_* / mock= / rally_* args]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rally/rabit_c_api.h"

#define N 5

/* rank r's element i, small enough for every type */
static int val(int r, int i)
{
    return (r * 7 + i * 3) % 11 + 1;
}

#define CHECK(T, DT)                                                                            \
    do {                                                                                        \
        for (int op = 0; op <= 3; op++) {                                                       \
            if (op == 3 && ((T)0.5 != 0))                                                       \
                continue; /* bitwise or: integers only */                                       \
            T buf[N], want[N];                                                                  \
            for (int i = 0; i < N; i++) {                                                       \
                buf[i] = (T)val(rank, i);                                                       \
                long long acc = val(0, i);                                                      \
                for (int q = 1; q < world; q++) {                                               \
                    long long v = val(q, i);                                                    \
                    acc = op == 0 ? (v > acc ? v : acc)                                         \
                        : op == 1 ? (v < acc ? v : acc)                                         \
                        : op == 2 ? acc + v : (acc | v);                                        \
                }                                                                               \
                want[i] = (T)acc;                                                               \
            }                                                                                   \
            RabitAllreduce(buf, N, DT, op, NULL, NULL);                                         \
            if (memcmp(buf, want, sizeof buf) != 0) {                                           \
                fprintf(stderr, "rank %d: type %d operator %d: wrong result\n", rank, DT, op);  \
                return 1;                                                                       \
            }                                                                                   \
            checked++;                                                                          \
        }                                                                                       \
    } while (0)

static void fill(void *arg)
{
    int *p = arg;
    p[0] = 40;
    p[1] = 2;
}

int main(int argc, char *argv[])
{
    if (!RabitInit(argc, argv))
        return 1;
    int rank = RabitGetRank(), world = RabitGetWorldSize(), checked = 0;
    if (argc > 1 && strcmp(argv[1], "baddtype") == 0) {
        double x = 1;
        RabitAllreduce(&x, 1, 10, 2, NULL, NULL); /* not one of rabit's types: exits */
    }
    /* rabit's numbers: char 0, uchar 1, int 2, uint 3, long 4, ulong 5,
     * float 6, double 7, long long 8, unsigned long long 9;
     * max 0, min 1, sum 2, bitwise or 3 */
    CHECK(char, 0);
    CHECK(unsigned char, 1);
    CHECK(int, 2);
    CHECK(unsigned, 3);
    CHECK(long, 4);
    CHECK(unsigned long, 5);
    CHECK(float, 6);
    CHECK(double, 7);
    CHECK(long long, 8);
    CHECK(unsigned long long, 9);

    int p[2] = {0, 0}; /* the prepare function fills the buffer */
    RabitAllreduce(p, 2, RABIT_INT, RABIT_SUM, fill, p);
    if (p[0] != 40 * world || p[1] != 2 * world) {
        fprintf(stderr, "rank %d: prepare: got %d %d\n", rank, p[0], p[1]);
        return 1;
    }
    char msg[64];
    snprintf(msg, sizeof msg, "hello from %d", world - 1);
    if (rank != world - 1)
        memset(msg, 0, sizeof msg);
    RabitBroadcast(msg, sizeof msg, world - 1);
    char want[64];
    snprintf(want, sizeof want, "hello from %d", world - 1);
    if (strcmp(msg, want) != 0) {
        fprintf(stderr, "rank %d: broadcast: got '%s'\n", rank, msg);
        return 1;
    }
    char name[256], tiny[4];
    rbt_ulong len = 0, tlen = 0;
    RabitGetProcessorName(name, &len, sizeof name);
    RabitGetProcessorName(tiny, &tlen, sizeof tiny);
    rbt_ulong cut = len < 3 ? len : 3; /* at most max_len - 1 bytes */
    if (len == 0 || len != strlen(name) || tlen != cut || strlen(tiny) != cut ||
        strncmp(tiny, name, cut) != 0) {
        fprintf(stderr, "rank %d: processor name '%s' (%lu), truncated '%s' (%lu)\n", rank, name,
                len, tiny, tlen);
        return 1;
    }
    char line[128];
    snprintf(line, sizeof line, "rabit_basic_ok rank %d of %d checked %d distributed %d version %d\n",
             rank, world, checked, RabitIsDistributed(), RabitVersionNumber());
    RabitTrackerPrint(line);
    (void)RabitLinkTag();
    return RabitFinalize() ? 0 : 1;
}
