// RUN: tandem-opt %s --tdma-allocate-tcm="tcm-budget=65536" -split-input-file -verify-diagnostics

// Three 24 KiB buffers live together need 72 KiB: the third does not fit 64 KiB, and the
// diagnostic names it, the budget and what is live beside it.
func.func @overflow(%x: tensor<1x64xf16>, %p: tensor<2304xi8>) -> tensor<1x64xf16> {
  %a = tdma.alloc {bytes = 24576 : i64, alignment = 64 : i64, role = "x"} : index
  %b = tdma.alloc {bytes = 24576 : i64, alignment = 64 : i64, role = "y0"} : index
  // expected-error @+1 {{TCM overflow: buffer 'w0' of 24576 B does not fit the budget of 65536 B; live beside it: 'x' 24576 B @0; 'y0' 24576 B @24576; (49152 B live)}}
  %c = tdma.alloc {bytes = 24576 : i64, alignment = 64 : i64, role = "w0"} : index
  %y = tdma.matmul_tiles %x, %p buffers(%a, %b, %c) {format = "f16", order = "activation_stationary", n_block = 32 : i64,
      slab_out = 1 : i64, slab_in = 1 : i64, double_buffer = false, double_buffer_out = false, est_cycles = 0.0 : f64}
      : tensor<1x64xf16>, tensor<2304xi8> -> tensor<1x64xf16>
  return %y : tensor<1x64xf16>
}

// -----

// Buffers whose live ranges do not overlap share addresses: two 40 KiB buffers fit 64 KiB one
// after the other.
func.func @reuse(%x: tensor<1x64xf16>, %p: tensor<2304xi8>) -> tensor<1x64xf16> {
  %a = tdma.alloc {bytes = 40960 : i64, alignment = 64 : i64, role = "first"} : index
  tdma.dma_start "load" %x to %a {ddr_offset = 0 : i64, ddr_stride = 128 : i64, rows = 1 : i64, row_bytes = 128 : i64,
      tcm_stride = 128 : i64, event = 0 : i64} : tensor<1x64xf16>
  tdma.dma_wait {event = 0 : i64}
  %b = tdma.alloc {bytes = 40960 : i64, alignment = 64 : i64, role = "second"} : index
  tdma.dma_start "load" %x to %b {ddr_offset = 0 : i64, ddr_stride = 128 : i64, rows = 1 : i64, row_bytes = 128 : i64,
      tcm_stride = 128 : i64, event = 0 : i64} : tensor<1x64xf16>
  tdma.dma_wait {event = 0 : i64}
  return %x : tensor<1x64xf16>
}
