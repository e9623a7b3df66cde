#!/usr/bin/env bash
# The training loop's edges: every numeric flag checked (exit 2 naming it), resuming with other
# settings refused (listing them) unless --allow-config-change and config.json left alone, a data
# error mid-epoch or during an evaluation saves the last completed step first (then exit 3), the
# end-of-epoch work done on resume, --stop-after-steps already reached stops at once,
# metrics.jsonl rewritten on resume (no repeated step, no half line), a loss that is not finite
# stops the run (exit 1) with finite weights saved. Resumed runs end bitwise equal to
# uninterrupted ones.
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 8 --val 2 --size 24 >/dev/null || bad "data generation"
RUNS="$WORK/runs"
# 24 images, batch 4, distributed sampler: 6 steps per epoch.
T=(train --architecture resnet_tiny --workers 2 --log-every 1 --sampler distributed --epochs 2
  --shared-folder-path "$RUNS")
S=(--input-size 24 --batch 4 --seed 3)  # what the resume tests change
TD=("${T[@]}" "${S[@]}" --imnet-path "$D")
ckpt() {  # ckpt JOB FIELD [FILE]: a field of a checkpoint, read by Python's torch.load
  "$PY" -c "import torch; print(torch.load('$RUNS/train/$1/${3:-checkpoint.pth}')['$2'])"
}
same_as() {  # same_as REF JOB: final weights bitwise equal
  run "$PY" "$SRC/tests/reference/state_dicts.py" equal "$RUNS/train/$1/checkpoint.pth" "$RUNS/train/$2/checkpoint.pth"
  [ "$CODE" -eq 0 ] || bad "$2: final weights differ from the uninterrupted run $1"
}

# 1. Bad values: exit 2 while parsing, one line naming the flag, nothing written. Every flag's
# bad values are checked in process (unit/cli/TrainingFlagValuesTest.cpp); one of each command
# here, through the binary.
for case in "train --learning-rate nan" "finetune --nan-policy ignore"; do
  read -r sub flag value <<<"$case"
  run "$FIXRES" $sub --imnet-path "$D" --weight-path "$WORK/none.pth" --shared-folder-path "$RUNS" \
    --job-id badflag "$flag" "$value"
  expect_code 2; expect_err_lines 1; expect_err "^fixres: error: .*$flag"
done
[ -e "$RUNS" ] && bad "a refused command wrote $RUNS"
# What the CPU cannot do: one line naming the flag and why, exit 2, no checkpoint.
for flags in "--cuda-graph on" "--decode-on gpu"; do
  run "$FIXRES" "${TD[@]}" --job-id cpuonly $flags
  expect_code 2; expect_err_lines 1; expect_err "^fixres: error: ${flags% *} .*the (step|run) (runs )?(is )?on the CPU"
  [ -e "$RUNS/train/cpuonly/checkpoint.pth" ] && bad "$flags: a refused run left a checkpoint"
done
run "$FIXRES" sweep --imnet-path "$D" --architecture resnet_tiny --weight-path x.pth --seed -1
expect_code 2; expect_err "^fixres: error: --seed"
# A learning rate that is finite but overflows once scaled.
run "$FIXRES" "${T[@]}" --imnet-path "$D" --learning-rate 1e308 --batch 512 --job-id badflag
expect_code 2; expect_err_lines 1; expect_err "learning-rate"
# Fewer classes than the dataset has: exit 2 naming --num-classes, not LibTorch's message.
run "$FIXRES" "${TD[@]}" --num-classes 2 --job-id badflag
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: --num-classes 2 .*3 classes"

# The uninterrupted reference.
run "$FIXRES" "${TD[@]}" --job-id ref
expect_code 0; expect_file "$RUNS/train/ref/checkpoint_1.pth"

# 2. --stop-after-steps on an epoch's last step finishes that epoch (evaluation, checkpoint_0.pth);
# run again, it stops at once without training.
run "$FIXRES" "${TD[@]}" --job-id six --stop-after-steps 6
expect_code 0; expect_file "$RUNS/train/six/checkpoint_0.pth"; expect_err "epoch 1: val top-1"
for _ in 1 2; do
  run "$FIXRES" "${TD[@]}" --job-id six --stop-after-steps 6
  expect_code 0; expect_err "already at step 6"
  [ "$(ckpt six global_step)" = 6 ] || bad "--stop-after-steps 6 again: the run moved on to step $(ckpt six global_step)"
