# bench/table.awk — prints `make bench`'s allreduce table, its distance from
# this machine's floor and issue 12's bars, from bench/run.sh's results file.
#
#   awk -f bench/table.awk [-v bar_n=4] results.txt
#
# Input lines (bench/run.sh writes them):
#   <column> <N> <bytes> <reps> <median_us> <min_us> <max_us> [<faults_per_call>]
#     columns: rally-shm, rally-tcp (the public, robust call), rally-shm-plain,
#     rally-tcp-plain (the plain collective under it), mpi-shm, mpi-tcp, gloo;
#   ceiling memcpy-at <bytes> <threads> <GB/s>   (bench/ceiling.c)
#   ceiling tcp <GB/s> | ceiling memcpy <GB/s> | ceiling cores <C> | ceiling pagesize <P>
#
# The floor (README.md, "The floor"): per rank and per byte of the vector, a
# bandwidth-optimal allreduce (ring or halving-doubling: each rank sends and
# receives (N-1)/N of the vector in the reduce-scatter and again in the
# allgather) through shared-memory rings makes, f = (N-1)/N,
#   reduce-scatter  read own to send f, write the ring f; read the ring,
#                   read own, write own (the reduction)          f + 2f on own
#   allgather       read own to send f, write the ring f; read the ring,
#                   write own (the copy out)                     f + f on own
#   (robust)        the recovery cache's copy: below 256 KiB (the tree,
#                   recursive doubling) the result is copied in (read +
#                   write, 2); from 256 KiB (halving-doubling and the ring,
#                   in place) each final piece the rank keeps is written
#                   into the cache buffer as it is made, from the CPU cache
#                   (1 a kept byte): all of the result at N = 2, 2/N of it
#                   from N = 3 on (rally_result_copies=2; docs/recovery.md,
#                   "Results kept in part")
# memory accesses: 5f (+2, or +K/N) on the vectors, 4f on the rings, 9f
# (+2 or +K/N) in all.
# The vectors' accesses run at the best copy rate this machine showed at the
# vector's size (ceiling memcpy-at, 1..min(N, cores) threads at once), the
# rings' (1 MiB per link: they stay in cache) at the 1 MiB rate; a copied
# byte is 2 accesses; all N ranks' accesses count.  Over TCP: the 2(N-1) x
# bytes all ranks send, at the best rate of 1..N loopback streams at once
# (ceiling tcp-par); the reduction and the cache copy come on top.

