#!/usr/bin/env bash
# `fixres eval --report`, `--fit-temperature`, `--labels-csv` and the class-order check:
# 1. the report of a 5-class run (classes 3 and 4 look like 0 and 1, so there are confusions)
#    against numpy/torch computed on `fixres extract`'s logits of the same images
#    (eval_report_check.py: per-class accuracy, confusion matrix and pairs, Guo et al.'s ECE,
#    the temperature LBFGS finds on the held-out set); the table equals the plain eval's; two
#    ranks give the same matrix up to near ties; several sizes give one sub-folder each.
# 2. --labels-csv: the same images in a flat folder, labelled by an ImageNet-style
#    LOC_val_solution CSV (ImageId without extension, synset first) or by class indices, give the
#    folder's confusion matrix; an unknown label and a missing image are one line, exit 3.
# 3. the class-order check: a run that reached 100 % evaluated on a folder whose class folders
#    sort differently fails (exit 3) naming the first mismatching classes; with the same names
#    over swapped contents it names the confusions; a bare weight file (no record) is no error.
# 4. bad usage: --fit-temperature without --report, a report inside the dataset, --labels-csv
#    without --dataset-path: exit 2.
set -u
source "$(dirname "$0")/lib.sh" "$@"
REF="$SRC/tests/reference"
D5="$WORK/d5"
"$PY" "$REF/make_image_folder.py" "$D5" --classes 5 --train 12 --val 8 --size 40 >/dev/null || bad "data"
run "$FIXRES" train --imnet-path "$D5" --architecture resnet_tiny --workers 1 --input-size 32 \
  --batch 8 --epochs 4 --learning-rate 0.05 --shared-folder-path "$WORK/runs" --job-id r5
expect_code 0
R5="$WORK/runs/train/r5"

# --- 1. the report against the reference --------------------------------------------------------
run "$FIXRES" eval --weight-path "$R5" --dataset-path "$D5/val" --input-size 40 --workers 1 \
  --report "$WORK/rep" --fit-temperature "$D5/train"
expect_code 0; expect_err "report at 40 px -> .*rep: ECE .*temperature .*fitted on 60 held-out images"
cp "$OUT" "$WORK/table-report"
for f in report.json per_class.csv confusion.csv confusions.csv confusion.svg reliability.csv reliability.svg; do
  expect_file "$WORK/rep/$f"
done
run "$FIXRES" extract --weight-path "$R5" --dataset-path "$D5/val" --save-path "$WORK/npy" --input-size 40 --workers 1
expect_code 0
run "$FIXRES" extract --weight-path "$R5" --dataset-path "$D5/train" --save-path "$WORK/npy-held" --input-size 40 --workers 1
expect_code 0
run "$PY" "$REF/eval_report_check.py" "$WORK/rep" "$WORK/npy" resnet_tiny "$WORK/npy-held"
expect_code 0; expect_out "report of 40 images, 5 classes equal to the reference"; cat "$OUT"
# Every label inside the picture, measured with a real font (the legend's "T = 1.29 (ECE 21.5 %)"
# lost its last characters at the right edge).
run "$PY" "$REF/svg_text_fits.py" "$WORK/rep/reliability.svg" "$WORK/rep/confusion.svg"
if [ "$CODE" -eq 77 ]; then skip_check fonts "SVG label widths: $(cat "$OUT")"; else expect_code 0; fi
grep -q '^0,class0,8,' "$WORK/rep/per_class.csv" || bad "class names in per_class.csv"
# The table of a plain eval: the same top-1, top-5 and image count.
run "$FIXRES" eval --weight-path "$R5" --dataset-path "$D5/val" --input-size 40 --workers 1
expect_code 0
diff <(awk '{print $1, $2, $3, $5}' "$WORK/table-report") <(awk '{print $1, $2, $3, $5}' "$OUT") >/dev/null ||
  bad "the report's table differs from the plain eval's"
# Two ranks evaluate 20 images each, one process all 40 in one batch: the logits differ by float
# rounding, so the two-rank matrix must be the one of the logits extract wrote (the same batch of
# 40 as the one-process report) up to near ties (near_ties.py: an image may move only where its
# two largest logits are within 1e-4 relative, 100x the rounding). per_class.csv and
# confusions.csv follow from the matrix (the top-5 of 5 classes is every image): byte-equal where
# the matrices are.
run "$FIXRES" launch --nproc-per-node 2 -- eval --weight-path "$R5" --dataset-path "$D5/val" \
  --input-size 40 --workers 1 --report "$WORK/rep2"
expect_code 0
run "$PY" "$REF/near_ties.py" confusion "$WORK/npy" resnet_tiny "$WORK/rep2/confusion.csv"
expect_code 0
if cmp -s "$WORK/rep/confusion.csv" "$WORK/rep2/confusion.csv"; then
  for f in per_class.csv confusions.csv; do
    cmp -s "$WORK/rep/$f" "$WORK/rep2/$f" || bad "two ranks give the same matrix but another $f"
  done
fi
run "$FIXRES" eval --weight-path "$R5" --dataset-path "$D5/val" --input-size 32,40 --workers 1 --report "$WORK/rep3"
expect_code 0
expect_file "$WORK/rep3/32px/report.json"; expect_file "$WORK/rep3/40px/confusion.svg"
cmp -s "$WORK/rep/confusion.csv" "$WORK/rep3/40px/confusion.csv" || bad "the 40 px sub-folder differs"

