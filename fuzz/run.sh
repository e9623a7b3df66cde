#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/ and runs each for SECONDS (default
# 600) from the committed seed corpus (copied, so the committed one stays small).
# Prints one line per target: executions, corpus size, peak RSS (libFuzzer's, MB) and whether
# anything was found.
# Exit code 1 when a target crashed (the input is kept in build-fuzz/artifacts/).
# Usage: fuzz/run.sh [SECONDS] [TARGET...]      (targets: decode bmp webp tiff pnm torchfile idx npy tar index config modelfolder)
set -euo pipefail
SECONDS_PER_TARGET=${1:-600}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(decode bmp webp tiff pnm torchfile idx npy tar index config modelfolder)
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
B="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
if [ ! -f "$B/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$ROOT/fuzz" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
[ -n "${FUZZ_NO_BUILD:-}" ] || cmake --build "$B" -j "$(nproc)" >/dev/null
mkdir -p "$B/artifacts"
status=0
printf "%-12s %8s %12s %8s %9s %s\n" target seconds executions corpus "rss MB" result
for t in "${TARGETS[@]}"; do
  work="$B/corpus-work/$t"
  mkdir -p "$work"
  cp -n "$ROOT/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
  log="$B/fuzz_$t.log"
  set +e
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 LSAN_OPTIONS="suppressions=$ROOT/fuzz/lsan.supp" \
    "$B/fuzz_$t" -max_total_time="$SECONDS_PER_TARGET" -timeout=20 -rss_limit_mb=4096 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$B/artifacts/$t-" "$work" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo "?")
  n=$(ls "$work" | wc -l)
  rss=$(grep -Eo 'stat::peak_rss_mb: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo "?")
  if [ $rc -eq 0 ]; then result="no finding"; else result="FINDING (exit $rc, see $log)"; status=1; fi
  printf "%-12s %8s %12s %8s %9s %s\n" "$t" "$SECONDS_PER_TARGET" "$execs" "$n" "$rss" "$result"
done
exit $status
