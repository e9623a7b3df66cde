#!/usr/bin/env bash
# The GPU host run, in one call: build fixres against the CUDA LibTorch inside the host's PyTorch,
# check correctness on the GPU, then benchmark fixres and the PyTorch peer in the same run and
# print the tables (docs/performance.md takes them as printed).
#
# Usage: bench/gpu/run.sh [--quick] [--skip-build] [--cpu-smoke BUILD_DIR]
#   --quick        fewer steps and a 2,048-image folder
#   --skip-build   reuse build-gpu/
#   --cpu-smoke D  the whole script on the CPU with D's binaries, tiny sizes and no GPU peer:
#                  checks the script itself (tests/integration/gpu_script_test.sh), measures
#                  nothing
# Environment: PYTHON (default python3: the one with PyTorch + CUDA), OUT (default runs/gpu),
#   DEBS (default .debs: Debian packages the host lacks, fetched beforehand with
#   `bench/gpu/fetch-debs.sh`; unpacked into a private prefix, never into /).
# Needs: an NVIDIA GPU, PyTorch with CUDA, cmake + ninja (PyTorch's venv has both), jpeglib.h.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-python3}
OUT=${OUT:-$ROOT/runs/gpu}
DEBS=${DEBS:-$ROOT/.debs}
BUILD=$ROOT/build-gpu
QUICK=0; SKIP_BUILD=0; SMOKE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; shift ;;
    --skip-build) SKIP_BUILD=1; shift ;;
    --cpu-smoke) SMOKE=1; SKIP_BUILD=1; BUILD=${2:?--cpu-smoke needs a build folder}; shift 2 ;;
    *) echo "bench/gpu/run.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
FIXRES=$BUILD/bin/fixres
PEERS=$ROOT/bench/peers
NPROC=$(nproc)
# Sizes: model-only train and eval resolutions, batch, timed steps, JPEG count, end-to-end size
# and steps, and the precision flags of "the GPU run" (bf16 channels-last on the GPU).
TRAIN_SIZES="128 160 224"; EVAL_SIZES="224 320 384 448"; BATCH=256; E2E_SIZE=224
NUMERICS=(--precision bf16 --memory-format channels-last)
TRAIN_NUMERICS=(--precision bf16 --memory-format channels-last)
PEER_DEV=(--bf16 --channels-last)
if [ "$QUICK" = 1 ]; then STEPS=6; IMAGES=2048; E2E_STEPS=6; else STEPS=30; IMAGES=20480; E2E_STEPS=40; fi
# torch.compile modes of the peer (GPU_COMPILE_MODES="" for none; add max-autotune-no-cudagraphs
# when the lease allows: minutes of autotuning per size).
COMPILE_MODES=${GPU_COMPILE_MODES-default}
[ "$QUICK" = 1 ] && COMPILE_MODES=${GPU_COMPILE_MODES-}
if [ "$SMOKE" = 1 ]; then
  TRAIN_SIZES="32"; EVAL_SIZES="32"; BATCH=4; E2E_SIZE=32; STEPS=1; IMAGES=64; E2E_STEPS=2
  NUMERICS=(--precision fp32 --memory-format contiguous)
  TRAIN_NUMERICS=(--precision fp32)
  PEER_DEV=(--device cpu)
fi
log() { echo "== $(date +%T) $*"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b + 0 > 0 && a + 0 > 0) printf "%.2f", a/b; else printf "n/a" }'; }

# ---- 1. build ---------------------------------------------------------------------------------
if [ "$SKIP_BUILD" = 0 ]; then
  PFX=$(mktemp -d /tmp/fixres-pfx.XXXXXX)
  if ls "$DEBS"/*.deb >/dev/null 2>&1; then
    for d in "$DEBS"/*.deb; do dpkg -x "$d" "$PFX"; done
  fi
  # The same build as `make build-cuda` (scripts/build-cuda.sh), on this host's own PyTorch.
  log "build against $("$PY" -c 'import torch; print("PyTorch", torch.__version__)') ($NPROC jobs)"
  "$ROOT/scripts/build-cuda.sh" --python "$PY" --build-dir "$BUILD" --prefix "$PFX/usr" --no-tests \
    --optional-deps --jobs "$NPROC" >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
fi
"$FIXRES" version

# ---- 2. data -----------------------------------------------------------------------------------
DATA=$OUT/jpegs
if [ ! -d "$DATA/train" ]; then
  log "make $IMAGES ImageNet-shaped JPEGs"
  "$PY" "$PEERS/make_jpeg_folder.py" "$DATA/train" --classes 16 --per-class $((IMAGES / 16)) --seed 0 >/dev/null
  "$PY" "$PEERS/make_jpeg_folder.py" "$DATA/val" --classes 16 --per-class $((SMOKE ? 2 : 16)) --seed 1 >/dev/null
fi
cat "$DATA"/train/*/* >/dev/null  # into the page cache

