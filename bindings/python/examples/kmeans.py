#!/usr/bin/env python3
"""kmeans.py — examples/kmeans (rally-kmeans) in Python: the same job, the
same arithmetic, the same model digest on the same data and world size.

    rally-run -n 4 python3 kmeans.py --data blobs.csv --data-opt csv_label=0 -k 8

Each worker reads its shard with rally's own reader (rally.data), agrees on
the feature count and that every shard was read (one MAX allreduce), learns
every shard's row count (allgather), then loads the newest checkpoint or
initialises the centroids by k-means++ (2k - 1 collectives, from a seeded
xoshiro256** that every rank steps alike) and checkpoints them as iteration
0; then each Lloyd iteration is one SUM allreduce of [sums | counts |
objective] and one checkpoint.  A restarted worker resumes from the
checkpoint; its collectives are served by the survivors.  In an elastic
job (rally-run --min-workers) a call may raise rally.Resized: the job went
on with other workers, and the worker starts again from its shard.

Bit for bit the C program's: every floating-point sum below adds the same
float64 operands in the same order as examples/kmeans does (distances
feature by feature, the objective and the D^2 mass row by row with
np.cumsum from +0.0, the cluster sums row by row with np.cumsum too), and the collectives
are the same calls with the same operands, so rally reduces them in the
same order.  The checkpoint is a pickled dict rather than the C program's
bytes (the digest hashes the C model format, built at the end).  Not
mirrored: --init-in, --init-out, --model-out, --json, --show.

Output as rally-kmeans's: "shard R fingerprint F rows N pid P" from every
rank, "iteration T objective X time S s" and last
"result: model_digest=HEX objective=X" from rank 0.  Like rally-kmeans,
rank 0 also reports each update's objective to rally-run's observers
(rally.report) and --iters as the iterations in all (rally.report_total).
"""
import argparse
import math
import os
import struct
import sys
import time

import numpy as np

import rally
import rally.data

EXIT_OK, EXIT_RALLY, EXIT_INPUT = 0, 1, 2
MAX_K, MAX_FEATURES = 65536, 1000000
CONVERGED, HAS_OBJECTIVE = 1, 2
MASK = (1 << 64) - 1


def say(*a):
    print(*a, flush=True)


# --- the RNG: splitmix64 seeding xoshiro256** (init.c) -------------------------

def splitmix64(state):
    state[0] = (state[0] + 0x9E3779B97F4A7C15) & MASK
    z = state[0]
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def rotl(x, s):
    return ((x << s) | (x >> (64 - s))) & MASK


def rng_next(s):
    r = (rotl((s[1] * 5) & MASK, 7) * 9) & MASK
    t = (s[1] << 17) & MASK
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = rotl(s[3], 45)
    return r


def rng_uniform(s):  # [0, 1), exact: a 53-bit integer times 2^-53
    return float(rng_next(s) >> 11) * 2.0 ** -53


# --- the model's bytes (model.c): what the digest hashes -----------------------

def encode(m):
    head = struct.pack("<8sIIIIQQ4QdQ", b"RALLYKM\0", 1, m["k"], m["d"], m["flags"],
                       m["iteration"], m["seed"], *m["rng"], m["objective"], 0)
    body = head + np.ascontiguousarray(m["c"], "<f8").tobytes()
    return body + struct.pack("<Q", rally.digest64(body))


# --- sequential sums: what a C loop "s += a[i]" from 0 gives -------------------

def seq_sum(a):
    return float(np.cumsum(np.concatenate([[0.0], a]))[-1])


def sqdists(x, c):
    """Squared distances of every row of x (rows x d, float64) to every row of
    c (k x d): out[i, j] adds (x[i, f] - c[j, f])^2 in feature order from 0."""
    out = np.zeros((x.shape[0], c.shape[0]))
    for f in range(x.shape[1]):
        t = x[:, f:f + 1] - c[:, f]
        out += t * t
    return out


# --- the job -------------------------------------------------------------------

class Job:
    def __init__(self, r):
        self.r, self.rank, self.world = r, r.rank(), r.world_size()


