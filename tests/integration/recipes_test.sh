#!/usr/bin/env bash
# The torchvision / timm recipe flags all at once: TrivialAugmentWide + random erasing, mixup and
# CutMix with label smoothing, EMA weights, AdamW with norm and bias weight-decay groups, gradient
# clipping, gradient accumulation and progressive resizing, on one run. It trains; stopped twice
# (mid-epoch, and at an epoch end where the resolution changes) and resumed, it ends bitwise equal
# to the uninterrupted run (model, model_ema, optimizer state); its TensorBoard event files pass
# the independent reader (framing, both CRC-32Cs, every scalar equal to metrics.jsonl); `fixres
# plot` draws it. fp16 is not among the flags: it needs CUDA (on the CPU it exits 2, see
# optim_test.sh).
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 8 --val 3 --size 40 >/dev/null || bad "data generation"
RUNS="$WORK/runs"
# 24 images, batch 2 x 2 micro-batches, distributed sampler: 6 steps per epoch, 3 epochs.
T=(train --architecture resnet_tiny --workers 2 --log-every 2 --sampler distributed --epochs 3
  --shared-folder-path "$RUNS" --imnet-path "$D" --input-size 32 --batch 2 --accumulation-steps 2
  --seed 5 --transform torch --auto-augment ta_wide --random-erase 0.5 --mixup-alpha 0.2
  --cutmix-alpha 1.0 --label-smoothing 0.1 --model-ema --model-ema-steps 2 --model-ema-decay 0.9
  --opt adamw --learning-rate 0.002 --absolute-lr --weight-decay 0.05 --norm-weight-decay 0
  --bias-weight-decay 0 --clip-grad-norm 1.0 --min-res 16 --max-res 32 --start-ramp 0
  --end-ramp 2 --lr-schedule cosine --warmup-epochs 1)

run "$FIXRES" "${T[@]}" --job-id ref
expect_code 0; expect_err "training at 24 px"; expect_err "EMA top-1"
run "$FIXRES" "${T[@]}" --job-id cut --stop-after-steps 4
expect_code 0; expect_out "stopped early"
run "$FIXRES" "${T[@]}" --job-id cut --stop-after-steps 12
expect_code 0; expect_out "stopped early"
run "$FIXRES" "${T[@]}" --job-id cut
expect_code 0
run "$PY" - "$RUNS/train/ref/checkpoint.pth" "$RUNS/train/cut/checkpoint.pth" <<'PY'
import sys, torch
a, b = (torch.load(p, map_location="cpu") for p in sys.argv[1:3])
for entry in ("model", "model_ema", "optimizer"):
    ka, kb = set(a[entry]), set(b[entry])
    assert ka == kb, (entry, ka ^ kb)
    diff = [k for k in ka if torch.is_tensor(a[entry][k]) and not torch.equal(a[entry][k], b[entry][k])]
    assert not diff, f"{entry}: {len(diff)} tensors differ, e.g. {diff[:3]}"
assert a["optimizer_kind"] == "adamw" and any(k.startswith("exp_avg_sq/") for k in a["optimizer"])
print("resumed run bitwise equal: model %d, model_ema %d, optimizer %d tensors"
      % (len(a["model"]), len(a["model_ema"]), len(a["optimizer"])))
PY
expect_code 0; cat "$OUT"
# The resolution followed the ramp in both runs: 16, 24, 32.
run "$PY" -c "import json,sys; print(sorted({json.loads(l).get('train_size') for l in open(sys.argv[1]) if 'train_size' in l}))" "$RUNS/train/cut/metrics.jsonl"
expect_code 0; expect_out "^\[16, 24, 32\]$"
# Event files (one per start of the run) read by the independent reader.
run "$PY" "$SRC/tests/reference/event_file_check.py" run "$RUNS/train/cut"
expect_code 0; expect_out "^ok: 3 files"; cat "$OUT"
run "$FIXRES" plot "$RUNS/train/cut"
expect_code 0; expect_file "$RUNS/train/cut/curves.svg"
finish