# ---- 3. correctness on the GPU ----------------------------------------------------------------
# (The unit and integration tests compare with Debian's Python packages: they run in CI, on the CPU.)
log "GPU checks"
"$PY" "$ROOT/bench/gpu/check.py" weights "$OUT/r50.pth" 16
CHECK_SIZE=$((SMOKE ? 32 : 224))
for dev in cpu gpu; do
  flags=(--precision bf16 --memory-format channels-last)  # the GPU path (the CPU in a smoke run)
  [ "$dev" = cpu ] && flags=(--cpu --precision fp32 --memory-format contiguous)
  "$FIXRES" -q extract --dataset-path "$DATA/val" --architecture resnet50 --weight-path "$OUT/r50.pth" \
    --input-size "$CHECK_SIZE" --batch 16 --workers 8 --save-path "$OUT/extract_$dev" "${flags[@]}" \
    --decode-on cpu >/dev/null
done
"$PY" "$ROOT/bench/gpu/check.py" logits "$OUT/extract_cpu" "$OUT/extract_gpu" resnet50
# The same images decoded by nvJPEG and transformed on the GPU (--decode-on gpu): against the CPU
# run too. Not fatal: a failure prints its line and the rest of the round still runs.
if "$FIXRES" -q extract --dataset-path "$DATA/val" --architecture resnet50 --weight-path "$OUT/r50.pth" \
  --input-size "$CHECK_SIZE" --batch 16 --workers 8 --save-path "$OUT/extract_nvjpeg" \
  --precision bf16 --memory-format channels-last --decode-on gpu >"$OUT/extract_nvjpeg.log" 2>&1; then
  "$PY" "$ROOT/bench/gpu/check.py" logits "$OUT/extract_cpu" "$OUT/extract_nvjpeg" resnet50 |
    sed 's/^logits:/logits (--decode-on gpu):/' || true
else
  echo "logits (--decode-on gpu): n/a ($(tail -1 "$OUT/extract_nvjpeg.log" | cut -c1-100))"
fi
rm -rf "$OUT/ft"
"$FIXRES" -q finetune --imnet-path "$DATA" --architecture resnet50 --weight-path "$OUT/r50.pth" \
  --input-size "$CHECK_SIZE" --batch 16 --workers 8 --epochs 1 --iteration-cap 3 --eval-every 1 \
  --decode-on cpu --shared-folder-path "$OUT/ft" --job-id ft >/dev/null
"$PY" "$ROOT/bench/gpu/check.py" finetune "$OUT/r50.pth" "$OUT/ft/finetune/ft/checkpoint.pth"
# The captured step against the eager one: the same fine-tuning, --cuda-graph on and off (no GPU:
# eager twice, the check's path only).
G_ON=on; [ "$SMOKE" = 1 ] && G_ON=off
for g in on off; do
  rm -rf "$OUT/ft_$g"
  mode=$g; [ $g = on ] && mode=$G_ON
  "$FIXRES" -q finetune --imnet-path "$DATA" --architecture resnet50 --weight-path "$OUT/r50.pth" \
    --input-size "$CHECK_SIZE" --batch 16 --workers 8 --epochs 1 --iteration-cap 3 --eval-every 100 \
    "${TRAIN_NUMERICS[@]}" --cuda-graph $mode --decode-on cpu \
    --shared-folder-path "$OUT/ft_$g" --job-id ft >"$OUT/ft_$g.log" 2>&1 || { tail "$OUT/ft_$g.log"; exit 1; }
done
"$PY" "$ROOT/bench/gpu/check.py" graph "$OUT/r50.pth" "$OUT/ft_off/finetune/ft/checkpoint.pth" \
  "$OUT/ft_on/finetune/ft/checkpoint.pth"

# ---- 4. model-only throughput, ours and the peer in the same run -------------------------------
log "model-only benchmarks (ResNet-50, batch $BATCH, ${NUMERICS[*]})"
declare -A OURS
for r in $TRAIN_SIZES; do
  for g in off on; do
    [ "$SMOKE" = 1 ] && [ $g = on ] && { OURS[train_${g}_$r]="n/a"; continue; }
    OURS[train_${g}_$r]=$("$FIXRES" -q bench train --architecture resnet50 --batch "$BATCH" --input-size "$r" \
      "${TRAIN_NUMERICS[@]}" --cuda-graph $g --steps "$STEPS" --warmup 2 | tail -1 | awk '{print $1}')
  done
