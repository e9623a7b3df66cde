#!/usr/bin/env bash
# Hostile input to predict, eval, export and model folders (docs/reliability.md, round 4), each
# case a regression test of one row of that table, through the binary:
# - row 1: a JSON value nested 100,000 deep in a model folder's config.json and in a safetensors
#   header: one line naming the file, exit 4, no crash;
# - row 2: an image 50 times taller than wide: predicted (a one-pixel column padded with black),
#   evaluated, never "bad sizes";
# - model folder values checked as their flags are (a size of 5000, 4294967320 or -5, a
#   non-string interpolation): one line naming the file and the key, exit 4;
# - row 4: a 40 GB image file: a bad image, not a job lost to out-of-memory;
# - row 7: a sweep folder reused for other weights: refused, not another model's results;
# - row 13: convnext_demo below its 16 px stride: refused up front, exit 2;
# - row 8: an output that is an input or lies inside one, whatever flag names the input (predict's
#   image, list file and folder; export over the run folder's checkpoint; eval --json over its
#   config.json; a --config file): exit 2 naming both, every input unchanged;
# - rows 6, 9, 10, 11, 12 and the smaller ones (a byte order mark, --img-size, the CSV's columns,
#   launch ... predict, an interrupted export, another architecture's weights), each under its
#   own comment below.
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 2 --train 8 --val 4 --size 48 \
  >/dev/null || bad "data generation"
run "$FIXRES" train --imnet-path "$D" --architecture resnet_tiny --workers 1 --input-size 24 \
  --batch 4 --epochs 1 --shared-folder-path "$WORK/runs" --job-id t1
expect_code 0
RUN="$WORK/runs/train/t1"
HUB="$WORK/hub"
run "$FIXRES" export --weight-path "$RUN" --format timm-hub --out "$HUB"
expect_code 0

# Row 1: deep JSON.
edit_config() {  # edit_config FOLDER PYTHON-EXPRESSION-ON-j
  rm -rf "$1"; cp -r "$HUB" "$1"
  "$PY" - "$1/config.json" "$2" <<'PYEOF' || bad "editing $1"
import json, sys
path, expr = sys.argv[1], sys.argv[2]
j = json.load(open(path))
exec(expr)
open(path, "w").write(json.dumps(j).replace('"@DEEP@"', "[" * 100000 + "]" * 100000))
PYEOF
}
edit_config "$WORK/deep" "j['num_classes'] = '@DEEP@'"
run "$FIXRES" predict "$D/val" --weight-path "$WORK/deep"
expect_code 4; expect_err_lines 1; expect_err "deep/config.json: not valid JSON \(nested deeper than 64 levels\)"
run "$FIXRES" eval --weight-path "$WORK/deep" --dataset-path "$D/val"
expect_code 4; expect_err "nested deeper than 64 levels"
"$PY" - "$WORK/deep.safetensors" <<'PYEOF' || bad "deep safetensors"
import struct, sys
header = ('{"__metadata__": {"x": ' + "[" * 100000 + "]" * 100000 + '}}').encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(header)) + header)
PYEOF
run "$FIXRES" export --weight-path "$WORK/deep.safetensors" --architecture resnet_tiny --out "$WORK/x.pth"
expect_code 4; expect_err_lines 1; expect_err "deep.safetensors: safetensors header is not valid JSON \(nested deeper"

