// RUN: tandem-opt %s --llm-specialize-phase --llm-to-state --state-to-tdma --tdma-allocate-tcm | FileCheck %s

// Buffers are placed first fit at the target's 64 B alignment; the second matmul starts after the
// first one's last use, so its buffers reuse the same TCM from address 0.
// CHECK-LABEL: func.func @two
// CHECK-SAME: tdma.tcm_peak = 249856
// CHECK: tdma.alloc {alignment = 64 : i64, bytes = 16384 : i64, offset = 0 : i64, role = "x"}
// CHECK: tdma.alloc {alignment = 64 : i64, bytes = 32768 : i64, offset = 16384 : i64, role = "y0"}
// CHECK: tdma.matmul_tiles
// CHECK: tdma.alloc {alignment = 64 : i64, bytes = 32768 : i64, offset = 0 : i64, role = "x"}
// CHECK: tdma.matmul_tiles
func.func @two(%x: tensor<1x256xf16>, %w1: tensor<512x256xf16>, %w2: tensor<256x512xf16>) -> tensor<1x256xf16> {
  %h = llm.linear %x, %w1 {quant = "q4_0"} : tensor<1x256xf16>, tensor<512x256xf16> -> tensor<1x512xf16>
  %y = llm.linear %h, %w2 {quant = "q4_0"} : tensor<1x512xf16>, tensor<256x512xf16> -> tensor<1x256xf16>
  return %y : tensor<1x256xf16>
}
