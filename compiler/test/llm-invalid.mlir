// RUN: tandem-opt %s -split-input-file -verify-diagnostics
// The llm verifiers reject what no lower level could compile.

func.func @width(%x: tensor<4x64xf16>, %w: tensor<32x96xf16>) -> tensor<4x32xf16> {
  // expected-error @+1 {{input width 64 does not match the weight's input dimension 96}}
  %y = llm.linear %x, %w : tensor<4x64xf16>, tensor<32x96xf16> -> tensor<4x32xf16>
  return %y : tensor<4x32xf16>
}

// -----

func.func @result(%x: tensor<4x64xf16>, %w: tensor<32x64xf16>) -> tensor<4x64xf16> {
  // expected-error @+1 {{result must be 4x32, got 4x64}}
  %y = llm.linear %x, %w : tensor<4x64xf16>, tensor<32x64xf16> -> tensor<4x64xf16>
  return %y : tensor<4x64xf16>
}

// -----

func.func @quant(%x: tensor<4x64xf16>, %w: tensor<32x64xf16>) -> tensor<4x32xf16> {
  // expected-error @+1 {{quant must be "f16", "q8_0" or "q4_0", got "q5_k"}}
  %y = llm.linear %x, %w {quant = "q5_k"} : tensor<4x64xf16>, tensor<32x64xf16> -> tensor<4x32xf16>
  return %y : tensor<4x32xf16>
}

// -----

func.func @blocks(%x: tensor<4x48xf16>, %w: tensor<32x48xf16>) -> tensor<4x32xf16> {
  // expected-error @+1 {{input dimension 48 is not a multiple of the q4_0 block (32)}}
  %y = llm.linear %x, %w {quant = "q4_0"} : tensor<4x48xf16>, tensor<32x48xf16> -> tensor<4x32xf16>
  return %y : tensor<4x32xf16>
}

// -----

func.func @decode_rows(%x: tensor<4x64xf16>, %w: tensor<32x64xf16>) -> tensor<4x32xf16> {
  // expected-error @+1 {{decode phase needs exactly one row, got 4}}
  %y = llm.linear %x, %w {phase = "decode"} : tensor<4x64xf16>, tensor<32x64xf16> -> tensor<4x32xf16>
  return %y : tensor<4x32xf16>
}

// -----

func.func @phase(%x: tensor<1x64xf16>, %w: tensor<32x64xf16>) -> tensor<1x32xf16> {
  // expected-error @+1 {{phase must be "prefill" or "decode", got "warmup"}}
  %y = llm.linear %x, %w {phase = "warmup"} : tensor<1x64xf16>, tensor<32x64xf16> -> tensor<1x32xf16>
  return %y : tensor<1x32xf16>
}

// -----

func.func @dynamic(%x: tensor<?x64xf16>, %w: tensor<32x64xf16>) -> tensor<?x32xf16> {
  // expected-error @+1 {{input must have static dimensions (NPU graphs are static)}}
  %y = llm.linear %x, %w : tensor<?x64xf16>, tensor<32x64xf16> -> tensor<?x32xf16>
  return %y : tensor<?x32xf16>
}

// -----

func.func @gamma(%x: tensor<4x64xf16>, %g: tensor<32xf16>) -> tensor<4x64xf16> {
  // expected-error @+1 {{gamma must be a vector of 64 elements}}
  %y = llm.rmsnorm %x, %g {eps = 1.0e-05 : f32} : tensor<4x64xf16>, tensor<32xf16>
  return %y : tensor<4x64xf16>
}

// -----

func.func @eps(%x: tensor<4x64xf16>, %g: tensor<64xf16>) -> tensor<4x64xf16> {
  // expected-error @+1 {{eps must be > 0}}
  %y = llm.rmsnorm %x, %g {eps = 0.0 : f32} : tensor<4x64xf16>, tensor<64xf16>
  return %y : tensor<4x64xf16>
}

// -----

func.func @rope(%x: tensor<4x96xf16>, %p: tensor<4xi32>) -> tensor<4x96xf16> {
  // expected-error @+1 {{row width 96 is not a multiple of head_dim 64}}
  %y = llm.rope %x, %p {head_dim = 64 : i64, theta = 10000.0 : f32} : tensor<4x96xf16>, tensor<4xi32>
  return %y : tensor<4x96xf16>
}

