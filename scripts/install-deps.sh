#!/usr/bin/env bash
# Installs every Debian package fixres needs to build, test, benchmark and run its demo.
# Idempotent: packages already installed are left alone; apt-get runs only when one is missing.
# --fuzz adds clang and its libFuzzer runtime (make fuzz, make test-long).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config clang-format
  libtorch-dev libgloo-dev libopenblas0-pthread
  libjpeg62-turbo-dev libpng-dev libwebp-dev libtiff-dev libstb-dev
  libcli11-dev nlohmann-json3-dev libcurl4-openssl-dev libssl-dev
  libgtest-dev libgmock-dev
  python3-torch python3-torchvision python3-pil python3-numpy python3-onnx fonts-dejavu-core
  dataset-fashion-mnist gnuplot-nox iproute2 procps libgl1 libglib2.0-0
)
if [ "${1:-}" = "--fuzz" ]; then PACKAGES+=(clang libclang-rt-14-dev); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "deps: installing ${missing[*]}"
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
