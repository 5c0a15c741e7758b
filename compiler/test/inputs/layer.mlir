// A small decoder layer (dim 256, 4 heads of 64, 2 KV heads, ffn 768), 64 prefill rows.
func.func @layer(%x: tensor<64x256xf16>, %an: tensor<256xf16>, %wq: tensor<256x256xf16>, %wk: tensor<128x256xf16>,
                 %wv: tensor<128x256xf16>, %wo: tensor<256x256xf16>, %fn: tensor<256xf16>, %wg: tensor<768x256xf16>,
                 %wu: tensor<768x256xf16>, %wd: tensor<256x768xf16>, %pos: tensor<64xi32>, %kc: tensor<512x128xf16>,
                 %vc: tensor<512x128xf16>, %at: index) -> tensor<64x256xf16> {
  %n = llm.rmsnorm %x, %an {eps = 1.0e-05 : f32} : tensor<64x256xf16>, tensor<256xf16>
  %q = llm.linear %n, %wq {quant = "q4_0"} : tensor<64x256xf16>, tensor<256x256xf16> -> tensor<64x256xf16>
  %k = llm.linear %n, %wk {quant = "q4_0"} : tensor<64x256xf16>, tensor<128x256xf16> -> tensor<64x128xf16>
  %v = llm.linear %n, %wv {quant = "q4_0"} : tensor<64x256xf16>, tensor<128x256xf16> -> tensor<64x128xf16>
  %qr = llm.rope %q, %pos {head_dim = 64 : i64, theta = 10000.0 : f32} : tensor<64x256xf16>, tensor<64xi32>
  %kr = llm.rope %k, %pos {head_dim = 64 : i64, theta = 10000.0 : f32} : tensor<64x128xf16>, tensor<64xi32>
  %kc2 = llm.kv_append %kc, %kr at %at : tensor<512x128xf16>, tensor<64x128xf16>
  %vc2 = llm.kv_append %vc, %v at %at : tensor<512x128xf16>, tensor<64x128xf16>
  %a = llm.attention %qr, %kc2, %vc2 {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64}
      : tensor<64x256xf16>, tensor<512x128xf16>, tensor<512x128xf16>
  %o = llm.linear %a, %wo {quant = "q4_0"} : tensor<64x256xf16>, tensor<256x256xf16> -> tensor<64x256xf16>
  %h = llm.add %x, %o : tensor<64x256xf16>
  %m = llm.rmsnorm %h, %fn {eps = 1.0e-05 : f32} : tensor<64x256xf16>, tensor<256xf16>
  %f = llm.mlp %m, %wg, %wu, %wd {quant = "q4_0"}
      : tensor<64x256xf16>, tensor<768x256xf16>, tensor<768x256xf16>, tensor<256x768xf16>
  %y = llm.add %h, %f : tensor<64x256xf16>
  return %y : tensor<64x256xf16>
}
