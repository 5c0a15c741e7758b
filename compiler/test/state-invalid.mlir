// RUN: tandem-opt %s -split-input-file -verify-diagnostics

func.func @pack_size(%w: tensor<64x64xf16>) -> tensor<100xi8> {
  // expected-error @+1 {{pack must be tensor<2304xi8> for this layout}}
  %p = state.weight_pack %w {quant = "q4_0", layout = "interleaved_unpack", tile = 32 : i64} : tensor<64x64xf16> -> tensor<100xi8>
  return %p : tensor<100xi8>
}

// -----

func.func @f16_unpack(%w: tensor<64x64xf16>) -> tensor<8192xi8> {
  // expected-error @+1 {{an f16 weight has no blocks to unpack: use layout "f16_tiles"}}
  %p = state.weight_pack %w {quant = "f16", layout = "interleaved_unpack", tile = 32 : i64} : tensor<64x64xf16> -> tensor<8192xi8>
  return %p : tensor<8192xi8>
}

// -----

func.func @tile(%w: tensor<64x64xf16>) -> tensor<8192xi8> {
  // expected-error @+1 {{tile 16 must be a positive multiple of the quant block 32}}
  %p = state.weight_pack %w {quant = "q8_0", layout = "interleaved_unpack", tile = 16 : i64} : tensor<64x64xf16> -> tensor<8192xi8>
  return %p : tensor<8192xi8>
}

// -----

func.func @matmul_pack(%x: tensor<1x64xf16>, %p: tensor<2304xi8>) -> tensor<1x64xf16> {
  // expected-error @+1 {{does not hold a 64x64 q8_0 weight (needs 4352 bytes)}}
  %y = state.matmul %x, %p {out = 64 : i64, format = "q8_0", tile = 32 : i64, order = "activation_stationary", phase = "decode"}
      : tensor<1x64xf16>, tensor<2304xi8> -> tensor<1x64xf16>
  return %y : tensor<1x64xf16>
}

// -----

func.func @order(%x: tensor<1x64xf16>, %p: tensor<2304xi8>) -> tensor<1x64xf16> {
  // expected-error @+1 {{unknown order "row_major"}}
  %y = state.matmul %x, %p {out = 64 : i64, format = "q4_0", tile = 32 : i64, order = "row_major", phase = "decode"}
      : tensor<1x64xf16>, tensor<2304xi8> -> tensor<1x64xf16>
  return %y : tensor<1x64xf16>
}

// -----

func.func @kv(%kc: tensor<800x512xf16>) -> tensor<800x512xf16> {
  // expected-error @+1 {{cache must be (897..1024)x512 for 8 pages of 128 tokens}}
  %c = state.kv_pages %kc {pages = 8 : i64, page_tokens = 128 : i64, width = 512 : i64, heads = 8 : i64, layout = "head_major"} : tensor<800x512xf16>
  return %c : tensor<800x512xf16>
}

// -----

func.func @kv_layout(%kc: tensor<1024x512xf16>) -> tensor<1024x512xf16> {
  // expected-error @+1 {{layout must be "token_major" or "head_major", got "column_major"}}
  %c = state.kv_pages %kc {pages = 8 : i64, page_tokens = 128 : i64, width = 512 : i64, heads = 8 : i64, layout = "column_major"} : tensor<1024x512xf16>
  return %c : tensor<1024x512xf16>
}

// -----

func.func @kv_heads(%kc: tensor<1024x512xf16>) -> tensor<1024x512xf16> {
  // expected-error @+1 {{width 512 is not a multiple of heads 3}}
  %c = state.kv_pages %kc {pages = 8 : i64, page_tokens = 128 : i64, width = 512 : i64, heads = 3 : i64, layout = "head_major"} : tensor<1024x512xf16>
  return %c : tensor<1024x512xf16>
}

// -----

func.func @kv_write_unpaged(%kc: tensor<1024x512xf16>, %k: tensor<1x512xf16>, %at: index) -> tensor<1024x512xf16> {
  // expected-error @+1 {{cache must come from state.kv_pages}}
  %c = state.kv_write %kc, %k at %at {phase = "decode"} : tensor<1024x512xf16>, tensor<1x512xf16>
  return %c : tensor<1024x512xf16>
}

// -----

func.func @kv_write_decode(%kc: tensor<1024x512xf16>, %k: tensor<2x512xf16>, %at: index) -> tensor<1024x512xf16> {
  %c = state.kv_pages %kc {pages = 8 : i64, page_tokens = 128 : i64, width = 512 : i64, heads = 8 : i64, layout = "head_major"} : tensor<1024x512xf16>
  // expected-error @+1 {{a decode append writes one row, got 2}}
  %c2 = state.kv_write %c, %k at %at {phase = "decode"} : tensor<1024x512xf16>, tensor<2x512xf16>
  return %c2 : tensor<1024x512xf16>
}

// -----

func.func @posmap(%p: tensor<8xi32>) -> tensor<8x3xi32> {
  // expected-error @+1 {{map must be 8x2 (page, row)}}
  %m = state.position_map %p {page_tokens = 128 : i64} : tensor<8xi32> -> tensor<8x3xi32>
  return %m : tensor<8x3xi32>
}
