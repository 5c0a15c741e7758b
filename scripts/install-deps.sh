#!/usr/bin/env bash
# Installs what tandem builds and tests with, from Debian 12's packages.
#   --arm64   also the aarch64 cross-build (cmake --preset arm64-release): Debian's cross toolchain
#             and the arm64 builds of the libraries tandem links (multiarch: dpkg --add-architecture
#             arm64); qemu-user, which runs its binaries, is in the base set (qemu-hexagon).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
ARM64=0
for arg in "$@"; do
  case $arg in
    --arm64) ARM64=1 ;;
    *) echo "usage: $0 [--arm64]" >&2; exit 2 ;;
  esac
done
PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  clang libclang-rt-14-dev            # libFuzzer and the fuzz build
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libpcre2-dev libssl-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo   # the OpenCL device (PoCL on CPUs)
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools      # the NPU compiler (MLIR 19)
  libedit-dev                         # line editing in tandem chat
  libcpp-httplib-dev                  # tandem serve (the HTTP server llama-server uses)
  python3 python3-jinja2              # test oracles: GGUF mutants; Jinja2 for the chat templates
  clang-19 lld-19 qemu-user           # the Hexagon NPU: v66 HVX DSP code, run by qemu-hexagon
)
if [ "$ARM64" = 1 ]; then
  PACKAGES+=(crossbuild-essential-arm64 libc6-dev-arm64-cross
             libstdc++6:arm64 libpcre2-dev:arm64 libssl-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64)
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then $SUDO dpkg --add-architecture arm64; fi
fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # --no-remove: an arm64 library whose amd64 twin is at another version must not uninstall it.
  $SUDO apt-get install -y -qq --no-install-recommends --no-remove "${missing[@]}"
fi
