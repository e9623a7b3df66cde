#!/usr/bin/env bash
# `make bench`: runs every bench/*_bench.sh with the build folder as first argument.
set -euo pipefail
BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
for script in "$HERE"/*_bench.sh; do
  echo "## $(basename "$script")"
  bash "$script" "$BUILD"
done
