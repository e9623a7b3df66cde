#!/usr/bin/python3
"""Prints what a CSV list of `path,label` rows names, read with Python's csv module (JSON:
classes = the sorted distinct labels, as torchvision's ImageFolder sorts its class folders;
samples as [path, class index] in file order, each path joined to the CSV's folder as
os.path.join does; unlabelled = every row's path). A UTF-8 byte-order mark, blank rows and a
first row `path,label` are skipped.

Usage: csv_list.py LIST.csv
"""
import csv, json, os, sys

path = sys.argv[1]
with open(path, newline="", encoding="utf-8-sig") as f:
    rows = [r for r in csv.reader(f) if r]
if rows and rows[0] == ["path", "label"]:
    rows = rows[1:]
base = os.path.dirname(path)
classes = sorted({label for _, label in rows})
index = {c: i for i, c in enumerate(classes)}
print(json.dumps({
    "classes": classes,
    "samples": [[os.path.join(base, p), index[label]] for p, label in rows],
    "unlabelled": [os.path.join(base, p) for p, _ in rows],
}))
