#!/usr/bin/python3
"""Peer of `fixres predict`: the pipeline of timm's inference.py, through timm's own library calls
(timm from ../shared/oracles on Debian's torch): create_model with the weights, the test-time data
config, ImageDataset + create_loader (PIL decoding and timm's eval transform in loader worker
processes), the model in eval mode, top-k of the softmax per image, one CSV row per image.

Prints the images per second of the whole run (model loading included, as for fixres) on its
last line. Usage:
  predict_peer.py --oracles DIR --weights R50.pth --arch resnet50 --num-classes N DIR_OF_IMAGES
                  --size 224 --crop-pct 0.875 --batch B --workers W --threads T --topk K --out CSV
"""
import argparse
import os
import sys
import time

t0 = time.perf_counter()
import torch  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("images")
ap.add_argument("--oracles", required=True)
ap.add_argument("--weights", required=True)
ap.add_argument("--arch", default="resnet50")
ap.add_argument("--num-classes", type=int, required=True)
ap.add_argument("--size", type=int, default=224)
ap.add_argument("--crop-pct", type=float, default=0.875)
ap.add_argument("--batch", type=int, default=32)
ap.add_argument("--workers", type=int, default=2)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--topk", type=int, default=5)
ap.add_argument("--out", required=True)
a = ap.parse_args()
sys.path.insert(0, a.oracles)
import timm  # noqa: E402
from timm.data import ImageDataset, create_loader, resolve_data_config  # noqa: E402

torch.set_num_threads(a.threads)
model = timm.create_model(a.arch, num_classes=a.num_classes)
model.load_state_dict(torch.load(a.weights, map_location="cpu"))
model.eval()
config = resolve_data_config({"input_size": (3, a.size, a.size), "crop_pct": a.crop_pct,
                              "interpolation": "bilinear"}, model=model)
loader = create_loader(ImageDataset(a.images), input_size=config["input_size"], batch_size=a.batch,
                       use_prefetcher=False, interpolation=config["interpolation"],
                       mean=config["mean"], std=config["std"], num_workers=a.workers,
                       crop_pct=config["crop_pct"])
names = [os.path.join(a.images, f) for f in loader.dataset.filenames(basename=False)]
rows, n = [], 0
with torch.no_grad():
    for x, _ in loader:
        p = model(x).softmax(-1)
        v, i = p.topk(a.topk, dim=-1)
        for b in range(x.shape[0]):
            rows.append(",".join([names[n]] + [f"{int(c)},{float(s):.8g}" for c, s in zip(i[b], v[b])]))
            n += 1
with open(a.out, "w") as f:
    f.write("\n".join(rows) + "\n")
dt = time.perf_counter() - t0
print(f"timm pipeline: {n} images in {dt:.2f} s")
print(f"{n / dt:.2f} img/s")
