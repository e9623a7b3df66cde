#!/usr/bin/env python3
"""Makes a shifted copy of an image folder with the ImageNet-C corruptions of the
`imagecorruptions` package (Michaelis et al. 2019; the project's pinned environment), not with
corruptions of fixres's own.

make_shifted_set.py SRC DST CORRUPTION SEVERITY [SEED]
    Every image SRC/<class>/<name> is read as RGB (PIL), corrupted by
    imagecorruptions.corrupt(image, corruption_name=CORRUPTION, severity=SEVERITY) and written as
    DST/<class>/<stem>.png; under 32 px (where corrupt() refuses), the pixel-wise corruptions
    (noise, brightness, contrast, saturate) are applied by the package's own function. numpy's global generator is seeded with SEED (default 0) first, so the
    noise corruptions give the same folder every time. Prints "N images, CORRUPTION severity S";
    exit 77 when the package is absent.
"""
import os
import sys

import numpy as np
from PIL import Image

try:
    from imagecorruptions import corrupt, corruption_dict
except ImportError as e:  # pragma: no cover - depends on the environment
    print(f"no imagecorruptions for {sys.executable}: {e}", file=sys.stderr)
    sys.exit(77)

# The corruptions that act on each pixel alone, which imagecorruptions' functions apply at any
# size: corrupt() itself refuses images under 32 px (Fashion-MNIST's are 28 px), for the sake of
# the blurs, frost and the like.
PIXELWISE = {"gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise", "brightness",
             "contrast", "saturate"}
src, dst, name, severity = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
np.random.seed(int(sys.argv[5]) if len(sys.argv) > 5 else 0)
count = 0
for cls in sorted(os.listdir(src)):
    if not os.path.isdir(os.path.join(src, cls)):
        continue
    os.makedirs(os.path.join(dst, cls), exist_ok=True)
    for f in sorted(os.listdir(os.path.join(src, cls))):
        image = np.asarray(Image.open(os.path.join(src, cls, f)).convert("RGB"))
        if min(image.shape[:2]) >= 32:
            out = corrupt(image, corruption_name=name, severity=severity)
        elif name in PIXELWISE:  # corrupt() refuses images under 32 px; these need no neighbours
            out = corruption_dict[name](Image.fromarray(image), severity)
        else:
            sys.exit(f"{f}: {image.shape[1]}x{image.shape[0]} px; {name} needs 32 px (pixel-wise "
                     f"corruptions take any size: {', '.join(sorted(PIXELWISE))})")
        shifted = np.uint8(np.clip(out, 0, 255))
        Image.fromarray(shifted).save(os.path.join(dst, cls, os.path.splitext(f)[0] + ".png"))
        count += 1
print(f"{count} images, {name} severity {severity}")
