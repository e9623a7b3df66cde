#!/usr/bin/env bash
# What `fixres version` says of the build, against the Python package of the same LibTorch and
# the libraries the binary links. The CPU build (Debian's LibTorch): "CPU build", Gloo, no CUDA
# library linked. The CUDA build (PyTorch 2.x's LibTorch, FIXRES_PYTHON its interpreter): the
# LibTorch, CUDA, cuDNN and NCCL versions torch reports (torch.__version__, torch.version.cuda,
# torch.backends.cudnn.version(), torch.cuda.nccl.version()), "no device" on a machine without
# a GPU, and libtorch_cuda and libnccl among the shared libraries ldd resolves. The CPU build's
# start-up link order binds every symbol where it binds without it (link_order_check.py).
set -u
source "$(dirname "$0")/lib.sh" "$@"

run "$FIXRES" version
expect_code 0
cp "$OUT" "$WORK/version.txt"
libtorch=$(sed -n 's/^libtorch \([0-9.]*\),.*/\1/p' "$WORK/version.txt")
ldd "$FIXRES" >"$WORK/ldd.txt" 2>&1 || bad "ldd $FIXRES failed"
if grep -q "not found" "$WORK/ldd.txt"; then bad "unresolved libraries: $(grep 'not found' "$WORK/ldd.txt" | tr -d '\t')"; fi
# One c10: a PyTorch wheel's LibTorch on a machine that also has Debian's once linked Debian's
# libc10.so.1.13 beside its own (cmake/FixresDeps.cmake), and a program that loaded it first aborted.
c10s=$(grep -cE '^[[:space:]]*libc10\.so' "$WORK/ldd.txt")
[ "$c10s" -eq 1 ] || bad "$c10s c10 libraries loaded: $(grep -E '^[[:space:]]*libc10\.so' "$WORK/ldd.txt" | tr -d '\t' | tr '\n' ' ')"

if grep -q "^libtorch .*, CPU build$" "$WORK/version.txt"; then
  expect_out "^collectives gloo$"
  expect_out "^cuda unavailable \(CPU build\)$"
  grep -q "libtorch_cuda" "$WORK/ldd.txt" && bad "the CPU build links libtorch_cuda"
  # Debian's Python has the same LibTorch: its version is torch's.
  if [ "$PY_INTERPRETER" = /usr/bin/python3 ]; then
    want=$("$PY" -c 'import re, torch; print(re.match(r"[0-9]+\.[0-9]+\.[0-9]+", torch.__version__).group(0))')
    [ "$libtorch" = "$want" ] || bad "libtorch $libtorch, Debian's torch is $want"
  fi
  # The start-up order (cmake/FixresLinkOrder.cmake): the ordered libraries first, and every
  # symbol bound where it is bound without the order (the probe).
  BUILD=$(dirname "$(dirname "$FIXRES")")
  if [ -s "$BUILD/link-order.rsp" ] && [ -x "$BUILD/fixres_link_probe" ]; then
    run "$PY" "$SRC/tests/reference/link_order_check.py" "$FIXRES" "$BUILD/fixres_link_probe" \
      "$BUILD/link-order.rsp"
    expect_code 0; cat "$OUT"
  else
    skip_check link-order "no link order in $BUILD (FIXRES_LINK_ORDER off, or no python3 or nm)"
  fi
  finish
fi

expect_out "^libtorch [0-9.]+, CUDA build \(CUDA [0-9]+\.[0-9]+, cuDNN [0-9]+\.[0-9]+\.[0-9]+\)$"
"$PY" - "$WORK/version.txt" >"$WORK/want.txt" <<'PY' || bad "torch could not report its build"
import re, sys, torch
v = torch.cuda.nccl.version()
c = torch.backends.cudnn.version()
print("libtorch %s, CUDA build (CUDA %s, cuDNN %d.%d.%d)" % (
    re.match(r"[0-9]+\.[0-9]+\.[0-9]+", torch.__version__).group(0), torch.version.cuda, c // 10000, c % 10000 // 100, c % 100))
print("nccl %d.%d.%d" % tuple(v) if isinstance(v, tuple) else "nccl %s" % v)
print("devices %d" % torch.cuda.device_count())
PY
want_build=$(sed -n 1p "$WORK/want.txt")
grep -qxF "$want_build" "$WORK/version.txt" || bad "build line differs from torch's: want '$want_build'"
want_nccl=$(sed -n 2p "$WORK/want.txt")
grep -qE "^collectives (gloo, )?$want_nccl$" "$WORK/version.txt" || bad "collectives line lacks '$want_nccl'"
if [ "$(sed -n 's/^devices //p' "$WORK/want.txt")" = 0 ]; then expect_out "^cuda no device$"; fi
grep -q "libtorch_cuda.so" "$WORK/ldd.txt" || bad "the CUDA build does not link libtorch_cuda"
grep -q "libnccl.so" "$WORK/ldd.txt" || bad "the CUDA build does not load libnccl"
echo "$(grep -E '^(libtorch|collectives|cuda) ' "$WORK/version.txt" | tr '\n' ';')"
grep -E "libtorch_cuda|libnccl|libcudart|libcudnn\.so" "$WORK/ldd.txt" | sed 's/ (0x.*//'
finish
