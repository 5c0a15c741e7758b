// RUN: tandem-opt %s -split-input-file -verify-diagnostics

npu.program @readonly events 1 {
  npu.buffer "x" {bytes = 64 : i64, writable = false}
  // expected-error @+1 {{stores into read-only buffer 0}}
  npu.dma_store {buffer = 0 : i64, ddr_offset = 0 : i64, ddr_stride = 64 : i64, rows = 1 : i64, row_bytes = 64 : i64,
                 tcm = 0 : i64, tcm_stride = 64 : i64, event = 0 : i64}
}

// -----

npu.program @undeclared events 1 {
  npu.buffer "x" {bytes = 64 : i64, writable = false}
  // expected-error @+1 {{buffer 3 is not declared (1 buffers)}}
  npu.dma_load {buffer = 3 : i64, ddr_offset = 0 : i64, ddr_stride = 64 : i64, rows = 1 : i64, row_bytes = 64 : i64,
                tcm = 0 : i64, tcm_stride = 64 : i64, event = 0 : i64}
}

// -----

npu.program @event events 2 {
  // expected-error @+1 {{event 5 out of range}}
  npu.wait {event = 5 : i64}
}

// -----

npu.program @late_buffer events 1 {
  npu.barrier
  // expected-error @+1 {{buffers must be declared before the first instruction}}
  npu.buffer "x" {bytes = 64 : i64, writable = false}
}

// -----

npu.program @vec events 1 {
  // expected-error @+1 {{unknown vector op "gelu"}}
  npu.vec {op = "gelu", dst = 0 : i64, a = 0 : i64, b = 0 : i64, c = 0 : i64, n = 64 : i64, imm0 = 0.0 : f32, imm1 = 0.0 : f32}
}

// -----

npu.program @mask events 1 {
  // expected-error @+1 {{units must be a non-empty mask of 1 (dma), 2 (matrix), 4 (vector); got 9}}
  npu.signal {event = 0 : i64, units = 9 : i64}
}

// -----

npu.program @two events 1 {
  npu.buffer "x" {bytes = 64 : i64, writable = false}
  npu.buffer "y" {bytes = 64 : i64, writable = true}
}
func.func @launch(%x: tensor<1x32xf16>, %w: tensor<64xi8>) -> tensor<1x32xf16> {
  // expected-error @+1 {{binds 3 inputs + 1 output(s), but @two declares 2 buffers}}
  %y = npu.launch @two(%x, %w, %x) : (tensor<1x32xf16>, tensor<64xi8>, tensor<1x32xf16>) -> tensor<1x32xf16>
  return %y : tensor<1x32xf16>
}

// -----

func.func @missing(%x: tensor<1x32xf16>) -> tensor<1x32xf16> {
  // expected-error @+1 {{no npu.program named @nowhere}}
  %y = npu.launch @nowhere(%x) : (tensor<1x32xf16>) -> tensor<1x32xf16>
  return %y : tensor<1x32xf16>
}

// -----

// Binding every buffer updates the last in place: the result is that operand's new value.
npu.program @inplace events 1 {
  npu.buffer "rows" {bytes = 64 : i64, writable = false}
  npu.buffer "cache" {bytes = 256 : i64, writable = true}
}
func.func @inplace_type(%r: tensor<1x32xf16>, %c: tensor<4x32xf16>) -> tensor<1x32xf16> {
  // expected-error @+1 {{binds all 2 buffers of @inplace, so it updates the last in place and its result must have the last operand's type}}
  %y = npu.launch @inplace(%r, %c) : (tensor<1x32xf16>, tensor<4x32xf16>) -> tensor<1x32xf16>
  return %y : tensor<1x32xf16>
}

// -----

// A fused program's outputs are its last buffers: operands + results must cover every buffer.
npu.program @fused events 1 {
  npu.buffer "x" {bytes = 64 : i64, writable = false}
  npu.buffer "y0" {bytes = 64 : i64, writable = true}
  npu.buffer "y1" {bytes = 64 : i64, writable = true}
}
func.func @fused_results(%x: tensor<1x32xf16>) -> tensor<1x32xf16> {
  // expected-error @+1 {{binds 1 inputs + 3 output(s), but @fused declares 3 buffers}}
  %y:3 = npu.launch @fused(%x) : (tensor<1x32xf16>) -> (tensor<1x32xf16>, tensor<1x32xf16>, tensor<1x32xf16>)
  return %y#0 : tensor<1x32xf16>
}

// -----

npu.program @fused2 events 1 {
  npu.buffer "x" {bytes = 64 : i64, writable = false}
  npu.buffer "y0" {bytes = 64 : i64, writable = true}
}
func.func @no_results(%x: tensor<1x32xf16>, %y: tensor<1x32xf16>) {
  // expected-error @+1 {{must have at least one result}}
  npu.launch @fused2(%x, %y) : (tensor<1x32xf16>, tensor<1x32xf16>) -> ()
  return
}
