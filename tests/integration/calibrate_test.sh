#!/usr/bin/env bash
# `fixres calibrate` end to end against PyTorch: the BatchNorm statistics re-estimated from the
# images of a folder (labels unused, one batch) at a test resolution equal torchvision's resnet18
# given the same images through PIL and the FixRes val transform, every BN reset and run with
# momentum None (tests/reference/finetune_reference.py calibrate); the weights are untouched and
# the file loads in `fixres eval`. A flat folder of unlabelled images works with --num-classes;
# refusals name the flag or file.
set -u
source "$(dirname "$0")/lib.sh" "$@"
REF="$SRC/tests/reference"
D="$WORK/data"
"$PY" "$REF/make_image_folder.py" "$D" --classes 3 --train 5 --val 3 --size 40 >/dev/null || bad "data generation"
"$PY" "$REF/finetune_reference.py" make-weights "$WORK/w.pth" 3 || bad "weights"

run "$FIXRES" calibrate --architecture resnet18 --weight-path "$WORK/w.pth" --dataset-path "$D/train" \
  --input-size 56 --batch 64 --workers 1 --out "$WORK/cal.pth"
expect_code 0; expect_out "calibrated 20 BatchNorm layers of resnet18 at 56 px on 15 images"
run "$PY" "$REF/finetune_reference.py" calibrate "$D" "$WORK/w.pth" 56 "$WORK/cal.pth"
expect_code 0; echo "vs PyTorch: $(cat "$OUT")"
run "$FIXRES" eval --imnet-path "$D" --architecture resnet18 --weight-path "$WORK/cal.pth" --input-size 56 --workers 1
expect_code 0; expect_out "top1"

# A flat folder of unlabelled images (copies without class folders): the same statistics.
mkdir -p "$WORK/flat"
i=0; for f in $(find "$D/train" -type f | sort); do cp "$f" "$WORK/flat/img$i.${f##*.}"; i=$((i + 1)); done
run "$FIXRES" calibrate --architecture resnet18 --weight-path "$WORK/w.pth" --dataset-path "$WORK/flat" \
  --input-size 56 --batch 64 --workers 1 --out "$WORK/flat.pth"
expect_code 2; expect_err "--num-classes"; expect_err_lines 1
[ ! -e "$WORK/flat.pth" ] || bad "a refused calibrate wrote a file"
run "$FIXRES" calibrate --architecture resnet18 --num-classes 3 --weight-path "$WORK/w.pth" \
  --dataset-path "$WORK/flat" --input-size 56 --batch 64 --workers 1 --out "$WORK/flat.pth"
expect_code 0; expect_out "on 15 images"
run "$PY" "$REF/finetune_reference.py" calibrate "$D" "$WORK/w.pth" 56 "$WORK/flat.pth"
expect_code 0

# A subset: --max-images.
run "$FIXRES" calibrate --architecture resnet18 --weight-path "$WORK/w.pth" --dataset-path "$D/train" \
  --input-size 56 --batch 4 --max-images 6 --workers 1 --out "$WORK/sub.pth"
expect_code 0; expect_out "on 6 images \(2 batches\)"

# A last batch of one image (6 images, --batch 5; at 32 px resnet18's last BatchNorms see 1x1 maps,
# one value per channel) joins the batch before it: the same statistics as PyTorch from one batch
# of the 6. One image in all, or --batch 1, is refused naming the flag.
D6="$WORK/six"
"$PY" "$REF/make_image_folder.py" "$D6" --classes 3 --train 2 --val 1 --size 40 >/dev/null || bad "data generation"
run "$FIXRES" calibrate --architecture resnet18 --weight-path "$WORK/w.pth" --dataset-path "$D6/train" \
  --input-size 32 --batch 5 --workers 1 --out "$WORK/six.pth"
expect_code 0; expect_out "on 6 images \(1 batches\)"
run "$PY" "$REF/finetune_reference.py" calibrate "$D6" "$WORK/w.pth" 32 "$WORK/six.pth"
expect_code 0; echo "one-image last batch vs PyTorch: $(cat "$OUT")"
for args in "--max-images 1" "--batch 1"; do
  run "$FIXRES" calibrate --architecture resnet18 --weight-path "$WORK/w.pth" --dataset-path "$D6/train" \
    --input-size 32 --workers 1 --out "$WORK/one.pth" $args
  expect_code 2; expect_err_lines 1; expect_err "${args% *}"
  [ ! -e "$WORK/one.pth" ] || bad "a refused calibrate wrote a file"
done

# Refusals: no weights (2), a missing folder (3), an empty one (3), bad flag values (2).
run "$FIXRES" calibrate --architecture resnet18 --dataset-path "$D/train" --out "$WORK/x.pth"
expect_code 2; expect_err "--weight-path"
run "$FIXRES" calibrate --architecture resnet18 --weight-path "$WORK/w.pth" --dataset-path "$WORK/none" --out "$WORK/x.pth"
expect_code 3; expect_err "$WORK/none"
mkdir -p "$WORK/empty/sub"
run "$FIXRES" calibrate --architecture resnet18 --num-classes 3 --weight-path "$WORK/w.pth" --dataset-path "$WORK/empty" --out "$WORK/x.pth"
expect_code 3; expect_err "found no image"
run "$FIXRES" calibrate --architecture resnet18 --weight-path "$WORK/w.pth" --dataset-path "$D/train" --max-images 0 --out "$WORK/x.pth"
expect_code 2; expect_err "--max-images"
[ ! -e "$WORK/x.pth" ] || bad "a refused calibrate wrote a file"
finish
