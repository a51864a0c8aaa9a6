"""torch_ft.py — bindings/python/examples/torch_mlp.py's training with torchft
(PyPI, CPU, Gloo; bench/torch.sh) instead of rally: the same model, batches,
optimizer and thread count; each process is a replica group of one, whose
torchft.Manager joins the quorum of a lighthouse (--lighthouse: started with
--serve-lighthouse), torchft's DistributedDataParallel averages the
gradients over the replicas and its Optimizer commits a step only when every
replica's did.  No checkpoint is taken: a replica that joins gets the
state_dict of a healthy one when it asks (torchft's HTTP transport).

    torch_ft.py --serve-lighthouse N FILE   # writes its address to FILE, serves until killed
    torch_ft.py --lighthouse ADDR --replica I [--steps S] [--hidden H] [--kill STEP]

--kill STEP: the replica's first start SIGKILLs itself before STEP, after
writing the wall clock of its death to $TORCH_FT_DIR/killed; a restarted
replica (its run again with the same arguments; TORCH_FT_DIR/started-I
tells it is a second start) writes "back S s" to its output when its
first step has committed: the wall clock from the kill.  Replica 0 prints
"time per step S s" over its steps.
"""
import argparse
import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from torch_mlp import HIDDEN, batch, mlp  # noqa: E402


def serve(n, path):
    from torchft.coordination import LighthouseServer

    lh = LighthouseServer(bind="127.0.0.1:0", min_replicas=n, join_timeout_ms=100)
    with open(path + ".tmp", "w") as f:  # its address names the host: loopback, as bound
        f.write("http://127.0.0.1:%s" % lh.address().rsplit(":", 1)[1])
    os.rename(path + ".tmp", path)
    signal.pause()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--serve-lighthouse", nargs=2, metavar=("N", "FILE"))
    ap.add_argument("--lighthouse")
    ap.add_argument("--replica", type=int, default=0)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=HIDDEN)
    ap.add_argument("--kill", type=int, default=-1)
    a = ap.parse_args()
    if a.serve_lighthouse:
        return serve(int(a.serve_lighthouse[0]), a.serve_lighthouse[1])
    from torchft import DistributedDataParallel, Manager, Optimizer, ProcessGroupGloo

    torch.set_num_threads(1)
    mark = os.path.join(os.environ.get("TORCH_FT_DIR", "."), "started-%d" % a.replica)
    again = os.path.exists(mark)
    open(mark, "w").close()
    store = dist.TCPStore("127.0.0.1", 0, 1, True, wait_for_workers=False)
    torch.manual_seed(0)
    model = mlp(a.hidden)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    manager = Manager(
        pg=ProcessGroupGloo(), min_replica_size=1, rank=0, world_size=1,
        load_state_dict=lambda s: (model.load_state_dict(s["model"]), opt.load_state_dict(s["opt"])),
        state_dict=lambda: {"model": model.state_dict(), "opt": opt.state_dict()},
        store_addr="127.0.0.1", store_port=store.port, lighthouse_addr=a.lighthouse,
        replica_id="replica%d" % a.replica, hostname="127.0.0.1", timeout=timedelta(seconds=30),
        quorum_timeout=timedelta(seconds=600))  # a loaded machine may take minutes to import torch
    ddp = DistributedDataParallel(manager, model)
    ftopt = Optimizer(manager, opt)
    loss_fn = torch.nn.MSELoss()
    t0, first = None, manager.current_step()
    while manager.current_step() < a.steps:
        step = manager.current_step()
        if step == a.kill and not again:
            with open(os.path.join(os.environ.get("TORCH_FT_DIR", "."), "killed"), "w") as f:
                f.write("%.6f\n" % time.time())
            os.kill(os.getpid(), signal.SIGKILL)
        if t0 is None and step > first:
            t0, first = time.perf_counter(), step  # from the first committed step on
            if again:
                with open(os.path.join(os.environ.get("TORCH_FT_DIR", "."), "killed")) as f:
                    print("back %.6f s" % (time.time() - float(f.read())), flush=True)
        x, y = batch(a.replica, step, a.batch)
        ftopt.zero_grad()
        loss_fn(ddp(x), y).backward()
        ftopt.step()
    if a.replica == 0 and t0 is not None:
        print("time per step %.6f s" % ((time.perf_counter() - t0) / max(1, a.steps - first)),
              flush=True)
    manager.shutdown()


if __name__ == "__main__":
    main()
