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

REPEATS=${BENCH_REPEATS:-5}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

echo "## Training step on random data (forward, loss, backward, SGD), CPU, $THREADS threads"
echo "Median of $REPEATS alternating runs of each (this machine's speed drifts between runs)."
echo "| model | size | batch | fixres img/s | PyTorch img/s | ratio |"
echo "|---|---|---|---|---|---|"
for cfg in "resnet18 64 32" "resnet50 64 16"; do
  set -- $cfg
  : >/tmp/fixres_train_ours.$$; : >/tmp/fixres_train_peer.$$
  for _ in $(seq 1 "$REPEATS"); do
    "$FIXRES" --threads "$THREADS" bench train --architecture "$1" --input-size "$2" --batch "$3" --steps 8 | num >>/tmp/fixres_train_ours.$$
    "$PY" "$HERE/peers/train_step_peer.py" --arch "$1" --size "$2" --batch "$3" --threads "$THREADS" --steps 8 | num >>/tmp/fixres_train_peer.$$
  done
  ours=$(median </tmp/fixres_train_ours.$$); peer=$(median </tmp/fixres_train_peer.$$)
  echo "| $1 | $2 | $3 | $ours | $peer | $(ratio "$ours" "$peer") |"
done
rm -f /tmp/fixres_train_ours.$$ /tmp/fixres_train_peer.$$

echo
echo "## Gradient all-reduce, 2 ranks on this machine (Gloo, loopback), ResNet-50 gradients"
"$FIXRES" --threads 1 launch --nproc-per-node 2 -- bench allreduce --architecture resnet50 --iters 3 | sed 's/^\[rank 0\] //'

