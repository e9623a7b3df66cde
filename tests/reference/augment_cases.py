#!/usr/bin/python3
"""Expected outputs of the automatic augmentation ops and policies, with torchvision 0.14 on PIL.

Usage: augment_cases.py DIR
Reads DIR/manifest.txt, written by tests/unit/image/AugmentReferenceTest.cpp, whose inputs are
raw files in DIR (uint8 H x W x 3 RGB, or float32 3 x H x W), and writes the expected outputs
(same layouts) the manifest names, given the parameters our C++ code drew:
  op IN W H NAME MAG OUT          torchvision's autoaugment._apply_op(PIL image, NAME, MAG,
                                  NEAREST, fill=None)
  plan IN W H OUT N (NAME MAG)*N  the N ops in order (RandAugment, TrivialAugmentWide and
                                  AutoAugment apply their drawn ops exactly so)
  augmix IN W H OUT OUT_T_NEAREST OUT_T_BILINEAR M0 W1 W2 W3 (N (NAME MAG)*N)*3
                                  AugMix.forward's mixing (float32: M0 * img + sum Wi * chain_i,
                                  then .to(uint8)) with the chains' ops on PIL images (OUT), and
                                  as torchvision really runs them, on uint8 tensors
                                  (F.pil_to_tensor first), with NEAREST and with BILINEAR
                                  (AugMix's default) geometry
  erase IN H W I J EH EW OUT      F.erase(3 x H x W float32 tensor, I, J, EH, EW, v=0)
  bins W H                        DIR/bins.txt: every policy's op names in order and the
                                  magnitude bins of each op for a W x H image
"""
import math, os, sys
import numpy as np
import torch
from PIL import Image
import torchvision.transforms.functional as F
from torchvision.transforms import InterpolationMode, autoaugment as aa

d = sys.argv[1]


def read_image(name, w, h):
    a = np.fromfile(os.path.join(d, name), np.uint8).reshape(int(h), int(w), 3)
    return Image.fromarray(a, "RGB")


def write(name, arr):
    np.ascontiguousarray(arr).tofile(os.path.join(d, name))


def apply_ops(img, ops, interpolation=InterpolationMode.NEAREST):
    for name, mag in ops:
        img = aa._apply_op(img, name, float(mag), interpolation=interpolation, fill=None)
    return img


def parse_ops(tokens, pos):
    n = int(tokens[pos])
    ops = [(tokens[pos + 1 + 2 * k], float(tokens[pos + 2 + 2 * k])) for k in range(n)]
    return ops, pos + 1 + 2 * n


bins_lines = []
for line in open(os.path.join(d, "manifest.txt")):
    t = line.split()
    if not t:
        continue
    if t[0] == "op":
        img = read_image(t[1], t[2], t[3])
        write(t[6], np.asarray(apply_ops(img, [(t[4], float(t[5]))])))
    elif t[0] == "plan":
        img = read_image(t[1], t[2], t[3])
        ops, _ = parse_ops(t, 5)
        write(t[4], np.asarray(apply_ops(img, ops)))
    elif t[0] == "augmix":
        img = read_image(t[1], t[2], t[3])
        m0 = np.float32(t[7])
        weights = [np.float32(x) for x in t[8:11]]
        chains, pos = [], 11
        for _ in range(3):
            ops, pos = parse_ops(t, pos)
            chains.append(ops)
        # PIL sub-ops, torchvision's float32 mixing and truncation.
        orig = np.asarray(img).astype(np.float32)
        mix = m0 * orig
        for w, ops in zip(weights, chains):
            mix += w * np.asarray(apply_ops(img, ops)).astype(np.float32)
        write(t[4], mix.astype(np.uint8))
        # torchvision's own path: the sub-ops on the uint8 tensor.
        for out, interp in ((t[5], InterpolationMode.NEAREST), (t[6], InterpolationMode.BILINEAR)):
            batch = F.pil_to_tensor(img)
            mix_t = torch.tensor(m0) * batch
            for w, ops in zip(weights, chains):
                mix_t.add_(torch.tensor(w) * apply_ops(batch, ops, interp))
            write(out, mix_t.to(torch.uint8).permute(1, 2, 0).numpy())
    elif t[0] == "erase":
        h, w = int(t[2]), int(t[3])
        x = torch.from_numpy(np.fromfile(os.path.join(d, t[1]), np.float32).reshape(3, h, w))
        v = torch.tensor([0.0])[:, None, None]
        write(t[8], F.erase(x, int(t[4]), int(t[5]), int(t[6]), int(t[7]), v).numpy())
    elif t[0] == "bins":
        w, h = int(t[1]), int(t[2])
        spaces = {
            "ra": aa.RandAugment()._augmentation_space(31, (h, w)),
            "ta_wide": aa.TrivialAugmentWide()._augmentation_space(31),
            "augmix": aa.AugMix()._augmentation_space(10, (h, w)),
            "imagenet": aa.AutoAugment()._augmentation_space(10, (h, w)),
        }
        for kind, space in spaces.items():
            bins_lines.append(" ".join(["ops", kind, str(w), str(h)] + list(space.keys())))
            for name, (mags, signed) in space.items():
                values = [] if mags.ndim == 0 else ["%.9g" % float(v) for v in mags.float()]
                bins_lines.append(" ".join(["bins", kind, str(w), str(h), name, str(int(signed)),
                                            str(len(values))] + values))
if bins_lines:
    with open(os.path.join(d, "bins.txt"), "w") as f:
        f.write("\n".join(bins_lines) + "\n")
print("ok")
