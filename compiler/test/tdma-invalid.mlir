// RUN: tandem-opt %s -split-input-file -verify-diagnostics

func.func @align() -> index {
  // expected-error @+1 {{alignment must be a power of two, got 48}}
  %a = tdma.alloc {bytes = 1024 : i64, alignment = 48 : i64, role = "x"} : index
  return %a : index
}

// -----

func.func @offset() -> index {
  // expected-error @+1 {{offset 100 is not a multiple of the alignment 64}}
  %a = tdma.alloc {bytes = 1024 : i64, alignment = 64 : i64, role = "x", offset = 100 : i64} : index
  return %a : index
}

// -----

func.func @count(%x: tensor<1x64xf16>, %p: tensor<2304xi8>) -> tensor<1x64xf16> {
  %a = tdma.alloc {bytes = 4096 : i64, alignment = 64 : i64, role = "x"} : index
  // expected-error @+1 {{expects 3 TCM buffers for this buffering, got 1}}
  %y = tdma.matmul_tiles %x, %p buffers(%a) {format = "f16", order = "activation_stationary", n_block = 32 : i64,
      slab_out = 1 : i64, slab_in = 1 : i64, double_buffer = false, double_buffer_out = false, est_cycles = 0.0 : f64}
      : tensor<1x64xf16>, tensor<2304xi8> -> tensor<1x64xf16>
  return %y : tensor<1x64xf16>
}

// -----

func.func @stride(%x: tensor<1x64xf16>) {
  %a = tdma.alloc {bytes = 4096 : i64, alignment = 64 : i64, role = "x"} : index
  // expected-error @+1 {{tcm_stride 64 overlaps rows of 128 bytes}}
  tdma.dma_start "load" %x to %a {ddr_offset = 0 : i64, ddr_stride = 128 : i64, rows = 1 : i64, row_bytes = 128 : i64,
      tcm_stride = 64 : i64, event = 0 : i64} : tensor<1x64xf16>
  return
}

// -----

func.func @units() {
  // expected-error @+1 {{unknown unit "dsp" (dma, matrix, vector)}}
  tdma.signal {event = 1 : i64, units = ["matrix", "dsp"]}
  return
}

// -----

func.func @tcm_bounds(%x: tensor<4x64xf16>) {
  %a = tdma.alloc {bytes = 256 : i64, alignment = 64 : i64, role = "stage"} : index
  // expected-error @+1 {{TCM side ends at byte 384 of a 256-byte buffer}}
  tdma.dma_start "load" %x to %a {ddr_offset = 0 : i64, ddr_stride = 128 : i64, rows = 2 : i64, row_bytes = 128 : i64,
      tcm_stride = 128 : i64, tcm_offset = 128 : i64, event = 0 : i64} : tensor<4x64xf16>
  return
}

// -----

func.func @ddr_bounds(%x: tensor<4x64xf16>) {
  %a = tdma.alloc {bytes = 1024 : i64, alignment = 64 : i64, role = "stage"} : index
  // expected-error @+1 {{DDR side ends at byte 640 of a 512-byte tensor}}
  tdma.dma_start "store" %x to %a {ddr_offset = 256 : i64, ddr_stride = 256 : i64, rows = 2 : i64, row_bytes = 128 : i64,
      tcm_stride = 128 : i64, event = 0 : i64} : tensor<4x64xf16>
  return
}

// -----

func.func @vector_op(%x: tensor<4x64xf16>, %g: tensor<64xf16>) -> tensor<4x64xf16> {
  %r = tdma.alloc {bytes = 4096 : i64, alignment = 64 : i64, role = "rows"} : index
  // expected-error @+1 {{op must be rmsnorm, swiglu or add, got "gelu"}}
  %y = tdma.vector_rows "gelu" %x, %g buffers(%r) {eps = 0.0 : f32, rows_per_chunk = 4 : i64, est_cycles = 1.0 : f64}
      : tensor<4x64xf16>, tensor<64xf16> -> tensor<4x64xf16>
  return %y : tensor<4x64xf16>
}

// -----

func.func @vector_gain(%x: tensor<4x64xf16>, %g: tensor<32xf16>) -> tensor<4x64xf16> {
  %r = tdma.alloc {bytes = 4096 : i64, alignment = 64 : i64, role = "rows"} : index
  // expected-error @+1 {{b must be the gain vector of the row width, got 'tensor<32xf16>'}}
  %y = tdma.vector_rows "rmsnorm" %x, %g buffers(%r) {eps = 1.0e-05 : f32, rows_per_chunk = 4 : i64, est_cycles = 1.0 : f64}
      : tensor<4x64xf16>, tensor<32xf16> -> tensor<4x64xf16>
  return %y : tensor<4x64xf16>
}

// -----

func.func @vector_chunk(%a: tensor<4x64xf16>, %b: tensor<4x64xf16>) -> tensor<4x64xf16> {
  %r = tdma.alloc {bytes = 4096 : i64, alignment = 64 : i64, role = "rows"} : index
  // expected-error @+1 {{rows_per_chunk 8 not in 1..4}}
  %y = tdma.vector_rows "add" %a, %b buffers(%r) {eps = 0.0 : f32, rows_per_chunk = 8 : i64, est_cycles = 1.0 : f64}
      : tensor<4x64xf16>, tensor<4x64xf16> -> tensor<4x64xf16>
  return %y : tensor<4x64xf16>
}

// -----

