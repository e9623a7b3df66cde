#!/usr/bin/env bash
# `fixres sweep` with speed, the Pareto front and a budget, and the sweep folder as a model folder:
# 1. a plain sweep of a trained run at 4 sizes: every row has images/s and ms/batch (images/s
#    times ms/batch equals the batch), the Pareto flags are those of the definition computed on
#    sweep.json's own numbers, the choice without a budget is the best top-1; sweep_speed.svg
#    and config.json are written; the table has the speed columns.
# 2. budgets: --max-latency-ms set between the recorded latencies of that sweep's sizes picks what
#    the definition picks on the new sweep.json; --min-throughput below every size picks the best;
#    a latency no size meets writes sweep.json with "chosen": null and exits 7 with one line
#    naming the budget and the fastest size, and no config.json. sweep_grid.svg of each holds
#    sweep.json's top-1s, hatches the cells outside the budget and marks the choice
#    (tests/reference/sweep_grid_check.py).
# 3. the sweep folder as --weight-path: `eval` runs at the chosen size and gives the sweep's
#    top-1 there; `export --format timm-hub` records it as test_input_size; with --finetune the
#    folder names the fine-tuned checkpoint and eval gives the fine-tuned top-1.
# 4. bad usage: a budget with --latency-batches 0, a negative --max-latency-ms: exit 2.
# 5. size x crop fraction (--crop-pcts), fine-tuned once per size: every cell's top-1 is eval's at
#    that size and --crop-pct (plain) or of that size's fine-tuned checkpoint (fine-tuned); the
#    choice is the best cell; config.json records its test_crop_pct, which eval from the folder
#    then uses; sweep_grid.svg has both panels (3 crops x 2 sizes) equal to sweep.json, and
#    every label inside the picture; bad lists refused.
# 6. --eval-set: a shifted copy of the split (imagecorruptions' gaussian_noise, from the pinned
#    environment) and the split itself scored at every cell: the split as a set gives the split's
#    top-1; a set's cell equals eval's top-1 and its report's ECE on that folder; top1_change and
#    shift_ok follow their definitions and the choice is the best shift_ok cell
#    (--max-shift-loss); bad names, duplicates, a rule without a set or without the train size
#    (exit 2), a missing folder (exit 3), a folder of other classes (exit 2) refused with one
#    line, before the sweep folder is made.
set -u
source "$(dirname "$0")/lib.sh" "$@"
REF="$SRC/tests/reference"
D="$WORK/data"
"$PY" "$REF/make_image_folder.py" "$D" --classes 3 --train 8 --val 6 --size 48 >/dev/null || bad "data"
run "$FIXRES" train --imnet-path "$D" --architecture resnet_tiny --workers 1 --input-size 24 \
  --batch 4 --epochs 2 --shared-folder-path "$WORK/runs" --job-id r
expect_code 0
RUN="$WORK/runs/train/r"
SWEEP=(sweep --imnet-path "$D" --split val --weight-path "$RUN" --batch 6 --workers 1
  --latency-batch 4)
SIZES=(--sizes 16,24,32,48)

