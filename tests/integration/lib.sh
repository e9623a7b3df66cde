# Helpers for integration tests. Usage: source lib.sh FIXRES_BIN SOURCE_DIR WORK_DIR
FIXRES="$1"; SRC="$2"; WORK="$3"
# The Python references' interpreter (PY_INTERPRETER), run through tests/reference/pyrun: each
# script in a process forked from one that has imported torch already (an import of torch is
# 1.5-2.6 s of CPU, and the suite runs a few hundred references). FIXRES_PYRUN=0: the
# interpreter itself.
PY_INTERPRETER=${FIXRES_PYTHON:-/usr/bin/python3}
export FIXRES_PYRUN_PYTHON=$PY_INTERPRETER
PY=$SRC/tests/reference/pyrun
# served_python INTERPRETER: prints a command that runs INTERPRETER's scripts through pyrun (a
# script in $WORK), or INTERPRETER itself where it is not an executable.
served_python() {
  if [ ! -x "$1" ]; then echo "$1"; return; fi
  local w
  w="$WORK/.pyrun-$(printf '%s' "$1" | cksum | cut -d' ' -f1)"
  printf '#!/usr/bin/env bash\nFIXRES_PYRUN_PYTHON=%q exec %q "$@"\n' "$1" "$PY" >"$w"
  chmod +x "$w"
  echo "$w"
}
rm -rf "$WORK"; mkdir -p "$WORK"
OUT="$WORK/.out"; ERR="$WORK/.err"; CODE=0; FAILURES=0; CMD=""; SKIPPED=()
export FIXRES_THREADS=${FIXRES_THREADS:-1}
# The Python references (PyTorch, NumPy) on one thread too. CTest runs one test per core, and a
# second OpenMP thread in each process oversubscribes the cores: two torch processes side by side
# on 2 cores ran 4x slower with 2 threads each than with 1 (OpenMP's workers spin while waiting).
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

# `run "$FIXRES" ...` runs through fixres_client (tests/served/Client.cpp), in a process forked from
# a fixres_served that has loaded LibTorch already: each fixres start is about 0.55 s of CPU before
# main, and the suite runs several hundred. The command gets the arguments, working folder,
# environment, umask, signals and standard streams it would get started directly; commands
# started otherwise (in the background, under env or timeout) start the binary itself, as does
# every command when FIXRES_SERVED=0 or the build has no fixres_client.
FIXRES_CLIENT="$(dirname "$FIXRES")/fixres_client"
run() {
  CMD="$*"
  if [ "$1" = "$FIXRES" ] && [ -x "$FIXRES_CLIENT" ]; then
    "$FIXRES_CLIENT" "$@" >"$OUT" 2>"$ERR"
  else
    "$@" >"$OUT" 2>"$ERR"
  fi
  CODE=$?
}
bad() {
  echo "FAIL: $* [command: $CMD]"; echo "--- stdout"; tail -20 "$OUT"; echo "--- stderr"; tail -20 "$ERR"
  FAILURES=$((FAILURES + 1))
}
expect_code() { [ "$CODE" -eq "$1" ] || bad "exit code $CODE, expected $1"; }
expect_out() { grep -Eq -- "$1" "$OUT" || bad "stdout lacks /$1/"; }
expect_err() { grep -Eq -- "$1" "$ERR" || bad "stderr lacks /$1/"; }
expect_err_lines() { local n; n=$(wc -l <"$ERR"); [ "$n" -eq "$1" ] || bad "stderr has $n lines, expected $1"; }
expect_file() { [ -s "$1" ] || bad "missing or empty file $1"; }
# Waits for child pid $1 (up to $2 s); sets c to its exit code, or "timeout" (then kills it).
wait_code() {
  local t=0
  while kill -0 "$1" 2>/dev/null && [ $t -lt $(($2 * 10)) ]; do sleep 0.1; t=$((t + 1)); done
  if kill -0 "$1" 2>/dev/null; then c=timeout; kill -9 "$1"; wait "$1" 2>/dev/null; else wait "$1"; c=$?; fi
}
# Waits (up to 120 s) until run folder $1 has at least $2 training steps in its metrics.
wait_steps() {
  for _ in $(seq 1 1200); do
    [ "$(grep -c '"loss"' "$1/metrics.jsonl" 2>/dev/null)" -ge "$2" ] 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
# skip_check NEED WHY: a comparison that cannot run here because NEED is missing (onnxruntime,
# timm, tensorboard, oracles: timm's source in ../shared/oracles, fashion-mnist, netns). The test
# goes on with its other checks and ends with CTest's skip code (77), so it shows as skipped, not
# passed. Where FIXRES_REQUIRE lists NEED (CI lists what it installs), a skip is a failure.
skip_check() {
  case " ${FIXRES_REQUIRE:-} " in
    *" $1 "*) bad "$2: not compared, and FIXRES_REQUIRE lists $1" ;;
    *) echo "SKIP ($1): $2"; SKIPPED+=("$1") ;;
  esac
}
# required NEED: true when FIXRES_REQUIRE lists NEED.
required() { case " ${FIXRES_REQUIRE:-} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
# A test that passed (or skipped) leaves no files: the suite's outputs (checkpoints, exports) add
# up to several GB over a leg, and a full disk fails every test after it. A failed test keeps its
# folder to look into; FIXRES_KEEP_WORK=1 keeps every folder.
finish() {
  if [ "$FAILURES" -ne 0 ]; then echo "$FAILURES check(s) failed"; exit 1; fi
  [ "${FIXRES_KEEP_WORK:-0}" = 1 ] || { cd / && rm -rf "$WORK"; }
  if [ ${#SKIPPED[@]} -ne 0 ]; then
    echo "every check that ran passed; skipped for want of: ${SKIPPED[*]}"; exit 77
  fi
  echo "all checks passed"; exit 0
}
