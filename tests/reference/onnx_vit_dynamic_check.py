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
onnx_vit_dynamic_check.py --img-size=N MODEL ARCH WEIGHTS HxW...
    The same with timm's model built for N px images (its position embedding on N's grid): the
    weights of a model trained at N, which the export must resample from their own grid.
onnx_vit_dynamic_check.py --list FILE
    The same for each line of FILE ("[--img-size=N] MODEL ARCH WEIGHTS HxW..."), in one process.
onnx_vit_dynamic_check.py --make-weights=N ARCH WEIGHTS
    Writes timm's random weights (seed 0, 10 classes) of ARCH built for N px images to WEIGHTS.
"""
import sys

import numpy as np
import onnxruntime as ort
import timm
import torch

torch.set_num_threads(1)
args = sys.argv[1:]
if args[0].startswith("--make-weights="):
    torch.manual_seed(0)
    n = int(args[0].split("=")[1])
    made = timm.create_model(args[1], pretrained=False, num_classes=10, img_size=n)
    torch.save(made.state_dict(), args[2])
    sys.exit(0)


def check(args):
    """One model: [--img-size=N] MODEL ARCH WEIGHTS HxW...; True when every size agrees."""
    kwargs = {}
    if args[0].startswith("--img-size="):
        kwargs["img_size"] = int(args.pop(0).split("=")[1])
    path, arch, weights = args[0], args[1], args[2]
    sizes = [tuple(int(v) for v in s.split("x")) for s in args[3:]]
    model = timm.create_model(arch, pretrained=False, num_classes=10, dynamic_img_size=True, **kwargs)
    model.load_state_dict(torch.load(weights, map_location="cpu"), strict=True)
    model.eval()
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    shape = sess.get_inputs()[0].shape
    assert all(isinstance(d, str) for d in (shape[0], shape[2], shape[3])), f"not dynamic: {shape}"
    ok = True
    gen = torch.Generator().manual_seed(5)
    for h, w in sizes:
        x = torch.randn(2, 3, h, w, generator=gen)
        with torch.no_grad():
            want = model(x).numpy().astype(np.float64)
        got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0].astype(np.float64)
        err = float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-12))
        print(f"{arch} {h}x{w}: relative L2 error {err:.2e} against timm {timm.__version__} "
              f"(dynamic_img_size) in onnxruntime {ort.__version__}")
        ok = ok and err < 1e-4
    return ok


if args[0] == "--list":
    results = [check(line.split()) for line in open(args[1]) if line.strip()]
else:
    results = [check(args)]
sys.exit(0 if all(results) else 1)