def bootstrap(j, o):
    """The shard as j.x (rows x d float64 from float32), d, every shard's rows.
    The exit status."""
    bad, err, shard = False, "", None
    try:
        shard = rally.data.read(o.data, o.data_opt, j.rank, j.world)
        if shard.num_features > MAX_FEATURES:
            bad, err = True, "%s: %d features, at most %d are supported" % (
                o.data, shard.num_features, MAX_FEATURES)
        else:
            say("shard %d fingerprint %s rows %d pid %d" % (j.rank, shard.fingerprint,
                                                              shard.num_rows, os.getpid()))
            j.r.set_input(shard.partition, shard.fingerprint)  # a resume over other data is refused
    except rally.Error as e:
        bad, err = True, e.message
    if bad:
        print("kmeans.py: rank %d: %s" % (j.rank, err), file=sys.stderr, flush=True)
    agree = np.array([0 if bad else shard.num_features, int(bad)], np.uint64)
    j.r.allreduce(agree, rally.MAX)
    if agree[1] != 0:
        if not bad and j.rank == 0:
            print("kmeans.py: another worker could not read its input; stopping", file=sys.stderr)
        return EXIT_INPUT
    if agree[0] == 0:
        if j.rank == 0:
            print("kmeans.py: %s has no features" % o.data, file=sys.stderr)
        return EXIT_INPUT
    j.d = int(agree[0])
    j.rows = shard.num_rows
    j.x = shard.dense(j.d).astype(np.float64)  # exact: every float32 is a float64
    j.shard_rows = [int(v) for v in j.r.allgather(np.array([j.rows], np.uint64)).ravel()]
    j.total_rows = sum(j.shard_rows)
    if j.total_rows < o.k:
        if j.rank == 0:
            print("kmeans.py: %d rows cannot make %d clusters" % (j.total_rows, o.k),
                  file=sys.stderr)
        return EXIT_INPUT
    return EXIT_OK


def owner_of(j, sums, target):
    p = 0.0
    for q in range(j.world):
        if sums[q] > 0 and (target < p + sums[q] or q == j.world - 1):
            return q, p
        p += sums[q]
    for q in range(j.world - 1, -1, -1):  # rounding: the last shard with mass
        if sums[q] > 0:
            return q, p
    raise AssertionError("no mass")


def row_at(d2, t):
    cum = np.cumsum(d2)
    hit = np.flatnonzero((cum > t) & (d2 > 0))
    if len(hit):
        return int(hit[0])
    mass = np.flatnonzero(d2 > 0)
    return int(mass[-1]) if len(mass) else 0


def kmeanspp(j, m):
    k, d = m["k"], m["d"]
    c = np.zeros((k, d))
    d2 = np.zeros(j.rows)
    for ci in range(k):
        total, local = 0.0, 0
        if ci > 0:
            sums = j.r.allgather(np.array([seq_sum(d2)])).ravel().tolist()
            for v in sums:
                total += v
        if total > 0:
            target = rng_uniform(m["rng"]) * total
            owner, prefix = owner_of(j, sums, target)
            if owner == j.rank:
                local = row_at(d2, target - prefix)
        else:  # the first centroid, or every row already is a centroid
            g = rng_next(m["rng"]) % j.total_rows
            owner = 0
            while g >= j.shard_rows[owner]:
                g -= j.shard_rows[owner]
                owner += 1
            local = g
        row = j.x[local].copy() if j.rank == owner else np.zeros(d)
        j.r.allreduce(row, rally.SUM)  # the owner's row, zeros added elsewhere
        c[ci] = row
        t = sqdists(j.x, row[None, :])[:, 0]
        d2 = t if ci == 0 else np.where(t < d2, t, d2)
    m["c"] = c


def init_model(j, o):
    sm = [o.seed]
    m = {"k": o.k, "d": j.d, "flags": 0, "iteration": 0, "seed": o.seed,
         "rng": [splitmix64(sm) for _ in range(4)], "objective": 0.0}
    t0 = time.monotonic()
    kmeanspp(j, m)
    if j.rank == 0 and not o.quiet:
        say("initialised %d centroids (k-means++) from %d rows x %d features on %d workers in "
            "%.3f s" % (m["k"], j.total_rows, m["d"], j.world, time.monotonic() - t0))
    return m


def load_or_init(j, o):
    version, m = j.r.load_checkpoint()
    if version > 0:
        if m["k"] != o.k or m["d"] != j.d:
            print("kmeans.py: rank %d: the checkpoint is for another k or feature count"
                  % j.rank, file=sys.stderr)
            return None
        say("rank %d restarted: resuming after iteration %d (checkpoint version %d)"
            % (j.rank, m["iteration"], version))
        return m
    m = init_model(j, o)
    j.r.checkpoint(m)
    return m


