#!/usr/bin/env bash
# Training step and all-reduce: fixres against the Python peers (bench/peers/), same machine, same
# run, on the CPU. Two fixres builds: on Debian's LibTorch 1.13 (BUILD) and on PyTorch 2.11's
# LibTorch (CUDA_BUILD, the `make build-cuda` folder, run with --cpu); three peers: PyTorch eager
# on Debian's torch 1.13 (/usr/bin/python3), PyTorch eager on torch 2.11 (.venv-torch2) and
# torch.compile (inductor, C++ kernels built by the system compiler) on torch 2.11. Prints the
# images per second of each (medians of alternating runs) and the ratio of each build to each
# peer. A missing build or environment prints n/a and the rest still runs.
# Usage: bench/train_bench.sh [build] [build-cuda]
# Environment: BENCH_THREADS (default: all cores), BENCH_REPEATS (5), CUDA_BUILD_DIR (the second
#   folder when no second argument is given; default build-cuda), TORCH2_PYTHON (default
#   .venv-torch2/bin/python, or $FIXRES_TORCH2_VENV/bin/python), BENCH_COMPILE=0 (skip the
#   torch.compile peer), BENCH_COMPILE_REPEATS (3: the compile peer runs in the first N of the
#   alternating rounds; its first run compiles from an empty inductor cache, the later ones hit
#   that run's cache), BENCH_BEFORE (build folders of an earlier commit, e.g. "old/build
#   old/build-cuda": run in the same alternating rounds, each printed with its ratios as
#   "(before)" rows, so that a change's before and after come from one run).
set -euo pipefail
BUILD=${1:-build}
CUDA_BUILD=${2:-${CUDA_BUILD_DIR:-build-cuda}}
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
FIXRES="$BUILD/bin/fixres"
FIXRES2="$CUDA_BUILD/bin/fixres"
PY=/usr/bin/python3
PY2=${TORCH2_PYTHON:-${FIXRES_TORCH2_VENV:-$ROOT/.venv-torch2}/bin/python}
THREADS=${BENCH_THREADS:-$(nproc)}
REPEATS=${BENCH_REPEATS:-5}
COMPILE=${BENCH_COMPILE:-1}
COMPILE_REPEATS=${BENCH_COMPILE_REPEATS:-3}
if [ "$COMPILE_REPEATS" -gt "$REPEATS" ]; then COMPILE_REPEATS=$REPEATS; fi
num() { grep -Eo '[0-9]+(\.[0-9]+)? img/s' | tail -1 | awk '{print $1}'; }
isnum() { [[ "$1" =~ ^[0-9]+(\.[0-9]+)?$ ]]; }
ratio() { if isnum "$1" && isnum "$2"; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; else echo "n/a"; fi; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# What is there: each stack's version, or why it is n/a.
libtorch() { "$1" version 2>/dev/null | sed -n 's/^libtorch \([^,]*\),.*/\1/p'; }
torchver() { "$1" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null; }
V1=$(libtorch "$FIXRES" || true)
[ -n "$V1" ] || { echo "train_bench: no working $FIXRES (build it first)" >&2; exit 1; }
NA_B2=""; NA_P1=""; NA_P2=""; NA_C=""; V2=""; PV2=""
if [ -x "$FIXRES2" ]; then V2=$(libtorch "$FIXRES2" || true); [ -n "$V2" ] || NA_B2="n/a ($FIXRES2 does not run)"
else NA_B2="n/a (no $CUDA_BUILD)"; fi
PV1=$(torchver "$PY" || true); [ -n "$PV1" ] || NA_P1="n/a (no torch in $PY)"
if [ -x "$PY2" ]; then PV2=$(torchver "$PY2" || true); [ -n "$PV2" ] || NA_P2="n/a (no torch in .venv-torch2)"
else NA_P2="n/a (no .venv-torch2)"; fi
if [ -n "$NA_P2" ]; then NA_C=$NA_P2; elif [ "$COMPILE" = 0 ]; then NA_C="n/a (BENCH_COMPILE=0)"; fi
export TORCHINDUCTOR_CACHE_DIR="$TMP/inductor"   # empty at the start: the first compile is cold

echo "## Training step on random data (forward, loss, backward, SGD), CPU, $THREADS threads"
echo "Median of $REPEATS alternating runs of each (this machine's speed drifts between runs), 8 timed"
echo "steps after 2 untimed; torch.compile: median of $COMPILE_REPEATS runs, its compile time apart."
echo
echo "- fixres on $V1: $BUILD/bin/fixres"
echo "- fixres on ${V2:-2.x}: ${NA_B2:-$CUDA_BUILD/bin/fixres, with --cpu}"
echo "- PyTorch ${PV1:-1.13} eager: ${NA_P1:-Debian python3}"
echo "- PyTorch ${PV2:-2.x} eager: ${NA_P2:-.venv-torch2}"
echo "- PyTorch ${PV2:-2.x} torch.compile: ${NA_C:-.venv-torch2, inductor (default mode) on the model, SGD step eager}"
echo

peer() {  # peer OUTFILE LOGFILE PYTHON ARGS...
  local out=$1 log=$2 py=$3; shift 3
  "$py" "$HERE/peers/train_step_peer.py" "$@" >"$TMP/run" 2>>"$log" || true
  cat "$TMP/run" >>"$log"
  num <"$TMP/run" >>"$out" || true
  grep -Eo 'compile\+first step [0-9.]+ s' "$TMP/run" | grep -Eo '[0-9.]+' >>"$out.compile" || true
}
# One cell: the median, or why there is none (the stack is missing, or its runs printed no rate).
cell() {  # cell FILE NA_REASON LOG
  local v
  if [ -n "$2" ]; then echo "$2"; return; fi
  v=$(median <"$1")
  if [ -n "$v" ]; then echo "$v"; else echo "n/a (failed: $(grep -E 'Error|error:' "$3" | tail -1 | cut -c1-120))"; fi
}

read -r -a BEFORE <<<"${BENCH_BEFORE:-}"
for cfg in "resnet18 64 32" "resnet50 64 16"; do
  set -- $cfg
  arch=$1 size=$2 batch=$3
  for f in a b p1 p2 c; do : >"$TMP/$f"; : >"$TMP/$f.compile"; : >"$TMP/$f.log"; done
  for k in "${!BEFORE[@]}"; do : >"$TMP/before$k"; : >"$TMP/before$k.log"; done
  shape=(--arch "$arch" --size "$size" --batch "$batch" --threads "$THREADS" --steps 8)
  ours=(--threads "$THREADS" bench train --cpu --architecture "$arch" --input-size "$size" --batch "$batch" --steps 8)
  for r in $(seq 1 "$REPEATS"); do
    "$FIXRES" "${ours[@]}" 2>>"$TMP/a.log" | num >>"$TMP/a" || true
    if [ -z "$NA_B2" ]; then "$FIXRES2" "${ours[@]}" 2>>"$TMP/b.log" | num >>"$TMP/b" || true; fi
    for k in "${!BEFORE[@]}"; do
      "${BEFORE[$k]}/bin/fixres" "${ours[@]}" 2>>"$TMP/before$k.log" | num >>"$TMP/before$k" || true
    done
    if [ -z "$NA_P1" ]; then peer "$TMP/p1" "$TMP/p1.log" "$PY" "${shape[@]}"; fi
    if [ -z "$NA_P2" ]; then peer "$TMP/p2" "$TMP/p2.log" "$PY2" "${shape[@]}"; fi
    if [ -z "$NA_C" ] && [ "$r" -le "$COMPILE_REPEATS" ]; then
      peer "$TMP/c" "$TMP/c.log" "$PY2" "${shape[@]}" --compile
    fi
  done
  a=$(cell "$TMP/a" "" "$TMP/a.log"); b=$(cell "$TMP/b" "$NA_B2" "$TMP/b.log")
  p1=$(cell "$TMP/p1" "$NA_P1" "$TMP/p1.log"); p2=$(cell "$TMP/p2" "$NA_P2" "$TMP/p2.log")
  c=$(cell "$TMP/c" "$NA_C" "$TMP/c.log")
  cold=$(head -1 "$TMP/c.compile"); warm=$(tail -n +2 "$TMP/c.compile" | median)
  if [ -n "$cold" ]; then ct="$cold s cold${warm:+, $warm s cached}"; else ct="n/a"; fi
  echo "| $arch | $size | $batch | $a | $b | $p1 | $p2 | $c | $ct |" >>"$TMP/table"
  echo "| $arch | fixres on $V1 | $(ratio "$a" "$p1") | $(ratio "$a" "$p2") | $(ratio "$a" "$c") |" >>"$TMP/ratios"
  echo "| $arch | fixres on ${V2:-2.x} | $(ratio "$b" "$p1") | $(ratio "$b" "$p2") | $(ratio "$b" "$c") |" >>"$TMP/ratios"
  for k in "${!BEFORE[@]}"; do
    v=$(cell "$TMP/before$k" "" "$TMP/before$k.log")
    label="fixres on $(libtorch "${BEFORE[$k]}/bin/fixres") (before: ${BEFORE[$k]}, $v img/s; after: $([ "$k" = 0 ] && echo "$a" || echo "$b"))"
    echo "| $arch | $label | $(ratio "$v" "$p1") | $(ratio "$v" "$p2") | $(ratio "$v" "$c") |" >>"$TMP/ratios"
  done
done
T1=${PV1:-1.13}; T2=${PV2:-2.x}
echo "| model | size | batch | fixres on $V1 | fixres on ${V2:-2.x} | PyTorch $T1 eager | PyTorch $T2 eager | PyTorch $T2 torch.compile | compile + first step |"
echo "|---|---|---|---|---|---|---|---|---|"
cat "$TMP/table"
echo
echo "img/s; ratios fixres / peer:"
echo
echo "| model | build | / PyTorch $T1 eager | / PyTorch $T2 eager | / PyTorch $T2 torch.compile |"
echo "|---|---|---|---|---|"
cat "$TMP/ratios"

echo
echo "## Gradient all-reduce, 2 ranks on this machine (Gloo, loopback), ResNet-50 gradients"
for bin in "$FIXRES" "$FIXRES2"; do
  if [ ! -x "$bin" ]; then echo "LibTorch 2.x: n/a (no $CUDA_BUILD)"; continue; fi
  echo "LibTorch $(libtorch "$bin"):"
  "$bin" --threads 1 launch --nproc-per-node 2 -- bench allreduce --architecture resnet50 --iters 3 \
    | sed 's/^\[rank 0\] //' || echo "n/a (failed)"
done
