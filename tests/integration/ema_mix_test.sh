#!/usr/bin/env bash
# EMA weights and mixup / CutMix end to end: bad values exit 2 naming the flag; a run with
# --model-ema, --mixup-alpha and --cutmix-alpha (with label smoothing and warm-up) trains and
# writes model_ema (read by Python's torch.load), the EMA's metrics and its config.json keys;
# stopped and resumed it ends bitwise equal to the uninterrupted run, model and model_ema alike;
# eval, extract, export and finetune --use-ema take the EMA weights (eval's top-1 is the run's
# eval_ema.top1; after a run on two ranks up to near ties), and a checkpoint without model_ema is
# refused with exit 4 naming the file.
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 8 --val 2 --size 24 >/dev/null || bad "data generation"
RUNS="$WORK/runs"
# 24 images, batch 4, distributed sampler: 6 steps per epoch.
T=(train --architecture resnet_tiny --workers 2 --log-every 1 --sampler distributed --epochs 2
  --shared-folder-path "$RUNS" --imnet-path "$D" --input-size 24 --batch 4 --seed 3)
E=(--model-ema --model-ema-steps 2 --model-ema-decay 0.99 --mixup-alpha 0.2 --cutmix-alpha 1.0
  --label-smoothing 0.1 --warmup-epochs 1)
CK="$RUNS/train/ref/checkpoint.pth"

# 1. Bad values: exit 2 while parsing, one line naming the flag, nothing written. Each flag's bad
# values are checked in process (unit/cli/TrainingFlagValuesTest.cpp); one here, through the binary.
run "$FIXRES" "${T[@]}" --job-id badflag --model-ema-decay 1.5
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: .*--model-ema-decay"
run "$FIXRES" eval --imnet-path "$D" --architecture resnet_tiny --use-ema
expect_code 2; expect_err "weight-path"
[ -e "$RUNS" ] && bad "a refused command wrote $RUNS"

# 1b. Vanishing alphas (Beta(a, a) tends to a fair coin on {0, 1}): each run takes its steps and
# ends; the sampler used to retry for ever when both Gamma draws underflowed.
for flag in --mixup-alpha --cutmix-alpha; do
  run timeout 300 "$FIXRES" "${T[@]}" --job-id "tiny$flag" "$flag" 1e-300 --stop-after-steps 3
  expect_code 0; expect_err "iter 3/6"
done
rm -rf "$RUNS"

# 2. The uninterrupted run.
run "$FIXRES" "${T[@]}" "${E[@]}" --job-id ref
expect_code 0; expect_err "EMA top-1"; expect_out "^after training \(EMA weights\): top-1 [0-9.]+ %, top-5 [0-9.]+ % on [0-9]+ val images at 24 px$"
run "$PY" - "$RUNS/train/ref" <<'PY'
import json, sys, torch
run = sys.argv[1]
c = torch.load(run + "/checkpoint.pth")
ema, model = c["model_ema"], c["model"]
assert list(ema)[0] == "n_averaged" and int(ema["n_averaged"]) == 3, int(ema["n_averaged"])
assert set(ema) - {"n_averaged"} == {"module." + k for k in model}
assert not all(torch.equal(ema["module." + k], v) for k, v in model.items()), "EMA equals the model"
cfg = json.load(open(run + "/config.json"))
want = {"model_ema": True, "model_ema_decay": 0.99, "model_ema_steps": 2, "mixup_alpha": 0.2,
        "cutmix_alpha": 1.0, "use_ema": False}
assert all(cfg[k] == v for k, v in want.items()), {k: cfg[k] for k in want}
evals = [json.loads(l) for l in open(run + "/metrics.jsonl") if '"eval_ema"' in l]
assert len(evals) == 2, evals
last = evals[-1]
assert last["eval_ema"]["loss"] != last["eval"]["loss"], "EMA and raw weights evaluate alike"
print("%.3f %.4f %.3f %.4f" % (last["eval_ema"]["top1"], last["eval_ema"]["loss"], last["eval"]["top1"], last["eval"]["loss"]))
PY
expect_code 0
read -r EMA_TOP1 EMA_LOSS RAW_TOP1 RAW_LOSS <"$OUT"

# 3. Stopped after 4 steps (in the warm-up epoch) and after 9, resumed: bitwise the same run.
for stop in 4 9; do
  run "$FIXRES" "${T[@]}" "${E[@]}" --job-id resumed --stop-after-steps $stop
  expect_code 0
done
run "$FIXRES" "${T[@]}" "${E[@]}" --job-id resumed
expect_code 0
for entry in model model_ema; do
  run "$PY" "$SRC/tests/reference/state_dicts.py" equal "$CK" "$RUNS/train/resumed/checkpoint.pth" $entry
  [ "$CODE" -eq 0 ] || bad "resumed run: $entry differs from the uninterrupted run's"
