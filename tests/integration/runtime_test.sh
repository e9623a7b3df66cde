#!/usr/bin/env bash
# --runtime (docs/runtimes.md): OpenVINO runs the model compiled from fixres's own ONNX graph.
# 1. Every family that describes its graph (ResNet, a torchvision ResNeXt, EfficientNet with and
#    without TF "same" padding, PNASNet, a ViT, a distilled ViT with two heads, ConvNeXt): predict's
#    logits in OpenVINO fp32 equal LibTorch's within 1e-4 relative L2 (a float32 sum in another
#    order: about 1e-6 is what we see); in bf16, where the CPU has it, within 5e-2 (8 mantissa
#    bits), with the top-1 agreement printed.
# 2. eval of several sizes (a ViT fed 32 and 40 px, resampled from its weights' grid): OpenVINO's
#    top-1 and loss equal LibTorch's; extract's embeddings (the graph's second output) equal too.
# 3. Refusals, one line, exit 2, nothing written: fp16, a command that trains or calibrates;
#    without OpenVINO in the build, `--runtime openvino` names the runtime and `auto` runs LibTorch.
# 5, 6. The sweep in a runtime, over precisions (below).
set -u
source "$(dirname "$0")/lib.sh" "$@"
REF="$SRC/tests/reference"
D="$WORK/data"
"$PY" "$REF/make_image_folder.py" "$D" --classes 3 --train 8 --val 4 --size 72 >/dev/null || bad "data"
P=(--workers 1 --output-type logit --results-format json)
"$PY" "$REF/export_check.py" make-tv resnext50_32x4d "$WORK/rx50.pth" || bad "resnext weights"
RX=(--architecture resnext50_32x4d --num-classes 10 --weight-path "$WORK/rx50.pth")

run "$FIXRES" version
expect_code 0; expect_out "^runtimes libtorch"
if ! grep -q "^runtimes libtorch openvino" "$OUT"; then
  # 3, without OpenVINO: the runtime named, nothing written; auto is LibTorch.
  run "$FIXRES" predict "$D/val" "${RX[@]}" --input-size 32 \
    --runtime openvino "${P[@]}" --out "$WORK/no.json"
  expect_code 2; expect_err_lines 1; expect_err "^fixres: error: --runtime openvino: this build has no OpenVINO"
  [ -e "$WORK/no.json" ] && bad "a refused run wrote its output"
  run "$FIXRES" predict "$D/val" "${RX[@]}" --input-size 32 \
    --runtime auto "${P[@]}" --out "$WORK/auto.json"
  expect_code 0
  skip_check openvino "this build has no OpenVINO (make torch2-env, then reconfigure): the comparisons"
  finish
fi
cp "$OUT" "$WORK/version.txt"
ENV_PY=$(served_python "$SRC/.venv-torch2/bin/python")
# The OpenVINO built in is the pinned wheel's (the one Python imports in the same environment).
if [ -x "$ENV_PY" ] && want=$("$ENV_PY" -c "import openvino; print(openvino.__version__.split('-')[0])" 2>/dev/null); then
  grep -qx "runtimes libtorch openvino $want" "$WORK/version.txt" || bad "fixres version names another OpenVINO than $want"
fi
BF16=1
run "$FIXRES" predict "$D/val" "${RX[@]}" --input-size 32 \
  --runtime openvino --precision bf16 "${P[@]}" --out "$WORK/bf.json"
if [ "$CODE" -eq 2 ] && grep -q "this CPU has no bf16" "$ERR"; then
  BF16=0; echo "this CPU has no bf16 in OpenVINO: the bf16 comparisons are left out"
fi

