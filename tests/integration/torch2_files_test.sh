#!/usr/bin/env bash
# fixres's files in the hands of a PyTorch user, with the torch of $PY (FIXRES_PYTHON: 1.13 or 2.x;
# tests/reference/torch2_files.py):
# 1. every torch file fixres writes (train and finetune checkpoints with their model_ema, export in
#    each format and with --use-ema, calibrate) loads with torch.load(f, weights_only=True) with
#    every warning an error, with the default torch.load and, on torch 2.1+, with mmap=True, the
#    same objects each way (torch 1.x's weights-only unpickler reads no float: checkpoints there);
# 2. fixres reads what this torch's torch.save(model.state_dict(), f) writes with its defaults:
#    `fixres extract` with torchvision's resnet18 and resnet50 gives torchvision's logits and
#    embeddings (PIL, FixRes val transform; relative L2 < 1e-5), and its export loads in the
#    FixRes reference's loader;
# 3. TensorBoard's own reader (EventAccumulator) finds every scalar of metrics.jsonl in the runs'
#    event files at its step, as float32 (skipped without the tensorboard package);
# 4. `export --format timm` of every family with a timm layout (ResNet, EfficientNet tf_ and not,
#    the WSL ResNeXt, PNASNet) loads strictly in timm (the installed package, else timm's source
#    in ../shared/oracles; skipped without either) with the logits of the source weights.
set -u
source "$(dirname "$0")/lib.sh" "$@"
REF="$SRC/tests/reference"
H="$REF/torch2_files.py"
ORACLES="$SRC/../shared/oracles"
D="$WORK/data"
"$PY" "$REF/make_image_folder.py" "$D" --classes 3 --train 4 --val 2 --size 32 >/dev/null || bad "data generation"
RUNS="$WORK/runs"
FILES=()  # NAME=PATH of every torch file fixres wrote

# 1. Train (12 images, batch 4: 3 steps per epoch; stopped after step 2 and resumed) and finetune,
# both with EMA weights; export and calibrate.
T=(train --imnet-path "$D" --architecture resnet_tiny --workers 1 --log-every 1 --sampler distributed
  --input-size 24 --batch 4 --seed 3 --epochs 2 --model-ema --model-ema-steps 1 --shared-folder-path "$RUNS" --job-id t)
run "$FIXRES" "${T[@]}" --stop-after-steps 2
expect_code 0
run "$FIXRES" "${T[@]}"
expect_code 0; expect_out "^after training: top-1 .* at 24 px$"
CK="$RUNS/train/t/checkpoint.pth"
run "$FIXRES" finetune --imnet-path "$D" --architecture resnet_tiny --workers 1 --log-every 1 --input-size 32 \
  --batch 4 --epochs 1 --model-ema --model-ema-steps 1 --weight-path "$CK" --shared-folder-path "$RUNS" --job-id f
expect_code 0
FILES+=("train/checkpoint.pth=$CK" "train/checkpoint_0.pth=$RUNS/train/t/checkpoint_0.pth"
  "finetune/checkpoint.pth=$RUNS/finetune/f/checkpoint.pth")
for fmt in fixres torchvision timm; do
  run "$FIXRES" export --architecture resnet_tiny --num-classes 3 --weight-path "$CK" --format $fmt --out "$WORK/tiny.$fmt.pth"
  expect_code 0; expect_out "exported"; FILES+=("export --format $fmt=$WORK/tiny.$fmt.pth")
done
run "$FIXRES" export --architecture resnet_tiny --num-classes 3 --weight-path "$CK" --use-ema --out "$WORK/tiny.ema.pth"
expect_code 0; FILES+=("export --use-ema=$WORK/tiny.ema.pth")
run "$FIXRES" calibrate --architecture resnet_tiny --weight-path "$CK" --dataset-path "$D/train" --input-size 32 \
  --workers 1 --out "$WORK/tiny.cal.pth"
expect_code 0; FILES+=("calibrate=$WORK/tiny.cal.pth")

