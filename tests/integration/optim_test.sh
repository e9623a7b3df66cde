#!/usr/bin/env bash
# Optimizers through the CLI: bad values of --opt, --norm-weight-decay, --bias-weight-decay,
# --clip-grad-norm, --nesterov and --precision fp16 on the CPU exit 2 with one line naming the
# flag; config.json records opt, the groups' weight decays and clip_grad_norm; AdamW, RMSprop, LARS and LAMB
# runs with parameter groups and clipping, stopped twice and resumed, end with weights and
# optimizer state bitwise equal to uninterrupted runs; the checkpoint holds the optimizer's state
# under its documented keys (read by Python's torch.load); resuming with another --opt is refused
# (exit 2 naming opt); the same bitwise resume on two ranks with gradient accumulation.
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 8 --val 2 --size 24 >/dev/null || bad "data generation"
RUNS="$WORK/runs"
# 24 images, batch 4, distributed sampler: 6 steps per epoch, 12 in all.
T=(train --architecture resnet_tiny --workers 2 --log-every 1 --sampler distributed --epochs 2
  --input-size 24 --batch 4 --seed 3 --imnet-path "$D" --shared-folder-path "$RUNS"
  --absolute-lr --learning-rate 0.01)

# 1. Bad values: exit 2, one line naming the flag, nothing written. Each flag's bad values are
# checked in process for train and finetune (unit/cli/TrainingFlagValuesTest.cpp); one here.
run "$FIXRES" finetune --imnet-path "$D" --weight-path "$WORK/none.pth" --shared-folder-path "$RUNS" \
  --job-id badflag --clip-grad-norm nan
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: .*--clip-grad-norm"
run "$FIXRES" "${T[@]}" --job-id badflag --opt adamw --nesterov
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: .*--nesterov"
# LibTorch's CPU autocast has no fp16.
run "$FIXRES" "${T[@]}" --job-id badflag --precision fp16 --cpu
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: .*--precision fp16"
[ -e "$RUNS" ] && bad "a refused command wrote $RUNS"

# 2. Stopped and resumed runs end bitwise where uninterrupted ones do (weights and optimizer state).
same_state() {  # same_state REF JOB
  run "$PY" -c "
import sys, torch
a = torch.load('$RUNS/train/$1/checkpoint.pth'); b = torch.load('$RUNS/train/$2/checkpoint.pth')
for part in ('model', 'optimizer'):
    assert a[part].keys() == b[part].keys(), part
    for k in a[part]:
        assert torch.equal(a[part][k], b[part][k]), (part, k)
print('equal', len(a['model']), len(a['optimizer']))"
  [ "$CODE" -eq 0 ] || bad "$2: final state differs from the uninterrupted run $1"
}
for opt in adamw rmsprop lars lamb; do
  G=(--opt $opt --norm-weight-decay 0 --bias-weight-decay 0.001 --clip-grad-norm 1)
  run "$FIXRES" "${T[@]}" "${G[@]}" --job-id ${opt}_ref
  expect_code 0; expect_file "$RUNS/train/${opt}_ref/checkpoint_1.pth"
  run "$FIXRES" "${T[@]}" "${G[@]}" --job-id ${opt}_res --stop-after-steps 3
  expect_code 0
  run "$FIXRES" "${T[@]}" "${G[@]}" --job-id ${opt}_res --stop-after-steps 8
  expect_code 0; expect_err "resumed from .* at epoch 0, iteration 3"
  run "$FIXRES" "${T[@]}" "${G[@]}" --job-id ${opt}_res
  expect_code 0
  same_state ${opt}_ref ${opt}_res
  case $opt in
    adamw | lamb) keys="exp_avg exp_avg_sq step" ;;
    rmsprop) keys="square_avg momentum_buffer step" ;;
    lars) keys="momentum_buffer" ;;
  esac
  run "$PY" -c "
import json, torch
d = torch.load('$RUNS/train/${opt}_res/checkpoint.pth')
assert d['optimizer_kind'] == '$opt', d['optimizer_kind']
prefixes = sorted({k.split('/')[0] for k in d['optimizer']})
assert prefixes == sorted('$keys'.split()), prefixes
assert 'step' not in prefixes or int(d['optimizer']['step/fc.weight']) == 12, d['optimizer']
c = json.load(open('$RUNS/train/${opt}_res/config.json'))
assert (c['opt'], c['norm_weight_decay'], c['bias_weight_decay'], c['clip_grad_norm']) == ('$opt', 0, 0.001, 1), c
print('ok')"
  expect_code 0
done
# 3. Another --opt on resume defines another run: refused, naming opt.
run "$FIXRES" "${T[@]}" --opt sgd --norm-weight-decay 0 --bias-weight-decay 0.001 --clip-grad-norm 1 \
  --job-id adamw_res
expect_code 2; expect_err "opt: \"adamw\" -> \"sgd\""

# 4. Two ranks with gradient accumulation: RMSprop with groups and clipping (on the averaged,
# accumulated gradient) stopped mid-epoch and resumed ends bitwise where the uninterrupted
# two-rank run does. 24 images, 2 ranks x batch 2 x 2 micro-batches: 3 steps per epoch.
L=(launch --nproc-per-node 2 -- train --architecture resnet_tiny --workers 1 --log-every 1
  --sampler distributed --epochs 2 --input-size 24 --batch 2 --accumulation-steps 2 --seed 5
  --imnet-path "$D" --shared-folder-path "$RUNS" --absolute-lr --learning-rate 0.01
  --opt rmsprop --norm-weight-decay 0 --bias-weight-decay 0 --clip-grad-norm 0.5)
run "$FIXRES" "${L[@]}" --job-id dist_ref
expect_code 0
run "$FIXRES" "${L[@]}" --job-id dist_res --stop-after-steps 2
expect_code 0
run "$FIXRES" "${L[@]}" --job-id dist_res
expect_code 0
same_state dist_ref dist_res
[ "$("$PY" -c "import torch; print(int(torch.load('$RUNS/train/dist_res/checkpoint.pth')['optimizer']['step/fc.weight']))")" = 6 ] ||
  bad "dist_res: RMSprop's step count is not 6"
finish
