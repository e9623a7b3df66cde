#!/usr/bin/env python3
"""A transformer exported by `fixres export --format onnx --dynamic-size` against timm's own model
with dynamic_img_size=True (the project's environment: PyPI timm, torch and onnxruntime), by other
code than fixres's.

onnx_vit_dynamic_check.py MODEL ARCH WEIGHTS HxW...
    Builds timm.create_model(ARCH, num_classes=10, dynamic_img_size=True), loads WEIGHTS (a timm
    state dict at the model's default size) strictly, and for each size runs a batch of 2 fixed
    N(0, 1) images through it and through MODEL in ONNX Runtime (CPU): relative L2 error of the
    logits below 1e-4 (printed). MODEL's height and width axes must be symbolic. Exit 1 on a
    failure.
"""
import sys

import numpy as np
import onnxruntime as ort
import timm
import torch

torch.set_num_threads(1)
path, arch, weights = sys.argv[1], sys.argv[2], sys.argv[3]
sizes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[4:]]
model = timm.create_model(arch, pretrained=False, num_classes=10, dynamic_img_size=True)
model.load_state_dict(torch.load(weights, map_location="cpu"), strict=True)
model.eval()
sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
shape = sess.get_inputs()[0].shape
assert all(isinstance(d, str) for d in (shape[0], shape[2], shape[3])), f"not dynamic: {shape}"
failed = 0
gen = torch.Generator().manual_seed(5)
for h, w in sizes:
    x = torch.randn(2, 3, h, w, generator=gen)
    with torch.no_grad():
        want = model(x).numpy().astype(np.float64)
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0].astype(np.float64)
    err = float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-12))
    print(f"{arch} {h}x{w}: relative L2 error {err:.2e} against timm {timm.__version__} "
          f"(dynamic_img_size) in onnxruntime {ort.__version__}")
    if not err < 1e-4:
        failed = 1
sys.exit(failed)
