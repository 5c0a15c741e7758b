// RUN: tandem-opt %s | tandem-opt | FileCheck %s

// CHECK: npu.program @p events 3 {
// CHECK-NEXT: npu.buffer "x" {bytes = 2048 : i64, writable = false}
// CHECK-NEXT: npu.buffer "y" {bytes = 2048 : i64, writable = true}
// CHECK-NEXT: npu.dma_load
// CHECK-NEXT: npu.wait {event = 0 : i64}
// CHECK-NEXT: npu.vec {{.*}}op = "scale"
// CHECK-NEXT: npu.mma
// CHECK-NEXT: npu.signal {event = 1 : i64, units = 6 : i64}
// CHECK-NEXT: npu.wait {event = 1 : i64}
// CHECK-NEXT: npu.dma_store
// CHECK-NEXT: npu.barrier
npu.program @p events 3 {
  npu.buffer "x" {bytes = 2048 : i64, writable = false}
  npu.buffer "y" {bytes = 2048 : i64, writable = true}
  npu.dma_load {buffer = 0 : i64, ddr_offset = 0 : i64, ddr_stride = 64 : i64, rows = 32 : i64, row_bytes = 64 : i64,
                tcm = 0 : i64, tcm_stride = 64 : i64, event = 0 : i64}
  npu.wait {event = 0 : i64}
  npu.vec {op = "scale", dst = 0 : i64, a = 0 : i64, b = 0 : i64, c = 0 : i64, n = 1024 : i64, imm0 = 0.5 : f32, imm1 = 0.0 : f32}
  npu.mma {unit = 0 : i64, a = 0 : i64, lda = 64 : i64, b = 0 : i64, ldb = 64 : i64, c = 2048 : i64, ldc = 64 : i64,
           acc = false, tb = false, tc = false}
  npu.signal {event = 1 : i64, units = 6 : i64}
  npu.wait {event = 1 : i64}
  npu.dma_store {buffer = 1 : i64, ddr_offset = 0 : i64, ddr_stride = 64 : i64, rows = 32 : i64, row_bytes = 64 : i64,
                 tcm = 2048 : i64, tcm_stride = 64 : i64, event = 2 : i64}
  npu.barrier
}
