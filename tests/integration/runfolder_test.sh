#!/usr/bin/env bash
# A run folder belongs to one run at a time: a second run on it (same job id and shared folder,
# through a symlink or another relative path, 2 ranks, sweep's fine-tuning folders) exits 2
# naming the holder's pid and writes nothing; the lock dies with its holder (kill -9); stale
# temporary files of interrupted writes are removed at start, a live run's never. Job ids are one
# safe path component, from the flag or the environment (FIXRES_JOB_ID, SLURM_JOB_ID,
# TORCHELASTIC_RUN_ID, --launch-job-id): anything else exits 2 before anything is written.
set -u
source "$(dirname "$0")/lib.sh" "$@"
FIXRES_ABS="$(cd "$(dirname "$FIXRES")" && pwd)/$(basename "$FIXRES")"
WORK="$(cd "$WORK" && pwd)"
OUT="$WORK/.out"; ERR="$WORK/.err"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 100 --val 4 --size 24 >/dev/null \
  || bad "data generation"
RUNS="$WORK/runs"
TRAIN=(train --imnet-path "$D" --architecture resnet_tiny --workers 1 --log-every 1 --input-size 24
  --sampler distributed --seed 5)
LONG=("${TRAIN[@]}" --batch 2 --epochs 1000 --shared-folder-path "$RUNS")
STALE=.checkpoint.pth.tmp-0123456789abcdef

