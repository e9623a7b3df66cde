#!/usr/bin/env bash
# Downloads, on a Debian machine with network, the header-only and test packages the GPU host
# lacks (bench/gpu/run.sh unpacks them into a private prefix there): CLI11, nlohmann-json and
# stb (for its stb_image.h: the BMP reader), all used header-only.
# Usage: bench/gpu/fetch-debs.sh [DIR] (default .debs, ignored by git).
set -euo pipefail
DIR=${1:-$(cd "$(dirname "$0")/../.." && pwd)/.debs}
mkdir -p "$DIR"
cd "$DIR"
apt-get download libcli11-dev nlohmann-json3-dev libstb-dev
ls -l "$DIR"
