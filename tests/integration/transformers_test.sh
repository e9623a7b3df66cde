#!/usr/bin/env bash
# Vision transformers and ConvNeXt through the CLI, on a small image folder: train vit_demo and
# convnext_demo at a low resolution, fine-tune at a higher one (the position embedding resampled
# when the weights load), evaluate at several sizes with one model (resampled per input), sweep,
# predict, export; the fine-tuning scopes learn what they say (checked against the weights before
# and after, tests/reference/vit_finetune_check.py). Bad input gets one line and its exit code:
# an image size that is not a multiple of the patch size (2), a weight file whose position
# embedding is no patch grid (4), register tokens loaded into a model without them (4), calibrate
# on a model without BatchNorm (2), head-pos on a ConvNeXt (2).
set -u
source "$(dirname "$0")/lib.sh" "$@"
REF="$SRC/tests/reference"
D="$WORK/data"
RUNS="$WORK/runs"
"$PY" "$REF/make_image_folder.py" "$D" --classes 3 --train 8 --val 4 --size 40 >/dev/null || bad "data generation"
mkdir -p "$D/holdout" && cp -r "$D/val/." "$D/holdout/"

COMMON=(--imnet-path "$D" --workers 1 --batch 4 --shared-folder-path "$RUNS")
for arch in vit_demo convnext_demo; do
  # 1. Train at 16 px.
  run "$FIXRES" train "${COMMON[@]}" --architecture "$arch" --input-size 16 \
    --epochs 1 --iteration-cap 3 --job-id "$arch"
  expect_code 0
  CK="$RUNS/train/$arch/checkpoint.pth"
  expect_file "$CK"
  # 2. Fine-tune at 24 px: the 4x4 embedding of the checkpoint is resampled to 6x6 as it loads
  # (the evaluation at 32 px resamples it per input).
  run "$FIXRES" finetune "${COMMON[@]}" --architecture "$arch" --input-size 24 --eval-size 32 --epochs 1 \
    --iteration-cap 2 --weight-path "$CK" --job-id "$arch-ft"
  expect_code 0
  FT="$RUNS/finetune/$arch-ft/checkpoint.pth"
  expect_file "$FT"
  # 3. One model at three sizes.
  run "$FIXRES" eval --imnet-path "$D" --architecture "$arch" --weight-path "$FT" \
    --input-size 16,24,32 --workers 1 --batch 4
  expect_code 0; expect_out "32"
  # 4. Sweep with fine-tuning at each size; the sweep folder is a model folder for predict.
  run "$FIXRES" sweep --imnet-path "$D" --split holdout --architecture "$arch" --weight-path "$CK" \
    --train-size 16 --sizes 16,24 --finetune --finetune-epochs 1 --finetune-iterations 2 \
    --workers 1 --batch 4 --out "$WORK/sweep-$arch"
  expect_code 0; expect_file "$WORK/sweep-$arch/sweep.json"
  run "$FIXRES" predict "$D/val" --weight-path "$WORK/sweep-$arch" --out "$WORK/p-$arch.csv" \
    --workers 1 --batch 4
  expect_code 0; expect_file "$WORK/p-$arch.csv"
  # The sweep's choice as ONNX at the chosen size, and as a timm hub folder (safetensors) that
  # fixres reads back.
  run "$FIXRES" export --weight-path "$WORK/sweep-$arch" --format onnx --out "$WORK/$arch.onnx"
  expect_code 0; expect_out "as onnx .*test size (16|24) px"
  run "$FIXRES" export --weight-path "$WORK/sweep-$arch" --format timm-hub --out "$WORK/hub-$arch"
  expect_code 0; expect_file "$WORK/hub-$arch/model.safetensors"
  run "$FIXRES" predict "$D/val" --weight-path "$WORK/hub-$arch" --out "$WORK/h-$arch.csv" --workers 1
  expect_code 0
  # Batch 4 against the default batch: scores within 1e-5 relative, not byte for byte (another
  # batch size sums in another order; tests/reference/same_predictions.py says why).
  run "$PY" "$REF/same_predictions.py" "$WORK/p-$arch.csv" "$WORK/h-$arch.csv"
  [ "$CODE" -eq 0 ] || bad "the hub folder predicts otherwise than the sweep folder: $(cat "$ERR")"
  # 5. Export in timm's layout at the test size.
  run "$FIXRES" export --architecture "$arch" --num-classes 3 --weight-path "$FT" --format timm \
    --input-size 24 --out "$WORK/$arch-timm.pth"
  expect_code 0; expect_file "$WORK/$arch-timm.pth"
  # 6. calibrate: no BatchNorm, nothing to recalibrate.
  run "$FIXRES" calibrate --architecture "$arch" --weight-path "$CK" --dataset-path "$D/train" \
    --input-size 24 --workers 1 --out "$WORK/cal-$arch.pth"
  expect_code 2; expect_err_lines 1; expect_err "no BatchNorm layer, so nothing to recalibrate"
  [ ! -e "$WORK/cal-$arch.pth" ] || bad "a refused calibrate wrote a file"
