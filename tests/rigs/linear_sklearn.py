#!/usr/bin/python3
"""linear_sklearn.py — data and the scikit-learn reference for tests/jobs/linear_test.sh.

  gen-dense PREFIX ROWS FEATURES SEED   PREFIX.train.csv, PREFIX.test.csv (label first)
  gen-sparse PREFIX ROWS FEATURES NNZ SEED   PREFIX.train.svm, PREFIX.test.svm
  check TRAIN TEST FEATURES LAMBDA MODEL_JSON RESULT_OBJECTIVE RTOL
      fits LogisticRegression(solver="lbfgs", C=1/(lambda n)) on TRAIN, and
      checks that the model's objective (recomputed here from its JSON
      weights, and as the trainer reported it) is within RTOL relative of
      scikit-learn's, and that test accuracy differs by at most one row.

Values are written as float32 (%.9g round-trips), and read back as float32,
so rally (which stores float32) and scikit-learn see the same numbers.
"""
import json
import sys

import numpy as np


def write_csv(path, y, X):
    with open(path, "w") as f:
        for yi, row in zip(y, X):
            f.write("%d," % yi + ",".join("%.9g" % v for v in row) + "\n")


def write_svm(path, y, rows):
    with open(path, "w") as f:
        for yi, (idx, val) in zip(y, rows):
            f.write("%d " % yi + " ".join("%d:%.9g" % (i + 1, v) for i, v in zip(idx, val)) + "\n")


def gen_dense(prefix, rows, d, seed):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    for part, n in (("train", rows), ("test", rows // 4)):
        X = (rng.normal(size=(n, d)) * 2.0).astype(np.float32)
        p = 1 / (1 + np.exp(-(X.astype(np.float64) @ w * 0.5 + 0.3)))
        y = (rng.random(n) < p).astype(int)
        write_csv("%s.%s.csv" % (prefix, part), y, X)


def gen_sparse(prefix, rows, d, nnz, seed):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d) * 3
    for part, n in (("train", rows), ("test", rows // 4)):
        data, y = [], []
        for _ in range(n):
            idx = np.unique(rng.integers(0, d, nnz))
            val = rng.random(len(idx)).astype(np.float32)
            z = float(val.astype(np.float64) @ w[idx])
            y.append(1 if rng.random() < 1 / (1 + np.exp(-z)) else -1)
            data.append((idx, val))
        if part == "train":  # the last feature appears, so every reader infers d
            data[-1] = (np.append(data[-1][0][data[-1][0] < d - 1], d - 1),
                        np.append(data[-1][1][data[-1][0] < d - 1], np.float32(0.5)))
        write_svm("%s.%s.svm" % (prefix, part), y, data)


def load(path, d):
    if path.endswith(".svm"):
        from sklearn.datasets import load_svmlight_file
        X, y = load_svmlight_file(path, n_features=d, dtype=np.float32)
        return X.astype(np.float64), (y > 0).astype(int)
    a = np.loadtxt(path, delimiter=",", dtype=np.float32)
    return a[:, 1:].astype(np.float64), (a[:, 0] > 0).astype(int)


def objective(X, y, w, b, lam):
    z = X @ w + b
    m = np.where(y > 0, z, -z)
    return np.mean(np.logaddexp(0, -m)) + 0.5 * lam * float(w @ w)


def check(train, test, d, lam, model_json, reported, rtol):
    from sklearn.linear_model import LogisticRegression
    X, y = load(train, d)
    Xt, yt = load(test, d)
    n = X.shape[0]
    sk = LogisticRegression(solver="lbfgs", C=1.0 / (lam * n), tol=1e-12, max_iter=100000)
    sk.fit(X, y)
    f_sk = objective(X, y, sk.coef_[0], sk.intercept_[0], lam)
    m = json.load(open(model_json))
    w, b = np.array(m["weights"], dtype=np.float64), m["bias"]
    assert len(w) == d, (len(w), d)
    f_ours = objective(X, y, w, b, lam)
    acc_sk = int(np.sum(sk.predict(Xt) == yt))
    acc_ours = int(np.sum(((Xt @ w + b) > 0).astype(int) == yt))
    print("scikit-learn objective %.17g, ours %.17g (reported %.17g), relative %.3g"
          % (f_sk, f_ours, reported, abs(f_ours - f_sk) / abs(f_sk)))
    print("test accuracy: scikit-learn %d/%d, ours %d/%d" % (acc_sk, len(yt), acc_ours, len(yt)))
    ok = abs(f_ours - f_sk) <= rtol * abs(f_sk) and abs(reported - f_sk) <= rtol * abs(f_sk)
    ok = ok and abs(acc_sk - acc_ours) <= 1
    return 0 if ok else 1


if __name__ == "__main__":
    a = sys.argv
    if a[1] == "gen-dense":
        gen_dense(a[2], int(a[3]), int(a[4]), int(a[5]))
    elif a[1] == "gen-sparse":
        gen_sparse(a[2], int(a[3]), int(a[4]), int(a[5]), int(a[6]))
    elif a[1] == "check":
        sys.exit(check(a[2], a[3], int(a[4]), float(a[5]), a[6], float(a[7]), float(a[8])))
    else:
        sys.exit("unknown command " + a[1])
