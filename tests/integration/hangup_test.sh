#!/usr/bin/env bash
# SIGHUP (the terminal closed) stops train gracefully, with a checkpoint, exit 129, as SIGTERM
# does; under nohup (SIGHUP ignored) the run goes on. The launcher forwards SIGHUP to its ranks
# and exits 129. Its private rendezvous folder is removed on every exit it sees (success, a
# failed rank, SIGINT, SIGTERM, SIGHUP), and the folder a launcher killed with SIGKILL left is
# removed by the next launch, while those of live launchers stay.
set -u
source "$(dirname "$0")/lib.sh" "$@"
WORK="$(cd "$WORK" && pwd)"
OUT="$WORK/.out"; ERR="$WORK/.err"
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 100 --val 4 --size 24 >/dev/null \
  || bad "data generation"
RUNS="$WORK/runs"
LONG=(train --imnet-path "$D" --architecture resnet_tiny --workers 1 --log-every 1 --input-size 24
  --batch 2 --sampler distributed --seed 5 --epochs 1000 --shared-folder-path "$RUNS")
export TMPDIR="$WORK/tmp"
mkdir -p "$TMPDIR"
# SIGHUP at its default disposition, even if this script was started with it ignored (nohup).
HUPDFL=(env --default-signal=HUP)

# The launcher folders in $TMPDIR, space-separated.
launch_folders() { (cd "$TMPDIR" && ls -d fixres-launch-* 2>/dev/null | tr '\n' ' '); }

# 1. SIGHUP to a single train process: graceful stop with a checkpoint, exit 129.
"${HUPDFL[@]}" "$FIXRES" "${LONG[@]}" --job-id hup >"$WORK/hup.out" 2>"$WORK/hup.err" &
P=$!
wait_steps "$RUNS/train/hup" 1 || bad "train never started"
kill -HUP $P
wait_code $P 120
[ "$c" = 129 ] || { bad "train SIGHUP: exit $c, expected 129"; tail -3 "$WORK/hup.err"; }
grep -q "stopped after step" "$WORK/hup.err" || bad "train SIGHUP: no graceful stop"
grep -q "SIGHUP" "$WORK/hup.err" || bad "train SIGHUP: the signal is not named"
[ -s "$RUNS/train/hup/checkpoint.pth" ] || bad "train SIGHUP: no checkpoint"

# 2. Under nohup the hangup is ignored: the run goes on (more steps), then SIGTERM stops it.
(trap '' HUP; exec "$FIXRES" "${LONG[@]}" --job-id nohup) >"$WORK/nohup.out" 2>"$WORK/nohup.err" &
P=$!
wait_steps "$RUNS/train/nohup" 1 || bad "nohup train never started"
kill -HUP $P
n=$(grep -c '"loss"' "$RUNS/train/nohup/metrics.jsonl")
wait_steps "$RUNS/train/nohup" $((n + 3)) || bad "nohup: the run did not go on after SIGHUP"
kill -0 $P 2>/dev/null || bad "nohup: SIGHUP ended the run"
kill -TERM $P
wait_code $P 120
[ "$c" = 143 ] || bad "nohup then SIGTERM: exit $c, expected 143"

# 3. SIGHUP to the launcher of a 2-rank training: forwarded, every rank saves and stops, 129;
# its rendezvous folder is gone.
"${HUPDFL[@]}" "$FIXRES" launch --nproc-per-node 2 -- --log-all-ranks "${LONG[@]}" --job-id lhup >"$WORK/lhup.out" 2>"$WORK/lhup.err" &
LP=$!
wait_steps "$RUNS/train/lhup" 1 || bad "launched train never started"
[ -n "$(launch_folders)" ] || bad "no rendezvous folder while the launch runs"
kill -HUP $LP
wait_code $LP 120
[ "$c" = 129 ] || { bad "launch SIGHUP: exit $c, expected 129"; tail -5 "$WORK/lhup.err"; }
for r in 0 1; do
  grep -q "\[rank $r\] .*stopped after step" "$WORK/lhup.err" || bad "launch SIGHUP: rank $r did not stop gracefully"
done
grep -q "forwarding SIGHUP" "$WORK/lhup.err" || bad "launch SIGHUP: not forwarded"
[ -s "$RUNS/train/lhup/checkpoint.pth" ] || bad "launch SIGHUP: no checkpoint"
[ -z "$(launch_folders)" ] || bad "launch SIGHUP: left $(launch_folders)"

# 4. Every other exit the launcher sees removes its folder: success, a failed rank, SIGINT,
# SIGTERM (ranks that wait, so that the signal reaches a running job).
run "$FIXRES" launch --nproc-per-node 2 -- version
expect_code 0; [ -z "$(launch_folders)" ] || bad "success: left $(launch_folders)"
run "$FIXRES" launch --nproc-per-node 2 -- /bin/sh -c 'exit 3'
expect_code 3; [ -z "$(launch_folders)" ] || bad "failed rank: left $(launch_folders)"
for sig in INT TERM HUP; do
  "${HUPDFL[@]}" "$FIXRES" launch --nproc-per-node 2 -- /bin/sh -c 'echo up; exec sleep 600' >"$WORK/s.out" 2>"$WORK/s.err" &
  LP=$!
  for _ in $(seq 1 600); do [ "$(grep -c up "$WORK/s.out")" -eq 2 ] && break; sleep 0.05; done
  kill -$sig $LP
  wait_code $LP 60
  want=$((128 + $(kill -l $sig)))
  [ "$c" = "$want" ] || bad "SIG$sig: launcher exit $c, expected $want"
  [ -z "$(launch_folders)" ] || bad "SIG$sig: left $(launch_folders)"
done

# 5. SIGKILL: the launcher cannot clean up (its ranks die with it); the next launch removes its
# folder, and only folders whose launcher is gone: a live launcher's (its lock held) and one
# being set up (no lock file yet) stay.
"$FIXRES" launch --nproc-per-node 2 -- /bin/sh -c 'echo up; exec sleep 600' >"$WORK/k.out" 2>"$WORK/k.err" &
LP=$!
for _ in $(seq 1 600); do [ "$(grep -c up "$WORK/k.out")" -eq 2 ] && break; sleep 0.05; done
killed=$(launch_folders)
[ -n "$killed" ] || bad "SIGKILL: no folder while the launch runs"
grep -q "^$LP " "$TMPDIR/${killed% }/.lock" || bad "SIGKILL: the folder does not name its launcher's pid"
kill -9 $LP; wait $LP 2>/dev/null
[ -d "$TMPDIR/${killed% }" ] || bad "SIGKILL: the folder vanished (nothing to test)"
mkdir -p "$TMPDIR/fixres-launch-live" "$TMPDIR/fixres-launch-new"
echo "1 otherhost" >"$TMPDIR/fixres-launch-live/.lock"
flock "$TMPDIR/fixres-launch-live/.lock" sleep 600 &
HOLDER=$!
for _ in $(seq 1 600); do flock -n "$TMPDIR/fixres-launch-live/.lock" true || break; sleep 0.05; done
run "$FIXRES" launch --nproc-per-node 2 -- version
expect_code 0; expect_err "removed .*${killed% }"
[ -d "$TMPDIR/${killed% }" ] && bad "SIGKILL: the next launch left the dead launcher's folder"
[ "$(launch_folders)" = "fixres-launch-live fixres-launch-new " ] \
  || bad "the next launch removed or left the wrong folders: $(launch_folders)"
pkill -P $HOLDER sleep; wait $HOLDER 2>/dev/null

finish
