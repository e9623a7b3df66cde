#!/usr/bin/python3
"""Reference cases for the image pipeline, computed with PIL 9.4 and torchvision 0.14.

Usage: image_cases.py OUT_DIR
Writes test images (JPEG/PNG of several shapes and colour types, corrupt files) and, for each
case, the expected output as raw bytes (uint8 HWC RGB, or float32 CHW for normalised outputs),
plus OUT_DIR/manifest.txt with one case per line:
  decode IMG EXPECTED W H            PIL Image.open(IMG).convert("RGB")
  decode_error IMG                   PIL fails to open/load IMG
  resize IMG W H FILTER EXPECTED     PIL resize of the decoded image (FILTER bilinear|bicubic)
  val IMG S MODE EXPECTED            val transform (MODE fixres|shorter), float32 3xSxS
  valnocrop IMG S W H EXPECTED       FixRes Resize(S, largest=True) + ToTensor + Normalize
  rrc IMG TOP LEFT H W S FLIP EXPECTED   F.resized_crop then optional hflip, uint8
  jitter IMG O0 O1 O2 O3 B C S H EXPECTED   adjust_* in order O (factor 0 / hue 0 = skipped)
  center_crop IMG CW CH EXPECTED     torchvision F.center_crop (pads with black)
  crop IMG LEFT TOP W H EXPECTED     PIL Image.crop (black outside)
"""
import io, os, struct, sys, zlib
import numpy as np
import torch
from PIL import Image
import torchvision.transforms.functional as F
from torchvision import transforms

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(1234)
lines = []


def photo(w, h):
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.zeros((h, w, 3), np.float32)
    for c in range(3):
        for _ in range(3):
            fx, fy, ph = rng.uniform(0.005, 0.08), rng.uniform(0.005, 0.08), rng.uniform(0, 6.3)
            img[..., c] += np.sin(xx * fx + yy * fy + ph)
    img = (img - img.min()) / (np.ptp(img) + 1e-6) * 255
    img += rng.normal(0, 20, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def save_raw(name, arr):
    arr = np.ascontiguousarray(arr)
    with open(os.path.join(out, name), "wb") as f:
        f.write(arr.tobytes())
    return name


def png_chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def write_png(name, w, h, bit_depth, color_type, rows, extra=b""):
    """Minimal PNG writer for cases PIL cannot write (16-bit RGB, 2-bit gray)."""
    raw = b"".join(b"\x00" + r for r in rows)
    data = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, 0))
    data += extra + png_chunk(b"IDAT", zlib.compress(raw)) + png_chunk(b"IEND", b"")
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


images = []
# JPEGs: landscape/portrait/square, odd sizes, colour types, progressive, 4:4:4.
for name, (w, h), kw in [("land.jpg", (500, 375), {}), ("port.jpg", (375, 500), {}),
                         ("square.jpg", (320, 320), {}), ("odd.jpg", (333, 251), {}),
                         ("tiny.jpg", (37, 23), {}), ("prog.jpg", (403, 297), {"progressive": True}),
                         ("q444.jpg", (290, 410), {"subsampling": 0})]:
    Image.fromarray(photo(w, h)).save(os.path.join(out, name), quality=90, **kw)
    images.append(name)
Image.fromarray(photo(211, 300)[..., 0]).save(os.path.join(out, "gray.jpg"), quality=85)
Image.fromarray(photo(180, 140)).convert("CMYK").save(os.path.join(out, "cmyk.jpg"), quality=90)
images += ["gray.jpg", "cmyk.jpg"]
# PNGs of every colour type PIL reads.
Image.fromarray(photo(300, 200)).save(os.path.join(out, "land.png"))
rgba = np.dstack([photo(150, 260), rng.integers(0, 256, (260, 150), dtype=np.uint8)])
Image.fromarray(rgba, "RGBA").save(os.path.join(out, "rgba.png"))
Image.fromarray(photo(120, 90)).convert("P", palette=Image.ADAPTIVE, colors=37).save(
    os.path.join(out, "pal.png"), transparency=3)
