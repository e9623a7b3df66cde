#!/usr/bin/env bash
# The project-local Python environment of the LibTorch 2.x build: .venv-torch2/ (ignored by git)
# with every package of requirements-torch2.txt, pinned. Created once; re-installed only when the
# requirements file changes (a stamp holds its checksum). pip keeps its cache in its default
# place, so a second machine state or a rebuilt environment downloads nothing twice.
# Prints nothing but pip's own progress; `scripts/torch2-env.sh --python` prints the interpreter.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${FIXRES_TORCH2_VENV:-$ROOT/.venv-torch2}
REQ=$ROOT/requirements-torch2.txt
PY=$VENV/bin/python
if [ "${1:-}" = "--python" ]; then echo "$PY"; exit 0; fi

want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ -x "$PY" ] && [ "$(cat "$VENV/.requirements.sha256" 2>/dev/null)" = "$want" ]; then exit 0; fi

# The interpreter the environment is made from: the first of python3.11, python3 with a working
# venv module (PyTorch 2.11's wheels exist for Python 3.10 to 3.14); Debian's needs python3-venv.
base=""
for cand in python3.11 python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import ensurepip, venv' 2>/dev/null; then
    base=$cand
    break
  fi
done
if [ -z "$base" ]; then
  echo "torch2-env: no Python with the venv module; installing python3-venv" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends python3-venv
  base=/usr/bin/python3
fi
echo "torch2-env: creating $VENV from $("$base" --version 2>&1) ($base)"
rm -rf "$VENV"
"$base" -m venv "$VENV"
"$PY" -m pip install --quiet --disable-pip-version-check -r "$REQ"
echo "$want" >"$VENV/.requirements.sha256"
"$PY" -c 'import torch, torchvision; print("torch2-env: torch", torch.__version__, "CUDA", torch.version.cuda, "torchvision", torchvision.__version__)'
echo "torch2-env: environment made in ${SECONDS} s"
