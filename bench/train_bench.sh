#!/usr/bin/env bash
# Training step and all-reduce: fixres against the Python peer (bench/peers/, Debian's PyTorch),
# same machine, same run; prints each pair and the ratio ours / peer.
set -euo pipefail
BUILD=${1:-build}
FIXRES="$BUILD/bin/fixres"
PY=/usr/bin/python3
HERE="$(cd "$(dirname "$0")" && pwd)"
THREADS=${BENCH_THREADS:-$(nproc)}
num() { grep -Eo '[0-9]+(\.[0-9]+)? img/s' | tail -1 | awk '{print $1}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "## Training step on random data (forward, loss, backward, SGD), CPU, $THREADS threads"
echo "| model | size | batch | fixres img/s | PyTorch img/s | ratio |"
echo "|---|---|---|---|---|---|"
for cfg in "resnet18 64 32" "resnet50 64 16"; do
  set -- $cfg
  ours=$("$FIXRES" --threads "$THREADS" bench train --architecture "$1" --input-size "$2" --batch "$3" --steps 8 | num)
  peer=$("$PY" "$HERE/peers/train_step_peer.py" --arch "$1" --size "$2" --batch "$3" --threads "$THREADS" --steps 8 | num)
  echo "| $1 | $2 | $3 | $ours | $peer | $(ratio "$ours" "$peer") |"
done

echo
echo "## Gradient all-reduce, 2 ranks on this machine (Gloo, loopback), ResNet-50 gradients"
"$FIXRES" --threads 1 launch --nproc-per-node 2 -- bench allreduce --architecture resnet50 --iters 3 | sed 's/^\[rank 0\] //'