function human(b) {
    if (b >= 1048576) return sprintf("%dM", b / 1048576)
    if (b >= 1024) return sprintf("%dK", b / 1024)
    return sprintf("%d", b)
}
function has(p, n, b) { return (p SUBSEP n SUBSEP b) in med }
function busbw(n, b, t) { return 2.0 * (n - 1) / n * b / (t * 1e-6) / 1e9 }
function shown(n, b, t) { return b <= 4096 ? sprintf("%.1f", t) : sprintf("%.3g", busbw(n, b, t)) }
# What a call's fresh pages cost (us): its page faults at the first-touch
# rate (ceiling fresh); -1 when unknown.
function faultus(p, n, b) {
    if (!has(p, n, b) || flt[p, n, b] == "" || fresh <= 0) return -1
    return flt[p, n, b] * page / (fresh * 1e3)
}
# A call is allocation-bound when it touches fresh pages (minor page faults)
# for >= 1/8 of its buffer on every call: a temporary mapped afresh each time.
# (Their time share, at the first-touch rate, is an estimate: faults inside
# a copy loop, the munmap and its TLB flushes cost more than a memset's.)
function alloc(p, n, b) {
    if (b < 65536 || !has(p, n, b) || flt[p, n, b] == "") return 0
    return flt[p, n, b] * page >= b / 8
}
function faultnote(p, n, b) {
    if (!has(p, n, b) || flt[p, n, b] == "") return "?"
    if (fresh <= 0) return sprintf("%.0f faults", flt[p, n, b])
    return sprintf("%.0f faults ~%.0f%%", flt[p, n, b], 100 * faultus(p, n, b) / med[p, n, b])
}
function cell(p, n, b) {
    if (!has(p, n, b)) return "-"
    if (alloc(p, n, b) && !((p SUBSEP n SUBSEP b) in noted)) {
        noted[p, n, b] = 1
        notes = notes sprintf("\n    %s N=%d %s: %.0f page faults per call (%.0f%% of the buffer's pages),",
                              p, n, human(b), flt[p, n, b], 100 * flt[p, n, b] * page / b)
        if (fresh > 0)
            notes = notes sprintf(" >= ~%.0f of its %.0f us (%.0f%%)",
                                  faultus(p, n, b), med[p, n, b], 100 * faultus(p, n, b) / med[p, n, b])
    }
    return shown(n, b, med[p, n, b]) (alloc(p, n, b) ? "*" : "")
}
# q's time over p's: above 1, p is faster.
function ratio(p, q, n, b) {
    if (!has(p, n, b) || !has(q, n, b)) return "-"
    return sprintf("%.2f", med[q, n, b] / med[p, n, b])
}
function ovh(tr, n, b) {
    if (!has("rally-" tr, n, b) || !has("rally-" tr "-plain", n, b)) return "-"
    return sprintf("%+.0f%%", (med["rally-" tr, n, b] / med["rally-" tr "-plain", n, b] - 1) * 100)
}
function threads(n) { return n < cores ? n : cores }
# the best copy rate (GB/s) at working set b with 1..min(n, cores) threads
function copybw(n, b,    k, t, best) {
    k = b < 4096 ? 4096 : b > 67108864 ? 67108864 : b # ceiling's working sets
    best = 0
    for (t = 1; t <= threads(n); t++)
        if ((t SUBSEP k) in cpy && cpy[t, k] > best) best = cpy[t, k]
    return best
}
# the best rate of 1..n loopback streams at once (the single stream when no more)
function tcpbw(n,    k, best) {
    best = tcp
    for (k = 1; k <= n; k++)
        if (k in tpar && tpar[k] > best) best = tpar[k]
    return best
}
# floor times in us; 0 when a ceiling is unknown
function floor_shm(n, b, robust,    cv, cr, f) {
    cv = copybw(n, b)
    cr = copybw(n, b < 1048576 ? b : 1048576)
    if (cv <= 0 || cr <= 0) return 0
    f = (n - 1) / n
    return n * ((5 * f + (robust ? robust_extra(n, b) : 0)) * b / (2 * cv * 1e3) + \
                4 * f * b / (2 * cr * 1e3))
}
# The robust call's accesses per byte beyond the plain collective's: the copy
# into the cache (2) below the default ring threshold, the kept pieces'
# write (1 a kept byte; a rank keeps 2 of N pieces, all at N = 2) from it.
function robust_extra(n, b) {
    return b < 262144 ? 2 : (n <= 2 ? 1 : 2 / n)
}
function floor_tcp(n, b,    c) {
    c = tcpbw(n)
    if (c <= 0) return 0
    return 2 * (n - 1) * b / (c * 1e3)
}
function fcell(n, b, t) {
    if (t <= 0) return "-"
    return b <= 4096 ? sprintf("%.2f", t) : sprintf("%.3g", busbw(n, b, t))
}
function us0(t) { return t > 0 ? sprintf("%.0f", t) : "-" }
# column time / floor time
function dist(p, n, b, fl) {
    if (!has(p, n, b) || fl <= 0) return "-"
    return sprintf("%.1f", med[p, n, b] / fl)
}
# bar <what> <size> <value text> <ok> <margin %>
function bar(what, b, val, ok, margin, note) {
    nbars++
    if (ok) nmet++
    printf "  %-34s %5s  %-34s %s %s%s\n", what, human(b), val, ok ? "met   " : "MISSED",
        ok ? sprintf("margin %+.0f%%", margin) : sprintf("by %.0f%% (needs x%.2f its speed)", -margin, 1 / (1 + margin / 100)), note
}
function allocnote(n, b, p, q) {
    if (alloc(p, n, b) && alloc(q, n, b)) return "  (both allocation-bound here)"
    if (alloc(q, n, b)) return "  (" q " allocation-bound here)"
    if (alloc(p, n, b)) return "  (" p " allocation-bound here)"
    return ""
}