# One training step from random weights for each other family (its BatchNorm statistics moved
# once): the run folder is the model.
trained() {  # trained ARCH SIZE
  run "$FIXRES" train --imnet-path "$D" --architecture "$1" --workers 1 --input-size "$2" \
    --batch 4 --epochs 1 --iteration-cap 1 --shared-folder-path "$WORK/runs" --job-id "$1"
  expect_code 0
}
# 1. compare NAME SIZE TOPK -- model flags: LibTorch fp32 against OpenVINO fp32 (and bf16).
compare() {
  local name=$1 size=$2 k=$3; shift 4
  run "$FIXRES" predict "$D/val" "$@" --input-size "$size" --topk "$k" "${P[@]}" --out "$WORK/$name.lt.json"
  expect_code 0
  run "$FIXRES" predict "$D/val" "$@" --input-size "$size" --topk "$k" "${P[@]}" --runtime openvino \
    --out "$WORK/$name.ov.json"
  expect_code 0
  run "$PY" "$REF/runtime_agreement.py" "$WORK/$name.lt.json" "$WORK/$name.ov.json" --bound 1e-4
  expect_code 0; echo "$name fp32: $(cat "$OUT")"
  [ "$BF16" = 1 ] || return 0
  run "$FIXRES" predict "$D/val" "$@" --input-size "$size" --topk "$k" "${P[@]}" --runtime openvino \
    --precision bf16 --out "$WORK/$name.bf.json"
  expect_code 0
  run "$FIXRES" predict "$D/val" "$@" --input-size "$size" --topk "$k" "${P[@]}" --precision bf16 \
    --out "$WORK/$name.ltbf.json"
  expect_code 0
  run "$PY" "$REF/runtime_agreement.py" "$WORK/$name.lt.json" "$WORK/$name.bf.json" --bound 5e-2 \
    --or-as-far-as "$WORK/$name.ltbf.json"
  expect_code 0; echo "$name bf16: $(cat "$OUT")"
}
compare rx50 64 10 -- "${RX[@]}"
for a in resnet_tiny pnasnet5large vit_demo deit_tiny_distilled_patch16_224 convnext_demo; do
  trained "$a" 32
  compare "$a" 32 3 -- --weight-path "$WORK/runs/train/$a"
