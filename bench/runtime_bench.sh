#!/usr/bin/env bash
# The inference runtimes in one run (docs/performance.md, "Runtimes"): ResNet-50 at 224 px with
# random weights, the same intra-op threads everywhere, batch 1 and 16, model only (random input):
# `fixres bench eval` with --runtime libtorch and openvino, each in fp32 and bf16 (LibTorch: its
# bf16 autocast, channels-last; OpenVINO: its inference precision hint), against OpenVINO and ONNX
# Runtime in Python on fixres's own ONNX export and PyTorch eager (bench/peers/runtime_peer.py, the
# project environment's Python). Then end to end on a JPEG folder: `fixres predict` with OpenVINO
# against PIL preprocessing + OpenVINO in Python, top-5, same batch and precision, both timed as
# whole processes (start-up, weights, compiling included), and the Python loop alone beside it.
# Medians of BENCH_REPEATS (3) timings; n/a where a runtime or bf16 is missing.
# Random weights: torchvision's ResNet-50, seeded (bench/gpu/check.py).
# Usage: runtime_bench.sh [BUILD_DIR]; BENCH_THREADS (nproc), BENCH_IMAGES (160), BENCH_STEPS (10)
set -euo pipefail
BUILD=${1:-build}
FIXRES="$BUILD/bin/fixres"
HERE="$(cd "$(dirname "$0")" && pwd)"
PEER_PY=${BENCH_PEER_PYTHON:-$HERE/../.venv-torch2/bin/python}
THREADS=${BENCH_THREADS:-$(nproc)}
REPEATS=${BENCH_REPEATS:-3}
STEPS=${BENCH_STEPS:-10}
IMAGES=${BENCH_IMAGES:-160}
if ! "$FIXRES" version | grep -q "^runtimes libtorch openvino"; then
  echo "runtime bench skipped: $FIXRES has no OpenVINO (make torch2-env, then reconfigure)"; exit 0
fi
[ -x "$PEER_PY" ] || { echo "runtime bench skipped: no $PEER_PY (make torch2-env)"; exit 0; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
/usr/bin/python3 "$HERE/gpu/check.py" weights "$WORK/r50.pth" 1000 >/dev/null  # torchvision's, seeded
"$FIXRES" -q export --architecture resnet50 --num-classes 1000 --weight-path "$WORK/r50.pth" \
  --format onnx --input-size 224 --out "$WORK/r50.onnx" >/dev/null
ours() {  # ours RUNTIME PRECISION BATCH: img/s, median of REPEATS
  local f r
  f=$(mktemp)
  for _ in $(seq 1 "$REPEATS"); do
    r=$("$FIXRES" -q --threads "$THREADS" bench eval --architecture resnet50 --input-size 224 \
      --batch "$3" --runtime "$1" --precision "$2" --memory-format \
      "$([ "$1" = libtorch ] && echo channels-last || echo contiguous)" --steps "$STEPS" \
      --warmup 2 2>/dev/null | tail -1 | awk '{print $1}') || r=""
    [ -n "$r" ] && echo "$r" >>"$f"
  done
  if [ -s "$f" ]; then median <"$f"; else echo n/a; fi
  rm -f "$f"
}
echo "## inference runtimes, ResNet-50 at 224 px, $THREADS threads, $(lscpu | sed -n 's/^Model name: *//p' | head -1); img/s, model only"
"$PEER_PY" "$HERE/peers/runtime_peer.py" model "$WORK/r50.onnx" --threads "$THREADS" --batches 1,16 \
  --steps "$STEPS" --repeats "$REPEATS" >"$WORK/peer.txt"
peer() { awk -v n="$1" -v b="$2" '$1 == n && $2 == b {print $3}' "$WORK/peer.txt"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == "" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }
echo "| | batch 1 | batch 16 | ours / OpenVINO Python (1, 16) |"
echo "|---|---|---|---|"
for p in fp32 bf16; do
  ovp=$([ $p = fp32 ] && echo openvino-f32 || echo openvino-bf16)
  lt1=$(ours libtorch $p 1); lt16=$(ours libtorch $p 16)
  ov1=$(ours openvino $p 1); ov16=$(ours openvino $p 16)
  echo "| fixres, LibTorch, $p | $lt1 | $lt16 | |"
  echo "| fixres, OpenVINO, $p | $ov1 | $ov16 | $(ratio "$ov1" "$(peer $ovp 1)"), $(ratio "$ov16" "$(peer $ovp 16)") |"
  echo "| OpenVINO Python, ${ovp#openvino-} | $(peer $ovp 1) | $(peer $ovp 16) | |"
done
echo "| ONNX Runtime Python, fp32 | $(peer onnxruntime-fp32 1) | $(peer onnxruntime-fp32 16) | |"
echo "| PyTorch eager, fp32 / bf16 autocast, channels-last | $(peer torch-fp32 1) / $(peer torch-bf16 1) | $(peer torch-fp32 16) / $(peer torch-bf16 16) | |"

/usr/bin/python3 "$HERE/peers/make_jpeg_folder.py" "$WORK/img" --classes 4 --per-class $((IMAGES / 4)) --seed 0 >/dev/null
cat "$WORK"/img/*/* >/dev/null
echo
echo "## end to end: $IMAGES JPEGs (500x375), top-5, batch 16, $THREADS threads; img/s, median of $REPEATS"
echo "| precision | fixres predict, OpenVINO | PIL + OpenVINO Python | ratio | PIL + OpenVINO Python, loop only | ratio |"
echo "|---|---|---|---|---|---|"
for p in fp32 bf16; do
  of=$(mktemp); pf=$(mktemp); wf=$(mktemp)
  for _ in $(seq 1 "$REPEATS"); do
    t0=$(date +%s.%N)
    if "$FIXRES" -q --threads "$THREADS" predict "$WORK/img" --architecture resnet50 --num-classes 1000 \
      --weight-path "$WORK/r50.pth" \
      --input-size 224 --crop-pct 0.875 --resize-mode shorter --batch 16 --workers "$THREADS" --topk 5 \
      --runtime openvino --precision $p --out "$WORK/ours.csv" 2>/dev/null; then
      t1=$(date +%s.%N)
      awk -v n="$IMAGES" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", n / (b - a) }' >>"$of"
    fi
    t0=$(date +%s.%N)
    if "$PEER_PY" "$HERE/peers/runtime_peer.py" e2e "$WORK/r50.onnx" "$WORK/img" --threads "$THREADS" \
      --batch 16 --precision "$([ $p = fp32 ] && echo f32 || echo bf16)" 2>/dev/null >>"$pf"; then
      t1=$(date +%s.%N)
      awk -v n="$IMAGES" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", n / (b - a) }' >>"$wf"
    fi
  done
  o=$([ -s "$of" ] && median <"$of" || echo n/a); q=$([ -s "$pf" ] && median <"$pf" || echo n/a)
  w=$([ -s "$wf" ] && median <"$wf" || echo n/a)
  echo "| $p | $o | $w | $(ratio "$o" "$w") | $q | $(ratio "$o" "$q") |"
  rm -f "$of" "$pf" "$wf"
done
