#!/usr/bin/env bash
# `fixres export --format onnx` (ResNet family, EfficientNet, PNASNet, ViT, ConvNeXt):
# 1. resnet_tiny (a trained run folder: small stem, no max-pool), resnet18 (basic blocks,
#    max-pool, downsampling) and resnext50_32x4d (bottlenecks, 32 groups), torchvision's random
#    weights for the last two; efficientnet_b0 and tf_efficientnet_b0 (TF "same" padding,
#    asymmetric at 64 px, other pads at 75 px) with timm's random weights (from ../shared/oracles;
#    without it, 1-step fixres runs) and pnasnet5large at 96 px (timm's weights; skipped without
#    them): ONNX's own package (Debian's python3-onnx) reads each file back byte for byte and
#    its checker passes with full shape inference; ONNX Runtime, fed the images
#    preprocessed by PIL from the model's own metadata, gives fixres predict's logits on the same
#    JPEGs and PNGs (tests/reference/onnx_check.py: relative L2 < 1e-4, any batch size); a
#    --dynamic-size export runs at another size against predict at that size. The run folder's
#    class names are in the metadata.
# 2. bad input: a dynamic size for TF "same" padding, --dynamic-size without --format onnx:
#    exit 2, one line, nothing written.
# 3. both builds write the same file: run on the second build (make test-cuda) with the default
#    build's binary at build/bin/fixres, every export of part 1 (each family, fixed and dynamic
#    sizes) is byte for byte the same from both binaries (FIXRES_COMPARE_FIXRES names another
#    binary), but those whose position embedding is resampled when the file is written
#    (RESAMPLED=1): LibTorch's bicubic interpolation gives other last bits in 1.13 and 2.11, and
#    ONNX Runtime checks those files against each build's own predict.
# 4. external data: --external-data keeps every tensor of 1 KiB or more in OUT.data (as a model
#    over 2 GiB does by itself): ONNX's package reads it back equal to the inline export bit for
#    bit (tests/reference/onnx_external_check.py), ONNX Runtime gives predict's logits, the pair
#    moved elsewhere still loads, and an inline export to the same path removes the data file.
# ONNX Runtime comes from the project's PyPI environment (.venv-torch2, requirements-torch2.txt):
# without it, part 1 stops after ONNX's checker.
set -u
source "$(dirname "$0")/lib.sh" "$@"
REF="$SRC/tests/reference"
ORT_PY=$(served_python "${FIXRES_ORT_PYTHON:-$SRC/.venv-torch2/bin/python}")
D="$WORK/data"
"$PY" "$REF/make_image_folder.py" "$D" --classes 3 --train 8 --val 4 --size 72 >/dev/null || bad "data"
HAVE_ONNX=0
DEB_PY=$(served_python /usr/bin/python3)  # Debian's, with python3-onnx
if "$DEB_PY" -c "import onnx" 2>/dev/null; then HAVE_ONNX=1; else
  skip_check onnx-python "no onnx package for /usr/bin/python3 (Debian's python3-onnx): ONNX's checker"
fi
HAVE_ORT=0
if [ -x "$ORT_PY" ] && "$ORT_PY" -c "import onnxruntime" 2>/dev/null; then HAVE_ORT=1; else
  skip_check onnxruntime "no onnxruntime at $ORT_PY (make torch2-env installs it): the ONNX Runtime comparisons"
fi

run "$FIXRES" train --imnet-path "$D" --architecture resnet_tiny --workers 1 --input-size 32 \
  --batch 4 --epochs 1 --shared-folder-path "$WORK/runs" --job-id t
