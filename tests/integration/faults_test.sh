#!/usr/bin/env bash
# Faults during training lose nothing: SIGTERM of the launcher (every rank stops at the same
# step, rank 0 saves, exit 143), kill -9 of a rank (the survivor exits 5 within seconds),
# SIGSTOP of a rank (the survivor exits 5 after --dist-timeout), kill -9 while a checkpoint is
# being written (the previous checkpoint stays loadable), a write failure while saving (clean
# error, previous checkpoint kept), a corrupt latest checkpoint (checksum reported, the newest
# per-epoch one is used). After each, rerunning the same command resumes and ends with exactly
# the weights of a run that was never interrupted.
set -u
source "$(dirname "$0")/lib.sh" "$@"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 100 --val 4 --size 24 >/dev/null \
  || bad "data generation"
RUNS="$WORK/runs"
TRAIN=(train --imnet-path "$D" --architecture resnet_tiny --workers 1 --log-every 1 --input-size 24
  --batch 2 --sampler distributed --seed 5 --shared-folder-path "$RUNS" --dist-timeout 10)
EPOCHS=(--epochs 3)

# Starts 2 ranks with a torchrun-style environment (no launcher), for job $1.
start_ranks() {
  # Below Linux's ephemeral range (32768-60999): a rank that dials before rank 0 listens cannot
  # be handed the port itself as its source and connect to itself.
  local port=$((20000 + RANDOM % 12000))
  PIDS=()
  for r in 0 1; do
    RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      "$FIXRES" "${TRAIN[@]}" "${EPOCHS[@]}" --job-id "$1" >"$WORK/$1.r$r.out" 2>"$WORK/$1.r$r.err" &
    PIDS[$r]=$!
  done
}
# Waits until job $1 has a step of epoch 1 in its metrics (its checkpoint_0.pth is written).
wait_epoch1() {
  for _ in $(seq 1 4000); do
    grep -q '"epoch":1,' "$RUNS/train/$1/metrics.jsonl" 2>/dev/null && return 0
    sleep 0.02
  done
  return 1
}
# wait_code, but a process still running after $2 s has its threads' stacks printed first (with
# gdb, where installed): a hang shows where it waits.
wait_code_or_stacks() {
  local t=0
  while kill -0 "$1" 2>/dev/null && [ $t -lt $(($2 * 10)) ]; do sleep 0.1; t=$((t + 1)); done
  if kill -0 "$1" 2>/dev/null && command -v gdb >/dev/null; then
    echo "pid $1 still running after $2 s; its threads:"
    gdb -p "$1" -batch -ex "thread apply all bt 20" 2>/dev/null | grep -E "^#|^Thread" | head -120
  fi
  wait_code "$1" 1
}
same_as_reference() {
  run "$PY" "$SRC/tests/reference/state_dicts.py" equal "$RUNS/train/ref/checkpoint.pth" "$RUNS/train/$1/checkpoint.pth"
  [ "$CODE" -eq 0 ] || bad "$1: final weights differ from the uninterrupted run"
}
resume_two_ranks() {
  run "$FIXRES" launch --nproc-per-node 2 -- "${TRAIN[@]}" "${EPOCHS[@]}" --job-id "$1"
  expect_code 0; expect_err "resumed from"
  same_as_reference "$1"
}

# The uninterrupted reference run, 2 ranks.
run "$FIXRES" launch --nproc-per-node 2 -- "${TRAIN[@]}" "${EPOCHS[@]}" --job-id ref
expect_code 0; expect_file "$RUNS/train/ref/checkpoint_2.pth"

# 1. SIGTERM of the launcher during epoch 1: all ranks stop at one step, rank 0 saves, 143.
"$FIXRES" launch --nproc-per-node 2 -- --log-all-ranks "${TRAIN[@]}" "${EPOCHS[@]}" --job-id term >"$WORK/term.out" 2>"$WORK/term.err" &
LP=$!
wait_epoch1 term || bad "SIGTERM: the run never reached epoch 1"
kill -TERM $LP
wait_code $LP 30
[ "$c" = 143 ] || { bad "SIGTERM: launcher exit $c, expected 143"; tail -5 "$WORK/term.err"; }
for r in 0 1; do
  grep -Eq "\[rank $r\] .*stopped after (step|epoch)" "$WORK/term.err" || bad "SIGTERM: rank $r did not stop gracefully"
