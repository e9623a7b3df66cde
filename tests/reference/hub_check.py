#!/usr/bin/python3
"""Checks of `fixres export --format timm-hub` folders and `fixres predict` outputs, by other code
than fixres's.

safetensors FILE WEIGHTS   FILE parsed by the format's specification alone (u64 little-endian
                           header length, a JSON header, the byte buffer; numpy reads the bytes):
                           header padded to 8 bytes, offsets contiguous from 0 to the end, and
                           every tensor equal (names, dtypes, shapes, values) to the state dict of
                           WEIGHTS (torch.load: a bare state dict or a checkpoint's "model").
timm HUB ORACLES PREDICTIONS
                           timm loads HUB: with the safetensors package, timm.create_model(
                           "local-dir:HUB") (its own reading of config.json and the weights);
                           without it, create_model(architecture, num_classes, **model_args) with the weights
                           of the specification parser above, strictly, and the config's
                           pretrained_cfg. The eval transform is timm's own
                           (resolve_data_config(model=..., use_test_size=True), create_transform)
                           on every image of PREDICTIONS (fixres predict --format json
                           --output-type logit --topk C); prints the relative L2 error of timm's
                           logits against fixres's and timm's resolved input size and crop.
timm-list ORACLES FILE     the same for each line "HUB PREDICTIONS" of FILE, in one process.
predictions JSON CSV JSONL PREDICT_ROOT EXTRACT_ROOT NPY_FOLDER ARCH K [MIN_PROB]
                           the three outputs of one predict run on PREDICT_ROOT agree (CSV read by
                           the csv module, JSON lines by json); every readable image's top-K
                           is the top-K of `fixres extract`'s ARCH_softmax.npy on the image
                           folder EXTRACT_ROOT (ImageFolder's order) for the same CLASS/FILE, by
                           same_predictions.py's rule (the runs batch otherwise: probabilities
                           within 1e-5 relative, classes swapped only between near ties), named
                           as EXTRACT_ROOT's class folders; every unreadable image has an error
                           naming it and no prediction.
ORACLES: the folder holding timm's source, or "pypi" for the installed package.
"""
import csv
import json
import os
import struct
import sys

import numpy
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from same_predictions import same_predictions  # noqa: E402
from zoo_reference import import_timm  # noqa: E402

DTYPES = {"F32": numpy.float32, "F64": numpy.float64, "F16": numpy.float16, "I64": numpy.int64,
          "I32": numpy.int32, "I16": numpy.int16, "I8": numpy.int8, "U8": numpy.uint8,
          "BOOL": numpy.bool_}


def parse_safetensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0, f"header length {n} is not a multiple of 8"
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    buf = data[8 + n:]
    spans = sorted(tuple(e["data_offsets"]) for e in header.values())
    end = 0
    for b, e in spans:
        assert b == end, f"offsets not contiguous at {b} (expected {end})"
        end = e
    assert end == len(buf), f"buffer of {len(buf)} bytes, offsets end at {end}"
    out = {}
    for name, e in header.items():
        b, f = e["data_offsets"]
        a = numpy.frombuffer(buf[b:f], dtype=DTYPES[e["dtype"]]).reshape(e["shape"])
        out[name] = torch.from_numpy(a.copy())
    return out


def state_dict_of(path):
    sd = torch.load(path, map_location="cpu")
    if "model" in sd and isinstance(sd["model"], dict):
        sd = sd["model"]
    return {k[len("module."):] if k.startswith("module.") else k: v for k, v in sd.items()}


def check_safetensors(path, weights):
    got, want = parse_safetensors(path), state_dict_of(weights)
    assert list(got) == list(want), f"names differ: {sorted(set(got) ^ set(want))[:5]}"
    for k, v in want.items():
        assert got[k].dtype == v.dtype, f"{k}: dtype {got[k].dtype}, expected {v.dtype}"
        assert torch.equal(got[k], v), f"{k}: values differ"
    print(f"{len(got)} tensors equal to {os.path.basename(weights)}'s")