# Model folder values through the flags' checks.
for case in "test_input_size=[3, 5000, 5000]|test_input_size must be an integer in \[8, 4096\], got 5000" \
  "input_size=4294967320|input_size must be an integer in \[8, 4096\], got 4294967320" \
  "test_input_size=-5|test_input_size must be an integer in \[8, 4096\], got -5" \
  "interpolation=3|interpolation: expected a name, got 3" \
  "test_crop_pct=1e-300|test_crop_pct must be in \[0.05, 1\], got 1e-300"; do
  kv=${case%%|*}; msg=${case#*|}
  edit_config "$WORK/values" "j['pretrained_cfg']['${kv%%=*}'] = ${kv#*=}"
  run "$FIXRES" predict "$D/val" --weight-path "$WORK/values"
  expect_code 4; expect_err_lines 1; expect_err "values/config.json: $msg"
done

# Row 2: a 20x1000 image at 24 px.
"$PY" -c "from PIL import Image; Image.new('RGB', (20, 1000), (200, 90, 30)).save('$WORK/tall.png')"
run "$FIXRES" predict "$WORK/tall.png" --weight-path "$RUN"
expect_code 0; expect_out "tall.png,[01],class[01],"; expect_err "predicted 1 of 1"
mkdir -p "$WORK/tallset/class0" "$WORK/tallset/class1"
cp "$WORK/tall.png" "$WORK/tallset/class0/"; cp "$D"/val/class1/* "$WORK/tallset/class1/"
run "$FIXRES" eval --weight-path "$RUN" --dataset-path "$WORK/tallset"
expect_code 0; expect_out " 24 "

# Row 8: outputs onto inputs.
cp "$WORK/tall.png" "$WORK/x.png"; echo "$WORK/x.png" >"$WORK/list.txt"
sums() { md5sum "$WORK/x.png" "$WORK/list.txt" "$RUN"/* "$D"/val/*/* "$WORK/cfg.toml" 2>/dev/null; }
printf 'topk = 1\n' >"$WORK/cfg.toml"
before=$(sums)
for args in "predict $WORK/x.png --out $WORK/x.png|--out $WORK/x.png is inputs $WORK/x.png: an output must not overwrite an input"   "predict $WORK/list.txt --out $WORK/list.txt|is inputs $WORK/list.txt"   "predict $D/val --out $D/val/class0/000.jpg|is inside inputs $D/val"   "predict $D/val --config $WORK/cfg.toml --out $WORK/cfg.toml|is --config $WORK/cfg.toml"   "export --format timm --out $RUN/checkpoint.pth|is inside --weight-path $RUN"   "eval --dataset-path $D/val --json $RUN/config.json|--json $RUN/config.json is inside --weight-path $RUN"; do
  # shellcheck disable=SC2086
  run "$FIXRES" ${args%%|*} --weight-path "$RUN"
  expect_code 2; expect_err_lines 1; expect_err "${args#*|}"
done
[ "$(sums)" = "$before" ] || bad "an input changed"

# A UTF-8 byte order mark starts no class name (and no --config key: ConfigFileTest).
printf '\xef\xbb\xbfcat\ndog\n' >"$WORK/names.txt"
run "$FIXRES" predict "$D/val/class0/000.jpg" --weight-path "$RUN" --class-names "$WORK/names.txt" --topk 2
expect_code 0
"$PY" - "$OUT" <<'PYEOF' || bad "class names with a byte order mark"
import csv, sys
row = list(csv.DictReader(open(sys.argv[1], encoding="utf-8")))[0]
assert {row["top1_class"], row["top2_class"]} == {"cat", "dog"}, row
PYEOF

