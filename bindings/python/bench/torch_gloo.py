"""torch_gloo.py — bindings/python/examples/torch_mlp.py's training with
torch.distributed's Gloo backend instead of rally (bench/torch.sh): the same
model, batches, optimizer and thread count; DistributedDataParallel averages
the gradients (its buckets), no checkpoints (Gloo has none to take).  Started
N times with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set; rank 0
prints "time per step S s"."""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from torch_mlp import HIDDEN, batch, mlp  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=HIDDEN)
    a = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = mlp(a.hidden)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.MSELoss()
    t0 = time.perf_counter()
    for step in range(a.steps):
        x, y = batch(rank, step, a.batch)
        loss = loss_fn(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    took = time.perf_counter() - t0
    if rank == 0:
        print("time per step %.6f s" % (took / a.steps), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
