// RUN: tandem-opt %s --llm-specialize-phase --llm-to-state | FileCheck %s
// RUN: tandem-opt %s --llm-specialize-phase --llm-to-state=layout=f16_tiles | FileCheck %s --check-prefix=TILES
// RUN: not tandem-opt %s --llm-specialize-phase --llm-to-state=layout=bogus 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not tandem-opt %s --llm-to-state 2>&1 | FileCheck %s --check-prefix=ORDER

// A decode GEMV streams every weight once: the q4_0 blocks (18 B per 32 weights, scale
// interleaved) are DMA'd and unpacked on the vector unit. 256x256 q4_0 in 32x32 tiles:
// 8 x 8 tiles x 32 blocks x 18 B = 36864 B.
// CHECK-LABEL: func.func @decode
// CHECK: %[[P:.*]] = state.weight_pack %{{.*}} {layout = "interleaved_unpack", quant = "q4_0", tile = 32 : i64} : tensor<256x256xf16> -> tensor<36864xi8>
// CHECK: state.matmul %{{.*}}, %[[P]] {format = "q4_0", order = "activation_stationary", out = 256 : i64, phase = "decode", tile = 32 : i64}
// Forced pre-dequantized tiles: 8 x 8 x 2 KiB.
// TILES-LABEL: func.func @decode
// TILES: state.weight_pack %{{.*}} {layout = "f16_tiles", quant = "q4_0", tile = 32 : i64} : tensor<256x256xf16> -> tensor<131072xi8>
// TILES: state.matmul {{.*}}format = "f16"
func.func @decode(%x: tensor<1x256xf16>, %w: tensor<256x256xf16>) -> tensor<1x256xf16> {
  %y = llm.linear %x, %w {quant = "q4_0"} : tensor<1x256xf16>, tensor<256x256xf16> -> tensor<1x256xf16>
  return %y : tensor<1x256xf16>
}

// An f16 weight has no blocks: always f16 tiles. Non-linear ops stay at the llm level.
// CHECK-LABEL: func.func @f16
// CHECK: state.weight_pack {{.*}}layout = "f16_tiles", quant = "f16"
// CHECK: llm.rmsnorm
func.func @f16(%x: tensor<4x64xf16>, %w: tensor<64x64xf16>, %g: tensor<64xf16>) -> tensor<4x64xf16> {
  %y = llm.linear %x, %w : tensor<4x64xf16>, tensor<64x64xf16> -> tensor<4x64xf16>
  %n = llm.rmsnorm %y, %g {eps = 1.0e-05 : f32} : tensor<4x64xf16>, tensor<64xf16>
  return %n : tensor<4x64xf16>
}

// BAD: layout must be auto, interleaved_unpack or f16_tiles, got 'bogus'
// ORDER: has no phase/dataflow: run llm-specialize-phase before llm-to-state
