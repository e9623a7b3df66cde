#!/usr/bin/env bash
# The FixRes story on Fashion-MNIST in a few minutes on a CPU:
#   1. import the Debian package's IDX files into an image folder (train / holdout / val=test)
#   2. train a small ResNet at a low resolution with RandomResizedCrop
#   3. sweep test resolutions on the held-out split, with and without FixRes fine-tuning
#   4. pick the best resolution on the held-out split, then report on the 10,000 test images:
#      train resolution vs the chosen one, before and after fine-tuning; plot + report.
#   5. BatchNorm calibration without labels at the chosen resolution.
#   6. the evaluation report of the fine-tuned model at the chosen resolution (per-class
#      accuracy, confusion heat map, calibration with a temperature fitted on the held-out split).
# Usage: scripts/demo.sh [FIXRES_BIN] ; environment: DEMO_SEED, DEMO_EPOCHS, DEMO_TRAIN_SIZE,
# DEMO_ITERS, DEMO_FT_ITERS, DEMO_LIMIT_TRAIN, DEMO_LIMIT_VAL, DEMO_HOLDOUT, DEMO_SIZES, DEMO_OUT,
# DEMO_DATA, DEMO_THREADS, DEMO_ARCH, DEMO_BATCH, DEMO_LR (0.1), DEMO_FT_LR (0.01), DEMO_CALIBRATE
# (0: skip step 5, for models without BatchNorm), DEMO_TRAIN_FLAGS (more train flags, e.g. a
# recipe: "--auto-augment ta_wide --model-ema"), DEMO_USE_EMA (1: sweep and evaluate the EMA
# weights of a --model-ema run).
set -euo pipefail
FIXRES=${1:-build/bin/fixres}
SEED=${DEMO_SEED:-0}
EPOCHS=${DEMO_EPOCHS:-20}
ITERS=${DEMO_ITERS:-150}        # iterations per training epoch (x batch images)
FT_ITERS=${DEMO_FT_ITERS:-300}  # fine-tuning iterations at each test resolution
TRAIN_SIZE=${DEMO_TRAIN_SIZE:-24}
# Default: the sweep's own choice, multiples of the network's stride (8) from 0.6x to 1.8x.
SIZES=${DEMO_SIZES:-}
DATA=${DEMO_DATA:-data/fashion-mnist}
OUT=${DEMO_OUT:-runs/demo/seed$SEED}
ARCH=${DEMO_ARCH:-resnet_tiny}
BATCH=${DEMO_BATCH:-128}
THREADS=${DEMO_THREADS:-$(nproc)}
export FIXRES_THREADS=$THREADS
LIMITS=()
[ -n "${DEMO_LIMIT_TRAIN:-}" ] && LIMITS+=(--limit-train "$DEMO_LIMIT_TRAIN")
[ -n "${DEMO_LIMIT_VAL:-}" ] && LIMITS+=(--limit-val "$DEMO_LIMIT_VAL")
HOLDOUT=${DEMO_HOLDOUT:-5000}

t0=$(date +%s)
echo "== 1. import Fashion-MNIST -> $DATA"
"$FIXRES" import --out "$DATA" --holdout "$HOLDOUT" "${LIMITS[@]}"

echo "== 2. train $ARCH at ${TRAIN_SIZE}px with RandomResizedCrop ($EPOCHS epochs, seed $SEED)"
rm -rf "$OUT"; mkdir -p "$OUT"
"$FIXRES" train --imnet-path "$DATA" --architecture "$ARCH" --input-size "$TRAIN_SIZE" \
  --epochs "$EPOCHS" --batch "$BATCH" --workers 2 --learning-rate "${DEMO_LR:-0.1}" --absolute-lr \
  --lr-schedule cosine --transform torch --sampler distributed --eval-every "$EPOCHS" \
  --iteration-cap "$ITERS" \
  --seed "$SEED" --shared-folder-path "$OUT" --job-id train --log-every 100 ${DEMO_TRAIN_FLAGS:-}
WEIGHTS="$OUT/train/train/checkpoint.pth"
if [ "${DEMO_USE_EMA:-0}" = 1 ]; then
  "$FIXRES" export --architecture "$ARCH" --num-classes 10 --weight-path "$WEIGHTS" --use-ema \
    --out "$OUT/ema.pth"
  WEIGHTS="$OUT/ema.pth"
fi

echo "== 3. sweep test resolutions on the held-out split (with FixRes fine-tuning at each)"
"$FIXRES" sweep --imnet-path "$DATA" --split holdout --architecture "$ARCH" --weight-path "$WEIGHTS" \
  --train-size "$TRAIN_SIZE" ${SIZES:+--sizes "$SIZES"} --finetune --finetune-epochs 1 --finetune-iterations "$FT_ITERS" --finetune-lr "${DEMO_FT_LR:-0.01}" \
  --absolute-lr --batch "$BATCH" --workers 2 --seed "$SEED" --out "$OUT/sweep" | tee "$OUT/sweep.txt"
BEST=$(/usr/bin/python3 -c "import json;print(json.load(open('$OUT/sweep/sweep.json'))['best_finetuned'])")

echo "== 4. test set (val): train resolution $TRAIN_SIZE vs chosen $BEST"
"$FIXRES" eval --imnet-path "$DATA" --architecture "$ARCH" --weight-path "$WEIGHTS" \
  --input-size "$TRAIN_SIZE,$BEST" --batch 256 --workers 2 --json "$OUT/test_plain.json" >/dev/null
