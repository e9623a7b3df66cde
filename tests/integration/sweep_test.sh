#!/usr/bin/env bash
# `fixres sweep` with speed, the Pareto front and a budget, and the sweep folder as a model folder:
# 1. a plain sweep of a trained run at 4 sizes: every row has images/s and ms/batch (images/s
#    times ms/batch equals the batch), the Pareto flags are those of the definition computed on
#    sweep.json's own numbers, the choice without a budget is the best top-1; sweep_speed.svg
#    and config.json are written; the table has the speed columns.
# 2. budgets: --max-latency-ms set between the recorded latencies of that sweep's sizes picks what
#    the definition picks on the new sweep.json; --min-throughput below every size picks the best;
#    a latency no size meets writes sweep.json with "chosen": null and exits 7 with one line
#    naming the budget and the fastest size, and no config.json.
# 3. the sweep folder as --weight-path: `eval` runs at the chosen size and gives the sweep's
#    top-1 there; `export --format timm-hub` records it as test_input_size; with --finetune the
#    folder names the fine-tuned checkpoint and eval gives the fine-tuned top-1.
# 4. bad usage: a budget with --latency-batches 0, a negative --max-latency-ms: exit 2.
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
expect_out "wrote .*/s1/sweep.json, .*/s1/sweep.svg, .*/s1/sweep_speed.svg, .*/s1/config.json$"
expect_file "$WORK/s1/sweep_speed.svg"
grep -q "Pareto front" "$WORK/s1/sweep_speed.svg" || bad "sweep_speed.svg has no Pareto front"
grep -q "chosen .* px" "$WORK/s1/sweep_speed.svg" || bad "sweep_speed.svg does not mark the choice"
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
assert os.path.samefile(cfg["fixres"]["weights"], sys.argv[3]), cfg["fixres"]
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
sys.exit(0 if os.path.samefile(c['fixres']['weights'], '$WORK/s5/finetune_$C5/checkpoint.pth') else 1)" ||
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
finish
