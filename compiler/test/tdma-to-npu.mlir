// RUN: tandem-opt %s --llm-specialize-phase --llm-to-state --state-to-tdma --tdma-allocate-tcm --tdma-to-npu | FileCheck %s
// RUN: not tandem-opt %s --llm-specialize-phase --llm-to-state --state-to-tdma --tdma-to-npu 2>&1 | FileCheck %s --check-prefix=UNPLACED

// The loop becomes a launch of a program holding its instruction stream at the allocated
// addresses: the weight slab DMA'd into w0 (81920 = after x, y0, y1), unpacked on the vector unit
// into u0, tile ops on the arrays, the result stored from the y panel (16384).
// CHECK-LABEL: func.func @gemv
// CHECK: %[[P:.*]] = state.weight_pack
// CHECK-NOT: tdma.
// CHECK: npu.launch @gemv_mm0(%{{.*}}, %[[P]]) : (tensor<1x256xf16>, tensor<73728xi8>) -> tensor<1x512xf16>
// CHECK: npu.program @gemv_mm0 events 15 attributes {tandem.matmul = {arrays = 8 : i64, double_buffer = true, double_buffer_out = true, est_cycles = {{.*}}, format = "q4_0", in = 256 : i64, order = "activation_stationary", out = 512 : i64, rows = 1 : i64}}
// CHECK-NEXT: npu.buffer "x" {bytes = 512 : i64, writable = false}
// CHECK-NEXT: npu.buffer "w" {bytes = 73728 : i64, writable = false}
// CHECK-NEXT: npu.buffer "y" {bytes = 1024 : i64, writable = true}
// CHECK: npu.dma_load {buffer = 1 : i64, {{.*}}tcm = 81920 : i64
// CHECK: npu.vec {a = 81920 : i64, {{.*}}op = "unpack_q4"}
// CHECK: npu.mma
// CHECK: npu.dma_store {buffer = 2 : i64, {{.*}}tcm = 16384 : i64
func.func @gemv(%x: tensor<1x256xf16>, %w: tensor<512x256xf16>) -> tensor<1x512xf16> {
  %y = llm.linear %x, %w {quant = "q4_0"} : tensor<1x256xf16>, tensor<512x256xf16> -> tensor<1x512xf16>
  return %y : tensor<1x512xf16>
}

// UNPLACED: error: TCM buffers are not placed: run tdma-allocate-tcm before tdma-to-npu
