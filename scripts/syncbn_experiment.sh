#!/usr/bin/env bash
# What --sync-bn changes on the demo's FixRes fine-tuning: for each seed, the demo's training run
# (resnet_tiny, 24 px, Fashion-MNIST), then the FixRes fine-tuning at the test resolution on
# 2 ranks x 8 images (the reference fine-tunes ResNeXt-101 with 8 images per GPU), with and
# without --sync-bn, each evaluated on the held-out split. Prints a Markdown table (mean and
# spread over seeds) and writes $OUT/syncbn.json.
# Usage: scripts/syncbn_experiment.sh [fixres]
#   (SYNCBN_SEEDS, SYNCBN_TEST_SIZE, SYNCBN_ITERS, SYNCBN_EPOCHS)
set -euo pipefail
FIXRES=${1:-build/bin/fixres}
SEEDS=${SYNCBN_SEEDS:-"0 1 2"}
TEST_SIZE=${SYNCBN_TEST_SIZE:-32}
ITERS=${SYNCBN_ITERS:-400}
EPOCHS=${SYNCBN_EPOCHS:-20}  # of the base training (the demo: 20)
DATA=${DEMO_DATA:-data/fashion-mnist}
OUT=${SYNCBN_OUT:-runs/syncbn}
mkdir -p "$OUT"
[ -d "$DATA/holdout" ] || "$FIXRES" import --out "$DATA" --holdout 5000
for seed in $SEEDS; do
  base="$OUT/seed$seed"
  weights="$base/train/train/checkpoint.pth"
  if [ ! -f "$weights" ]; then
    echo "== seed $seed: the demo's training run"
    "$FIXRES" --threads 2 train --imnet-path "$DATA" --architecture resnet_tiny --input-size 24 \
      --epochs "$EPOCHS" --batch 128 --workers 2 --learning-rate 0.1 --absolute-lr --lr-schedule cosine \
      --transform torch --sampler distributed --eval-every "$EPOCHS" --iteration-cap 150 --seed "$seed" \
      --shared-folder-path "$base" --job-id train --log-every 1000 --no-tensorboard >/dev/null
  fi
  for mode in local sync; do
    flags=""
    [ $mode = sync ] && flags="--sync-bn"
    rm -rf "$base/$mode"
    echo "== seed $seed: fine-tuning at $TEST_SIZE px on 2 ranks x 8 images ($mode statistics)"
    "$FIXRES" launch --nproc-per-node 2 -- --threads 1 finetune --imnet-path "$DATA" \
      --architecture resnet_tiny --num-classes 10 --weight-path "$weights" --input-size "$TEST_SIZE" \
      --batch 8 --epochs 1 --iteration-cap "$ITERS" --learning-rate 0.01 --absolute-lr --workers 1 \
      --seed "$seed" --shared-folder-path "$base/$mode" --job-id ft --log-every 1000 \
      --no-tensorboard $flags >/dev/null
    "$FIXRES" --threads 2 eval --dataset-path "$DATA/holdout" --architecture resnet_tiny \
      --num-classes 10 --weight-path "$base/$mode/finetune/ft/checkpoint.pth" \
      --input-size "$TEST_SIZE" --batch 256 --workers 2 --json "$base/$mode.json" >/dev/null
  done
done
/usr/bin/python3 - "$OUT" "$TEST_SIZE" $SEEDS <<'PY'
import json, statistics, sys
out, size, seeds = sys.argv[1], sys.argv[2], sys.argv[3:]
res = {m: [json.load(open(f"{out}/seed{s}/{m}.json"))["results"][0]["top1"] for s in seeds]
       for m in ("local", "sync")}
def ms(v):
    return f"{statistics.mean(v):.2f} ± {statistics.stdev(v):.2f}" if len(v) > 1 else f"{v[0]:.2f}"
diff = [b - a for a, b in zip(res["local"], res["sync"])]
print(f"| fine-tuning at {size} px, 2 ranks x 8 images | " + " | ".join(f"seed {s}" for s in seeds) + " | mean ± sd |")
print("|---|" + "---|" * (len(seeds) + 1))
print("| last BN statistics from each rank's 8 images (default) | " + " | ".join(f"{v:.2f}" for v in res["local"]) + f" | {ms(res['local'])} |")
print("| `--sync-bn`: statistics of the global 16 | " + " | ".join(f"{v:.2f}" for v in res["sync"]) + f" | {ms(res['sync'])} |")
print("| difference | " + " | ".join(f"{v:+.2f}" for v in diff) + f" | {ms(diff)} |")
json.dump({"test_size": int(size), "seeds": [int(s) for s in seeds], "top1": res}, open(f"{out}/syncbn.json", "w"), indent=2)
PY
