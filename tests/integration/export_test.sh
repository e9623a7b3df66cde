#!/usr/bin/env bash
# `fixres export` against the loaders Python users have: each exported file loads strictly with
# the FixRes reference's loader (torch.load(f)['model'], 'module.' removed), torchvision's or
# timm's load_state_dict, and gives the logits of the model the source weights were written for
# (relative L2 < 1e-5): timm EfficientNet -> torchvision, torchvision EfficientNet -> timm and
# -> fixres, torchvision ResNet -> fixres. Refusals: no torchvision layout for tf_efficientnet
# (exit 2), an unwritable output (exit 6, nothing written). The timm cases run with the timm
# package $PY has installed where there is one, else with timm's source (../shared/oracles).
set -u
source "$(dirname "$0")/lib.sh" "$@"
ORACLES="$SRC/../shared/oracles"
REF="$SRC/tests/reference"
TIMMS=()  # "pypi": the installed package, else the vendored source (zoo_reference.import_timm)
if env -u PYTHONPATH "$PY" -c 'import timm' 2>/dev/null; then TIMMS=(pypi)
elif [ -f "$ORACLES/timm/__init__.py" ]; then TIMMS=("$ORACLES"); fi
"$PY" "$REF/export_check.py" make-tv efficientnet_b0 "$WORK/tv_b0.pth" || bad "tv weights"
"$PY" "$REF/export_check.py" make-tv resnet18 "$WORK/r18.pth" || bad "resnet weights"

export_and_check() {  # format arch source [timm: a folder or pypi]
  local fmt=$1 arch=$2 source=$3 timm=${4:-$ORACLES}
  run "$FIXRES" export --architecture "$arch" --num-classes 10 --weight-path "$source" \
    --format "$fmt" --out "$WORK/$arch.$fmt.pth"
  expect_code 0; expect_out "exported"
  run "$PY" "$REF/export_check.py" check "$fmt" "$arch" "$source" "$WORK/$arch.$fmt.pth" "$timm"
  expect_code 0; expect_out "relative L2 error"; echo "$fmt $arch: $(cat "$OUT")"
}

export_and_check fixres resnet18 "$WORK/r18.pth"
export_and_check torchvision resnet18 "$WORK/r18.pth"
for timm in ${TIMMS[@]+"${TIMMS[@]}"}; do
  echo "timm cases with $("$PY" "$REF/zoo_reference.py" version "$timm")"
  "$PY" "$REF/zoo_reference.py" weights efficientnet_b0 "$WORK/timm_b0.pth" "$timm" || bad "timm weights"
  export_and_check torchvision efficientnet_b0 "$WORK/timm_b0.pth" "$timm"
  export_and_check timm efficientnet_b0 "$WORK/tv_b0.pth" "$timm"
  export_and_check fixres efficientnet_b0 "$WORK/tv_b0.pth" "$timm"
done
if ! env -u PYTHONPATH "$PY" -c 'import timm' 2>/dev/null && required timm-pypi; then
  skip_check timm-pypi "no timm package for $PY"
fi
[ ${#TIMMS[@]} -gt 0 ] || skip_check timm "no timm source at $ORACLES, no timm package: the timm cases"

run "$FIXRES" export --architecture tf_efficientnet_b0 --num-classes 10 --weight-path "$WORK/tv_b0.pth" \
  --format torchvision --out "$WORK/no.pth"
expect_code 2; expect_err "torchvision has no such architecture"
[ ! -e "$WORK/no.pth" ] || bad "a refused export wrote a file"
# Bad values of the new model and export flags: exit 2 naming the flag or value, nothing written.
for bad_args in "--mean 0.5 0.5:--mean" "--drop-rate 1.5:--drop-rate" "--interpolation lanczos:lanczos" \
  "--format tflite:tflite" "--EfficientNet-models tf_efficientnet_b0:EfficientNet-models"; do
  run "$FIXRES" export --architecture resnet18 --num-classes 10 --weight-path "$WORK/r18.pth" \
    --out "$WORK/bad.pth" ${bad_args%%:*}
  expect_code 2; expect_err_lines 1; expect_err "${bad_args#*:}"
  [ ! -e "$WORK/bad.pth" ] || bad "a refused export wrote a file (${bad_args%%:*})"
done
mkdir -p "$WORK/ro"; chmod 555 "$WORK/ro"
if [ "$(id -u)" -ne 0 ]; then
  run "$FIXRES" export --architecture resnet18 --num-classes 10 --weight-path "$WORK/r18.pth" --out "$WORK/ro/x.pth"
  expect_code 6; expect_err "cannot write"
fi
run "$FIXRES" export --architecture resnet18 --num-classes 10 --weight-path "$WORK/r18.pth" --out "$WORK/missing/dir/x.pth"
expect_code 6; expect_err "missing/dir/x.pth"
finish
