#!/usr/bin/env bash
# fixres_client (tests/served/Client.cpp: how run() starts fixres in these tests) against the
# binary itself: the same exit status, stdout and stderr for `version`, a refused flag and a
# missing file; eval from another working folder with relative paths, umask 077 and a FIXRES_
# variable writes the same numbers into a file with the same mode. Beyond that: the command runs
# in a process forked from the server (not the client's child), a command ended by a signal ends
# the client with 128 + the signal, the command of a client killed with SIGKILL is ended too (its
# rank with it), the server holds none of the client's descriptors (a command substitution
# returns while the server lives on), and two clients that start servers at once are both served.
set -u
source "$(dirname "$0")/lib.sh" "$@"
CLIENT=$FIXRES_CLIENT
if [ ! -x "$CLIENT" ]; then
  bad "no fixres_client beside $FIXRES"
  finish
fi
D="$WORK/data"
"$PY" "$SRC/tests/reference/make_image_folder.py" "$D" --classes 3 --train 8 --val 6 --size 40 >/dev/null ||
  bad "data"
"$FIXRES" train --imnet-path "$D" --architecture resnet_tiny --input-size 32 --batch 4 --workers 1 \
  --epochs 1 --iteration-cap 1 --shared-folder-path "$WORK/runs" --job-id w >/dev/null 2>&1 ||
  bad "training the weights"

# same NAME ARGS...: ARGS run by the binary and through the client, each from its own working
# folder (holding a link to the data) with umask 077 and FIXRES_PROGRESS_SECONDS set: the same
# exit status, stdout and stderr.
same() {
  local name=$1 how code; shift
  for how in direct served; do
    mkdir -p "$WORK/$how"; ln -sfn "$D" "$WORK/$how/data"
    local launch=("$CLIENT" "$FIXRES"); [ $how = direct ] && launch=("$FIXRES")
    (cd "$WORK/$how" && umask 077 && FIXRES_PROGRESS_SECONDS=0 "${launch[@]}" "$@" \
      >"$WORK/$name.$how.out" 2>"$WORK/$name.$how.err")
    code=$?; echo "$code" >"$WORK/$name.$how.code"
  done
  cmp -s "$WORK/$name.direct.code" "$WORK/$name.served.code" ||
    bad "$name: exit $(cat "$WORK/$name.served.code") through the client, $(cat "$WORK/$name.direct.code") direct"
  for s in out err; do  # the progress lines' speed masked
    cmp -s <(sed -E 's/[0-9.]+ img\/s/N img\/s/' "$WORK/$name.direct.$s") \
      <(sed -E 's/[0-9.]+ img\/s/N img\/s/' "$WORK/$name.served.$s") || bad "$name: another std$s through the client"
  done
  echo "$name: exit $code, $(wc -l <"$WORK/$name.served.out") stdout and $(wc -l <"$WORK/$name.served.err") stderr lines, the same from both"
}
same version version
same refused eval --imnet-path data --bogus-flag 3
same missing eval --imnet-path data/nowhere --weight-path "$WORK/runs/train/w" --input-size 32
EV=(eval --imnet-path data --weight-path "$WORK/runs/train/w" --input-size 32 --workers 1 --json r.json)
same eval "${EV[@]}"
# FIXRES_PROGRESS_SECONDS=0 reached the command: a progress line (none at the default 30 s).
grep -q "evaluating at 32 px: batch 1 of 1" "$WORK/eval.served.err" || bad "eval through the client printed no progress line"
run "$PY" - "$WORK/direct/r.json" "$WORK/served/r.json" <<'PY'
import json, os, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
ra, rb = a["results"][0], b["results"][0]
for key in ("top1", "top5", "loss"):
    assert abs(ra[key] - rb[key]) <= 1e-6 * max(1.0, abs(ra[key])), (key, ra[key], rb[key])
