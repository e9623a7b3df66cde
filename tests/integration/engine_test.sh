#!/usr/bin/env bash
# The FixRes subcommands end to end on a small synthetic image folder, CPU, 1 and 2 processes:
# train, finetune (only fc + last BN statistics change), eval, extract (+ eval-softmax agrees),
# exact resume, weights readable by Python's torch.load, and clear errors on bad input.
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 8 --val 4 >/dev/null || bad "data generation"
ARCH=resnet_tiny
COMMON=(--architecture $ARCH --workers 2 --log-every 1)

# train: 2 epochs, checkpoints, config and metrics.
run "$FIXRES" train --imnet-path "$D" "${COMMON[@]}" --input-size 32 --epochs 2 --batch 4 \
  --learning-rate 0.05 --absolute-lr --shared-folder-path "$WORK/runs" --job-id t1
expect_code 0; expect_out "^after training: top-1 [0-9.]+ %, top-5 [0-9.]+ % on [0-9]+ val images at 32 px$"
R="$WORK/runs/train/t1"
for f in checkpoint.pth checkpoint_0.pth checkpoint_1.pth config.json metrics.jsonl; do expect_file "$R/$f"; done
grep -q '"loss"' "$R/metrics.jsonl" || bad "metrics.jsonl has no loss lines"
run "$PY" "$SRC/tests/reference/state_dicts.py" keys "$R/checkpoint.pth"
expect_code 0; expect_out "^fc.weight$"; expect_out "num_batches_tracked"

# finetune at a higher resolution: only the classifier and the last BN statistics change.
run "$FIXRES" finetune --imnet-path "$D" "${COMMON[@]}" --weight-path "$R/checkpoint.pth" \
  --input-size 48 --epochs 1 --batch 4 --shared-folder-path "$WORK/runs" --job-id f1
expect_code 0; expect_out "^before fine-tuning: top-1 [0-9.]+ %.* at 48 px$"; expect_out "^after fine-tuning: top-1 [0-9.]+ %.* at 48 px$"
LASTBN=$("$PY" "$SRC/tests/reference/state_dicts.py" keys "$R/checkpoint.pth" | grep -E 'bn[0-9]\.running_mean$' | tail -1 | sed 's/\.running_mean$//')
run "$PY" "$SRC/tests/reference/state_dicts.py" finetune-changed "$R/checkpoint.pth" "$WORK/runs/finetune/f1/checkpoint.pth" "$LASTBN"
expect_code 0

# eval at two sizes, JSON results.
run "$FIXRES" eval --imnet-path "$D" --architecture $ARCH --weight-path "$R/checkpoint.pth" \
  --input-size 32,48 --batch 5 --json "$WORK/eval.json"
expect_code 0; expect_out "^ +32 "; expect_out "^ +48 "; expect_file "$WORK/eval.json"
TOP1=$("$PY" -c "import json;print('%.3f'%json.load(open('$WORK/eval.json'))['results'][0]['top1'])")
# uint8 batches normalised where the model runs (the GPU path, here on the CPU): the same results
# up to float rounding. The two paths compute the normalised floats by other code, which may
# round them otherwise, so the loss must agree within 1e-5 and both top-1s be those of the host
# path's logits (extract, eval's batches of 5) up to near ties (tests/reference/near_ties.py: top
# two logits within 1e-4 relative, 100x the rounding), exact when there are none.
NT="$SRC/tests/reference/near_ties.py"
run "$FIXRES" eval --imnet-path "$D" --architecture $ARCH --weight-path "$R/checkpoint.pth" \
  --input-size 32,48 --batch 5 --normalize-on device --json "$WORK/eval_dev.json"
