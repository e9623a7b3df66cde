#!/usr/bin/env bash
# What a new user reads in the first hour: training's progress lines with the run's ETA and its
# plain last lines; eval's progress (FIXRES_PROGRESS_SECONDS) and its warning on the training
# images; numbers in JSON written rounded (no 55.00000000000001); suggest-resolution on the
# network's stride (the nearest multiple of the stride to the formula's figure, computed here);
# a command's help shows its own flags and no default a model folder overrides; a flag of
# another command is named as such.
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 8 --val 5 >/dev/null || bad "data generation"

run "$FIXRES" train --imnet-path "$D" --architecture resnet_tiny --input-size 32 --epochs 2 --batch 4 \
  --log-every 1 --learning-rate 0.05 --absolute-lr --shared-folder-path "$WORK/runs" --job-id t1
expect_code 0
expect_err "epoch 1/2  iter 1/[0-9]+ .* ETA [0-9]+s \(run [0-9]+(s|m[0-9]{2}s)\)$"
expect_out "^after training: top-1 [0-9.]+ %, top-5 [0-9.]+ % on 15 val images at 32 px$"
expect_out "^train: [0-9]+ steps in [0-9.]+ s; run folder $WORK/runs/train/t1$"
R="$WORK/runs/train/t1"
# The run's ETA (metrics.jsonl's run_eta_s) is the epoch's rest (eta_s) plus the later epochs at
# the epoch's rate so far: eta_s / (n - i) per iteration.
"$PY" - "$R/metrics.jsonl" <<'PY' || bad "the run's ETA is not the epoch's rest plus the later epochs"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if '"run_eta_s"' in l]
n = max(r["iteration"] for r in lines)
checked = 0
for r in lines:
    i, epochs_after = r["iteration"], 2 - r["epoch"] - 1
    if i < n:
        want = r["eta_s"] * (n - i + epochs_after * n) / (n - i)
        assert abs(r["run_eta_s"] - want) <= 1e-6 * max(1, want), (r, want)
        checked += 1
assert checked >= 4, checked
PY

# eval: progress lines when asked for every 0 s; a warning on the training folder.
FIXRES_PROGRESS_SECONDS=0 run "$FIXRES" eval --weight-path "$R" --imnet-path "$D" --batch 2 --json "$WORK/e.json"
expect_code 0; expect_err "evaluating at 32 px: batch 1 of 8, [0-9]+ img/s, about [0-9]+ s left"
grep -q "holds the images" "$ERR" && bad "a warning about training images on val/"
run "$FIXRES" eval --weight-path "$R" --dataset-path "$D/train"
expect_code 0; expect_err "$D/train holds the images $R was trained on"
FIXRES_PROGRESS_SECONDS=soon run "$FIXRES" eval --weight-path "$R" --imnet-path "$D"
expect_code 0; expect_err "FIXRES_PROGRESS_SECONDS=soon is not a number of seconds"
# 15 images: top-1 is k/15 in percent; every number written with at most 12 significant digits.
"$PY" - "$WORK/e.json" "$R/metrics.jsonl" <<'PY' || bad "unrounded numbers in eval --json or metrics.jsonl"
import json, sys
def floats(v):
    if isinstance(v, float): yield v
    elif isinstance(v, dict): yield from (x for w in v.values() for x in floats(w))
    elif isinstance(v, list): yield from (x for w in v for x in floats(w))
docs = [json.load(open(sys.argv[1]))] + [json.loads(l) for l in open(sys.argv[2])]
for d in docs:
    for x in floats(d):
        assert x == float(f"{x:.12g}"), x
PY
"$PY" -c "
import json, sys
r = json.load(open('$WORK/e.json'))
r = r['results'][0] if 'results' in r else r
k = round(r['top1'] * 15 / 100)
assert abs(r['top1'] - 100 * k / 15) < 1e-9, r
" || bad "eval --json's top1 is not k/15"

# suggest-resolution: the nearest multiple of the network's stride to the formula's figure.
for case in "24 resnet_tiny 8" "224 ResNet50 32" "160 vit_small_patch16_224 16"; do
  set -- $case
  run "$FIXRES" suggest-resolution --train-size "$1" --architecture "$2"
  expect_code 0
  raw=$(sed -n 's/.* -> test size \([0-9.]*\) .*/\1/p' "$OUT" | head -1)
  want=$("$PY" -c "import math; r=float('$raw'); print(max($3, int(math.floor(r / $3 + 0.5)) * $3))")
  expect_out "^suggested test resolution: $want \($2's stride is $3 px; $raw raw\)$"
done
run "$FIXRES" suggest-resolution --train-size 24 --multiple 5
expect_code 0; expect_out "^suggested test resolution: 35 \(a multiple of 5; 32.7 raw\)$"

# Help: predict shows its own flags, no default a model folder overrides.
run "$FIXRES" predict --help
expect_code 0
grep -Eq -- "--drop-rate|--drop-path-rate" "$OUT" && bad "predict's help lists training flags"
grep -Eq -- "=ResNet50|--crop-pct FLOAT:\[0.05, 1\]=" "$OUT" && bad "predict's help shows a default a model folder overrides"
expect_out "default: a model folder's when --weight-path names one, else ResNet50\)"
run "$FIXRES" train --help
expect_code 0; expect_out -- "--drop-rate"
run "$FIXRES" predict "$D/val" --weight-path "$R" --drop-rate 0.1
expect_code 2; expect_err_lines 1; expect_err "fixres predict does not take --drop-rate: it is a flag of train, finetune or sweep"
finish
