#!/usr/bin/python3
"""Peer: PyTorch DistributedDataParallel (Gloo) training steps of a torchvision model on random
data, CPU. One rank of a job started by a torchrun-style launcher (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT: `fixres launch --nproc-per-node 2 -- /usr/bin/python3 ddp_train_peer.py ...`); without
those variables, one process without DDP. Rank 0 prints the images per second of all ranks
together (forward, loss, backward with DDP's overlapped bucketed all-reduce, SGD step). Runs on
whichever interpreter starts it (Debian's torch 1.13, or torch 2.x from .venv-torch2).
Usage: ddp_train_peer.py [--arch resnet18] [--size 64] [--batch 16] [--threads 1] [--steps 10]
"""
import argparse, os, time
import torch, torchvision
import torch.distributed as dist

ap = argparse.ArgumentParser()
ap.add_argument("--arch", default="resnet18"); ap.add_argument("--size", type=int, default=64)
ap.add_argument("--batch", type=int, default=16); ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--steps", type=int, default=10); ap.add_argument("--warmup", type=int, default=3)
ap.add_argument("--classes", type=int, default=1000)
a = ap.parse_args()
torch.set_num_threads(a.threads)
world = int(os.environ.get("WORLD_SIZE", "1"))
rank = int(os.environ.get("RANK", "0"))
torch.manual_seed(0)
m = getattr(torchvision.models, a.arch)(num_classes=a.classes)
if world > 1:
    dist.init_process_group("gloo", init_method="env://")
    m = torch.nn.parallel.DistributedDataParallel(m)
opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
torch.manual_seed(rank)
x = torch.randn(a.batch, 3, a.size, a.size); y = torch.randint(0, a.classes, (a.batch,))
crit = torch.nn.CrossEntropyLoss()
m.train()
def step():
    opt.zero_grad(set_to_none=True); crit(m(x), y).backward(); opt.step()
for _ in range(a.warmup): step()
if world > 1: dist.barrier()
t = time.perf_counter()
for _ in range(a.steps): step()
if world > 1: dist.barrier()
dt = time.perf_counter() - t
if rank == 0:
    print(f"peer pytorch {torch.__version__.split('+')[0]} {'DDP ' if world > 1 else ''}{a.arch} size={a.size} batch={a.batch} x {world} processes, threads={a.threads}: {a.steps * a.batch * world / dt:.2f} img/s")
if world > 1:
    dist.destroy_process_group()
