#!/usr/bin/env python3
"""The runtimes a user would deploy fixres's ONNX export with, timed on the same model, threads and
batch sizes as `fixres bench eval` (bench/runtime_bench.sh): OpenVINO (f32 and bf16 as its
inference precision hint), ONNX Runtime (fp32), PyTorch eager (fp32 and bf16 autocast,
channels-last) on torchvision's ResNet-50. Model only: random inputs, a warm-up, then the median
of --repeats timings of --steps forward passes. Prints `NAME BATCH IMG_PER_S` lines, `n/a` for a
runtime this interpreter lacks.

`e2e` mode: PIL preprocessing (resize of the shorter side to 256, centre crop 224, normalised as
ImageNet) feeding OpenVINO, batch --batch, for every JPEG under a folder: whole images per second,
the model compiled before the clock starts.

Usage: runtime_peer.py model ONNX --threads T --batches 1,16 [--steps N] [--repeats R]
       runtime_peer.py e2e ONNX FOLDER --threads T --batch B --precision f32|bf16
"""
import argparse
import glob
import os
import statistics
import time

import numpy as np


def timed(fn, steps, repeats):
    fn()
    fn()
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs) / steps


def openvino_compiled(onnx, threads, precision):
    import openvino as ov
    core = ov.Core()
    return core.compile_model(core.read_model(onnx), "CPU", {
        "INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": threads,
        "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1})


def openvino_rate(onnx, threads, batch, precision, steps, repeats):
    try:
        compiled = openvino_compiled(onnx, threads, precision)
    except ImportError:
        return None
    request = compiled.create_infer_request()
    x = np.random.default_rng(0).standard_normal((batch, 3, 224, 224)).astype(np.float32)
    return batch / timed(lambda: request.infer({0: x}), steps, repeats)


def onnxruntime_rate(onnx, threads, batch, steps, repeats):
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    session = ort.InferenceSession(onnx, so, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    x = np.random.default_rng(0).standard_normal((batch, 3, 224, 224)).astype(np.float32)
    return batch / timed(lambda: session.run(None, {name: x}), steps, repeats)


def torch_rate(threads, batch, bf16, steps, repeats):
    try:
        import torch
        import torchvision
    except ImportError:
        return None
    torch.set_num_threads(threads)
    model = torchvision.models.resnet50().eval().to(memory_format=torch.channels_last)
    x = torch.randn(batch, 3, 224, 224).to(memory_format=torch.channels_last)

    def step():
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            model(x)
    return batch / timed(step, steps, repeats)


def model_mode(a):
    for batch in [int(b) for b in a.batches.split(",")]:
        rows = [("openvino-f32", openvino_rate(a.onnx, a.threads, batch, "f32", a.steps, a.repeats)),
                ("openvino-bf16", openvino_rate(a.onnx, a.threads, batch, "bf16", a.steps, a.repeats)),
                ("onnxruntime-fp32", onnxruntime_rate(a.onnx, a.threads, batch, a.steps, a.repeats)),
                ("torch-fp32", torch_rate(a.threads, batch, False, a.steps, a.repeats)),
                ("torch-bf16", torch_rate(a.threads, batch, True, a.steps, a.repeats))]
        for name, rate in rows:
            print(f"{name} {batch} {'n/a' if rate is None else f'{rate:.2f}'}", flush=True)


def e2e_mode(a):
    from PIL import Image
    compiled = openvino_compiled(a.onnx, a.threads, a.precision)
    request = compiled.create_infer_request()
    files = sorted(glob.glob(os.path.join(a.folder, "**", "*.jpg"), recursive=True))
    mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
    std = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)

    def load(path):
        im = Image.open(path).convert("RGB")
        w, h = im.size
        s = 256 / min(w, h)
        im = im.resize((round(w * s), round(h * s)), Image.BILINEAR)
        w, h = im.size
        left, top = (w - 224) // 2, (h - 224) // 2
        im = im.crop((left, top, left + 224, top + 224))
        return (np.asarray(im, np.float32).transpose(2, 0, 1) / 255 - mean) / std

    t0 = time.perf_counter()
    for i in range(0, len(files), a.batch):
        x = np.stack([load(f) for f in files[i:i + a.batch]])
        top5 = np.argsort(-request.infer({0: x})[0], axis=1)[:, :5]
        assert top5.shape[0] == x.shape[0]
    print(f"{len(files) / (time.perf_counter() - t0):.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["model", "e2e"])
    ap.add_argument("onnx")
    ap.add_argument("folder", nargs="?")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--precision", default="f32")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    model_mode(a) if a.mode == "model" else e2e_mode(a)


if __name__ == "__main__":
    main()
