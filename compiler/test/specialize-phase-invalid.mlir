// RUN: tandem-opt %s --llm-specialize-phase -split-input-file -verify-diagnostics

func.func @conflict(%x: tensor<1x256xf16>, %w: tensor<512x256xf16>) -> tensor<1x512xf16> {
  // expected-error @+1 {{phase "prefill" conflicts with "decode" (1 rows)}}
  %y = llm.linear %x, %w {phase = "prefill"} : tensor<1x256xf16>, tensor<512x256xf16> -> tensor<1x512xf16>
  return %y : tensor<1x512xf16>
}

// -----

func.func @decode_many(%x: tensor<4x256xf16>, %w: tensor<512x256xf16>) -> tensor<4x512xf16> attributes {llm.phase = "decode"} {
  // expected-error @+1 {{decode phase needs one row per step, this op has 4}}
  %y = llm.linear %x, %w : tensor<4x256xf16>, tensor<512x256xf16> -> tensor<4x512xf16>
  return %y : tensor<4x512xf16>
}
