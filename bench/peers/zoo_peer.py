#!/usr/bin/python3
"""Peer: timm (PyTorch, Python) on random data on the CPU, for the zoo's models.

train: forward + cross-entropy + backward + SGD step, model in train mode, with the drop rates
       fixres uses by default for the model (dropout and drop path as timm defines them).
eval:  forward only, eval mode, no gradients.
Prints images per second, to compare with `fixres bench train|eval` at the same model, size,
batch and thread count.
--oracles pypi: the installed timm (the pinned PyPI environment, torch 2.11); --compile: the model
through torch.compile (compiled before timing, by the warm-up steps).
Usage: zoo_peer.py --oracles DIR|pypi {train,eval} --arch NAME --size S --batch B --threads T
       --steps N [--drop-rate R --drop-path-rate P] [--compile]
"""
import argparse
import sys
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--oracles", required=True)
ap.add_argument("mode", choices=["train", "eval"])
ap.add_argument("--arch", default="tf_efficientnet_b0")
ap.add_argument("--size", type=int, default=224)
ap.add_argument("--batch", type=int, default=16)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--steps", type=int, default=5)
ap.add_argument("--drop-rate", type=float, default=0.0)
ap.add_argument("--drop-path-rate", type=float, default=0.0)
ap.add_argument("--compile", action="store_true")
ap.add_argument("--warmup", type=int, default=1)
a = ap.parse_args()
if a.oracles != "pypi":
    sys.path.insert(0, a.oracles)
import timm  # noqa: E402

torch.set_num_threads(a.threads)
torch.manual_seed(0)
extra = {"drop_path_rate": a.drop_path_rate} if a.drop_path_rate > 0 else {}
m = timm.create_model(a.arch, num_classes=1000, drop_rate=a.drop_rate, **extra)
run = torch.compile(m) if a.compile else m
x = torch.randn(a.batch, 3, a.size, a.size)
if a.mode == "train":
    m.train()
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    y = torch.randint(0, 1000, (a.batch,))
    crit = torch.nn.CrossEntropyLoss()

    def step():
        loss = crit(run(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
else:
    m.eval()

    def step():
        with torch.no_grad():
            run(x)
for _ in range(max(a.warmup, 2 if a.compile else 1)):
    step()
t = time.perf_counter()
for _ in range(a.steps):
    step()
dt = time.perf_counter() - t
print(f"peer timm {'compiled ' if a.compile else ''}{a.mode} {a.arch} size={a.size} batch={a.batch} threads={a.threads}: "
      f"{a.steps * a.batch / dt:.2f} img/s")
