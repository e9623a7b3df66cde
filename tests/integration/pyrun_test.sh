#!/usr/bin/env bash
# tests/reference/pyrun (the references' interpreter in the integration tests) against the
# interpreter itself: the same stdout, stderr and exit status for a script (argv, __file__,
# __name__, sys.path[0], a module beside it, a relative path from the working folder), -c code,
# code on standard input, an environment variable, PYTHONPATH, the umask, an uncaught exception's
# traceback, sys.exit with a message, and a process ended by a signal (128 + the signal). Beyond
# that: the script runs in the server's fork (torch already imported), two runs draw different
# unseeded NumPy numbers as two processes do, the script of a client killed with SIGKILL is
# ended too, and the server holds none of the client's descriptors (a command substitution
# returns when the script ends, not when the server does).
set -u
source "$(dirname "$0")/lib.sh" "$@"
INTERP=$PY_INTERPRETER
mkdir -p "$WORK/dir/sub" "$WORK/lib"
cat >"$WORK/dir/sub/script.py" <<'EOF'
import os, sys
import helper
print("argv", sys.argv, "name", __name__, "file", os.path.basename(__file__))
print("path0", sys.path[0], "cwd", os.getcwd(), "env", os.environ.get("PYRUN_CHECK"))
print("umask", oct(os.umask(0o022)), "helper", helper.VALUE, "pythonpath", __import__("extra").X)
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
EOF
echo 'VALUE = 41' >"$WORK/dir/sub/helper.py"
echo 'X = "from PYTHONPATH"' >"$WORK/lib/extra.py"

# same NAME ARGS...: runs ARGS with $INTERP and with pyrun (stdin from $WORK/stdin), the same
# stdout, stderr and exit status.
same() {
  local name=$1; shift
  (cd "$WORK/dir" && umask 027 && PYRUN_CHECK=yes PYTHONPATH="$WORK/lib" \
    "$INTERP" "$@" <"$WORK/stdin" >"$WORK/$name.direct.out" 2>"$WORK/$name.direct.err")
  local direct=$?
  (cd "$WORK/dir" && umask 027 && PYRUN_CHECK=yes PYTHONPATH="$WORK/lib" \
    "$PY" "$@" <"$WORK/stdin" >"$WORK/$name.pyrun.out" 2>"$WORK/$name.pyrun.err")
  local served=$?
  CMD="pyrun $*"
  [ "$direct" = "$served" ] || bad "$name: exit $served through pyrun, $direct from $INTERP"
  cmp -s "$WORK/$name.direct.out" "$WORK/$name.pyrun.out" ||
    bad "$name: stdout differs: $(diff "$WORK/$name.direct.out" "$WORK/$name.pyrun.out" | head -5)"
  cmp -s "$WORK/$name.direct.err" "$WORK/$name.pyrun.err" ||
    bad "$name: stderr differs: $(diff "$WORK/$name.direct.err" "$WORK/$name.pyrun.err" | head -5)"
  echo "$name: exit $served, $(wc -l <"$WORK/$name.pyrun.out") stdout lines, the same from both"
}
echo 'import sys; print("stdin", sys.argv, sys.path[0] == "", sys.stdin.read().strip())' >"$WORK/stdin"
same script sub/script.py 3 a "b c"
same script0 sub/script.py 0
same stdin - x y
: >"$WORK/stdin"
same code -c 'import sys, os; print(sys.argv, repr(sys.path[0]), __name__); sys.exit(4)' p q
same traceback -c 'def f():
    raise KeyError("missing")
f()'
same exitmsg -c 'import sys; sys.exit("a message")'
same signal -c 'import os, signal; print("before", flush=True); os.kill(os.getpid(), signal.SIGKILL)'

# The fork of a server that has imported torch.
run "$PY" -c 'import sys; print("torch" in sys.modules)'
expect_code 0; expect_out "^True$"
# Unseeded NumPy draws differ between two runs, as between two processes.
a=$("$PY" -c 'import numpy; print(numpy.random.rand())')
b=$("$PY" -c 'import numpy; print(numpy.random.rand())')
[ -n "$a" ] && [ "$a" != "$b" ] || bad "two runs drew the same unseeded NumPy number ($a, $b)"
# A client killed with SIGKILL: its script is ended, it never writes its file.
"$PY" -c "import time; time.sleep(4); open('$WORK/survived', 'w').write('x')" &
client=$!
sleep 1
kill -9 "$client"; wait "$client" 2>/dev/null
sleep 5
[ ! -e "$WORK/survived" ] || bad "the script of a killed client went on"
# A command substitution returns once the script ends (the server holds no pipe of ours); the
# 60 s bound is a hang check, the server idles for 120 s.
x=$(timeout 60 bash -c "out=\$(\"$PY\" -c 'print(7)'); echo \"\$out\"")
[ "$x" = 7 ] || bad "a command substitution of pyrun gave '$x' (timeout: the server holds the pipe)"
finish
