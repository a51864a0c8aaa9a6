"""cursor_torch.py COUNT BATCH EPOCHS [--gate STEP FILE] [--forget] [--pause-ms MS] —
minibatch SGD through rally.torch.CursorSampler and a DataLoader with two
worker processes.  Each sample is (id, x, y); the training loop tallies the
ids of the batches the DataLoader hands it (a count and rally.data.ids_digest,
summed over the ranks), checkpoints the tally with the model, the optimizer
and the sampler's state every step, and rank 0 prints at each epoch's end
"epoch E: consumed N samples, ids digest HEX".  A restarted or renumbered
rank says "rank R restarted: resuming after step S at epoch E position P".
--gate: rank 0 waits before step STEP until FILE exists; --forget: the
sampler's state is not loaded (the tests' negative control)."""
import argparse
import os
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

import rally
import rally.torch as rt
from rally.data import ids_digest


class Ids(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 4, generator=g)
        self.y = (self.x.sum(dim=1, keepdim=True) > 0).float()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return i, self.x[i], self.y[i]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("count", type=int)
    ap.add_argument("batch", type=int)
    ap.add_argument("epochs", type=int)
    ap.add_argument("--gate", nargs=2)
    ap.add_argument("--forget", action="store_true")
    ap.add_argument("--pause-ms", type=int, default=0)
    args, _ = ap.parse_known_args()  # rally_key=value arguments are rally.init's
    torch.set_num_threads(1)
    torch.manual_seed(0)
    data = Ids(args.count)
    with rally.init() as r:
        r.set_app("cursor_torch", "%d %d %d" % (args.count, args.batch, args.epochs))
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        sampler = rt.CursorSampler(args.count, args.batch, seed=7)
        loader = DataLoader(data, batch_sampler=sampler, num_workers=2)
        while True:
            try:
                step, extra = rt.load_checkpoint(model, opt, with_extra=True)
                tally = [0, 0]
                if extra is not None:
                    if not args.forget:
                        sampler.load_state_dict(extra["sampler"])
                    tally = list(extra["tally"])
                    print("rank %d restarted: resuming after step %d at epoch %d position %d"
                          % (r.rank(), step, sampler.epoch + 1, sampler.cursor.position),
                          flush=True)
                grads = rt.GradientBuckets(model.parameters())
                while sampler.epoch < args.epochs:
                    epoch = sampler.epoch
                    if args.gate and r.rank() == 0 and step == int(args.gate[0]):
                        print("at the gate before step %d" % step, flush=True)
                        end = time.monotonic() + 300
                        while not os.path.exists(args.gate[1]) and time.monotonic() < end:
                            time.sleep(0.01)
                    for ids, x, y in sampler.steps(loader):
                        time.sleep(args.pause_ms / 1000)
                        opt.zero_grad()
                        torch.nn.functional.binary_cross_entropy_with_logits(
                            model(x), y, reduction="sum").backward()
                        grads.allreduce_()
                        took = np.array([len(ids), ids_digest(ids.numpy())], np.uint64)
                        r.allreduce(took, rally.SUM)
                        opt.step()
                        step += 1
                        tally = [(tally[0] + int(took[0])) & (2**64 - 1),
                                 (tally[1] + int(took[1])) & (2**64 - 1)]
                        if sampler.epoch != epoch:
                            if r.rank() == 0:
                                print("epoch %d: consumed %d samples, ids digest %016x"
                                      % (epoch + 1, tally[0], tally[1]), flush=True)
                            tally = [0, 0]
                        rt.checkpoint(model, opt, step,
                                      extra={"sampler": sampler.state_dict(), "tally": tally})
                        if args.gate and step == int(args.gate[0]):
                            break  # to the gate: the next iteration goes on mid-epoch
                break
            except rally.Resized:
                continue
        if r.rank() == 0:
            print("done after step %d" % step, flush=True)


if __name__ == "__main__":
    main()
