#!/usr/bin/env bash
# The FixRes story on Fashion-MNIST in a few minutes on a CPU:
#   1. import the Debian package's IDX files into an image folder (train / holdout / val=test)
#   2. train a small ResNet at a low resolution with RandomResizedCrop
#   3. sweep test resolution x crop on the held-out split, with and without FixRes fine-tuning,
#      each cell also scored on a shifted copy (ImageNet-C Gaussian noise, when the project's
#      environment has imagecorruptions)
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

# Shifted data: the held-out split and the test set with ImageNet-C's Gaussian noise (severity 3,
# the imagecorruptions package of the project's environment, `make torch2-env`), made once and
# shared by every seed. Without that environment the demo runs without the shifted column.
SHIFT_PY=${DEMO_SHIFT_PYTHON:-$(dirname "$0")/../.venv-torch2/bin/python}
SHIFTED=${DEMO_SHIFTED:-$DATA-noise3}
SHIFT=()
if [ "${DEMO_SHIFT:-1}" = 1 ] && [ -x "$SHIFT_PY" ] && "$SHIFT_PY" -c "import imagecorruptions" 2>/dev/null; then
  for split in holdout val; do
    if [ ! -f "$SHIFTED/$split.done" ]; then
      rm -rf "${SHIFTED:?}/$split"
      "$SHIFT_PY" "$(dirname "$0")/make_shifted_set.py" "$DATA/$split" "$SHIFTED/$split" gaussian_noise 3
      touch "$SHIFTED/$split.done"
    fi
  done
  # The answer beside the problem: the best cell that loses at most this many points on the
  # shifted held-out split (the train size's cell is the baseline).
  SHIFT=(--eval-set "noise=$SHIFTED/holdout" --max-shift-loss "${DEMO_MAX_SHIFT_LOSS:-2}")
else
  echo "(no shifted data: $SHIFT_PY lacks imagecorruptions; make torch2-env installs it)"
fi

echo "== 3. sweep test resolution x crop on the held-out split (with FixRes fine-tuning at each size)"
"$FIXRES" sweep --imnet-path "$DATA" --split holdout --architecture "$ARCH" --weight-path "$WEIGHTS" \
  --train-size "$TRAIN_SIZE" ${SIZES:+--sizes "$SIZES"} --crop-pcts "${DEMO_CROPS:-0.875,1.0}" \
  "${SHIFT[@]}" --finetune --finetune-epochs 1 --finetune-iterations "$FT_ITERS" --finetune-lr "${DEMO_FT_LR:-0.01}" \
  --absolute-lr --batch "$BATCH" --workers 2 --seed "$SEED" --out "$OUT/sweep" | tee "$OUT/sweep.txt"
read -r BEST CROP < <(/usr/bin/python3 -c "import json;s=json.load(open('$OUT/sweep/sweep.json'));print(s['best_finetuned'], s['best_finetuned_crop_pct'])")

echo "== 4. test set (val): train resolution $TRAIN_SIZE (crop 0.875) vs chosen $BEST (crop $CROP)"
# test_<name>.json on the test set, and test_<name>_noise.json on its shifted copy.
evaluate() {  # NAME WEIGHTS SIZE CROP
  local root
  for root in "$DATA" ${SHIFT[0]:+"$SHIFTED"}; do
    local suffix=""; [ "$root" = "$DATA" ] || suffix=_noise
    "$FIXRES" eval --imnet-path "$root" --architecture "$ARCH" --weight-path "$2" --input-size "$3" \
      --crop-pct "$4" --batch 256 --workers 2 --json "$OUT/test_$1$suffix.json" >/dev/null
  done
}
evaluate plain_train "$WEIGHTS" "$TRAIN_SIZE" 0.875
evaluate ft_train "$OUT/sweep/finetune_$TRAIN_SIZE/checkpoint.pth" "$TRAIN_SIZE" 0.875
evaluate plain_best "$WEIGHTS" "$BEST" "$CROP"
evaluate ft_best "$OUT/sweep/finetune_$BEST/checkpoint.pth" "$BEST" "$CROP"
if [ ${#SHIFT[@]} -gt 0 ]; then  # the choice --max-shift-loss made
  read -r SAFE SAFE_CROP < <(/usr/bin/python3 -c "import json;s=json.load(open('$OUT/sweep/sweep.json'));print(s['chosen'], s['chosen_crop_pct'])")
  evaluate ft_safe "$OUT/sweep/finetune_$SAFE/checkpoint.pth" "$SAFE" "$SAFE_CROP"
fi

# Transformers and ConvNeXts have no BatchNorm statistics to calibrate.
case "$ARCH" in vit*|deit*|convnext*) CALIBRATE=${DEMO_CALIBRATE:-0} ;; *) CALIBRATE=${DEMO_CALIBRATE:-1} ;; esac
if [ "$CALIBRATE" = 1 ]; then
echo "== 5. FixRes without labels: BatchNorm statistics calibrated at $BEST px on unlabelled train images"
"$FIXRES" calibrate --architecture "$ARCH" --weight-path "$WEIGHTS" --dataset-path "$DATA/train" \
  --input-size "$BEST" --max-images $((FT_ITERS * BATCH)) --batch "$BATCH" --workers 2 --seed "$SEED" \
  --out "$OUT/calibrated_$BEST.pth"
evaluate cal_best "$OUT/calibrated_$BEST.pth" "$BEST" "$CROP"
fi