// A fused norm needs the matmul schedule's buffers plus its gain row and scalar slot.
func.func @norm_linear_buffers(%x: tensor<1x64xf16>, %g: tensor<64xf16>, %p: tensor<8192xi8>) -> tensor<1x64xf16> {
  %a = tdma.alloc {bytes = 4096 : i64, alignment = 64 : i64, role = "x"} : index
  %b = tdma.alloc {bytes = 4096 : i64, alignment = 64 : i64, role = "y0"} : index
  %c = tdma.alloc {bytes = 4096 : i64, alignment = 64 : i64, role = "w0"} : index
  // expected-error @+1 {{expects 5 TCM buffers for this buffering, got 3}}
  %y = tdma.norm_linear %x, %g packs(%p) buffers(%a, %b, %c) {eps = 1.0e-05 : f32, format = "f16",
      order = "activation_stationary", n_block = 32 : i64, slab_out = 1 : i64, slab_in = 1 : i64, double_buffer = false,
      double_buffer_out = false, est_cycles = 0.0 : f64}
      : tensor<1x64xf16>, tensor<64xf16>, (tensor<8192xi8>) -> (tensor<1x64xf16>)
  return %y : tensor<1x64xf16>
}

// -----

func.func @norm_linear_gain(%x: tensor<1x64xf16>, %g: tensor<32xf16>, %p: tensor<8192xi8>) -> tensor<1x64xf16> {
  %a = tdma.alloc {bytes = 4096 : i64, alignment = 64 : i64, role = "x"} : index
  %b = tdma.alloc {bytes = 4096 : i64, alignment = 64 : i64, role = "y0"} : index
  %c = tdma.alloc {bytes = 4096 : i64, alignment = 64 : i64, role = "w0"} : index
  %d = tdma.alloc {bytes = 128 : i64, alignment = 64 : i64, role = "gain"} : index
  %e = tdma.alloc {bytes = 64 : i64, alignment = 64 : i64, role = "norm_scalar"} : index
  // expected-error @+1 {{gain must be the vector of the row width 64, got 'tensor<32xf16>'}}
  %y = tdma.norm_linear %x, %g packs(%p) buffers(%a, %b, %c, %d, %e) {eps = 1.0e-05 : f32, format = "f16",
      order = "activation_stationary", n_block = 32 : i64, slab_out = 1 : i64, slab_in = 1 : i64, double_buffer = false,
      double_buffer_out = false, est_cycles = 0.0 : f64}
      : tensor<1x64xf16>, tensor<32xf16>, (tensor<8192xi8>) -> (tensor<1x64xf16>)
  return %y : tensor<1x64xf16>
}

// -----

func.func @norm_linear_results(%x: tensor<1x64xf16>, %g: tensor<64xf16>, %p: tensor<8192xi8>) -> tensor<1x64xf16> {
  %a = tdma.alloc {bytes = 4096 : i64, alignment = 64 : i64, role = "x"} : index
  %b = tdma.alloc {bytes = 4096 : i64, alignment = 64 : i64, role = "y0"} : index
  %c = tdma.alloc {bytes = 4096 : i64, alignment = 64 : i64, role = "w0"} : index
  %d = tdma.alloc {bytes = 128 : i64, alignment = 64 : i64, role = "gain"} : index
  %e = tdma.alloc {bytes = 64 : i64, alignment = 64 : i64, role = "norm_scalar"} : index
  // expected-error @+1 {{has 1 packs but 2 results}}
  %y:2 = tdma.norm_linear %x, %g packs(%p) buffers(%a, %b, %c, %d, %e) {eps = 1.0e-05 : f32, format = "f16",
      order = "activation_stationary", n_block = 32 : i64, slab_out = 1 : i64, slab_in = 1 : i64, double_buffer = false,
      double_buffer_out = false, est_cycles = 0.0 : f64}
      : tensor<1x64xf16>, tensor<64xf16>, (tensor<8192xi8>) -> (tensor<1x64xf16>, tensor<1x64xf16>)
  return %y#0 : tensor<1x64xf16>
}

// -----

func.func @norm_linear_rows(%x: tensor<2x64xf16>, %g: tensor<64xf16>, %p: tensor<8192xi8>) -> tensor<1x64xf16> {
  %a = tdma.alloc {bytes = 4096 : i64, alignment = 64 : i64, role = "x"} : index
  %b = tdma.alloc {bytes = 4096 : i64, alignment = 64 : i64, role = "y0"} : index
  %c = tdma.alloc {bytes = 4096 : i64, alignment = 64 : i64, role = "w0"} : index
  %d = tdma.alloc {bytes = 128 : i64, alignment = 64 : i64, role = "gain"} : index
  %e = tdma.alloc {bytes = 64 : i64, alignment = 64 : i64, role = "norm_scalar"} : index
  // expected-error @+1 {{every result must be rank-2 with the input's 2 rows, got 'tensor<1x64xf16>'}}
  %y = tdma.norm_linear %x, %g packs(%p) buffers(%a, %b, %c, %d, %e) {eps = 1.0e-05 : f32, format = "f16",
      order = "activation_stationary", n_block = 32 : i64, slab_out = 1 : i64, slab_in = 1 : i64, double_buffer = false,
      double_buffer_out = false, est_cycles = 0.0 : f64}
      : tensor<2x64xf16>, tensor<64xf16>, (tensor<8192xi8>) -> (tensor<1x64xf16>)
  return %y : tensor<1x64xf16>
}