// -----

func.func @rope_style(%x: tensor<4x128xf16>, %p: tensor<4xi32>) -> tensor<4x128xf16> {
  // expected-error @+1 {{style must be "adjacent_pairs" or "half_split", got "interleaved"}}
  %y = llm.rope %x, %p {head_dim = 64 : i64, theta = 10000.0 : f32, style = "interleaved"} : tensor<4x128xf16>, tensor<4xi32>
  return %y : tensor<4x128xf16>
}

// -----

func.func @bias_width(%x: tensor<4x128xf16>, %b: tensor<64xf16>) -> tensor<4x128xf16> {
  // expected-error @+1 {{bias must be a vector of the row width 128, got 'tensor<64xf16>'}}
  %y = llm.bias_add %x, %b : tensor<4x128xf16>, tensor<64xf16>
  return %y : tensor<4x128xf16>
}

// -----

func.func @rope_odd(%x: tensor<4x96xf16>, %p: tensor<4xi32>) -> tensor<4x96xf16> {
  // expected-error @+1 {{head_dim must be positive and even, got 3}}
  %y = llm.rope %x, %p {head_dim = 3 : i64, theta = 10000.0 : f32} : tensor<4x96xf16>, tensor<4xi32>
  return %y : tensor<4x96xf16>
}

// -----

func.func @gqa(%q: tensor<1x384xf16>, %k: tensor<64x128xf16>, %v: tensor<64x128xf16>) -> tensor<1x384xf16> {
  // expected-error @+1 {{num_heads 6 is not a multiple of num_kv_heads 4}}
  %o = llm.attention %q, %k, %v {num_heads = 6 : i64, num_kv_heads = 4 : i64, head_dim = 64 : i64}
      : tensor<1x384xf16>, tensor<64x128xf16>, tensor<64x128xf16>
  return %o : tensor<1x384xf16>
}

// -----

func.func @cache_width(%q: tensor<1x256xf16>, %k: tensor<64x64xf16>, %v: tensor<64x64xf16>) -> tensor<1x256xf16> {
  // expected-error @+1 {{cache width must be num_kv_heads x head_dim = 128, got 64}}
  %o = llm.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64}
      : tensor<1x256xf16>, tensor<64x64xf16>, tensor<64x64xf16>
  return %o : tensor<1x256xf16>
}

// -----

func.func @kv_overflow(%c: tensor<4x64xf16>, %r: tensor<8x64xf16>, %o: index) -> tensor<4x64xf16> {
  // expected-error @+1 {{8 new rows do not fit a cache of 4 tokens}}
  %c2 = llm.kv_append %c, %r at %o : tensor<4x64xf16>, tensor<8x64xf16>
  return %c2 : tensor<4x64xf16>
}

// -----

func.func @mlp(%x: tensor<4x64xf16>, %g: tensor<128x64xf16>, %u: tensor<128x64xf16>, %d: tensor<64x96xf16>) -> tensor<4x64xf16> {
  // expected-error @+1 {{w_down must be 64x128, got 64x96}}
  %y = llm.mlp %x, %g, %u, %d : tensor<4x64xf16>, tensor<128x64xf16>, tensor<128x64xf16>, tensor<64x96xf16>
  return %y : tensor<4x64xf16>
}

// -----

func.func @sample(%l: tensor<2x100xf16>) -> tensor<2xi32> {
  // expected-error @+1 {{temperature must be >= 0}}
  %t = llm.sample %l {temperature = -1.0 : f32, top_k = 0 : i64} : tensor<2x100xf16> -> tensor<2xi32>
  return %t : tensor<2xi32>
}

// -----

func.func @fallback(%l: tensor<2x100xf16>) -> tensor<2xi32> {
  // expected-error @+1 {{fallback must be "cpu" or "gpu", got "dsp"}}
  %t = llm.sample %l {temperature = 0.0 : f32, top_k = 0 : i64, fallback = "dsp"} : tensor<2x100xf16> -> tensor<2xi32>
  return %t : tensor<2xi32>
}
