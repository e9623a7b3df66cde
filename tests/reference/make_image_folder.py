#!/usr/bin/python3
"""Small synthetic image folders for the end-to-end tests: class subfolders of JPEGs and PNGs
(landscape, portrait, square) whose class is visible (a bright disk, a bar, a ring), so a model
can learn something in a few steps.
Usage: make_image_folder.py OUT --classes 3 --train 8 --val 4 [--seed 0] [--size 48]
Writes OUT/train/<class>/*.{jpg,png} and OUT/val/<class>/*."""
import argparse, os
import numpy as np
from PIL import Image


def picture(rng, cls, w, h):
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.empty((h, w, 3), np.float32)
    for c in range(3):
        img[..., c] = 60 + 40 * np.sin(xx * rng.uniform(0.05, 0.2) + yy * rng.uniform(0.05, 0.2) + c)
    cx, cy = rng.uniform(0.35, 0.65) * w, rng.uniform(0.35, 0.65) * h
    r = rng.uniform(0.15, 0.3) * min(w, h)
    d2 = (xx - cx) ** 2 + (yy - cy) ** 2
    if cls % 3 == 0:
        img[d2 < r * r] = [230, 60, 60]
    elif cls % 3 == 1:
        img[np.abs(xx - cx) < r / 3] = [60, 230, 60]
    else:
        img[np.abs(np.sqrt(d2) - r) < r / 4] = [60, 60, 230]
    img += rng.normal(0, 8, img.shape)
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--classes", type=int, default=3)
    ap.add_argument("--train", type=int, default=8)
    ap.add_argument("--val", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--size", type=int, default=48)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    shapes = [(a.size * 4 // 3, a.size), (a.size, a.size * 4 // 3), (a.size, a.size)]
    for split, n in (("train", a.train), ("val", a.val)):
        for c in range(a.classes):
            d = os.path.join(a.out, split, f"class{c}")
            os.makedirs(d, exist_ok=True)
            for i in range(n):
                w, h = shapes[i % 3]
                im = picture(rng, c, w, h)
                if i % 4 == 3:
                    im.save(os.path.join(d, f"{i:03d}.png"))
                else:
                    im.save(os.path.join(d, f"{i:03d}.jpg"), quality=90)


if __name__ == "__main__":
    main()
