#!/usr/bin/env bash
# Multi-host: two ranks in separate network namespaces joined by a veth link rendezvous over TCP
# (10.77.0.1 <-> 10.77.0.2), run the collectives check and train SGD steps. Then two launchers,
# one per namespace (fixres launch --nnodes 2 --max-restarts 1): a rank killed with SIGKILL on one
# node restarts the ranks of both, together, and the job ends with 0 and the weights of an
# uninterrupted run, bitwise; a launcher whose peers never come ends with a message naming them;
# launchers that disagree on --max-restarts refuse to start. Needs root and iproute2; skipped
# (exit 77) where namespaces are not permitted.
set -u
source "$(dirname "$0")/lib.sh" "$@"
W="$DIST_WORKER"
export FIXRES_DIST_TIMEOUT=20
A=fixres_ns_a_$$; B=fixres_ns_b_$$
cleanup() { ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null; }
trap cleanup EXIT
if ! command -v ip >/dev/null || ! ip netns add "$A" 2>/dev/null; then
  skip_check netns "network namespaces not permitted here (need root and iproute2)"; finish
fi
ip netns add "$B" || { skip_check netns "cannot add a second namespace"; finish; }
ip link add "va$$" type veth peer name "vb$$" || { skip_check netns "veth not permitted"; finish; }
ip link set "va$$" netns "$A"; ip link set "vb$$" netns "$B"
ip -n "$A" addr add 10.77.0.1/24 dev "va$$"; ip -n "$B" addr add 10.77.0.2/24 dev "vb$$"
for n in "$A" "$B"; do ip -n "$n" link set lo up; done
ip -n "$A" link set "va$$" up; ip -n "$B" link set "vb$$" up

for scenario in "check" "sgd 3 8 $WORK/w_ns.pt"; do
  ip netns exec "$A" env RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=10.77.0.1 MASTER_PORT=29611 \
    "$W" $scenario >"$WORK/a.out" 2>"$WORK/a.err" &
  PA=$!
  ip netns exec "$B" env RANK=1 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=10.77.0.1 MASTER_PORT=29611 \
    "$W" $scenario >"$WORK/b.out" 2>"$WORK/b.err" &
  PB=$!
  wait $PA; ca=$?; wait $PB; cb=$?
  [ $ca -eq 0 ] && [ $cb -eq 0 ] || { bad "$scenario across namespaces: exit $ca/$cb"; cat "$WORK/a.err" "$WORK/b.err"; }
done
"$W" sgd 3 8 "$WORK/w_single.pt" >/dev/null 2>&1 || bad "single-process reference run failed"
run "$W" compare "$WORK/w_single.pt" "$WORK/w_ns.pt" 1e-5
expect_code 0

# Elastic restarts across the two "hosts": one launcher per namespace.
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 40 --val 2 --size 24 >/dev/null \
  || bad "data generation"
RUNS="$WORK/runs"
T=(train --imnet-path "$D" --architecture resnet_tiny --workers 1 --log-every 1 --input-size 24
  --batch 2 --sampler distributed --seed 7 --epochs 2 --shared-folder-path "$RUNS")
LA=(launch --nnodes 2 --master-addr 10.77.0.1 --master-port 29621 --nproc-per-node 1 --grace-seconds 5)
# two_nodes NAME RESTARTS -- ARGS: starts node 0 in A and node 1 in B (pids PA, PB; output in
# $WORK/NAME.a.*, $WORK/NAME.b.*).
two_nodes() {
  local name=$1 restarts=$2; shift 3
  ip netns exec "$A" "$FIXRES" "${LA[@]}" --node-rank 0 --max-restarts "$restarts" --launch-job-id "$name" \
    -- "$@" >"$WORK/$name.a.out" 2>"$WORK/$name.a.err" &
  PA=$!
  ip netns exec "$B" "$FIXRES" "${LA[@]}" --node-rank 1 --max-restarts "$restarts" --launch-job-id "$name" \
    -- "$@" >"$WORK/$name.b.out" 2>"$WORK/$name.b.err" &
  PB=$!
}