# --- 2. --labels-csv --------------------------------------------------------------------------
FLAT="$WORK/flat"
mkdir -p "$FLAT"
{
  echo "ImageId,PredictionString"
  for f in "$D5"/val/*/*; do
    c=$(basename "$(dirname "$f")"); b=$(basename "$f"); id="${c}_${b%.*}"
    cp "$f" "$FLAT/${id}.${b##*.}"
    echo "$id,$c 1 2 30 40"
  done
} >"$WORK/loc.csv"
run "$FIXRES" eval --weight-path "$R5" --dataset-path "$FLAT" --labels-csv "$WORK/loc.csv" \
  --input-size 40 --workers 1 --report "$WORK/repc"
expect_code 0
cmp -s "$WORK/rep/confusion.csv" "$WORK/repc/confusion.csv" || bad "LOC-style labels give another confusion matrix"
cmp -s "$WORK/rep/per_class.csv" "$WORK/repc/per_class.csv" || bad "LOC-style labels give other per-class rows"
{
  echo "file,label"
  for f in "$FLAT"/*; do b=$(basename "$f"); echo "$b,${b:5:1}"; done
} >"$WORK/indices.csv"
run "$FIXRES" eval --weight-path "$R5" --dataset-path "$FLAT" --labels-csv "$WORK/indices.csv" \
  --input-size 40 --workers 1 --report "$WORK/repi"
expect_code 0
cmp -s "$WORK/rep/confusion.csv" "$WORK/repi/confusion.csv" || bad "index labels give another confusion matrix"
sed '3s/,class[0-9] /,class9 /' "$WORK/loc.csv" >"$WORK/bad-label.csv"
run "$FIXRES" eval --weight-path "$R5" --dataset-path "$FLAT" --labels-csv "$WORK/bad-label.csv" --input-size 40
expect_code 3; expect_err "bad-label.csv:3: label 'class9' is not one of the 5 classes"; expect_err_lines 1
sed '4s/^[^,]*,/nowhere,/' "$WORK/loc.csv" >"$WORK/bad-file.csv"
run "$FIXRES" eval --weight-path "$R5" --dataset-path "$FLAT" --labels-csv "$WORK/bad-file.csv" --input-size 40
expect_code 3; expect_err "bad-file.csv:4: no image 'nowhere' in"; expect_err_lines 1

# --- 3. the class-order check -------------------------------------------------------------------
D3="$WORK/d3"
"$PY" "$REF/make_image_folder.py" "$D3" --classes 3 --train 16 --val 6 --size 40 >/dev/null || bad "data"
run "$FIXRES" train --imnet-path "$D3" --architecture resnet_tiny --workers 1 --input-size 32 \
  --batch 8 --epochs 8 --learning-rate 0.05 --shared-folder-path "$WORK/runs" --job-id r3
expect_code 0
R3="$WORK/runs/train/r3"
grep -q '"top1":100' "$R3/metrics.jsonl" || bad "the 3-class run did not reach 100 % (the check needs a high record)"
cp -r "$D3/val" "$WORK/renamed"
mv "$WORK/renamed/class0" "$WORK/renamed/zz_class0"
run "$FIXRES" eval --weight-path "$R3" --dataset-path "$WORK/renamed" --input-size 32 --workers 1
expect_code 3
expect_err "near chance \(33.33 % with 3 classes\) although 100.00 % is the validation top-1 in .*metrics.jsonl: the class order may not match the weights'; first mismatching classes: class 0 is 'class0' in the weights but 'class1' in the dataset"
expect_out "32 +0.000"  # the table is printed before
cp -r "$D3/val" "$WORK/swapped"
(cd "$WORK/swapped" && mv class0 tmp && mv class1 class0 && mv class2 class1 && mv tmp class2)
# The same names in the same order: the data may differ, the mapping is not shown wrong, so a
# warning (exit 0), with what the report shows.
run "$FIXRES" eval --weight-path "$R3" --dataset-path "$WORK/swapped" --input-size 32 --workers 1 --report "$WORK/rep-swapped"
expect_code 0
expect_err "^warning: top-1 0.00 % of 18 images is near chance.*same class names in the same order.*most confused: 'class0' predicted as 'class1' \(6 of 6\)"
expect_file "$WORK/rep-swapped/report.json"
run "$FIXRES" eval --weight-path "$R3/checkpoint.pth" --architecture resnet_tiny --dataset-path "$WORK/swapped" --input-size 32 --workers 1
expect_code 0
# Two images of one of the three classes: no test can show anything at that size (P = 1/9 of
# none right at halfway to the record), so nothing is said, whatever the names.
mkdir -p "$WORK/two/class1"
cp "$(ls "$D3/val/class1"/* | head -1)" "$(ls "$D3/val/class1"/* | tail -1)" "$WORK/two/class1/"
run "$FIXRES" eval --weight-path "$R3" --dataset-path "$WORK/two" --input-size 32 --workers 1 --report "$WORK/rep-two"
expect_code 0
grep -q "near chance" "$ERR" && bad "2 images set off the class-order check"
expect_file "$WORK/rep-two/report.json"

# --- 4. bad usage -------------------------------------------------------------------------------
run "$FIXRES" eval --weight-path "$R5" --dataset-path "$D5/val" --fit-temperature "$D5/train"
expect_code 2; expect_err "fit-temperature"
run "$FIXRES" eval --weight-path "$R5" --dataset-path "$D5/val" --report "$D5/val/report"
expect_code 2; expect_err "--report"
run "$FIXRES" eval --weight-path "$R5" --imnet-path "$D5" --labels-csv "$WORK/loc.csv"
expect_code 2; expect_err "labels-csv"
finish
