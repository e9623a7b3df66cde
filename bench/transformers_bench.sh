#!/usr/bin/env bash
# Vision transformers and ConvNeXt on the CPU against timm, same machine, same run: the training
# step (forward, cross-entropy, backward, SGD) and eval (forward, no gradients) of
# vit_small_patch16_224 and convnext_tiny at 224 px, each with fixres's default drop rates given
# to timm too (ViT: none; ConvNeXt: drop path 0.1, active in training only). Columns: fixres on
# Debian's LibTorch 1.13 (BUILD) and on PyTorch 2.11's (CUDA_BUILD_DIR, when built), timm on
# Debian's torch 1.13 (source in ../shared/oracles), timm 1.0.31 on torch 2.11 (the pinned PyPI
# environment, .venv-torch2) eager and through torch.compile. Attention: fixres calls the
# scaled-dot-product attention of its LibTorch (at::scaled_dot_product_attention in 2.x, the
# math kernel _scaled_dot_product_attention in 1.13), as timm calls F.scaled_dot_product_attention.
# Median of alternating runs. Usage: transformers_bench.sh [BUILD_DIR]
set -euo pipefail
BUILD=${1:-build}
CUDA_BUILD=${CUDA_BUILD_DIR:-build-cuda}
HERE="$(cd "$(dirname "$0")" && pwd)"
ORACLES="${ORACLES:-$HERE/../../shared/oracles}"
VENV_PY="$HERE/../.venv-torch2/bin/python"
THREADS=${BENCH_THREADS:-$(nproc)}
REPEATS=${BENCH_REPEATS:-3}
num() { grep -Eo '[0-9]+(\.[0-9]+)? img/s' | tail -1 | awk '{print $1}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "n/a"; else print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

ours() {  # BUILD_DIR MODE ARCH SIZE BATCH STEPS
  local bin="$1/bin/fixres"
  [ -x "$bin" ] || return 0
  FIXRES_THREADS=$THREADS "$bin" --threads "$THREADS" bench "$2" --architecture "$3" --input-size "$4" \
    --batch "$5" --steps "$6" --warmup 1 2>/dev/null | num
}
peer() {  # PYTHON ORACLES MODE ARCH SIZE BATCH STEPS [--compile]
  local dp=0
  case "$4" in convnext*) dp=0.1 ;; esac
  "$1" "$HERE/peers/zoo_peer.py" --oracles "$2" "$3" --arch "$4" --size "$5" --batch "$6" \
    --threads "$THREADS" --steps "$7" --drop-path-rate "$dp" ${8:-} 2>/dev/null | num
}

echo "## Transformers against timm, CPU, $THREADS threads, img/s, median of $REPEATS alternating runs"
echo "| model | mode | size | batch | fixres 1.13 | fixres 2.11 | timm PT 1.13 | timm PT 2.11 eager | timm PT 2.11 compile | fixres 1.13 / PT 1.13 | fixres 2.11 / PT 2.11 eager | fixres 2.11 / compile |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for cfg in "vit_small_patch16_224 train 224 8 3" "vit_small_patch16_224 eval 224 16 3" \
           "convnext_tiny train 224 8 3" "convnext_tiny eval 224 16 3"; do
  set -- $cfg
  f113=$(mktemp); f211=$(mktemp); p113=$(mktemp); p211=$(mktemp); pc=$(mktemp)
  for _ in $(seq 1 "$REPEATS"); do
    ours "$BUILD" "$2" "$1" "$3" "$4" "$5" >>"$f113" || true
    [ -f "$ORACLES/timm/__init__.py" ] && peer /usr/bin/python3 "$ORACLES" "$2" "$1" "$3" "$4" "$5" >>"$p113" || true
    ours "$CUDA_BUILD" "$2" "$1" "$3" "$4" "$5" >>"$f211" || true
    [ -x "$VENV_PY" ] && peer "$VENV_PY" pypi "$2" "$1" "$3" "$4" "$5" >>"$p211" || true
  done
  # torch.compile once (its compilation dominates a repeat; timed after two warm-up steps).
  [ -x "$VENV_PY" ] && [ "${BENCH_COMPILE:-1}" = 1 ] && peer "$VENV_PY" pypi "$2" "$1" "$3" "$4" "$5" --compile >>"$pc" || true
  a=$(median <"$f113"); b=$(median <"$f211"); c=$(median <"$p113"); d=$(median <"$p211"); e=$(median <"$pc")
  echo "| $1 | $2 | $3 | $4 | $a | $b | $c | $d | $e | $(ratio "$a" "$c") | $(ratio "$b" "$d") | $(ratio "$b" "$e") |"
  rm -f "$f113" "$f211" "$p113" "$p211" "$pc"
done
