#!/usr/bin/env bash
# `fixres sweep` keeps training's promises (docs/reliability.md, "Round 5"), each class checked:
# 1. outputs over inputs: --out equal to, inside or holding anything the sweep reads (the weights'
#    run folder, the dataset root, the split, an --eval-set folder) exits 2 naming both, and
#    nothing is written (the run's config.json unchanged, no finetune_* in the data).
# 2. one sweep per folder: a held folder lock refuses the second sweep (exit 2), nothing written.
# 3. every cell validated before work: a size under the architecture's minimum (convnext_demo),
#    a size off a ViT's patch grid with --finetune, a --latency-batch whose input cannot fit in
#    memory: exit 2 naming the flag and value, no sweep folder made.
# 4. default sizes within what every command takes: a 4 px-patch ViT trained at 8 px sweeps
#    8 and 12 (never 4), and predict reads the folder it writes.
# 5. signals: SIGINT / SIGTERM during --finetune stop at the next step, save, one line, exit
#    130 / 143, no temporaries, no sweep.json; rerunning with another --finetune-epochs is refused
#    naming the setting; the same command resumes and completes.
# 6. bad samples: an unreadable image in train/ exits 3 naming it; with --skip-bad-images the
#    sweep completes and names it in its warning.
# 7. the folder is self-contained: config.json names its weights by a relative path inside it; a
#    copy predicts the same rows after the original is moved away.
# 8. the train size is the run folder's (24 px here), in sweep.json and the folder's input_size.
set -u
source "$(dirname "$0")/lib.sh" "$@"
REF="$SRC/tests/reference"
D="$WORK/data"
"$PY" "$REF/make_image_folder.py" "$D" --classes 3 --train 8 --val 6 --size 48 >/dev/null || bad "data"
run "$FIXRES" train --imnet-path "$D" --architecture resnet_tiny --workers 1 --input-size 24 \
  --batch 4 --epochs 1 --shared-folder-path "$WORK/runs" --job-id r
expect_code 0
RUN="$WORK/runs/train/r"
SW=(sweep --imnet-path "$D" --split val --weight-path "$RUN" --batch 6 --workers 1)
nothing_new() {  # nothing_new WHAT: the data and the run folder hold only what they held before
  [ "$(cd "$WORK" && find data runs | sort | md5sum)" = "$TREE" ] || bad "$1 wrote into an input"
  [ "$(md5sum <"$RUN/config.json")" = "$CONFIG" ] || bad "$1 changed the run's config.json"
}
TREE=$(cd "$WORK" && find data runs | sort | md5sum)
CONFIG=$(md5sum <"$RUN/config.json")

# --- 1. outputs over inputs ----------------------------------------------------------------------
for out in "$RUN" "$RUN/sweep" "$D" "$D/val" "$D/val/class0" "$WORK"; do
  run "$FIXRES" "${SW[@]}" --out "$out" --latency-batches 0
  expect_code 2; expect_err_lines 1
  expect_err "^fixres: error: --(out|weight-path|imnet-path) .* (is|inside) .*: an output must not"
  nothing_new "--out $out"
done
cp -r "$D/val" "$WORK/shifted"
run "$FIXRES" "${SW[@]}" --out "$WORK/shifted/s" --eval-set noisy="$WORK/shifted" --latency-batches 0
expect_code 2; expect_err_lines 1; expect_err "--out .* is inside --eval-set noisy "
[ -e "$WORK/shifted/s" ] && bad "a sweep into its --eval-set wrote there"
run "$FIXRES" "${SW[@]}" --out "$WORK/sx" --eval-set bad="$WORK/missing" --latency-batches 0
expect_code 3; expect_err_lines 1; expect_err "^fixres: error: --eval-set bad=.*missing: "
[ -e "$WORK/sx" ] && bad "a sweep with a missing --eval-set made its folder"

# --- 2. one sweep per folder ---------------------------------------------------------------------
mkdir -p "$WORK/held"
"$PY" -c "import fcntl, sys, time
f = open(sys.argv[1], 'w'); fcntl.flock(f, fcntl.LOCK_EX); open(sys.argv[1] + '.ready', 'w')
time.sleep(120)" "$WORK/held/.lock" >/dev/null 2>&1 &
HOLDER=$!
for _ in $(seq 100); do [ -e "$WORK/held/.lock.ready" ] && break; sleep 0.1; done
run "$FIXRES" "${SW[@]}" --out "$WORK/held" --latency-batches 0
expect_code 2; expect_err_lines 1; expect_err "held|in use"
[ -e "$WORK/held/sweep.json" ] && bad "a sweep into a held folder wrote sweep.json"
kill "$HOLDER" 2>/dev/null; wait "$HOLDER" 2>/dev/null

# --- 3. every cell validated before work ---------------------------------------------------------
run "$FIXRES" "${SW[@]}" --architecture convnext_demo --sizes 32,40,8 --out "$WORK/s3a"
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: --sizes 8: convnext_demo takes images of at least"
run "$FIXRES" "${SW[@]}" --architecture vit_demo --finetune --sizes 32,34 --out "$WORK/s3b"
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: --sizes 34: vit_demo takes images whose sides are multiples of its patch size 4"
run "$FIXRES" "${SW[@]}" --latency-batch 1048576 --out "$WORK/s3c"
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: --latency-batch 1048576 is too large to time"
for s in s3a s3b s3c; do [ -e "$WORK/$s" ] && bad "a refused sweep made $s"; done

