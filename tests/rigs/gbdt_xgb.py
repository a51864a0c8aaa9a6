#!/usr/bin/env python3
"""gbdt_xgb.py — test data and the XGBoost reference for rally-gbdt.

  gen PREFIX ROWS FEATURES SEED MISSING OBJ
      writes PREFIX.train.csv and PREFIX.test.csv (label first, no header;
      an empty field is a missing value, a fraction MISSING of them);
      OBJ is binary:logistic (labels 0/1) or reg:squarederror
  check PREFIX MODEL.json PRED_TEST NTHREAD
      trains xgboost.train(tree_method="hist") with the parameters stored in
      rally-gbdt's MODEL.json on PREFIX.train.csv, and checks on
      PREFIX.test.csv that rally-gbdt's predictions (PRED_TEST, one a line)
      have the same number of trees and test log loss and AUC (logistic) or
      RMSE (squared error) within 1 % relative of XGBoost's.
  time DATA.csv NTHREAD TREES MAX_DEPTH MAX_BIN
      (bench/gbdt.sh) xgboost.train's seconds per tree on DATA.csv (label
      first), each tree with its train-logloss evaluation (what
      xgboost.train(evals=[(dtrain, "train")]) does and rally-gbdt's
      progress line shows): the median over trees 2.. (the first also builds the
      quantile cuts), printed as "xgboost NTHREAD SECONDS"; the parsed
      DMatrix is kept beside DATA.csv (DATA.csv.xgb-dmatrix) for later runs
"""
import json
import math
import sys

import numpy as np


def gen(prefix, rows, features, seed, missing, obj):
    rng = np.random.default_rng(seed)
    for part, n in (("train", rows), ("test", rows // 2)):
        x = rng.normal(size=(n, features))
        f = 1.5 * x[:, 0] - x[:, 1] + 0.8 * x[:, 2] * x[:, 3] + np.sin(2 * x[:, 4])
        f += 0.5 * (x[:, 5] > 0.3)
        if obj == "binary:logistic":
            y = (rng.random(n) < 1 / (1 + np.exp(-f))).astype(int)
            ys = [str(v) for v in y]
        else:
            y = f + 0.3 * rng.normal(size=n)
            ys = ["%.6g" % v for v in y]
        hole = rng.random(size=(n, features)) < missing
        with open("%s.%s.csv" % (prefix, part), "w") as out:
            for i in range(n):
                fields = ["" if hole[i, k] else "%.6g" % x[i, k] for k in range(features)]
                out.write(ys[i] + "," + ",".join(fields) + "\n")


def load(path):
    a = np.genfromtxt(path, delimiter=",", missing_values="", filling_values=np.nan)
    return a[:, 1:], a[:, 0]


def auc(y, p):
    order = np.argsort(p, kind="mergesort")
    ranks = np.empty(len(p))
    sp = p[order]
    i = 0
    while i < len(sp):  # average ranks of ties
        k = i
        while k + 1 < len(sp) and sp[k + 1] == sp[i]:
            k += 1
        ranks[order[i:k + 1]] = (i + k) / 2 + 1
        i = k + 1
    pos = y == 1
    npos, nneg = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - npos * (npos + 1) / 2) / (npos * nneg)


def logloss(y, p):
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def close(name, ours, ref, tol=0.01):
    rel = abs(ours - ref) / abs(ref)
    print("%s: rally-gbdt %.6f xgboost %.6f relative difference %.4f" % (name, ours, ref, rel))
    return rel <= tol


def check(prefix, model_path, pred_path, nthread):
    import xgboost as xgb

    m = json.load(open(model_path))
    p = m["params"]
    xtr, ytr = load(prefix + ".train.csv")
    xte, yte = load(prefix + ".test.csv")
    params = {
        "tree_method": "hist",
        "objective": m["objective"],
        "max_depth": p["max_depth"],
        "eta": p["eta"],
        "lambda": p["lambda"],
        "gamma": p["gamma"],
        "min_child_weight": p["min_child_weight"],
        "max_bin": p["max_bin"],
        "base_score": p["base_score"],
        "nthread": nthread,
        "alpha": 0,
    }
    dtr = xgb.DMatrix(xtr, label=ytr, missing=np.nan)
    dte = xgb.DMatrix(xte, label=yte, missing=np.nan)
    bst = xgb.train(params, dtr, num_boost_round=m["num_trees"])
    ref = bst.predict(dte)
    ours = np.loadtxt(pred_path)
    ok = len(ours) == len(yte)
    ntrees = len(bst.get_dump())
    print("trees: rally-gbdt %d xgboost %d" % (len(m["trees"]), ntrees))
    ok = ok and len(m["trees"]) == ntrees == m["num_trees"]
    if m["objective"] == "binary:logistic":
        ok = close("test log loss", logloss(yte, ours), logloss(yte, ref)) and ok
        ok = close("test AUC", auc(yte, ours), auc(yte, ref)) and ok
    else:
        rmse = lambda q: math.sqrt(float(np.mean((q - yte) ** 2)))
        ok = close("test RMSE", rmse(ours), rmse(ref)) and ok
    return 0 if ok else 1


def time_trees(path, nthread, trees, depth, max_bin):
    import time

    import xgboost as xgb

    import os

    cache = path + ".xgb-dmatrix"  # parsed once, reused by later runs
    if os.path.exists(cache):
        d = xgb.DMatrix(cache, nthread=nthread)
    else:
        d = xgb.DMatrix(path + "?format=csv&label_column=0", nthread=nthread)
        d.save_binary(cache + ".tmp", silent=True)
        os.replace(cache + ".tmp", cache)
    params = {"tree_method": "hist", "objective": "binary:logistic", "max_depth": depth,
              "max_bin": max_bin, "eta": 0.3, "base_score": 0.5, "nthread": nthread}
    bst = xgb.Booster(params, [d])
    ts = []
    for i in range(trees):
        t0 = time.perf_counter()
        bst.update(d, i)
        bst.eval_set([(d, "train")], i)  # the train loss rally-gbdt prints per tree
        ts.append(time.perf_counter() - t0)
    rest = sorted(ts[1:]) or ts
    print("xgboost %d %.4f" % (nthread, rest[len(rest) // 2]))
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
            float(sys.argv[6]), sys.argv[7])
        sys.exit(0)
    if sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))
    if sys.argv[1] == "time":
        sys.exit(time_trees(sys.argv[2], *[int(a) for a in sys.argv[3:7]]))
    sys.exit("usage: gbdt_xgb.py gen|check|time ...")
