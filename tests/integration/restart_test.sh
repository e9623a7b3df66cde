#!/usr/bin/env bash
# Elastic restarts (fixres launch --max-restarts N): a rank killed with SIGKILL mid-run makes the
# launcher stop every rank and start them all again, and train resumes from the newest
# checkpoint (--checkpoint-every-steps): the job exits 0 with final weights bitwise equal to an
# uninterrupted run's. Every rank sees TORCHELASTIC_RESTART_COUNT; once the restarts are spent
# the exit code is the failed rank's; a usage error (exit 2) and a signal the launcher forwarded
# are never restarted; the flags' bounds are usage errors naming the flag.
set -u
source "$(dirname "$0")/lib.sh" "$@"
WORK="$(cd "$WORK" && pwd)"
OUT="$WORK/.out"; ERR="$WORK/.err"
export TMPDIR="$WORK/tmp"
mkdir -p "$TMPDIR"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 40 --val 2 --size 24 >/dev/null \
  || bad "data generation"
RUNS="$WORK/runs"
# 120 images, 2 ranks x batch 2: 30 steps per epoch, 60 in all.
T=(train --imnet-path "$D" --architecture resnet_tiny --workers 1 --log-every 1 --input-size 24
  --batch 2 --sampler distributed --seed 7 --shared-folder-path "$RUNS")
T1=("${T[@]}" --epochs 1)
T+=(--epochs 2)
L=(launch --nproc-per-node 2 --grace-seconds 5)

