#!/bin/bash
# Peak RSS of loading ResNeXt-101 32x48d weights (3.3 GB, FixRes layout, random values written by
# Python torch) into fixres, lazily and eagerly. Usage: bench/weight_load_memory.sh BUILD_DIR [WORK]
set -euo pipefail
BUILD=${1:-build}; WORK=${2:-/tmp/fixres_weight_memory}; ARCH=resnext101_32x48d
mkdir -p "$WORK"; FILE="$WORK/$ARCH.pth"
if [ ! -s "$FILE" ]; then
  /usr/bin/python3 - "$FILE" <<'PY'
import collections, sys, torch
from torchvision.models import resnet as tvr
torch.manual_seed(0)
m = tvr.ResNet(tvr.Bottleneck, [3, 4, 23, 3], groups=32, width_per_group=48)
sd = m.state_dict()
torch.save({"model": collections.OrderedDict(("module." + k, v) for k, v in sd.items())}, sys.argv[1])
print("wrote", sys.argv[1], sum(p.numel() for p in m.parameters()), "parameters")
PY
fi
ls -l "$FILE"
for mode in lazy eager; do
  /usr/bin/time -v "$BUILD/bin/weight_load_memory_bench" "$ARCH" "$FILE" "$mode" 2>"$WORK/time_$mode.txt"
  grep -E "Maximum resident|Elapsed" "$WORK/time_$mode.txt"
done