done

# Fine-tuning scopes: which tensors changed, against the checkpoint they started from.
CK="$RUNS/train/vit_demo/checkpoint.pth"
for scope in head head-pos recipe all; do
  run "$FIXRES" finetune "${COMMON[@]}" --architecture vit_demo --input-size 16 --epochs 1 \
    --iteration-cap 2 --weight-path "$CK" --finetune-scope "$scope" --learning-rate 0.5 \
    --absolute-lr --job-id "scope-$scope"
  expect_code 0
  run "$PY" "$REF/vit_finetune_check.py" "$CK" "$RUNS/finetune/scope-$scope/checkpoint.pth" "$scope"
  expect_code 0; echo "scope $scope: $(cat "$OUT")"
done
run "$FIXRES" finetune "${COMMON[@]}" --architecture convnext_demo --input-size 24 --epochs 1 \
  --iteration-cap 1 --weight-path "$RUNS/train/convnext_demo/checkpoint.pth" \
  --finetune-scope head-pos --job-id cn-pos
expect_code 2; expect_err "^fixres: error: --finetune-scope head-pos: a convnext model has no position embedding"

# Several sizes resample from the weights' own grid (16 px: 4x4), once: the order of the sizes
# changes nothing, and each equals an evaluation at that size alone (resampled as it loads).
for sizes in 24,32 32,24 32; do
  run "$FIXRES" eval --imnet-path "$D" --architecture vit_demo --weight-path "$CK" \
    --input-size "$sizes" --workers 1 --json "$WORK/order-$sizes.json"
  expect_code 0
done
"$PY" - "$WORK/order-24,32.json" "$WORK/order-32,24.json" "$WORK/order-32.json" <<'EOF2' ||
import json, sys
def losses(path):
    d = json.load(open(path))
    return {r["input_size"]: r["loss"] for r in d["results"]}
a, b, c = (losses(p) for p in sys.argv[1:])
for size in (24, 32):
    assert abs(a[size] - b[size]) <= 1e-6 * abs(a[size]), (size, a, b)
assert abs(a[32] - c[32]) <= 1e-6 * abs(c[32]), (a, c)
EOF2
  bad "a ViT evaluated at several sizes depends on their order"
# Bad input. An image size that is not a multiple of the patch size (4 px): exit 2 naming it.
run "$FIXRES" eval --imnet-path "$D" --architecture vit_demo --weight-path "$CK" --input-size 30 \
  --workers 1
expect_code 2; expect_err_lines 1; expect_err "multiples of its patch size 4: 30x30"
run "$FIXRES" eval --imnet-path "$D" --architecture vit_demo --weight-path "$CK" --input-size 24 \
  --img-size 30 --workers 1
expect_code 2; expect_err_lines 1; expect_err "30x30"
# With --dynamic-img-size the patch grid truncates, as timm's: 30 px is a 7x7 grid.
run "$FIXRES" eval --imnet-path "$D" --architecture vit_demo --weight-path "$CK" --input-size 30 \
  --img-size 32 --dynamic-img-size --workers 1
expect_code 0
# A weight file whose position embedding has no patch grid (one token short): exit 4 naming it.
run "$PY" "$REF/vit_finetune_check.py" damage "$CK" "$WORK/no-grid.pth"
expect_code 0
run "$FIXRES" eval --imnet-path "$D" --architecture vit_demo --weight-path "$WORK/no-grid.pth" \
  --input-size 24 --workers 1
expect_code 4; expect_err_lines 1; expect_err "no-grid.pth: pos_embed has .* not a square grid"
# Register tokens loaded into a model without them: exit 4 naming the file and the tokens.
run "$PY" "$REF/vit_finetune_check.py" add-reg "$CK" "$WORK/reg.pth"
expect_code 0
run "$FIXRES" export --architecture vit_demo --num-classes 3 --weight-path "$WORK/reg.pth" \
  --format timm --out "$WORK/x.pth"
expect_code 4; expect_err_lines 1; expect_err "reg.pth: the file has register tokens"
[ ! -e "$WORK/x.pth" ] || bad "a refused export wrote a file"
finish
