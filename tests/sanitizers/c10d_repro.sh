#!/usr/bin/env bash
# ThreadSanitizer check of the shutdown of a 2-rank c10d/Gloo job without fixres code
# (c10d_shutdown_repro.cpp): with tsan.supp it gets no report; with Gloo's interceptors skipped
# (called_from_lib:libgloo.so) it gets the report dist_worker used to get at exit, the
# exception Gloo's event-loop thread stored in a pair freed by the main thread.
# Usage: tests/sanitizers/c10d_repro.sh BUILD_DIR
set -euo pipefail
B=${1:-build-tsan}
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
REPRO="$B/bin/c10d_shutdown_repro"
[ -x "$REPRO" ] || { echo "c10d_repro: $REPRO not built (target c10d_shutdown_repro)" >&2; exit 2; }

run() {  # SUPPRESSIONS LOG
  local port=$((20000 + RANDOM % 12000))
  TSAN_OPTIONS="suppressions=$1 halt_on_error=1 second_deadlock_stack=1" \
    timeout 300 "$REPRO" "$port" >"$2" 2>&1
}

echo "== c10d/Gloo shutdown with tsan.supp: no report"
if ! run "$ROOT/tests/sanitizers/tsan.supp" "$B/c10d_repro.log"; then
  echo "c10d_repro: report or failure (log $B/c10d_repro.log):"
  tail -40 "$B/c10d_repro.log"
  exit 1
fi
grep -q "rank 0 ok" "$B/c10d_repro.log" && grep -q "rank 1 ok" "$B/c10d_repro.log"

echo "== the same with called_from_lib:libgloo.so added: the exception report"
{ cat "$ROOT/tests/sanitizers/tsan.supp"; echo "called_from_lib:libgloo.so"; } >"$B/c10d_gloo_skipped.supp"
if run "$B/c10d_gloo_skipped.supp" "$B/c10d_repro_gloo_skipped.log"; then
  echo "c10d_repro: no report with Gloo's locks hidden: the repro no longer reaches the path"
  exit 1
fi
if ! grep -q "WARNING: ThreadSanitizer: data race" "$B/c10d_repro_gloo_skipped.log" ||
  ! grep -Eq "exception_ptr::_M_release|runtime_error::~runtime_error" "$B/c10d_repro_gloo_skipped.log"; then
  echo "c10d_repro: expected the exception report (log $B/c10d_repro_gloo_skipped.log):"
  tail -40 "$B/c10d_repro_gloo_skipped.log"
  exit 1
fi
echo "c10d_repro: no report with tsan.supp; the exception report with Gloo's locks hidden"
