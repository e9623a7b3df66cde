#!/usr/bin/env bash
# Data-parallel training on 2 ranks of this machine: fixres (`fixres launch --nproc-per-node 2 --
# bench train`) against PyTorch DistributedDataParallel (bench/peers/ddp_train_peer.py started by
# the same launcher), Gloo on loopback, 1 thread per rank, random data, same model, size and batch
# per rank; and each alone (1 process, 1 thread). Two stacks in the same run, alternating: fixres
# built on Debian's LibTorch 1.13 (BUILD) against DDP on Debian's torch 1.13 (/usr/bin/python3),
# and fixres built on PyTorch 2.11's LibTorch (CUDA_BUILD, run with --cpu) against DDP on torch
# 2.11 (.venv-torch2); a missing build or environment prints n/a and the rest still runs.
# Medians of alternating runs; prints a Markdown table with total images per second, scaling
# efficiency (2 ranks against 2 x one process) and the ratio fixres / DDP, then every fixres
# build against every DDP. Also two independent fixres processes at the same time, without any
# communication: what this host gives two processes at all (memory bandwidth and caches are
# shared), the ceiling for 2 ranks.
# Usage: bench/ddp_bench.sh [build] [build-cuda]   (BENCH_REPEATS, DDP_MODELS="resnet18 resnet50",
#   DDP_STEPS, DDP_FIXRES_FLAGS, CUDA_BUILD_DIR (default build-cuda), TORCH2_PYTHON (default
#   .venv-torch2/bin/python, or $FIXRES_TORCH2_VENV/bin/python))
set -euo pipefail
BUILD=${1:-build}
CUDA_BUILD=${2:-${CUDA_BUILD_DIR:-build-cuda}}
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
FIXRES="$BUILD/bin/fixres"
FIXRES2="$CUDA_BUILD/bin/fixres"
PY=/usr/bin/python3
PY2=${TORCH2_PYTHON:-${FIXRES_TORCH2_VENV:-$ROOT/.venv-torch2}/bin/python}
PEER="$HERE/peers/ddp_train_peer.py"
REPEATS=${BENCH_REPEATS:-3}
MODELS=${DDP_MODELS:-"resnet18 resnet50"}
STEPS=${DDP_STEPS:-8}
SIZE=64
BATCH=16
EXTRA=${DDP_FIXRES_FLAGS:-}
num() { grep -Eo '[0-9]+(\.[0-9]+)? img/s' | tail -1 | awk '{print $1}'; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
isnum() { [[ "$1" =~ ^[0-9]+(\.[0-9]+)?$ ]]; }
div() { if isnum "$1" && isnum "$2"; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; else echo "n/a"; fi; }
pct() { if isnum "$1" && isnum "$2"; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f %%", 100 * a / (2 * b) }'; else echo "n/a"; fi; }
TMP=$(mktemp -d)
# On a failure the single-process runs' messages (kept apart from the table) are shown.
trap 'st=$?; if [ "$st" -ne 0 ] && [ -f "$TMP/log" ]; then cat "$TMP/log" >&2; fi; rm -rf "$TMP"' EXIT

# The two stacks: fixres build and Python of each, their versions, or why they are n/a.
libtorch() { "$1" version 2>/dev/null | sed -n 's/^libtorch \([^,]*\),.*/\1/p'; }
torchver() { "$1" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null; }
V1=$(libtorch "$FIXRES" || true)
[ -n "$V1" ] || { echo "ddp_bench: no working $FIXRES (build it first)" >&2; exit 1; }
V2=""; PV2=""; NA_B2=""; NA_P1=""; NA_P2=""
if [ -x "$FIXRES2" ]; then V2=$(libtorch "$FIXRES2" || true); [ -n "$V2" ] || NA_B2="n/a ($FIXRES2 does not run)"
else NA_B2="n/a (no $CUDA_BUILD)"; fi
PV1=$(torchver "$PY" || true); [ -n "$PV1" ] || NA_P1="n/a (no torch in $PY)"
if [ -x "$PY2" ]; then PV2=$(torchver "$PY2" || true); [ -n "$PV2" ] || NA_P2="n/a (no torch in .venv-torch2)"
else NA_P2="n/a (no .venv-torch2)"; fi
# Stack i: build BIN[i] (n/a: NA_B[i]) and DDP on PYS[i] (n/a: NA_P[i]).
BIN=("$FIXRES" "$FIXRES2"); NA_B=("" "$NA_B2"); PYS=("$PY" "$PY2"); NA_P=("$NA_P1" "$NA_P2")
BV=("$V1" "${V2:-2.x}"); PV=("${PV1:-1.13}" "${PV2:-2.x}"); O2=("" ""); P2=("" "")

echo "## Data-parallel training step, 2 ranks x 1 thread (Gloo, loopback) vs 1 process x 1 thread"
echo "size $SIZE, batch $BATCH per rank, $STEPS timed steps, median of $REPEATS alternating runs,"
echo "both stacks in the same run."
echo
echo "- LibTorch $V1: $BUILD/bin/fixres; DDP on PyTorch ${PV[0]}: ${NA_P1:-Debian python3}"
echo "- LibTorch ${BV[1]}: ${NA_B2:-$CUDA_BUILD/bin/fixres, with --cpu}; DDP on PyTorch ${PV[1]}: ${NA_P2:-.venv-torch2}"
echo
: >"$TMP/ratios"
echo "| model | LibTorch / PyTorch | fixres 1 proc | 2 x 1 proc at once (no communication) | fixres 2 ranks | fixres scaling | PyTorch 1 proc | DDP 2 ranks | DDP scaling | 2 ranks fixres / DDP |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for arch in $MODELS; do
  for i in 0 1; do : >"$TMP/o1.$i"; : >"$TMP/o2.$i"; : >"$TMP/p1.$i"; : >"$TMP/p2.$i"; : >"$TMP/pair.$i"; done
  common="--architecture $arch --input-size $SIZE --batch $BATCH --steps $STEPS --cpu"
  peer=(--arch "$arch" --size $SIZE --batch $BATCH --threads 1 --steps "$STEPS")
  for _ in $(seq 1 "$REPEATS"); do
    for i in 0 1; do
      [ -z "${NA_B[$i]}" ] || continue
      bin=${BIN[$i]}
      "$bin" --threads 1 bench train $common $EXTRA 2>>"$TMP/log" | num >>"$TMP/o1.$i" || true
      "$bin" --threads 1 bench train $common $EXTRA 2>>"$TMP/log" | num >"$TMP/pa" &
      "$bin" --threads 1 bench train $common $EXTRA 2>>"$TMP/log" | num >"$TMP/pb" || true
      wait || true
      if [ -s "$TMP/pa" ] && [ -s "$TMP/pb" ]; then
        awk -v a="$(cat "$TMP/pa")" -v b="$(cat "$TMP/pb")" 'BEGIN { print a + b }' >>"$TMP/pair.$i"
      fi
      "$bin" launch --nproc-per-node 2 -- --threads 1 bench train $common $EXTRA 2>&1 | num >>"$TMP/o2.$i" || true
    done
    for i in 0 1; do
      [ -z "${NA_P[$i]}" ] || continue
      py=${PYS[$i]}
      "$py" "$PEER" "${peer[@]}" 2>>"$TMP/log" | num >>"$TMP/p1.$i" || true
      "$FIXRES" launch --nproc-per-node 2 -- "$py" "$PEER" "${peer[@]}" 2>&1 | num >>"$TMP/p2.$i" || true
    done
  done
  for i in 0 1; do
    na=${NA_B[$i]}
    o1=${na:-$(median <"$TMP/o1.$i")}; o2=${na:-$(median <"$TMP/o2.$i")}; pair=${na:-$(median <"$TMP/pair.$i")}
    na=${NA_P[$i]}
    p1=${na:-$(median <"$TMP/p1.$i")}; p2=${na:-$(median <"$TMP/p2.$i")}
    O2[$i]=$o2; P2[$i]=$p2
    pairc=$pair; isnum "$pair" && pairc="$pair ($(pct "$pair" "$o1"))"
    r=$(div "$o2" "$p2"); isnum "$r" && r="**${r}x**"
    echo "| $arch | ${BV[$i]} / ${PV[$i]} | ${o1:-n/a (failed)} | ${pairc:-n/a (failed)} | ${o2:-n/a (failed)} | $(pct "$o2" "$o1") | ${p1:-n/a (failed)} | ${p2:-n/a (failed)} | $(pct "$p2" "$p1") | $r |"
  done
  for i in 0 1; do
    echo "| $arch | fixres on ${BV[$i]} | $(div "${O2[$i]}" "${P2[0]}") | $(div "${O2[$i]}" "${P2[1]}") |" >>"$TMP/ratios"
  done
done
echo
echo "2 ranks, every build against every DDP (fixres / DDP):"
echo
echo "| model | build | / DDP on PyTorch ${PV[0]} | / DDP on PyTorch ${PV[1]} |"
echo "|---|---|---|---|"
cat "$TMP/ratios"

echo
echo "## Gradient all-reduce alone, 2 ranks: shared memory against Gloo's loopback TCP"
echo "ResNet-50's gradients (102 MB), mean of 3 iterations after one untimed."
echo
echo "| LibTorch | transport | bucketed reducer | bus bandwidth |"
echo "|---|---|---|---|"
for i in 0 1; do
  for flag in "" "--no-shared-memory"; do
    if [ -n "${NA_B[$i]}" ]; then echo "| ${BV[$i]} | ${flag:-shared memory (default)} | ${NA_B[$i]} | |"; continue; fi
    line=$("${BIN[$i]}" launch --nproc-per-node 2 -- --threads 1 bench allreduce --architecture resnet50 \
      --iters 3 $flag 2>&1 | grep "bucketed" || true)
    t=$(echo "$line" | grep -Eo '[0-9.]+ s' | head -1 || true)
    bw=$(echo "$line" | grep -Eo '[0-9.]+ GB/s' | head -1 || true)
    echo "| ${BV[$i]} | ${flag:-shared memory (default)} | ${t:-n/a (failed)} | $bw |"
  done
done