def assign(j, m):
    """[sums (k x d) | counts (k) | objective] of this shard, as lloyd.c sums them."""
    k, d = m["k"], m["d"]
    dist = sqdists(j.x, m["c"])
    best = np.argmin(dist, axis=1) if j.rows else np.zeros(0, np.int64)  # ties: lowest
    obj = seq_sum(dist[np.arange(j.rows), best])
    sums = np.zeros((k, d))
    for c in np.unique(best):  # row by row in row order, from +0.0 as in C
        sums[c] = np.cumsum(np.vstack([np.zeros((1, d)), j.x[best == c]]), axis=0)[-1]
    counts = np.bincount(best, minlength=k).astype(np.float64)
    return np.concatenate([sums.ravel(), counts, [obj]])


def update(m, buf):
    k, d = m["k"], m["d"]
    sums, counts = buf[:k * d].reshape(k, d), buf[k * d:k * d + k]
    full = counts != 0
    new = m["c"].copy()
    new[full] = sums[full] / counts[full][:, None]
    changed = bool((new.view(np.uint64) != m["c"].view(np.uint64)).any())
    m["c"] = new
    return changed, int((~full).sum())


def lloyd(j, o, m):
    obj, t_prev = m["objective"], time.monotonic()
    if j.rank == 0:
        j.r.report_total(o.iters)
    while True:
        if (m["flags"] & CONVERGED) and not o.fixed_iters:
            break
        if o.pause_ms > 0:
            time.sleep(o.pause_ms / 1000)
        buf = assign(j, m)
        j.r.allreduce(buf, rally.SUM)
        obj = float(buf[-1])
        if m["iteration"] >= o.iters:
            break
        changed, empty = update(m, buf)
        m["iteration"] += 1
        m["objective"] = obj
        m["flags"] = HAS_OBJECTIVE | (0 if changed else CONVERGED)
        t = time.monotonic()
        if j.rank == 0 and not o.quiet:
            note = " (%d empty cluster%s kept)" % (empty, "s" if empty > 1 else "") if empty else ""
            say("iteration %d objective %.12g time %.4f s%s%s" % (
                m["iteration"], obj, t - t_prev, note, "" if changed else " converged"))
        t_prev = t
        if j.rank == 0 and math.isfinite(obj):  # the value every rank has: one report is enough
            j.r.report("objective", obj)
        j.r.checkpoint(m)
    if (m["flags"] & CONVERGED) and not o.fixed_iters:
        obj = m["objective"]
    return obj


def options(argv):
    p = argparse.ArgumentParser(prog="kmeans.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--data-opt", action="append", default=[], metavar="KEY=VAL")
    p.add_argument("-k", "--clusters", dest="k", type=int, default=8)
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--fixed-iters", action="store_true")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--pause-ms", type=int, default=0)
    p.add_argument("--quiet", action="store_true")
    o = p.parse_args(argv)
    if not 1 <= o.k <= MAX_K or o.iters < 0 or not 0 <= o.seed <= MASK:
        p.error("-k must be in 1..%d, --iters >= 0, --seed in 0..2^64-1" % MAX_K)
    return o


def main():
    try:
        r = rally.init()  # takes rally_key=value out of sys.argv
    except rally.Error as e:
        print("kmeans.py: %s" % e, file=sys.stderr)
        return EXIT_RALLY
    with r:
        o = options(sys.argv[1:])
        j = Job(r)
        r.set_app("kmeans.py", " ".join(sys.argv[1:]))  # a resume with other options is refused
        try:
            while True:
                try:
                    status = bootstrap(j, o)
                    if status != EXIT_OK:
                        return status
                    m = load_or_init(j, o)
                    if m is None:
                        return EXIT_RALLY
                    obj = lloyd(j, o, m)
                    break
                except rally.Resized:
                    # an elastic job went on with other workers from its
                    # newest checkpoint: this worker's shard is another one
                    j = Job(r)
                    say("rank %d of %d now: reading its shard again" % (j.rank, j.world))
        except rally.Error as e:
            print("kmeans.py: rank %d: %s" % (j.rank, e), file=sys.stderr)
            return EXIT_RALLY
        if j.rank == 0:
            say("result: model_digest=%016x objective=%.17g" % (rally.digest64(encode(m)), obj))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
