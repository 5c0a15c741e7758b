// RUN: tandem-opt %s --llm-specialize-phase --llm-mark-fallback | FileCheck %s
// The NPU lowers linears, KV appends and the vector unit's row ops (rmsnorm, swiglu, add);
// sampling falls back to the CPU, other ops (rope, attention) to the GPU, each with the cost of
// leaving the NPU: (input + result bytes) / DMA rate + two completion signals. Here the rope moves
// 2 x 1024 B at 45 GB/s (the v75 DDR share caps its 60 GB/s DMA) = 45.5 ns, plus 2 x 16 cycles at
// 1.0376 GHz = 30.8 ns.

// CHECK-LABEL: func.func @layer
// CHECK: llm.rmsnorm
// CHECK-NOT: fallback
// CHECK-SAME: phase = "decode"
// CHECK: llm.rope {{.*}}fallback = "gpu", fallback_reason = "no NPU lowering for llm.rope", {{.*}}switch_cost_s = 7.6{{[0-9]*}}E-8
// CHECK: llm.linear
// CHECK-NOT: fallback
// CHECK: llm.sample {{.*}}fallback = "cpu"
func.func @layer(%x: tensor<1x512xf16>, %g: tensor<512xf16>, %pos: tensor<1xi32>, %w: tensor<1024x512xf16>) -> tensor<1xi32> {
  %n = llm.rmsnorm %x, %g {eps = 1.0e-05 : f32} : tensor<1x512xf16>, tensor<512xf16>
  %r = llm.rope %n, %pos {head_dim = 64 : i64, theta = 10000.0 : f32} : tensor<1x512xf16>, tensor<1xi32>
  %y = llm.linear %r, %w {quant = "q8_0"} : tensor<1x512xf16>, tensor<1024x512xf16> -> tensor<1x1024xf16>
  %t = llm.sample %y {temperature = 0.0 : f32, top_k = 1 : i64} : tensor<1x1024xf16> -> tensor<1xi32>
  return %t : tensor<1xi32>
}

// A linear whose activation rows cannot sit in half the TCM falls back too, with the reason; so
// does a row op whose two chunks of one row do not fit the TCM (3 x 2 MiB rows, twice, for an add).
// CHECK-LABEL: func.func @too_wide
// CHECK: llm.linear {{.*}}fallback = "gpu", fallback_reason = "matmul: in=2097152 too large
// CHECK: llm.add {{.*}}fallback = "gpu", fallback_reason = "one row of 2097152 values needs 25165824 B of TCM"
func.func @too_wide(%x: tensor<1x2097152xf16>, %w: tensor<32x2097152xf16>) -> tensor<1x2097152xf16> {
  %y = llm.linear %x, %w : tensor<1x2097152xf16>, tensor<32x2097152xf16> -> tensor<1x32xf16>
  %s = llm.add %x, %x : tensor<1x2097152xf16>
  return %s : tensor<1x2097152xf16>
}