# The uninterrupted two-node run (with restarts allowed, none needed).
two_nodes nsref 1 -- "${T[@]}" --job-id nsref
wait_code $PA 300; ca=$c; wait_code $PB 300; cb=$c
[ "$ca" = 0 ] && [ "$cb" = 0 ] || { bad "two-node reference: exit $ca/$cb"; tail -5 "$WORK"/nsref.*.err; }
grep -q "restarting" "$WORK"/nsref.*.err && bad "two-node reference restarted"

# SIGKILL of a rank mid-run, on node 1 (rank 1), then on node 0 (rank 0, which serves the ranks'
# store: the new rank 0 serves it again on the same port): both nodes restart (one line each),
# exit 0, with the weights of the uninterrupted run.
kill_node_rank() {  # kill_node_rank NAME NODE(a|b) RANK
  two_nodes "$1" 1 -- "${T[@]}" --job-id "$1" --checkpoint-every-steps 4
  wait_steps "$RUNS/train/$1" 9 || bad "$1: never reached step 9"
  local launcher=$PA
  [ "$2" = b ] && launcher=$PB
  victim=$(pgrep -P "$launcher" | head -1)  # ip netns exec execs the launcher: its child is the rank
  [ -n "$victim" ] && kill -9 "$victim"
  wait_code $PA 300; ca=$c; wait_code $PB 300; cb=$c
  [ "$ca" = 0 ] && [ "$cb" = 0 ] || { bad "$1: exit $ca/$cb after a restart"; tail -8 "$WORK/$1".*.err; }
  # The first failure announced wins on every node: the killed rank (137), or the other rank when
  # its launcher announces its lost-peer exit (5) first. Both nodes name the same one.
  for n in a b; do
    grep -Eq "^fixres: restarting all ranks \(restart 1 of 1\) after rank ($3 exited with 137|$((1 - $3)) exited with 5)$" "$WORK/$1.$n.err" ||
      bad "$1: node $n has no restart line naming rank $3 (137) or the other rank (5)"
    [ "$(grep -c 'restarting all ranks' "$WORK/$1.$n.err")" = 1 ] || bad "$1: node $n restarted more than once"
  done
  [ "$(grep 'restarting all ranks' "$WORK/$1.a.err")" = "$(grep 'restarting all ranks' "$WORK/$1.b.err")" ] ||
    bad "$1: the nodes name different failures"
  run "$PY" "$SRC/tests/reference/state_dicts.py" equal "$RUNS/train/nsref/checkpoint.pth" "$RUNS/train/$1/checkpoint.pth"
  expect_code 0
}
kill_node_rank nskill1 b 1
kill_node_rank nskill0 a 0

# A launcher whose peers never come ends within the timeout, naming the node it waited for:
# node 1 without node 0 (whose launcher serves the launchers' store), node 0 without node 1.
run ip netns exec "$B" env FIXRES_DIST_TIMEOUT=3 "$FIXRES" "${LA[@]}" --node-rank 1 --max-restarts 1 \
  --launch-job-id alone -- version
expect_code 5
expect_err "^fixres: error: launch: node 1 cannot reach .*10.77.0.1:29622 \(served by the launcher of node 0\)"
grep -q "libtorch" "$OUT" && bad "a rank started without its peers"
run ip netns exec "$A" env FIXRES_DIST_TIMEOUT=3 "$FIXRES" "${LA[@]}" --node-rank 0 --max-restarts 1 \
  --launch-job-id alone -- version
expect_code 5; expect_err "^fixres: error: launch: node 0: the launchers of node\(s\) 1 did not join"
# Launchers that disagree on --max-restarts: a usage error on both.
ip netns exec "$A" "$FIXRES" "${LA[@]}" --node-rank 0 --max-restarts 1 --launch-job-id differ -- version \
  >"$WORK/differ.a.out" 2>"$WORK/differ.a.err" &
PA=$!
ip netns exec "$B" "$FIXRES" "${LA[@]}" --node-rank 1 --max-restarts 2 --launch-job-id differ -- version \
  >"$WORK/differ.b.out" 2>"$WORK/differ.b.err" &
PB=$!
wait_code $PA 60; ca=$c; wait_code $PB 60; cb=$c
[ "$ca" = 2 ] && [ "$cb" = 2 ] || bad "--max-restarts 1 vs 2: exit $ca/$cb, expected 2/2"
grep -q "max-restarts" "$WORK/differ.a.err" || bad "--max-restarts 1 vs 2: no message naming the flag"
finish