"$FIXRES" eval --imnet-path "$DATA" --architecture "$ARCH" \
  --weight-path "$OUT/sweep/finetune_$TRAIN_SIZE/checkpoint.pth" --input-size "$TRAIN_SIZE" \
  --batch 256 --workers 2 --json "$OUT/test_ft_train.json" >/dev/null
"$FIXRES" eval --imnet-path "$DATA" --architecture "$ARCH" \
  --weight-path "$OUT/sweep/finetune_$BEST/checkpoint.pth" --input-size "$BEST" \
  --batch 256 --workers 2 --json "$OUT/test_ft_best.json" >/dev/null

# Transformers and ConvNeXts have no BatchNorm statistics to calibrate.
case "$ARCH" in vit*|deit*|convnext*) CALIBRATE=${DEMO_CALIBRATE:-0} ;; *) CALIBRATE=${DEMO_CALIBRATE:-1} ;; esac
if [ "$CALIBRATE" = 1 ]; then
echo "== 5. FixRes without labels: BatchNorm statistics calibrated at $BEST px on unlabelled train images"
"$FIXRES" calibrate --architecture "$ARCH" --weight-path "$WEIGHTS" --dataset-path "$DATA/train" \
  --input-size "$BEST" --max-images $((FT_ITERS * BATCH)) --batch "$BATCH" --workers 2 --seed "$SEED" \
  --out "$OUT/calibrated_$BEST.pth"
"$FIXRES" eval --imnet-path "$DATA" --architecture "$ARCH" --weight-path "$OUT/calibrated_$BEST.pth" \
  --input-size "$BEST" --batch 256 --workers 2 --json "$OUT/test_cal_best.json" >/dev/null
fi

echo "== 6. the report of the fine-tuned model at $BEST px (temperature fitted on the held-out split)"
"$FIXRES" eval --imnet-path "$DATA" --architecture "$ARCH" \
  --weight-path "$OUT/sweep/finetune_$BEST/checkpoint.pth" --input-size "$BEST" --batch 256 \
  --workers 2 --report "$OUT/report" --fit-temperature "$DATA/holdout" >/dev/null

/usr/bin/python3 - "$OUT" "$TRAIN_SIZE" "$BEST" "$SEED" "$(( $(date +%s) - t0 ))" <<'PY'
import json, sys
out, train, best, seed, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
plain = {r["input_size"]: r for r in json.load(open(f"{out}/test_plain.json"))["results"]}
ft_train = json.load(open(f"{out}/test_ft_train.json"))["results"][0]
ft_best = json.load(open(f"{out}/test_ft_best.json"))["results"][0]
try:
    cal_best = json.load(open(f"{out}/test_cal_best.json"))["results"][0]
except FileNotFoundError:  # DEMO_CALIBRATE=0: a model without BatchNorm
    cal_best = None
sweep = json.load(open(f"{out}/sweep/sweep.json"))
rep = json.load(open(f"{out}/report/report.json"))
rows = [
    ("train res, no fine-tuning", train, plain[train]["top1"]),
    ("train res, fine-tuned", train, ft_train["top1"]),
    ("chosen res, no fine-tuning", best, plain[best]["top1"]),
    ("chosen res, FixRes fine-tuned", best, ft_best["top1"]),
] + ([("chosen res, BN calibrated (no labels)", best, cal_best["top1"])] if cal_best else [])
lines = ["| setting | test res | top-1 on 10k test images |", "|---|---|---|"]
lines += [f"| {n} | {s} | {t:.2f} |" for n, s, t in rows]
table = "\n".join(lines)
gain = ft_best["top1"] - plain[train]["top1"]
if best != train:
    gain_line = f"FixRes gain: {gain:+.2f} points (train {train} px -> test {best} px, fine-tuned)"
else:
    gain_line = (f"FixRes gain: {gain:+.2f} points, from fine-tuning at the train resolution alone: "
                 f"no test resolution other than {train} px won on the held-out split")
report = f"""# fixres demo: FixRes on Fashion-MNIST (seed {seed})

Train resolution {train} px (RandomResizedCrop); test resolution chosen on the held-out split:
{best} px (apparent-size suggestion {sweep['suggested_size']:.1f} px). Test set: {ft_best['count']} images.

{table}

{gain_line}. Run time {secs} s.

![top-1 vs test resolution](sweep/sweep.svg)

Calibration of the fine-tuned model at {best} px (report/): expected calibration error
{100 * rep['ece']:.2f} %, {100 * rep['temperature']['ece']:.2f} % after dividing the logits by the
temperature {rep['temperature']['value']:.3f} fitted on the held-out split (test loss
{rep['loss']:.4f} -> {rep['temperature']['loss']:.4f}).

![confusion matrix](report/confusion.svg) ![reliability diagram](report/reliability.svg)
"""
open(f"{out}/report.md", "w").write(report)
json.dump({"seed": int(seed), "train_size": train, "best_size": best, "rows": rows}, open(f"{out}/summary.json", "w"), indent=2)
print()
print(table)
print("\n" + gain_line)
print(f"ECE {100 * rep['ece']:.2f} % -> {100 * rep['temperature']['ece']:.2f} % at temperature {rep['temperature']['value']:.3f}")
print(f"plot:   {out}/sweep/sweep.svg")
print(f"report: {out}/report.md")
PY
