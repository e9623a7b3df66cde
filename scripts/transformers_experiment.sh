#!/usr/bin/env bash
# FixRes beyond CNNs on the demo data (Fashion-MNIST): a small ViT (vit_demo) and a small
# ConvNeXt (convnext_demo) trained at a low resolution and tested across resolutions, then
# fine-tuned at the chosen one, for three seeds; and for the ViT, what to fine-tune there
# (--finetune-scope head, head-pos, all) on the test set. Each (architecture, seed) is one
# scripts/demo.sh run with the transformers' optimiser (AdamW); tables and the plot:
# scripts/transformers_summary.py.
# Usage: scripts/transformers_experiment.sh [FIXRES_BIN] ; environment: TX_OUT, TX_SEEDS,
# TX_ARCHS, TX_EPOCHS, and demo.sh's.
set -euo pipefail
FIXRES=${1:-build/bin/fixres}
OUT=${TX_OUT:-runs/transformers}
SEEDS=${TX_SEEDS:-0 1 2}
ARCHS=${TX_ARCHS:-vit_demo convnext_demo}
DATA=${DEMO_DATA:-data/fashion-mnist}
FT_ITERS=${DEMO_FT_ITERS:-300}
export DEMO_EPOCHS=${TX_EPOCHS:-${DEMO_EPOCHS:-20}}
for seed in $SEEDS; do
  for arch in $ARCHS; do
    DEMO_ARCH=$arch DEMO_SEED=$seed DEMO_CALIBRATE=0 DEMO_LR=${TX_LR:-0.002} DEMO_FT_LR=${TX_FT_LR:-0.01} \
      DEMO_TRAIN_FLAGS="--opt adamw --weight-decay 0.05 ${TX_TRAIN_FLAGS:-}" \
      DEMO_OUT="$OUT/$arch/seed$seed" scripts/demo.sh "$FIXRES"
  done
  # What learns at the chosen resolution: the ViT's scopes, fine-tuned as the sweep does (SGD,
  # the same iterations and rate), evaluated on the test set.
  R="$OUT/vit_demo/seed$seed"
  if [ -d "$R" ]; then
    BEST=$(/usr/bin/python3 -c "import json;print(json.load(open('$R/sweep/sweep.json'))['best_finetuned'])")
    for scope in head head-pos all; do
      "$FIXRES" finetune --imnet-path "$DATA" --architecture vit_demo --input-size "$BEST" \
        --weight-path "$R/train/train/checkpoint.pth" --epochs 1 --iteration-cap "$FT_ITERS" \
        --learning-rate "${TX_FT_LR:-0.01}" --absolute-lr --batch 128 --workers 2 --seed "$seed" \
        --finetune-scope "$scope" --eval-every 100 --shared-folder-path "$R/scopes" --job-id "$scope" \
        --log-every 1000 >/dev/null
      "$FIXRES" eval --imnet-path "$DATA" --architecture vit_demo --input-size "$BEST" \
        --weight-path "$R/scopes/finetune/$scope/checkpoint.pth" --batch 256 --workers 2 \
        --json "$R/scope_$scope.json" >/dev/null
      echo "seed $seed scope $scope at $BEST px: $(/usr/bin/python3 -c "import json;print(json.load(open('$R/scope_$scope.json'))['results'][0]['top1'])")"
    done
  fi
done
/usr/bin/python3 scripts/transformers_summary.py "$OUT" | tee "$OUT/summary.md"