done
for r in $EVAL_SIZES; do
  OURS[eval_$r]=$("$FIXRES" -q bench eval --architecture resnet50 --batch "$BATCH" --input-size "$r" \
    "${NUMERICS[@]}" --steps "$STEPS" --warmup 2 | tail -1 | awk '{print $1}')
done
if [ "$SMOKE" = 0 ]; then
  log "peer: PyTorch eager and torch.compile (bench/peers/gpu_resnet50_peer.py, compile modes: $COMPILE_MODES)"
  PEER_COMPILE="$COMPILE_MODES" "$PY" "$PEERS/gpu_resnet50_peer.py" "$OUT/peer.json" >"$OUT/peer.log" 2>&1 ||
    { tail "$OUT/peer.log"; exit 1; }
fi
peer() {
  if [ -s "$OUT/peer.json" ] && [ "$SMOKE" = 0 ]; then
    "$PY" -c "import json; v = json.load(open('$OUT/peer.json')).get('$1'); print(round(v, 1) if v else 'n/a')"
  else
    echo "n/a"
  fi
}
echo
echo "| ResNet-50, batch $BATCH, ${NUMERICS[*]} | fixres eager img/s | fixres graph img/s | PyTorch eager img/s | torch.compile img/s | eager / PyTorch | graph / PyTorch | graph / compile |"
echo "|---|---|---|---|---|---|---|---|"
for r in $TRAIN_SIZES; do
  p=$(peer "train_bf16_cl_$r"); c=$(peer "train_bf16_cl_compile_default_$r")
  e=${OURS[train_off_$r]}; g=${OURS[train_on_$r]}
  echo "| train $r | $e | $g | $p | $c | $(ratio "$e" "$p") | $(ratio "$g" "$p") | $(ratio "$g" "$c") |"
done
for r in $EVAL_SIZES; do
  p=$(peer "eval_bf16_cl_$r"); echo "| eval $r | ${OURS[eval_$r]} | | $p | | $(ratio "${OURS[eval_$r]}" "$p") | | |"
done
if [[ "$COMPILE_MODES" == *max-autotune* ]]; then
  for r in $TRAIN_SIZES; do
    echo "torch.compile max-autotune-no-cudagraphs, train $r: $(peer "train_bf16_cl_compile_max-autotune-no-cudagraphs_$r") img/s"
  done
fi

# ---- 5. end to end from JPEGs: `full` at 224, the trainer vs DataLoader + PIL workers ---------
log "end to end: $IMAGES JPEGs, full transform at $E2E_SIZE, batch $BATCH"
MEM=$OUT/gpu_memory.csv
: >"$MEM"
SMI=""
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits -lms 200 >"$MEM" 2>/dev/null &
  SMI=$!
fi
stop_smi() { [ -n "$SMI" ] && kill "$SMI" 2>/dev/null; true; }
rm -rf "$OUT/e2e"
# Enough epochs for the warm-up and timed steps (the quick folder holds 8 batches an epoch).
E2E_EPOCHS=$(((E2E_STEPS + 10) * BATCH / IMAGES + 1))
"$FIXRES" -q train --imnet-path "$DATA" --architecture resnet50 --input-size "$E2E_SIZE" --batch "$BATCH" \
  --workers "$NPROC" --transform full --sampler distributed --epochs "$E2E_EPOCHS" --eval-every 100 \
  "${NUMERICS[@]}" --stop-after-steps $((E2E_STEPS + 10)) --log-every 5 --decode-on cpu \
  --shared-folder-path "$OUT/e2e" --job-id e2e >"$OUT/e2e.log" 2>&1 &
