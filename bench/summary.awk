# bench/summary.awk — the first part of `make bench`'s summary, the table a
# user compares: rally's public allreduce beside OpenMPI (shared memory and
# TCP) and Gloo at the sizes users meet, every world size measured, as the
# median over bench/run.sh's rounds (each ratio with its range), the memcpy
# and load of each round beside it.  Then the header of the summary's other
# rows, which the later parts append (bench/lib.sh, summary_row).
#
#   awk -f bench/summary.awk [-v targets=FILE] rounds.txt
#
# With targets, FILE gets the header of make bench's table of targets and
# the allreduce's rows of it: the 8-byte call no slower than OpenMPI's
# shared memory at N = 2 and 4, and at least 1.2x it at 1, 16 and 64 MiB
# (the median ratio over the rounds decides); the later parts append
# theirs (bench/lib.sh, target_row).
#
# Input (bench/run.sh): "ROUND LOAD COLUMN N BYTES MEDIAN_US" per column, N
# and size, and "memcpy ROUND LOAD GB/S" after each round.  A ratio x is the
# peer's time over rally's in the same round (above 1: rally is faster); its
# median and range are over the rounds.

function med(a, n,    i, j, t) { # sorts a[1..n]; its median
    for (i = 2; i <= n; i++)
        for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function size(b) { return b >= 1048576 ? (b / 1048576) " MiB" : b >= 1024 ? (b / 1024) " KiB" : b " B" }
# the column's figure: us up to 4 KiB, bus bandwidth GB/s above
function fig(n, b, us) { return b <= 4096 ? sprintf("%.1f us", us) : sprintf("%.2f GB/s", 2 * (n - 1) / n * b / (us * 1e3)) }
# column c at N n, size b: its median over the rounds, or "-" (the ratios
# beside it carry the range)
function cell(c, n, b,    r, k, v) {
    k = 0
    for (r = 1; r <= R; r++) if ((r, c, n, b) in t) v[++k] = t[r, c, n, b]
    if (k == 0) return "-"
    return fig(n, b, med(v, k))
}
# the ratios peer / rally round by round, into v[1..k]; k
function ratios(p, q, n, b, v,    r, k) {
    k = 0
    for (r = 1; r <= R; r++)
        if ((r, p, n, b) in t && (r, q, n, b) in t && t[r, q, n, b] > 0)
            v[++k] = t[r, p, n, b] / t[r, q, n, b]
    return k
}
# the ratio peer / rally over the rounds: "median (min-max)"
function ratio(p, q, n, b,    r, k, v, lo, hi) {
    k = ratios(p, q, n, b, v)
    if (k == 0) return "-"
    lo = hi = v[1]
    for (r = 2; r <= k; r++) { if (v[r] < lo) lo = v[r]; if (v[r] > hi) hi = v[r] }
    return k == 1 ? sprintf("%.2fx", v[1]) : sprintf("%.2fx (%.2f-%.2f)", med(v, k), lo, hi)
}
# a row of the targets: OpenMPI shm's time / rally shm's at N n and size b
# at least goal (its median over the rounds)
function target(n, b, goal,    k, v, x) {
    k = ratios("mpi-shm", "rally-shm", n, b, v)
    x = k ? med(v, k) >= goal ? "met" : "missed" : "not measured"
    printf "| the allreduce at %s, N = %d: OpenMPI shm's time / rally shm's | %s | >= %.1fx | %s |\n",
        size(b), n, ratio("mpi-shm", "rally-shm", n, b), goal, x > targets
}
$1 == "memcpy" { mem[$2] = $4; mload[$2] = $3; if ($2 > R) R = $2; next }
{
    if ($1 > R) R = $1
    t[$1, $3, $4, $5] = $6
    if (!(($4) in hn)) { hn[$4] = 1; ns[++nn] = $4 }
    if (!($1 in llo) || $2 < llo[$1]) llo[$1] = $2
    if (!($1 in lhi) || $2 > lhi[$1]) lhi[$1] = $2
}
END {
    split("8 65536 1048576 16777216 67108864", S, " ")
    for (i = 2; i <= nn; i++) for (j = i; j > 1 && ns[j - 1] > ns[j]; j--) { x = ns[j]; ns[j] = ns[j - 1]; ns[j - 1] = x }
    printf "== the summary: what a user compares ======================================\n"
    printf "allreduce, float32 sum in place, the public call (robust); median over %d round(s) (range);\n", R
    printf "x = the peer's time / rally's in the same round (above 1: rally is faster)\n\n"
    printf "| N | size | rally shm | OpenMPI shm | x | rally tcp | OpenMPI tcp | x | Gloo | x |\n"
    printf "|---|---|---|---|---|---|---|---|---|---|\n"
    for (i = 1; i <= nn; i++)
        for (j = 1; j in S; j++) {
            n = ns[i]; b = S[j]
            if (cell("rally-shm", n, b) == "-" && cell("rally-tcp", n, b) == "-") continue
            printf "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", n, size(b),
                cell("rally-shm", n, b), cell("mpi-shm", n, b), ratio("mpi-shm", "rally-shm", n, b),
                cell("rally-tcp", n, b), cell("mpi-tcp", n, b), ratio("mpi-tcp", "rally-tcp", n, b),
                cell("gloo", n, b), ratio("gloo", "rally-tcp", n, b)
        }
    printf "\nthe floor and the load (1-minute average) of each round:"
    for (r = 1; r <= R; r++)
        printf "%s round %d: memcpy %s GB/s, load %s-%s", (r > 1 ? ";" : ""), r,
            (r in mem ? mem[r] : "?"), (r in llo ? llo[r] : "?"), (r in lhi ? lhi[r] : "?")
    printf "\n\n| part | rally | peer | x (range) | the block's memcpy, load |\n|---|---|---|---|---|\n"
    if (targets == "") exit
    printf "== the targets: met or missed (the median decides; bench/README.md) ========\n\n" > targets
    printf "| target | measured: median (range) | goal | verdict |\n|---|---|---|---|\n" > targets
    for (i = 1; i <= nn; i++) {
        if (ns[i] == 2 || ns[i] == 4) target(ns[i], 8, 1.0)
        for (j = 3; j in S; j++) target(ns[i], S[j], 1.2)
    }
}
