#!/usr/bin/env python3
"""Correctness checks for bench/gpu/run.sh, comparing fixres outputs with references in Python.

  check.py weights OUT.pth NUM_CLASSES
      torchvision ResNet-50 with random weights (seed 0) saved as a state dict.
  check.py logits CPU_DIR GPU_DIR ARCH
      logits written by `fixres extract` on the CPU in fp32 and on the GPU (bf16, channels-last)
      for the same weights and images: relative L2 error < 0.05, same top-1 on >= 85% of images (random weights: many near ties).
  check.py finetune BEFORE.pth AFTER_CHECKPOINT.pth
      a FixRes fine-tuning run changed the classifier and the last BatchNorm's running
      statistics, and nothing else (every other tensor bitwise equal).
  check.py graph BEFORE.pth EAGER_CHECKPOINT.pth GRAPH_CHECKPOINT.pth
      the same fine-tuning with the step eager and captured as a CUDA graph: the classifier's
      change (after - before) agrees within the bf16 tolerance of `logits` (relative L2 < 0.05),
      and the last BatchNorm's statistics too.
Each check prints one line and exits 1 when it fails.
"""
import sys
import numpy as np
import torch


def weights(out, num_classes):
    import torchvision
    torch.manual_seed(0)
    m = torchvision.models.resnet50(num_classes=int(num_classes))
    # A few steps of BatchNorm statistics on random data, so that eval mode is not degenerate.
    m.train()
    with torch.no_grad():
        for _ in range(3):
            m(torch.randn(8, 3, 128, 128))
    torch.save(m.state_dict(), out)
    print(f"weights: wrote {out}")


def logits(cpu_dir, gpu_dir, arch):
    a = np.load(f"{cpu_dir}/{arch}_logits.npy").astype(np.float64)
    b = np.load(f"{gpu_dir}/{arch}_logits.npy").astype(np.float64)
    la, lb = np.load(f"{cpu_dir}/labels.npy"), np.load(f"{gpu_dir}/labels.npy")
    if a.shape != b.shape or not np.array_equal(la, lb):
        print(f"logits: FAIL shapes {a.shape} vs {b.shape} or labels differ")
        sys.exit(1)
    rel = np.linalg.norm(a - b) / np.linalg.norm(a)
    agree = float(np.mean(a.argmax(1) == b.argmax(1)))
    ok = rel < 0.05 and agree >= 0.85
    print(f"logits: GPU bf16 channels-last vs CPU fp32 on {a.shape[0]} images: relative L2 "
          f"{rel:.4f} (< 0.05), top-1 agreement {agree:.3f} (>= 0.85): {'ok' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


def finetune(before, after):
    sd0 = torch.load(before, map_location="cpu")
    sd1 = torch.load(after, map_location="cpu")["model"]
    allowed = {"fc.weight", "fc.bias", "layer4.2.bn3.running_mean", "layer4.2.bn3.running_var",
               "layer4.2.bn3.num_batches_tracked"}
    changed = sorted(k for k in sd0 if not torch.equal(sd0[k].float(), sd1[k].float()))
    bad = [k for k in changed if k not in allowed]
    ok = not bad and "fc.weight" in changed and "layer4.2.bn3.running_mean" in changed
    print(f"finetune: changed {changed}; outside the classifier and last BatchNorm: {bad}: "
          f"{'ok' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


def graph(before, eager, captured):
    sd0 = torch.load(before, map_location="cpu")
    a = torch.load(eager, map_location="cpu")["model"]
    b = torch.load(captured, map_location="cpu")["model"]
    worst = {}
    for k in ("fc.weight", "fc.bias", "layer4.2.bn3.running_mean", "layer4.2.bn3.running_var"):
        da, db = a[k].double() - sd0[k].double(), b[k].double() - sd0[k].double()
        worst[k] = float((da - db).norm() / da.norm().clamp_min(1e-12))
    ok = all(v < 0.05 for v in worst.values())
    print("graph: captured vs eager fine-tuning, relative L2 of each change: " +
          ", ".join(f"{k} {v:.4f}" for k, v in worst.items()) + f" (< 0.05): {'ok' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    {"weights": weights, "logits": logits, "finetune": finetune,
     "graph": graph}[sys.argv[1]](*sys.argv[2:])
