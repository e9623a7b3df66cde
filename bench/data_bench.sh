#!/usr/bin/env bash
# Data pipeline benchmark: our loader vs the PIL/torchvision peer on the same JPEG folder, in the
# same run. Usage: bench/data_bench.sh [BUILD_DIR] [--threads "1 2 4"] [--per-class N] [--size S]
# Prints markdown tables: single thread, ours vs peer, both per wall-clock second and per CPU-second
# (the peer through bench/peer_cpu.py), each the best of REPEATS alternating runs (a shared
# machine only ever slows a run down), then thread scaling of `full` for ours (wall clock).
set -euo pipefail
BUILD=${1:-build}; shift || true
THREADS="1 2"; PER_CLASS=64; SIZE=224; SECONDS_PER=4; PASSES=2; REPEATS=3
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) THREADS="$2"; shift 2 ;;
    --per-class) PER_CLASS="$2"; shift 2 ;;
    --size) SIZE="$2"; shift 2 ;;
    --seconds) SECONDS_PER="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
PEERS=${FIXRES_PEERS:-$HERE/peers}
FIXRES="$BUILD/bin/fixres"
PY=/usr/bin/python3
DIR=$(mktemp -d /tmp/fixres_data_bench.XXXXXX)
trap 'rm -rf "$DIR"' EXIT

$PY "$PEERS/make_jpeg_folder.py" "$DIR/imgs" --classes 4 --per-class "$PER_CLASS" --seed 0
N=$(find "$DIR/imgs" -name '*.jpg' | wc -l)
echo "# $N JPEGs (make_jpeg_folder.py, seed 0), size $SIZE, $(nproc) CPU(s), load $(cut -d' ' -f1 /proc/loadavg)"

ours() {  # kind threads [--cpu-time] -> img/s
  FIXRES_THREADS=1 "$FIXRES" -q bench data --dataset-path "$DIR/imgs" --kind "$1" --input-size "$SIZE" \
    --threads "$2" --seconds "$SECONDS_PER" ${3:-} | tail -1 | awk '{print $1}'
}
peer() {  # kind [cpu] -> img/s
  if [ "${2:-}" = cpu ]; then
    $PY "$HERE/peer_cpu.py" "$PEERS" "$DIR/imgs" --kind "$1" --size "$SIZE" --passes "$PASSES" | awk '{print $(NF-4)}'
  else
    $PY "$PEERS/pipeline_peer.py" "$DIR/imgs" --kind "$1" --size "$SIZE" --passes "$PASSES" | awk '{print $(NF-4)}'
  fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }
max() { awk -v a="$1" -v b="$2" 'BEGIN{print (a > b ? a : b)}'; }

echo "| kind | ours img/s (wall) | peer img/s (wall) | ratio | ours img/CPU-s | peer img/CPU-s | ratio |"
echo "|---|---|---|---|---|---|---|"
for kind in full torch val; do
  o=0; p=0; oc=0; pc=0
  for _ in $(seq "$REPEATS"); do
    o=$(max "$o" "$(ours "$kind" 1)"); p=$(max "$p" "$(peer "$kind")")
    oc=$(max "$oc" "$(ours "$kind" 1 --cpu-time)"); pc=$(max "$pc" "$(peer "$kind" cpu)")
  done
  echo "| $kind | $o | $p | $(ratio "$o" "$p") | $oc | $pc | $(ratio "$oc" "$pc") |"
done
echo
echo "| threads | ours full (img/s) | efficiency |"
echo "|---|---|---|"
base=""
for t in $THREADS; do
  o=0
  for _ in $(seq "$REPEATS"); do o=$(max "$o" "$(ours full "$t")"); done
  [ -z "$base" ] && base=$(awk -v a="$o" -v t="$t" 'BEGIN{print a/t}')
  echo "| $t | $o | $(awk -v a="$o" -v b="$base" -v t="$t" 'BEGIN{printf "%.0f%%", 100*a/(b*t)}') |"
done
