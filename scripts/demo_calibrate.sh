#!/usr/bin/env bash
# What `fixres calibrate` (BatchNorm statistics re-estimated without labels) recovers of FixRes
# fine-tuning, at every test resolution of a demo run's sweep, on the held-out split: the sweep's
# own top-1 without and with fine-tuning (sweep/sweep.json) beside the top-1 after calibration on
# unlabelled train images. Usage: scripts/demo_calibrate.sh [FIXRES_BIN] RUN_DIR [RUN_DIR ...]
# (runs of scripts/demo.sh; environment: DEMO_DATA, DEMO_CAL_IMAGES (default 12800)).
set -euo pipefail
FIXRES=$1; shift
DATA=${DEMO_DATA:-data/fashion-mnist}
IMAGES=${DEMO_CAL_IMAGES:-12800}
for OUT in "$@"; do
  # eval reads <root>/val: a root whose val is the held-out split.
  mkdir -p "$OUT/calibrate/holdout_root"
  ln -sfn "$(cd "$DATA" && pwd)/holdout" "$OUT/calibrate/holdout_root/val"
  WEIGHTS="$OUT/train/train/checkpoint.pth"
  [ -f "$OUT/ema.pth" ] && WEIGHTS="$OUT/ema.pth"
  for S in $(/usr/bin/python3 -c "import json;print(*[r['size'] for r in json.load(open('$OUT/sweep/sweep.json'))['rows']])"); do
    "$FIXRES" calibrate --architecture resnet_tiny --weight-path "$WEIGHTS" --dataset-path "$DATA/train" \
      --input-size "$S" --max-images "$IMAGES" --batch 128 --workers 2 --out "$OUT/calibrate/cal_$S.pth" >/dev/null
    "$FIXRES" eval --imnet-path "$OUT/calibrate/holdout_root" --architecture resnet_tiny \
      --weight-path "$OUT/calibrate/cal_$S.pth" --input-size "$S" --batch 256 --workers 2 \
      --json "$OUT/calibrate/holdout_$S.json" >/dev/null
  done
done
/usr/bin/python3 - "$@" <<'PY'
import glob, json, statistics, sys
runs = sys.argv[1:]
sizes = [r["size"] for r in json.load(open(f"{runs[0]}/sweep/sweep.json"))["rows"]]
def ms(v):
    return f"{statistics.mean(v):.2f} ± {statistics.stdev(v) if len(v) > 1 else 0:.2f}"
print("| test res | no fine-tuning | BN calibrated, no labels | FixRes fine-tuned | calibration recovers |")
print("|---|---|---|---|---|")
for i, s in enumerate(sizes):
    plain, cal, ft = [], [], []
    for r in runs:
        row = json.load(open(f"{r}/sweep/sweep.json"))["rows"][i]
        plain.append(row["top1"]); ft.append(row["top1_finetuned"])
        cal.append(json.load(open(f"{r}/calibrate/holdout_{s}.json"))["results"][0]["top1"])
    gap = statistics.mean(ft) - statistics.mean(plain)
    rec = (statistics.mean(cal) - statistics.mean(plain)) / gap * 100 if abs(gap) > 0.05 else float("nan")
    print(f"| {s} | {ms(plain)} | {ms(cal)} | {ms(ft)} | {rec:.0f}% |")
PY
