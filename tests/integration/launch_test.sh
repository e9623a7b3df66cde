#!/usr/bin/env bash
# fixres launch starts what follows '--': a fixres subcommand (this binary), or a program given
# by path (absolute or relative) or by a bare name looked up on PATH, each rank with the
# torchrun-style environment; a program that cannot be run is a usage error before any rank.
set -u
source "$(dirname "$0")/lib.sh" "$@"

FIXRES_ABS="$(cd "$(dirname "$FIXRES")" && pwd)/$(basename "$FIXRES")"
WORK_ABS="$(cd "$WORK" && pwd)"
OUT="$WORK_ABS/.out"; ERR="$WORK_ABS/.err"

# Like run, from folder $1.
run_in() {
  local dir=$1; shift
  CMD="(in $dir) $*"
  (cd "$dir" && "$@") >"$OUT" 2>"$ERR"
  CODE=$?
}
# The start of rank r's standard output lines: rank 0's are the command's own output, unprefixed
# (launch ... predict writes a valid CSV); the others say their rank.
pre() { [ "$1" -eq 0 ] || printf '\\[rank %s\\] ' "$1"; }
# Exactly the lines of two ranks, one each: expect_two_ranks REGEX_AFTER_PREFIX.
expect_two_ranks() {
  local r n
  for r in 0 1; do
    n=$(grep -Ec -- "^$(pre $r)$1" "$OUT")
    [ "$n" -eq 1 ] || bad "rank $r: $n line(s) matching /$1/, expected 1"
  done
  grep -Eq -- "^\[rank [2-9]\]" "$OUT" && bad "a rank beyond 1 ran"
}
expect_no_rank() {
  grep -q "^\[rank" "$OUT" "$ERR" && bad "a rank was started"
  grep -q "launch: .* rank(s)" "$ERR" && bad "the launcher started ranks"
}

# Programs for the checks: a script printing its environment and arguments, a file without
# the execute bit, and a script named like a fixres subcommand.
BIN="$WORK_ABS/bin"; NOEXEC="$WORK_ABS/noexec"
mkdir -p "$BIN" "$NOEXEC"
cat >"$BIN/show-rank" <<'EOF'
#!/bin/sh
echo "show rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE args=$*"
EOF
chmod +x "$BIN/show-rank"
cp "$BIN/show-rank" "$NOEXEC/show-rank"
chmod -x "$NOEXEC/show-rank"
printf '#!/bin/sh\necho "script named version args=$*"\n' >"$BIN/version"
chmod +x "$BIN/version"
ln -s "$FIXRES_ABS" "$BIN/fixres"

# 1. The subcommand form: this fixres binary, with fixres options before the subcommand too.
run "$FIXRES" launch --nproc-per-node 2 -- version
expect_code 0; expect_two_ranks "fixres [0-9]+\.[0-9]+\.[0-9]+$"
run "$FIXRES" launch --nproc-per-node 2 -- --threads 2 version
expect_code 0; expect_two_ranks "threads 2$"

# 2. A fixres binary given by absolute path, with a subcommand.
run "$FIXRES" launch --nproc-per-node 2 -- "$FIXRES_ABS" version
expect_code 0; expect_two_ranks "fixres [0-9]+\.[0-9]+\.[0-9]+$"; expect_two_ranks "threads [0-9]+$"

# 3. Any program by absolute path, its arguments kept as they are (-c is not a launch flag).
run "$FIXRES" launch --nproc-per-node 2 -- /bin/sh -c 'echo rank=$RANK world=$WORLD_SIZE'
expect_code 0
expect_out "^rank=0 world=2$"; expect_out "^\[rank 1\] rank=1 world=2$"
expect_two_ranks "rank=[01] world=2$"

# 4. Relative paths, from the folder they are relative to (as build/bin/fixres from the tree).
run_in "$WORK_ABS" "$FIXRES_ABS" launch --nproc-per-node 2 -- bin/fixres version
expect_code 0; expect_two_ranks "fixres [0-9]+\.[0-9]+\.[0-9]+$"
run_in "$WORK_ABS" "$FIXRES_ABS" launch --nproc-per-node 2 -- ./bin/show-rank a 'b c' --lr 3
expect_code 0
expect_out "^show rank=0 local=0 world=2 args=a b c --lr 3$"
expect_out "^\[rank 1\] show rank=1 local=1 world=2 args=a b c --lr 3$"

# 5. A bare name on PATH: env shows the torchrun-style variables of each rank.
run "$FIXRES" launch --nproc-per-node 2 -- env
expect_code 0
for r in 0 1; do
  expect_out "^$(pre $r)RANK=$r$"; expect_out "^$(pre $r)LOCAL_RANK=$r$"
  expect_out "^$(pre $r)WORLD_SIZE=2$"; expect_out "^$(pre $r)LOCAL_WORLD_SIZE=2$"
  expect_out "^$(pre $r)MASTER_ADDR=127\.0\.0\.1$"; expect_out "^$(pre $r)MASTER_PORT=[1-9][0-9]*$"
done
# The first executable of that name on PATH wins; a file without the execute bit is skipped.
run env PATH="$NOEXEC:$BIN:$PATH" "$FIXRES_ABS" launch --nproc-per-node 2 -- show-rank x
expect_code 0; expect_two_ranks "show rank=[01] local=[01] world=2 args=x$"