def timm_logits(hub, oracles, predictions):
    from PIL import Image
    timm = import_timm(oracles)
    if timm is None:
        sys.exit(f"no timm at {oracles}")
    try:
        import safetensors  # noqa: F401
        how = "local-dir"
    except ImportError:
        how = "state dict"
    cfg = json.load(open(os.path.join(hub, "config.json")))
    if how == "local-dir":
        model = timm.create_model("local-dir:" + hub, pretrained=True)
    else:
        # As timm's local-dir loading: config.json's model_args go to the model (a ViT's img_size).
        model = timm.create_model(cfg["architecture"], pretrained=False,
                                  num_classes=cfg["num_classes"], **cfg.get("model_args", {}))
        model.load_state_dict(parse_safetensors(os.path.join(hub, "model.safetensors")))
        model.pretrained_cfg = dict(model.pretrained_cfg, **cfg["pretrained_cfg"])
    model.eval()
    data = timm.data.resolve_data_config(model=model, use_test_size=True)
    tf = timm.data.create_transform(**data)
    rows = [r for r in json.load(open(predictions)) if r["error"] is None]
    xs = torch.stack([tf(Image.open(r["path"]).convert("RGB")) for r in rows])
    with torch.no_grad():
        ref = model(xs).double()
    ours = torch.zeros_like(ref)
    for i, r in enumerate(rows):
        assert len(r["predictions"]) == ref.shape[1], "predict needs --topk C"
        for p in r["predictions"]:
            ours[i, p["index"]] = p["logit"]
    err = ((ours - ref).norm() / ref.norm()).item()
    print(f"timm {timm.__version__} loads {cfg['architecture']} ({how}): input {data['input_size']}"
          f" crop_pct {data['crop_pct']} {data['interpolation']}; {len(rows)} images, relative L2"
          f" error {err:.3g}")
    assert err < 1e-5, f"relative L2 error {err}"


def check_predictions(json_path, csv_path, jsonl_path, predict_root, extract_root, npy, arch, k,
                      min_prob=0.0):
    rows = json.load(open(json_path))
    lines = [json.loads(line) for line in open(jsonl_path)]
    assert lines == rows, "json and jsonl differ"
    table = list(csv.DictReader(open(csv_path, newline="")))
    assert len(table) == len(rows), f"{len(table)} CSV rows, {len(rows)} JSON rows"
    for t, r in zip(table, rows):
        assert t["path"] == r["path"] and t["error"] == (r["error"] or ""), (t, r)
        for j, p in enumerate(r["predictions"]):
            assert int(t[f"top{j + 1}_index"]) == p["index"], (t, p)
            assert t[f"top{j + 1}_class"] == p["class"], (t, p)
            assert float(t[f"top{j + 1}_prob"]) == p["prob"], (t, p)
    softmax = numpy.load(os.path.join(npy, f"{arch}_softmax.npy"))
    classes = sorted(c for c in os.listdir(extract_root)
                     if os.path.isdir(os.path.join(extract_root, c)))
    paths = [os.path.join(c, f) for c in classes
             for f in sorted(os.listdir(os.path.join(extract_root, c)))]
    assert len(paths) == softmax.shape[0], (len(paths), softmax.shape)
    by_path = dict(zip(paths, softmax))
    checked = bad = 0
    for r in rows:
        if r["error"] is not None:
            assert r["predictions"] == [] and r["path"] in r["error"], r
            bad += 1
            continue
        s = by_path[os.path.relpath(r["path"], predict_root)]
        # predict ran batches of 3, extract one of 64: the sums differ in order (about 1e-6), so
        # not the last digit nor the order of near ties is compared (same_predictions.py).
        want = [{"index": int(i), "class": classes[i], "prob": float(s[i])}
                for i in numpy.argsort(-s, kind="stable")[:k]]
        # --min-prob: the classes at or above it; one within 1e-5 relative of it may go either way.
        sure = [p for p in want if p["prob"] >= min_prob * (1 + 1e-5)]
        maybe = [p for p in want if p["prob"] >= min_prob * (1 - 1e-5)]
        whys = [same_predictions(r["predictions"], w, 1e-5) for w in (sure, maybe)]
        assert None in whys, (r["path"], whys, r["predictions"], want)
        checked += 1
    print(f"{checked} images equal to extract's softmax top-{k}, {bad} unreadable with errors")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "safetensors":
        check_safetensors(sys.argv[2], sys.argv[3])
    elif cmd == "timm":
        timm_logits(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "timm-list":
        for hub, predictions in (line.split() for line in open(sys.argv[3]) if line.strip()):
            timm_logits(hub, sys.argv[2], predictions)
    elif cmd == "predictions":
        check_predictions(*sys.argv[2:9], int(sys.argv[9]),
                          float(sys.argv[10]) if len(sys.argv) > 10 else 0.0)
    else:
        sys.exit(f"unknown command {cmd}")
