#!/usr/bin/env python3
"""sgd_partial_fit.py — scikit-learn's SGDClassifier trained with
partial_fit on each rank's stream of minibatches, the coefficients averaged
over the ranks after every batch (model averaging), the estimator itself
checkpointed.

    rally-run -n 4 python3 sgd_partial_fit.py [--batches 200]

Rank 0 prints "batch B accuracy A" every 25 batches and "digest HEX" of
the final coefficients.
"""
import argparse

import numpy as np
from sklearn.linear_model import SGDClassifier

import rally

CLASSES = np.array([0, 1, 2])


def minibatch(rank, i, n=50, d=10):
    rng = np.random.default_rng([rank, i])
    x = rng.standard_normal((n, d))
    y = np.digitize(x[:, 0] + 0.5 * x[:, 1], [-0.5, 0.5])
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=200)
    args = ap.parse_args()

    with rally.init() as r:
        version, state = r.load_checkpoint()
        if state is None:
            state = {"clf": SGDClassifier(loss="log_loss", alpha=1e-4, random_state=0),
                     "batch": 0}
        clf = state["clf"]
        for i in range(state["batch"], args.batches):
            x, y = minibatch(r.rank(), i)
            clf.partial_fit(x, y, classes=CLASSES)
            r.allreduce(clf.coef_, rally.SUM)
            r.allreduce(clf.intercept_, rally.SUM)
            clf.coef_ /= r.world_size()
            clf.intercept_ /= r.world_size()
            r.checkpoint({"clf": clf, "batch": i + 1})
            if r.rank() == 0 and (i + 1) % 25 == 0:
                tx, ty = minibatch(99, i, n=500)
                print("batch %d accuracy %.3f" % (i + 1, clf.score(tx, ty)), flush=True)
        if r.rank() == 0:
            print("digest %016x" % rally.digest64(np.append(clf.coef_.ravel(), clf.intercept_)),
                  flush=True)


if __name__ == "__main__":
    main()