modes = [oct(os.stat(p).st_mode & 0o777) for p in sys.argv[1:]]
assert modes[0] == modes[1] == "0o600", modes
print("eval from another folder: the same top-1, top-5 and loss, both files", modes[0])
PY
expect_code 0; cat "$OUT"

# The client's command runs in the server's fork; ended by a signal, its client ends with 128 +
# that signal. The launcher's rank (a sleep) shows where the command is.
waitfor() {  # waitfor PATTERN: the pid of a process whose command line has PATTERN (30 s)
  local p
  for _ in $(seq 1 300); do
    p=$(pgrep -f -- "$1" | head -1)
    [ -n "$p" ] && { echo "$p"; return 0; }
    sleep 0.1
  done
  return 1
}
"$CLIENT" "$FIXRES" launch --nproc-per-node 1 --program /bin/sleep -- 301.25 >/dev/null 2>&1 &
C=$!
if S=$(waitfor "sleep 301.25"); then
  L=$(ps -o ppid= -p "$S" | tr -d ' ')
  [ "$(ps -o ppid= -p "$L" | tr -d ' ')" = "$C" ] && bad "the command is the client's own child: not served"
  kill -9 "$L"
  wait_code "$C" 30
  [ "$c" = 137 ] || bad "the client ended with $c when its command was killed (137 expected)"
  echo "a command killed with SIGKILL: its client exits $c"
else
  bad "the served launcher's rank never started"
fi
pkill -f -- "sleep 301.25"

# A client killed with SIGKILL: its command ends, and with it the rank.
"$CLIENT" "$FIXRES" launch --nproc-per-node 1 --program /bin/sleep -- 302.25 >/dev/null 2>&1 &
C=$!
if waitfor "sleep 302.25" >/dev/null; then
  kill -9 "$C"; wait "$C" 2>/dev/null
  for _ in $(seq 1 300); do pgrep -f -- "sleep 302.25" >/dev/null || break; sleep 0.1; done
  if pgrep -f -- "sleep 302.25" >/dev/null; then
    bad "the command of a killed client lives on"
    pkill -f -- "sleep 302.25"
  else
    echo "a client killed with SIGKILL: its command and rank ended"
  fi
else
  bad "the served launcher's rank never started"
fi

# A server of its own (another TMPDIR, another address), started inside a command substitution:
# the substitution returns with the command, the server holding none of its descriptors.
mkdir -p "$WORK/tmp"
got=$(TMPDIR="$WORK/tmp" timeout 120 "$CLIENT" "$FIXRES" version | head -1)
[ "$got" = "$("$FIXRES" version | head -1)" ] || bad "version through a new server: '$got'"
pgrep -f -- "--serve-requests-at $WORK/tmp/" >/dev/null ||
  bad "no server lives on after the substitution returned (or none was started)"
pkill -f -- "--serve-requests-at $WORK/tmp/"
echo "a new server: the substitution returned with the command, the server still running"

# Two clients at once and no server yet: each may start one, the second replacing the first at
# the socket's path; the replaced one still serves the client that reached it. Both get the
# command's output and status.
for i in 1 2 3; do
  mkdir -p "$WORK/two$i"
  TMPDIR="$WORK/two$i" "$CLIENT" "$FIXRES" version >"$WORK/two$i/a" 2>&1 &
  a=$!
  TMPDIR="$WORK/two$i" "$CLIENT" "$FIXRES" version >"$WORK/two$i/b" 2>&1 &
  b=$!
  wait "$a"; ca=$?; wait "$b"; cb=$?
  [ "$ca $cb" = "0 0" ] || bad "two clients at once: exit $ca and $cb"
  cmp -s "$WORK/two$i/a" "$WORK/version.direct.out" && cmp -s "$WORK/two$i/b" "$WORK/version.direct.out" ||
    bad "two clients at once: another output ($(head -c 200 "$WORK/two$i/a" "$WORK/two$i/b"))"
  pkill -f -- "--serve-requests-at $WORK/two$i/"
done
echo "two clients at once with no server, 3 times: both served"
finish