# --- 1. speed, front and choice ------------------------------------------------------------------
run "$FIXRES" "${SWEEP[@]}" "${SIZES[@]}" --latency-batches 3 --out "$WORK/s1"
expect_code 0
cp "$OUT" "$WORK/s1.txt"
expect_out "^ +size +top1 +img/s +ms/batch$"
expect_out "^chosen test resolution: [0-9]+ \(top-1 [0-9.]+, [0-9.]+ img/s, [0-9.]+ ms/batch\)$"
expect_out "wrote .*/s1/sweep.json, .*/s1/sweep.svg, .*/s1/sweep_grid.svg, .*/s1/sweep_speed.svg, .*/s1/config.json$"
expect_file "$WORK/s1/sweep_speed.svg"
grep -q "Pareto front" "$WORK/s1/sweep_speed.svg" || bad "sweep_speed.svg has no Pareto front"
grep -q "chosen .* px" "$WORK/s1/sweep_speed.svg" || bad "sweep_speed.svg does not mark the choice"
# Every cell's point labelled with its size (the points themselves carry no other name).
"$PY" - "$WORK/s1/sweep.json" "$WORK/s1/sweep_speed.svg" <<'EOF' || bad "sweep_speed.svg's points are not labelled with the rows' sizes"
import json, sys, xml.etree.ElementTree as ET
rows = json.load(open(sys.argv[1]))["rows"]
ns = "{http://www.w3.org/2000/svg}"
labels = [e.text for e in ET.parse(sys.argv[2]).getroot().iter(ns + "text") if e.get("class") == "point-label"]
assert sorted(labels) == sorted(f"{r['size']} px" for r in rows), (labels, [r["size"] for r in rows])
EOF
check_choice() {  # check_choice SWEEP_JSON FINETUNE MAX_MS MIN_IPS
  "$PY" - "$@" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
finetune, max_ms, min_ips = sys.argv[2] == "1", float(sys.argv[3]), float(sys.argv[4])
rows = doc["rows"]
batch = doc["speed"]["latency_batch"]
top1 = lambda r: r["top1_finetuned"] if finetune else r["top1"]
for r in rows:
    assert r["images_per_s"] > 0 and r["latency_ms"] > 0, r
    assert abs(r["images_per_s"] * r["latency_ms"] / 1000 - batch) < 1e-6 * batch, r
    dominated = any(o is not r and o["images_per_s"] >= r["images_per_s"] and top1(o) >= top1(r)
                    and (o["images_per_s"] > r["images_per_s"] or top1(o) > top1(r)) for o in rows)
    assert r["pareto"] == (not dominated), (r, rows)
ok = [r for r in rows if (max_ms <= 0 or r["latency_ms"] <= max_ms) and
      (min_ips <= 0 or r["images_per_s"] >= min_ips)]
want = max(ok, key=lambda r: (top1(r), r["images_per_s"]))["size"] if ok else None
assert doc["chosen"] == want, (doc["chosen"], want, rows)
print(want)
EOF
}
run check_choice "$WORK/s1/sweep.json" 0 0 0
expect_code 0
CHOSEN=$(cat "$OUT")
grep -q "^chosen test resolution: $CHOSEN " "$WORK/s1.txt" || bad "the table's choice is not $CHOSEN"