# 2. torch.save(model.state_dict(), f) of this torch, read by fixres: extract and export.
run "$PY" "$H" reference "$D/val" 64 "$WORK" resnet18 resnet50 efficientnet_b0
expect_code 0; cat "$OUT"
PAIRS=()
for arch in resnet18 resnet50; do
  run "$FIXRES" extract --dataset-path "$D/val" --architecture $arch --num-classes 10 --weight-path "$WORK/$arch.pth" \
    --input-size 64 --batch 6 --workers 1 --save-path "$WORK/x_$arch"
  expect_code 0
  for what in logits embedding; do PAIRS+=("$WORK/x_$arch/${arch}_$what.npy" "$WORK/ref_${arch}_$what.npy"); done
done
run "$PY" "$H" compare "${PAIRS[@]}"
expect_code 0; echo "fixres extract vs torchvision on the same file:"; cat "$OUT"
run "$FIXRES" export --architecture resnet50 --num-classes 10 --weight-path "$WORK/resnet50.pth" --out "$WORK/resnet50.fixres.pth"
expect_code 0
FILES+=("export resnet50 --format fixres=$WORK/resnet50.fixres.pth")
CHECKS=("fixres,resnet50,$WORK/resnet50.pth,$WORK/resnet50.fixres.pth,")

# 3. TensorBoard's reader on both runs.
# TensorBoard from $PY, else from the project's PyPI environment (make torch2-env).
TB_PY=$PY
if ! "$PY" -c "import tensorboard" 2>/dev/null && [ -x "$SRC/.venv-torch2/bin/python" ]; then
  TB_PY=$(served_python "$SRC/.venv-torch2/bin/python")
fi
run "$TB_PY" "$H" events "$RUNS/train/t" "$RUNS/finetune/f"
expect_code 0; cat "$OUT"
grep -q "^SKIP: no tensorboard" "$OUT" && skip_check tensorboard "no tensorboard package for $PY: TensorBoard's reader"

# 4. export --format timm of each family, strictly in timm. Source weights: torchvision's (resnet18,
# efficientnet_b0, from 2) or timm's (the others), random with randomised BatchNorm.
TIMM=""
if ! env -u PYTHONPATH "$PY" -c 'import timm' 2>/dev/null && required timm-pypi; then
  skip_check timm-pypi "no timm package for $PY"
fi
if env -u PYTHONPATH "$PY" -c 'import timm' 2>/dev/null; then TIMM=pypi
elif [ -f "$ORACLES/timm/__init__.py" ]; then TIMM="$ORACLES"; fi
if [ -n "$TIMM" ]; then
  FAMILIES="resnet resnet18 $WORK/resnet18.pth
efficientnet efficientnet_b0 $WORK/efficientnet_b0.pth
efficientnet tf_efficientnet_b0 $WORK/timm_tf_efficientnet_b0.pth
resnext-wsl resnext101_32x16d $WORK/timm_resnext101_32x16d.pth
pnasnet pnasnet5large $WORK/timm_pnasnet5large.pth"
  run "$PY" "$H" timm-weights "$TIMM" "$WORK" tf_efficientnet_b0 resnext101_32x16d pnasnet5large
  expect_code 0; cat "$OUT"
  while read -r family arch source <&3; do
    run "$FIXRES" export --architecture "$arch" --num-classes 10 --weight-path "$source" --format timm --out "$WORK/$arch.timm.pth"
    expect_code 0
    CHECKS+=("timm,$arch,$source,$WORK/$arch.timm.pth,$TIMM")
    case $arch in resnext* | pnasnet*) ;; *) FILES+=("export $arch --format timm=$WORK/$arch.timm.pth") ;; esac
  done 3<<<"$FAMILIES"
else
  skip_check timm "no timm package for $PY and no timm source at $ORACLES: the timm families"
fi
run "$PY" "$H" export-checks "${CHECKS[@]}"
expect_code 0
if [ -n "$TIMM" ]; then
  echo "| family | architecture | source weights | timm.create_model(...).load_state_dict(strict=True), logits |"
  echo "|---|---|---|---|"
  while read -r family arch source; do
    echo "| $family | $arch | $(basename "$source") | $(grep "^$arch timm: " "$OUT" | sed "s/^$arch timm: //") |"
  done <<<"$FAMILIES"
fi
grep "^resnet50 fixres: " "$OUT" | sed 's/^/export (the reference loader) /'
rm -f "$WORK"/*resnext101* "$WORK"/*pnasnet*

# Every file of 1, 2 and 4 through torch.load.
run "$PY" "$H" load "${FILES[@]}"
expect_code 0; cat "$OUT"
finish
