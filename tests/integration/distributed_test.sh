#!/usr/bin/env bash
# Distributed runtime with real processes over Gloo on 127.0.0.1: every discovery path, the
# 2-rank vs 1-rank SGD equivalence with bucketing, and faults (kill -9, SIGSTOP) ending every
# surviving rank with exit code 5 within the timeout.
set -u
source "$(dirname "$0")/lib.sh" "$@"
W="$DIST_WORKER"
export FIXRES_DIST_TIMEOUT=6

port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Starts N ranks with per-rank environment from a function ENVFN RANK; waits; checks codes.
start_ranks() {  # n envfn args...
  local n=$1 envfn=$2; shift 2
  PIDS=()
  for r in $(seq 0 $((n - 1))); do
    env $($envfn "$r" "$n") "$W" "$@" >"$WORK/r$r.out" 2>"$WORK/r$r.err" &
    PIDS+=($!)
  done
}
# Waits (up to 90 s) until every listed output file says its rank is connected ("pid N rank R").
wait_connected() {
  for i in $(seq 1 900); do
    local all=1
    for f in "$@"; do grep -q "^pid " "$f" 2>/dev/null || all=0; done
    [ $all -eq 1 ] && return 0
    sleep 0.1
  done
  bad "ranks did not connect: $*"
}
wait_all_ok() {  # label
  local r=0 ok=1
  for p in "${PIDS[@]}"; do
    wait "$p"; local c=$?
    [ "$c" -eq 0 ] || { ok=0; echo "rank $r exit $c"; cat "$WORK/r$r.err"; }
    r=$((r + 1))
  done
  [ $ok -eq 1 ] || bad "$1: a rank failed"
  r=0
  for p in "${PIDS[@]}"; do
    grep -q "check ok rank $r world ${#PIDS[@]}" "$WORK/r$r.out" || bad "$1: rank $r did not check ok"
    r=$((r + 1))
  done
}

# 1. fixres launch (torchrun-style environment), 2 and 3 ranks.
for n in 2 3; do
  run "$FIXRES" launch --nproc-per-node $n --program "$W" -- check
  expect_code 0
  # Rank 0's standard output is passed as it is, the others' say their rank.
  for r in $(seq 0 $((n - 1))); do
    p="\[rank $r\] "; [ "$r" -eq 0 ] && p=""
    expect_out "^${p}check ok rank $r world $n backend gloo"
  done
done

# 2. torchrun environment set by hand.
P=$(port)
torchrun_env() { echo RANK=$1 WORLD_SIZE=$2 LOCAL_RANK=$1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$P; }
start_ranks 3 torchrun_env check; wait_all_ok torchrun

# 3. SLURM environment (master from the node list, port from MASTER_PORT).
P=$(port)
slurm_env() { echo SLURM_PROCID=$1 SLURM_NTASKS=$2 SLURM_LOCALID=$1 SLURM_JOB_ID=4242 SLURM_JOB_NODELIST=127.0.0.1 MASTER_PORT=$P; }
start_ranks 2 slurm_env check; wait_all_ok slurm

# 4. Open MPI environment.
P=$(port)
mpi_env() { echo OMPI_COMM_WORLD_RANK=$1 OMPI_COMM_WORLD_SIZE=$2 OMPI_COMM_WORLD_LOCAL_RANK=$1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$P; }
start_ranks 3 mpi_env check; wait_all_ok mpi

# 5. FixRes flags, rendezvous through a file in the shared folder named after the job id.
mkdir -p "$WORK/shared"
PIDS=()
for r in 0 1; do
  "$W" check --num-tasks 2 --global-rank $r --job-id filejob --shared-folder-path "$WORK/shared" \
    >"$WORK/r$r.out" 2>"$WORK/r$r.err" &
  PIDS+=($!)
done
wait_all_ok filestore

# 6. Equivalence: 2 ranks x batch 8 == 1 rank x batch 16 (bucketed reducer, several buckets).
run "$FIXRES" launch --nproc-per-node 2 --program "$W" -- sgd 5 16 "$WORK/w2.pt"
expect_code 0; expect_out "buckets [2-9]"
run "$W" sgd 5 16 "$WORK/w1.pt"
expect_code 0
run "$W" compare "$WORK/w1.pt" "$WORK/w2.pt" 1e-5
expect_code 0

# 7. kill -9 of one rank: the others exit 5 within the timeout, naming the lost rank.
P=$(port)
start_ranks 3 torchrun_env loop 120
wait_connected "$WORK/r0.out" "$WORK/r1.out" "$WORK/r2.out"
kill -9 "${PIDS[1]}"
t0=$(date +%s)
for r in 0 2; do
  wait "${PIDS[$r]}"; c=$?
  [ "$c" -eq 5 ] || { bad "kill -9: rank $r exit $c, expected 5"; cat "$WORK/r$r.err"; }
  # Every survivor names rank 1. Rank 2 may be blocked on rank 0 until rank 0 exits, closing the
  # rendezvous store: rank 0 keeps its store up until rank 2 has read its verdict.
  lost="lost rank\(s\): 1"
  grep -Eq "$lost" "$WORK/r$r.err" || { bad "kill -9: rank $r did not name rank 1"; cat "$WORK/r$r.err"; }
done
dt=$(($(date +%s) - t0)); [ "$dt" -le 20 ] || bad "kill -9: survivors took ${dt}s"
wait "${PIDS[1]}" 2>/dev/null

