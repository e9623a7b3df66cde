#!/usr/bin/env bash
# ThreadSanitizer run of the code with threads of our own: the loader (worker threads, bounded
# queue, shutdown), the liveness heartbeat and the bucketed reducer's asynchronous all-reduces
# (2 ranks of dist_worker over Gloo). Usage: tests/sanitizers/tsan.sh BUILD_DIR
set -euo pipefail
B=${1:-build-tsan}
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
export TSAN_OPTIONS="suppressions=$ROOT/tests/sanitizers/tsan.supp halt_on_error=1 second_deadlock_stack=1"
export FIXRES_THREADS=2
echo "== loader and dataset tests"
"$B/bin/fixres_unit_tests" --gtest_filter='DataLoader*:DataDataset*:DataSampler*'
echo "== reducer and heartbeat: 2 ranks of bucketed SGD over Gloo"
port=$((20000 + RANDOM % 12000))
pids=()
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$B/bin/dist_worker" sgd 5 16 "$B/tsan_w.pt" >"$B/tsan_r$r.log" 2>&1 &
  pids+=($!)
done
status=0
for r in 0 1; do wait "${pids[$r]}" || { status=1; echo "rank $r failed:"; tail -30 "$B/tsan_r$r.log"; }; done
[ $status -eq 0 ] && echo "tsan: no race reported"
exit $status
