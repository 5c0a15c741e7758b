// RUN: tandem-opt %s | tandem-opt | FileCheck %s
// Every llm op parses, verifies and prints back in its own syntax.

// CHECK-LABEL: func.func @layer
func.func @layer(%x: tensor<8x256xf16>, %g: tensor<256xf16>, %pos: tensor<8xi32>, %wq: tensor<256x256xf16>,
                 %kc: tensor<512x128xf16>, %vc: tensor<512x128xf16>, %k: tensor<8x128xf16>, %off: index,
                 %wg: tensor<512x256xf16>, %wu: tensor<512x256xf16>, %wd: tensor<256x512xf16>) -> tensor<8xi32> {
  // CHECK: llm.rmsnorm %{{.*}}, %{{.*}} {eps = 9.99999974E-6 : f32} : tensor<8x256xf16>, tensor<256xf16>
  %n = llm.rmsnorm %x, %g {eps = 1.0e-05 : f32} : tensor<8x256xf16>, tensor<256xf16>
  // CHECK: llm.linear %{{.*}}, %{{.*}} {quant = "q4_0"} : tensor<8x256xf16>, tensor<256x256xf16> -> tensor<8x256xf16>
  %q = llm.linear %n, %wq {quant = "q4_0"} : tensor<8x256xf16>, tensor<256x256xf16> -> tensor<8x256xf16>
  // CHECK: llm.rope %{{.*}}, %{{.*}} {head_dim = 64 : i64, theta = 5.000000e+05 : f32} : tensor<8x256xf16>, tensor<8xi32>
  %qr = llm.rope %q, %pos {head_dim = 64 : i64, theta = 500000.0 : f32} : tensor<8x256xf16>, tensor<8xi32>
  // CHECK: llm.bias_add %{{.*}}, %{{.*}} : tensor<8x256xf16>, tensor<256xf16>
  %qb = llm.bias_add %qr, %g : tensor<8x256xf16>, tensor<256xf16>
  // CHECK: llm.rope %{{.*}}, %{{.*}} {head_dim = 64 : i64, style = "half_split", theta = 1.000000e+06 : f32}
  %qh = llm.rope %qb, %pos {head_dim = 64 : i64, theta = 1000000.0 : f32, style = "half_split"} : tensor<8x256xf16>, tensor<8xi32>
  // CHECK: llm.kv_append %{{.*}}, %{{.*}} at %{{.*}} : tensor<512x128xf16>, tensor<8x128xf16>
  %kc2 = llm.kv_append %kc, %k at %off : tensor<512x128xf16>, tensor<8x128xf16>
  // CHECK: llm.attention %{{.*}} {head_dim = 64 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64}
  %o = llm.attention %qh, %kc2, %vc {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64}
      : tensor<8x256xf16>, tensor<512x128xf16>, tensor<512x128xf16>
  // CHECK: llm.mlp %{{.*}} {phase = "prefill", quant = "q8_0"}
  %m = llm.mlp %o, %wg, %wu, %wd {quant = "q8_0", phase = "prefill"}
      : tensor<8x256xf16>, tensor<512x256xf16>, tensor<512x256xf16>, tensor<256x512xf16>
  // CHECK: llm.sample %{{.*}} {temperature = 0.000000e+00 : f32, top_k = 40 : i64} : tensor<8x256xf16> -> tensor<8xi32>
  %t = llm.sample %m {temperature = 0.0 : f32, top_k = 40 : i64} : tensor<8x256xf16> -> tensor<8xi32>
  return %t : tensor<8xi32>
}