done
grep -Eq "stopped after (step|epoch)" "$WORK/term.err" && ! grep -q "exited with code 1" "$WORK/term.err" \
  || bad "SIGTERM: unexpected failure lines"
[ -e "$RUNS/train/term/checkpoint_2.pth" ] && bad "SIGTERM: the run was not interrupted (finished)"
resume_two_ranks term

# 2. kill -9 of rank 1 during epoch 1: rank 0 exits 5 within seconds, naming the lost rank.
start_ranks kill
wait_epoch1 kill || bad "kill -9: the run never reached epoch 1"
kill -9 "${PIDS[1]}"
# Rank 0 notices within --dist-timeout (10 s) of its next collective; loading ResNet-50 and its
# first 320 px batch with test flip on a loaded 2-core machine (ctest -j 2 beside the restart and
# distributed tests) took over 40 s once: the bound is a hang check, with room for that.
wait_code "${PIDS[0]}" 90
[ "$c" = 5 ] || { bad "kill -9: rank 0 exit $c, expected 5"; tail -3 "$WORK/kill.r0.err"; }
grep -q "rank" "$WORK/kill.r0.err" || bad "kill -9: rank 0 did not say which rank was lost"
wait "${PIDS[1]}" 2>/dev/null
resume_two_ranks kill

# 3. SIGSTOP of rank 1: rank 0 exits 5 after the timeout (10 s here) instead of hanging.
start_ranks stop
wait_epoch1 stop || bad "SIGSTOP: the run never reached epoch 1"
kill -STOP "${PIDS[1]}"
wait_code_or_stacks "${PIDS[0]}" 60
[ "$c" = 5 ] || { bad "SIGSTOP: rank 0 exit $c, expected 5"; tail -3 "$WORK/stop.r0.err"; }
kill -9 "${PIDS[1]}"; kill -CONT "${PIDS[1]}"; wait "${PIDS[1]}" 2>/dev/null
resume_two_ranks stop

# 4. kill -9 while a checkpoint is being written (single process, a model big enough for the
# write to take a while): no partial file is ever taken for a checkpoint.
BIG=(train --imnet-path "$D" --architecture resnet50 --workers 1 --input-size 24 --epochs 2
  --batch 50 --iteration-cap 1 --sampler distributed --seed 5 --shared-folder-path "$RUNS" --log-every 1)
run "$FIXRES" "${BIG[@]}" --job-id bigref
expect_code 0
"$FIXRES" "${BIG[@]}" --job-id bigkill >"$WORK/bigkill.out" 2>"$WORK/bigkill.err" &
BP=$!
hit=0
for _ in $(seq 1 20000); do
  # The second write (epoch 0's per-epoch copy) starts once checkpoint.pth exists.
  if [ -e "$RUNS/train/bigkill/checkpoint.pth" ] && compgen -G "$RUNS/train/bigkill/.*.tmp-*" >/dev/null; then
    kill -9 $BP; hit=1; break
  fi
  kill -0 $BP 2>/dev/null || break
  sleep 0.002
done
wait $BP 2>/dev/null
[ $hit = 1 ] || bad "checkpoint kill: never caught a checkpoint being written"
run "$PY" "$SRC/tests/reference/state_dicts.py" keys "$RUNS/train/bigkill/checkpoint.pth"
expect_code 0
run "$FIXRES" "${BIG[@]}" --job-id bigkill
expect_code 0; expect_err "resumed from"
run "$PY" "$SRC/tests/reference/state_dicts.py" equal "$RUNS/train/bigref/checkpoint.pth" "$RUNS/train/bigkill/checkpoint.pth"
[ "$CODE" -eq 0 ] || bad "checkpoint kill: final weights differ from the uninterrupted run"

