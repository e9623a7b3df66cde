#!/usr/bin/env bash
# The zoo's models on the CPU against timm (Python, from ../shared/oracles) on random data, same
# machine, same run: EfficientNet-B0 training step at 224 (batch 16, the default drop rates of
# both: dropout 0.2, drop path 0.2) and PNASNet-5-Large eval at 331 (batch 8). Median of
# alternating runs. Usage: zoo_bench.sh [BUILD_DIR]
set -euo pipefail
BUILD=${1:-build}
FIXRES="$BUILD/bin/fixres"
PY=/usr/bin/python3
HERE="$(cd "$(dirname "$0")" && pwd)"
ORACLES="${ORACLES:-$HERE/../../shared/oracles}"
[ -f "$ORACLES/timm/__init__.py" ] || { echo "zoo bench skipped: no timm source at $ORACLES"; exit 0; }
THREADS=${BENCH_THREADS:-$(nproc)}
REPEATS=${BENCH_REPEATS:-3}
num() { grep -Eo '[0-9]+(\.[0-9]+)? img/s' | tail -1 | awk '{print $1}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

echo "## Zoo models against timm, CPU, $THREADS threads, median of $REPEATS alternating runs"
echo "| model | mode | size | batch | fixres img/s | timm img/s | ratio |"
echo "|---|---|---|---|---|---|---|"
for cfg in "tf_efficientnet_b0 train 224 16 4 0.2 0.2" "pnasnet5large eval 331 8 3 0 0"; do
  set -- $cfg
  if ! "$FIXRES" bench "$2" --help >/dev/null 2>&1 || ! "$FIXRES" bench eval --architecture "$1" --steps 1 --warmup 0 --batch 1 --input-size 64 >/dev/null 2>&1; then
    echo "| $1 | $2 | $3 | $4 | (not built) | | |"; continue
  fi
  ours_f=$(mktemp); peer_f=$(mktemp)
  for _ in $(seq 1 "$REPEATS"); do
    "$FIXRES" --threads "$THREADS" bench "$2" --architecture "$1" --input-size "$3" --batch "$4" \
      --steps "$5" --warmup 1 | num >>"$ours_f"
    "$PY" "$HERE/peers/zoo_peer.py" --oracles "$ORACLES" "$2" --arch "$1" --size "$3" --batch "$4" \
      --threads "$THREADS" --steps "$5" --drop-rate "$6" --drop-path-rate "$7" | num >>"$peer_f"
  done
  ours=$(median <"$ours_f"); peer=$(median <"$peer_f")
  echo "| $1 | $2 | $3 | $4 | $ours | $peer | $(ratio "$ours" "$peer") |"
  rm -f "$ours_f" "$peer_f"
done
