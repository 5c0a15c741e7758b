#!/usr/bin/env bash
# The aarch64 stage of test-all.sh (needs scripts/install-deps.sh --arm64 and the release build):
# cross-builds tandem and matmul_test, runs the matmul kernels' tests under qemu for three CPU
# models (the three kernel paths), then compares greedy tokens with the x86-64 build.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset arm64-release -DTANDEM_WERROR=ON >/dev/null
cmake --build --preset arm64-release --target tandem matmul_test kernel_pass
BIN=build/arm64-release/bin
# The kernel paths against the fp64 reference. The fp32 family (NEON GEMV and GEMM; the
# dequantizing path) is the same on every aarch64 core: once, under the "max" model. The packed
# int8 kernels differ by CPU (plain NEON, SDOT, SMMLA): every packed type under each model, with
# the fp16 attention kernels (skipped under cortex-a53, which lacks FEAT_FP16).
QEMU_CPU=max qemu-aarch64 $BIN/matmul_test --gtest_brief=1 \
  --gtest_filter='*MatmulTest.MatchesReference*neon:*DequantizedTypes.*neon'
for cpu in cortex-a53 neoverse-n1 max; do
  echo "-- matmul_test under qemu -cpu $cpu"
  QEMU_CPU=$cpu qemu-aarch64 $BIN/matmul_test --gtest_brief=1 \
    --gtest_filter='*PackedDecode.*:MatmulApi.PicksTheBestIsaOfThisCpu:KvProducts.*'
done
bash tests/arm64/greedy_tokens_match.sh build/release/bin/tandem $BIN/tandem "${TANDEM_SHARED_DIR:-../shared}" \
  build/arm64-release/greedy-tokens cortex-a53 neoverse-n1 max
