#!/usr/bin/env bash
# A short `make demo` (a few hundred Fashion-MNIST images, one small epoch): the import, the
# training, the sweep with fine-tuning (and its speed plot and chosen-model folder), BN calibration
# without labels, the evaluation report with a fitted temperature, the final table, the plot and
# the report are produced; the sweep covers two crop fractions and, where the project's environment
# has imagecorruptions, a shifted held-out copy, and the table gains the crop and the shifted
# test-set column with its sentence.
set -u
source "$(dirname "$0")/lib.sh" "$@"
if [ ! -d /usr/share/datasets/fashion-mnist ]; then
  skip_check fashion-mnist "dataset-fashion-mnist is not installed (make deps installs it)"; finish
fi
export DEMO_LIMIT_TRAIN=600 DEMO_LIMIT_VAL=200 DEMO_HOLDOUT=100 DEMO_EPOCHS=1 DEMO_ITERS=4 \
  DEMO_FT_ITERS=2 DEMO_BATCH=32 DEMO_DATA="$WORK/data" DEMO_OUT="$WORK/out" \
  DEMO_THREADS=1 DEMO_SHIFT_PYTHON="$SRC/.venv-torch2/bin/python"
run bash "$SRC/scripts/demo.sh" "$FIXRES"
expect_code 0
# The rows: setting, test res, crop, top-1, and top-1 on the shifted test set where the project's
# environment has imagecorruptions (CI requires it).
SH=""
if [ -x "$SRC/.venv-torch2/bin/python" ] && "$SRC/.venv-torch2/bin/python" -c "import imagecorruptions" 2>/dev/null; then
  SH=" [0-9.]+ \\|"
  expect_out "^On the shifted test set \(Gaussian noise, severity 3\) the chosen setting scores [0-9.]+ against [0-9.]+ .*: the choice (held|did not hold) \([-+][0-9.]+ points\)\.$"
  expect_file "$WORK/out/test_ft_best_noise.json"
  # The answer beside the problem: the row of the choice --max-shift-loss made, clean and shifted.
  expect_out "^\| chosen within --max-shift-loss 2, fine-tuned \| (16|24|32|40) \| (0.875|1) \| [0-9.]+ \| [0-9.]+ \|$"
  expect_out "Chosen within --max-shift-loss 2 on the shifted held-out split: (16|24|32|40) px at crop (0.875|1), [0-9.]+ clean and [0-9.]+ shifted \([-+][0-9.]+ points"
else
  skip_check imagecorruptions "no imagecorruptions in .venv-torch2: the shifted column"
fi
expect_out "^\| train res, no fine-tuning \| 24 \| 0.875 \| [0-9.]+ \|$SH$"
expect_out "^\| chosen res, FixRes fine-tuned \| (16|24|32|40) \| (0.875|1) \| [0-9.]+ \|$SH$"
expect_out "FixRes gain: [-+][0-9.]+ points"
expect_out "^\| chosen res, BN calibrated \(no labels\) \| (16|24|32|40) \| (0.875|1) \| [0-9.]+ \|$SH$"
expect_file "$WORK/out/sweep/sweep_grid.svg"
expect_file "$WORK/out/test_cal_best.json"
expect_file "$WORK/out/sweep/sweep.svg"
expect_file "$WORK/out/report.md"
expect_file "$WORK/out/sweep/sweep_speed.svg"
expect_file "$WORK/out/sweep/config.json"
for f in confusion.svg reliability.svg per_class.csv report.json; do expect_file "$WORK/out/report/$f"; done
expect_out "^ECE [0-9.]+ % -> [0-9.]+ % at temperature [0-9.]+$"
# report.json's ECEs are percentages already (eval_report_check.py holds them to its own count).
{ read -r want; read -r md; } < <("$PY" -c "import json; r = json.load(open('$WORK/out/report/report.json'))
e, t = r['ece'], r['temperature']['ece']
print('ECE %.2f %% -> %.2f %% at' % (e, t)); print('%.2f %%, %.2f %% after' % (e, t))")
[ -n "$md" ] || bad "report.json's ECEs could not be read"
grep -qF "$want" "$OUT" || bad "the ECE line is not report.json's ECE in percent ($want)"
grep -qF "$md" "$WORK/out/report.md" || bad "report.md's ECE is not report.json's in percent ($md)"
grep -q "report/reliability.svg" "$WORK/out/report.md" || bad "report.md does not show the reliability diagram"
grep -q "<svg" "$WORK/out/sweep/sweep.svg" || bad "sweep.svg is not an SVG"
grep -q "polyline" "$WORK/out/sweep/sweep.svg" || bad "sweep.svg has no curve"
# The sweep's default sizes: multiples of resnet_tiny's stride (8) from 0.6x to 1.8x of 24 px.
grep -qE "^ +16 .*$" "$WORK/out/sweep.txt" && grep -qE "^ +40 " "$WORK/out/sweep.txt" &&
  ! grep -qE "^ +(12|20|28|36) " "$WORK/out/sweep.txt" || bad "sweep sizes are not 16,24,32,40"
# The seed summary (make demo-seeds) reads the run: its test-set rows are the demo's own numbers.
run "$PY" "$SRC/scripts/demo_summary.py" "$WORK/out"
expect_code 0
top=$("$PY" -c "import json; print('%.2f' % json.load(open('$WORK/out/summary.json'))['rows'][0][2])")
expect_out "^\| train res, no fine-tuning \| 24 \| 0.875 \| $top \| $top ± 0.00 \|( [0-9.]+ ± 0.00 \|)?$"
expect_out "^FixRes gain .*mean [-+]?[0-9.]+ ± 0.00 points"
# The import is cached: a second run finds it.
run "$FIXRES" import --out "$WORK/data" --holdout 100 --limit-train 600 --limit-val 200
expect_code 0; expect_out "already imported"
# The data set's real counts: 500 train (600 - 100 held out), 100 holdout, 200 val images.
[ "$(find "$WORK/data/train" -name '*.png' | wc -l)" -eq 500 ] || bad "train/ does not hold 500 images"
[ "$(find "$WORK/data/val" -name '*.png' | wc -l)" -eq 200 ] || bad "val/ does not hold 200 images"
run "$FIXRES" import --source "$WORK/nowhere" --out "$WORK/x"
expect_code 3; expect_err "dataset-fashion-mnist"
finish
