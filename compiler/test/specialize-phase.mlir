// RUN: tandem-opt %s --llm-specialize-phase | FileCheck %s
// RUN: tandem-opt %s --llm-specialize-phase="target=%data/npu/hexagon-v79.json" | FileCheck %s
// RUN: not tandem-opt %s --llm-specialize-phase="target=%inputs/no-such-target.json" 2>&1 | FileCheck %s --check-prefix=NOTARGET

// One row: decode, and the GEMV dataflow (the array holds the activation tile, weights stream).
// CHECK-LABEL: func.func @decode
// CHECK: llm.linear {{.*}}dataflow = "activation_stationary", phase = "decode"
// CHECK: llm.rmsnorm {{.*}}phase = "decode"
func.func @decode(%x: tensor<1x256xf16>, %w: tensor<512x256xf16>, %g: tensor<512xf16>) -> tensor<1x512xf16> {
  %y = llm.linear %x, %w {quant = "q4_0"} : tensor<1x256xf16>, tensor<512x256xf16> -> tensor<1x512xf16>
  %n = llm.rmsnorm %y, %g {eps = 1.0e-05 : f32} : tensor<1x512xf16>, tensor<512xf16>
  return %n : tensor<1x512xf16>
}

// Many rows: prefill; an explicit dataflow is kept.
// CHECK-LABEL: func.func @prefill
// CHECK: llm.linear {{.*}}dataflow = "weight_stationary", phase = "prefill"
func.func @prefill(%x: tensor<256x256xf16>, %w: tensor<512x256xf16>) -> tensor<256x512xf16> {
  %y = llm.linear %x, %w {dataflow = "weight_stationary"} : tensor<256x256xf16>, tensor<512x256xf16> -> tensor<256x512xf16>
  return %y : tensor<256x512xf16>
}

// A function-level phase wins over the row count (a one-token prompt is still prefill).
// CHECK-LABEL: func.func @one_token_prompt
// CHECK: llm.linear {{.*}}phase = "prefill"
func.func @one_token_prompt(%x: tensor<1x256xf16>, %w: tensor<512x256xf16>) -> tensor<1x512xf16> attributes {llm.phase = "prefill"} {
  %y = llm.linear %x, %w : tensor<1x256xf16>, tensor<512x256xf16> -> tensor<1x512xf16>
  return %y : tensor<1x512xf16>
}

// NOTARGET: cannot load NPU target '{{.*}}no-such-target.json'