expect_code 0
"$PY" "$REF/export_check.py" make-tv resnet18 "$WORK/r18.pth" || bad "resnet18 weights"
"$PY" "$REF/export_check.py" make-tv resnext50_32x4d "$WORK/rx50.pth" || bad "resnext weights"
# check NAME SIZE [ORT SIZE] -- fixres flags for the weights: export and predict now; ONNX's
# checker and ONNX Runtime read the model at the next flush_checks, every model queued since in
# one Python process each (an interpreter start and import is seconds: once, not per model).
CHECKED_ONNX=(); CHECKED_ORT=()
# Part 3: the other build's binary, where this is not it.
OTHER=${FIXRES_COMPARE_FIXRES:-$SRC/build/bin/fixres}
COMPARE_OTHER=0; SAME_BYTES=()
[ -x "$OTHER" ] && [ "$(cd "$(dirname "$OTHER")" && pwd)" != "$(cd "$(dirname "$FIXRES")" && pwd)" ] &&
  COMPARE_OTHER=1
check() {
  local name=$1 size=$2 ortsize=$3; shift 4
  run "$FIXRES" export "$@" --format onnx --input-size "$size" --out "$WORK/$name.onnx" ${DYN:-}
  expect_code 0; expect_out "exported [0-9]+ nodes of .* as onnx -> .*$name.onnx \(test size $size px\)"
  if [ "$COMPARE_OTHER" = 1 ] && [ -z "${RESAMPLED:-}" ]; then
    run "$OTHER" export "$@" --format onnx --input-size "$size" --out "$WORK/$name-other.onnx" ${DYN:-}
    expect_code 0
    cmp -s "$WORK/$name.onnx" "$WORK/$name-other.onnx" ||
      bad "$name: $("$FIXRES" version | sed -n 2p) and $("$OTHER" version | sed -n 2p) export different files"
    SAME_BYTES+=("$name")
    rm -f "$WORK/$name-other.onnx"
  fi
  run "$FIXRES" predict "$D/val" "$@" --input-size "$ortsize" --output-type logit --topk 10 \
    --results-format json --out "$WORK/$name.json" --workers 1
  expect_code 0
  CHECKED_ONNX+=("$WORK/$name.onnx")
  CHECKED_ORT+=("$WORK/$name.onnx $WORK/$name.json $ortsize")
}
flush_checks() {  # each queued model: one "ok" line of the checker, one ONNX Runtime line
  local model
  [ ${#CHECKED_ONNX[@]} -gt 0 ] || return 0
  if [ "$HAVE_ONNX" = 1 ]; then
    run "$DEB_PY" "$REF/onnx_proto_check.py" "${CHECKED_ONNX[@]}"
    expect_code 0
    for model in "${CHECKED_ONNX[@]}"; do expect_out "^ok $model "; done
  fi
  if [ "$HAVE_ORT" = 1 ]; then
    printf '%s\n' "${CHECKED_ORT[@]}" >"$WORK/ort_checks.txt"
    run "$ORT_PY" "$REF/onnx_check.py" --list "$WORK/ort_checks.txt"
    expect_code 0
    for model in "${CHECKED_ONNX[@]}"; do expect_out "^$model: onnxruntime .*relative L2 error"; done
    cat "$OUT"
  fi
  CHECKED_ONNX=(); CHECKED_ORT=()
}
check tiny 40 40 -- --weight-path "$WORK/runs/train/t"
check r18 64 64 -- --architecture resnet18 --num-classes 10 --weight-path "$WORK/r18.pth"
check rx50 64 64 -- --architecture resnext50_32x4d --num-classes 10 --weight-path "$WORK/rx50.pth"
DYN=--dynamic-size check r18dyn 64 96 -- --architecture resnet18 --num-classes 10 --weight-path "$WORK/r18.pth"
ORACLES="$SRC/../shared/oracles"
HAVE_TIMM=0
[ -f "$ORACLES/timm/__init__.py" ] && HAVE_TIMM=1
[ "$HAVE_TIMM" = 1 ] || skip_check oracles "no timm source at $ORACLES: the EfficientNet, transformer and PNASNet cases with timm's weights"
if [ "$HAVE_TIMM" = 1 ]; then  # every timm weight file below, made in two Python processes
  "$PY" "$REF/zoo_reference.py" weights efficientnet_b0 "$WORK/efficientnet_b0.pth" \
    tf_efficientnet_b0 "$WORK/tf_efficientnet_b0.pth" resnet26d "$WORK/r26d.pth" \
    pnasnet5large "$WORK/pnas.pth" "$ORACLES" || bad "timm's CNN weights"
  TIMM_VITS=()
  for a in deit_tiny_distilled_patch16_224 vit_medium_patch16_reg4_gap_256 convnext_tiny \
    vit_small_patch14_reg4_dinov2 vit_tiny_patch16_224 deit_tiny_patch16_224 deit3_small_patch16_224; do
    TIMM_VITS+=("$a" "$WORK/$a.pth")
  done
  "$PY" "$REF/vit_reference.py" weights "${TIMM_VITS[@]}" "$ORACLES" || bad "timm's transformer weights"
fi
for a in efficientnet_b0 tf_efficientnet_b0; do
  if [ "$HAVE_TIMM" = 1 ]; then
    W=(--architecture "$a" --num-classes 10 --weight-path "$WORK/$a.pth")
  else
    run "$FIXRES" train --imnet-path "$D" --architecture "$a" --workers 1 --input-size 32 \
      --batch 4 --epochs 1 --iteration-cap 1 --shared-folder-path "$WORK/runs" --job-id "$a"
    expect_code 0
    W=(--weight-path "$WORK/runs/train/$a")
  fi
  check "$a" 64 64 -- "${W[@]}"
done
check tf_b0_75 75 75 -- "${W[@]}"
# Transformers: run folders of vit_demo and convnext_demo (conv_mlp blocks) at their training
# size and at another (the ViT's position embedding resampled for it at export), and timm's
# random weights with non-trivial norms, tokens and layer scales (tests/reference/vit_reference.py)
# of deit_tiny_distilled_patch16_224 (two heads), vit_medium_patch16_reg4_gap_256 (register
# tokens, average pooling, layer scale) and convnext_tiny (channels-last blocks) at 64 px, and
# vit_small_patch14_reg4_dinov2 (a class token and 4 registers; its 37 x 37 grid resampled) at 70 px.
for a in vit_demo convnext_demo; do
  run "$FIXRES" train --imnet-path "$D" --architecture "$a" --workers 1 --input-size 32 \
    --batch 4 --epochs 1 --iteration-cap 2 --shared-folder-path "$WORK/runs" --job-id "$a"
  expect_code 0
  check "$a" 32 32 -- --weight-path "$WORK/runs/train/$a"
  RESAMPLED=$([ $a = vit_demo ] && echo 1) check "${a}_40" 40 40 -- --weight-path "$WORK/runs/train/$a"
done
# A ViT exported for any size: the position embedding resampled inside the graph (opset 18's
# antialiased Resize), against fixres predict at another size.
DYN=--dynamic-size check vit_demo_dyn 32 40 -- --weight-path "$WORK/runs/train/vit_demo"
# ConvNeXt's graph has no size in it: exported for any size, run at 24 and 48 px.
for s in 24 48; do
  DYN=--dynamic-size check "convnext_demo_dyn$s" 32 $s -- --weight-path "$WORK/runs/train/convnext_demo"
done
if [ "$HAVE_TIMM" = 1 ]; then
  for a in deit_tiny_distilled_patch16_224 vit_medium_patch16_reg4_gap_256 convnext_tiny \
    vit_small_patch14_reg4_dinov2; do
    s=64; [[ $a == *patch14* ]] && s=70  # 5 x 5 patches of 14 px
    RESAMPLED=$([[ $a != convnext* ]] && echo 1) \
      check "$a" $s $s -- --architecture "$a" --num-classes 10 --weight-path "$WORK/$a.pth"
  done
fi
# ResNet-D (timm's resnet26d, random weights): the deep stem and the average-pooled shortcuts
# (AveragePool with ceil_mode at an odd size), at a fixed size and exported for any size.
if [ "$HAVE_TIMM" = 1 ]; then
  check r26d 75 75 -- --architecture resnet26d --num-classes 10 --weight-path "$WORK/r26d.pth"
  DYN=--dynamic-size check r26ddyn 64 75 -- --architecture resnet26d --num-classes 10 \
    --weight-path "$WORK/r26d.pth"
  rm -f "$WORK/r26d.pth"
fi
# Every kind of ViT the family has, exported with --dynamic-size, against timm's own
# dynamic_img_size model in ONNX Runtime at three sizes, one non-square
# (tests/reference/onnx_vit_dynamic_check.py): class token (vit), registers with average pooling,
# class token with registers (DINOv2), DeiT, DeiT distilled (two heads), DeiT III.
if [ "$HAVE_TIMM" = 1 ] && [ "$HAVE_ORT" = 1 ] && "$ORT_PY" -c "import timm" 2>/dev/null; then
  LIST=$WORK/vit_dynamic.txt; : >"$LIST"
  for a in vit_tiny_patch16_224 vit_medium_patch16_reg4_gap_256 vit_small_patch14_reg4_dinov2 \
    deit_tiny_patch16_224 deit_tiny_distilled_patch16_224 deit3_small_patch16_224; do
    run "$FIXRES" export --architecture "$a" --num-classes 10 --weight-path "$WORK/$a.pth" \
      --format onnx --dynamic-size --out "$WORK/$a-dyn.onnx"
    expect_code 0
    p=16; [[ $a == *patch14* ]] && p=14
    echo "$WORK/$a-dyn.onnx $a $WORK/$a.pth $((4 * p))x$((4 * p)) $((6 * p))x$((6 * p)) $((3 * p))x$((5 * p))" >>"$LIST"
  done
  # Weights of a model trained at 64 px (a 4x4 grid) exported at 96: every size is resampled from
  # the weights' own grid, once, as timm's model built for 64 px resamples it.
  a=vit_tiny_patch16_224
  run "$ORT_PY" "$REF/onnx_vit_dynamic_check.py" --make-weights=64 "$a" "$WORK/vit64.pth"
  expect_code 0
  run "$FIXRES" export --architecture "$a" --num-classes 10 --weight-path "$WORK/vit64.pth" \
    --format onnx --dynamic-size --input-size 96 --out "$WORK/vit64-dyn.onnx"
  expect_code 0
  echo "--img-size=64 $WORK/vit64-dyn.onnx $a $WORK/vit64.pth 48x48 80x80 48x112" >>"$LIST"
  # Every model against timm in one process (timm and ONNX Runtime imported once).
  run "$ORT_PY" "$REF/onnx_vit_dynamic_check.py" --list "$LIST"
  expect_code 0; cat "$OUT"
  [ "$(grep -c "relative L2 error" "$OUT")" = $(($(wc -l <"$LIST") * 3)) ] ||
    bad "not every model compared with timm at its 3 sizes"
else
  skip_check timm-pypi "no timm in $ORT_PY or no timm source: the dynamic ViT exports against timm"
fi
# PNASNet-5-Large (timm's random weights, 340 MB; only with timm's source): TF "same" padding
# in its separable convolutions and max pools, the factorized reduction's shifted path, concats.
if [ "$HAVE_TIMM" = 1 ]; then
  check pnas 96 96 -- --architecture pnasnet5large --num-classes 10 --weight-path "$WORK/pnas.pth"
  rm -f "$WORK/pnas.pth"
fi
flush_checks
if [ "$HAVE_ORT" = 1 ]; then
  "$ORT_PY" -c "
import json, sys, onnxruntime as ort
m = ort.InferenceSession(sys.argv[1], providers=['CPUExecutionProvider']).get_modelmeta().custom_metadata_map
assert json.loads(m['fixres.class_names']) == ['class0', 'class1', 'class2'], m
assert json.loads(m['fixres.preprocessing'])['input_size'] == 40, m" "$WORK/tiny.onnx" ||
    bad "the run folder's class names or test size are not in the metadata"
fi

# --- 3. the other build's exports (made in check) --------------------------------------------------
if [ "$COMPARE_OTHER" = 1 ]; then
  [ ${#SAME_BYTES[@]} -ge 10 ] || bad "only ${#SAME_BYTES[@]} exports compared with $OTHER"
  echo "same bytes from $("$FIXRES" version | sed -n 2p | cut -d, -f1) and $("$OTHER" version | sed -n 2p | cut -d, -f1): ${#SAME_BYTES[@]} exports (${SAME_BYTES[*]})"
elif [ "$(cd "$(dirname "$FIXRES")" && pwd)" != "$SRC/build/bin" ]; then
  skip_check debian-build "no other build at $OTHER: the two builds' ONNX files not compared"
fi

# --- 4. external data (ONNX's layout for models over 2 GiB, chosen by itself there; forced here) --
R18=(--architecture resnet18 --num-classes 10 --weight-path "$WORK/r18.pth" --format onnx --input-size 64)
run "$FIXRES" export "${R18[@]}" --external-data --out "$WORK/r18ext.onnx"
expect_code 0; expect_file "$WORK/r18ext.onnx.data"
if [ "$HAVE_ONNX" = 1 ]; then
  run "$DEB_PY" "$REF/onnx_external_check.py" "$WORK/r18.onnx" "$WORK/r18ext.onnx"
  expect_code 0; expect_out "^ok: [0-9]+ of [0-9]+ tensors external, equal to the inline export$"
fi
if [ "$HAVE_ORT" = 1 ]; then  # ONNX Runtime reads the tensors beside the model: predict's logits
  run "$ORT_PY" "$REF/onnx_check.py" "$WORK/r18ext.onnx" "$WORK/r18.json" 64
  expect_code 0; expect_out "relative L2 error"
fi
# Moved with its data file, the model still loads (the location is relative).
mkdir -p "$WORK/moved" && mv "$WORK/r18ext.onnx" "$WORK/r18ext.onnx.data" "$WORK/moved/"
if [ "$HAVE_ONNX" = 1 ]; then
  run "$DEB_PY" "$REF/onnx_external_check.py" "$WORK/r18.onnx" "$WORK/moved/r18ext.onnx"
  expect_code 0
fi
# The same path exported inline: the earlier data file goes.
run "$FIXRES" export "${R18[@]}" --out "$WORK/moved/r18ext.onnx"
expect_code 0
[ -e "$WORK/moved/r18ext.onnx.data" ] && bad "an inline export left the earlier export's data file"
# The data file beside the model is an output too: never written over an input.
cp "$WORK/r18.pth" "$WORK/in.onnx.data"
run "$FIXRES" export --architecture resnet18 --num-classes 10 --weight-path "$WORK/in.onnx.data" \
  --format onnx --input-size 64 --external-data --out "$WORK/in.onnx"
expect_code 2; expect_err_lines 1; expect_err "an output must not overwrite an input"
cmp -s "$WORK/r18.pth" "$WORK/in.onnx.data" || bad "an export wrote its data file over its weights"
run "$FIXRES" export --architecture resnet18 --num-classes 10 --weight-path "$WORK/r18.pth" \
  --external-data --out "$WORK/r18y.pth"
expect_code 2; expect_err_lines 1; expect_err "--external-data is for --format onnx"

# --- 2. bad input ---------------------------------------------------------------------------------
run "$FIXRES" export "${W[@]}" --format onnx --dynamic-size --out "$WORK/tfdyn.onnx"
expect_code 2; expect_err_lines 1; expect_err "depends on the input size"
[ -e "$WORK/tfdyn.onnx" ] && bad "a refused export wrote its file"
run "$FIXRES" export --architecture resnet18 --num-classes 10 --weight-path "$WORK/r18.pth" \
  --dynamic-size --out "$WORK/r18x.pth"
expect_code 2; expect_err_lines 1; expect_err "--dynamic-size is for --format onnx"
[ -e "$WORK/r18x.pth" ] && bad "a refused export wrote its file"
finish