# --- 4. default sizes within range ----------------------------------------------------------------
run "$FIXRES" train --imnet-path "$D" --architecture vit_demo --workers 1 --input-size 8 \
  --batch 4 --epochs 1 --shared-folder-path "$WORK/runs" --job-id v8
expect_code 0
run "$FIXRES" sweep --imnet-path "$D" --split val --weight-path "$WORK/runs/train/v8" --batch 6 \
  --workers 1 --latency-batches 0 --out "$WORK/s4"
expect_code 0
"$PY" -c "
import json, sys; s = json.load(open('$WORK/s4/sweep.json'))
sys.exit(0 if [r['size'] for r in s['rows']] == [8, 12] and s['train_size'] == 8 else 1)" ||
  bad "a ViT trained at 8 px is not swept at 8 and 12 px: $(cat "$WORK/s4/sweep.json")"
run "$FIXRES" predict --weight-path "$WORK/s4" "$D/val/class0"
expect_code 0; expect_err "^predicted 6 of 6 images at (8|12) px$"

# --- 5. signals, and the settings a rerun must keep ----------------------------------------------
FT=(--finetune --sizes 16,24 --latency-batches 0 --out "$WORK/s5")
for sig in INT TERM; do
  rm -rf "$WORK/s5"
  "$FIXRES" "${SW[@]}" "${FT[@]}" --finetune-epochs 100000 >"$OUT" 2>"$ERR" &
  pid=$!
  wait_steps "$WORK/s5/finetune_16" 3 || bad "no fine-tuning steps within 120 s"
  kill -"$sig" "$pid"
  wait_code "$pid" 60
  want=$([ "$sig" = INT ] && echo 130 || echo 143)
  [ "$c" = "$want" ] || bad "SIG$sig during sweep --finetune: exit $c, expected $want"
  expect_err "^sweep stopped by SIG$sig after [0-9]+ cell\(s\): nothing written but the fine-tuning checkpoints; rerun the same command to resume$"
  expect_file "$WORK/s5/finetune_16/checkpoint.pth"
  [ -e "$WORK/s5/sweep.json" ] && bad "a stopped sweep wrote sweep.json"
  [ -z "$(find "$WORK/s5" -name '*.tmp-*')" ] || bad "a stopped sweep left temporaries: $(find "$WORK/s5" -name '*.tmp-*')"
done
run "$FIXRES" "${SW[@]}" "${FT[@]}" --finetune-epochs 2
expect_code 2; expect_err_lines 1
expect_err "^fixres: error: --out .*/s5/finetune_16 was fine-tuned with other settings \(epochs: 100000 -> 2\)"
[ -e "$WORK/s5/finetune_24" ] && bad "a refused rerun started the next size"
rm -rf "$WORK/s5"
run "$FIXRES" "${SW[@]}" "${FT[@]}" --finetune-iterations 2
expect_code 0
run "$FIXRES" "${SW[@]}" "${FT[@]}" --finetune-iterations 2  # the same command again: resumes
expect_code 0

# --- 6. bad samples -------------------------------------------------------------------------------
cp -r "$D" "$WORK/dbad"
head -c 100 /dev/urandom >"$WORK/dbad/train/class1/000.jpg"
BADSW=(sweep --imnet-path "$WORK/dbad" --split val --weight-path "$RUN" --batch 6 --workers 1
  --finetune --sizes 16 --latency-batches 0)
run "$FIXRES" "${BADSW[@]}" --out "$WORK/s6a"
expect_code 3; expect_err "^fixres: error: .*dbad/train/class1/000.jpg: cannot identify image file"
run "$FIXRES" "${BADSW[@]}" --out "$WORK/s6b" --skip-bad-images
expect_code 0; expect_err "skipping unreadable image.*dbad/train/class1/000.jpg"
expect_file "$WORK/s6b/sweep.json"

# --- 7. a self-contained folder, 8. the run's train size -------------------------------------------
run "$FIXRES" "${SW[@]}" --sizes 16,24,32 --latency-batches 0 --out "$WORK/s7"
expect_code 0
"$PY" - "$WORK/s7" "$RUN/checkpoint.pth" <<'EOF' || bad "the sweep folder's weights or train size"
import json, os, sys
folder, source = sys.argv[1], sys.argv[2]
cfg = json.load(open(os.path.join(folder, "config.json")))
w = cfg["fixres"]["weights"]
assert not os.path.isabs(w) and not w.startswith(".."), w
assert open(os.path.join(folder, w), "rb").read() == open(source, "rb").read(), w
sweep = json.load(open(os.path.join(folder, "sweep.json")))
assert sweep["train_size"] == 24, sweep["train_size"]
assert cfg["pretrained_cfg"]["input_size"] == [3, 24, 24], cfg["pretrained_cfg"]
assert sweep["chosen_weights"] == w, (sweep["chosen_weights"], w)
EOF
run "$FIXRES" predict --weight-path "$WORK/s7" "$D/val" --out "$WORK/p1.csv"
expect_code 0
cp -r "$WORK/s7" "$WORK/s7copy"
mv "$WORK/s7" "$WORK/s7moved"
run "$FIXRES" predict --weight-path "$WORK/s7copy" "$D/val" --out "$WORK/p2.csv"
expect_code 0
run "$PY" "$REF/same_predictions.py" "$WORK/p1.csv" "$WORK/p2.csv"
expect_code 0
finish
