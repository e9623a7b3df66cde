#!/usr/bin/env bash
# --checkpoint-hist N (keep-best checkpoints, a training-loop part): after a 5-epoch run only the
# N epoch checkpoints with the best held-out top-1 are left, listed best first with their metrics
# in best_checkpoints.json; checked against the rule applied independently to metrics.jsonl's
# evaluations (ties: the earlier epoch first). A run stopped twice and resumed ends with the same
# list and files; turned on mid-run it leaves the earlier epochs' checkpoints alone; a damaged
# list is refused naming it with nothing removed; a bad count is refused before anything is
# written.
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 8 --val 6 --size 24 >/dev/null || bad "data generation"
RUNS="$WORK/runs"
T0=(train --architecture resnet_tiny --workers 2 --log-every 1 --sampler distributed --epochs 5
  --input-size 24 --batch 4 --seed 3 --shared-folder-path "$RUNS"
  --absolute-lr --learning-rate 0.05)
T=("${T0[@]}" --checkpoint-hist 2)

check_kept() {  # check_kept JOB: the kept files are the rule's, and nothing else is left
  run "$PY" - "$RUNS/train/$1" <<'PY'
import json, os, re, sys
d = sys.argv[1]
evals = [json.loads(l) for l in open(f"{d}/metrics.jsonl") if '"eval"' in l]
evals = [r for r in evals if "epoch" in r and "eval" in r]
assert len(evals) == 5, len(evals)
ranked = sorted(evals, key=lambda r: -r["eval"]["top1"])  # stable: earlier first among equals
want = [(r["epoch"] - 1, r["eval"]["top1"]) for r in ranked[:2]]
doc = json.load(open(f"{d}/best_checkpoints.json"))
assert doc["since"] == 0, doc
got = doc["checkpoints"]
# metrics.jsonl rounds to 12 significant digits; the list keeps the full value.
assert [k["epoch"] for k in got] == [e for e, _ in want], (got, want)
assert all(abs(k["eval"]["top1"] - t) < 1e-9 for k, (_, t) in zip(got, want)), (got, want)
assert all(k["file"] == f"checkpoint_{k['epoch']}.pth" for k in got), got
left = sorted(f for f in os.listdir(d) if re.fullmatch(r"checkpoint_\d+\.pth", f))
assert left == sorted(k["file"] for k in got), left
assert os.path.exists(f"{d}/checkpoint.pth")
print("kept", [(e, t) for e, t in want], "of", [r["eval"]["top1"] for r in evals])
PY
  expect_code 0
}

# 1. An uninterrupted run.
run "$FIXRES" "${T[@]}" --imnet-path "$D" --job-id whole
expect_code 0
check_kept whole

# 2. Stopped inside epoch 2 and after epoch 3 (steps 10, 18; 6 a epoch), resumed: the same list.
run "$FIXRES" "${T[@]}" --imnet-path "$D" --job-id parts --stop-after-steps 10
expect_code 0
run "$FIXRES" "${T[@]}" --imnet-path "$D" --job-id parts --stop-after-steps 18
expect_code 0; expect_err "resumed from"
run "$FIXRES" "${T[@]}" --imnet-path "$D" --job-id parts
expect_code 0
check_kept parts
cmp -s "$RUNS/train/whole/best_checkpoints.json" "$RUNS/train/parts/best_checkpoints.json" ||
  bad "the resumed run kept other checkpoints than the uninterrupted one"

# 3. Turned on when resuming after 2 epochs without it: their checkpoints stay, and of epochs
# 2-4 only the best is kept (the list starts at epoch 2).
run "$FIXRES" "${T0[@]}" --imnet-path "$D" --job-id late --stop-after-steps 12
expect_code 0
run "$FIXRES" "${T0[@]}" --imnet-path "$D" --job-id late --checkpoint-hist 1
expect_code 0
run "$PY" - "$RUNS/train/late" <<'PY'
import json, os, re, sys
d = sys.argv[1]
evals = [r for r in map(json.loads, open(f"{d}/metrics.jsonl")) if "epoch" in r and "eval" in r]
best = sorted([r for r in evals if r["epoch"] >= 3], key=lambda r: -r["eval"]["top1"])[0]["epoch"] - 1
doc = json.load(open(f"{d}/best_checkpoints.json"))
assert doc["since"] == 2 and [k["epoch"] for k in doc["checkpoints"]] == [best], (doc, best)
left = sorted(f for f in os.listdir(d) if re.fullmatch(r"checkpoint_\d+\.pth", f))
assert left == sorted({"checkpoint_0.pth", "checkpoint_1.pth", f"checkpoint_{best}.pth"}), left
print("kept", left)
PY
expect_code 0

# 4. A damaged list is refused when the run resumes (exit 3, one line naming it), before any file
# is touched: not JSON, an entry of the wrong type, a FIFO in its place (no hang). A file named
# like an epoch checkpoint with an epoch too large for an int64 is not taken for one.
damaged() {  # damaged NAME: run resumes the copy of `whole` holding that list
  run "$FIXRES" "${T[@]}" --imnet-path "$D" --job-id "$1"
  expect_code 3; expect_err "^fixres: error: .*$1/best_checkpoints.json"
  [ "$(grep -c '^fixres: error' "$ERR")" = 1 ] || bad "$1: not one error line"
  [ "$(ls "$RUNS/train/$1" | grep -c '^checkpoint')" = 3 ] || bad "$1: a checkpoint was removed"
}
for k in notjson wrongtype fifo; do cp -r "$RUNS/train/whole" "$RUNS/train/$k"; done
echo '{"since": 0, "checkpoints": [' >"$RUNS/train/notjson/best_checkpoints.json"
echo '{"since": 0, "checkpoints": [{"epoch": "3", "file": "checkpoint_3.pth", "eval": {"top1": 1}}]}' \
  >"$RUNS/train/wrongtype/best_checkpoints.json"
rm "$RUNS/train/fifo/best_checkpoints.json" && mkfifo "$RUNS/train/fifo/best_checkpoints.json"
for k in notjson wrongtype fifo; do damaged $k; done
touch "$RUNS/train/whole/checkpoint_99999999999999999999.pth"
run "$FIXRES" "${T[@]}" --imnet-path "$D" --job-id whole
expect_code 0
[ -e "$RUNS/train/whole/checkpoint_99999999999999999999.pth" ] || bad "a file not ours was removed"

# 5. A bad count is refused while parsing, naming the flag, before anything is written.
run "$FIXRES" "${T[@]}" --imnet-path "$D" --job-id bad --checkpoint-hist -1
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: .*--checkpoint-hist"
[ -e "$RUNS/train/bad" ] && bad "a refused run wrote its folder"
finish
