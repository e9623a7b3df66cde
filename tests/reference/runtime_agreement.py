#!/usr/bin/env python3
"""Two `fixres predict --output-type logit --topk C --results-format json` outputs of one model on
the same images, run by two runtimes (LibTorch and OpenVINO) or precisions, agree: the same paths,
and logits whose relative L2 error (over every image and class) is at most --bound. Prints the
error and the top-1 agreement.

With --or-as-far-as THIRD (LibTorch's own bf16 autocast of the same model), the bound is the larger
of B and 1.5 times THIRD's error against REFERENCE: a lower precision may lose what the model loses
at that precision anyway, no more.

Usage: runtime_agreement.py REFERENCE OTHER --bound B [--or-as-far-as THIRD]
"""
import argparse
import json
import sys

import numpy as np


def logits(path):
    rows = json.load(open(path, encoding="utf-8"))
    paths = [r["path"] for r in rows]
    values = np.array([[p["logit"] for p in sorted(r["predictions"], key=lambda p: p["index"])]
                       for r in rows], dtype=np.float64)
    return paths, values


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("other")
    ap.add_argument("--bound", type=float, required=True)
    ap.add_argument("--or-as-far-as")
    a = ap.parse_args()
    pa, ref = logits(a.reference)
    pb, other = logits(a.other)
    if pa != pb or ref.shape != other.shape or ref.size == 0:
        sys.exit(f"not the same images or classes: {len(pa)} x {ref.shape} against {len(pb)} x {other.shape}")

    def error(x):
        return float(np.linalg.norm(x - ref) / max(np.linalg.norm(ref), 1e-12))
    err, bound, note = error(other), a.bound, ""
    if a.or_as_far_as:
        pc, third = logits(a.or_as_far_as)
        if pc != pa or third.shape != ref.shape:
            sys.exit(f"{a.or_as_far_as} holds other images or classes")
        bound = max(bound, 1.5 * error(third))
        note = f"; {a.or_as_far_as.rsplit('/', 1)[-1]}: {error(third):.3g}"
    agree = float(np.mean(ref.argmax(1) == other.argmax(1)))
    print(f"{len(pa)} images, {ref.shape[1]} classes: relative L2 error {err:.3g} (bound {bound:.3g}"
          f"{note}), top-1 agreement {100 * agree:.1f} %")
    if not err <= bound:
        sys.exit(f"relative L2 error {err:.3g} over the bound {bound:.3g}")


if __name__ == "__main__":
    main()
