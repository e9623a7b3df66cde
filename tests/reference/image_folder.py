#!/usr/bin/python3
"""Writes a small image folder exercising torchvision ImageFolder's rules and prints what
torchvision 0.14's ImageFolder lists for it (JSON: classes, samples as [path, label]).

Usage: image_folder.py ROOT [--corrupt]   (--corrupt adds a truncated JPEG to class 'a')
Also with --idx DIR: writes DIR/{images,labels}(.gz) IDX files and prints their contents' summary.
"""
import gzip, json, os, struct, sys
import numpy as np
from PIL import Image
from torchvision.datasets import ImageFolder

root = sys.argv[1]
rng = np.random.default_rng(5)


def img(path, w=64, h=48, fmt=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    a = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    Image.fromarray(a).save(path, fmt)


# Class names sort by code point: "C" < "a" < "b"; nested folders, mixed-case extensions,
# non-image files ignored, and a file at the root (not a class).
for name in ["a/x2.jpg", "a/x10.JPG", "a/sub/deeper/z.png", "a/sub/y.jpeg", "b/img.PNG",
             "b/B.jpg", "C/only.jpg", "a/sub2/q.jpg"]:
    img(os.path.join(root, name), fmt="PNG" if name.lower().endswith("png") else "JPEG")
img(os.path.join(root, "b/portrait.jpg"), 40, 70, "JPEG")
for name in ["a/notes.txt", "b/archive.jpg.bak", "C/.hidden"]:
    open(os.path.join(root, name), "w").write("not an image")
open(os.path.join(root, "toplevel.jpg"), "wb").write(b"")
if "--corrupt" in sys.argv:
    data = open(os.path.join(root, "a/x2.jpg"), "rb").read()
    open(os.path.join(root, "a/x3_truncated.jpg"), "wb").write(data[: len(data) // 2])
ds = ImageFolder(root)
print(json.dumps({"classes": ds.classes, "samples": [[p, l] for p, l in ds.samples]}))