done
# EfficientNet after one step has BatchNorm statistics far from its activations' (logits in the
# thousands, where a float32 sum in another order moves them by percents): calibrated at the
# size compared first (fixres calibrate), as a user would before testing at a new size.
for a in efficientnet_b0:64 tf_efficientnet_b0:64 tf_efficientnet_b0:75; do
  arch=${a%:*}; s=${a#*:}
  [ -d "$WORK/runs/train/$arch" ] || trained "$arch" 32
  run "$FIXRES" calibrate --dataset-path "$D/train" --weight-path "$WORK/runs/train/$arch" \
    --input-size "$s" --workers 1 --out "$WORK/$arch$s.pth"
  expect_code 0
  compare "$arch$s" "$s" 3 -- --architecture "$arch" --num-classes 3 --weight-path "$WORK/$arch$s.pth"
done

# 2. eval at two sizes and extract's embeddings.
E=(eval --imnet-path "$D" --weight-path "$WORK/runs/train/vit_demo" --input-size 32,40 --workers 1)
run "$FIXRES" "${E[@]}"
expect_code 0; cp "$OUT" "$WORK/eval.lt"
run "$FIXRES" "${E[@]}" --runtime openvino
expect_code 0; cp "$OUT" "$WORK/eval.ov"
run "$PY" - "$WORK/eval.lt" "$WORK/eval.ov" <<'PY'
import sys
def rows(p):  # size -> (top-1, top-5, loss, images)
    return {l.split()[0]: [float(v) for v in l.split()[1:5]] for l in open(p) if l.split() and l.split()[0].isdigit()}
a, b = rows(sys.argv[1]), rows(sys.argv[2])
assert a.keys() == b.keys() == {"32", "40"}, (a, b)
for s in a:
    assert a[s][0] == b[s][0] and a[s][3] == b[s][3], (s, a[s], b[s])
    assert abs(a[s][2] - b[s][2]) <= 1e-4 * max(1, abs(a[s][2])), (s, a[s], b[s])
print("eval at 32 and 40 px: the same top-1 and loss in both runtimes")
PY
expect_code 0; cat "$OUT"
X=(extract --dataset-path "$D" --weight-path "$WORK/runs/train/resnet_tiny" --input-size 32 --workers 1)
run "$FIXRES" "${X[@]}" --save-path "$WORK/x.lt"
expect_code 0
run "$FIXRES" "${X[@]}" --save-path "$WORK/x.ov" --runtime openvino
expect_code 0
run "$PY" - "$WORK/x.lt" "$WORK/x.ov" <<'PY'
import glob, os, sys
import numpy as np
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.npy"))):
    a, b = np.load(f), np.load(os.path.join(sys.argv[2], os.path.basename(f)))
    assert a.shape == b.shape and a.size > 0, (f, a.shape, b.shape)
    err = np.linalg.norm(b.astype(np.float64) - a) / max(np.linalg.norm(a.astype(np.float64)), 1e-12)
    assert err <= 1e-4, (f, err)
    print(os.path.basename(f), a.shape, f"relative L2 error {err:.2g}")
PY
expect_code 0; cat "$OUT"

# 4. export --format openvino: OpenVINO's IR (a fixed size, and a ViT with dynamic height and
# width), read by OpenVINO's Python API with the preprocessing in its runtime info, equal to ONNX
# Runtime on the ONNX export (both from the project's environment; skipped without it).
for m in resnet_tiny:32: vit_demo:32:--dynamic-size; do
  IFS=: read -r a s dyn <<<"$m"
  run "$FIXRES" export --weight-path "$WORK/runs/train/$a" --format openvino --input-size "$s" \
    $dyn --out "$WORK/ir/$a.xml"
  expect_code 0; expect_out "exported [0-9]+ nodes of $a as openvino -> .*$a.xml \(test size $s px\)"
  expect_file "$WORK/ir/$a.bin"
  run "$FIXRES" export --weight-path "$WORK/runs/train/$a" --format onnx --input-size "$s" \
    $dyn --out "$WORK/ir/$a.onnx"
  expect_code 0
  if [ -x "$ENV_PY" ] && "$ENV_PY" -c "import openvino, onnxruntime" 2>/dev/null; then
    sizes=$s; [ -n "$dyn" ] && sizes="32 48"
    run "$ENV_PY" "$REF/openvino_ir_check.py" "$WORK/ir/$a.xml" "$WORK/ir/$a.onnx" $sizes
    expect_code 0; expect_out "^ok $a"; cat "$OUT"
  else
    skip_check openvino-python "no openvino and onnxruntime in $ENV_PY (make torch2-env): the IR read back"
  fi
done
run "$FIXRES" export --weight-path "$WORK/runs/train/resnet_tiny" --format openvino --out "$WORK/ir/model.bin"
expect_code 2; expect_err_lines 1; expect_err "must end in .xml"
[ -e "$WORK/ir/model.bin" ] && bad "a refused export wrote a file"
# calibrate writes the IR of the model it calibrated, and refuses a bad name before calibrating.
C=(calibrate --dataset-path "$D/train" --weight-path "$WORK/runs/train/resnet_tiny" --input-size 32
  --workers 1 --format openvino)
run "$FIXRES" "${C[@]}" --out "$WORK/ir/cal.bin"
expect_code 2; expect_err_lines 1; expect_err "must end in .xml"
run "$FIXRES" "${C[@]}" --out "$WORK/ir/cal.xml"
expect_code 0; expect_out "^calibrated [0-9]+ BatchNorm layers"; expect_file "$WORK/ir/cal.bin"

# 5. The sweep in a runtime: its cells' top-1 as LibTorch's, and sweep.json says what ran.
cp -r "$D/val" "$D/holdout"
S=(sweep --imnet-path "$D" --split holdout --weight-path "$WORK/runs/train/resnet_tiny" --train-size 32
  --sizes 24,32 --workers 1 --latency-batches 1)
run "$FIXRES" "${S[@]}" --out "$WORK/sw.lt"
expect_code 0
run "$FIXRES" "${S[@]}" --out "$WORK/sw.ov" --runtime openvino
expect_code 0
run "$PY" - "$WORK/sw.lt/sweep.json" "$WORK/sw.ov/sweep.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert (a["runtime"], a["precision"], b["runtime"], b["precision"]) == ("libtorch", "fp32", "openvino", "fp32"), (a["runtime"], b["runtime"])
assert [(r["size"], r["top1"]) for r in a["rows"]] == [(r["size"], r["top1"]) for r in b["rows"]], (a["rows"], b["rows"])
print("sweep: the same top-1 per size in both runtimes; sweep.json names the runtime and precision")
PY
expect_code 0; cat "$OUT"

# 6. Precision as a sweep axis, fine-tuning in a runtime, the model folder's numerics: each
#    OpenVINO cell (fine-tuned included: the run trains in LibTorch) equals eval of the same weights
#    in that runtime and precision; the folder records the chosen cell's runtime and precision, and
#    predict from it runs them unless told (its rows equal predict given them explicitly).
PRECS=fp32; [ "$BF16" = 1 ] && PRECS=fp32,bf16
S1=(sweep --imnet-path "$D" --split holdout --weight-path "$WORK/runs/train/resnet_tiny" --train-size 32
  --sizes 32 --workers 1 --latency-batches 1)
run "$FIXRES" "${S1[@]}" --out "$WORK/sw.pr" --runtime openvino --precisions "$PRECS" \
  --finetune --finetune-iterations 1 --batch 4
expect_code 0
for prec in ${PRECS//,/ }; do
  for w in base:"$WORK/runs/train/resnet_tiny" tuned:"$WORK/sw.pr/finetune_32"; do
    run "$FIXRES" eval --dataset-path "$D/holdout" --weight-path "${w#*:}" --input-size 32 \
      --workers 1 --runtime openvino --precision "$prec" \
      --json "$WORK/ev.$prec.${w%%:*}.json"
    expect_code 0
  done
done
run "$PY" - "$WORK/sw.pr/sweep.json" "$PRECS" "$WORK" <<'PY'
import json, sys
s, precs, work = json.load(open(sys.argv[1])), sys.argv[2].split(","), sys.argv[3]
assert s["precisions"] == precs and s["runtime"] == "openvino", (s["precisions"], s["runtime"])
assert [r["precision"] for r in s["rows"]] == precs, [r["precision"] for r in s["rows"]]
for r in s["rows"]:
    for key, w in (("top1", "base"), ("top1_finetuned", "tuned")):
        ev = json.load(open(f"{work}/ev.{r['precision']}.{w}.json"))["results"][0]
        assert abs(ev["top1"] - r[key]) < 1e-9, (r["precision"], key, ev["top1"], r[key])
c = json.load(open(sys.argv[1].replace("sweep.json", "config.json")))["fixres"]
assert (c["runtime"], c["precision"]) == ("openvino", s["chosen_precision"]), c
print("sweep over", precs, "in OpenVINO: every cell equals eval in its precision; the folder records", c["runtime"], c["precision"])
PY
expect_code 0; cat "$OUT"
chosen=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['fixres']['precision'])" "$WORK/sw.pr/config.json")
run "$FIXRES" predict "$D/val" --weight-path "$WORK/sw.pr" "${P[@]}" --out "$WORK/folder.json"
expect_code 0; expect_err "recorded runtime openvino, precision $chosen"
run "$FIXRES" predict "$D/val" --weight-path "$WORK/sw.pr" "${P[@]}" --runtime openvino \
  --precision "$chosen" --out "$WORK/given.json"
expect_code 0
cmp -s "$WORK/folder.json" "$WORK/given.json" || bad "predict from the sweep folder ran other numerics than it records"
run "$FIXRES" predict "$D/val" --weight-path "$WORK/sw.pr" "${P[@]}" --runtime libtorch --precision fp32 --out "$WORK/lt.json"
expect_code 0; grep -q "recorded" "$ERR" && bad "flags given, yet the folder's numerics were said to be used"
# Refusals before any work: both flags, a precision twice, fp16 on the CPU (naming --precisions).
for bad_flags in "--precision bf16 --precisions fp32" "--precisions fp32,fp32" "--precisions fp16" "--precisions auto"; do
  run "$FIXRES" "${S1[@]}" --out "$WORK/sw.bad" $bad_flags
  expect_code 2; expect_err_lines 1; expect_err "--precisions"
  [ -e "$WORK/sw.bad" ] && bad "a refused sweep ($bad_flags) made its folder"
done

# 3. Refusals.
run "$FIXRES" predict "$D/val" --weight-path "$WORK/runs/train/resnet_tiny" --input-size 32 \
  --runtime openvino --precision fp16 "${P[@]}" --out "$WORK/fp16.json"
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: .*fp16"
[ -e "$WORK/fp16.json" ] && bad "a refused run wrote its output"
for cmd in "train --imnet-path $D --architecture resnet_tiny" "calibrate --dataset-path $D/train --weight-path $WORK/runs/train/resnet_tiny --out $WORK/c.pth"; do
  run "$FIXRES" $cmd --runtime openvino
  expect_code 2; expect_err "runtime"
done
finish