done

# 4. eval --use-ema: the EMA weights, the run's own EMA evaluation (top-1 and loss); without it
# the raw weights.
EV=(eval --imnet-path "$D" --architecture resnet_tiny --input-size 24 --batch 4 --weight-path "$CK")
run "$FIXRES" "${EV[@]}" --use-ema
expect_code 0
got=$(awk '$1 == 24 {print $2, $4}' "$OUT")
[ "$got" = "$EMA_TOP1 $EMA_LOSS" ] || bad "eval --use-ema top-1, loss $got; the run's EMA: $EMA_TOP1 $EMA_LOSS"
run "$FIXRES" "${EV[@]}"
expect_code 0
got=$(awk '$1 == 24 {print $2, $4}' "$OUT")
[ "$got" = "$RAW_TOP1 $RAW_LOSS" ] || bad "eval top-1, loss $got; the run's: $RAW_TOP1 $RAW_LOSS"

# 4b. Two ranks: the EMA evaluation uses rank 0's EMA (the one saved): eval --use-ema of the
# checkpoint on one process gives the run's EMA loss and top-1. The run evaluated 3 images per
# rank and summed over the ranks, eval one process's batches of 4 and 2: the sums differ in
# order, so the loss must agree within 1e-5 relative, not to the last digit, and both top-1s be
# the one of the logits of `extract --use-ema` (eval's batches of 4, one process) up to near ties
# (near_ties.py: top two logits within 1e-4 relative), exact when there are none.
run "$FIXRES" launch --nproc-per-node 2 -- "${T[@]}" "${E[@]}" --job-id two
expect_code 0; expect_err "EMA top-1"
run "$FIXRES" eval --imnet-path "$D" --architecture resnet_tiny --input-size 24 --batch 4 \
  --weight-path "$RUNS/train/two/checkpoint.pth" --use-ema --json "$WORK/two.json"
expect_code 0
run "$FIXRES" extract --dataset-path "$D/val" --architecture resnet_tiny --input-size 24 --batch 4 \
  --weight-path "$RUNS/train/two/checkpoint.pth" --use-ema --save-path "$WORK/two-npy"
expect_code 0
run "$PY" - "$RUNS/train/two/metrics.jsonl" "$WORK/two.json" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if '"eval_ema"' in l][-1]["eval_ema"]
e = json.load(open(sys.argv[2]))["results"][0]
assert abs(r["loss"] - e["loss"]) <= 1e-5 * abs(e["loss"]), ("loss", r, e)
print(r["top1"], e["top1"])
PY
expect_code 0
run "$PY" "$SRC/tests/reference/near_ties.py" top1 "$WORK/two-npy" resnet_tiny $(cat "$OUT")
expect_code 0

# 5. export / extract / finetune --use-ema.
run "$FIXRES" export --architecture resnet_tiny --num-classes 3 --weight-path "$CK" --use-ema \
  --format timm --out "$WORK/ema.pth"
expect_code 0
run "$PY" -c "
import torch
c = torch.load('$CK')['model_ema']; e = torch.load('$WORK/ema.pth')
assert all(torch.equal(e[k], c['module.' + k]) for k in e) and len(e) == len(c) - 1
print('export --use-ema: the model_ema tensors')"
expect_code 0
run "$FIXRES" extract --dataset-path "$D/val" --architecture resnet_tiny --input-size 24 \
  --weight-path "$CK" --use-ema --save-path "$WORK/extract"
expect_code 0; expect_file "$WORK/extract/resnet_tiny_logits.npy"
run "$FIXRES" finetune --imnet-path "$D" --architecture resnet_tiny --input-size 32 --batch 4 \
  --epochs 1 --iteration-cap 2 --weight-path "$CK" --use-ema --shared-folder-path "$RUNS" \
  --job-id ft
expect_code 0
grep -q '"use_ema": true' "$RUNS/finetune/ft/config.json" || bad "finetune config.json lacks use_ema"

# 6. A checkpoint without model_ema: exit 4 naming the file, for each subcommand.
run "$FIXRES" "${T[@]}" --iteration-cap 1 --job-id plain
expect_code 0
P="$RUNS/train/plain/checkpoint.pth"
run "$FIXRES" eval --imnet-path "$D" --architecture resnet_tiny --input-size 24 --weight-path "$P" --use-ema
expect_code 4; expect_err_lines 1; expect_err "^fixres: error: .*$P has no 'model_ema' entry"
run "$FIXRES" export --architecture resnet_tiny --num-classes 3 --weight-path "$P" --use-ema --out "$WORK/x.pth"
expect_code 4; expect_err "has no 'model_ema'"
[ -e "$WORK/x.pth" ] && bad "export wrote $WORK/x.pth from a checkpoint without model_ema"

finish