# Row 9: names and messages that are not UTF-8 reach JSON and CSV as U+FFFD, never a lost output.
L="$WORK/latin"; mkdir -p "$L/train/class0" "$L/train/caf"$'\xe9' "$L/val"
cp "$D"/train/class0/* "$L/train/class0/"; cp "$D"/train/class1/* "$L/train/caf"$'\xe9'/
cp -r "$L/train/"* "$L/val/"
printf 'P5\n4 4\n255\n\xe9\xff' >"$L/val/class0/bad"$'\xe9'".pgm"
run "$FIXRES" train --imnet-path "$L" --architecture resnet_tiny --workers 1 --input-size 24 \
  --batch 4 --epochs 1 --shared-folder-path "$WORK/runs" --job-id latin --skip-bad-images
expect_code 0
run "$FIXRES" eval --weight-path "$WORK/runs/train/latin" --dataset-path "$L/val" --skip-bad-images \
  --report "$WORK/latin-report" --json "$WORK/latin-eval.json"
expect_code 0; expect_file "$WORK/latin-report/report.json"
run "$FIXRES" export --weight-path "$WORK/runs/train/latin" --format timm-hub --out "$WORK/latin-hub"
expect_code 0; expect_file "$WORK/latin-hub/config.json"
for fmt in json jsonl csv; do
  run "$FIXRES" predict "$L/val" --weight-path "$WORK/latin-hub" --results-format $fmt --out "$WORK/latin.$fmt"
  expect_code 0; expect_err "predicted 16 of 17"
done
"$PY" - "$WORK" <<'PYEOF' || bad "outputs of non-UTF-8 names"
import csv, json, sys
w = sys.argv[1]
for f in ["runs/train/latin/config.json", "latin-report/report.json", "latin-eval.json", "latin-hub/config.json", "latin.json"]:
    json.load(open(f"{w}/{f}", encoding="utf-8"))
assert json.load(open(f"{w}/latin-hub/config.json"))["label_names"] == ["caf\ufffd", "class0"]
rows = [json.loads(l) for l in open(f"{w}/latin.jsonl", encoding="utf-8")]
bad = [r for r in rows if r["error"]]
assert len(rows) == 17 and len(bad) == 1 and bad[0]["path"].endswith("bad\ufffd.pgm"), bad
table = list(csv.reader(open(f"{w}/latin.csv", encoding="utf-8")))
assert table[0] == ["path"] + [f"top{k}_{c}" for k in (1, 2) for c in ("index", "class", "prob")] + ["error"], table[0]
assert all(len(r) == 8 for r in table), "ragged CSV"
PYEOF

# Row 10: weights that can only give NaN (NaN, Inf, a negative running variance) are refused at
# load naming the tensor, exit 4; finite weights whose logits overflow, at the first batch.
run "$FIXRES" export --weight-path "$RUN" --format timm --out "$WORK/sd.pth"
expect_code 0
"$PY" - "$WORK" <<'PYEOF' || bad "editing weights"
import sys, torch
w = sys.argv[1]
sd = torch.load(f"{w}/sd.pth")
def save(name, key, fn):
    d = dict(sd); d[key] = fn(d[key].clone()); torch.save(d, f"{w}/{name}.pth")
save("nan", "fc.weight", lambda t: t.index_fill_(1, torch.tensor([0]), float("nan")))
save("inf", "fc.bias", lambda t: t.fill_(float("inf")))
save("negvar", "layer1.0.bn1.running_var", lambda t: -t)
save("overflow", "fc.weight", lambda t: t.fill_(3e38))
PYEOF
for case in "nan|tensor fc.weight holds NaN or infinite values \(2 NaN of 256\)" \
  "inf|tensor fc.bias holds NaN or infinite values" \
  "negvar|tensor layer1.0.bn1.running_var \(a BatchNorm's running variance\) holds negative" \
  "overflow|the model's logits are not finite for 8 of 8 images at 24 px"; do
  w="$WORK/${case%%|*}.pth"
  for cmd in "eval --dataset-path $D/val" "predict $D/val" "eval --dataset-path $D/val --report $WORK/r-${case%%|*} --fit-temperature $D/train"; do
    # shellcheck disable=SC2086
    run "$FIXRES" $cmd --architecture resnet_tiny --weight-path "$w" --input-size 24
    expect_code 4; expect_err_lines 1; expect_err "$w: ${case#*|}"
  done
done

# Row 12: NUL bytes in a list (find -print0) are refused, exit 3, not one joined path.
printf '%s\0%s\0' "$D/val/class0/000.jpg" "$D/val/class0/001.jpg" >"$WORK/nul.txt"
run "$FIXRES" predict "$WORK/nul.txt" --weight-path "$RUN"
expect_code 3; expect_err_lines 1; expect_err "nul.txt: line 1 holds a NUL byte"
run bash -c "printf '\\0\\0\\n' | '$FIXRES' predict - --weight-path '$RUN'"
expect_code 3; expect_err "the list on standard input: line 1 holds a NUL byte"

# Row 11: a folder holding some of a model's classes (only class1 of class0, class1) is scored
# by the model's indices: its top-1 is class1's row of the whole folder's report, and --report
# works (before: labels taken as the folder's own, top-1 0 %, and --report refused).
run "$FIXRES" eval --weight-path "$HUB" --dataset-path "$D/val" --report "$WORK/full-report"
expect_code 0
mkdir -p "$WORK/only1"; cp -r "$D/val/class1" "$WORK/only1/"
run "$FIXRES" eval --weight-path "$HUB" --dataset-path "$WORK/only1" --report "$WORK/only1-report" \
  --json "$WORK/only1.json"
expect_code 0
"$PY" - "$WORK" <<'PYEOF' || bad "a folder of some of the model's classes"
import csv, json, sys
w = sys.argv[1]
full = {r["name"]: r for r in csv.DictReader(open(f"{w}/full-report/per_class.csv"))}
part = {r["name"]: r for r in csv.DictReader(open(f"{w}/only1-report/per_class.csv"))}
assert list(part) == ["class0", "class1"] and part["class0"]["images"] == "0", part
top1 = json.load(open(f"{w}/only1.json"))["results"][0]["top1"]
assert abs(top1 - float(full["class1"]["top1"])) < 1e-9, (top1, full["class1"])
PYEOF

# Row 6: --labels-csv labels beyond the model's classes are refused at their line, exit 3, not
# 2^31 class names; a label the model lacks is named as such.
mkdir -p "$WORK/flat"; cp "$D"/val/class0/000.jpg "$D"/val/class0/001.jpg "$WORK/flat/"
printf '000.jpg,2147483647\n001.jpg,0\n' >"$WORK/big.csv"
run "$FIXRES" eval --architecture resnet_tiny --weight-path "$WORK/sd.pth" --input-size 24 \
  --dataset-path "$WORK/flat" --labels-csv "$WORK/big.csv"
expect_code 3; expect_err_lines 1; expect_err "big.csv:1: label 2147483647 is not a class of the model \(2 classes: 0 .. 1\)"
printf '000.jpg,5\n' >"$WORK/five.csv"
run "$FIXRES" eval --weight-path "$RUN" --dataset-path "$WORK/flat" --labels-csv "$WORK/five.csv"
expect_code 3; expect_err "five.csv:1: label '5' is not one of the 2 classes"

# Row 4: an image file of 40 GB (sparse) is a bad image, refused before it is read: a row error
# in predict, skipped by eval --skip-bad-images, the others scored.
mkdir -p "$WORK/hugeset/class0" "$WORK/hugeset/class1"
cp "$D"/val/class0/* "$WORK/hugeset/class0/"; cp "$D"/val/class1/* "$WORK/hugeset/class1/"
cp "$D/val/class0/000.jpg" "$WORK/hugeset/class0/huge.jpg"; truncate -s 40G "$WORK/hugeset/class0/huge.jpg"
run "$FIXRES" predict "$WORK/hugeset" --weight-path "$RUN" --results-format jsonl
expect_code 0; expect_err "predicted 8 of 9"
expect_out "huge.jpg: 42949672960 bytes, more than an image file may have \(1024 MiB\)"
run "$FIXRES" eval --weight-path "$RUN" --dataset-path "$WORK/hugeset" --skip-bad-images
expect_code 0; expect_out " 8$"
rm -f "$WORK/hugeset/class0/huge.jpg"

# Row 7: a sweep folder reused for other weights is refused (exit 2, the folder and both weights
# named), nothing in it changed; the same weights resume.
run "$FIXRES" train --imnet-path "$D" --architecture resnet_tiny --workers 1 --input-size 24 \
  --batch 4 --epochs 1 --shared-folder-path "$WORK/runs" --job-id t2 --seed 5
expect_code 0
S=(sweep --imnet-path "$D" --split val --finetune --finetune-iterations 1 --sizes 24,32
  --train-size 24 --out "$WORK/s1" --workers 1 --batch 4)
run "$FIXRES" "${S[@]}" --weight-path "$RUN"
expect_code 0
before=$(find "$WORK/s1" -type f -exec md5sum {} + | sort)
run "$FIXRES" "${S[@]}" --weight-path "$WORK/runs/train/t2"
expect_code 2; expect_err_lines 1
expect_err "--out $WORK/s1 holds a sweep of other weights \(finetune_[0-9]+ fine-tuned $RUN; this sweep: $WORK/runs/train/t2\)"
[ "$(find "$WORK/s1" -type f -exec md5sum {} + | sort)" = "$before" ] || bad "the refused sweep changed its folder"
run "$FIXRES" "${S[@]}" --weight-path "$RUN"
expect_code 0

# Row 13: a size below an architecture's smallest (convnext_demo: 16 px, its unpadded stride)
# is refused before anything runs or is written, exit 2, for every command and size list.
run "$FIXRES" bench eval --input-size 12 --steps 1 --cpu --architecture convnext_demo
expect_code 2; expect_err_lines 1; expect_err "--input-size 12: convnext_demo takes images of at least 16 px"
for args in "export --format timm --out $WORK/c.pth --input-size 8" "eval --dataset-path $D/val --input-size 8,32" "predict $D/val --input-size 15"; do
  # shellcheck disable=SC2086
  run "$FIXRES" $args --architecture convnext_demo --num-classes 2 --weight-path "$WORK/none.pth"
  expect_code 2; expect_err_lines 1; expect_err "convnext_demo takes images of at least 16 px"
done
[ ! -e "$WORK/c.pth" ] || bad "export wrote at a refused size"
# --crop-pct: a fraction in [0.05, 1], for every command that takes it.
for bad in 0 1.5 -0.875 nan abc; do
  run "$FIXRES" predict "$D/val" --weight-path "$RUN" --crop-pct "$bad"
  expect_code 2; expect_err_lines 1; expect_err "--crop-pct"
done
run "$FIXRES" export --weight-path "$RUN" --format timm-hub --crop-pct 0.01 --out "$WORK/hubc"
expect_code 2; expect_err_lines 1; expect_err "--crop-pct"; [ ! -e "$WORK/hubc" ] || bad "hubc written"
# --img-size goes through the image sizes' range (was accepted, then "can't allocate").
run "$FIXRES" eval --dataset-path "$D/val" --architecture vit_demo --img-size 100000
expect_code 2; expect_err_lines 1; expect_err "--img-size: must be an integer in \[8, 4096\].*got '100000'"

# The CSV's columns: min(--topk, classes), also when every image is unreadable.
run "$FIXRES" predict "$L/val/class0/bad"$'\xe9'".pgm" --weight-path "$RUN" --topk 5
expect_code 0; expect_out "^path,top1_index,top1_class,top1_prob,top2_index,top2_class,top2_prob,error$"
run "$FIXRES" predict "$D/val/class0/000.jpg" --weight-path "$RUN" --topk 1000000
expect_code 0; [ "$(head -1 "$OUT" | tr ',' '\n' | wc -l)" -eq 8 ] || bad "--topk 1000000 header"
# launch ... predict to stdout: rank 0's output is the command's result, unprefixed (a valid CSV
# whose rows are the folder's images); the other ranks' lines still say their rank.
run "$FIXRES" launch --nproc-per-node 2 -- predict "$D/val" --weight-path "$RUN" --topk 1
expect_code 0; expect_out "^path,top1_index,top1_class,top1_prob,error$"
grep -q '^\[rank' "$OUT" && bad "launch predict: a rank prefix in the CSV"
"$PY" - "$OUT" <<'PYEOF' || bad "launch predict: stdout is not the folder's CSV"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], encoding="utf-8")))
assert len(rows) == 8 and all(r["top1_class"] in ("class0", "class1") for r in rows), rows
PYEOF
# An export killed mid-write leaves a temporary file: the rerun names it and says why, changing
# nothing (before: "is not empty" alone).
mkdir -p "$WORK/hub2"; : >"$WORK/hub2/.model.safetensors.tmp-0123456789abcdef"
run "$FIXRES" export --weight-path "$RUN" --format timm-hub --out "$WORK/hub2"
expect_code 2; expect_err_lines 1
expect_err "hub2 is not empty: it holds \.model\.safetensors\.tmp-0123456789abcdef \(a write there was interrupted"
[ "$(ls -A "$WORK/hub2")" = ".model.safetensors.tmp-0123456789abcdef" ] || bad "export changed hub2"
# Weights of another architecture without --num-classes: named as such, exit 4 (before: "cannot
# tell the number of classes", exit 2).
run "$FIXRES" export --weight-path "$RUN" --format timm --out "$WORK/tiny.pth"
expect_code 0
run "$FIXRES" predict "$D/val" --weight-path "$WORK/tiny.pth" --architecture convnext_demo
expect_code 4; expect_err_lines 1
expect_err "tiny.pth does not fit convnext_demo: it holds no head.fc.weight \(the classifier of convnext_demo\) but conv1.weight, .*; wrong --architecture\?"
finish
