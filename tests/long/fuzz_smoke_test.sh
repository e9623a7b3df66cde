#!/usr/bin/env bash
# 30 seconds of each libFuzzer target (fuzz/run.sh) from the committed seed corpus: decoding,
# weight/checkpoint files, IDX, .npy, tar shards, the image folder index, each new codec (BMP, WebP,
# TIFF, PNM), --config files and model folders. Fails on any crash, leak or undefined behaviour.
# Usage: fuzz_smoke_test.sh SOURCE_DIR
set -euo pipefail
SRC="$1"
command -v clang++ >/dev/null || { echo "SKIP: clang++ not installed (scripts/install-deps.sh --fuzz)"; exit 77; }
FUZZ_BUILD_DIR="$SRC/build-fuzz" "$SRC/fuzz/run.sh" "${FUZZ_SMOKE_SECONDS:-30}"