expect_code 0
run "$PY" -c "
import json
a, b = (json.load(open(f))['results'] for f in ('$WORK/eval.json', '$WORK/eval_dev.json'))
assert [r['input_size'] for r in a] == [r['input_size'] for r in b] == [32, 48], (a, b)
assert all(abs(x['loss'] - y['loss']) < 1e-5 for x, y in zip(a, b)), (a, b)
print('same')"
expect_code 0
i=0
for size in 32 48; do
  run "$FIXRES" extract --dataset-path "$D/val" --architecture $ARCH --weight-path "$R/checkpoint.pth" \
    --input-size $size --batch 5 --save-path "$WORK/host$size"
  expect_code 0
  run "$PY" "$NT" top1 "$WORK/host$size" $ARCH $("$PY" -c "
import json
print(*(json.load(open(f))['results'][$i]['top1'] for f in ('$WORK/eval.json', '$WORK/eval_dev.json')))")
  expect_code 0; i=$((i + 1))
done

# extract + eval-softmax agrees with eval at the same size.
run "$FIXRES" extract --dataset-path "$D/val" --architecture $ARCH --weight-path "$R/checkpoint.pth" \
  --input-size 32 --batch 5 --save-path "$WORK/ext1"
expect_code 0
run "$PY" "$SRC/tests/reference/state_dicts.py" npy-check "$WORK/ext1" $ARCH 12 3 "$("$PY" -c "
import torch; sd=torch.load('$R/checkpoint.pth')['model']; print(sd['fc.weight'].shape[1])")"
expect_code 0
run "$FIXRES" eval-softmax --save-path "$WORK/ext1" --architecture $ARCH
expect_code 0; expect_out "^top1 $TOP1 "

# two processes: extraction gathers every sample once, in dataset order, same values.
run "$FIXRES" launch --nproc-per-node 2 -- extract --dataset-path "$D/val" --architecture $ARCH \
  --weight-path "$R/checkpoint.pth" --input-size 32 --batch 2 --save-path "$WORK/ext2"
expect_code 0
run "$PY" -c "
import numpy as np
for n in ['labels', '${ARCH}_logits', '${ARCH}_embedding']:
    a, b = np.load('$WORK/ext1/%s.npy' % n), np.load('$WORK/ext2/%s.npy' % n)
    assert a.shape == b.shape and np.allclose(a, b, atol=1e-5), n
print('same')"
expect_code 0
# Two ranks evaluate 6 images each (batches of 5 and 1), one process batches of 5, 5 and 2: the
# logits differ by float rounding, so the top-1 must be that of one process's logits (ext1) up to
# near ties (near_ties.py, 1e-4 relative), exact when there are none.
run "$FIXRES" launch --nproc-per-node 2 -- eval --imnet-path "$D" --architecture $ARCH \
  --weight-path "$R/checkpoint.pth" --input-size 32 --batch 5
expect_code 0; expect_out "^ *32 +[0-9.]+ .* 12$"
run "$PY" "$NT" top1 "$WORK/ext1" $ARCH "$(awk '$1 == 32 {print $2}' "$OUT")"
expect_code 0
run "$FIXRES" launch --nproc-per-node 2 -- train --imnet-path "$D" "${COMMON[@]}" --input-size 32 \
  --epochs 1 --batch 2 --shared-folder-path "$WORK/runs" --job-id t2
expect_code 0; expect_file "$WORK/runs/train/t2/checkpoint.pth"
# launch without a job id, stopped, then the same command again: the ranks name the job as a lone
# run does ("local"), so the rerun resumes the stopped run instead of starting a new folder.
LJ=(launch --nproc-per-node 2 -- train --imnet-path "$D" "${COMMON[@]}" --input-size 32 --epochs 1
  --batch 2 --shared-folder-path "$WORK/runs_launch")
run "$FIXRES" "${LJ[@]}" --stop-after-steps 1
expect_code 0; expect_file "$WORK/runs_launch/train/local/checkpoint.pth"
run "$FIXRES" "${LJ[@]}"
expect_code 0; expect_err "resumed from"
[ "$(ls "$WORK/runs_launch/train")" = local ] || bad "the rerun made another run folder: $(ls "$WORK/runs_launch/train")"

# gradient accumulation, bf16 autocast and channels-last through the whole loop (CPU autocast):
# the run counts optimizer steps (6 batches of 4 = 3 steps of 2 x 4 images) and records options.
run "$FIXRES" train --imnet-path "$D" "${COMMON[@]}" --input-size 32 --epochs 1 --batch 4 \
  --sampler distributed --accumulation-steps 2 --precision bf16 --memory-format channels-last \
  --shared-folder-path "$WORK/runs" --job-id acc
expect_code 0; expect_out "train: 3 steps"; expect_out "^after training: top-1 [0-9.]+ %, top-5 [0-9.]+ % on [0-9]+ val images at 32 px$"
grep -q '"accumulation_steps": 2' "$WORK/runs/train/acc/config.json" || bad "config.json lacks accumulation_steps"
grep -q '"precision": "bf16"' "$WORK/runs/train/acc/config.json" || bad "config.json lacks precision"
run "$FIXRES" train --imnet-path "$D" "${COMMON[@]}" --precision fp16 --shared-folder-path "$WORK/runs" --job-id bad
expect_code 2; expect_err "precision"

# resume: interrupted after 3 steps then resumed == uninterrupted (bitwise on CPU).
for job in full part; do
  extra=(); [ $job = part ] && extra=(--stop-after-steps 3)
  run "$FIXRES" train --imnet-path "$D" "${COMMON[@]}" --input-size 32 --epochs 2 --batch 4 \
    --shared-folder-path "$WORK/runs" --job-id $job --seed 3 "${extra[@]}"
  expect_code 0
done
expect_out "stopped early"
run "$FIXRES" train --imnet-path "$D" "${COMMON[@]}" --input-size 32 --epochs 2 --batch 4 \
  --shared-folder-path "$WORK/runs" --job-id part --seed 3
expect_code 0; expect_err "resumed from"
run "$PY" "$SRC/tests/reference/state_dicts.py" equal "$WORK/runs/train/full/checkpoint.pth" "$WORK/runs/train/part/checkpoint.pth"
expect_code 0

# a corrupt latest checkpoint: the newest readable per-epoch checkpoint is used, with a warning.
cp -r "$R" "$WORK/runs/train/t1c"
truncate -s 100 "$WORK/runs/train/t1c/checkpoint.pth"
run "$FIXRES" train --imnet-path "$D" "${COMMON[@]}" --input-size 32 --epochs 3 --batch 4 \
  --learning-rate 0.05 --absolute-lr --shared-folder-path "$WORK/runs" --job-id t1c
expect_code 0; expect_err "unusable checkpoint"; expect_err "resumed from .*checkpoint_1.pth"
expect_file "$WORK/runs/train/t1c/checkpoint_2.pth"

# bad input: one line, distinct exit codes.
run "$FIXRES" eval --imnet-path "$D" --architecture $ARCH --weight-path "$WORK/nope.pth"
expect_code 4; expect_err_lines 1; expect_err "nope.pth"
run "$FIXRES" train --imnet-path "$WORK/no-such-folder" "${COMMON[@]}" --shared-folder-path "$WORK/runs" --job-id bad
expect_code 3; expect_err_lines 1; expect_err "no-such-folder"
run "$FIXRES" train --imnet-path "$D" "${COMMON[@]}" --batch 0 --shared-folder-path "$WORK/runs" --job-id bad
expect_code 2; expect_err "batch"
run "$FIXRES" eval --imnet-path "$D" --architecture NoSuchNet --weight-path "$R/checkpoint.pth"
expect_code 2; expect_err "resnet50"
run "$FIXRES" eval --imnet-path "$D" --architecture $ARCH --weight-path "$R/checkpoint.pth" --input-size 32,abc
expect_code 2; expect_err "input-size"
finish