Image.fromarray(photo(64, 48)[..., 1]).save(os.path.join(out, "gray.png"))
Image.fromarray(np.dstack([photo(64, 48)[..., 1], photo(64, 48)[..., 2]]), "LA").save(os.path.join(out, "la.png"))
g16 = (rng.integers(0, 1024, (40, 50))).astype(np.uint16)  # many values above 255: PIL clips them
write_png("gray16.png", 50, 40, 16, 0, [r.astype(">u2").tobytes() for r in g16])
rgb16 = rng.integers(0, 65536, (30, 20, 3)).astype(np.uint16)
write_png("rgb16.png", 20, 30, 16, 2, [r.astype(">u2").tobytes() for r in rgb16])
g2 = rng.integers(0, 4, (9, 13)).astype(np.uint8)
write_png("gray2.png", 13, 9, 2, 0, [np.packbits(np.unpackbits(r[:, None], axis=1)[:, 6:].reshape(-1)).tobytes() for r in g2])
Image.fromarray(photo(77, 55)).save(os.path.join(out, "interlaced.png"))  # PIL cannot interlace; plain
images += ["land.png", "rgba.png", "pal.png", "gray.png", "la.png", "gray16.png", "rgb16.png", "gray2.png"]

# Corrupt inputs.
land = open(os.path.join(out, "land.jpg"), "rb").read()
open(os.path.join(out, "truncated.jpg"), "wb").write(land[: len(land) // 2])
open(os.path.join(out, "empty.jpg"), "wb").write(b"")
open(os.path.join(out, "text.jpg"), "wb").write(b"this is not an image\n" * 10)
pngb = open(os.path.join(out, "land.png"), "rb").read()
open(os.path.join(out, "truncated.png"), "wb").write(pngb[: len(pngb) * 2 // 3])
# A PNG header announcing 20000 x 20000 pixels (400 M > PIL's 178,956,970 bomb limit).
with open(os.path.join(out, "bomb.png"), "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", 20000, 20000, 8, 2, 0, 0, 0))
            + png_chunk(b"IDAT", zlib.compress(b"\x00" * 100)) + png_chunk(b"IEND", b""))
# A JPEG whose SOF announces 30000 x 30000.
small = io.BytesIO(); Image.fromarray(photo(16, 16)).save(small, "JPEG"); jb = bytearray(small.getvalue())
sof = jb.find(b"\xff\xc0"); jb[sof + 5:sof + 9] = struct.pack(">HH", 30000, 30000)
open(os.path.join(out, "bomb.jpg"), "wb").write(bytes(jb))

for name in images + ["truncated.jpg", "empty.jpg", "text.jpg", "truncated.png", "bomb.png", "bomb.jpg"]:
    try:
        im = Image.open(os.path.join(out, name)); im.load(); rgb = np.array(im.convert("RGB"))
    except Exception:
        lines.append(f"decode_error {name}")
        continue
    lines.append(f"decode {name} {save_raw(name + '.rgb', rgb)} {rgb.shape[1]} {rgb.shape[0]}")


def load(name):
    return Image.open(os.path.join(out, name)).convert("RGB")


# Resizes: down, up, one axis, bicubic.
for name in ["land.jpg", "port.jpg", "odd.jpg", "land.png", "tiny.jpg", "cmyk.jpg"]:
    im = load(name)
    for (w, h, filt) in [(224, 168, "bilinear"), (97, 301, "bilinear"), (im.width, 123, "bilinear"),
                         (611, im.height, "bilinear"), (256, 256, "bicubic"), (51, 40, "bicubic"), (700, 533, "bicubic")]:
        r = im.resize((w, h), Image.BILINEAR if filt == "bilinear" else Image.BICUBIC)
        lines.append(f"resize {name} {w} {h} {filt} {save_raw(f'{name}.resize{w}x{h}{filt}', np.array(r))}")


class FixresResize(transforms.Resize):
    # FixRes imnet_evaluate/transforms.py Resize: height := size, width := int(size * w / h).
    def __init__(self, size, largest=False, **kw):
        super().__init__(size, **kw); self.largest = largest

    def __call__(self, img):
        w, h = img.size
        if h < w and self.largest:
            w, h = self.size, int(self.size * h / w)
        else:
            w, h = int(self.size * w / h), self.size
        return F.resize(img, (h, w), self.interpolation)


norm = transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
for name in ["land.jpg", "port.jpg", "square.jpg", "odd.jpg", "prog.jpg", "q444.jpg", "gray.jpg",
             "land.png", "rgba.png", "pal.png"]:
    im = load(name)
    for s in [224, 320, 64]:
        for mode in ["fixres", "shorter"]:
            if mode == "shorter" and s != 224:
                continue
            rs = FixresResize(int((256 / 224) * s)) if mode == "fixres" else transforms.Resize(int((256 / 224) * s))
            t = transforms.Compose([rs, transforms.CenterCrop(s), transforms.ToTensor(), norm])
            lines.append(f"val {name} {s} {mode} {save_raw(f'{name}.val{s}{mode}', t(im).numpy())}")
    t = transforms.Compose([FixresResize(96, largest=True), transforms.ToTensor(), norm])
    v = t(im).numpy()
    lines.append(f"valnocrop {name} 96 {v.shape[2]} {v.shape[1]} {save_raw(f'{name}.valnocrop96', v)}")

# The val transform with another crop fraction, as timm's transforms_factory builds it: resize to
# floor(S / crop_pct) (the shorter side, or FixRes's height rule), then CenterCrop(S).
import math
for name in ["land.jpg", "port.jpg", "odd.jpg", "land.png"]:
    im = load(name)
    for s, crop in [(224, 0.95), (160, 1.0), (96, 0.9)]:
        for mode in ["fixres", "shorter"]:
            side = math.floor(s / crop)
            rs = FixresResize(side) if mode == "fixres" else transforms.Resize(side)
            t = transforms.Compose([rs, transforms.CenterCrop(s), transforms.ToTensor(), norm])
            lines.append(f"valcrop {name} {s} {mode} {crop} {save_raw(f'{name}.valcrop{s}{mode}{crop}', t(im).numpy())}")

# RandomResizedCrop with fixed parameters (+ flip).
for name in ["land.jpg", "port.jpg", "prog.jpg", "q444.jpg", "gray.jpg", "cmyk.jpg", "land.png"]:
    im = load(name)
    for k in range(4):
        h = int(rng.integers(8, im.height + 1)); w = int(rng.integers(8, im.width + 1))
        top = int(rng.integers(0, im.height - h + 1)); left = int(rng.integers(0, im.width - w + 1))
        flip = k % 2
        r = F.resized_crop(im, top, left, h, w, [224, 224])
        if flip:
            r = F.hflip(r)
        lines.append(f"rrc {name} {top} {left} {h} {w} 224 {flip} {save_raw(f'{name}.rrc{k}', np.array(r))}")

# ColorJitter factor sequences (fixed order and factors).
for k, name in enumerate(["land.jpg", "port.jpg", "square.jpg", "odd.jpg", "land.png", "gray.jpg"] * 3):
    im = load(name).resize((97, 71), Image.BILINEAR)
    order = [int(x) for x in rng.permutation(4)]
    b, c, s = [float(np.float32(rng.uniform(0.6, 1.4))) for _ in range(3)]
    if k % 4 == 0:
        b, c, s = 1.7, 0.2, 2.5  # extrapolation: clipping path
    hue = float(np.float32(rng.uniform(-0.5, 0.5))) if k % 3 == 0 else 0.0
    r = im
    for op in order:
        if op == 0: r = F.adjust_brightness(r, b)
        if op == 1: r = F.adjust_contrast(r, c)
        if op == 2: r = F.adjust_saturation(r, s)
        if op == 3 and hue != 0.0: r = F.adjust_hue(r, hue)
    lines.append(f"jitter {name} {' '.join(map(str, order))} {b!r} {c!r} {s!r} {hue!r} {save_raw(f'{name}.jitter{k}', np.array(r))}")

# CenterCrop, including crops larger than the image (odd and even padding).
for name in ["tiny.jpg", "odd.jpg", "port.jpg"]:
    im = load(name)
    for cw, ch in [(20, 10), (38, 24), (41, 30), (224, 224), (333, 251), (334, 250), (500, 13)]:
        r = F.center_crop(im, [ch, cw])
        lines.append(f"center_crop {name} {cw} {ch} {save_raw(f'{name}.cc{cw}x{ch}', np.array(r))}")
# PIL crop with boxes partly outside (the v2 shifted crop).
for name in ["odd.jpg"]:
    im = load(name)
    for left, top, w, h in [(-7, 3, 100, 80), (300, 200, 64, 64), (-20, -5, 400, 300)]:
        r = im.crop((left, top, left + w, top + h))
        lines.append(f"crop {name} {left} {top} {w} {h} {save_raw(f'{name}.crop{left}_{top}', np.array(r))}")

with open(os.path.join(out, "manifest.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
