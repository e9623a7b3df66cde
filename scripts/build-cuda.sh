#!/usr/bin/env bash
# The second build: fixres and its tests against the LibTorch inside a PyTorch 2.x install (the
# CUDA 13 wheel), with CUDA, cuDNN and NCCL, in BUILD_DIR. `make build-cuda` runs it with the
# project's .venv-torch2; bench/gpu/run.sh runs the same script on the GPU host with that host's
# own PyTorch, so both build the same way.
#
# Usage: scripts/build-cuda.sh [--python PY] [--build-dir DIR] [--prefix P] [--no-tests] [--jobs N]
#   --python PY     the interpreter whose torch package holds LibTorch (default: .venv-torch2's)
#   --build-dir DIR default build-cuda
#   --prefix P      one more CMAKE_PREFIX_PATH entry (the GPU host's unpacked Debian packages)
#   --no-tests      fixres alone (the GPU host has no GoogleTest)
#   --optional-deps build without the downloader (libcurl) and the WebP/TIFF/BMP readers where
#                   their headers are absent (FIXRES_OPTIONAL_DEPS; the GPU host's system)
# Environment: TORCH_CUDA_ARCH_LIST (default 9.0, the H100/H200: only CUDA sources compiled
#   here would use it), CUDACXX (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=""; BUILD=$ROOT/build-cuda; EXTRA=""; TESTS=ON; JOBS=$(nproc); OPTIONAL=OFF
while [ $# -gt 0 ]; do
  case "$1" in
    --python) PY=$2; shift 2 ;;
    --build-dir) BUILD=$2; shift 2 ;;
    --prefix) EXTRA=$2; shift 2 ;;
    --no-tests) TESTS=OFF; shift ;;
    --optional-deps) OPTIONAL=ON; shift ;;
    --jobs) JOBS=$2; shift 2 ;;
    *) echo "build-cuda: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [ -z "$PY" ]; then
  "$ROOT/scripts/torch2-env.sh"
  PY=$("$ROOT/scripts/torch2-env.sh" --python)
fi
TORCH_PREFIX=$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)') || {
  echo "build-cuda: $PY has no torch package" >&2
  exit 1
}
NVCC=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$NVCC" ] || { echo "build-cuda: no nvcc (looked on PATH and at $NVCC)" >&2; exit 1; }
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
prefix=$TORCH_PREFIX
[ -n "$EXTRA" ] && prefix="$prefix;$EXTRA"
if [ ! -f "$BUILD/build.ninja" ] || [ "$(cat "$BUILD/.fixres-python" 2>/dev/null)" != "$PY $TESTS $OPTIONAL" ]; then
  echo "build-cuda: configure $BUILD against $("$PY" -c 'import torch; print("PyTorch", torch.__version__)')"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_COMPILER="$NVCC" -DFIXRES_REQUIRE_CUDA=ON \
    -DFIXRES_BUILD_BENCH=OFF -DFIXRES_BUILD_TESTS="$TESTS" -DFIXRES_TEST_PYTHON="$PY" -DFIXRES_OPTIONAL_DEPS="$OPTIONAL"
  echo "$PY $TESTS $OPTIONAL" >"$BUILD/.fixres-python"
fi
cmake --build "$BUILD" -j "$JOBS"
