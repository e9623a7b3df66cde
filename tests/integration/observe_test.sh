#!/usr/bin/env bash
# Seeing a run: the TensorBoard event files of a short real training run (stopped and resumed, so
# two files) read by an independent reader (tests/reference/event_file_check.py: TFRecord
# framing and both masked CRC-32Cs with its own CRC, Event protos decoded by hand) and equal to
# metrics.jsonl; the data-wait share on every progress record and line; the training top-1 per
# epoch; --no-tensorboard; `fixres plot` on a train and a finetune run folder (an SVG that parses
# as XML with every series) and on values up to +-1.7e308 (axes in units of 1e308), and its errors
# on bad input (exit code, one line naming the problem).
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 8 --val 2 --size 24 >/dev/null || bad "data generation"
RUNS="$WORK/runs"
# 24 images, batch 4, distributed sampler: 6 steps per epoch.
BASE=(train --imnet-path "$D" --architecture resnet_tiny --log-every 1 --sampler distributed
  --input-size 24 --batch 4 --seed 3 --shared-folder-path "$RUNS")
T=("${BASE[@]}" --epochs 2 --workers 2)

# 1. A run stopped at step 4 and resumed: two event files, both read back, equal to metrics.jsonl.
run "$FIXRES" "${T[@]}" --job-id tb --stop-after-steps 4
expect_code 0; expect_err "data [0-9]+%"
sleep 1.1  # another second: the resumed run's file sorts after the first one by its name
run "$FIXRES" "${T[@]}" --job-id tb
expect_code 0; expect_err "data [0-9]+%"
R="$RUNS/train/tb"
n=$(ls "$R"/events.out.tfevents.* 2>/dev/null | wc -l)
[ "$n" -eq 2 ] || bad "expected 2 event files (start and resume), found $n"
run "$PY" "$SRC/tests/reference/event_file_check.py" run "$R"
expect_code 0; expect_out "^ok: 2 files"
cat "$OUT"

# 1b. Two ranks: rank 0 alone writes one event file; the training top-1 counts every rank's images.
run "$FIXRES" launch --nproc-per-node 2 -- "${BASE[@]}" --job-id two --epochs 1 --workers 1
expect_code 0
n=$(ls "$RUNS/train/two"/events.out.tfevents.* 2>/dev/null | wc -l)
[ "$n" -eq 1 ] || bad "2 ranks: expected 1 event file, found $n"
run "$PY" "$SRC/tests/reference/event_file_check.py" run "$RUNS/train/two"
expect_code 0; expect_out "^ok: 1 files"
grep -q '"train":{"count":24,' "$RUNS/train/two/metrics.jsonl" || bad "2 ranks: the epoch's training top-1 does not count 2 x 3 steps x 4 images"

# 2. metrics.jsonl: the data-wait share on every progress record, in [0, 1]; the training top-1
# of every epoch, in [0, 100], beside the held-out one.
run "$PY" -c "
import json
steps, epochs = [], []
for line in open('$R/metrics.jsonl'):
    r = json.loads(line)
    if 'loss' in r and 'iteration' in r:
        steps.append(r['step'])
        share = r['data_wait_share']
        assert 0 <= share <= 1, ('data_wait_share', share)
    if 'train' in r:
        epochs.append(r['epoch'])
        assert 0 <= r['train']['top1'] <= 100 and r['train']['count'] > 0, r
        assert 'eval' in r and r['step'] == 6 * r['epoch'], r
assert steps == list(range(1, 13)), steps
assert epochs == [1, 2], epochs
print('data_wait_share in [0, 1] on', len(steps), 'records; train top-1 on epochs', epochs)"
expect_code 0
cat "$OUT"

# 3. --no-tensorboard: no event file.
run "$FIXRES" "${T[@]}" --job-id notb --stop-after-steps 2 --no-tensorboard
expect_code 0
ls "$RUNS/train/notb"/events.out.tfevents.* >/dev/null 2>&1 && bad "--no-tensorboard wrote an event file"