OPID=$!
wait $OPID || { tail "$OUT/e2e.log"; stop_smi; exit 1; }
ours_e2e=$("$PY" -c "
import json, statistics
rows = [json.loads(l) for l in open('$OUT/e2e/train/e2e/metrics.jsonl')]
v = [r['images_per_s'] for r in rows if 'images_per_s' in r and r.get('step', 0) > 10] or [r['images_per_s'] for r in rows if 'images_per_s' in r]
print(round(statistics.median(v), 1))")
mem() { awk -F', ' -v p="$1" '$1==p && $2>m {m=$2} END{if (m) print m; else print "n/a"}' "$MEM"; }
ours_mem=$(mem $OPID)
"$PY" "$PEERS/e2e_train_peer.py" "$DATA/train" --size "$E2E_SIZE" --batch "$BATCH" --workers "$NPROC" \
  --steps "$E2E_STEPS" --warmup 10 "${PEER_DEV[@]}" >"$OUT/e2e_peer.log" 2>&1 &
PEER_PID=$!
wait $PEER_PID || { tail "$OUT/e2e_peer.log"; stop_smi; exit 1; }
stop_smi
peer_e2e=$(tail -1 "$OUT/e2e_peer.log" | awk '{print $1}')
peer_mem=$(mem $PEER_PID)
echo
echo "| end to end, full at $E2E_SIZE, batch $BATCH | img/s | vs model-only train $E2E_SIZE | GPU memory (nvidia-smi peak, MiB) |"
echo "|---|---|---|---|"
ref=${OURS[train_off_$E2E_SIZE]:-0}
echo "| fixres train | $ours_e2e | $(ratio "$ours_e2e" "$ref") | $ours_mem |"
echo "| PyTorch DataLoader + PIL ($NPROC workers) | $peer_e2e | | $peer_mem |"
echo "ratio fixres / peer, end to end: $(ratio "$ours_e2e" "$peer_e2e")"

# ---- 6. decoding: the CPU loader's workers against nvJPEG + the device transforms -------------
log "decoding: RandomResizedCrop + flip at $E2E_SIZE from JPEGs, CPU workers and GPU"
dec() {  # dec ARGS...: img/s, or n/a with the reason
  local v
  v=$("$FIXRES" -q bench data --dataset-path "$DATA/train" --kind torch --input-size "$E2E_SIZE" \
    --batch "$BATCH" --seconds $((SMOKE ? 0 : 5)) "$@" 2>"$OUT/dec.err" | tail -1 | awk '{print $1}')
  if [ -n "$v" ]; then echo "$v"; else echo "n/a ($(tail -1 "$OUT/dec.err" | cut -c1-100))"; fi
}
cpu_dec=$(dec --workers "$NPROC" --uint8 --decode-on cpu)
gpu_dec=$(dec --decode-on gpu)
echo
echo "| decode + RandomResizedCrop + flip at $E2E_SIZE | img/s | vs model-only train $E2E_SIZE |"
echo "|---|---|---|"
echo "| CPU loader, $NPROC workers | $cpu_dec | $(ratio "$cpu_dec" "$ref") |"
echo "| nvJPEG + device transforms | $gpu_dec | $(ratio "$gpu_dec" "$ref") |"

# ---- 7. end to end with GPU decoding: the trainer, transform torch (RandomResizedCrop + flip) --
e2e_rate() {  # e2e_rate DECODE: the trainer's median img/s, or n/a with the reason
  rm -rf "$OUT/e2e_$1"
  if "$FIXRES" -q train --imnet-path "$DATA" --architecture resnet50 --input-size "$E2E_SIZE" \
    --batch "$BATCH" --workers "$NPROC" --transform torch --sampler distributed --epochs "$E2E_EPOCHS" \
    --eval-every 100 "${NUMERICS[@]}" --stop-after-steps $((E2E_STEPS + 10)) --log-every 5 \
    --decode-on "$1" --shared-folder-path "$OUT/e2e_$1" --job-id e2e >"$OUT/e2e_$1.log" 2>&1; then
    "$PY" -c "
import json, statistics
rows = [json.loads(l) for l in open('$OUT/e2e_$1/train/e2e/metrics.jsonl')]
v = [r['images_per_s'] for r in rows if 'images_per_s' in r and r.get('step', 0) > 10] or [r['images_per_s'] for r in rows if 'images_per_s' in r]
print(round(statistics.median(v), 1))"
  else
    echo "n/a ($(tail -1 "$OUT/e2e_$1.log" | cut -c1-100))"
  fi
}
e2e_cpu=$(e2e_rate cpu)
e2e_gpu=$(e2e_rate gpu)
echo
echo "| end to end, torch at $E2E_SIZE, batch $BATCH | img/s | vs model-only train $E2E_SIZE |"
echo "|---|---|---|"
echo "| fixres train, CPU decoding ($NPROC workers) | $e2e_cpu | $(ratio "$e2e_cpu" "$ref") |"
echo "| fixres train, --decode-on gpu | $e2e_gpu | $(ratio "$e2e_gpu" "$ref") |"
log "done; logs in $OUT"
