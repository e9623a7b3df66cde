#!/usr/bin/env bash
# Data pipeline benchmark: our loader vs the PIL/torchvision peer on the same JPEG folder, in the
# same run. Usage: bench/data_bench.sh [BUILD_DIR] [--threads "1 2 4"] [--per-class N] [--size S]
# Prints markdown tables: single thread, ours vs peer, both per wall-clock second and per CPU-second
# (the peer through bench/peer_cpu.py), each the median of REPEATS alternating runs (on a shared
# machine the peer's rate swings by up to 3x from run to run, ours much less: a best-of-N would
# favour the noisier side), then thread scaling of `full` for ours (wall clock, median), then
# tar shards against the folder (`fixres shard` of the same files; both read from disk at each
# access, `torch` transform, 1 worker): img/s and resident memory (after the first pass, after
# the last, peak), medians of alternating runs. --shards-only: that last table alone.
set -euo pipefail
BUILD=${1:-build}; shift || true
THREADS="1 2"; PER_CLASS=64; SIZE=224; SECONDS_PER=4; PASSES=2; REPEATS=5; SHARDS_ONLY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) THREADS="$2"; shift 2 ;;
    --per-class) PER_CLASS="$2"; shift 2 ;;
    --size) SIZE="$2"; shift 2 ;;
    --seconds) SECONDS_PER="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --shards-only) SHARDS_ONLY=1; shift ;;
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

ours() {  # kind threads [--cpu-time] -> img/s (ta_wide: torch + --auto-augment ta_wide)
  local kind=$1 extra=""
  [ "$kind" = ta_wide ] && kind=torch extra="--auto-augment ta_wide"
  FIXRES_THREADS=1 "$FIXRES" -q bench data --dataset-path "$DIR/imgs" --kind "$kind" --input-size "$SIZE" \
    --workers "$2" --seconds "$SECONDS_PER" $extra ${3:-} | tail -1 | awk '{print $1}'
}
peer() {  # kind [cpu] -> img/s
  if [ "${2:-}" = cpu ]; then
    $PY "$HERE/peer_cpu.py" "$PEERS" "$DIR/imgs" --kind "$1" --size "$SIZE" --passes "$PASSES" | awk '{print $(NF-4)}'
  else
    $PY "$PEERS/pipeline_peer.py" "$DIR/imgs" --kind "$1" --size "$SIZE" --passes "$PASSES" | awk '{print $(NF-4)}'
  fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

shards() {  # shards vs folder, same files, same run
  "$FIXRES" -q shard --dataset-path "$DIR/imgs" --out "$DIR/shards" --shard-size 4 >/dev/null
  echo "# $(ls "$DIR/shards"/*.tar | wc -l) shards of <= 4 MB (fixres shard), from disk, torch, 1 worker"
  measure() {  # path -> "img/s first last peak"
    local out
    out=$(FIXRES_THREADS=1 "$FIXRES" -q bench data --dataset-path "$1" --kind torch --input-size "$SIZE" \
      --workers 1 --seconds "$SECONDS_PER" --from-disk --memory)
    echo "$(echo "$out" | tail -1 | awk '{print $1}') $(echo "$out" | grep '^memory:' | grep -oE '[0-9]+\.[0-9]+' | tr '\n' ' ')"
  }
  echo "| data | img/s (wall) | RSS after pass 1 (MiB) | RSS after last pass (MiB) | peak RSS (MiB) |"
  echo "|---|---|---|---|---|"
  local fr="" sr="" f1="" fl="" fp="" s1="" sl="" sp=""
  for _ in $(seq "$REPEATS"); do
    read -r r a b c <<<"$(measure "$DIR/imgs")"; fr="$fr $r"; f1="$f1 $a"; fl="$fl $b"; fp="$fp $c"
    read -r r a b c <<<"$(measure "$DIR/shards")"; sr="$sr $r"; s1="$s1 $a"; sl="$sl $b"; sp="$sp $c"
  done
  echo "| folder | $(echo "$fr" | median) | $(echo "$f1" | median) | $(echo "$fl" | median) | $(echo "$fp" | median) |"
  echo "| shards | $(echo "$sr" | median) | $(echo "$s1" | median) | $(echo "$sl" | median) | $(echo "$sp" | median) |"
  echo
  echo "Runs (img/s), in order: folder$fr | shards$sr; shards/folder $(ratio "$(echo "$sr" | median)" "$(echo "$fr" | median)")"
}
if [ "$SHARDS_ONLY" = 1 ]; then shards; exit 0; fi

RAW=""
echo "| kind | ours img/s (wall) | peer img/s (wall) | ratio | ours img/CPU-s | peer img/CPU-s | ratio |"
echo "|---|---|---|---|---|---|---|"
for kind in ${KINDS:-full torch val ta_wide}; do
  os=""; ps=""; ocs=""; pcs=""
  for _ in $(seq "$REPEATS"); do
    os="$os $(ours "$kind" 1)"; ps="$ps $(peer "$kind")"
    ocs="$ocs $(ours "$kind" 1 --cpu-time)"; pcs="$pcs $(peer "$kind" cpu)"
  done
  o=$(echo "$os" | median); p=$(echo "$ps" | median)
  oc=$(echo "$ocs" | median); pc=$(echo "$pcs" | median)
  RAW="$RAW
$kind: ours$os | peer$ps | ours per CPU-s$ocs | peer per CPU-s$pcs"
  echo "| $kind | $o | $p | $(ratio "$o" "$p") | $oc | $pc | $(ratio "$oc" "$pc") |"
done
echo
echo "Runs (img/s), in order:$RAW"
echo
echo "| threads | ours full (img/s) | efficiency |"
echo "|---|---|---|"
base=""
for t in $THREADS; do
  os=""
  for _ in $(seq "$REPEATS"); do os="$os $(ours full "$t")"; done
  o=$(echo "$os" | median)
  [ -z "$base" ] && base=$(awk -v a="$o" -v t="$t" 'BEGIN{print a/t}')
  echo "| $t | $o | $(awk -v a="$o" -v b="$base" -v t="$t" 'BEGIN{printf "%.0f%%", 100*a/(b*t)}') |"
done
echo
shards
