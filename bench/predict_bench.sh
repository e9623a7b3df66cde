#!/usr/bin/env bash
# `fixres predict` against the pipeline of timm's inference.py (bench/peers/predict_peer.py: timm
# from ../shared/oracles on Debian's torch 1.13, the LibTorch of the default build) on the same
# ImageNet-shaped JPEGs, same weights (a seeded torchvision ResNet-50), test size 224, crop 0.875,
# batch, loader workers and intra-op threads; top-5 of the softmax written as CSV by both. Whole
# runs, start-up and model loading included; median of alternating runs. The two CSVs are
# compared too: the same top-1 class for at least 99 % of the images (the resize rules differ
# slightly: fixres's keeps the height, timm's the shorter side).
# Usage: predict_bench.sh [BUILD_DIR]; BENCH_IMAGES (256), BENCH_THREADS (nproc), BENCH_REPEATS (3)
set -euo pipefail
BUILD=${1:-build}
FIXRES="$BUILD/bin/fixres"
PY=/usr/bin/python3
HERE="$(cd "$(dirname "$0")" && pwd)"
ORACLES="${ORACLES:-$HERE/../../shared/oracles}"
[ -f "$ORACLES/timm/__init__.py" ] || { echo "predict bench skipped: no timm source at $ORACLES"; exit 0; }
THREADS=${BENCH_THREADS:-$(nproc)}
REPEATS=${BENCH_REPEATS:-3}
IMAGES=${BENCH_IMAGES:-256}
BATCH=32
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
"$PY" "$HERE/peers/make_jpeg_folder.py" "$WORK/img" --classes 4 --per-class $((IMAGES / 4)) --seed 0 >/dev/null
"$PY" "$HERE/gpu/check.py" weights "$WORK/r50.pth" 10 >/dev/null
cat "$WORK"/img/*/* >/dev/null
echo "## fixres predict against timm's inference pipeline, CPU, $THREADS threads, $THREADS loader workers, batch $BATCH, $IMAGES JPEGs (500x375), ResNet-50 at 224, median of $REPEATS alternating runs"
echo "| | fixres img/s | timm img/s | ratio |"
echo "|---|---|---|---|"
ours_f=$(mktemp); peer_f=$(mktemp)
for _ in $(seq 1 "$REPEATS"); do
  t0=$(date +%s.%N)
  "$FIXRES" -q --threads "$THREADS" predict "$WORK/img" --architecture resnet50 --num-classes 10 \
    --weight-path "$WORK/r50.pth" --input-size 224 --batch "$BATCH" --workers "$THREADS" --topk 5 \
    --results-format csv --out "$WORK/ours.csv" 2>/dev/null
  t1=$(date +%s.%N)
  awk -v n="$IMAGES" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", n / (b - a) }' >>"$ours_f"
  "$PY" "$HERE/peers/predict_peer.py" "$WORK/img" --oracles "$ORACLES" --weights "$WORK/r50.pth" \
    --num-classes 10 --size 224 --crop-pct 0.875 --batch "$BATCH" --workers "$THREADS" \
    --threads "$THREADS" --topk 5 --out "$WORK/peer.csv" | tail -1 | awk '{print $1}' >>"$peer_f"
done
ours=$(median <"$ours_f"); peer=$(median <"$peer_f")
echo "| ResNet-50, 224 px | $ours | $peer | $(awk -v a="$ours" -v b="$peer" 'BEGIN { printf "%.2f", a / b }') |"
"$PY" - "$WORK/ours.csv" "$WORK/peer.csv" <<'PY'
import csv, os, sys
ours = {os.path.abspath(r[0]): int(r[1]) for r in csv.reader(open(sys.argv[1])) if r and r[0] != "path" and r[1]}
peer = {os.path.abspath(r[0]): int(r[1]) for r in csv.reader(open(sys.argv[2])) if r}
same = sum(ours[k] == peer[k] for k in peer if k in ours)
print(f"top-1 class equal for {same} of {len(peer)} images ({len(ours)} rows from fixres)")
sys.exit(0 if len(ours) == len(peer) and same >= 0.99 * len(peer) else 1)
PY
rm -f "$ours_f" "$peer_f"
