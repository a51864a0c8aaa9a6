#!/usr/bin/env python3
"""torch_adam.py — a classifier trained the way a torchrun script trains it:
Adam, a one-cycle learning rate, a DataLoader with worker processes over a
DistributedSampler, the rank and world size from torchrun's variables.

    rally-run -n 4 python3 torch_adam.py [--epochs 4] [--batch 32]

Only the lines marked "rally" differ from the torchrun script: the
gradients are averaged by rally.torch, and each step ends with a
checkpoint, so a killed rank is restarted by rally-run, loads the state
from the survivors, skips the batches of the epoch it already trained on,
and the final weights are those of a run without failures.  Rank 0 prints
"epoch E step S loss L" every 20 steps and "digest HEX" of the weights.
"""
import argparse
import os

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import rally  # rally
import rally.torch as rt  # rally


def dataset(n=4096, features=20):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, features, generator=g)
    y = (x[:, :5].sum(dim=1) + 0.3 * torch.randn(n, generator=g) > 0).long()
    return TensorDataset(x, y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--lazy", action="store_true",
                    help="checkpoint by value, pickled only if a recovery asks")
    args = ap.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)

    with rally.init():  # rally
        model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(),
                                    torch.nn.Linear(64, 2))
        opt = torch.optim.Adam(model.parameters(), lr=args.lr)
        data = dataset()
        sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=0)
        loader = DataLoader(data, batch_size=args.batch, sampler=sampler, num_workers=2)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr,
                                                    total_steps=args.epochs * len(loader))
        step = rt.load_checkpoint(model, opt, sched)  # rally: 0, or where the job is
        grads = rt.GradientBuckets(model.parameters())  # rally

        for epoch in range(step // len(loader), args.epochs):
            sampler.set_epoch(epoch)
            for i, (x, y) in enumerate(loader):
                if epoch * len(loader) + i < step:
                    continue  # trained on before this process started
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                grads.allreduce_()  # rally: the mean over the ranks
                opt.step()
                sched.step()
                step += 1
                rt.checkpoint(model, opt, step, scheduler=sched, lazy=args.lazy)  # rally
                if rank == 0 and step % 20 == 0:
                    print("epoch %d step %d loss %.4f" % (epoch, step, loss.item()), flush=True)

        if rank == 0:
            w = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
            print("digest %016x" % rally.digest64(w), flush=True)


if __name__ == "__main__":
    main()
