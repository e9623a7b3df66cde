#!/usr/bin/python3
"""Top-1 classes, accuracies and confusion matrices of runs that differ in batch size, rank count,
normalisation code path, or fixres vs PyTorch, checked against per-image logits (a folder holding
labels.npy and ARCH_logits.npy, as `fixres extract` writes them) up to near ties.

Such runs sum the same float32 products in another order (GEMM blocking, vector width, threads,
LibTorch version), so their logits agree to about 1e-6 relative, not to the last bit; where an
image's two largest logits are that close its argmax, and so the top-1 and the confusion matrix,
may flip. An image is a near tie where another class's logit is within T of its largest, by the
rule of same_predictions.py's `close` (T times max(1, |either logit|); T 1e-4 by default: a 100x
margin over that noise, far below what a wrong preprocessing or model moves). Elsewhere the top-1
class must be the same.

  near_ties.py logits A_DIR B_DIR ARCH [--tol T]
      A and B hold the logits of the same images with the same labels: every logit within T of
      the other's, and B's top-1 is A's or a near tie of it.
  near_ties.py top1 NPY_DIR ARCH TOP1... [--tol T]
      each TOP1 (a percentage, as eval prints it with 3 decimals or more) is the top-1 of NPY_DIR's
      logits up to near ties: it counts a whole number of images, at least those surely right and
      at most those plus the near ties with their label among their tied classes.
  near_ties.py confusion NPY_DIR ARCH CONFUSION.csv [--tol T]
      a confusion.csv of `fixres eval --report` is NPY_DIR's matrix up to near ties: each cell
      holds at least the images surely in it and at most those plus the near ties that may be.
Prints one line; exits 1 with the first difference.
"""
import argparse
import csv
import os
import sys

import numpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from same_predictions import close  # noqa: E402


def load(folder, arch):
    logits = numpy.load(os.path.join(folder, arch + "_logits.npy")).astype(numpy.float64)
    labels = numpy.load(os.path.join(folder, "labels.npy")).astype(numpy.int64)
    assert logits.ndim == 2 and labels.shape == (logits.shape[0],), (logits.shape, labels.shape)
    return logits, labels


def tied(row, tol):
    """The classes whose logit is within tol of the row's largest (the argmax among them)."""
    top = row.max()
    return [c for c, v in enumerate(row) if close(v, top, tol)]


def fail(msg):
    sys.exit("near_ties: " + msg)


def check_logits(a_dir, b_dir, arch, tol):
    a, ya = load(a_dir, arch)
    b, yb = load(b_dir, arch)
    if a.shape != b.shape or not (ya == yb).all():
        fail(f"{a_dir} and {b_dir} hold other images: shapes {a.shape} {b.shape}, labels differ")
    worst, ties = 0.0, 0
    for i in range(a.shape[0]):
        for c in range(a.shape[1]):
            if not close(a[i, c], b[i, c], tol):
                fail(f"image {i} class {c}: logit {a[i, c]} vs {b[i, c]} (bound {tol} relative)")
            worst = max(worst, abs(a[i, c] - b[i, c]))
        near = tied(a[i], tol)
        if int(b[i].argmax()) not in near:
            fail(f"image {i}: top-1 {b[i].argmax()} vs {a[i].argmax()}, logits {b[i]} vs {a[i]}, "
                 f"not a near tie (bound {tol} relative)")
        ties += len(near) > 1
    print(f"{a.shape[0]} images: logits within {tol} relative (largest difference {worst:.2g}), "
          f"the same top-1 but for {ties} near ties")


def check_top1(folder, arch, values, tol):
    logits, labels = load(folder, arch)
    n = len(labels)
    near = [tied(row, tol) for row in logits]
    lo = sum(t == [y] for t, y in zip(near, labels))
    hi = sum(y in t for t, y in zip(near, labels))
    for v in values:
        right = round(float(v) * n / 100)
        if abs(float(v) - 100.0 * right / n) > 5e-4 + 1e-9:
            fail(f"top-1 {v} is no whole number of {n} images")
        if not lo <= right <= hi:
            fail(f"top-1 {v} ({right} of {n}); the logits give {lo}"
                 + (f" to {hi} (near ties)" if hi > lo else ""))
    ties = sum(len(t) > 1 for t in near)
    print(f"top-1 {' '.join(values)} of {n} images: the logits' {100.0 * lo / n:.3f}"
          + (f" to {100.0 * hi / n:.3f} ({ties} near ties)" if hi > lo else ""))


def check_confusion(folder, arch, path, tol):
    logits, labels = load(folder, arch)
    n, classes = logits.shape
    with open(path, newline="") as f:
        got = numpy.array([[int(v) for v in r[1:]] for r in list(csv.reader(f))[1:]])
    if got.shape != (classes, classes):
        fail(f"{path}: a {got.shape} matrix for {classes} classes")
    lo = numpy.zeros((classes, classes), numpy.int64)
    hi = numpy.zeros_like(lo)
    for row, y in zip(logits, labels):
        t = tied(row, tol)
        if len(t) == 1:
            lo[y, t[0]] += 1
        hi[y, t] += 1
    rows = numpy.bincount(labels, minlength=classes)
    if not (got.sum(1) == rows).all():
        fail(f"{path}: {got.sum(1).tolist()} images per class, the logits {rows.tolist()}")
    bad = numpy.argwhere((got < lo) | (got > hi))
    if len(bad):
        y, p = bad[0]
        fail(f"{path}: cell ({y}, {p}) holds {got[y, p]} images; the logits give {lo[y, p]}"
             + (f" to {hi[y, p]} (near ties)" if hi[y, p] > lo[y, p] else ""))
    ties = sum(len(tied(row, tol)) > 1 for row in logits)
    print(f"confusion matrix of {n} images equal to the logits' up to {ties} near ties")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("cmd", choices=["logits", "top1", "confusion"])
    parser.add_argument("args", nargs="+")
    parser.add_argument("--tol", type=float, default=1e-4)
    a = parser.parse_args()
    if a.cmd == "logits" and len(a.args) == 3:
        check_logits(*a.args, a.tol)
    elif a.cmd == "top1" and len(a.args) >= 3:
        check_top1(a.args[0], a.args[1], a.args[2:], a.tol)
    elif a.cmd == "confusion" and len(a.args) == 3:
        check_confusion(*a.args, a.tol)
    else:
        parser.error(f"wrong arguments for {a.cmd}")


if __name__ == "__main__":
    main()