done
run "$FIXRES" "${TD[@]}" --job-id six --stop-after-steps 3
expect_code 0; expect_err "already at step 6"
run "$FIXRES" "${TD[@]}" --job-id six
expect_code 0; same_as ref six

# 3. Resuming with other settings: refused, every difference listed, config.json untouched.
run "$FIXRES" "${TD[@]}" --job-id chg --stop-after-steps 2
expect_code 0
cp "$RUNS/train/chg/config.json" "$WORK/config.before"
run "$FIXRES" "${T[@]}" --imnet-path "$D" --job-id chg --batch 2 --seed 4 --input-size 32 --transform val
expect_code 2; expect_err_lines 1
for d in "batch: 4 -> 2" "seed: 3 -> 4" "input_size: 24 -> 32" 'train_transform: "full" -> "val"'; do
  expect_err "$d"
done
cp -r "$D" "$WORK/data2"
run "$FIXRES" "${T[@]}" "${S[@]}" --job-id chg --imnet-path "$WORK/data2"
expect_code 2; expect_err "train_path"
run "$FIXRES" "${T[@]}" --imnet-path "$D" --input-size 24 --seed 3 --job-id chg --accumulation-steps 2 --batch 2
expect_code 2; expect_err "accumulation_steps: 1 -> 2"
cmp -s "$WORK/config.before" "$RUNS/train/chg/config.json" || bad "a refused resume rewrote config.json"
[ "$(ckpt chg global_step)" = 2 ] || bad "a refused resume trained"
# The learning rate or the number of epochs may change: noted, resumed.
run "$FIXRES" "${TD[@]}" --job-id chg --stop-after-steps 3 --learning-rate 0.5
expect_code 0; expect_err "changed settings: learning_rate: 0.02 -> 0.5"
grep -q '"learning_rate": 0.5' "$RUNS/train/chg/config.json" || bad "config.json does not hold the new learning rate"
# --allow-config-change resumes anyway and says so.
run "$FIXRES" "${T[@]}" --imnet-path "$D" --input-size 24 --batch 4 --job-id chg --stop-after-steps 4 --seed 9 \
  --allow-config-change
expect_code 0; expect_err "allow-config-change.*seed: 3 -> 9"; expect_err "resumed from"

