#!/usr/bin/env bash
# `fixres predict` and `fixres export --format timm-hub`, checked by other code than fixres's:
# 1. predict on a folder holding JPEGs (landscape, portrait, a CMYK one), PNGs and a corrupt file,
#    with a train run folder as weights (architecture, classes, test size from its config.json):
#    CSV (Python's csv module), JSON and JSON lines agree; every readable image's top-3 equals the
#    top-3 of `fixres extract`'s softmax.npy on the same images (within 1e-5 relative, the order
#    up to near ties: same_predictions.py); the corrupt file is one row with its error. The same
#    rows from a list file, from stdin, and from 2 ranks. A BMP, TIFF, PPM, PGM and lossless WebP
#    of an image give the rows of its PNG (the same rule).
# 2. the hub folder: model.safetensors parsed by the format's specification (hub_check.py) equals
#    the checkpoint's weights; config.json carries the test size, the class names and the resize
#    rule; fixres reads the folder back (predict gives the run folder's rows); timm loads it and,
#    through its own test-size preprocessing, gives fixres's logits (rel. L2 < 1e-5) for
#    resnet18, the EfficientNets, a distilled DeiT (its position embedding laid out for the test
#    size, timm told so by model_args) and a ConvNeXt (vendored timm and the installed package,
#    each when present).
# 3. bad input: a class-names file of the wrong length, an unknown --results-format, a missing input,
#    export to a non-empty folder (nothing overwritten): one line each, distinct exit codes.
set -u
source "$(dirname "$0")/lib.sh" "$@"
REF="$SRC/tests/reference"
ORACLES="$SRC/../shared/oracles"
D="$WORK/data"
"$PY" "$REF/make_image_folder.py" "$D" --classes 3 --train 8 --val 4 --size 48 >/dev/null || bad "data"
"$PY" - "$D/val/class1/cmyk.jpg" <<'EOF' || bad "cmyk"
import sys
from PIL import Image
Image.open(sys.argv[1].replace("cmyk.jpg", "000.jpg")).convert("CMYK").save(sys.argv[1], quality=90)
EOF
ls "$D"/val/*/* | grep -q "cmyk.jpg" || bad "no CMYK file"
RUN="$WORK/runs/train/j1"
run "$FIXRES" train --imnet-path "$D" --architecture resnet_tiny --workers 1 --input-size 24 \
  --batch 4 --epochs 1 --shared-folder-path "$WORK/runs" --job-id j1
expect_code 0
# The predicted folder: the val images and a corrupt JPEG.
P="$WORK/predict"
cp -r "$D/val" "$P"
head -c 300 "$P/class0/000.jpg" >"$P/class0/broken.jpg"

# --- 1. predict against extract -------------------------------------------------------------
run "$FIXRES" extract --weight-path "$RUN" --dataset-path "$D/val" --save-path "$WORK/npy" \
  --input-size 32 --workers 1
expect_code 0
for fmt in csv json jsonl; do
  run "$FIXRES" predict "$P" --weight-path "$RUN" --input-size 32 --topk 3 --results-format $fmt \
    --out "$WORK/p.$fmt" --workers 2 --batch 3
  expect_code 0; expect_err "predicted 13 of 14 images at 32 px \(1 unreadable"
done
run "$PY" "$REF/hub_check.py" predictions "$WORK/p.json" "$WORK/p.csv" "$WORK/p.jsonl" "$P" \
  "$D/val" "$WORK/npy" resnet_tiny 3
expect_code 0; expect_out "13 images equal to extract's softmax top-3, 1 unreadable"; cat "$OUT"
grep -q "class0/broken.jpg,,,,,,,,,,.*broken.jpg: Invalid JPEG" "$WORK/p.csv" || bad "the CSV row of the corrupt file"
# --min-prob: only the classes of extract's softmax top-5 at or above it (1 to 3 of the 3 here).
for fmt in csv json jsonl; do
  run "$FIXRES" predict "$P" --weight-path "$RUN" --input-size 32 --topk 5 --min-prob 0.32 \
    --results-format $fmt --out "$WORK/m.$fmt" --workers 1
  expect_code 0
done
run "$PY" "$REF/hub_check.py" predictions "$WORK/m.json" "$WORK/m.csv" "$WORK/m.jsonl" "$P" \
  "$D/val" "$WORK/npy" resnet_tiny 5 0.32
expect_code 0; expect_out "13 images equal to extract's softmax top-5"
run "$FIXRES" predict "$P" --weight-path "$RUN" --min-prob 1.5
expect_code 2; expect_err_lines 1; expect_err "--min-prob"
grep -q '"class": "class' "$WORK/p.json" || bad "class names from the run folder"
# The same rows from a list file (paths relative to it), from stdin, and from two ranks: the same
# paths, errors and classes in the same order, scores within 1e-5 relative (other batch sizes and
# rank counts sum in another order; tests/reference/same_predictions.py).
same_rows() {  # same_rows A B [PREFIX]: B's rows are A's, with PREFIX taken off A's paths
  "$PY" "$SRC/tests/reference/same_predictions.py" "$1" "$2" --prefix "${3:-}"
}
(cd "$P" && ls */* | sort) >"$P/list.txt"
run "$FIXRES" predict "$P/list.txt" --weight-path "$RUN" --input-size 32 --topk 3 --results-format jsonl
expect_code 0
same_rows "$WORK/p.jsonl" "$OUT" || bad "a list file gives other rows"
run bash -c "cd '$P' && ls */* | sort | '$FIXRES' predict - --weight-path '$RUN' --input-size 32 --topk 3 --results-format jsonl"
expect_code 0
same_rows "$WORK/p.jsonl" "$OUT" "$P/" || bad "stdin gives other rows"
run "$FIXRES" launch --nproc-per-node 2 -- predict "$P" --weight-path "$RUN" --input-size 32 \
  --topk 3 --results-format jsonl --out "$WORK/p2.jsonl" --workers 1
