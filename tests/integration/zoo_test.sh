#!/usr/bin/env bash
# EfficientNet and PNASNet through the whole of fixres: `fixres extract` on real JPEGs with the FixRes val
# transform, at the architecture's default resolution (224) and at a higher test resolution
# (288), against timm with PIL/torchvision's transform on the same files and the same weights:
# logits within relative L2 1e-5; also with --interpolation bicubic, --mean and --std. The
# reference's spelling (--architecture EfficientNet --EfficientNet-models NAME_ap) runs the same
# model. Run with the timm package $PY has installed (the second build's environment, timm from
# PyPI) where there is one, else with timm's source (../shared/oracles): CI's two legs compare
# with each once; skipped without either.
set -u
source "$(dirname "$0")/lib.sh" "$@"
ORACLES="$SRC/../shared/oracles"
TIMMS=()  # "pypi": the installed package, else the vendored source (zoo_reference.import_timm)
if env -u PYTHONPATH "$PY" -c 'import timm' 2>/dev/null; then TIMMS=(pypi)
elif [ -f "$ORACLES/timm/__init__.py" ]; then TIMMS=("$ORACLES"); fi
if ! env -u PYTHONPATH "$PY" -c 'import timm' 2>/dev/null && required timm-pypi; then
  skip_check timm-pypi "no timm package for $PY"
fi
[ ${#TIMMS[@]} -gt 0 ] || { skip_check timm "no timm source at $ORACLES, no timm package"; finish; }
REF="$SRC/tests/reference/zoo_reference.py"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 1 --val 3 --seed 7 --size 80 >/dev/null || bad "data"

compare() {  # ours.npy reference.npy [bound on the error between images, default 1e-3]
  "$PY" - "$1" "$2" "${3:-1e-3}" <<'PYEOF'
import sys, numpy
a, b = numpy.load(sys.argv[1]).astype("float64"), numpy.load(sys.argv[2]).astype("float64")
err = numpy.linalg.norm(a - b) / numpy.linalg.norm(b)
# Random deep networks give nearly the same logits for every image: the differences between
# images (logits minus their mean over images) are compared too, so that a wrong transform shows.
ca, cb = a - a.mean(0), b - b.mean(0)
cerr = numpy.linalg.norm(ca - cb) / numpy.linalg.norm(cb)
print("relative L2 error", err, "between images", cerr, "shape", a.shape)
sys.exit(0 if a.shape == b.shape and err < 1e-5 and cerr < float(sys.argv[3]) else 1)
PYEOF
}

for TIMM in "${TIMMS[@]}"; do
  echo "with $("$PY" "$REF" version "$TIMM")"
  W="$WORK/${TIMM##*/}"; mkdir -p "$W"
  "$PY" "$REF" weights tf_efficientnet_b0 "$W/w.pth" "$TIMM" || bad "weights"
  for size in 224 288; do
    "$PY" "$REF" logits "$W/w.pth" tf_efficientnet_b0 "$D/val" $size "$W/ref$size.npy" "$TIMM" || bad "reference $size"
    run "$FIXRES" extract --dataset-path "$D/val" --architecture tf_efficientnet_b0 --num-classes 10 \
      --weight-path "$W/w.pth" --input-size $size --batch 4 --save-path "$W/x$size"
    expect_code 0
    run compare "$W/x$size/tf_efficientnet_b0_logits.npy" "$W/ref$size.npy"
    expect_code 0; expect_out "relative L2 error"; cat "$OUT"
  done

  run "$FIXRES" extract --dataset-path "$D/val" --architecture EfficientNet \
    --EfficientNet-models tf_efficientnet_b0_ap --num-classes 10 --weight-path "$W/w.pth" \
    --input-size 224 --batch 4 --save-path "$W/ref_spelling"
  expect_code 0
  run compare "$W/ref_spelling/EfficientNet_logits.npy" "$W/ref224.npy"
  expect_code 0

  # The preprocessing overrides: bicubic resize, mean = std = 0.5 (PIL's BICUBIC in the reference).
  "$PY" "$REF" logits "$W/w.pth" tf_efficientnet_b0 "$D/val" 240 "$W/refbic.npy" "$TIMM" bicubic-half || bad "reference bicubic"
  run "$FIXRES" extract --dataset-path "$D/val" --architecture tf_efficientnet_b0 --num-classes 10 \
    --weight-path "$W/w.pth" --input-size 240 --batch 4 --save-path "$W/bic" \
    --interpolation bicubic --mean 0.5 0.5 0.5 --std 0.5 0.5 0.5
  expect_code 0
  run compare "$W/bic/tf_efficientnet_b0_logits.npy" "$W/refbic.npy"
  expect_code 0; cat "$OUT"

  # PNASNet-5-Large (the reference's spelling PNASNet) with its own preprocessing (mean = std = 0.5)
  # at its train resolution 331 and at FixPNASNet's test resolution 480, on 3 images. Its logits
  # differ between images by only ~3e-5 of their norm: float32 rounding alone (timm on torch 1.13
  # against timm on torch 2.11, same weights and images: 1.3e-2 between images) exceeds 1e-3, so
  # the bound there is 5e-2 (a wrong transform gives ~1).
  "$PY" "$REF" weights pnasnet5large "$W/pnas.pth" "$TIMM" || bad "pnasnet weights"
  mkdir -p "$W/pval"; for c in "$D"/val/*; do mkdir -p "$W/pval/$(basename "$c")"; cp "$(ls "$c"/* | head -1)" "$W/pval/$(basename "$c")/"; done
  for size in 331 480; do
    "$PY" "$REF" logits "$W/pnas.pth" pnasnet5large "$W/pval" $size "$W/pref$size.npy" "$TIMM" half || bad "pnasnet reference $size"
    run "$FIXRES" extract --dataset-path "$W/pval" --architecture PNASNet --num-classes 10 \
      --weight-path "$W/pnas.pth" --input-size $size --batch 3 --save-path "$W/p$size"
    expect_code 0
    run compare "$W/p$size/PNASNet_logits.npy" "$W/pref$size.npy" 5e-2
    expect_code 0; echo "pnasnet5large $size: $(cat "$OUT")"
  done
done

# The reference's spelling without the model name is a usage error naming the flag.
run "$FIXRES" extract --dataset-path "$D/val" --architecture EfficientNet --weight-path "$W/w.pth" \
  --save-path "$W/none"
expect_code 2; expect_err "EfficientNet-models"
finish
