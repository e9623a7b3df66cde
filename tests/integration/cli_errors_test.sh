#!/usr/bin/env bash
# Exit codes and messages of eval, extract, sweep, eval-softmax and the subcommand dispatch:
# outputs that cannot be written (exit 6, checked before the work), tables printed only once
# their first row is ready, eval-softmax inputs it cannot score (exit 3), SIGINT during eval
# --json (partial results written, exit 130), --config through the binary (a file's values
# checked as the command line's, alone and together, before a run folder is made), output paths
# (never empty, never inside an input or holding one), unknown subcommands, mistyped flags and
# architectures (the nearest names offered).
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 2 --train 4 --val 16 --size 24 \
  >/dev/null || bad "data generation"
run "$FIXRES" train --imnet-path "$D" --architecture resnet_tiny --workers 1 --input-size 24 \
  --batch 4 --epochs 1 --iteration-cap 1 --shared-folder-path "$WORK/runs" --job-id w
expect_code 0
W="$WORK/runs/train/w/checkpoint.pth"
EVAL=(eval --architecture resnet_tiny --weight-path "$W" --workers 1 --batch 4)
PLAIN="$WORK/plain"; echo "a file, not a folder" >"$PLAIN"

# Outputs that cannot be written: exit 6, one line naming the path, before any result.
run "$FIXRES" "${EVAL[@]}" --dataset-path "$D/val" --input-size 24 --json "$PLAIN/eval.json"
expect_code 6; expect_err_lines 1; expect_err "^fixres: error: cannot write --json $PLAIN/eval.json"
[ -s "$OUT" ] && bad "eval printed results before refusing its --json path"
run "$FIXRES" "${EVAL[@]}" --dataset-path "$D/val" --input-size 24 --json "$WORK/no/such/eval.json"
expect_code 6; expect_err_lines 1; expect_err "no/such"
run "$FIXRES" extract --architecture resnet_tiny --weight-path "$W" --dataset-path "$D/val" \
  --input-size 24 --save-path "$PLAIN/npy"
expect_code 6; expect_err_lines 1; expect_err "^fixres: error: cannot create folder $PLAIN/npy"
run "$FIXRES" sweep --architecture resnet_tiny --weight-path "$W" --imnet-path "$D" --split val \
  --sizes 24 --out "$PLAIN/sweep"
expect_code 6; expect_err_lines 1; expect_err "$PLAIN/sweep"
run "$FIXRES" train --imnet-path "$D" --architecture resnet_tiny --workers 1 --input-size 24 \
  --batch 4 --epochs 1 --iteration-cap 1 --shared-folder-path "$PLAIN" --job-id x
expect_code 6; expect_err "^fixres: error: .*$PLAIN"

