#!/usr/bin/env bash
# EfficientNet and PNASNet through the whole of fixres: `fixres extract` on real JPEGs with the FixRes val
# transform, at the architecture's default resolution (224) and at a higher test resolution
# (288), against timm (../shared/oracles) with PIL/torchvision's transform on the same files and
# the same weights: logits within relative L2 1e-5; also with --interpolation bicubic, --mean
# and --std. The reference's spelling (--architecture
# EfficientNet --EfficientNet-models NAME_ap) runs the same model. Skipped without the oracle.
set -u
source "$(dirname "$0")/lib.sh" "$@"
ORACLES="$SRC/../shared/oracles"
[ -f "$ORACLES/timm/__init__.py" ] || { echo "SKIP: no timm source at $ORACLES"; exit 77; }
REF="$SRC/tests/reference/zoo_reference.py"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 1 --val 3 --seed 7 --size 80 >/dev/null || bad "data"
"$PY" "$REF" weights tf_efficientnet_b0 "$WORK/w.pth" "$ORACLES" || bad "weights"

compare() {  # ours.npy reference.npy
  "$PY" - "$1" "$2" <<'PYEOF'
import sys, numpy
a, b = numpy.load(sys.argv[1]).astype("float64"), numpy.load(sys.argv[2]).astype("float64")
err = numpy.linalg.norm(a - b) / numpy.linalg.norm(b)
# Random deep networks give nearly the same logits for every image: the differences between
# images (logits minus their mean over images) are compared too, so that a wrong transform shows.
ca, cb = a - a.mean(0), b - b.mean(0)
cerr = numpy.linalg.norm(ca - cb) / numpy.linalg.norm(cb)
print("relative L2 error", err, "between images", cerr, "shape", a.shape)
sys.exit(0 if a.shape == b.shape and err < 1e-5 and cerr < 1e-3 else 1)
PYEOF
}

for size in 224 288; do
  "$PY" "$REF" logits "$WORK/w.pth" tf_efficientnet_b0 "$D/val" $size "$WORK/ref$size.npy" "$ORACLES" || bad "reference $size"
  run "$FIXRES" extract --dataset-path "$D/val" --architecture tf_efficientnet_b0 --num-classes 10 \
    --weight-path "$WORK/w.pth" --input-size $size --batch 4 --save-path "$WORK/x$size"
  expect_code 0
  run compare "$WORK/x$size/tf_efficientnet_b0_logits.npy" "$WORK/ref$size.npy"
  expect_code 0; expect_out "relative L2 error"; cat "$OUT"
done

run "$FIXRES" extract --dataset-path "$D/val" --architecture EfficientNet \
  --EfficientNet-models tf_efficientnet_b0_ap --num-classes 10 --weight-path "$WORK/w.pth" \
  --input-size 224 --batch 4 --save-path "$WORK/ref_spelling"
expect_code 0
run compare "$WORK/ref_spelling/EfficientNet_logits.npy" "$WORK/ref224.npy"
expect_code 0

# The preprocessing overrides: bicubic resize, mean = std = 0.5 (PIL's BICUBIC in the reference).
"$PY" "$REF" logits "$WORK/w.pth" tf_efficientnet_b0 "$D/val" 240 "$WORK/refbic.npy" "$ORACLES" bicubic-half || bad "reference bicubic"
run "$FIXRES" extract --dataset-path "$D/val" --architecture tf_efficientnet_b0 --num-classes 10 \
  --weight-path "$WORK/w.pth" --input-size 240 --batch 4 --save-path "$WORK/bic" \
  --interpolation bicubic --mean 0.5 0.5 0.5 --std 0.5 0.5 0.5
expect_code 0
run compare "$WORK/bic/tf_efficientnet_b0_logits.npy" "$WORK/refbic.npy"
expect_code 0; cat "$OUT"

# PNASNet-5-Large (the reference's spelling PNASNet) with its own preprocessing (mean = std = 0.5)
# at its train resolution 331 and at FixPNASNet's test resolution 480, on 3 images.
"$PY" "$REF" weights pnasnet5large "$WORK/pnas.pth" "$ORACLES" || bad "pnasnet weights"
mkdir -p "$WORK/pval"; for c in "$D"/val/*; do mkdir -p "$WORK/pval/$(basename "$c")"; cp "$(ls "$c"/* | head -1)" "$WORK/pval/$(basename "$c")/"; done
for size in 331 480; do
  "$PY" "$REF" logits "$WORK/pnas.pth" pnasnet5large "$WORK/pval" $size "$WORK/pref$size.npy" "$ORACLES" half || bad "pnasnet reference $size"
  run "$FIXRES" extract --dataset-path "$WORK/pval" --architecture PNASNet --num-classes 10 \
    --weight-path "$WORK/pnas.pth" --input-size $size --batch 3 --save-path "$WORK/p$size"
  expect_code 0
  run compare "$WORK/p$size/PNASNet_logits.npy" "$WORK/pref$size.npy"
  expect_code 0; echo "pnasnet5large $size: $(cat "$OUT")"
done

# The reference's spelling without the model name is a usage error naming the flag.
run "$FIXRES" extract --dataset-path "$D/val" --architecture EfficientNet --weight-path "$WORK/w.pth" \
  --save-path "$WORK/none"
expect_code 2; expect_err "EfficientNet-models"
finish