expect_code 0
same_rows "$WORK/p.jsonl" "$WORK/p2.jsonl" || bad "two ranks give other rows"
# Logits: the softmax of all C logits is the probability.
run "$FIXRES" predict "$P/class2" --weight-path "$RUN" --input-size 32 --output-type logit --topk 3 --results-format json
expect_code 0; expect_out '"logit": '

# The other ImageFolder formats: one image saved losslessly by PIL as PNG, BMP, TIFF (LZW), PPM,
# PGM (its gray version, beside a gray PNG) and lossless WebP gives the PNG's row in every format.
F="$WORK/formats"
mkdir -p "$F"
"$PY" - "$D/val/class0/000.jpg" "$F" <<'EOF2' || bad "format files"
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGB")
out = sys.argv[2]
for name, kw in [("a.png", {}), ("a.bmp", {}), ("a.tif", {"compression": "tiff_lzw"}),
                 ("a.ppm", {}), ("a.webp", {"lossless": True})]:
    im.save(f"{out}/{name}", **kw)
im.convert("L").save(f"{out}/g.png")
im.convert("L").save(f"{out}/g.pgm")
EOF2
run "$FIXRES" predict "$F" --weight-path "$RUN" --input-size 32 --topk 3 --results-format json \
  --out "$WORK/formats.json"
expect_code 0; expect_err "predicted 7 of 7 images"
# The rows sit at other positions of one batch, which may sum in another order (GEMM blocking):
# same_predictions.py's rule (1e-5 relative, order up to near ties), and the gray image's row
# must differ from the colour one's by more than that.
"$PY" - "$WORK/formats.json" "$REF" <<'EOF2' || bad "the formats give other rows than their PNG"
import json, os, sys
sys.path.insert(0, sys.argv[2])
from same_predictions import same_predictions
rows = {os.path.basename(r["path"]): r["predictions"] for r in json.load(open(sys.argv[1]))}
assert sorted(rows) == ["a.bmp", "a.png", "a.ppm", "a.tif", "a.webp", "g.pgm", "g.png"], rows
for name in ["a.bmp", "a.ppm", "a.tif", "a.webp"]:
    assert same_predictions(rows[name], rows["a.png"], 1e-5) is None, (name, rows[name], rows["a.png"])
