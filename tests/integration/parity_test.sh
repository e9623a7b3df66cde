#!/usr/bin/env bash
# fixres eval and one fixres finetune step against PyTorch + torchvision + PIL on the same
# weights (random resnet18 saved by Python, also in the legacy torch.save format and as
# safetensors) and the same images: same top-1, and the same classifier and last-BN statistics
# after one step (relative L2 error < 1e-4).
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"
REF="$SRC/tests/reference/finetune_reference.py"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 6 --val 6 --seed 5 >/dev/null || bad "data"
"$PY" "$REF" make-weights "$WORK/w.pth" 3 || bad "weights"

for size in 32 40; do
  expected=$("$PY" "$REF" eval "$D" "$WORK/w.pth" $size)
  run "$FIXRES" eval --imnet-path "$D" --architecture resnet18 --weight-path "$WORK/w.pth" --input-size $size --batch 4
  expect_code 0; expect_out "^ +$size +$expected "
done

# The same weights saved by Python in the legacy (pre-1.6) torch.save format and as safetensors.
"$PY" "$SRC/tests/reference/weight_formats.py" convert "$WORK/w.pth" "$WORK/w_legacy.pth" \
  "$WORK/w.safetensors" || bad "converted weights"
expected=$("$PY" "$REF" eval "$D" "$WORK/w.pth" 32)
for w in w_legacy.pth w.safetensors; do
  run "$FIXRES" eval --imnet-path "$D" --architecture resnet18 --weight-path "$WORK/$w" --input-size 32 --batch 4
  expect_code 0; expect_out "^ +32 +$expected "
done

# One step on the whole train split (18 images in one batch, so the order does not matter).
run "$FIXRES" finetune --imnet-path "$D" --architecture resnet18 --weight-path "$WORK/w.pth" \
  --input-size 32 --epochs 1 --batch 18 --workers 1 --learning-rate 0.05 --absolute-lr \
  --shared-folder-path "$WORK/runs" --job-id p1
expect_code 0
run "$PY" "$REF" step "$D" "$WORK/w.pth" 32 0.05 "$WORK/runs/finetune/p1/checkpoint.pth"
expect_code 0; expect_out "relative L2 errors"
finish
