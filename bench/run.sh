#!/usr/bin/env bash
# `make bench`: runs every bench/*_bench.sh with the build folder as first argument. The second
# build (PyTorch 2.11's LibTorch, `make build-cuda`) is the optional second argument, or
# CUDA_BUILD_DIR (default build-cuda); the benchmarks that compare both builds take it from there
# and print n/a where it is missing.
set -euo pipefail
BUILD=${1:-build}
export CUDA_BUILD_DIR=${2:-${CUDA_BUILD_DIR:-build-cuda}}
HERE=$(cd "$(dirname "$0")" && pwd)
for script in "$HERE"/*_bench.sh; do
  echo "## $(basename "$script")"
  bash "$script" "$BUILD"
done
