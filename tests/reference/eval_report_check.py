#!/usr/bin/python3
"""Checks what `fixres eval --report DIR` wrote against numpy/torch computations on the logits
`fixres extract` wrote for the same images at the same size (labels.npy, <arch>_logits.npy).

Usage: eval_report_check.py REPORT_DIR NPY_DIR ARCH [HELD_OUT_NPY_DIR]

- per_class.csv: images, top-1 and top-5 per class (torch.topk, as torchvision's references
  count them), images predicted as each class, precision, the most frequent wrong class;
- confusion.csv: numpy's bincount of (true, top-1); confusions.csv: every non-zero off-diagonal
  cell, most images first (ties by true then predicted class);
- reliability.csv and report.json's ece: Guo et al.'s 15 equal-width confidence bins
  (lower < confidence <= upper) of the float64 softmax;
- with HELD_OUT_NPY_DIR: the temperature minimising the held-out cross-entropy, found here by
  torch.optim.LBFGS on log T, and the scaled bins;
- confusion.svg and reliability.svg parse as XML; the heat map has a cell per non-zero matrix
  entry whose tooltip gives its count.
Prints one summary line; exits 1 with the first difference."""
import csv
import json
import math
import os
import sys
import xml.etree.ElementTree as ET

import numpy as np
import torch

BINS = 15


def fail(msg):
    print("eval_report_check: " + msg, file=sys.stderr)
    sys.exit(1)


def close(a, b, tol, what):
    if not (abs(a - b) <= tol * max(1.0, abs(b))):
        fail(f"{what}: {a} vs reference {b}")


def load(npy, arch):
    logits = torch.from_numpy(np.load(os.path.join(npy, arch + "_logits.npy")))
    labels = torch.from_numpy(np.load(os.path.join(npy, "labels.npy"))).long()
    return logits, labels


def bins_of(logits, labels, temperature):
    probs = torch.softmax(logits.double() / temperature, 1)
    conf = probs.max(1).values.numpy()
    right = (logits.topk(1, 1).indices[:, 0] == labels).numpy()
    out, ece = [], 0.0
    for b in range(BINS):
        lo, hi = b / BINS, (b + 1) / BINS
        m = (conf > lo) & (conf <= hi)
        n = int(m.sum())
        c = float(conf[m].mean()) if n else 0.0
        a = float(right[m].mean()) if n else 0.0
        out.append((lo, hi, n, c, a))
        ece += abs(a - c) * n / len(conf)
    return out, ece


def fit_temperature(logits, labels):
    u = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([u], lr=0.5, max_iter=500, tolerance_grad=1e-12,
                            tolerance_change=1e-15, line_search_fn="strong_wolfe")
    l = logits.double()

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(l / u.exp(), labels)
        loss.backward()
        return loss

    opt.step(closure)
    return math.exp(u.item())


