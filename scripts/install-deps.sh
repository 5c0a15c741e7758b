#!/usr/bin/env bash
# Installs what tandem builds and tests with, from Debian 12's packages.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  clang libclang-rt-14-dev            # libFuzzer and the fuzz build
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libpcre2-dev libssl-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo   # the OpenCL device (PoCL on CPUs)
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools      # the NPU compiler (MLIR 19)
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
