#!/usr/bin/env python3
"""`fixres export --format openvino` read by OpenVINO's Python API: the IR (XML and the .bin beside
it) loads, its runtime info holds fixres's preprocessing (input size, crop, mean, std), the
architecture and the class names as the ONNX export's metadata does, and its logits on random
inputs equal ONNX Runtime's on fixres's ONNX export of the same weights (relative L2 at most 1e-4 at
the export's size; fp32 both). SIZES: the input sizes to run (a dynamic IR: several). At another
size a ViT's graph resamples its position embedding (Resize, bicubic): OpenVINO's differs from ONNX
Runtime's by about 2.4e-4 there (a 8 x 8 grid to 12 x 12), so the bound is 1e-3 at those sizes.

Usage: openvino_ir_check.py MODEL.xml MODEL.onnx SIZE [SIZE ...]
"""
import json
import sys

import numpy as np
import onnxruntime as ort
import openvino as ov


def main():
    xml, onnx_path, sizes = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3:]]
    core = ov.Core()
    model = core.read_model(xml)
    info = model.get_rt_info()
    pre = json.loads(info["fixres"]["preprocessing"].astype(str))
    arch = info["fixres"]["architecture"].astype(str)
    session = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta().custom_metadata_map
    if json.loads(meta["fixres.preprocessing"]) != pre or meta["fixres.architecture"] != arch:
        sys.exit(f"runtime info {pre} {arch} differs from the ONNX metadata {meta}")
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    worst = {}
    for size in sizes:
        x = np.random.default_rng(size).standard_normal((3, 3, size, size)).astype(np.float32)
        ours = compiled.create_infer_request().infer({0: x})[0]
        ref = session.run(None, {session.get_inputs()[0].name: x})[0]
        err = float(np.linalg.norm(ours - ref) / max(np.linalg.norm(ref), 1e-12))
        bound = 1e-4 if size == pre["input_size"] else 1e-3
        if not err <= bound:
            sys.exit(f"{size} px: relative L2 error {err:.3g} against ONNX Runtime")
        worst[size] = f"{err:.2g}"
    print(f"ok {arch}: input {pre['input_size']} crop {pre['crop_pct']} mean {pre['mean']}; "
          f"relative L2 error against ONNX Runtime by size {worst}")


if __name__ == "__main__":
    main()
