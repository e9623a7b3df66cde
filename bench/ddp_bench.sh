#!/usr/bin/env bash
# Data-parallel training on 2 ranks of this machine: fixres (`fixres launch --nproc-per-node 2 --
# bench train`) against PyTorch DistributedDataParallel (bench/peers/ddp_train_peer.py started by
# the same launcher), Gloo on loopback, 1 thread per rank, random data, same model, size and batch
# per rank; and each alone (1 process, 1 thread). Medians of alternating runs; prints a Markdown
# table with total images per second, scaling efficiency (2 ranks against 2 x one process) and the
# ratio fixres / DDP. Also two independent fixres processes at the same time, without any
# communication: what this host gives two processes at all (memory bandwidth and caches are
# shared), the ceiling for 2 ranks.
# Usage: bench/ddp_bench.sh [build]   (BENCH_REPEATS, DDP_MODELS="resnet18 resnet50", DDP_STEPS)
set -euo pipefail
BUILD=${1:-build}
FIXRES="$BUILD/bin/fixres"
PY=/usr/bin/python3
PEER="$(cd "$(dirname "$0")" && pwd)/peers/ddp_train_peer.py"
REPEATS=${BENCH_REPEATS:-3}
MODELS=${DDP_MODELS:-"resnet18 resnet50"}
STEPS=${DDP_STEPS:-8}
SIZE=64
BATCH=16
EXTRA=${DDP_FIXRES_FLAGS:-}
num() { grep -Eo '[0-9]+(\.[0-9]+)? img/s' | tail -1 | awk '{print $1}'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f %%", 100 * a / (2 * b) }'; }
TMP=$(mktemp -d)
# On a failure the single-process runs' messages (kept apart from the table) are shown.
trap 'st=$?; if [ "$st" -ne 0 ] && [ -f "$TMP/log" ]; then cat "$TMP/log" >&2; fi; rm -rf "$TMP"' EXIT

echo "## Data-parallel training step, 2 ranks x 1 thread (Gloo, loopback) vs 1 process x 1 thread"
echo "size $SIZE, batch $BATCH per rank, $STEPS timed steps, median of $REPEATS alternating runs."
echo
echo "| model | fixres 1 proc | 2 x 1 proc at once (no communication) | fixres 2 ranks | fixres scaling | PyTorch 1 proc | DDP 2 ranks | DDP scaling | 2 ranks fixres / DDP |"
echo "|---|---|---|---|---|---|---|---|---|"
for arch in $MODELS; do
  : >"$TMP/o1"; : >"$TMP/o2"; : >"$TMP/p1"; : >"$TMP/p2"; : >"$TMP/pair"
  common="--architecture $arch --input-size $SIZE --batch $BATCH --steps $STEPS"
  for _ in $(seq 1 "$REPEATS"); do
    "$FIXRES" --threads 1 bench train $common $EXTRA 2>>"$TMP/log" | num >>"$TMP/o1"
    "$FIXRES" --threads 1 bench train $common $EXTRA 2>>"$TMP/log" | num >"$TMP/pa" &
    "$FIXRES" --threads 1 bench train $common $EXTRA 2>>"$TMP/log" | num >"$TMP/pb"
    wait
    awk -v a="$(cat "$TMP/pa")" -v b="$(cat "$TMP/pb")" 'BEGIN { print a + b }' >>"$TMP/pair"
    "$FIXRES" launch --nproc-per-node 2 -- --threads 1 bench train $common $EXTRA 2>&1 | num >>"$TMP/o2"
    "$PY" "$PEER" --arch "$arch" --size $SIZE --batch $BATCH --threads 1 --steps "$STEPS" | num >>"$TMP/p1"
    "$FIXRES" launch --nproc-per-node 2 -- "$PY" "$PEER" --arch "$arch" --size $SIZE \
      --batch $BATCH --threads 1 --steps "$STEPS" 2>&1 | num >>"$TMP/p2"
  done
  o1=$(median <"$TMP/o1"); o2=$(median <"$TMP/o2"); p1=$(median <"$TMP/p1"); p2=$(median <"$TMP/p2")
  pair=$(median <"$TMP/pair")
  echo "| $arch | $o1 | $pair ($(pct "$pair" "$o1")) | $o2 | $(pct "$o2" "$o1") | $p1 | $p2 | $(pct "$p2" "$p1") | **$(div "$o2" "$p2")x** |"
done

echo
echo "## Gradient all-reduce alone, 2 ranks: shared memory against Gloo's loopback TCP"
echo "ResNet-50's gradients (102 MB), mean of 3 iterations after one untimed."
echo
echo "| transport | bucketed reducer | bus bandwidth |"
echo "|---|---|---|"
for flag in "" "--no-shared-memory"; do
  line=$("$FIXRES" launch --nproc-per-node 2 -- --threads 1 bench allreduce --architecture resnet50 \
    --iters 3 $flag 2>&1 | grep "bucketed")
  t=$(echo "$line" | grep -Eo '[0-9.]+ s' | head -1)
  bw=$(echo "$line" | grep -Eo '[0-9.]+ GB/s' | head -1)
  echo "| ${flag:-shared memory (default)} | $t | $bw |"
done