# 5. kill -9 of rank 1 during a 2-rank evaluation: rank 0 exits 5 instead of reporting a
# partial accuracy or hanging.
port=$((20000 + RANDOM % 12000))  # below the ephemeral range, as in start_ranks
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$FIXRES" eval \
    --imnet-path "$D" --architecture resnet50 --weight-path "$RUNS/train/bigref/checkpoint.pth" \
    --input-size 320 --test-flip --batch 1 --workers 1 --dist-timeout 10 \
    >"$WORK/eval.r$r.out" 2>"$WORK/eval.r$r.err" &
  PIDS[$r]=$!
done
# Rank 1 is killed once it has joined the job: its store connection and its Gloo pair are open
# (two sockets), so the collective group is up and the evaluation under way (polled, 60 s at most).
sockets() { find "/proc/$1/fd" -lname 'socket:*' 2>/dev/null | wc -l; }
for _ in $(seq 1 1200); do
  [ "$(sockets "${PIDS[1]}")" -ge 2 ] && break
  kill -0 "${PIDS[1]}" 2>/dev/null || break
  sleep 0.05
done
[ "$(sockets "${PIDS[1]}")" -ge 2 ] || {
  bad "eval kill -9: rank 1 did not join within 60 s (port $port)"
  tail -2 "$WORK/eval.r0.err" "$WORK/eval.r1.err"
}
kill -9 "${PIDS[1]}"
# Rank 0 notices within --dist-timeout (10 s) of its next collective; loading ResNet-50 and its
# first 320 px batch with test flip on a loaded 2-core machine (ctest -j 2 beside the restart and
# distributed tests) took over 40 s once: the bound is a hang check, with room for that.
wait_code "${PIDS[0]}" 90
[ "$c" = 5 ] || { bad "eval kill -9: rank 0 exit $c, expected 5"; tail -3 "$WORK/eval.r0.err"; }
grep -Eq "^ +320 " "$WORK/eval.r0.out" && bad "eval kill -9: rank 0 printed a result"
wait "${PIDS[1]}" 2>/dev/null

# 6. The disk refuses the write (file size limit: EFBIG, as a full disk gives ENOSPC): the save
# fails with one line naming the file, the previous checkpoint is untouched, no temp file stays.
SMALL=(train --imnet-path "$D" --architecture resnet_tiny --workers 1 --input-size 24 --batch 2
  --iteration-cap 2 --sampler distributed --shared-folder-path "$RUNS" --job-id full)
run "$FIXRES" "${SMALL[@]}" --epochs 1
expect_code 0
cp "$RUNS/train/full/checkpoint.pth" "$WORK/before.pth"
run bash -c "ulimit -f 64; exec \"$FIXRES\" ${SMALL[*]} --epochs 2"
expect_code 6
tail -1 "$ERR" | grep -Eq "^fixres: error: cannot write .*checkpoint.*File too large" \
  || bad "disk full: the last line is not the write error"
[ "$(grep -c 'error' "$ERR")" -eq 1 ] || bad "disk full: more than one error line"
cmp -s "$WORK/before.pth" "$RUNS/train/full/checkpoint.pth" || bad "disk full: checkpoint.pth changed"
ls -a "$RUNS/train/full" | grep -q '\.tmp-' && bad "disk full: a temporary file was left behind"
run "$FIXRES" "${SMALL[@]}" --epochs 2
expect_code 0; expect_err "resumed from"

# 7. A bit flipped inside the latest checkpoint's tensor data: the checksum names it and the
# newest per-epoch checkpoint is used instead.
cp -r "$RUNS/train/ref" "$RUNS/train/flip"
run "$PY" "$SRC/tests/reference/state_dicts.py" flip-byte "$RUNS/train/flip/checkpoint.pth"
expect_code 0
run "$FIXRES" "${TRAIN[@]}" --epochs 4 --job-id flip
expect_code 0; expect_err "checksum mismatch"; expect_err "resumed from .*checkpoint_2.pth"
finish
