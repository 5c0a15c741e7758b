// RUN: rm -rf %t && mkdir -p %t
// RUN: tandem-opt %s --npu-export="dir=%t" -split-input-file -verify-diagnostics
// RUN: FileCheck %s --input-file %t/ok.tnpu

// The exported file is the device's Program text format, one instruction per line.
// CHECK: program ok
// CHECK-NEXT: events 2
// CHECK-NEXT: buffer x bytes=2048 ro
// CHECK-NEXT: buffer y bytes=2048 rw
// CHECK-NEXT: dma.load buf=0 off=0 stride=64 rows=32 bytes=64 tcm=0 tstride=64 ev=0
// CHECK-NEXT: wait ev=0
// CHECK-NEXT: dma.store buf=1 off=0 stride=64 rows=32 bytes=64 tcm=0 tstride=64 ev=1
npu.program @ok events 2 {
  npu.buffer "x" {bytes = 2048 : i64, writable = false}
  npu.buffer "y" {bytes = 2048 : i64, writable = true}
  npu.dma_load {buffer = 0 : i64, ddr_offset = 0 : i64, ddr_stride = 64 : i64, rows = 32 : i64, row_bytes = 64 : i64,
                tcm = 0 : i64, tcm_stride = 64 : i64, event = 0 : i64}
  npu.wait {event = 0 : i64}
  npu.dma_store {buffer = 1 : i64, ddr_offset = 0 : i64, ddr_stride = 64 : i64, rows = 32 : i64, row_bytes = 64 : i64,
                 tcm = 0 : i64, tcm_stride = 64 : i64, event = 1 : i64}
}

// -----

// Past the end of the v75's 8 MiB TCM: the device's own check rejects it at export.
// expected-error @+1 {{fails the hexagon-v75 device check}}
npu.program @past_tcm events 1 {
  npu.buffer "x" {bytes = 2048 : i64, writable = false}
  npu.dma_load {buffer = 0 : i64, ddr_offset = 0 : i64, ddr_stride = 64 : i64, rows = 32 : i64, row_bytes = 64 : i64,
                tcm = 8388544 : i64, tcm_stride = 64 : i64, event = 0 : i64}
}
