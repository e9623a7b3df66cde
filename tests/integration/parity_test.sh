#!/usr/bin/env bash
# fixres eval and one fixres finetune step against PyTorch + torchvision + PIL on the same
# weights (random resnet18 saved by Python, also in the legacy torch.save format and as
# safetensors) and the same images: the same logits (extract) and top-1 (eval) up to float
# rounding and near ties, and the same classifier and last-BN statistics after one step (relative
# L2 error < 1e-4).
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"
REF="$SRC/tests/reference/finetune_reference.py"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 6 --val 6 --seed 5 >/dev/null || bad "data"
"$PY" "$REF" make-weights "$WORK/w.pth" 3 || bad "weights"

# PyTorch's logits of the val images (finetune_reference.py's transform and model, one batch of
# 18) in the layout of `fixres extract`, which runs batches of 4. The batches sum in another
# order, so the two agree to about 1e-6, not to the last bit (bitwise here, not on every CPU or
# LibTorch): near_ties.py wants every logit within 1e-4 relative (to max(1, |logit|); a wrong
# resize, crop or normalisation moves them by 1e-2 and more) and the same top-1 class per image
# but where PyTorch's two largest logits are within 1e-4 (a near tie may flip), and eval's
# top-1 to be PyTorch's up to those near ties (exact when there are none).
NT="$SRC/tests/reference/near_ties.py"
torch_logits() {  # torch_logits SIZE OUT_DIR
  "$PY" - "$SRC/tests/reference" "$D/val" "$WORK/w.pth" "$@" <<'EOF'
import os, sys, numpy, torch
sys.path.insert(0, sys.argv[1])
from finetune_reference import all_images, load
x, y, c = all_images(sys.argv[2], int(sys.argv[4]))
with torch.no_grad():
    logits = load(sys.argv[3], c).eval()(x)
os.makedirs(sys.argv[5], exist_ok=True)
numpy.save(os.path.join(sys.argv[5], "resnet18_logits.npy"), logits.numpy())
numpy.save(os.path.join(sys.argv[5], "labels.npy"), y.numpy())
EOF
}
for size in 32 40; do
  torch_logits $size "$WORK/torch$size" || bad "PyTorch logits at $size px"
  run "$FIXRES" extract --dataset-path "$D/val" --architecture resnet18 --weight-path "$WORK/w.pth" \
    --input-size $size --batch 4 --save-path "$WORK/ext$size"
  expect_code 0
  run "$PY" "$NT" logits "$WORK/torch$size" "$WORK/ext$size" resnet18
  expect_code 0; cat "$OUT"
  run "$FIXRES" eval --imnet-path "$D" --architecture resnet18 --weight-path "$WORK/w.pth" --input-size $size --batch 4
  expect_code 0; expect_out "^ +$size +[0-9.]+ "
  run "$PY" "$NT" top1 "$WORK/torch$size" resnet18 "$(awk -v s=$size '$1 == s {print $2}' "$OUT")"
  expect_code 0
done

# The same weights saved by Python in the legacy (pre-1.6) torch.save format and as safetensors.
"$PY" "$SRC/tests/reference/weight_formats.py" convert "$WORK/w.pth" "$WORK/w_legacy.pth" \
  "$WORK/w.safetensors" || bad "converted weights"
for w in w_legacy.pth w.safetensors; do
  run "$FIXRES" eval --imnet-path "$D" --architecture resnet18 --weight-path "$WORK/$w" --input-size 32 --batch 4
  expect_code 0; expect_out "^ +32 +[0-9.]+ "
  run "$PY" "$NT" top1 "$WORK/torch32" resnet18 "$(awk '$1 == 32 {print $2}' "$OUT")"
  expect_code 0
done

# One step on the whole train split (18 images in one batch, so the order does not matter).
run "$FIXRES" finetune --imnet-path "$D" --architecture resnet18 --weight-path "$WORK/w.pth" \
  --input-size 32 --epochs 1 --batch 18 --workers 1 --learning-rate 0.05 --absolute-lr \
  --shared-folder-path "$WORK/runs" --job-id p1
expect_code 0
run "$PY" "$REF" step "$D" "$WORK/w.pth" 32 0.05 "$WORK/runs/finetune/p1/checkpoint.pth"
expect_code 0; expect_out "relative L2 errors"
finish