BEGIN { cores = 1; page = 4096; tcp = 0; if (bar_n == "") bar_n = 4 }
$1 == "ceiling" {
    if ($2 == "memcpy-at") cpy[$4, $3] = $5
    else if ($2 == "tcp") tcp = $3
    else if ($2 == "tcp-par") tpar[$3] = $4
    else if ($2 == "memcpy") memcpy1 = $3
    else if ($2 == "cores") cores = $3
    else if ($2 == "fresh") fresh = $3
    else if ($2 == "pagesize") page = $3
    next
}
NF >= 7 {
    med[$1, $2, $3] = $5
    flt[$1, $2, $3] = NF >= 8 ? $8 : ""
    seen[$3] = 1
    if (!($2 in hasn)) { hasn[$2] = 1; ns = ns " " $2 }
}
END {
    split(ns, N, " ")
    split("8 64 512 4096 65536 1048576 16777216 67108864 268435456", S, " ")
    fmt = "%-3s %5s | %7s %8s %8s %5s %8s %5s | %7s %8s %8s %5s %8s %5s | %8s %5s\n"
    printf "%-9s | %-46s | %-46s |\n", "", "---------------- shared memory ---------------",
        "--------------------- TCP --------------------"
    printf fmt, "N", "size", "floor", "rally", "plain", "ovh", "mpi-shm", "x", "floor", "rally",
        "plain", "ovh", "mpi-tcp", "x", "gloo", "x"
    for (i = 1; i in N; i++) {
        n = N[i]
        for (j = 1; j in S; j++) {
            b = S[j]
            if (!(b in seen)) continue
            if (b == 8 || b == 65536)
                printf "--- N = %d, %s\n", n,
                    b == 8 ? "latency, us (lower is better)" : "bus bandwidth, GB/s (higher is better)"
            printf fmt, n, human(b),
                fcell(n, b, floor_shm(n, b, 1)), cell("rally-shm", n, b), cell("rally-shm-plain", n, b),
                ovh("shm", n, b), cell("mpi-shm", n, b), ratio("rally-shm", "mpi-shm", n, b),
                fcell(n, b, floor_tcp(n, b)), cell("rally-tcp", n, b), cell("rally-tcp-plain", n, b),
                ovh("tcp", n, b), cell("mpi-tcp", n, b), ratio("rally-tcp", "mpi-tcp", n, b),
                cell("gloo", n, b), ratio("rally-tcp", "gloo", n, b)
        }
    }
    print "x = the peer's time / rally's on the same transport (gloo: against rally-tcp): above 1,"
    print "rally is faster.  ovh = robust / plain - 1.  floor: the fastest this machine allows"
    print "(shared memory: the robust call's memory traffic; TCP: the loopback sockets alone)."
    if (notes != "")
        printf "* allocation-bound: every call touches fresh pages (minor page faults) for >= 1/8 of\n  its buffer -- for OpenMPI, its temporary buffers: glibc's malloc maps blocks above its\n  mmap threshold (at most 32 MiB) afresh on every call.  Their share of the call's time\n  at the first-touch rate (%s GB/s) is a lower estimate:%s\n", (fresh > 0 ? fresh : "?"), notes

    # --- distance from the floor ---------------------------------------------
    print ""
    print "distance from the floor (column time / floor time, 1.0 = at the floor), sizes >= 64K;"
    print "floors in us: shm robust (9f+2 accesses per byte per rank below 256K, 9f+2/N from it, 9f+1 at N = 2), shm plain (9f), TCP sockets;"
    print "a column below 1.0 beat the model: its premise (e.g. two copies through a ring) does not hold for it"
    dfmt = "%-3s %5s | %9s %9s %9s | %9s %9s %9s | %9s %9s %9s %9s\n"
    printf dfmt, "N", "size", "shm-rob", "shm-plain", "tcp", "rally-shm", "plain", "mpi-shm",
        "rally-tcp", "plain", "mpi-tcp", "gloo"
    for (i = 1; i in N; i++) {
        n = N[i]
        for (j = 1; j in S; j++) {
            b = S[j]
            if (!(b in seen) || b < 65536) continue
            fr = floor_shm(n, b, 1); fp = floor_shm(n, b, 0); ft = floor_tcp(n, b)
            printf dfmt, n, human(b), us0(fr), us0(fp), us0(ft),
                dist("rally-shm", n, b, fr), dist("rally-shm-plain", n, b, fp),
                dist("mpi-shm", n, b, fp), dist("rally-tcp", n, b, ft),
                dist("rally-tcp-plain", n, b, ft), dist("mpi-tcp", n, b, ft),
                dist("gloo", n, b, ft)
        }
    }

    # --- issue 12's bars --------------------------------------------------------
    if (!(bar_n in hasn)) {
        printf "\nbars: not checked (they are set at N = %d, which this run did not measure)\n", bar_n
        exit
    }
    n = bar_n
    printf "\nbars at N = %d (issue 12; margin: how far past the bar, or short of it)\n", n
    for (j = 1; j in S; j++) {
        b = S[j]
        if (b < 1048576 || !has("rally-shm", n, b) || !has("mpi-shm", n, b)) continue
        r = med["mpi-shm", n, b] / med["rally-shm", n, b]
        bar("rally-shm >= 1.2x mpi-shm bus bw", b,
            sprintf("%.3g vs %.3g GB/s, x%.2f", busbw(n, b, med["rally-shm", n, b]),
                    busbw(n, b, med["mpi-shm", n, b]), r),
            r >= 1.2, (r / 1.2 - 1) * 100, allocnote(n, b, "rally-shm", "mpi-shm"))
    }
    if (has("rally-shm", n, 8) && has("mpi-shm", n, 8)) {
        r = med["mpi-shm", n, 8] / med["rally-shm", n, 8]
        bar("rally-shm 8 B latency <= mpi-shm", 8,
            sprintf("%.1f vs %.1f us", med["rally-shm", n, 8], med["mpi-shm", n, 8]),
            r >= 1, (r - 1) * 100, "")
    }
    for (j = 1; j in S; j++) {
        b = S[j]
        if (b < 65536 || !has("rally-tcp", n, b) || !has("mpi-tcp", n, b)) continue
        r = med["mpi-tcp", n, b] / med["rally-tcp", n, b]
        bar("rally-tcp >= 1.2x mpi-tcp bus bw", b,
            sprintf("%.3g vs %.3g GB/s, x%.2f", busbw(n, b, med["rally-tcp", n, b]),
                    busbw(n, b, med["mpi-tcp", n, b]), r),
            r >= 1.2, (r / 1.2 - 1) * 100, allocnote(n, b, "rally-tcp", "mpi-tcp"))
    }
    for (j = 1; j in S; j++) {
        b = S[j]
        if (!(b == 8 || b >= 16777216) || !has("rally-shm", n, b) || !has("rally-shm-plain", n, b))
            continue
        r = med["rally-shm", n, b] / med["rally-shm-plain", n, b]
        if (b == 8)
            bar("robust / plain <= 1.5 (shm)", b,
                sprintf("%.1f vs %.1f us, x%.2f", med["rally-shm", n, b],
                        med["rally-shm-plain", n, b], r), r <= 1.5, (1.5 / r - 1) * 100, "")
        else
            bar("robust overhead <= 10% (shm)", b,
                sprintf("%.0f vs %.0f us, %+.1f%%", med["rally-shm", n, b],
                        med["rally-shm-plain", n, b], (r - 1) * 100),
                r <= 1.1, (1.1 / r - 1) * 100, allocnote(n, b, "rally-shm", "rally-shm-plain"))
    }
    printf "  %d of %d bars met.\n", nmet, nbars
    b = 16777216
    if (has("rally-shm", n, b) && has("mpi-shm", n, b)) {
        printf "  16M is the size to read (fresh pages per call, share of its time: rally-shm %s, mpi-shm %s,\n    rally-tcp %s, mpi-tcp %s)",
            faultnote("rally-shm", n, b), faultnote("mpi-shm", n, b), faultnote("rally-tcp", n, b),
            faultnote("mpi-tcp", n, b)
        if (alloc("rally-shm", n, b) || alloc("mpi-shm", n, b) || alloc("rally-tcp", n, b) ||
            alloc("mpi-tcp", n, b))
            print ": in this run one side IS allocation-bound at 16M (see *)"
        else
            print ": neither side is allocation-bound there"
    }
}