echo "== 6. the report of the fine-tuned model at $BEST px (temperature fitted on the held-out split)"
"$FIXRES" eval --imnet-path "$DATA" --architecture "$ARCH" \
  --weight-path "$OUT/sweep/finetune_$BEST/checkpoint.pth" --input-size "$BEST" --crop-pct "$CROP" \
  --batch 256 --workers 2 --report "$OUT/report" --fit-temperature "$DATA/holdout" >/dev/null

/usr/bin/python3 - "$OUT" "$TRAIN_SIZE" "$BEST" "$CROP" "$SEED" "$(( $(date +%s) - t0 ))" <<'PY'
import json, os, sys
out, train, best, crop, seed, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6]


def top1(name, shifted=False):
    path = f"{out}/test_{name}{'_noise' if shifted else ''}.json"
    return json.load(open(path))["results"][0]["top1"] if os.path.exists(path) else None


shifted = os.path.exists(f"{out}/test_plain_train_noise.json")
sweep = json.load(open(f"{out}/sweep/sweep.json"))
shift_rule = "max_shift_loss" in sweep["budget"] and sweep["chosen"] is not None
rep = json.load(open(f"{out}/report/report.json"))
settings = [("train res, no fine-tuning", "plain_train", train, 0.875),
            ("train res, fine-tuned", "ft_train", train, 0.875),
            ("chosen res, no fine-tuning", "plain_best", best, crop),
            ("chosen res, FixRes fine-tuned", "ft_best", best, crop),
            ("chosen res, BN calibrated (no labels)", "cal_best", best, crop)]
if shift_rule:  # the row of the choice --max-shift-loss made on the held-out split
    settings.append((f"chosen within --max-shift-loss {sweep['budget']['max_shift_loss']:g}, "
                     "fine-tuned", "ft_safe", sweep["chosen"], sweep["chosen_crop_pct"]))
# [name, test res, top-1, crop, top-1 on the shifted test set (null without it)]; the calibrated
# row only where it ran (DEMO_CALIBRATE=0: a model without BatchNorm).
rows = [[n, s, top1(k), c, top1(k, True)] for n, k, s, c in settings if top1(k) is not None]
head = "| setting | test res | crop | top-1 on 10k test images |"
lines = [head + (" top-1, Gaussian noise 3 |" if shifted else ""),
         "|---|---|---|---|" + ("---|" if shifted else "")]
lines += [f"| {n} | {s} | {c:g} | {t:.2f} |" + (f" {ts:.2f} |" if shifted else "")
          for n, s, t, c, ts in rows]
table = "\n".join(lines)
ft_best, base = rows[3], rows[0]
gain = ft_best[2] - base[2]
if best != train or crop != 0.875:
    gain_line = (f"FixRes gain: {gain:+.2f} points (train {train} px -> test {best} px at crop "
                 f"{crop:g}, fine-tuned)")
else:
    gain_line = (f"FixRes gain: {gain:+.2f} points, from fine-tuning at the train resolution alone: "
                 f"no test resolution other than {train} px won on the held-out split")
safe_line = ""  # the row --max-shift-loss chose, on its own line
if shifted:
    d = ft_best[4] - base[4]
    held_line = (f"On the shifted test set (Gaussian noise, severity 3) the chosen setting scores "
                 f"{ft_best[4]:.2f} against {base[4]:.2f} at the train resolution without "
                 f"fine-tuning: the choice {'held' if d >= 0 else 'did not hold'} ({d:+.2f} points).")
    if shift_rule:
        safe = rows[-1]
        safe_line = (f"Chosen within --max-shift-loss {sweep['budget']['max_shift_loss']:g} on the "
                     f"shifted held-out split: {safe[1]} px at crop {safe[3]:g}, {safe[2]:.2f} "
                     f"clean and {safe[4]:.2f} shifted ({safe[4] - base[4]:+.2f} points against "
                     f"the train resolution without fine-tuning).")
else:
    held_line = "(No shifted test set: make torch2-env installs imagecorruptions.)"
report = f"""# fixres demo: FixRes on Fashion-MNIST (seed {seed})

Train resolution {train} px (RandomResizedCrop); test resolution and crop chosen on the held-out
split: {best} px, crop {crop:g} (apparent-size suggestion {sweep['suggested_size']:.1f} px).

{table}

{gain_line}. {held_line} {safe_line + " " if safe_line else ""}Run time {secs} s.

![top-1 vs test resolution](sweep/sweep.svg) ![top-1 over size and crop](sweep/sweep_grid.svg)

Calibration of the fine-tuned model at {best} px (report/): expected calibration error
{rep['ece']:.2f} %, {rep['temperature']['ece']:.2f} % after dividing the logits by the
temperature {rep['temperature']['value']:.3f} fitted on the held-out split (test loss
{rep['loss']:.4f} -> {rep['temperature']['loss']:.4f}).

![confusion matrix](report/confusion.svg) ![reliability diagram](report/reliability.svg)
"""
open(f"{out}/report.md", "w").write(report)
json.dump({"seed": int(seed), "train_size": train, "best_size": best, "best_crop": crop,
           "shifted": "gaussian_noise 3" if shifted else None, "rows": rows},
          open(f"{out}/summary.json", "w"), indent=2)
print()
print(table)
print("\n" + gain_line)
print(held_line)
if safe_line:
    print(safe_line)
print(f"ECE {rep['ece']:.2f} % -> {rep['temperature']['ece']:.2f} % at temperature {rep['temperature']['value']:.3f}")
print(f"plot:   {out}/sweep/sweep.svg")
print(f"report: {out}/report.md")
PY