# 8. SIGSTOP of one rank (hangs, socket open): the others time out with exit code 5.
P=$(port)
start_ranks 3 torchrun_env loop 120
wait_connected "$WORK/r0.out" "$WORK/r1.out" "$WORK/r2.out"
kill -STOP "${PIDS[2]}"
t0=$(date +%s)
for r in 0 1; do
  wait "${PIDS[$r]}"; c=$?
  [ "$c" -eq 5 ] || { bad "SIGSTOP: rank $r exit $c, expected 5"; cat "$WORK/r$r.err"; }
done
dt=$(($(date +%s) - t0)); [ "$dt" -le 30 ] || bad "SIGSTOP: survivors took ${dt}s"
grep -q "lost rank(s): 2" "$WORK/r0.err" || { bad "SIGSTOP: rank 0 did not name rank 2"; cat "$WORK/r0.err"; }
kill -9 "${PIDS[2]}"; kill -CONT "${PIDS[2]}"; wait "${PIDS[2]}" 2>/dev/null

# 9. The launcher stops the job when a rank dies and exits non-zero.
"$FIXRES" launch --nproc-per-node 2 --program "$W" -- loop 120 >"$WORK/l.out" 2>"$WORK/l.err" &
LP=$!
for i in $(seq 1 600); do grep -q 'pid [0-9]* rank 1' "$WORK/l.out" && break; sleep 0.1; done
victim=$(grep -o 'pid [0-9]* rank 1' "$WORK/l.out" | awk '{print $2}')
[ -n "$victim" ] && kill -9 "$victim"
t0=$(date +%s); wait $LP; c=$?; dt=$(($(date +%s) - t0))
[ "$c" -ne 0 ] || bad "launcher exit code 0 after a rank was killed"
[ "$dt" -le 20 ] || bad "launcher took ${dt}s to stop"
grep -q "rank 1 exited with code 137" "$WORK/l.err" || { bad "launcher did not name rank 1"; cat "$WORK/l.err"; }

# 10. A rank that never joins is named after the timeout (exit code 5).
P=$(port)
run env RANK=0 WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$P FIXRES_DIST_TIMEOUT=3 "$W" check
expect_code 5; expect_err "rank\\(s\\) 1, 2 did not join"
# A store port held by another program that accepts connections and never answers: the rank
# gives up within its bound (2 x the timeout + 10 s) with exit code 5, naming the address.
P=$(port)
"$PY_INTERPRETER" -c 'import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8); print("listening", flush=True)
held = [s.accept()[0] for _ in range(8)]' "$P" >"$WORK/mute.out" 2>&1 &
MUTE=$!
for _ in $(seq 1 300); do grep -q listening "$WORK/mute.out" && break; sleep 0.1; done
run env RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$P FIXRES_DIST_TIMEOUT=2 \
  timeout 60 "$W" check
expect_code 5; expect_err "127\\.0\\.0\\.1:$P (got no answer|no longer answers)"
kill "$MUTE" 2>/dev/null; wait "$MUTE" 2>/dev/null

# 11. Bad settings: exit code 2 with one line.
run env RANK=3 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 "$FIXRES" launch --print-env
expect_code 2; expect_err "rank 3 is outside"
run env RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 "$FIXRES" launch --print-env --num-tasks 4
expect_code 2; expect_err "disagrees"
run env SLURM_PROCID=1 SLURM_NTASKS=4 SLURM_JOB_ID=9 SLURM_JOB_NODELIST="n[1-4]" "$FIXRES" launch --print-env
expect_code 0; expect_out "source: slurm"; expect_out "rendezvous: tcp://n1:"
run "$FIXRES" launch --nproc-per-node 0 -- version
expect_code 2; expect_err "nproc-per-node"

# 12. A single-node launch stays on loopback: while 2 ranks connect and run, every TCP socket of
# theirs (listening or connected) is bound to 127.0.0.1 (a private file store replaces the TCP
# store, whose server would listen on all interfaces).
if command -v ss >/dev/null; then
  "$FIXRES" --threads 1 launch --nproc-per-node 2 -- bench allreduce --architecture resnet50 --iters 30 \
    >"$WORK/ls.out" 2>"$WORK/ls.err" &
  LP=$!
  # TCP sockets of this launcher's ranks only (other tests may run at the same time).
  rank_sockets() {
    local pids; pids=$(pgrep -P $LP | tr '\n' '|' | sed 's/|$//')
    [ -n "$pids" ] && ss -tanpH 2>/dev/null | grep -E "pid=($pids),"
  }
  : >"$WORK/ls.sockets"
  for _ in $(seq 1 1200); do
    kill -0 $LP 2>/dev/null || break
    rank_sockets >>"$WORK/ls.sockets"
    grep -q ESTAB "$WORK/ls.sockets" && break
    sleep 0.02
  done
  kill -TERM $LP 2>/dev/null; wait $LP
  grep -q ESTAB "$WORK/ls.sockets" || bad "loopback: saw no connection between the ranks"
  if awk '{print $4}' "$WORK/ls.sockets" | grep -vq '^127\.0\.0\.1:'; then
    bad "loopback: a rank uses an address beyond 127.0.0.1: $(awk '{print $1, $4}' "$WORK/ls.sockets" | sort -u | tr '\n' ' ')"
  fi
fi

finish
