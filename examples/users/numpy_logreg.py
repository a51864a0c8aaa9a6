#!/usr/bin/env python3
"""numpy_logreg.py — logistic regression with momentum in plain numpy, its
model a dict of arrays, as one writes it after reading rally's README.

    rally-run -n 4 python3 numpy_logreg.py [--epochs 30] [--batch 64]

Every rank makes the same data set and trains on its own quarter in
minibatches; the gradient is summed with one allreduce per batch and the
model, {"w", "b", "velocity", "epoch", "history"}, checkpointed after every
epoch.  Rank 0 prints "epoch E loss L" and "digest HEX" of the weights.
"""
import argparse

import numpy as np

import rally


def make_data(n=8000, d=32, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    y = (x @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n) > 0).astype(np.float64)
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.1)
    args = ap.parse_args()

    with rally.init() as r:
        x, y = make_data()
        x, y = np.array_split(x, r.world_size())[r.rank()], np.array_split(y, r.world_size())[r.rank()]
        n_total = r.allreduce(np.array([len(y)], dtype=np.int64), rally.SUM)[0]

        version, model = r.load_checkpoint()
        if model is None:
            d = x.shape[1]
            model = {"w": np.zeros(d), "b": 0.0, "velocity": np.zeros(d + 1), "epoch": 0,
                     "history": []}

        while model["epoch"] < args.epochs:
            w, b, vel = model["w"], model["b"], model["velocity"]
            rng = np.random.default_rng(1000 * model["epoch"] + r.rank())
            order = rng.permutation(len(y))
            total_loss = np.zeros(1)
            for start in range(0, len(order), args.batch):
                idx = order[start:start + args.batch]
                p = 1 / (1 + np.exp(-(x[idx] @ w + b)))
                g = np.append(x[idx].T @ (p - y[idx]), (p - y[idx]).sum())
                r.allreduce(g, rally.SUM)
                vel = 0.9 * vel + g / (r.world_size() * args.batch)
                w, b = w - args.lr * vel[:-1], b - args.lr * vel[-1]
                total_loss += -(y[idx] * np.log(p + 1e-12) + (1 - y[idx]) * np.log(1 - p + 1e-12)).sum()
            r.allreduce(total_loss, rally.SUM)
            loss = float(total_loss[0] / n_total)
            model = {"w": w, "b": b, "velocity": vel, "epoch": model["epoch"] + 1,
                     "history": model["history"] + [loss]}
            r.checkpoint(model)
            if r.rank() == 0:
                print("epoch %d loss %.5f" % (model["epoch"], loss), flush=True)

        if r.rank() == 0:
            print("digest %016x" % rally.digest64(np.append(model["w"], model["b"])), flush=True)


if __name__ == "__main__":
    main()