# 4. A data error mid-epoch (an image of the last batch of epoch 0 is corrupt): the state of the
# last completed step is saved, then exit 3 naming the file; rerun with the image repaired ends as
# the uninterrupted run.
cp -r "$D" "$WORK/data3"
LAST=$("$PY" -c "
import glob, torch
files = sorted(glob.glob('$WORK/data3/train/*/*'))
g = torch.Generator(); g.manual_seed(3)  # seed + epoch 0
print(files[torch.randperm(len(files), generator=g)[-1].item()])")
cp "$LAST" "$WORK/good.img"
printf 'not an image' >"$LAST"
D3=(--imnet-path "$WORK/data3" --job-id derr)
run "$FIXRES" "${T[@]}" "${S[@]}" "${D3[@]}"
expect_code 3; expect_err "^fixres: error: .*$(basename "$LAST")"
expect_err "saved the state of step 5"
[ "$(ckpt derr global_step)" = 5 ] || bad "data error: checkpoint at step $(ckpt derr global_step 2>&1), expected 5"
tail -1 "$ERR" | grep -q "^fixres: error:" || bad "data error: the error is not the last line"
cp "$WORK/good.img" "$LAST"
run "$FIXRES" "${T[@]}" "${S[@]}" "${D3[@]}"
expect_code 0; expect_err "resumed from .* iteration 5"
same_as ref derr

# 5. A data error in the end-of-epoch evaluation: saved on the epoch's last step; the rerun does
# that evaluation and checkpoint_0.pth first.
cp -r "$D" "$WORK/data4"
VAL=$(ls "$WORK"/data4/val/class1/* | head -1)
cp "$VAL" "$WORK/good.val"
printf 'broken' >"$VAL"
D4=(--imnet-path "$WORK/data4" --job-id everr)
run "$FIXRES" "${T[@]}" "${S[@]}" "${D4[@]}"
expect_code 3; expect_err "saved the state of step 6"
[ -e "$RUNS/train/everr/checkpoint_0.pth" ] && bad "eval error: checkpoint_0.pth written without its evaluation"
cp "$WORK/good.val" "$VAL"
run "$FIXRES" "${T[@]}" "${S[@]}" "${D4[@]}" --stop-after-steps 6
expect_code 0; expect_err "epoch 1: val top-1"; expect_file "$RUNS/train/everr/checkpoint_0.pth"
run "$FIXRES" "${T[@]}" "${S[@]}" "${D4[@]}"
expect_code 0; same_as ref everr
[ "$(grep -c '"eval"' "$RUNS/train/everr/metrics.jsonl")" = 2 ] || bad "eval error: metrics.jsonl lacks or repeats an evaluation"

# 6. metrics.jsonl after a crash past the checkpoint and a half line (disk full): the resumed run
# lists every step once, every line whole.
run "$FIXRES" "${TD[@]}" --job-id met --stop-after-steps 4
expect_code 0
printf '{"step":5,"epoch":0,"loss":1}\n{"step":6,"epoch":0,"loss":1}\n{"step":7,"epoch":1,"lo' >>"$RUNS/train/met/metrics.jsonl"
run "$FIXRES" "${TD[@]}" --job-id met
expect_code 0
run "$PY" -c "
import json
steps, evals = [], []
for line in open('$RUNS/train/met/metrics.jsonl'):
    r = json.loads(line)
    steps += [r['step']] if 'iteration' in r else []  # progress records (epoch ones have a step too)
    evals += [r['epoch']] if 'eval' in r else []
assert steps == list(range(1, 13)), steps
assert evals == [1, 2], evals
print('ok')"
expect_code 0

# 7. A loss that becomes NaN or inf: exit 1 naming the step; the checkpoint left holds finite
# weights; no accuracy reported.
for lr in 1e6 1e30; do
  run "$FIXRES" "${TD[@]}" --job-id nan$lr --learning-rate $lr --absolute-lr
  expect_code 1; expect_err "^fixres: error: .*step [0-9]+ \(epoch"
  grep -q "top1" "$OUT" && bad "lr $lr: an accuracy was reported"
  if [ -e "$RUNS/train/nan$lr/checkpoint.pth" ]; then
    run "$PY" -c "
import torch
ck = torch.load('$RUNS/train/nan$lr/checkpoint.pth')
bad = [k for k, v in ck['model'].items() if v.is_floating_point() and not torch.isfinite(v).all()]
assert not bad, bad
print('finite at step', ck['global_step'])"
    expect_code 0
  fi
done
# --nan-policy skip: such steps are skipped with a warning, but not forever (the weights diverged).
run "$FIXRES" "${TD[@]}" --job-id skip --learning-rate 1e30 --absolute-lr --nan-policy skip
expect_code 1; expect_err "step skipped \(--nan-policy skip\)"; expect_err "^fixres: error: .*11 steps in a row skipped"
grep -q '"skipped_steps"' "$RUNS/train/skip/metrics.jsonl" || bad "skipped steps not counted in metrics.jsonl"
# The same runs with the check left on the device (--skip-on device: the fused kernel skips, the
# counts are read every 50 steps): they stop at the same step, saved just before it.
named_step() { grep -Eo "error: step [0-9]+" "$ERR" | grep -Eo "[0-9]+$"; }
saved_step() { "$PY" -c "import torch; print(torch.load('$1')['global_step'])"; }
TD50=("${TD[@]}")
for i in "${!TD50[@]}"; do [ "${TD50[$i]}" = --log-every ] && TD50[$((i + 1))]=50; done
for policy in stop skip; do
  run "$FIXRES" "${TD[@]}" --job-id host$policy --learning-rate 1e30 --absolute-lr \
    --nan-policy $policy --skip-on host
  want=$(named_step)
  run "$FIXRES" "${TD50[@]}" --job-id dev$policy --learning-rate 1e30 --absolute-lr \
    --nan-policy $policy --skip-on device
  if [ "$CODE" = 2 ] && grep -q "found_inf" "$ERR"; then
    skip_check fused-optimizer "this build has no fused optimizer kernel (LibTorch 1.13)"
    break
  fi
  expect_code 1
  [ -n "$want" ] && [ "$(named_step)" = "$want" ] || bad "--skip-on device, $policy: step $(named_step), the host's $want"
  [ $policy = skip ] && expect_err "11 steps in a row skipped"
  [ "$(saved_step "$RUNS/train/dev$policy/checkpoint.pth")" = "$((want - 1))" ] ||
    bad "--skip-on device, $policy: saved step $(saved_step "$RUNS/train/dev$policy/checkpoint.pth"), expected $((want - 1))"
done
finish