# 6. A subcommand name wins over a program of that name on PATH; a path or --program reaches
# the program.
run env PATH="$BIN:$PATH" "$FIXRES_ABS" launch --nproc-per-node 2 -- version
expect_code 0; expect_two_ranks "fixres [0-9]+\.[0-9]+\.[0-9]+$"
grep -q "script named version" "$OUT" && bad "a program on PATH shadowed the subcommand"
run_in "$BIN" "$FIXRES_ABS" launch --nproc-per-node 2 -- ./version x
expect_code 0; expect_two_ranks "script named version args=x$"
run env PATH="$BIN:$PATH" "$FIXRES_ABS" launch --nproc-per-node 2 --program version -- --fast
expect_code 0; expect_two_ranks "script named version args=--fast$"
run "$FIXRES" launch --nproc-per-node 2 --program /bin/sh -- -c 'echo program rank=$RANK'
expect_code 0; expect_two_ranks "program rank=[01]$"

# 7. A rank's exit code is the launcher's, for programs as for fixres, with one error line of
# the launcher's in the form of every fixres error.
run "$FIXRES" launch --nproc-per-node 2 -- /bin/sh -c 'exit $((RANK + 3))'
[ "$CODE" -eq 3 ] || [ "$CODE" -eq 4 ] || bad "exit code $CODE, expected a rank's (3 or 4)"
expect_err "^fixres: error: rank [01] exited with code $CODE; stopping the other ranks$"
[ "$(grep -c "error" "$ERR")" -eq 1 ] || bad "more than one error line"
grep -q "^error:" "$ERR" && bad "an error line without the fixres: prefix"

# 8. Programs that cannot run: exit code 2, one line naming them, no rank started.
run "$FIXRES" launch --nproc-per-node 2 -- no-such-program-4711 --flag
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: .*no-such-program-4711"
expect_no_rank
run "$FIXRES" launch --nproc-per-node 2 -- "$WORK_ABS/missing/prog" x
expect_code 2; expect_err_lines 1; expect_err "missing/prog"; expect_no_rank
run_in "$WORK_ABS" "$FIXRES_ABS" launch --nproc-per-node 2 -- ./bin/no-such
expect_code 2; expect_err_lines 1; expect_err "\./bin/no-such"; expect_no_rank
run "$FIXRES" launch --nproc-per-node 2 -- "$NOEXEC/show-rank"
expect_code 2; expect_err_lines 1; expect_err "noexec/show-rank.*not an executable"; expect_no_rank
run "$FIXRES" launch --nproc-per-node 2 -- "$BIN"
expect_code 2; expect_err_lines 1; expect_err "not an executable"; expect_no_rank
run env PATH="$NOEXEC" "$FIXRES_ABS" launch --nproc-per-node 2 -- show-rank
expect_code 2; expect_err_lines 1; expect_err "show-rank"; expect_no_rank
run "$FIXRES" launch --nproc-per-node 2 --program no-such-program-4711 -- x
expect_code 2; expect_err_lines 1; expect_err "no-such-program-4711"; expect_no_rank
run "$FIXRES" launch --nproc-per-node 2 --
expect_code 2; expect_err_lines 1; expect_err "needs a command"; expect_no_rank

# 9. Bounds on the launch flags: exit code 2, one line naming the flag, before any rank; a
# launch within them says in one line how many ranks it starts.
for args in "--nproc-per-node 100000" "--nproc-per-node 1025" "--nproc-per-node -1" \
  "--nnodes 100000" "--nnodes 0" "--nnodes 2 --node-rank 2 --master-port 1" \
  "--grace-seconds -1" "--grace-seconds nan" "--grace-seconds inf" "--grace-seconds 1e9" \
  "--master-port 70000" "--launch-job-id ../x"; do
  flag=${args%% *}; [ "$flag" = --nnodes ] && [[ $args == *node-rank* ]] && flag=--node-rank
  run "$FIXRES" launch $args -- version
  expect_code 2; expect_err_lines 1; expect_err "^fixres: error: .*$flag"; expect_no_rank
done
# More ranks than this process may open pipes for (ulimit -n): refused, naming the flag.
run bash -c "ulimit -n 200; exec \"$FIXRES_ABS\" launch --nproc-per-node 1000 -- version"
expect_code 2; expect_err_lines 1; expect_err "^fixres: error: --nproc-per-node 1000 .*ulimit -n"
expect_no_rank
run "$FIXRES" launch --nproc-per-node 3 -- version
expect_code 0; expect_err "^launch: starting 3 rank\(s\) of "
[ "$(grep -c "launch: starting" "$ERR")" -eq 1 ] || bad "the start is not said in one line"

# 10. What a rank started ends with it. A failing rank's sibling stops as a whole process group
# (the shell and its `sleep` child, which holds the output pipe): the job ends at once, not when
# the sleep would. Ranks that succeeded but left a child holding their output: the launcher
# relays what they wrote, waits the grace period, then kills the leftover (no process left).
start=$(date +%s)
run "$FIXRES" launch --nproc-per-node 2 --grace-seconds 5 -- /bin/sh -c '[ "$RANK" = 1 ] && exit 3; sleep 60'
expect_code 3
[ $(($(date +%s) - start)) -lt 30 ] || bad "a stopped rank's child kept the job alive"
LEFT="$WORK_ABS/leftover.sh"
echo 'sleep 60' >"$LEFT"
start=$(date +%s)
run "$FIXRES" launch --nproc-per-node 2 --grace-seconds 1 -- /bin/sh -c \
  "echo \"out \$RANK\"; (/bin/sh '$LEFT' &); echo \"done \$RANK\""
expect_code 0; expect_out "^done 0$"; expect_out "^\[rank 1\] done 1$"
[ $(($(date +%s) - start)) -lt 30 ] || bad "a rank's leftover child kept the launcher waiting"
sleep 0.5
pgrep -f "$LEFT" >/dev/null && bad "a rank's leftover child outlived the launcher"

# 11. The help states the rule, with the subcommands as declared (the last one included).
run "$FIXRES" launch --help
expect_code 0; expect_out "PATH"; expect_out "train, finetune"; expect_out "sweep"

finish