# 4. fixres plot: one SVG that parses as XML, with the loss, learning-rate and top-1 series.
svg_check() {  # svg_check FILE SERIES...: parses, has one chart per panel, lists every series
  local file=$1; shift
  run "$PY" - "$file" "$@" <<'PY'
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = '{http://www.w3.org/2000/svg}'
assert root.tag == ns + 'svg', root.tag
texts = [t.text for t in root.iter(ns + 'text')]
panels = root.findall(ns + 'svg')
assert len(panels) == 3, len(panels)
for name in sys.argv[2:]:
    assert name in texts, (name, 'not in the legends')
lines = list(root.iter(ns + 'polyline'))
assert len(lines) >= len(sys.argv) - 2, len(lines)
print('svg ok:', len(panels), 'panels,', len(lines), 'curves')
PY
}
run "$FIXRES" plot "$R"
expect_code 0; expect_out "wrote $R/curves.svg"
svg_check "$R/curves.svg" "train loss" lr "val" "train (running)"
expect_code 0
run "$FIXRES" finetune --imnet-path "$D" --architecture resnet_tiny --workers 2 --log-every 1 \
  --weight-path "$R/checkpoint.pth" --input-size 32 --epochs 1 --batch 4 \
  --shared-folder-path "$RUNS" --job-id ft
expect_code 0
run "$FIXRES" plot "$RUNS/finetune/ft/" --out "$WORK/ft.svg"
expect_code 0; expect_file "$WORK/ft.svg"
svg_check "$WORK/ft.svg" "train loss" lr "val"
expect_code 0
run "$PY" "$SRC/tests/reference/event_file_check.py" run "$RUNS/finetune/ft"
expect_code 0; expect_out "^ok: 1 files"

# 5. Bad input: one line naming the problem, the project's exit codes.
run "$FIXRES" plot "$WORK/nowhere"
expect_code 3; expect_err_lines 1; expect_err "^fixres: error: run folder .*nowhere does not exist"
run "$FIXRES" plot "$D"
expect_code 3; expect_err_lines 1; expect_err "has no metrics.jsonl"
mkdir -p "$WORK/broken"
printf '{"step":1,"loss":2,"lr":0.1}\nnot json\n' >"$WORK/broken/metrics.jsonl"
run "$FIXRES" plot "$WORK/broken"
expect_code 3; expect_err_lines 1; expect_err "metrics.jsonl:2: not a JSON object"
printf '{"epoch":1,"eval":{"top1":3}}\n' >"$WORK/broken/metrics.jsonl"
run "$FIXRES" plot "$WORK/broken"
expect_code 3; expect_err_lines 1; expect_err "no progress record"
# A last line cut short (a run still writing, a full disk) is skipped with a warning.
printf '{"step":1,"loss":2,"lr":0.1}\n{"step":2,"lo' >"$WORK/broken/metrics.jsonl"
run "$FIXRES" plot "$WORK/broken"
expect_code 0; expect_err "unfinished last line"
# Values up to the largest doubles plot: the axes in units of 1e308, every label a number.
mkdir -p "$WORK/huge"
printf '{"step":1,"loss":1.7e308,"lr":-1.7e308}\n{"step":2,"loss":-1.7e308,"lr":1.7e308}\n{"step":3,"loss":0,"lr":0.1}\n' \
  >"$WORK/huge/metrics.jsonl"
run "$FIXRES" plot "$WORK/huge"
expect_code 0; expect_file "$WORK/huge/curves.svg"
run "$PY" - "$WORK/huge/curves.svg" <<'PY'
import sys
import xml.etree.ElementTree as ET
ns = '{http://www.w3.org/2000/svg}'
root = ET.parse(sys.argv[1]).getroot()
for panel in root.findall(ns + 'svg'):
    ticks = [float(t.text) for t in panel.iter(ns + 'text') if t.get('class') == 'ytick']
    assert min(ticks) <= -1.7e308 and max(ticks) >= 1.7e308, ticks
    assert all(t.text and 'e308' in t.text or float(t.text) == 0 for t in panel.iter(ns + 'text')
               if t.get('class') == 'ytick'), 'labels not in units of 1e308'
assert 'nan' not in open(sys.argv[1]).read() and 'inf' not in open(sys.argv[1]).read()
PY
expect_code 0
run "$FIXRES" plot "$R" --out "$WORK/no/such/folder/x.svg"
expect_code 6; expect_err_lines 1; expect_err "cannot write the plot"
run "$FIXRES" plot
expect_code 2
finish
