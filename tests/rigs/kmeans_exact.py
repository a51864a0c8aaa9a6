"""kmeans_exact.py — one Lloyd step of rally-kmeans --reproducible against an
exact reference: Python's fractions.

    python3 kmeans_exact.py gen DATA.csv INIT.csv
        Writes 4,000 rows x 5 features (label in column 0) in four blobs far
        apart along feature 0, and the blobs' centres as the initial
        centroids, so each row's cluster is its blob.  The features mix what
        rally-kmeans's faster lane for exact sums must hand to the
        accumulator: values from 1e-30 to 1e3 of both signs, subnormal
        floats, -0 and +0 (a cluster whose feature is -0 in every row, one
        of -0 and +0 mixed), and rows whose every value is on its grid.
        Values are printed exactly (a float32 as the double it is), so
        strtof reads back the same floats.
    python3 kmeans_exact.py check DATA.csv INIT.csv MODEL.json
        Recomputes the step: each row's squared distances in float64, in
        feature order (as rally does), the nearest centroid (ties to the
        lowest), each centroid's sum as an exact fraction rounded once to
        float64 (a sum of nothing but -0 is -0), divided by the count.  The
        model's centroids (rally-kmeans --show) must be those bits, every one.
"""
import json
import math
import struct
import sys
from fractions import Fraction

import numpy as np

BLOBS = (-3000.0, -1000.0, 1000.0, 3000.0)


def gen(data, init):
    rng = np.random.default_rng(5)
    rows = []
    for i in range(4000):
        b = i % 4
        f0 = BLOBS[b] + rng.normal()
        if b == 3:  # magnitudes from 1e-30 to 1e3 and subnormals: off the grid
            f1 = rng.choice((-1, 1)) * 10.0 ** rng.uniform(-30, 3)
            if i % 40 == 3:
                f1 = rng.choice((-1, 1)) * 1e-40
        else:
            f1 = rng.normal()
        f2 = (-0.0, rng.choice((-0.0, 0.0)), rng.normal(), rng.normal() * 1e-20)[b]
        f3 = rng.normal() if i % 997 else 1e-35
        f4 = float(rng.integers(-3, 4))  # small integers, zeros among them
        rows.append([float(np.float32(v)) for v in (f0, f1, f2, f3, f4)])
    with open(data, "w") as f:
        for i, r in enumerate(rows):
            f.write("%d,%s\n" % (i % 4, ",".join(repr(v) for v in r)))
    with open(init, "w") as f:
        for c in BLOBS:
            f.write("%r,0,0,0,0\n" % c)


def bits(x):
    return struct.pack("<d", x)


def check(data, init, model):
    x = [[float(v) for v in line.split(",")[1:]] for line in open(data)]
    c = [[float(v) for v in line.split(",")] for line in open(init)]
    m = json.load(open(model), parse_int=float)  # "-0" is -0.0, not 0
    got = m["centroids"]
    k, d = len(c), len(c[0])
    members = [[] for _ in range(k)]
    for r in x:
        dist = []
        for cc in c:
            s = 0.0
            for f in range(d):
                t = r[f] - cc[f]
                s += t * t
            dist.append(s)
        best = min(range(k), key=lambda j: (dist[j], j))
        members[best].append(r)
    bad = 0
    for j in range(k):
        for f in range(d):
            if not members[j]:
                want = c[j][f]
            else:
                vals = [r[f] for r in members[j]]
                if all(v == 0 and math.copysign(1, v) < 0 for v in vals):
                    total = -0.0
                else:
                    total = float(sum(Fraction(v) for v in vals))
                want = total / len(members[j])
            if bits(want) != bits(got[j][f]):
                bad += 1
                if bad <= 5:
                    print("centroid %d feature %d: rally %r, exact %r" % (j, f, got[j][f], want))
    sizes = [len(mm) for mm in members]
    print("clusters %s; %d of %d centroid values differ" % (sizes, bad, k * d))
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2], sys.argv[3])
        sys.exit(0)
    if sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4]))
    sys.exit("usage: kmeans_exact.py gen DATA INIT | check DATA INIT MODEL")