# The pid of the child of launcher $1 that runs rank $2.
rank_pid() {
  local p
  for p in $(pgrep -P "$1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RANK=$2" && { echo "$p"; return 0; }
  done
  return 1
}
same_as() {  # same_as REF JOB: final weights bitwise equal
  run "$PY" "$SRC/tests/reference/state_dicts.py" equal "$RUNS/train/$1/checkpoint.pth" "$RUNS/train/$2/checkpoint.pth"
  [ "$CODE" -eq 0 ] || bad "$2: final weights differ from the uninterrupted run $1"
}

# 1. Bounds: usage errors (exit 2) naming the flag, before any rank starts.
for v in -1 1001 x; do
  run "$FIXRES" launch --max-restarts "$v" -- /bin/sh -c 'echo started'
  expect_code 2; expect_err "max-restarts"; grep -q started "$OUT" && bad "--max-restarts $v: a rank started"
done
for v in -1 x; do
  run "$FIXRES" "${T[@]}" --job-id badck --checkpoint-every-steps "$v"
  expect_code 2; expect_err_lines 1; expect_err "^fixres: error: .*checkpoint-every-steps"
done
[ -e "$RUNS/train/badck" ] && bad "a refused --checkpoint-every-steps wrote its run folder"

# 2. TORCHELASTIC_RESTART_COUNT: 0, 1, 2 on every rank; a rank failing twice then succeeding
# with --max-restarts 2 ends the job with 0, one line per restart. Rank 1 fails once rank 0 has
# printed its count (a marker file, polled), so the launcher's stop cannot cut that line off.
run "$FIXRES" "${L[@]}" --max-restarts 2 -- /bin/sh -c \
  'echo "count=$TORCHELASTIC_RESTART_COUNT"; m="$0.$TORCHELASTIC_RESTART_COUNT"
   [ "$RANK" = 0 ] && touch "$m"; [ "$TORCHELASTIC_RESTART_COUNT" -ge 2 ] || [ "$RANK" = 0 ] ||
   { for i in $(seq 1 600); do [ -e "$m" ] && break; sleep 0.05; done; exit 7; }' "$WORK/r0-printed"
expect_code 0
# (rank 0's standard output unprefixed, the other ranks' prefixed)
for n in 0 1 2; do expect_out "^count=$n$"; expect_out "^\[rank 1\] count=$n$"; done
expect_err "^fixres: restarting all ranks \(restart 1 of 2\) after rank 1 exited with 7$"
expect_err "^fixres: restarting all ranks \(restart 2 of 2\) after rank 1 exited with 7$"
[ "$(grep -c 'restarting all ranks' "$ERR")" = 2 ] || bad "not two restart lines"

# 3. Restarts spent: the failed rank's code, as without restarts.
run "$FIXRES" "${L[@]}" --max-restarts 1 -- /bin/sh -c '[ "$RANK" = 1 ] && exit 3; sleep 30'
expect_code 3
expect_err "^fixres: restarting all ranks \(restart 1 of 1\) after rank 1 exited with 3$"
[ "$(grep -c 'restarting all ranks' "$ERR")" = 1 ] || bad "restarts spent: more than one restart"
expect_err "^fixres: error: rank 1 exited with code 3; stopping the other ranks"
run "$FIXRES" "${L[@]}" --max-restarts 1 -- /bin/sh -c '[ "$RANK" = 1 ] && kill -9 $$; sleep 30'
expect_code 137
[ "$(grep -c 'restarting all ranks' "$ERR")" = 1 ] || bad "kill -9 twice: not one restart"

# 4. A usage error is not restarted: a rank's exit 2, and train refusing a flag.
run "$FIXRES" "${L[@]}" --max-restarts 3 -- /bin/sh -c '[ "$RANK" = 0 ] && exit 2; sleep 30'
expect_code 2
grep -q "restarting" "$ERR" && bad "exit 2 was restarted"
run "$FIXRES" "${L[@]}" --max-restarts 3 -- "${T[@]}" --job-id usage --learning-rate -1
expect_code 2
grep -q "restarting" "$ERR" && bad "train's usage error was restarted"

# 5. A signal to the launcher is forwarded and ends the job: no restart, 128 + signal.
"$FIXRES" "${L[@]}" --max-restarts 3 -- /bin/sh -c 'echo up; exec sleep 60' >"$WORK/s.out" 2>"$WORK/s.err" &
P=$!
for _ in $(seq 1 100); do [ "$(grep -c up "$WORK/s.out")" = 2 ] && break; sleep 0.1; done
kill -TERM $P
wait_code $P 30
[ "$c" = 143 ] || bad "SIGTERM to the launcher: exit $c, expected 143"
grep -q "restarting" "$WORK/s.err" && bad "a forwarded SIGTERM was restarted"

# 5b. Two nodes on this host (--nnodes 2, loopback): node 0's rank succeeds at once and its
# launcher waits for node 1's; SIGINT to that waiting launcher ends it at once with 130 (not
# after --dist-timeout), and node 1's launcher stops its ranks, naming node 0's signal.
PORT=$("$PY" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
N=(launch --nnodes 2 --nproc-per-node 1 --master-addr 127.0.0.1 --master-port "$PORT" --max-restarts 1
  --grace-seconds 2 --dist-timeout 300)
"$FIXRES" "${N[@]}" --node-rank 1 -- /bin/sh -c 'exec sleep 120' >"$WORK/n1.out" 2>"$WORK/n1.err" &
P1=$!
"$FIXRES" "${N[@]}" --node-rank 0 -- /bin/sh -c 'echo done' >"$WORK/n0.out" 2>"$WORK/n0.err" &
P0=$!
# Node 0's rank has run and exited: its launcher says it is waiting for node 1 (polled, 60 s).
for _ in $(seq 1 1200); do grep -q "waiting for the other nodes" "$WORK/n0.err" && break; sleep 0.05; done
grep -q "waiting for the other nodes" "$WORK/n0.err" || bad "node 0's launcher never waited for node 1"
kill -INT $P0
wait_code $P0 30
[ "$c" = 130 ] || bad "SIGINT to a launcher waiting for the other node: exit $c, expected 130"
grep -q "SIGINT while waiting for the other nodes' ranks" "$WORK/n0.err" \
  || bad "node 0 did not say why it stopped: $(cat "$WORK/n0.err")"
wait_code $P1 60
[ "$c" = 5 ] || bad "node 1's launcher after node 0's SIGINT: exit $c, expected 5 (distributed failure)"
grep -q "the launcher of node 0 was stopped by a signal" "$WORK/n1.err" \
  || bad "node 1 did not name node 0's signal: $(cat "$WORK/n1.err")"

# 6. The uninterrupted two-rank reference.
run "$FIXRES" "${L[@]}" -- "${T[@]}" --job-id ref
expect_code 0; expect_file "$RUNS/train/ref/checkpoint_1.pth"

# 7. kill -9 of rank 0 mid-epoch under --max-restarts 1 --checkpoint-every-steps 4: rank 0 saves
# nothing on its way out, so the restarted ranks resume from the step checkpoint (a multiple of
# 4, mid-epoch); the job ends with 0 and the reference's weights, bitwise.
kill_rank() {  # kill_rank JOB RANK STEPS: a launch killed at rank RANK after STEPS steps
  "$FIXRES" "${L[@]}" --max-restarts 1 -- "${T[@]}" --job-id "$1" --checkpoint-every-steps 4 \
    >"$WORK/$1.out" 2>"$WORK/$1.err" &
  P=$!
  wait_steps "$RUNS/train/$1" "$3" || bad "$1: the run never reached step $3"
  local victim
  victim=$(rank_pid $P "$2") || bad "$1: no rank $2 to kill"
  [ -n "$victim" ] && kill -9 "$victim"
  wait_code $P 300
  [ "$c" = 0 ] || { bad "$1: exit $c after a restart, expected 0"; tail -5 "$WORK/$1.err"; }
  grep -Eq "^fixres: restarting all ranks \(restart 1 of 1\) after rank $2 exited with 137$" "$WORK/$1.err" ||
    bad "$1: no restart line for rank $2"
  grep -Eq "^\[rank 0\] .*resumed from .* \(step [1-9][0-9]*\)" "$WORK/$1.err" || bad "$1: did not resume mid-run"
  same_as ref "$1"
}
kill_rank kill0 0 9
step=$(grep -Eo "resumed from .* \(step [0-9]+\)" "$WORK/kill0.err" | grep -Eo "[0-9]+\)$" | tr -d ')')
[ -n "$step" ] && [ $((step % 4)) = 0 ] && [ $((step % 30)) != 0 ] ||
  bad "kill0: resumed at step '$step', not from a --checkpoint-every-steps checkpoint mid-epoch"
# 8. kill -9 of rank 1: rank 0, stopped, saves its last completed step; same end.
kill_rank kill1 1 9

# 9. --checkpoint-every-steps writes checkpoint.pth mid-epoch; a single process killed with
# SIGKILL and run again resumes from it and ends as the uninterrupted single-process run
# (one epoch: 60 steps).
run "$FIXRES" "${T1[@]}" --job-id single_ref
expect_code 0
"$FIXRES" "${T1[@]}" --job-id single --checkpoint-every-steps 5 >"$WORK/single.out" 2>"$WORK/single.err" &
P=$!
wait_steps "$RUNS/train/single" 12 || bad "single: never reached step 12"
kill -9 $P; wait $P 2>/dev/null
step=$("$PY" -c "import torch; print(torch.load('$RUNS/train/single/checkpoint.pth')['global_step'])")
[ -n "$step" ] && [ "$step" -ge 10 ] && [ $((step % 5)) = 0 ] || bad "single: checkpoint.pth at step '$step'"
run "$FIXRES" "${T1[@]}" --job-id single --checkpoint-every-steps 5
expect_code 0; expect_err "resumed from"
same_as single_ref single
finish
