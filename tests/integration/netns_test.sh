#!/usr/bin/env bash
# Multi-host: two ranks in separate network namespaces joined by a veth link rendezvous over TCP
# (10.77.0.1 <-> 10.77.0.2), run the collectives check and train SGD steps. Needs root and
# iproute2; skipped (exit 77) where namespaces are not permitted.
set -u
source "$(dirname "$0")/lib.sh" "$@"
W="$DIST_WORKER"
export FIXRES_DIST_TIMEOUT=20
A=fixres_ns_a_$$; B=fixres_ns_b_$$
cleanup() { ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null; }
trap cleanup EXIT
if ! command -v ip >/dev/null || ! ip netns add "$A" 2>/dev/null; then
  echo "SKIP: network namespaces not permitted here (need root and iproute2)"; exit 77
fi
ip netns add "$B" || { echo "SKIP: cannot add a second namespace"; exit 77; }
ip link add "va$$" type veth peer name "vb$$" || { echo "SKIP: veth not permitted"; exit 77; }
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
finish