# Waits (up to 120 s) until the lock file of run folder $1 names pid $2.
wait_lock() {
  for _ in $(seq 1 1200); do
    [ "$(cut -d' ' -f1 "$1/.lock" 2>/dev/null)" = "$2" ] && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
# Waits (up to 120 s) until run folder $1 has a training step in its metrics.
wait_step() {
  for _ in $(seq 1 1200); do
    grep -q '"loss"' "$1/metrics.jsonl" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
# The one error line of a refused second run: exit 2, naming the holder's pid.
expect_locked() {  # pid
  expect_code 2; expect_err_lines 1
  expect_err "^fixres: error: run folder .* is in use by another run \(pid $1 on host "
}

# Weights for the fine-tuning runs below.
run "$FIXRES" "${TRAIN[@]}" --epochs 1 --iteration-cap 1 --shared-folder-path "$RUNS" --job-id w
expect_code 0
W="$RUNS/train/w/checkpoint.pth"

# 1. Run A holds runs/train/job1. The stale temporary file of an interrupted write (80 MB in the
# report; small here) is removed at start, other files are kept.
A_DIR="$RUNS/train/job1"
mkdir -p "$A_DIR"
head -c 1000000 /dev/zero >"$A_DIR/$STALE"
echo keep >"$A_DIR/.notes"
"$FIXRES" "${LONG[@]}" --job-id job1 >"$WORK/a.out" 2>"$WORK/a.err" &
A=$!
wait_lock "$A_DIR" $A || bad "run A never took its lock"
wait_step "$A_DIR" || bad "run A never trained"
[ -e "$A_DIR/$STALE" ] && bad "the stale temporary file was not removed"
grep -q "removed .*$STALE" "$WORK/a.err" || bad "the removal of the stale file was not reported"
[ -e "$A_DIR/.notes" ] || bad "a file that is not a temporary was removed"

# 2. A second run on A's folder: exit 2 naming A's pid, and nothing of A's touched: its config,
# its metrics, a temporary file a live writer could own.
LIVE=.checkpoint.pth.tmp-fedcba9876543210
echo live >"$A_DIR/$LIVE"
sum_before=$(md5sum "$A_DIR/config.json" | cut -d' ' -f1)
run "$FIXRES" "${TRAIN[@]}" --epochs 2 --batch 4 --shared-folder-path "$RUNS" --job-id job1
expect_locked $A
[ -e "$A_DIR/$LIVE" ] || bad "a second run removed a temporary file of the live run"
[ "$(md5sum "$A_DIR/config.json" | cut -d' ' -f1)" = "$sum_before" ] || bad "a second run rewrote config.json"
grep -q '"batch":4\|"batch": 4' "$A_DIR/config.json" && bad "config.json holds the second run's flags"
# The same folder through a symlink, a relative path, a path with . and ..
ln -s "$RUNS" "$WORK/link"
run "$FIXRES" "${TRAIN[@]}" --epochs 1 --shared-folder-path "$WORK/link" --job-id job1
expect_locked $A
CMD="(in $WORK) relative --shared-folder-path"
(cd "$WORK" && "$FIXRES_ABS" "${TRAIN[@]}" --epochs 1 --shared-folder-path runs --job-id job1) >"$OUT" 2>"$ERR"
CODE=$?; expect_locked $A
run "$FIXRES" "${TRAIN[@]}" --epochs 1 --shared-folder-path "$WORK/./data/../runs/" --job-id job1
expect_locked $A
# Two ranks: every rank leaves with exit 2 (none waits for the others), rank 0 names the pid.
run "$FIXRES" launch --nproc-per-node 2 -- "${TRAIN[@]}" --epochs 1 --shared-folder-path "$RUNS" --job-id job1
expect_code 2
expect_err "^\[rank 0\] fixres: error: run folder .* is in use by another run \(pid $A "
expect_err "^\[rank 1\] fixres: error: .*run folder"
# finetune with the same job id uses runs/finetune/job1: no conflict.
run "$FIXRES" finetune --imnet-path "$D" --architecture resnet_tiny --workers 1 --input-size 24 \
  --batch 2 --epochs 1 --iteration-cap 1 --weight-path "$W" --shared-folder-path "$RUNS" --job-id job1
expect_code 0

# 3. kill -9 of A leaves no stale lock: the next run on the folder takes it (and then stops on
# SIGTERM with a checkpoint, exit 143).
kill -0 $A 2>/dev/null || bad "run A ended before it was killed"
kill -9 $A; wait $A 2>/dev/null
"$FIXRES" "${LONG[@]}" --job-id job1 >"$WORK/c.out" 2>"$WORK/c.err" &
C=$!
wait_lock "$A_DIR" $C || { bad "the run after kill -9 did not get the lock"; tail -3 "$WORK/c.err"; }
[ -e "$A_DIR/$LIVE" ] && bad "the dead run's temporary file was not removed"
wait_step "$A_DIR"
kill -TERM $C
wait_code $C 120
[ "$c" = 143 ] || { bad "SIGTERM: exit $c, expected 143"; tail -3 "$WORK/c.err"; }

# 4. sweep's fine-tuning folders are locked too (here by another process through flock(1)).
SW="$WORK/sweep"
SWEEP=(sweep --imnet-path "$D" --split val --architecture resnet_tiny --weight-path "$W" --sizes 24
  --finetune --finetune-iterations 1 --batch 2 --workers 1 --out "$SW")
mkdir -p "$SW/finetune_24"
echo "4242 otherhost" >"$SW/finetune_24/.lock"
head -c 1000 /dev/zero >"$SW/finetune_24/$STALE"
flock "$SW/finetune_24/.lock" sleep 600 &
HOLDER=$!
for _ in $(seq 1 600); do flock -n "$SW/finetune_24/.lock" true || break; sleep 0.05; done
run "$FIXRES" "${SWEEP[@]}"
expect_code 2; expect_err "^fixres: error: run folder .*finetune_24 is in use by another run \(pid 4242 on host otherhost"
[ -e "$SW/finetune_24/$STALE" ] || bad "sweep removed a temporary file in a locked folder"
pkill -P $HOLDER sleep; wait $HOLDER 2>/dev/null  # the lock goes with flock and its sleep
run "$FIXRES" "${SWEEP[@]}"
expect_code 0; expect_file "$SW/finetune_24/checkpoint.pth"
[ -e "$SW/finetune_24/$STALE" ] && bad "sweep left the stale temporary file"

# 5. Job ids: one path component of safe characters, from every source; nothing written.
S="$WORK/shared/a"
mkdir -p "$S" "$WORK/victim"
cp "$W" "$WORK/victim/checkpoint.pth"
for id in ../../victim .. . a/b .hidden "a b" "$(printf 'x%.0s' $(seq 1 129))"; do
  run "$FIXRES" "${TRAIN[@]}" --epochs 1 --shared-folder-path "$S" --job-id "$id"
  expect_code 2; expect_err_lines 1; expect_err "^fixres: error: --job-id '.*' is not a valid job id"
  grep -qF -- "'$id'" "$ERR" || bad "the message does not name the job id '$id'"
done
run "$FIXRES" "${TRAIN[@]}" --epochs 1 --shared-folder-path "$S" --job-id=-rf
expect_code 2; expect_err "^fixres: error: --job-id '-rf' is not a valid job id"
for var in FIXRES_JOB_ID SLURM_JOB_ID TORCHELASTIC_RUN_ID; do
  case $var in
    SLURM_JOB_ID) envs=(SLURM_PROCID=0 SLURM_NTASKS=1) ;;
    TORCHELASTIC_RUN_ID) envs=(RANK=0 WORLD_SIZE=1) ;;
    *) envs=() ;;
  esac
  for id in ../../victim ..; do
    run env "${envs[@]}" "$var=$id" "$FIXRES" "${TRAIN[@]}" --epochs 1 --shared-folder-path "$S"
    expect_code 2; expect_err_lines 1; expect_err "^fixres: error: $var '$id' is not a valid job id"
  done
done
run "$FIXRES" launch --launch-job-id ../../victim --nproc-per-node 2 -- "${TRAIN[@]}" --epochs 1 --shared-folder-path "$S"
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: --launch-job-id '../../victim' is not a valid job id"
# Nothing was written outside or at the root of the shared folder; the foreign checkpoint is
# as it was.
[ -z "$(ls -A "$S")" ] || bad "files were written into the shared folder: $(ls -A "$S")"
[ "$(ls -A "$WORK/victim")" = checkpoint.pth ] || bad "files were written next to the foreign checkpoint"
cmp -s "$W" "$WORK/victim/checkpoint.pth" || bad "the foreign checkpoint changed"
# A valid id from the environment is used as the run folder's name.
run env SLURM_PROCID=0 SLURM_NTASKS=1 SLURM_JOB_ID=4242 "$FIXRES" "${TRAIN[@]}" --epochs 1 \
  --iteration-cap 1 --shared-folder-path "$S"
expect_code 0; expect_file "$S/train/4242/checkpoint.pth"

finish
