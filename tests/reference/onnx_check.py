#!/usr/bin/env python3
"""Checks of `fixres export --format onnx` models with ONNX Runtime (PyPI onnxruntime), by other
code than fixres's.

onnx_check.py MODEL PREDICTIONS [SIZE]
    Reads MODEL's metadata_props (fixres.preprocessing: input size, crop_pct, resize rule,
    interpolation, mean, std) and preprocesses every image of PREDICTIONS (the JSON of
    `fixres predict --output-type logit --topk C`) with PIL alone by that description: the
    resize (fixres: height := int(S / crop_pct), width := int(height * w / h); shorter: the
    shorter side := int(S / crop_pct), the other int(that * long / short)), torchvision's
    centre crop (zero padding where the resized side is shorter than S, as FixRes's height rule
    leaves portrait images), x / 255, (x - mean) / std, NCHW. SIZE (a dynamic-size model) replaces
    the input size. Runs the model in ONNX Runtime on the CPU, once with every image in one batch
    and once image by image, and compares the logits with fixres's: relative L2 error below 1e-4
    (prints it), batched equal to one by one within 1e-5 of max(1, the largest logit), and the
    input shape's batch axis symbolic. Exit 1 on a failure.
onnx_check.py --list FILE
    The same for each line "MODEL PREDICTIONS [SIZE]" of FILE, in one process (ONNX Runtime
    imported once): a line per model, each starting with the model's path; exit 1 when one fails.
"""
import json
import sys

import numpy as np
import onnxruntime as ort
from PIL import Image


def check(model, predictions, size_arg=None):
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    meta = sess.get_modelmeta().custom_metadata_map
    pre = json.loads(meta["fixres.preprocessing"])
    size = int(size_arg) if size_arg else int(pre["input_size"])
    inp = sess.get_inputs()[0]
    assert isinstance(inp.shape[0], str), f"batch axis not symbolic: {inp.shape}"
    if not pre["dynamic_size"]:
        assert inp.shape[2:] == [size, size], (inp.shape, size)
    filt = {"bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC}[pre["interpolation"]]
    mean = np.array(pre["mean"], np.float32).reshape(3, 1, 1)
    std = np.array(pre["std"], np.float32).reshape(3, 1, 1)

    def preprocess(path):
        im = Image.open(path).convert("RGB")
        w, h = im.size
        r = int(size / pre["crop_pct"])
        if pre["resize_mode"] == "fixres":
            nh, nw = r, int(r * w / h)
        elif w <= h:
            nw, nh = r, int(r * h / w)
        else:
            nh, nw = r, int(r * w / h)
        im = im.resize((nw, nh), filt)
        # torchvision's center_crop: a side shorter than the crop is first padded with zeros,
        # (S - side) // 2 before it; a longer one is cropped from round((side - S) / 2).
        off = lambda side: -((size - side) // 2) if side < size else int(round((side - size) / 2.0))
        top, left = off(nh), off(nw)
        im = im.crop((left, top, left + size, top + size))  # PIL fills outside the image with zeros
        x = np.asarray(im, np.float32).transpose(2, 0, 1) / 255.0
        return (x - mean) / std

    rows = [r for r in json.load(open(predictions)) if not r.get("error")]
    x = np.stack([preprocess(r["path"]) for r in rows]).astype(np.float32)
    ours = np.array([[p["logit"] for p in sorted(r["predictions"], key=lambda p: p["index"])]
                     for r in rows], np.float64)
    batched = sess.run(None, {inp.name: x})[0].astype(np.float64)
    single = np.concatenate([sess.run(None, {inp.name: x[i:i + 1]})[0] for i in range(len(x))])
    err = np.linalg.norm(batched - ours) / np.linalg.norm(ours)
    # Relative to the largest logit: ONNX Runtime picks kernels by batch size and CPU, and random
    # weights give logits of any magnitude.
    spread = np.abs(batched - single).max() / max(1.0, np.abs(single).max())
    print(f"{model}: onnxruntime {ort.__version__}: {len(rows)} images at {size} px, relative L2 error "
          f"{err:.3g} against fixres, batch of {len(rows)} vs one by one {spread:.2g}")
    return err < 1e-4 and spread < 1e-5


if sys.argv[1] == "--list":
    jobs = [line.split() for line in open(sys.argv[2]) if line.strip()]
else:
    jobs = [sys.argv[1:4]]
results = [check(*job) for job in jobs]
sys.exit(0 if all(results) else 1)