assert same_predictions(rows["g.pgm"], rows["g.png"], 1e-5) is None, rows
assert same_predictions(rows["g.png"], rows["a.png"], 1e-5) is not None, rows
print("BMP, TIFF, PPM, WebP and PGM rows equal their PNG's")
EOF2

# --- 2. the timm hub folder -------------------------------------------------------------------
run "$FIXRES" export --weight-path "$RUN" --format timm-hub --out "$WORK/hub" --input-size 32
expect_code 0; expect_out "as timm-hub -> .*hub \(test size 32 px\)"
expect_err_lines 1; expect_err "resnet_tiny is fixres's own demo network, which timm does not have: timm.create_model cannot build it"
run "$PY" "$REF/hub_check.py" safetensors "$WORK/hub/model.safetensors" "$RUN/checkpoint.pth"
expect_code 0; expect_out "tensors equal"
run "$PY" - "$WORK/hub/config.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
p = c["pretrained_cfg"]
assert c["architecture"] == "resnet_tiny" and c["num_classes"] == 3, c
assert c["label_names"] == ["class0", "class1", "class2"], c["label_names"]
assert p["test_input_size"] == [3, 32, 32] and p["input_size"] == [3, 24, 24], p
assert p["crop_pct"] == 0.875 and p["test_crop_pct"] == 0.875 and p["crop_mode"] == "center", p
assert p["interpolation"] == "bilinear" and p["mean"] == [0.485, 0.456, 0.406], p
assert p["std"] == [0.229, 0.224, 0.225] and p["classifier"] == "fc", p
assert c["fixres"]["resize_mode"] == "fixres", c["fixres"]
print("config ok")
EOF
expect_code 0; expect_out "config ok"
# Read back: the hub folder's test size, classes and resize rule give the run folder's rows.
run "$FIXRES" predict "$P" --weight-path "$WORK/hub" --topk 3 --results-format jsonl
expect_code 0; expect_err "at 32 px"
same_rows "$WORK/p.jsonl" "$OUT" || bad "the hub folder gives other rows than the run folder"
# eval takes its test size from the folder; calibrate writes a hub folder at the size it calibrated.
run "$FIXRES" eval --weight-path "$WORK/hub" --dataset-path "$D/val" --workers 1
expect_code 0; expect_out "^ +32 "
run "$FIXRES" calibrate --weight-path "$WORK/hub" --dataset-path "$D/train" --input-size 40 \
  --format timm-hub --out "$WORK/hub40" --workers 1
expect_code 0
run "$PY" -c "import json,sys; c=json.load(open(sys.argv[1])); assert c['pretrained_cfg']['test_input_size'] == [3, 40, 40] and c['label_names'][2] == 'class2', c; print('ok')" "$WORK/hub40/config.json"
expect_code 0; expect_out ok
# Refusals: a non-empty folder is left as it was.
cp "$WORK/hub/config.json" "$WORK/config.before"
run "$FIXRES" export --weight-path "$RUN" --format timm-hub --out "$WORK/hub"
expect_code 2; expect_err_lines 1; expect_err "--out .*hub is not empty"
cmp -s "$WORK/config.before" "$WORK/hub/config.json" || bad "a refused export changed the folder"

