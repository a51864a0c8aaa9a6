"""kmeans_sklearn.py — scikit-learn's Lloyd k-means as the reference for rally-kmeans.

    python3 kmeans_sklearn.py check DATA.csv INIT.csv ITERS OBJECTIVE [REL_TOL]
        Runs KMeans(init=INIT, n_init=1, algorithm="lloyd", max_iter=ITERS, tol=0)
        on DATA (CSV, label in column 0, no header) and checks that its inertia_
        equals OBJECTIVE (rally-kmeans' result) to REL_TOL (default 1e-9).
    python3 kmeans_sklearn.py time DATA.csv INIT.csv ITERS_LO ITERS_HI
        Prints "sklearn_seconds_per_iteration S n_iter_lo n_iter_hi": the time of
        fit(max_iter=ITERS_HI) minus fit(max_iter=ITERS_LO), over the difference
        in iterations actually run (so fixed costs cancel); best of 3 each.

Why the two agree (examples/kmeans/README.md): both start from the same
centroids; with tol=0 sklearn stops only when the labels stop changing, which
is when rally's centroids stop changing bit for bit (same labels, same sums),
or after max_iter updates; its inertia_ is the sum of squared distances to the
nearest *final* centroid, the definition of rally-kmeans' objective.  The data
are the same float32 values (the files print floats with 9 digits), computed
in float64.
"""
import sys
import time
import warnings

import numpy as np
from sklearn.cluster import KMeans


def load(data, init):
    x = np.loadtxt(data, delimiter=",", dtype=np.float32)[:, 1:].astype(np.float64)
    c = np.loadtxt(init, delimiter=",", dtype=np.float64, ndmin=2)
    return x, c


def fit(x, c, iters):
    km = KMeans(n_clusters=c.shape[0], init=c, n_init=1, algorithm="lloyd",
                max_iter=iters, tol=0.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at max_iter
        km.fit(x)
    return km


def check(data, init, iters, objective, rel_tol=1e-9):
    x, c = load(data, init)
    km = fit(x, c, int(iters))
    want = float(objective)
    rel = abs(km.inertia_ - want) / max(abs(want), 1e-300)
    print(f"sklearn: inertia {km.inertia_:.17g} after {km.n_iter_} iterations; "
          f"rally-kmeans: objective {want:.17g}; relative difference {rel:.3g}")
    if not rel <= float(rel_tol):
        print(f"kmeans_sklearn: FAILED: relative difference {rel:.3g} > {rel_tol}")
        return 1
    print("kmeans_sklearn: passed")
    return 0


def timed(x, c, iters):
    best, n = None, 0
    for _ in range(3):
        t0 = time.perf_counter()
        km = fit(x, c, iters)
        t = time.perf_counter() - t0
        best, n = (t, km.n_iter_) if best is None or t < best else (best, n)
    return best, n


def time_it(data, init, lo, hi):
    x, c = load(data, init)
    t_lo, n_lo = timed(x, c, int(lo))
    t_hi, n_hi = timed(x, c, int(hi))
    if n_hi <= n_lo:
        print(f"kmeans_sklearn: converged after {n_hi} iterations; cannot time", file=sys.stderr)
        return 1
    print(f"sklearn_seconds_per_iteration {(t_hi - t_lo) / (n_hi - n_lo):.6f} {n_lo} {n_hi}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 6 and sys.argv[1] == "check":
        sys.exit(check(*sys.argv[2:7]))
    if len(sys.argv) == 6 and sys.argv[1] == "time":
        sys.exit(time_it(*sys.argv[2:6]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
