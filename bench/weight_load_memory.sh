#!/bin/bash
# Peak RSS of loading big weight files into fixres, lazily and eagerly, against the file's size:
# ResNeXt-101 32x48d (3.3 GB, FixRes layout, random values written by Python torch) and
# tf_efficientnet_l2 (1.9 GB, timm's names, written by timm from ../shared/oracles when present).
# Usage: bench/weight_load_memory.sh BUILD_DIR [WORK] [ARCH]
set -euo pipefail
BUILD=${1:-build}; WORK=${2:-/tmp/fixres_weight_memory}; ARCH=${3:-resnext101_32x48d}
ORACLES="$(cd "$(dirname "$0")/.." && pwd)/../shared/oracles"
mkdir -p "$WORK"; FILE="$WORK/$ARCH.pth"
# The benchmark programs are built by `make bench`, not `make build`.
cmake --build "$BUILD" --target weight_load_memory_bench >/dev/null
if [ ! -s "$FILE" ] && [ "$ARCH" = tf_efficientnet_l2 ]; then
  [ -f "$ORACLES/timm/__init__.py" ] || { echo "skipped: no timm source at $ORACLES"; exit 0; }
  PYTHONPATH="$ORACLES" /usr/bin/python3 - "$FILE" <<'PY'
import sys, timm, torch
torch.manual_seed(0)
m = timm.create_model("tf_efficientnet_l2")
torch.save(m.state_dict(), sys.argv[1])
print("wrote", sys.argv[1], sum(p.numel() for p in m.parameters()), "parameters")
PY
fi
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
  awk -v f="$(stat -c %s "$FILE")" '/Maximum resident/ { printf "peak RSS / file size: %.2f\n", $6 * 1024 / f }' "$WORK/time_$mode.txt"
done
