#!/usr/bin/python3
"""Statistics of torchvision 0.14 RandomResizedCrop.get_params (default scale and ratio) over
DRAWS draws for each image size, as JSON: mean/std of the crop top, left, height, width, area
fraction and log aspect ratio (1000 x 90 mostly exercises the center fallback)."""
import json, sys
import numpy as np
import torch
from torchvision import transforms

draws = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
torch.manual_seed(0)
out = []
for w, h in [(500, 375), (375, 500), (64, 64), (1000, 90)]:
    img = torch.empty(1, h, w)
    p = np.array([transforms.RandomResizedCrop.get_params(img, [0.08, 1.0], [3 / 4, 4 / 3]) for _ in range(draws)], np.float64)
    top, left, ch, cw = p.T
    stats = {}
    for name, v in [("top", top), ("left", left), ("height", ch), ("width", cw),
                    ("area", ch * cw / (w * h)), ("logratio", np.log(cw / ch))]:
        stats[name] = [float(v.mean()), float(v.std())]
    out.append(dict(width=w, height=h, stats=stats))
print(json.dumps(out))