# timm: its own loading and preprocessing at the test size against fixres's logits.
TIMMS=()  # the installed timm where $PY has one (timm from PyPI), else timm's source, as zoo_test
if env -u PYTHONPATH "$PY" -c 'import timm' 2>/dev/null; then TIMMS=(pypi)
elif [ -f "$ORACLES/timm/__init__.py" ]; then TIMMS=("$ORACLES"); fi
"$PY" "$REF/export_check.py" make-tv resnet18 "$WORK/r18.pth" || bad "resnet weights"
"$PY" "$REF/export_check.py" make-tv resnext50_32x4d "$WORK/rx50.pth" || bad "resnext weights"
for timm in ${TIMMS[@]+"${TIMMS[@]}"}; do
  LIST=$WORK/hubs_$(basename "$timm").txt; : >"$LIST"
  "$PY" "$REF/zoo_reference.py" weights efficientnet_b0 "$WORK/b0.pth" tf_efficientnet_b0 "$WORK/tfb0.pth" \
    "$timm" || bad "EfficientNet weights"
  "$PY" "$REF/vit_reference.py" weights deit_tiny_distilled_patch16_224 "$WORK/deit.pth" convnext_nano \
    "$WORK/cnn.pth" "$timm" || bad "transformer weights"
  for case in resnet18:r18 resnext50_32x4d:rx50 efficientnet_b0:b0 tf_efficientnet_b0:tfb0 \
      deit_tiny_distilled_patch16_224:deit convnext_nano:cnn; do
    arch=${case%%:*} w="$WORK/${case#*:}.pth" hub="$WORK/hub_${case#*:}_$(basename "$timm")"
    run "$FIXRES" export --architecture "$arch" --num-classes 10 --weight-path "$w" \
      --format timm-hub --input-size 64 --resize-mode shorter --out "$hub"
    expect_code 0
    run "$FIXRES" predict "$P" --weight-path "$hub" --output-type logit --topk 10 --results-format json \
      --out "$hub.json"
    expect_code 0; expect_err "at 64 px"
    echo "$hub $hub.json" >>"$LIST"
  done
  # --crop-pct recorded as test_crop_pct: predict reads it from the folder (the hub folder's
  # crop, not 0.875) and timm's transform with it gives the same logits.
  for crop in 1.0 0.95; do
    hub="$WORK/hub_crop${crop}_$(basename "$timm")"
    run "$FIXRES" export --architecture resnet18 --num-classes 10 --weight-path "$WORK/r18.pth" \
      --format timm-hub --input-size 64 --resize-mode shorter --crop-pct "$crop" --out "$hub"
    expect_code 0
    run "$FIXRES" predict "$P" --weight-path "$hub" --output-type logit --topk 10 --results-format json \
      --out "$hub.json"
    expect_code 0
    echo "$hub $hub.json" >>"$LIST"
  done
  # Every folder in timm, in one process (torch and timm imported once).
  run "$PY" "$REF/hub_check.py" timm-list "$timm" "$LIST"
  expect_code 0; cat "$OUT"
  [ "$(grep -c "relative L2 error" "$OUT")" = "$(wc -l <"$LIST")" ] || bad "not every hub folder compared in timm"
  for crop in 1.0 0.95; do expect_out "crop_pct $crop "; done
done
if ! env -u PYTHONPATH "$PY" -c 'import timm' 2>/dev/null && required timm-pypi; then
  skip_check timm-pypi "no timm package for $PY"
fi
[ ${#TIMMS[@]} -gt 0 ] || skip_check timm "no timm source at $ORACLES, no timm package: the hub folders in timm"

# --- 3. bad input -----------------------------------------------------------------------------
printf 'a\nb\n' >"$WORK/two.txt"
run "$FIXRES" predict "$P" --weight-path "$RUN" --class-names "$WORK/two.txt"
expect_code 3; expect_err_lines 1; expect_err "two.txt: 2 class names, but the weights have 3 classes"
run "$FIXRES" predict "$P" --weight-path "$RUN" --results-format xml
expect_code 2; expect_err_lines 1; expect_err "xml"
run "$FIXRES" predict "$WORK/nothing.jpg" --weight-path "$RUN"
expect_code 3; expect_err_lines 1; expect_err "input .*nothing.jpg does not exist"
run "$FIXRES" export --weight-path "$RUN" --format timm-hub --out "$WORK/hub2" --class-names "$WORK/two.txt"
expect_code 3; expect_err_lines 1; expect_err "2 class names, but the weights have 3"
[ ! -e "$WORK/hub2" ] || bad "a refused export made its folder"
finish
