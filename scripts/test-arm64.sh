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
# qemu-aarch64 runs these single-threaded tests on one host core: the four runs go side by side
# (about half the stage's time on two cores), each printed whole when it ends.
runs=("max|*MatmulTest.MatchesReference*neon:*DequantizedTypes.*neon")
for cpu in cortex-a53 neoverse-n1 max; do
  runs+=("$cpu|*PackedDecode.*:MatmulApi.PicksTheBestIsaOfThisCpu:KvProducts.*")
done
logs=$(mktemp -d)
pids=()
for i in "${!runs[@]}"; do
  IFS='|' read -r cpu filter <<<"${runs[$i]}"
  QEMU_CPU=$cpu qemu-aarch64 $BIN/matmul_test --gtest_brief=1 --gtest_filter="$filter" >"$logs/$i" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!runs[@]}"; do
  if ! wait "${pids[$i]}"; then status=1; fi
  IFS='|' read -r cpu filter <<<"${runs[$i]}"
  echo "-- matmul_test under qemu -cpu $cpu ($filter)"
  cat "$logs/$i"
done
rm -rf "$logs"
[ "$status" = 0 ] || { echo "test-arm64: a matmul_test run under qemu failed"; exit 1; }
bash tests/arm64/greedy_tokens_match.sh build/release/bin/tandem $BIN/tandem "${TANDEM_SHARED_DIR:-../shared}" \
  build/arm64-release/greedy-tokens cortex-a53 neoverse-n1 max