def main():
    report, npy, arch = sys.argv[1:4]
    held = sys.argv[4] if len(sys.argv) > 4 else None
    logits, labels = load(npy, arch)
    n, C = logits.shape
    k = min(5, C)
    top = logits.topk(k, 1).indices
    pred = top[:, 0].numpy()
    y = labels.numpy()
    in_top5 = (top == labels.view(-1, 1)).any(1).numpy()
    confusion = np.bincount(y * C + pred, minlength=C * C).reshape(C, C)

    doc = json.load(open(os.path.join(report, "report.json")))
    if doc["images"] != n or doc["classes"] != C:
        fail(f"report.json: {doc['images']} images / {doc['classes']} classes, expected {n} / {C}")
    close(doc["top1"], 100.0 * (pred == y).mean(), 1e-11, "top1")
    close(doc["top5"], 100.0 * in_top5.mean(), 1e-11, "top5")
    close(doc["loss"], torch.nn.functional.cross_entropy(logits.double(), labels).item(), 1e-9,
          "loss")

    rows = list(csv.DictReader(open(os.path.join(report, "per_class.csv"), newline="")))
    if len(rows) != C:
        fail(f"per_class.csv has {len(rows)} rows for {C} classes")
    for c, row in enumerate(rows):
        m = y == c
        images = int(m.sum())
        if int(row["class"]) != c or int(row["images"]) != images:
            fail(f"per_class.csv row {c}: {row}")
        if images:
            close(float(row["top1"]), 100.0 * (pred[m] == c).sum() / images, 1e-12, f"top1 of {c}")
            close(float(row["top5"]), 100.0 * in_top5[m].sum() / images, 1e-12, f"top5 of {c}")
        predicted = int((pred == c).sum())
        if int(row["predicted"]) != predicted:
            fail(f"class {c} predicted {row['predicted']} times, reference {predicted}")
        if predicted:
            close(float(row["precision"]), 100.0 * confusion[c, c] / predicted, 1e-12,
                  f"precision of {c}")
        off = confusion[c].copy()
        off[c] = 0
        if off.max() > 0:
            if int(row["most_confused_with"]) != int(off.argmax()) or \
                    int(row["confused_images"]) != int(off.max()):
                fail(f"class {c}: most confused with {row['most_confused_with']} "
                     f"({row['confused_images']}), reference {off.argmax()} ({off.max()})")
        elif row["most_confused_with"] != "":
            fail(f"class {c} has no confusion, the report says {row['most_confused_with']}")

    with open(os.path.join(report, "confusion.csv"), newline="") as f:
        table = list(csv.reader(f))
    got = np.array([[int(v) for v in r[1:]] for r in table[1:]])
    if got.shape != (C, C) or not (got == confusion).all():
        fail("confusion.csv differs from the reference matrix")
    pairs = [(int(confusion[a, b]), a, b) for a in range(C) for b in range(C)
             if a != b and confusion[a, b] > 0]
    pairs.sort(key=lambda p: (-p[0], p[1], p[2]))
    listed = list(csv.DictReader(open(os.path.join(report, "confusions.csv"), newline="")))
    if [(int(r["images"]), int(r["true"]), int(r["predicted"])) for r in listed] != pairs:
        fail("confusions.csv differs from the reference pairs")

    rel = list(csv.DictReader(open(os.path.join(report, "reliability.csv"), newline="")))
    ref, ece = bins_of(logits, labels, 1.0)
    # report.json holds 12 significant digits (a relative rounding of up to 5e-12), float64 below.
    close(doc["ece"], 100 * ece, 1e-11, "ece (percent)")
    for b, (lo, hi, cnt, c, a) in enumerate(ref):
        r = rel[b]
        if float(r["temperature"]) != 1.0 or int(r["images"]) != cnt:
            fail(f"reliability bin {b}: {r}, reference {cnt} images")
        close(float(r["confidence"]), c, 1e-12, f"confidence of bin {b}")
        close(float(r["accuracy"]), a, 1e-12, f"accuracy of bin {b}")

    note = ""
    if held:
        hl, hy = load(held, arch)
        t_ref = fit_temperature(hl, hy)
        t = doc["temperature"]["value"]
        close(t, t_ref, 1e-4, "temperature")
        lt = torch.nn.functional.cross_entropy(hl.double() / t, hy).item()
        lr = torch.nn.functional.cross_entropy(hl.double() / t_ref, hy).item()
        if lt > lr + 1e-9:
            fail(f"held-out loss at T={t}: {lt}, at LBFGS's T={t_ref}: {lr}")
        scaled, sece = bins_of(logits, labels, t)
        close(doc["temperature"]["ece"], 100 * sece, 1e-9, "scaled ece (percent)")
        for b, (lo, hi, cnt, c, a) in enumerate(scaled):
            if int(rel[BINS + b]["images"]) != cnt:
                fail(f"scaled reliability bin {b}: {rel[BINS + b]}, reference {cnt} images")
        note = f"; temperature {t:.6f} (LBFGS {t_ref:.6f}), ECE {ece:.4f} -> {sece:.4f}"

    svg = ET.parse(os.path.join(report, "confusion.svg")).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    cells = [e for e in svg.iter(ns + "rect") if e.get("class") == "cell"]
    if C <= 100:
        if len(cells) != int((confusion > 0).sum()):
            fail(f"{len(cells)} heat-map cells for {(confusion > 0).sum()} non-zero entries")
        counts = sorted(int(e.find(ns + "title").text.rsplit(": ", 1)[1].split(" ")[0])
                        for e in cells)
        if counts != sorted(int(v) for v in confusion[confusion > 0]):
            fail("the heat map's tooltips give other counts than the matrix")
    # reliability.svg: each non-empty bin of the reference labelled with its image count, the
    # bins under max(10, 1 % of the images) drawn hollow; the diagonal named for what it is.
    relsvg = ET.parse(os.path.join(report, "reliability.svg")).getroot()
    labels = [int(e.text) for e in relsvg.iter(ns + "text") if e.get("class") == "point-label"]
    sizes = [b[2] for b in ref if b[2] > 0]
    if labels != sizes:
        fail(f"reliability.svg's bin counts {labels}, the reference's non-empty bins hold {sizes}")
    hollow = sum(1 for e in relsvg.iter(ns + "circle") if e.get("class") == "weak")
    curves = [ref] + ([scaled] if held else [])
    want = sum(1 for bins in curves for b in bins if 0 < b[2] < max(10, n // 100))
    if hollow != want:
        fail(f"{hollow} hollow (small) bins in reliability.svg, expected {want}")
    if "calibrated" in ET.tostring(relsvg, encoding="unicode"):
        fail("reliability.svg labels the diagonal 'calibrated' (a word of fixres calibrate)")
    print(f"report of {n} images, {C} classes equal to the reference: top-1 {doc['top1']:.2f} %, "
          f"{len(pairs)} confused pairs, ECE {ece:.4f}{note}")


if __name__ == "__main__":
    main()