# A dataset error before the first row: the error line alone, no table header.
mkdir -p "$WORK/broken/a" "$WORK/broken/b"
cp "$D"/val/*/* "$WORK/broken/a/" 2>/dev/null
echo "not an image" >"$WORK/broken/b/0.jpg"
run "$FIXRES" "${EVAL[@]}" --dataset-path "$WORK/broken" --input-size 24
expect_code 3; expect_err_lines 1
[ -s "$OUT" ] && bad "eval printed its table header before the error"
run "$FIXRES" sweep --architecture resnet_tiny --weight-path "$W" --imnet-path "$WORK" \
  --split broken --sizes 24 --workers 1 --out "$WORK/sweep-broken"
expect_code 3
[ -s "$OUT" ] && bad "sweep printed its table header before the error"
run "$FIXRES" "${EVAL[@]}" --dataset-path "$D/val" --imnet-path "$D"
expect_code 2; expect_err_lines 1; expect_err "imnet-path.*dataset-path"

# SIGINT during eval --json: the sizes done so far are written, marked partial, exit 130.
SIZES=$(printf '24,%.0s' $(seq 1 200))24
"$FIXRES" "${EVAL[@]}" --dataset-path "$D/val" --input-size "$SIZES" --json "$WORK/partial.json" \
  >"$WORK/int.out" 2>"$WORK/int.err" &
PID=$!
for _ in $(seq 1 3000); do grep -q '^ *24 ' "$WORK/int.out" 2>/dev/null && break; sleep 0.02; done
kill -INT $PID
wait $PID; CODE=$?; CMD="eval interrupted by SIGINT"
cp "$WORK/int.out" "$OUT"; cp "$WORK/int.err" "$ERR"
expect_code 130; expect_err "partial results written to"
run "$PY" -c "
import json; d = json.load(open('$WORK/partial.json'))
assert d['partial'] is True and d['stopped_by_signal'] == 2, d
assert 1 <= len(d['results']) < 201, len(d['results'])
print(len(d['results']))"
expect_code 0

# eval-softmax: what it cannot score is a data error naming the file and the problem.
run "$PY" - "$WORK/softmax" <<'EOF'
import os, sys, numpy as np
root = sys.argv[1]
sm = np.full((3, 4), 0.25, np.float32)
def case(name, labels, softmax):
    os.makedirs(os.path.join(root, name), exist_ok=True)
    np.save(os.path.join(root, name, "labels.npy"), labels)
    np.save(os.path.join(root, name, "ResNet50_softmax.npy"), softmax)
case("range", np.array([0, 1, 4]), sm)
case("negative", np.array([0, -1, 2]), sm)
case("float", np.array([0.0, 1.0, 2.0]), sm)
nan = sm.copy(); nan[1, 2] = np.nan; case("nan", np.array([0, 1, 2]), nan)
inf = sm.copy(); inf[2, 0] = -np.inf; case("inf", np.array([0, 1, 2]), inf)
case("empty", np.zeros((0,), np.int64), np.zeros((0, 4), np.float32))
case("shape", np.array([0, 1]), sm)
EOF
for c in "range:label 4 at index 2 is out of range \[0, 4\)" "negative:label -1 at index 1" \
  "float:labels must be integers" "nan:value nan at row 1 is not finite" \
  "inf:value -inf at row 2 is not finite" "empty:labels.npy is empty" "shape:does not match"; do
  run "$FIXRES" eval-softmax --save-path "$WORK/softmax/${c%%:*}"
  expect_code 3; expect_err_lines 1; expect_err "^fixres: error: $WORK/softmax/${c%%:*}/.*${c#*:}"
done

# --version v2 reads <arch>_softmax_v2.npy (the reference's second release); v1 the plain name.
# 2 of 4 rows have their label as the arg-max: top-1 50.000.
"$PY" -c "
import numpy as np, os
d = '$WORK/softmax/v2'; os.makedirs(d, exist_ok=True)
np.save(d + '/labels.npy', np.array([0, 1, 2, 3]))
np.save(d + '/PNASNet_softmax_v2.npy', np.eye(4, dtype=np.float32)[[0, 1, 3, 0]])
np.save(d + '/PNASNet_softmax.npy', np.eye(4, dtype=np.float32))"
run "$FIXRES" eval-softmax --save-path "$WORK/softmax/v2" --architecture PNASNet --version v2
expect_code 0; expect_out "^top1 50.000 "
run "$FIXRES" eval-softmax --save-path "$WORK/softmax/v2" --architecture PNASNet
expect_code 0; expect_out "^top1 100.000 "
run "$FIXRES" eval-softmax --save-path "$WORK/softmax/v2" --architecture PNASNet --version v3
expect_code 2; expect_err "v3"

# --config through the binary: applied, the command line wins, mistakes name file and key.
printf 'weight-path = "%s"\ndataset-path = "%s"\ninput-size = 24\nworkers = 1\nbatch = 0\n' \
  "$W" "$D/val" >"$WORK/eval.toml"
run "$FIXRES" eval --architecture resnet_tiny --config "$WORK/eval.toml"
expect_code 2; expect_err_lines 1; expect_err "eval.toml: batch = 0: --batch: must be"
# batch = 0 is a mistake even where --batch replaces it.
run "$FIXRES" eval --architecture resnet_tiny --config "$WORK/eval.toml" --batch 4
expect_code 2; expect_err_lines 1; expect_err "eval.toml: batch = 0: --batch: must be"
sed -i 's/^batch = 0$/batch = 2/' "$WORK/eval.toml"
run "$FIXRES" eval --architecture resnet_tiny --config "$WORK/eval.toml" --batch 4
expect_code 0; expect_out "^ +24 "

# Values of a run, from the command line or --config, are checked on their own and together
# before anything is written: exit 2 naming the flag (and the file and key), no run folder.
TRAIN=(train --imnet-path "$D" --architecture resnet_tiny --workers 1 --input-size 24 --batch 4
  --epochs 1 --iteration-cap 1 --shared-folder-path "$WORK/checked")
no_run_folder() { [ ! -e "$WORK/checked" ] || bad "a run folder was made: $(find "$WORK/checked")"; }
run "$FIXRES" "${TRAIN[@]}" --job-id lr --learning-rate 1e300 --absolute-lr
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: --learning-rate 1e\+300 .*largest float32"
no_run_folder
printf 'learning-rate = 1e300\n' >"$WORK/lr.toml"
run "$FIXRES" finetune "${TRAIN[@]:1}" --weight-path "$W" --job-id lr --config "$WORK/lr.toml"
expect_code 2; expect_err_lines 1; expect_err "lr.toml: learning-rate = 1e300: --learning-rate"
no_run_folder
for kv in "log-every = 0" "epochs = -1" "learning-rate = -1" 'epochs = "two"' "momentum = 0"; do
  printf '%s\nnesterov = true\n' "$kv" >"$WORK/run.toml"
  run "$FIXRES" "${TRAIN[@]}" --job-id cfg --config "$WORK/run.toml"
  expect_code 2; expect_err_lines 1; expect_err "run.toml: (${kv//\"/}|nesterov = true): --"
  no_run_folder
done
printf 'pretrained = "FixResNet50"\n' >"$WORK/pre.toml"
run "$FIXRES" "${TRAIN[@]}" --job-id pre --config "$WORK/pre.toml"
expect_code 2; expect_err_lines 1
expect_err "pre.toml: pretrained = FixResNet50: --pretrained: FixResNet50 is a ResNet50, not --architecture resnet_tiny"
no_run_folder
run "$FIXRES" "${TRAIN[@]}" --job-id ''
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: --job-id '' is not a valid job id: it is empty"
no_run_folder
run env FIXRES_JOB_ID= "$FIXRES" "${TRAIN[@]}"
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: FIXRES_JOB_ID '' is not a valid job id"
no_run_folder

# Output paths: never empty, never inside an input dataset, never holding one.
before=$(find "$D" | sort | md5sum)
run "$FIXRES" shard --dataset-path "$D/train" --out "$D/train/new"
expect_code 2; expect_err_lines 1
expect_err "^fixres: error: --out $D/train/new is inside --dataset-path $D/train"
run "$FIXRES" shard --dataset-path "$D/train" --out "$D"
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: --dataset-path $D/train is inside --out $D"
run "$FIXRES" calibrate --architecture resnet_tiny --weight-path "$W" --dataset-path "$D" \
  --out "$D/val/w.pth"
expect_code 2; expect_err_lines 1; expect_err "--out $D/val/w.pth is inside --dataset-path $D"
[ "$(find "$D" | sort | md5sum)" = "$before" ] || bad "the dataset was changed"
for cmd in "shard --dataset-path $D/train --out" "export --weight-path $W --out" \
  "import --out" "plot $WORK/runs/train/w --out" "extract --weight-path $W --dataset-path $D/val --save-path"; do
  run "$FIXRES" $cmd ''
  expect_code 2; expect_err_lines 1; expect_err "^fixres: error: --(out|save-path): must not be empty"
done
printf '[eval]\nbogus = 1\n' >"$WORK/bogus.ini"
run "$FIXRES" eval --config "$WORK/bogus.ini"
expect_code 2; expect_err_lines 1; expect_err "bogus.ini: unknown key 'bogus'"
run "$FIXRES" eval --config "$WORK/missing.toml"
expect_code 2; expect_err_lines 1; expect_err "cannot read config file .*missing.toml"

# Subcommands: an unknown one is named, with the valid ones.
run "$FIXRES" nosuchsub
expect_code 2; expect_err_lines 1
expect_err "^fixres: error: unknown subcommand 'nosuchsub' of fixres \(one of: train, finetune, eval"
run "$FIXRES" bench nosuch
expect_code 2; expect_err "unknown subcommand 'nosuch' of fixres bench \(one of: train, eval"
run "$FIXRES" --threads 2
expect_code 2; expect_err "fixres needs a subcommand \(one of: "
# A mistyped flag: named with the nearest of the command's own, pointing at its help; a name
# nowhere near any flag is named alone; an unknown architecture with the three nearest names.
run "$FIXRES" train --imnet-path "$D" --learning_rate 0.1
expect_code 2; expect_err_lines 1
expect_err "^fixres: error: fixres train: unknown flag --learning_rate \(did you mean --learning-rate\?\); see 'fixres train --help'$"
run "$FIXRES" bench eval --batchsize=4
expect_code 2; expect_err "fixres bench eval: unknown flag --batchsize \(did you mean --batch"
run "$FIXRES" predict "$D/val" --weight-path "$W" --zzzzzzzzzz
expect_code 2; expect_err "^fixres: error: fixres predict: unknown flag --zzzzzzzzzz; see 'fixres predict --help'$"
# The ecosystem's spellings where the meaning is fixres's: --model, --batch-size / -b, --output;
# shown beside the flag in `fixres settings`.
run "$FIXRES" train --imnet-path "$D" --model resnet_tiny --workers 1 --input-size 24 \
  --batch-size 2 --epochs 1 --iteration-cap 1 --shared-folder-path "$WORK/runs" --job-id alias
expect_code 0
# The log's first line says what runs where: the folder, model and size, data, batch, epochs.
expect_err "^train -> $WORK/runs/train/alias: resnet_tiny at 24 px; [0-9]+ training images in 2 classes, [0-9]+ val images at 24 px; batch 2, 1 epoch$"
[ "$(head -1 "$ERR" | cut -c1-8)" = "train ->" ] || bad "the header is not the log's first line"
"$PY" -c "import json,sys; c=json.load(open('$WORK/runs/train/alias/config.json')); sys.exit(0 if (c['architecture'], c['batch']) == ('resnet_tiny', 2) else 1)" ||
  bad "--model / --batch-size did not set the architecture and batch"
run "$FIXRES" predict "$D/val" --weight-path "$WORK/runs/train/alias" -b 3 --output "$WORK/alias.csv"
expect_code 0; expect_file "$WORK/alias.csv"
run "$FIXRES" settings
expect_code 0; expect_out '^\| `batch` \| `--batch` \(also `--batch-size`, `-b`\)'
# A bare weight file records no preprocessing: what is assumed is said in one line, unless given.
run "$FIXRES" predict "$D/val" --architecture resnet_tiny --weight-path "$W" --topk 1
expect_code 0
expect_err "records no preprocessing \(a weight file, not a model folder\): resnet_tiny at 224 px \(the default\), crop 0.875 \(FixRes's\), mean 0.485,0.456,0.406 std 0.229,0.224,0.225"
run "$FIXRES" predict "$D/val" --architecture resnet_tiny --weight-path "$W" --topk 1 --input-size 24
expect_code 0; grep -q "records no preprocessing" "$ERR" && bad "the assumption was said though --input-size was given"
run "$FIXRES" train --imnet-path "$D" --lr 0.1
expect_code 2; expect_err_lines 1; expect_err "unknown flag --lr: fixres's --learning-rate is FixRes's base rate"
run "$FIXRES" eval --architecture resnet_tny --weight-path "$W" --dataset-path "$D/val"
expect_code 2; expect_err_lines 1; expect_err "unknown architecture 'resnet_tny' \(did you mean resnet_tiny, "
# A bucket under one byte is refused by its row, naming the flag, before any work.
run "$FIXRES" bench train --bucket-mb 1e-45
expect_code 2; expect_err_lines 1; expect_err "--bucket-mb.*1e-45"
# --license goes into ONNX and JSON metadata, which must be UTF-8.
run "$FIXRES" export --architecture resnet_tiny --num-classes 3 --weight-path /dev/null \
  --format onnx --out "$WORK/l.onnx" --license "$(printf 'mit\xff')"
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: --license must be UTF-8 text"
[ -e "$WORK/l.onnx" ] && bad "an export with a non-UTF-8 --license wrote its file"
finish
