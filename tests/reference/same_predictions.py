#!/usr/bin/env python3
"""Two `fixres predict` outputs (CSV, JSON or JSON lines, told apart by their first character and
file name) hold the same rows: the same paths in the same order, the same unreadable images with the
same error text, and the same predictions within a bound.

Usage: same_predictions.py A B [--prefix P] [--tol T]

Runs that differ in batch size, thread count, rank count or CPU sum the same float32 products in
another order (GEMM blocking, vector width), so their scores agree to about 1e-6 relative, not to
the last printed digit. The bound is T (default 1e-5) times max(1, |score|): a 10x margin over
what we see. Classes must come in the same order except where two neighbours' scores are within
the bound of each other (a near tie may swap them), and a class may fall off the end of the top-k
only when its score is within the bound of the last one kept. P is a prefix taken off A's paths
and error texts (a list file gives paths relative to it).
"""
import argparse
import csv
import json
import sys


def read_rows(path):
    text = open(path, encoding="utf-8").read()
    if text.lstrip().startswith("["):
        return json.loads(text)
    if text.lstrip().startswith("{"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    rows = []
    reader = csv.reader(text.splitlines())
    header = next(reader)
    k = (len(header) - 2) // 3
    key = "prob" if header[3].endswith("prob") else "logit"
    for r in reader:
        preds = []
        for i in range(k):
            index, name, score = r[1 + 3 * i:4 + 3 * i]
            if index != "":
                preds.append({"index": int(index), "class": name, key: float(score)})
        rows.append({"path": r[0], "predictions": preds, "error": r[-1] or None})
    return rows


def score(p):
    return p["prob"] if "prob" in p else p["logit"]


def close(a, b, tol):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def same_predictions(x, y, tol):
    """None when the two prediction lists agree within tol, else why not."""
    if len(x) != len(y):
        return f"{len(x)} vs {len(y)} predictions"
    sx = {p["index"]: score(p) for p in x}
    sy = {p["index"]: score(p) for p in y}
    names = {p["index"]: p["class"] for p in x + y}
    for p in x + y:
        if names[p["index"]] != p["class"]:
            return f"class {p['index']} is named {names[p['index']]} and {p['class']}"
    for i in set(sx) | set(sy):
        if i in sx and i in sy:
            if not close(sx[i], sy[i], tol):
                return f"class {i}: {sx[i]} vs {sy[i]}"
        else:  # only a near tie with the last class kept may push a class off the top-k
            last = min(sy.values()) if i in sx else min(sx.values())
            if not close(sx.get(i, sy.get(i)), last, tol):
                return f"class {i} is in one top-k only, with score {sx.get(i, sy.get(i))}"
    for a, b in zip(x, y):  # the order: a swap only between near ties
        if a["index"] != b["index"] and not close(score(a), score(b), tol):
            return f"order {[p['index'] for p in x]} vs {[p['index'] for p in y]}"
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--prefix", default="")
    parser.add_argument("--tol", type=float, default=1e-5)
    args = parser.parse_args()
    a, b = read_rows(args.a), read_rows(args.b)
    if len(a) != len(b):
        sys.exit(f"{len(a)} rows vs {len(b)}")
    worst = 0.0
    for x, y in zip(a, b):
        path = x["path"]
        if args.prefix and path.startswith(args.prefix):
            path = path[len(args.prefix):]
        if path != y["path"]:
            sys.exit(f"path {path} vs {y['path']}")
        ex = x["error"].replace(args.prefix, "") if args.prefix and x["error"] else x["error"]
        if ex != y["error"]:
            sys.exit(f"{path}: error {ex!r} vs {y['error']!r}")
        why = same_predictions(x["predictions"], y["predictions"], args.tol)
        if why:
            sys.exit(f"{path}: {why} (bound {args.tol} relative)")
        for p in x["predictions"]:
            q = [s for s in y["predictions"] if s["index"] == p["index"]]
            if q:
                worst = max(worst, abs(score(p) - score(q[0])))
    print(f"{len(a)} rows agree, largest score difference {worst:.2g}")


if __name__ == "__main__":
    main()