# --- 2. budgets ----------------------------------------------------------------------------------
# A bound between the latencies of 24 and 32 px in the first sweep; the check uses the second
# sweep's own numbers, so it holds whatever they are.
MID=$("$PY" -c "
import json; rows = {r['size']: r for r in json.load(open('$WORK/s1/sweep.json'))['rows']}
print((rows[24]['latency_ms'] + rows[32]['latency_ms']) / 2)")
run "$FIXRES" "${SWEEP[@]}" "${SIZES[@]}" --out "$WORK/s2" --max-latency-ms "$MID"
if [ "$CODE" -eq 0 ]; then
  expect_out "^chosen test resolution within the budget: "
  run check_choice "$WORK/s2/sweep.json" 0 "$MID" 0
  expect_code 0
else
  expect_code 7  # timing noise can leave no size under the bound; the definition must agree
  run check_choice "$WORK/s2/sweep.json" 0 "$MID" 0
  expect_code 0; expect_out "^None$"
fi
run "$FIXRES" "${SWEEP[@]}" "${SIZES[@]}" --out "$WORK/s3" --min-throughput 0.001
expect_code 0
run check_choice "$WORK/s3/sweep.json" 0 0 0.001
expect_code 0
run "$FIXRES" "${SWEEP[@]}" "${SIZES[@]}" --out "$WORK/s4" --max-latency-ms 0.000001
expect_code 7; expect_err_lines 1
expect_err "^fixres: error: no test resolution meets --max-latency-ms 1e-06 \(the fastest, [0-9]+ px, runs [0-9.e+]+ img/s, [0-9.e+-]+ ms per batch of 4\)$"
expect_file "$WORK/s4/sweep.json"
grep -q '"chosen": null' "$WORK/s4/sweep.json" || bad "sweep.json does not say that nothing was chosen"
[ -e "$WORK/s4/config.json" ] && bad "a sweep that chose nothing wrote config.json"
# The size x crop grid of each: values, hatched cells, boundary and mark against sweep.json.
for s in s1 s2 s4; do
  run "$PY" "$REF/sweep_grid_check.py" "$WORK/$s"
  expect_code 0; expect_out "^grid of 1 x [0-9]+ cells, 1 panels equal to sweep.json$"
done
# The same folder as a sweep that chose: its config.json goes, the choice is not left behind.
cp -r "$WORK/s1" "$WORK/s1again"
run "$FIXRES" "${SWEEP[@]}" "${SIZES[@]}" --out "$WORK/s1again" --max-latency-ms 0.000001
expect_code 7
[ -e "$WORK/s1again/config.json" ] && bad "an earlier sweep's config.json was left in a folder whose sweep chose nothing"

# --- 3. the sweep folder as a model folder -------------------------------------------------------
run "$FIXRES" eval --weight-path "$WORK/s1" --dataset-path "$D/val" --workers 1 --batch 6 --json "$WORK/e1.json"
expect_code 0
"$PY" - "$WORK/s1/sweep.json" "$WORK/e1.json" "$RUN/checkpoint.pth" "$WORK/s1/config.json" <<'EOF' || bad "eval from the sweep folder differs from the sweep's row"
import json, os, sys
sweep, ev = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
rows = {r["size"]: r for r in sweep["rows"]}
res = ev["results"] if "results" in ev else ev
res = res if isinstance(res, list) else [res]
assert len(res) == 1 and res[0]["input_size"] == sweep["chosen"], (res, sweep["chosen"])
assert abs(res[0]["top1"] - rows[sweep["chosen"]]["top1"]) < 1e-9, (res, rows)
cfg = json.load(open(sys.argv[4]))
# the weights inside the folder, named relative to it (a hard link to the run's checkpoint)
assert not os.path.isabs(cfg["fixres"]["weights"]), cfg["fixres"]
assert os.path.samefile(os.path.join(os.path.dirname(sys.argv[4]), cfg["fixres"]["weights"]),
                        sys.argv[3]), cfg["fixres"]
assert cfg["pretrained_cfg"]["test_input_size"] == [3, sweep["chosen"], sweep["chosen"]], cfg
assert cfg["label_names"] == ["class0", "class1", "class2"], cfg
print("eval at", sweep["chosen"], "px from the sweep folder equals its row")
EOF
run "$FIXRES" export --weight-path "$WORK/s1" --format timm-hub --out "$WORK/hub"
expect_code 0
"$PY" -c "
import json, sys; c = json.load(open('$WORK/hub/config.json'))
sys.exit(0 if c['pretrained_cfg']['test_input_size'] == [3, $CHOSEN, $CHOSEN] else 1)" ||
  bad "the export of the sweep folder does not carry the chosen size $CHOSEN"
# With fine-tuning: the folder names the fine-tuned checkpoint of the chosen size.
run "$FIXRES" "${SWEEP[@]}" --out "$WORK/s5" --finetune --finetune-iterations 1 --sizes 24,32
expect_code 0
run check_choice "$WORK/s5/sweep.json" 1 0 0
expect_code 0
C5=$(cat "$OUT")
"$PY" -c "
import json, os, sys; c = json.load(open('$WORK/s5/config.json'))
sys.exit(0 if c['fixres']['weights'] == 'finetune_$C5/checkpoint.pth' else 1)" ||
  bad "the fine-tuned sweep's config.json does not name finetune_$C5/checkpoint.pth"
run "$FIXRES" eval --weight-path "$WORK/s5" --dataset-path "$D/val" --workers 1 --batch 6 --json "$WORK/e5.json"
expect_code 0
"$PY" - "$WORK/s5/sweep.json" "$WORK/e5.json" <<'EOF' || bad "eval from the fine-tuned sweep folder"
import json, sys
sweep, ev = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
row = {r["size"]: r for r in sweep["rows"]}[sweep["chosen"]]
res = ev["results"] if "results" in ev else ev
res = res if isinstance(res, list) else [res]
assert res[0]["input_size"] == sweep["chosen"] and abs(res[0]["top1"] - row["top1_finetuned"]) < 1e-9, (res, row)
EOF

# A damaged sweep folder: fixres.weights not a name, or naming a file that is gone: exit 4, one
# line naming the folder's config.json.
cp -r "$WORK/s1" "$WORK/s1bad"
for w in 7 '"gone.pth"'; do
  "$PY" -c "import json, sys; c = json.load(open(sys.argv[1])); c['fixres']['weights'] = json.loads(sys.argv[2]); json.dump(c, open(sys.argv[1], 'w'))" \
    "$WORK/s1bad/config.json" "$w" || bad "damaging config.json"
  run "$FIXRES" eval --weight-path "$WORK/s1bad" --dataset-path "$D/val" --workers 1
  expect_code 4; expect_err_lines 1
  if [ "$w" = 7 ]; then expect_err "s1bad/config.json: fixres.weights must name the weight file"
  else expect_err "s1bad/config.json names the weight file .*s1bad/gone.pth, which is missing"; fi
done

# --- 4. bad usage -------------------------------------------------------------------------------
run "$FIXRES" "${SWEEP[@]}" "${SIZES[@]}" --out "$WORK/s6" --max-latency-ms 5 --latency-batches 0
expect_code 2; expect_err_lines 1; expect_err "need the speed measured"
[ -e "$WORK/s6" ] && bad "a refused sweep made its folder"
run "$FIXRES" "${SWEEP[@]}" "${SIZES[@]}" --out "$WORK/s6" --max-latency-ms -1
expect_code 2; expect_err_lines 1; expect_err "--max-latency-ms"
# --- 5. size x crop fraction ---------------------------------------------------------------------
run "$FIXRES" "${SWEEP[@]}" --out "$WORK/s7" --finetune --finetune-iterations 1 --sizes 24,32 \
  --crop-pcts 0.875,1.0,0.7 --latency-batches 1
expect_code 0
expect_out "^ +size +crop +top1 +top1 finetuned +img/s +ms/batch$"
[ "$(grep -cE '^ +(24|32) +(0.875|1.000|0.700) ' "$OUT")" -eq 6 ] || bad "not 6 cells in the table"
[ "$(ls -d "$WORK/s7"/finetune_* | wc -l)" -eq 2 ] || bad "not one fine-tuning run per size"
run "$PY" "$REF/sweep_grid_check.py" "$WORK/s7"
expect_code 0; expect_out "^grid of 3 x 2 cells, 2 panels equal to sweep.json$"
run "$PY" "$REF/svg_text_fits.py" "$WORK/s7/sweep_grid.svg"
if [ "$CODE" -eq 77 ]; then skip_check fonts "SVG label widths: $(cat "$OUT")"; else expect_code 0; fi
for cell in 24:0.875 24:1.0 32:0.7; do
  size=${cell%%:*} crop=${cell#*:}
  run "$FIXRES" eval --weight-path "$RUN" --dataset-path "$D/val" --workers 1 --batch 6 \
    --input-size "$size" --crop-pct "$crop" --json "$WORK/c.json"
  expect_code 0
  run "$FIXRES" eval --weight-path "$WORK/s7/finetune_$size/checkpoint.pth" --architecture resnet_tiny \
    --num-classes 3 --dataset-path "$D/val" --workers 1 --batch 6 --input-size "$size" \
    --crop-pct "$crop" --json "$WORK/cf.json"
  expect_code 0
  "$PY" - "$WORK/s7/sweep.json" "$WORK/c.json" "$WORK/cf.json" "$size" "$crop" <<'EOF' || bad "cell $cell"
import json, sys
sweep, plain, tuned = (json.load(open(p)) for p in sys.argv[1:4])
size, crop = int(sys.argv[4]), float(sys.argv[5])
one = lambda d: (d["results"] if "results" in d else [d])[0]
row = [r for r in sweep["rows"] if r["size"] == size and r["crop_pct"] == crop]
assert len(row) == 1 and len(sweep["rows"]) == 6 and sweep["crop_pcts"] == [0.875, 1.0, 0.7], sweep
assert abs(row[0]["top1"] - one(plain)["top1"]) < 1e-9, (row, plain)
assert abs(row[0]["top1_finetuned"] - one(tuned)["top1"]) < 1e-9, (row, tuned)
EOF
done
"$PY" - "$WORK/s7/sweep.json" "$WORK/s7/config.json" <<'EOF' || bad "the crop sweep's choice"
import json, sys
sweep, cfg = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
best = max(r["top1_finetuned"] for r in sweep["rows"])
chosen = [r for r in sweep["rows"] if r["size"] == sweep["chosen"] and r["crop_pct"] == sweep["chosen_crop_pct"]]
assert len(chosen) == 1 and chosen[0]["top1_finetuned"] == best, (chosen, best)
p = cfg["pretrained_cfg"]
assert p["test_crop_pct"] == sweep["chosen_crop_pct"] and p["test_input_size"][1] == sweep["chosen"], p
EOF
read -r C7 K7 T7 < <("$PY" -c "import json; s=json.load(open('$WORK/s7/sweep.json')); r=[r for r in s['rows'] if r['size']==s['chosen'] and r['crop_pct']==s['chosen_crop_pct']][0]; print(s['chosen'], s['chosen_crop_pct'], r['top1_finetuned'])")
run "$FIXRES" eval --weight-path "$WORK/s7" --dataset-path "$D/val" --workers 1 --batch 6 --json "$WORK/e7.json"
expect_code 0
"$PY" -c "import json,sys; d=json.load(open('$WORK/e7.json')); r=(d['results'] if 'results' in d else [d])[0]; sys.exit(0 if r['input_size']==$C7 and abs(r['top1']-$T7)<1e-9 else 1)" ||
  bad "eval from the crop sweep's folder is not the chosen cell ($C7 px, crop $K7, $T7)"
for case in "0.875,0.875|twice" "0.01|values must be" "1.5|values must be" "a|values must be" "0.9,|comma-separated"; do
  run "$FIXRES" "${SWEEP[@]}" --sizes 24 --out "$WORK/s8" --crop-pcts "${case%%|*}"
  expect_code 2; expect_err_lines 1; expect_err "--crop-pcts.*${case#*|}"
done
[ -e "$WORK/s8" ] && bad "a refused crop sweep made its folder"

# --- 6. further evaluation sets ------------------------------------------------------------------
SHIFT_PY=$(served_python "${FIXRES_ORT_PYTHON:-$SRC/.venv-torch2/bin/python}")
NOISE="$D/val"  # without imagecorruptions, the split itself (the checks below still hold)
if [ -x "$SHIFT_PY" ] && "$SHIFT_PY" -c "import imagecorruptions" 2>/dev/null; then
  run "$SHIFT_PY" "$SRC/scripts/make_shifted_set.py" "$D/val" "$WORK/noise" gaussian_noise 5
  expect_code 0; expect_out "^18 images, gaussian_noise severity 5$"
  NOISE="$WORK/noise"
else
  skip_check imagecorruptions "no imagecorruptions at $SHIFT_PY (make torch2-env installs it): the shifted set is the split"
fi
run "$FIXRES" "${SWEEP[@]}" --out "$WORK/s9" --sizes 16,24,32 --train-size 24 --latency-batches 0 \
  --crop-pcts 0.875,1.0 --eval-set noise="$NOISE" --eval-set same="$D/val" --max-shift-loss 5
expect_code 0
expect_out "^ +size +crop +top1 +noise +same$"
"$PY" - "$WORK/s9/sweep.json" <<'EOF' || bad "the eval sets' scores or the shift rule"
import json, sys
s = json.load(open(sys.argv[1]))
rows = s["rows"]
assert [e["name"] for e in s["eval_sets"]] == ["noise", "same"], s["eval_sets"]
assert s["shift_baseline"] == {"size": 24, "crop_pct": 0.875, "precision": "fp32"}, s["shift_baseline"]
base = [r for r in rows if r["size"] == 24 and r["crop_pct"] == 0.875][0]
for r in rows:
    same = r["sets"]["same"]
    # the split scored as a further set: the split's own top-1, every image
    assert abs(same["top1"] - r["top1"]) < 1e-9 and same["images"] == 18, r
    for name in ("noise", "same"):
        got = r["sets"][name]
        assert abs(got["top1_change"] - (got["top1"] - base["sets"][name]["top1"])) < 1e-9, r
        assert 0 <= got["ece"] <= 100, r
    ok = all(r["sets"][n]["top1"] >= base["sets"][n]["top1"] - 5 for n in ("noise", "same"))
    assert r["shift_ok"] == ok, r
best = max((r for r in rows if r["shift_ok"]), key=lambda r: r["top1"])
chosen = [r for r in rows if r["size"] == s["chosen"] and r["crop_pct"] == s["chosen_crop_pct"]]
assert len(chosen) == 1 and chosen[0]["shift_ok"] and chosen[0]["top1"] == best["top1"], (s["chosen"], best)
EOF
# A set's cell against eval on that folder at that size and crop (top-1), and against eval's
# report (ECE, itself held to a Python reference in eval_report_test.sh).
read -r S9 K9 < <("$PY" -c "import json; r=json.load(open('$WORK/s9/sweep.json'))['rows'][3]; print(r['size'], r['crop_pct'])")
run "$FIXRES" eval --weight-path "$RUN" --dataset-path "$NOISE" --input-size "$S9" --crop-pct "$K9" \
  --batch 6 --workers 1 --report "$WORK/rep9" --json "$WORK/e9.json"
expect_code 0
"$PY" - "$WORK/s9/sweep.json" "$WORK/e9.json" "$WORK/rep9/report.json" <<'EOF' || bad "a set's cell is not eval's"
import json, sys
cell = json.load(open(sys.argv[1]))["rows"][3]["sets"]["noise"]
ev = json.load(open(sys.argv[2]))
ev = ev["results"][0] if "results" in ev else ev
rep = json.load(open(sys.argv[3]))
ece = rep["ece"]
assert abs(cell["top1"] - ev["top1"]) < 1e-9, (cell, ev)
assert abs(cell["ece"] - ece) < 1e-6 * max(1, cell["ece"]), (cell, ece)  # both in percent
EOF
run "$PY" "$REF/sweep_grid_check.py" "$WORK/s9"
expect_code 0; expect_out "^grid of 2 x 3 cells, 1 panels equal to sweep.json$"
for b in "noequals" "a b=$D/val" "=x" "n=$D/val --eval-set n=$D/val"; do
  run "$FIXRES" "${SWEEP[@]}" --out "$WORK/s10" --sizes 24 --train-size 24 --eval-set $b
  expect_code 2; expect_err_lines 1; expect_err "--eval-set"
done
run "$FIXRES" "${SWEEP[@]}" --out "$WORK/s10" --sizes 24 --max-shift-loss 2
expect_code 2; expect_err_lines 1; expect_err "--max-shift-loss needs an --eval-set"
run "$FIXRES" "${SWEEP[@]}" --out "$WORK/s10" --sizes 16,32 --train-size 24 --eval-set n="$D/val" --max-shift-loss 2
expect_code 2; expect_err_lines 1; expect_err "must be among --sizes"
run "$FIXRES" "${SWEEP[@]}" --out "$WORK/s10" --sizes 24 --train-size 24 --eval-set n=x --max-shift-loss -1
expect_code 2; expect_err_lines 1; expect_err "--max-shift-loss"
run "$FIXRES" "${SWEEP[@]}" --out "$WORK/s10" --sizes 24 --train-size 24 --latency-batches 0 \
  --eval-set n="$WORK/nowhere"
expect_code 3; expect_err_lines 1; expect_err "nowhere"
[ -e "$WORK/s10" ] && bad "a refused sweep made its folder"
mkdir -p "$WORK/other/zz" && cp "$(ls "$D/val"/*/* | head -1)" "$WORK/other/zz/"
run "$FIXRES" "${SWEEP[@]}" --out "$WORK/s10" --sizes 24 --train-size 24 --latency-batches 0 \
  --eval-set other="$WORK/other"
expect_code 2; expect_err_lines 1; expect_err "--eval-set other: .* has 1 classes other than the 3"

# --- 7. precision as an axis (LibTorch: bf16 autocast) -------------------------------------------
# Each cell equals eval of the same weights in its precision; the folder records the chosen cell's
# precision and eval from it runs that precision unless told (docs/runtimes.md).
run "$FIXRES" "${SWEEP[@]}" --out "$WORK/s11" --sizes 24,32 --train-size 24 --precisions fp32,bf16
expect_code 0; expect_out "^ +size +precision +top1 +img/s +ms/batch$"; expect_out "^ +24 +bf16 "
for prec in fp32 bf16; do
  run "$FIXRES" eval --weight-path "$RUN" --dataset-path "$D/val" --workers 1 --batch 6 \
    --input-size 24,32 --precision "$prec" --json "$WORK/p.$prec.json"
  expect_code 0
done
"$PY" - "$WORK/s11" "$WORK/p.fp32.json" "$WORK/p.bf16.json" <<'EOF' || bad "the precision axis"
import json, sys
s = json.load(open(sys.argv[1] + "/sweep.json"))
ev = {p: {r["input_size"]: r["top1"] for r in json.load(open(f))["results"]}
      for p, f in zip(("fp32", "bf16"), sys.argv[2:])}
assert s["precisions"] == ["fp32", "bf16"] and "precision" not in s, s.get("precisions")
assert [(r["size"], r["precision"]) for r in s["rows"]] == [(24, "fp32"), (24, "bf16"), (32, "fp32"), (32, "bf16")]
for r in s["rows"]:
    assert abs(r["top1"] - ev[r["precision"]][r["size"]]) < 1e-9, (r, ev)
c = json.load(open(sys.argv[1] + "/config.json"))["fixres"]
assert c["precision"] == s["chosen_precision"] and c["runtime"] == "libtorch", (c, s["chosen_precision"])
EOF
read -r P11 < <("$PY" -c "import json; print(json.load(open('$WORK/s11/sweep.json'))['chosen_precision'])")
run "$FIXRES" eval --weight-path "$WORK/s11" --dataset-path "$D/val" --workers 1 --batch 6
expect_code 0; expect_err "recorded precision $P11 "
run "$PY" "$REF/sweep_grid_check.py" "$WORK/s11"
expect_code 0; expect_out "^grid of 2 x 2 cells, 1 panels equal to sweep.json$"
finish
